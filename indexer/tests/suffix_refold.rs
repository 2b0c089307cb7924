//! A record landing before the head (a late poll, a hint, a fork moving
//! it, a provisional one vanishing) refolds only the suffix of the log
//! from the newest snapshot before it, never the whole history, and the
//! state always equals a replay of the stored log, whatever the order in
//! which records arrive.

use indexer::book::ManifestBook;
use indexer::engine::Indexer;
use indexer::fold::{FoldConfig, State};
use indexer::record::TxRecord;
use indexer::snapshots::STRIDE;
use indexer::store::SqliteStore;
use indexer::synth;
use proptest::prelude::*;

fn replay_hash(records: &[TxRecord]) -> String {
    let mut sorted = records.to_vec();
    indexer::record::sort_chain_order(&mut sorted);
    let mut book = ManifestBook::new();
    book.add_records(&sorted);
    State::fold(&sorted, &book, &FoldConfig::default()).hash()
}

fn open() -> Indexer {
    Indexer::open(
        Box::new(SqliteStore::in_memory().unwrap()),
        FoldConfig::default(),
    )
    .unwrap()
}

fn final_slot(records: &[TxRecord]) -> u64 {
    records.iter().map(|r| r.tx.slot).max().unwrap()
}

#[test]
fn a_record_landing_before_the_head_refolds_only_the_suffix() {
    let records = synth::trades(1_000, 20); // 6,000 records
    let n = records.len();
    let ix = open();
    let fin = final_slot(&records);
    for back in [3usize, 40, 700] {
        let ix = open();
        let late = records[n - back].clone();
        let early: Vec<TxRecord> = records
            .iter()
            .filter(|r| r.signature() != late.signature())
            .cloned()
            .collect();
        for chunk in early.chunks(500) {
            ix.ingest(chunk.to_vec(), fin, &[]).unwrap();
        }
        let whole_refolds = ix.refolds();
        let applied = ix.ingest(vec![late], fin, &[]).unwrap();
        assert!(applied.refolded);
        assert_eq!(ix.refolds(), whole_refolds, "{back} back: no whole refold");
        assert_eq!(ix.suffix_refolds(), 1);
        // at most about twice the distance back, plus a stride
        assert!(
            applied.refolded_records <= 2 * back + 2 * STRIDE as usize,
            "{back} back: refolded {} of {n}",
            applied.refolded_records
        );
        assert!(applied.refolded_records >= back);
        assert_eq!(ix.state().hash(), replay_hash(&records));
    }
    // appended in order: never a refold
    for chunk in records.chunks(700) {
        let applied = ix.ingest(chunk.to_vec(), fin, &[]).unwrap();
        assert!(!applied.refolded);
    }
    assert_eq!((ix.refolds(), ix.suffix_refolds()), (1, 0));
}

#[test]
fn a_moved_record_and_a_vanished_one_refold_from_the_earliest_change() {
    let records = synth::trades(600, 10);
    let n = records.len();
    let ix = open();
    // everything provisional (final slot 0) so a fork may move or drop it
    for chunk in records.chunks(400) {
        ix.ingest(chunk.to_vec(), 0, &[]).unwrap();
    }
    // a fork moves a record 50 back to a later slot of the head's block
    let mut moved = records[n - 50].clone();
    moved.tx.slot = records[n - 1].tx.slot;
    moved.index = 1;
    let applied = ix.ingest(vec![moved.clone()], 0, &[]).unwrap();
    assert!(applied.refolded);
    assert!(applied.refolded_records <= 2 * 50 + 2 * STRIDE as usize);
    let mut now: Vec<TxRecord> = records.clone();
    now[n - 50] = moved;
    assert_eq!(ix.state().hash(), replay_hash(&now));
    // a provisional record 20 back vanishes
    let gone = now[n - 20].signature().to_string();
    let applied = ix.ingest(vec![], 0, std::slice::from_ref(&gone)).unwrap();
    assert_eq!(applied.removed, 1);
    assert!(applied.refolded && applied.refolded_records <= 2 * 20 + 2 * STRIDE as usize);
    now.retain(|r| r.signature() != gone);
    assert_eq!(ix.state().hash(), replay_hash(&now));
    assert!(!ix.state().has_folded(&gone));
    assert_eq!(ix.refolds(), 1, "only the opening fold read the whole log");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Records arriving in any order, in batches of any size, fold to the
    /// replay of the sorted log.
    #[test]
    fn arrival_order_never_changes_the_state(
        seed in any::<u64>(),
        sizes in proptest::collection::vec(1usize..300, 1..8),
    ) {
        let records = synth::trades(200, 8);
        let mut shuffled = records.clone();
        // a deterministic shuffle from the seed, mostly local (as late
        // polls and hints are) with a few far jumps
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let reach = if x % 10 == 0 { i } else { 8.min(i) };
            let j = i - (x as usize % (reach + 1));
            shuffled.swap(i, j);
        }
        let ix = open();
        let fin = final_slot(&records);
        let mut rest = &shuffled[..];
        let mut cycle = sizes.iter().cycle();
        while !rest.is_empty() {
            let k = (*cycle.next().unwrap()).min(rest.len());
            ix.ingest(rest[..k].to_vec(), fin, &[]).unwrap();
            rest = &rest[k..];
        }
        prop_assert_eq!(ix.state().hash(), replay_hash(&records));
    }
}

#[path = "support/replica.rs"]
mod replica;

/// A SQLite replica (`serve --db` beside a writer) catches up the same
/// way (see `support/replica.rs`).
#[test]
fn a_sqlite_replica_catches_up_from_its_last_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("indexer.db");
    replica::follows_the_writer(|| Box::new(SqliteStore::open(&db).unwrap()));
}

/// A refold reads the log a page at a time: opening a log of more than
/// two pages folds it exactly as a replay does.
#[test]
fn opening_a_log_of_several_pages_folds_it_whole() {
    let records = synth::trades(3_500, 30);
    assert!(records.len() > 2 * indexer::engine::REFOLD_PAGE);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("indexer.db");
    let writer = Indexer::open(
        Box::new(SqliteStore::open(&db).unwrap()),
        FoldConfig::default(),
    )
    .unwrap();
    writer
        .ingest(records.clone(), final_slot(&records), &[])
        .unwrap();
    let reopened = Indexer::open(
        Box::new(SqliteStore::open(&db).unwrap()),
        FoldConfig::default(),
    )
    .unwrap();
    assert_eq!(reopened.state().transactions, records.len() as u64);
    assert_eq!(reopened.state().hash(), replay_hash(&records));
}
