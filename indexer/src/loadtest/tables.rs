//! The indexer at a market's scale (`brainctl-indexer-bench scale`): a
//! generated log of N records (trades with the hostile shapes) written
//! straight into PostgreSQL, folded into the state tables by the loop the
//! writer runs ([`crate::statedb::durable::catch_up`]). Measures the cold
//! fold's rate and the process's peak resident memory while it runs
//! (sampled every 20 ms), one new memo's catch-up alone and behind
//! [`JUNK_PER_MEMO`] hostile records, a record landing
//! [`OUT_OF_ORDER_DISTANCE`] records before the head (a rewind of the
//! batches after it), and streaming the state hash from the tables.
//! Given a hot standby, also an API server that folds nothing reading it
//! (the `serve --pg --read-pg` stack, in process): the time from a new
//! listing's commit on the primary until that server answers it, and
//! `GET /listings` and `GET /listings/{id}` latency under 100 concurrent
//! clients while the primary commits a new listing every slot (each
//! commit makes the server's kept answers older than its tables).
//!
//! Owns measuring only; it writes only the database it is given.

use super::scale::{generate, rss_mib, Generated, ScaleError, OUT_OF_ORDER_DISTANCE};
use crate::fold::FoldConfig;
use crate::statedb::durable::{self, PAGE};
use crate::statedb::postgres::PgState;
use crate::statedb::state_hash;
use crate::store::{LogStore, PgStore};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Every generated record is final.
const FINAL: u64 = 1 << 40;

/// What `tables` measured.
#[derive(Debug, Clone, Serialize)]
pub struct TablesReport {
    /// Records in the log.
    pub records: usize,
    /// Memos among them.
    pub memos: usize,
    /// Generating the log and writing it into PostgreSQL (s).
    pub generate_seconds: f64,
    /// Resident memory before the cold fold (MiB).
    pub rss_before_mib: f64,
    /// Peak resident memory while it ran (MiB).
    pub rss_peak_mib: f64,
    /// The cold fold into the tables (every manifest checked).
    pub cold_fold_seconds: f64,
    /// ... in records per second.
    pub cold_fold_records_per_second: f64,
    /// One new memo stored and caught up (ms, median and largest).
    pub new_memo_ms: super::scale::Millis,
    /// The same behind [`JUNK_PER_MEMO`] hostile records in its batch.
    pub junk_new_memo_ms: super::scale::Millis,
    /// Of which storing the batch in the log (the rest is the catch-up).
    pub junk_store_ms: super::scale::Millis,
    /// A record landing before the head: stored and caught up (ms).
    pub out_of_order_ms: f64,
    /// Records that catch-up folded again.
    pub out_of_order_refolded: usize,
    /// Streaming the state hash from the tables.
    pub state_hash_seconds: f64,
    /// Reads on a hot standby, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standby: Option<StandbyReads>,
}

/// An API server reading the state from a hot standby.
#[derive(Debug, Clone, Serialize)]
pub struct StandbyReads {
    /// From a new listing's commit on the primary until the standby's API
    /// server answers it (ms).
    pub visible_ms: super::scale::Millis,
    /// Concurrent clients.
    pub clients: usize,
    /// `GET /listings?limit=50`: p50, p99 (ms) and requests (the market's
    /// first page, requested once before: answered from the state kept
    /// for the standby's commit, read once per commit; every load runs
    /// while the primary commits a new listing every [`SLOT`]).
    pub browse: Percentiles,
    /// `GET /listings?limit=50&max_price_usd=…`, a different filter each
    /// request, so none is answered from a kept state.
    pub browse_unkept: Percentiles,
    /// `GET /listings/{id}` over 100 listings, each requested once before:
    /// p50, p99 (ms) and requests.
    pub detail: Percentiles,
    /// Resident memory after the load (MiB): this process held the
    /// server, its readers and the bench's own log generator.
    pub rss_after_mib: f64,
}

/// Latency percentiles of one request kind.
#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    /// Requests answered (all 200).
    pub requests: usize,
    /// Median (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Commits on the primary while they ran (one a slot).
    pub commits: usize,
}

