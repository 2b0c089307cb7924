//! The indexer at a market's scale (`brainctl-indexer-bench scale`): a
//! generated log of N records (negotiated trades with the hostile shapes
//! around them) in PostgreSQL, a writer and a read replica over it, the
//! replica running the loop `brainctl-indexer serve --pg` runs
//! ([`crate::service::run_replica`]). Measures the cold rebuild, resident
//! memory, the replica's lag behind the writer for one new memo and for a
//! record landing before the head, the writer's cost for each, and, in
//! the same run, what the same events cost refolding the whole log (what
//! every NOTIFY and every out-of-order record cost before change numbers
//! and suffix refolds).
//!
//! Owns measuring only; it writes only the database it is given.

use crate::api::AppState;
use crate::engine::Indexer;
use crate::fold::FoldConfig;
use crate::record::TxRecord;
use crate::service::{run_replica, Changes};
use crate::store::{LogStore, PgStore};
use crate::synth::LogBuilder;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every generated record is final (a slot far past them all).
const FINAL: u64 = 1 << 40;

/// Records between the record held out and the head.
pub const OUT_OF_ORDER_DISTANCE: usize = 1_000;

/// Latency percentiles, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Millis {
    /// Samples.
    pub n: usize,
    /// Median.
    pub p50_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl Millis {
    pub(crate) fn of(mut samples: Vec<f64>) -> Millis {
        samples.sort_by(|a, b| a.total_cmp(b));
        Millis {
            n: samples.len(),
            p50_ms: samples.get(samples.len() / 2).copied().unwrap_or(0.0),
            max_ms: samples.last().copied().unwrap_or(0.0),
        }
    }
}

/// What `scale` measured.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleReport {
    /// Records in the log.
    pub records: usize,
    /// Memos among them.
    pub memos: usize,
    /// Writing the generated log into PostgreSQL (batches of 5,000).
    pub store_memos_per_second: f64,
    /// Opening the writer over the log: read, check every manifest, fold.
    pub cold_rebuild_seconds: f64,
    /// The same, in memos per second.
    pub cold_rebuild_memos_per_second: f64,
    /// Resident memory after the writer opened (MiB; the process held no
    /// state before).
    pub rss_one_state_mib: f64,
    /// ... and after the replica opened beside it.
    pub rss_two_states_mib: f64,
    /// One new memo: the writer's ingest (store + fold).
    pub new_memo_writer: Millis,
    /// One new memo: from the writer's commit until the replica serves it.
    pub new_memo_replica_lag: Millis,
    /// A record landing [`OUT_OF_ORDER_DISTANCE`] records before the head:
    /// the writer's ingest (store + suffix refold).
    pub out_of_order_writer: Millis,
    /// ... until the replica serves it.
    pub out_of_order_replica_lag: Millis,
    /// Records the writer refolded for one out-of-order record.
    pub out_of_order_refolded_records: usize,
    /// Before: refolding the whole log (what the replica did on every
    /// NOTIFY, and the writer for an out-of-order record).
    pub whole_refold: Millis,
    /// Whole-log refolds the replica did after opening (0: it caught up).
    pub replica_whole_refolds: u64,
    /// Under attack: one new memo while two threads hint old transactions
    /// ([`HINT_PAUSE`] apart: the hint flood): the writer's ingest ...
    pub hint_flood_new_memo_writer: Millis,
    /// ... and the replica's lag.
    pub hint_flood_new_memo_replica_lag: Millis,
    /// Hints taken meanwhile, per second.
    pub hint_flood_hints_per_second: f64,
    /// Under attack: one new memo arriving behind [`JUNK_PER_MEMO`] junk
    /// records (the hostile shapes) in its batch: the writer's ingest ...
    pub junk_new_memo_writer: Millis,
    /// ... and the replica's lag.
    pub junk_new_memo_replica_lag: Millis,
}

/// Each flooding thread's pause between hints: two threads, about 20,000
/// hints a second in all (the API's per-IP write limit admits a few a
/// second; this is the engine's own bound, not the HTTP layer's).
pub const HINT_PAUSE: Duration = Duration::from_micros(100);

/// Junk records ahead of each honest memo in the junk phase.
pub const JUNK_PER_MEMO: usize = 550;

