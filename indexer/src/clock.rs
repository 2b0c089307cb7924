//! The chain's clock as the indexer last read it: the block time of the
//! newest confirmed slot, advanced by the wall clock since it was read.
//! Views judge expiry by it (a listing that expired by the clock is not
//! `live` on a quiet market, where the fold's newest block is old).
//!
//! Owns that estimate only: it never reads the chain (the poller tells
//! it) and never enters the fold or its hash.

use std::sync::atomic::{AtomicI64, Ordering};

/// The chain's clock, shared by every state an indexer installs.
#[derive(Debug, Default)]
pub struct ChainClock {
    /// Block time read (unix s); 0: never read.
    block_time: AtomicI64,
    /// Wall clock when it was read (unix s).
    read_at: AtomicI64,
}

fn wall() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

impl ChainClock {
    /// Records the chain's time `block_time`, read now.
    pub fn observe(&self, block_time: i64) {
        self.read_at.store(wall(), Ordering::Relaxed);
        self.block_time.store(block_time, Ordering::Relaxed);
    }

    /// The chain's time now, if it was ever read.
    pub fn now(&self) -> Option<i64> {
        let t = self.block_time.load(Ordering::Relaxed);
        let since = (wall() - self.read_at.load(Ordering::Relaxed)).max(0);
        (t > 0).then_some(t + since)
    }
}

/// Every clock is as good as another for comparing states: the clock is
/// no part of what was folded.
impl PartialEq for ChainClock {
    fn eq(&self, _: &ChainClock) -> bool {
        true
    }
}
