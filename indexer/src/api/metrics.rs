//! Counters for `/metrics` (Prometheus text format 0.0.4), hand-written:
//! a handful of monotonically increasing counters plus gauges read from
//! the current state at scrape time.

use crate::fold::{FoldConfig, State};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Process counters.
#[derive(Debug, Default)]
pub struct Metrics {
    /// HTTP requests served.
    pub http_requests: AtomicU64,
    /// Of which answered with 4xx/5xx.
    pub http_errors: AtomicU64,
    /// Ingest polls done.
    pub polls: AtomicU64,
    /// Polls that failed.
    pub poll_errors: AtomicU64,
    /// Records ingested.
    pub records: AtomicU64,
    /// Refolds (a record landing before the head: from the newest
    /// snapshot before it).
    pub refolds: AtomicU64,
    /// Records those refolds folded again.
    pub refolded_records: AtomicU64,
    /// Last finalized slot seen.
    pub final_slot: AtomicU64,
}

impl Metrics {
    /// Adds `n` to a counter.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one successful poll.
    pub fn record_poll(&self, r: &crate::ingest::PollReport) {
        Self::add(&self.polls, 1);
        Self::add(&self.records, r.fetched as u64);
        Self::add(&self.refolds, r.applied.refolded as u64);
        Self::add(&self.refolded_records, r.applied.refolded_records as u64);
        self.final_slot.fetch_max(r.final_slot, Ordering::Relaxed);
    }

    /// Counts one failed poll.
    pub fn record_poll_error(&self) {
        Self::add(&self.polls, 1);
        Self::add(&self.poll_errors, 1);
    }

    /// The exposition text.
    pub fn render(&self, state: &State, cfg: &FoldConfig) -> String {
        let mut out = String::new();
        let mut line = |name: &str, kind: &str, help: &str, v: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
            );
        };
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        line(
            "brainctl_indexer_http_requests_total",
            "counter",
            "HTTP requests served.",
            get(&self.http_requests),
        );
        line(
            "brainctl_indexer_http_errors_total",
            "counter",
            "HTTP responses with status >= 400.",
            get(&self.http_errors),
        );
        line(
            "brainctl_indexer_polls_total",
            "counter",
            "Ingest polls.",
            get(&self.polls),
        );
        line(
            "brainctl_indexer_poll_errors_total",
            "counter",
            "Ingest polls that failed.",
            get(&self.poll_errors),
        );
        line(
            "brainctl_indexer_records_ingested_total",
            "counter",
            "Transactions recorded.",
            get(&self.records),
        );
        line(
            "brainctl_indexer_refolds_total",
            "counter",
            "Refolds after a record landed before the head (each from the newest snapshot before it).",
            get(&self.refolds),
        );
        line(
            "brainctl_indexer_refolded_records_total",
            "counter",
            "Records folded again by those refolds.",
            get(&self.refolded_records),
        );
        line(
            "brainctl_indexer_finalized_slot",
            "gauge",
            "Last finalized slot seen.",
            get(&self.final_slot),
        );
        line(
            "brainctl_indexer_transactions",
            "gauge",
            "Transactions folded.",
            state.transactions,
        );
        line(
            "brainctl_indexer_listings",
            "gauge",
            "Listings (any status).",
            state.totals().listings,
        );
        line(
            "brainctl_indexer_offers",
            "gauge",
            "Offers (any status).",
            state.totals().offers,
        );
        line(
            "brainctl_indexer_rejected_memos",
            "gauge",
            "Transactions with refused memos.",
            state.totals().rejected,
        );
        if state.totals.is_some() {
            // a state read from tables holds no buys to count by status
            line(
                "brainctl_indexer_buys",
                "gauge",
                "Buys (any status).",
                state.totals().settlements,
            );
            return out;
        }
        let _ = writeln!(
            out,
            "# HELP brainctl_indexer_settlements Buys by status.\n# TYPE brainctl_indexer_settlements gauge"
        );
        for status in ["paid", "unreleased", "released", "refunded", "rejected"] {
            let n = state
                .settlements
                .values()
                .filter(|s| state.settlement_status(s, cfg) == status)
                .count();
            let _ = writeln!(
                out,
                "brainctl_indexer_settlements{{status=\"{status}\"}} {n}"
            );
        }
        out
    }
}