impl TablesReport {
    /// Human-readable lines.
    pub fn summary(&self) -> String {
        format!(
            "records {} ({} memos), generated into PostgreSQL in {:.0} s\n\
             cold fold into the tables: {:.1} s, {:.0} records/s\n\
             resident memory: {:.0} MiB before, {:.0} MiB peak while folding\n\
             one new memo caught up: p50 {:.1} ms, max {:.1} ms ({} samples); behind {} hostile records: p50 {:.1} ms, max {:.1} ms (storing them p50 {:.1} ms)\n\
             a record {} before the head: {:.1} ms, {} records folded again\n\
             state hash streamed from the tables: {:.1} s{}",
            self.records,
            self.memos,
            self.generate_seconds,
            self.cold_fold_seconds,
            self.cold_fold_records_per_second,
            self.rss_before_mib,
            self.rss_peak_mib,
            self.new_memo_ms.p50_ms,
            self.new_memo_ms.max_ms,
            self.new_memo_ms.n,
            JUNK_PER_MEMO,
            self.junk_new_memo_ms.p50_ms,
            self.junk_new_memo_ms.max_ms,
            self.junk_store_ms.p50_ms,
            OUT_OF_ORDER_DISTANCE,
            self.out_of_order_ms,
            self.out_of_order_refolded,
            self.state_hash_seconds,
            self.standby.as_ref().map_or(String::new(), |s| format!(
                "\nan API server on the hot standby: a new listing visible after p50 {:.1} ms (max {:.1} ms)\n\
                 {} clients while the primary commits a new listing every {} ms: GET /listings p50 {:.1} ms p99 {:.1} ms ({} requests, {} commits); a different filter each: p50 {:.1} ms p99 {:.1} ms ({} requests, {} commits); GET /listings/{{id}} p50 {:.1} ms p99 {:.1} ms ({} requests, {} commits); {:.0} MiB resident",
                s.visible_ms.p50_ms,
                s.visible_ms.max_ms,
                s.clients,
                SLOT.as_millis(),
                s.browse.p50_ms,
                s.browse.p99_ms,
                s.browse.requests,
                s.browse.commits,
                s.browse_unkept.p50_ms,
                s.browse_unkept.p99_ms,
                s.browse_unkept.requests,
                s.browse_unkept.commits,
                s.detail.p50_ms,
                s.detail.p99_ms,
                s.detail.requests,
                s.detail.commits,
                s.rss_after_mib,
            )),
        )
    }
}

