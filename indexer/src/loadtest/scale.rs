//! What the scale benchmark (`brainctl-indexer-bench scale`,
//! [`super::tables`]) stands on: a generated log of N records
//! (negotiated trades with the hostile shapes around them) written
//! straight into a PostgreSQL log store, latency percentiles, resident
//! memory.
//!
//! Owns the generated log and the measures; it writes only the database
//! it is given.

use crate::record::TxRecord;
use crate::store::{LogStore, PgStore};
use crate::synth::LogBuilder;
use serde::Serialize;
use std::time::Instant;

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

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The database.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The API server's listener or a request to it.
    #[error("api server: {0}")]
    Io(#[from] std::io::Error),
    /// The API server did not serve a change in time.
    #[error("the api server did not serve {0} within 30 s")]
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

/// Progress of long work on stderr, every 10 s: done, of how many, the
/// rate and the time left.
pub(crate) struct Eta {
    what: &'static str,
    started: Instant,
    reported: Instant,
}

impl Eta {
    pub(crate) fn new(what: &'static str) -> Eta {
        Eta {
            what,
            started: Instant::now(),
            reported: Instant::now(),
        }
    }

    /// Reports `done` of `total` if 10 s have passed since the last.
    pub(crate) fn tick(&mut self, done: usize, total: usize) {
        if self.reported.elapsed().as_secs() < 10 {
            return;
        }
        self.reported = Instant::now();
        let rate = done as f64 / self.started.elapsed().as_secs_f64();
        eprintln!(
            "{} {done}/{total} records ({rate:.0}/s, about {:.0} s left)",
            self.what,
            total.saturating_sub(done) as f64 / rate.max(1.0)
        );
    }
}

/// What [`generate`] wrote.
pub(crate) struct Generated {
    /// Goes on from the head.
    pub(crate) builder: LogBuilder,
    /// Records held out, [`OUT_OF_ORDER_DISTANCE`] and more before the head.
    pub(crate) held_out: Vec<TxRecord>,
    /// Records and memos written.
    pub(crate) records: usize,
    pub(crate) memos: usize,
    /// Generating and storing it all (s).
    pub(crate) seconds: f64,
}

/// Generates about `n` records into the log `store` (an empty database),
/// holding out `held` records [`OUT_OF_ORDER_DISTANCE`] and more before
/// the head; returns the builder (to go on from the head), the held-out
/// records, the records and memos written, and how long it took. One
/// thread builds (and signs) the next batch while this one stores the
/// last.
pub(crate) fn generate(
    store: &mut PgStore,
    n: usize,
    held: usize,
) -> Result<Generated, ScaleError> {
    let started = Instant::now();
    let hold_from = n.saturating_sub(OUT_OF_ORDER_DISTANCE + held);
    let (to_store, batches) = std::sync::mpsc::sync_channel::<Vec<TxRecord>>(2);
    let (b, held_out, written, memo_count) = std::thread::scope(|s| {
        let builder = s.spawn(move || {
            let mut b = LogBuilder::new();
            let (mut written, mut held_out) = (0usize, Vec::new());
            let mut i = 0u64;
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
                    if at >= hold_from
                        && held_out.len() < held
                        && batch[k].tx.memos[0].contains(":list:")
                    {
                        held_out.push(batch.remove(k));
                    } else {
                        k += 1;
                    }
                }
                written += batch.len();
                if to_store.send(batch).is_err() {
                    break;
                }
            }
            (b, held_out)
        });
        let mut eta = Eta::new("generated");
        let (mut written, mut memo_count) = (0usize, 0usize);
        let mut stored = Ok(());
        for batch in batches {
            eta.tick(written, n);
            if let Err(e) = store.put_records(&batch, FINAL) {
                stored = Err(e);
                break;
            }
            written += batch.len();
            memo_count += memos(&batch);
        }
        let (b, held_out) = builder
            .join()
            .map_err(|_| std::io::Error::other("the log generator panicked"))?;
        stored?;
        Ok::<_, ScaleError>((b, held_out, written, memo_count))
    })?;
    Ok(Generated {
        builder: b,
        held_out,
        records: written,
        memos: memo_count,
        seconds: started.elapsed().as_secs_f64(),
    })
}
