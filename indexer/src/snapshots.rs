//! Earlier folded states, kept so that a record landing before the head
//! (a fork moving it, a late poll, a hint, a replica catching up) refolds
//! only the suffix of the log after the newest state that does not
//! include its position, never the whole history.
//!
//! A snapshot is a clone of [`State`], whose maps are persistent
//! (`imbl`): taking one costs O(1), and it holds only the nodes the fold
//! has since replaced. Snapshots are taken every [`STRIDE`] folded
//! transactions and kept at doubling distances behind the head (two per
//! distance band), so a record `d` transactions back refolds at most about
//! `2d` of them, whatever the length of the log.
//!
//! Owns choosing and keeping snapshots only: it never reads the log.

use crate::fold::State;
use crate::record::Position;
use std::collections::VecDeque;

/// Transactions folded between two snapshots.
pub const STRIDE: u64 = 256;
/// Farthest a snapshot is kept behind the head, in transactions: a record
/// landing farther back than this (none does in a healthy deployment: the
/// finalized log never changes, and a hint or poll names something recent)
/// refolds from the oldest snapshot, or from the start.
pub const MAX_DISTANCE: u64 = 1 << 17;

/// The snapshots, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Snapshots {
    kept: VecDeque<State>,
}

fn band(distance: u64) -> u32 {
    (distance / STRIDE + 1).ilog2()
}

impl Snapshots {
    /// No snapshot.
    pub fn new() -> Snapshots {
        Snapshots::default()
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Called after every fold step: snapshots `head` when [`STRIDE`]
    /// transactions have been folded since the newest one, and thins the
    /// older ones to about two per doubling distance.
    pub fn observe(&mut self, head: &State) {
        let newest = self.kept.back().map_or(0, |s| s.transactions);
        if head.transactions < newest + STRIDE {
            return;
        }
        self.kept.push_back(head.clone());
        self.thin(head.transactions);
    }

    fn thin(&mut self, head: u64) {
        // a snapshot k doublings behind the head is kept only on every
        // 2^(k-1)-th stride: alignment only tightens as it ages, so about
        // two per band remain and none is ever needed back
        self.kept.retain(|s| {
            let distance = head.saturating_sub(s.transactions);
            let align = 1u64 << band(distance).saturating_sub(1);
            distance <= MAX_DISTANCE && (s.transactions / STRIDE).is_multiple_of(align)
        });
    }

    /// The newest snapshot that folded nothing at or after `position`
    /// (where a refold for a change at `position` starts), or `None`: from
    /// the start.
    pub fn before(&self, position: Position) -> Option<&State> {
        self.kept
            .iter()
            .rev()
            .find(|s| s.last.is_none_or(|last| last < position))
    }

    /// Drops the snapshots that folded anything at or after `position`
    /// (a change there makes them wrong).
    pub fn forget_from(&mut self, position: Position) {
        self.kept
            .retain(|s| s.last.is_none_or(|last| last < position));
    }

    /// Drops every snapshot.
    pub fn clear(&mut self) {
        self.kept.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(transactions: u64) -> State {
        let mut s = State::new();
        s.transactions = transactions;
        s.last = Some((transactions, 0));
        s
    }

    #[test]
    fn keeps_doubling_distances_and_finds_the_one_before() {
        let mut snaps = Snapshots::new();
        let head = 100 * STRIDE;
        for n in (STRIDE..=head).step_by(STRIDE as usize) {
            snaps.observe(&at(n));
        }
        // about two per band over log2(100) bands, not 100
        assert!(snaps.len() <= 2 * 8, "kept {}", snaps.len());
        assert_eq!(snaps.kept.back().unwrap().transactions, head);
        // a change d back finds a snapshot at most about 2d back
        for d in [1, STRIDE, 3 * STRIDE, 20 * STRIDE, 60 * STRIDE] {
            let pos = (head - d, 0);
            let s = snaps.before(pos).expect("a snapshot before");
            assert!(s.last.unwrap() < pos);
            assert!(
                head - s.transactions <= 2 * d + 2 * STRIDE,
                "d {d}: {}",
                s.transactions
            );
        }
        snaps.forget_from((head - 5 * STRIDE, 0));
        assert!(snaps
            .kept
            .iter()
            .all(|s| s.transactions < head - 5 * STRIDE));
    }
}