impl ScaleReport {
    /// The report for a person.
    pub fn summary(&self) -> String {
        format!(
            "{} records ({} memos) in PostgreSQL, stored at {:.0} memos/s\n\
             cold rebuild: {:.1} s = {:.0} memos/s; resident {:.0} MiB with one state, {:.0} MiB with two\n\
             one new memo: writer {:.2} ms p50 / {:.2} max; replica serves it {:.2} ms p50 / {:.2} max after the commit\n\
             a record {} back: writer {:.2} ms p50 / {:.2} max ({} records refolded); replica {:.2} ms p50 / {:.2} max\n\
             before (a whole refold per event): {:.0} ms p50 / {:.0} max; whole refolds by the replica after opening: {}\n\
             under a hint flood ({:.0} hints/s): new memo writer {:.2} ms p50 / {:.2} max, replica {:.2} ms p50 / {:.2} max\n\
             behind {} junk records each: new memo writer {:.2} ms p50 / {:.2} max, replica {:.2} ms p50 / {:.2} max",
            self.records,
            self.memos,
            self.store_memos_per_second,
            self.cold_rebuild_seconds,
            self.cold_rebuild_memos_per_second,
            self.rss_one_state_mib,
            self.rss_two_states_mib,
            self.new_memo_writer.p50_ms,
            self.new_memo_writer.max_ms,
            self.new_memo_replica_lag.p50_ms,
            self.new_memo_replica_lag.max_ms,
            OUT_OF_ORDER_DISTANCE,
            self.out_of_order_writer.p50_ms,
            self.out_of_order_writer.max_ms,
            self.out_of_order_refolded_records,
            self.out_of_order_replica_lag.p50_ms,
            self.out_of_order_replica_lag.max_ms,
            self.whole_refold.p50_ms,
            self.whole_refold.max_ms,
            self.replica_whole_refolds,
            self.hint_flood_hints_per_second,
            self.hint_flood_new_memo_writer.p50_ms,
            self.hint_flood_new_memo_writer.max_ms,
            self.hint_flood_new_memo_replica_lag.p50_ms,
            self.hint_flood_new_memo_replica_lag.max_ms,
            JUNK_PER_MEMO,
            self.junk_new_memo_writer.p50_ms,
            self.junk_new_memo_writer.max_ms,
            self.junk_new_memo_replica_lag.p50_ms,
            self.junk_new_memo_replica_lag.max_ms,
        )
    }
}

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The database.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The replica's listener.
    #[error("replica listener: {0}")]
    Io(#[from] std::io::Error),
    /// The replica did not serve a change in time.
    #[error("the replica did not serve {0} within 60 s")]
    Lagged(String),
}

pub(crate) fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn memos(records: &[TxRecord]) -> usize {
    records.iter().map(|r| r.tx.memos.len()).sum()
}

/// What [`generate`] wrote.
pub(crate) struct Generated {
    /// Goes on from the head.
    pub(crate) builder: LogBuilder,
    /// Records held out, [`OUT_OF_ORDER_DISTANCE`] and more before the head.
    pub(crate) held_out: Vec<TxRecord>,
    /// Every 500th record written (old transactions to hint).
    pub(crate) pool: Vec<TxRecord>,
    /// Records and memos written.
    pub(crate) records: usize,
    pub(crate) memos: usize,
    /// Memos stored per second.
    pub(crate) rate: f64,
}

