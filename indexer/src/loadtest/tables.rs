//! The state kept as tables at a market's scale
//! (`brainctl-indexer-bench tables`): a generated log of N records (trades
//! with the hostile shapes) in PostgreSQL, folded into the state tables by
//! the loop the writer runs ([`crate::statedb::durable::catch_up`]).
//! Measures the cold fold's rate and the process's peak resident memory
//! while it runs (sampled every 20 ms), one new memo's catch-up, a record
//! landing [`OUT_OF_ORDER_DISTANCE`] records before the head (a rewind of
//! the batches after it), and streaming the state hash from the tables.
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
    /// A record landing before the head: stored and caught up (ms).
    pub out_of_order_ms: f64,
    /// Records that catch-up folded again.
    pub out_of_order_refolded: usize,
    /// Streaming the state hash from the tables.
    pub state_hash_seconds: f64,
}

impl TablesReport {
    /// Human-readable lines.
    pub fn summary(&self) -> String {
        format!(
            "records {} ({} memos)\n\
             cold fold into the tables: {:.1} s, {:.0} records/s\n\
             resident memory: {:.0} MiB before, {:.0} MiB peak while folding\n\
             one new memo caught up: p50 {:.1} ms, max {:.1} ms ({} samples)\n\
             a record {} before the head: {:.1} ms, {} records folded again\n\
             state hash streamed from the tables: {:.1} s",
            self.records,
            self.memos,
            self.cold_fold_seconds,
            self.cold_fold_records_per_second,
            self.rss_before_mib,
            self.rss_peak_mib,
            self.new_memo_ms.p50_ms,
            self.new_memo_ms.max_ms,
            self.new_memo_ms.n,
            OUT_OF_ORDER_DISTANCE,
            self.out_of_order_ms,
            self.out_of_order_refolded,
            self.state_hash_seconds,
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

/// Runs the benchmark over an empty database at `pg_url`.
pub fn tables(pg_url: &str, records: usize, samples: usize) -> Result<TablesReport, ScaleError> {
    let mut log = PgStore::connect(pg_url)?;
    let Generated {
        mut builder,
        held_out,
        records: n,
        memos,
        ..
    } = generate(&mut log, records, 1)?;
    let mut db = PgState::connect(pg_url)?;
    let cfg = FoldConfig::default();
    let rss_before_mib = rss_mib();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = peak_rss(stop.clone());
    let started = Instant::now();
    let mut last_report = Instant::now();
    let done = durable::catch_up(&log, &mut db, &cfg, PAGE, &mut |folded, total| {
        if last_report.elapsed().as_secs() >= 10 {
            last_report = Instant::now();
            let rate = folded as f64 / started.elapsed().as_secs_f64();
            eprintln!(
                "folded {folded}/{total} ({rate:.0}/s, about {:.0} s left)",
                (total - folded) as f64 / rate.max(1.0)
            );
        }
    })?;
    let cold = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let rss_peak_mib = sampler.join().unwrap_or(0.0);
    let mut new_memo = Vec::new();
    for i in 0..samples.max(1) {
        builder.trade(10_000_000 + i as u64, 1_000);
        let mut batch = builder.take_records();
        batch.truncate(1);
        let started = Instant::now();
        log.put_records(&batch, FINAL)?;
        durable::catch_up(&log, &mut db, &cfg, PAGE, &mut |_, _| {})?;
        new_memo.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let started = Instant::now();
    log.put_records(&held_out, FINAL)?;
    let late = durable::catch_up(&log, &mut db, &cfg, PAGE, &mut |_, _| {})?;
    let out_of_order_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    state_hash(&mut db)?;
    Ok(TablesReport {
        records: n,
        memos,
        rss_before_mib,
        rss_peak_mib,
        cold_fold_seconds: cold,
        cold_fold_records_per_second: done.folded as f64 / cold.max(1e-9),
        new_memo_ms: super::scale::Millis::of(new_memo),
        out_of_order_ms,
        out_of_order_refolded: late.folded,
        state_hash_seconds: started.elapsed().as_secs_f64(),
    })
}