/// Samples this process's resident memory until `stop`; the largest.
fn peak_rss(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<f64> {
    std::thread::spawn(move || {
        let mut peak = rss_mib();
        while !stop.load(Ordering::Relaxed) {
            peak = peak.max(rss_mib());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        peak.max(rss_mib())
    })
}

/// Stores `batch` as final and catches the tables up, as the writer does
/// for each poll: how long it took (ms), and what the catch-up did.
fn store_and_catch_up(
    log: &mut PgStore,
    db: &mut PgState,
    batch: &[crate::record::TxRecord],
) -> Result<(f64, durable::CaughtUp), ScaleError> {
    let started = Instant::now();
    log.put_records(batch, FINAL)?;
    let done = durable::catch_up(log, db, &FoldConfig::default(), PAGE, &mut |_, _| {})?;
    Ok((started.elapsed().as_secs_f64() * 1e3, done))
}

/// Hostile records ahead of each new memo in the junk phase.
pub const JUNK_PER_MEMO: usize = 550;

/// Clients of the standby's API server.
const CLIENTS: usize = 100;
/// Requests each client sends of a page no request repeats.
const PER_CLIENT: usize = 20;
/// Requests each client sends of a kept page or listing: enough for the
/// load to span several of the writer's commits.
const PER_CLIENT_KEPT: usize = 200;
/// The writer's pace during the loads: a commit a slot.
const SLOT: std::time::Duration = std::time::Duration::from_millis(400);

/// Runs the benchmark over an empty database at `pg_url` (and an API
/// server on `standby_url`, a hot standby of it, when given). Runs on a
/// blocking thread of a tokio runtime (the API server's).
pub fn tables(
    pg_url: &str,
    standby_url: Option<&str>,
    records: usize,
    samples: usize,
) -> Result<TablesReport, ScaleError> {
    let mut log = PgStore::connect(pg_url)?;
    let Generated {
        mut builder,
        held_out,
        records: n,
        memos,
        seconds: generate_seconds,
    } = generate(&mut log, records, 1)?;
    let mut db = PgState::connect_writer(pg_url)?;
    let cfg = FoldConfig::default();
    let rss_before_mib = rss_mib();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = peak_rss(stop.clone());
    let started = Instant::now();
    let mut eta = super::scale::Eta::new("folded");
    let done = durable::catch_up(&log, &mut db, &cfg, PAGE, &mut |folded, total| {
        eta.tick(folded, total)
    })?;
    let cold = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let rss_peak_mib = sampler.join().unwrap_or(0.0);
    let mut new_memo = Vec::new();
    for i in 0..samples.max(1) {
        builder.trade(10_000_000 + i as u64, 1_000);
        let mut batch = builder.take_records();
        batch.truncate(1);
        new_memo.push(store_and_catch_up(&mut log, &mut db, &batch)?.0);
    }
    let (out_of_order_ms, late) = store_and_catch_up(&mut log, &mut db, &held_out)?;
    // under attack: hostile records ahead of every new memo in its batch
    let (mut junk_new_memo, mut junk_store) = (Vec::new(), Vec::new());
    tracing::info!("scale: the junk phase");
    for i in 0..samples.max(1) {
        let mut n = 30_000_000 + (i * JUNK_PER_MEMO) as u64;
        while builder.records().len() < JUNK_PER_MEMO {
            builder.hostile_trade(n, 1_000);
            n += 1;
        }
        let seller = crate::synth::wallet(1, i as u64 % 1_000);
        builder.list(&seller, 40_000_000 + i as u64, "auction");
        let batch = builder.take_records();
        let stored = Instant::now();
        log.put_records(&batch, FINAL)?;
        junk_store.push(stored.elapsed().as_secs_f64() * 1e3);
        durable::catch_up(&log, &mut db, &cfg, PAGE, &mut |_, _| {})?;
        junk_new_memo.push(stored.elapsed().as_secs_f64() * 1e3);
    }
    tracing::info!("scale: the junk phase done");
    let started = Instant::now();
    state_hash(&mut db)?;
    let state_hash_seconds = started.elapsed().as_secs_f64();
    let standby = match standby_url {
        Some(url) => Some(standby_reads(
            pg_url,
            url,
            &mut log,
            &mut db,
            &mut builder,
            samples,
        )?),
        None => None,
    };
    Ok(TablesReport {
        records: n,
        memos,
        generate_seconds,
        rss_before_mib,
        rss_peak_mib,
        cold_fold_seconds: cold,
        cold_fold_records_per_second: done.folded as f64 / cold.max(1e-9),
        new_memo_ms: super::scale::Millis::of(new_memo),
        junk_new_memo_ms: super::scale::Millis::of(junk_new_memo),
        junk_store_ms: super::scale::Millis::of(junk_store),
        out_of_order_ms,
        out_of_order_refolded: late.folded,
        state_hash_seconds,
        standby,
    })
}

/// An API server reading `standby_url`: visibility of new listings
/// written through `log`/`db` on the primary, then read latency.
fn standby_reads(
    pg_url: &str,
    standby_url: &str,
    log: &mut PgStore,
    db: &mut PgState,
    builder: &mut crate::synth::LogBuilder,
    samples: usize,
) -> Result<StandbyReads, ScaleError> {
    use crate::statedb::StateDb;
    let readers = (0..8)
        .map(|_| PgState::connect_reader(standby_url).map(|r| Box::new(r) as Box<dyn StateDb>))
        .collect::<Result<Vec<_>, _>>()?;
    let ix = crate::engine::Indexer::open_tables(
        Box::new(PgStore::connect(pg_url)?),
        FoldConfig::default(),
        None,
        readers,
        &mut |_, _| {},
    )?;
    let rt = tokio::runtime::Handle::current();
    let server = rt
        .block_on(super::LocalServer::start(
            crate::api::AppState::new(Arc::new(ix), "localnet"),
            CLIENTS,
        ))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let (http, base) = (server.http.clone(), server.base.clone());
    // a new listing committed on the primary, until the standby serves it
    let mut visible = Vec::new();
    for i in 0..samples.max(1) {
        let seller = crate::synth::wallet(1, i as u64 % 1_000);
        let listing = builder.list(&seller, 20_000_000 + i as u64, "auction");
        store_and_catch_up(log, db, &builder.take_records())?;
        let committed = Instant::now();
        let url = format!("{base}/listings/{}", listing.listing_id);
        loop {
            let ok = rt
                .block_on(http.get(&url).send())
                .is_ok_and(|r| r.status().is_success());
            if ok {
                break;
            }
            if committed.elapsed().as_secs() > 30 {
                return Err(ScaleError::Lagged(listing.listing_id));
            }
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        visible.push(committed.elapsed().as_secs_f64() * 1e3);
    }
    // ids to read: a page of listings from the server itself
    let ids: Vec<String> = rt
        .block_on(async {
            let v: serde_json::Value = http
                .get(format!("{base}/listings?limit=100&status=all"))
                .send()
                .await?
                .json()
                .await?;
            Ok::<_, reqwest::Error>(v)
        })
        .map_err(|e| std::io::Error::other(e.to_string()))?["listings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["listing_id"].as_str().map(str::to_string))
        .collect();
    let load = |paths: Vec<String>, warm: bool| -> Result<Percentiles, String> {
        let per_client = if warm { PER_CLIENT_KEPT } else { PER_CLIENT };
        if warm {
            // a server answering the market serves these pages all day:
            // the first request of each is not what a reader waits for
            let distinct: std::collections::BTreeSet<&String> = paths.iter().collect();
            for path in distinct {
                rt.block_on(async {
                    http.get(format!("{base}{path}"))
                        .send()
                        .await?
                        .bytes()
                        .await
                })
                .map_err(|e| format!("{path}: {e}"))?;
            }
        }
        let times = rt.block_on(async {
            let tasks: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let (http, base) = (http.clone(), base.clone());
                    let paths = paths.clone();
                    tokio::spawn(async move {
                        let mut times = Vec::with_capacity(per_client);
                        for i in 0..per_client {
                            let path = &paths[(c * per_client + i) % paths.len()];
                            let t = Instant::now();
                            let res = http.get(format!("{base}{path}")).send().await;
                            match res {
                                Ok(r) if r.status().is_success() => {
                                    let _ = r.bytes().await;
                                    times.push(t.elapsed());
                                }
                                Ok(r) => return Err(format!("{path}: {}", r.status())),
                                Err(e) => return Err(format!("{path}: {e}")),
                            }
                        }
                        Ok(times)
                    })
                })
                .collect();
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.map_err(|e| e.to_string())??);
            }
            Ok::<_, String>(all)
        });
        let mut all = times?;
        all.sort();
        Ok(Percentiles {
            requests: all.len(),
            p50_ms: super::percentile(&all, 0.50),
            p99_ms: super::percentile(&all, 0.99),
            commits: 0,
        })
    };
    // the loads run while the writer commits a new listing every slot on
    // the primary: each commit makes the kept answers of the standby's
    // server older than its tables
    let mut under_commits = |paths: Vec<String>, warm: bool| -> Result<Percentiles, ScaleError> {
        let stop = AtomicBool::new(false);
        let (measured, commits) = std::thread::scope(|s| {
            let writer = s.spawn(|| -> Result<usize, ScaleError> {
                let mut commits = 0;
                while !stop.load(Ordering::Relaxed) {
                    let seller = crate::synth::wallet(1, commits as u64 % 1_000);
                    builder.list(&seller, 50_000_000 + commits as u64, "auction");
                    store_and_catch_up(log, db, &builder.take_records())?;
                    commits += 1;
                    std::thread::sleep(SLOT);
                }
                Ok(commits)
            });
            let measured = load(paths, warm);
            stop.store(true, Ordering::Relaxed);
            (measured, writer.join())
        });
        let commits =
            commits.map_err(|_| std::io::Error::other("the writer thread panicked"))??;
        let mut p = measured.map_err(std::io::Error::other)?;
        p.commits = commits;
        Ok(p)
    };
    let browse = under_commits(vec!["/listings?limit=50".to_string()], true)?;
    // every filter matches what the first page does, and none repeats
    let browse_unkept = under_commits(
        (0..CLIENTS * PER_CLIENT)
            .map(|i| format!("/listings?limit=50&max_price_usd={}", 1_000_000 + i))
            .collect(),
        false,
    )?;
    let detail = under_commits(
        ids.iter().map(|id| format!("/listings/{id}")).collect(),
        true,
    )?;
    rt.block_on(server.stop());
    Ok(StandbyReads {
        visible_ms: super::scale::Millis::of(visible),
        clients: CLIENTS,
        browse,
        browse_unkept,
        detail,
        rss_after_mib: rss_mib(),
    })
}