/// Generates about `n` records into the log at `pg_url` (an empty
/// database), holding out `held` records [`OUT_OF_ORDER_DISTANCE`] and
/// more before the head; returns the builder (to go on from the head),
/// the held-out records, the records and memos written, and the
/// memos stored per second.
pub(crate) fn generate(
    store: &mut PgStore,
    n: usize,
    held: usize,
) -> Result<Generated, ScaleError> {
    let mut b = LogBuilder::new();
    let (mut written, mut memo_count, mut held_out) = (0usize, 0usize, Vec::new());
    let hold_from = n.saturating_sub(OUT_OF_ORDER_DISTANCE + held);
    let mut i = 0u64;
    let mut store_time = Duration::ZERO;
    let mut pool = Vec::new();
    while written < n {
        while b.records().len() < 5_000 && written + b.records().len() < n {
            if i.is_multiple_of(2) {
                b.hostile_trade(i, 1_000);
            } else {
                b.trade(i, 1_000);
            }
            i += 1;
        }
        let mut batch = b.take_records();
        if batch.is_empty() {
            break;
        }
        // hold out the first `held` list records past `hold_from`
        let mut k = 0;
        while k < batch.len() {
            let at = written + k;
            if at >= hold_from && held_out.len() < held && batch[k].tx.memos[0].contains(":list:") {
                held_out.push(batch.remove(k));
            } else {
                k += 1;
            }
        }
        pool.extend(batch.iter().step_by(500).cloned());
        let started = Instant::now();
        store.put_records(&batch, FINAL)?;
        store_time += started.elapsed();
        written += batch.len();
        memo_count += memos(&batch);
    }
    let rate = memo_count as f64 / store_time.as_secs_f64().max(1e-9);
    Ok(Generated {
        builder: b,
        held_out,
        pool,
        records: written,
        memos: memo_count,
        rate,
    })
}

/// Waits until `ix` has folded `signature`; the time since `since`.
async fn served(ix: &Indexer, signature: &str, since: Instant) -> Result<f64, ScaleError> {
    let deadline = since + Duration::from_secs(60);
    while !ix.state().has_folded(signature) {
        if Instant::now() > deadline {
            return Err(ScaleError::Lagged(signature.to_string()));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(since.elapsed().as_secs_f64() * 1e3)
}

/// Ingests `records` at the writer in one batch; (writer ms, replica lag
/// ms for the last record, records refolded).
async fn one_event(
    writer: &Arc<Indexer>,
    replica: &Arc<Indexer>,
    records: Vec<TxRecord>,
) -> Result<(f64, f64, usize), ScaleError> {
    let sig = records
        .last()
        .map(|r| r.signature().to_string())
        .unwrap_or_default();
    let w = writer.clone();
    let started = Instant::now();
    let applied = tokio::task::spawn_blocking(move || w.ingest(records, FINAL, &[]))
        .await
        .expect("ingest task")?;
    let writer_ms = started.elapsed().as_secs_f64() * 1e3;
    let lag = served(replica, &sig, started).await?;
    Ok((writer_ms, lag, applied.refolded_records))
}

/// Runs the benchmark over an empty database at `pg_url` with about
/// `records` records, `samples` events of each kind.
pub async fn scale(
    pg_url: &str,
    records: usize,
    samples: usize,
) -> Result<ScaleReport, ScaleError> {
    let url = pg_url.to_string();
    let samples = samples.max(1);
    let Generated {
        mut builder,
        held_out,
        pool,
        records: n,
        memos: memo_count,
        rate: store_rate,
    } = tokio::task::spawn_blocking(move || {
        generate(&mut PgStore::connect(&url)?, records, samples)
    })
    .await
    .expect("generate task")?;

    let open = |url: String| {
        tokio::task::spawn_blocking(move || {
            Indexer::open(Box::new(PgStore::connect(&url)?), FoldConfig::default())
        })
    };
    let started = Instant::now();
    let writer = Arc::new(open(pg_url.to_string()).await.expect("open task")?);
    let cold = started.elapsed().as_secs_f64();
    let rss_one = rss_mib();
    let replica = Arc::new(open(pg_url.to_string()).await.expect("open task")?);
    let rss_two = rss_mib();
    let replica_refolds_at_open = replica.refolds();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(run_replica(
        listener,
        AppState::new(replica.clone(), "localnet"),
        Changes::Postgres(pg_url.to_string()),
        async move {
            let _ = stopped.await;
        },
    ));
    // the replica's LISTEN is up once a change reaches it
    let mut warm = builder.take_records();
    builder.list(&crate::synth::wallet(1, 0), u64::MAX - 1, "auction");
    warm.extend(builder.take_records());
    for r in warm {
        one_event(&writer, &replica, vec![r]).await?;
    }

    let mut listing_n = u64::MAX - 2;
    let (new_w, new_lag) =
        new_memos(&writer, &replica, &mut builder, &mut listing_n, samples, 0).await?;
    let (mut ooo_w, mut ooo_lag, mut refolded) = (vec![], vec![], 0);
    for r in held_out {
        let (w, lag, n) = one_event(&writer, &replica, vec![r]).await?;
        ooo_w.push(w);
        ooo_lag.push(lag);
        refolded = refolded.max(n);
    }

    // under attack: a hint flood beside the new memos
    let stop_flood = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hints = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pool = Arc::new(pool);
    let flooders: Vec<_> = (0..2)
        .map(|t| {
            let (w, pool, stop, hints) = (
                writer.clone(),
                pool.clone(),
                stop_flood.clone(),
                hints.clone(),
            );
            std::thread::spawn(move || {
                let mut i = t;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && !pool.is_empty() {
                    let _ = w.ingest_hinted(pool[i % pool.len()].clone(), FINAL);
                    hints.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    i += 2;
                    std::thread::sleep(HINT_PAUSE);
                }
            })
        })
        .collect();
    let flood_started = Instant::now();
    let (hint_w, hint_lag) =
        new_memos(&writer, &replica, &mut builder, &mut listing_n, samples, 0).await?;
    stop_flood.store(true, std::sync::atomic::Ordering::Relaxed);
    let hints_per_second = hints.load(std::sync::atomic::Ordering::Relaxed) as f64
        / flood_started.elapsed().as_secs_f64();
    for f in flooders {
        let _ = f.join();
    }
    // under attack: junk ahead of every new memo
    let (junk_w, junk_lag) = new_memos(
        &writer,
        &replica,
        &mut builder,
        &mut listing_n,
        samples,
        JUNK_PER_MEMO,
    )
    .await?;
    let replica_whole_refolds = replica.refolds() - replica_refolds_at_open;
    assert_eq!(
        writer.state_hash().1,
        replica.state_hash().1,
        "the replica's state is the writer's"
    );
    let _ = stop.send(());
    let _ = serving.await;

    let mut whole = vec![];
    for _ in 0..samples.min(2) {
        let w = writer.clone();
        let started = Instant::now();
        tokio::task::spawn_blocking(move || w.refold())
            .await
            .expect("refold task")?;
        whole.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(ScaleReport {
        records: n,
        memos: memo_count,
        store_memos_per_second: store_rate,
        cold_rebuild_seconds: cold,
        cold_rebuild_memos_per_second: memo_count as f64 / cold.max(1e-9),
        rss_one_state_mib: rss_one,
        rss_two_states_mib: rss_two,
        new_memo_writer: Millis::of(new_w),
        new_memo_replica_lag: Millis::of(new_lag),
        out_of_order_writer: Millis::of(ooo_w),
        out_of_order_replica_lag: Millis::of(ooo_lag),
        out_of_order_refolded_records: refolded,
        whole_refold: Millis::of(whole),
        replica_whole_refolds,
        hint_flood_new_memo_writer: Millis::of(hint_w),
        hint_flood_new_memo_replica_lag: Millis::of(hint_lag),
        hint_flood_hints_per_second: hints_per_second,
        junk_new_memo_writer: Millis::of(junk_w),
        junk_new_memo_replica_lag: Millis::of(junk_lag),
    })
}

/// `samples` new listings, each its own batch behind `junk` hostile
/// records; the writer's ms and the replica's lag for each listing.
async fn new_memos(
    writer: &Arc<Indexer>,
    replica: &Arc<Indexer>,
    builder: &mut LogBuilder,
    listing_n: &mut u64,
    samples: usize,
    junk: usize,
) -> Result<(Vec<f64>, Vec<f64>), ScaleError> {
    let (mut ws, mut lags) = (vec![], vec![]);
    for _ in 0..samples {
        while builder.records().len() < junk {
            builder.hostile_trade(*listing_n, 1_000);
            *listing_n -= 1;
        }
        builder.list(
            &crate::synth::wallet(1, *listing_n % 1_000),
            *listing_n,
            "auction",
        );
        *listing_n -= 1;
        let (w, lag, _) = one_event(writer, replica, builder.take_records()).await?;
        ws.push(w);
        lags.push(lag);
    }
    Ok((ws, lags))
}
