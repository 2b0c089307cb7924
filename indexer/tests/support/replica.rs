//! One scenario for every store with change numbers: a read replica
//! catches up from the last change it applied, as the writer folds:
//! appends in place; a record landing before the head, a fork moving one
//! and a vanished one by a suffix refold; a rebuild of the whole log from
//! the start; removals pruned past it. Its state hash equals the
//! writer's after every step, and it reads the whole log again only
//! where the removal log no longer reaches back to it (a prune, a clear).

use indexer::engine::{Applied, Indexer};
use indexer::fold::FoldConfig;
use indexer::store::LogStore;

/// Runs the scenario over stores `open` connects to one shared log.
pub fn follows_the_writer(open: impl Fn() -> Box<dyn LogStore>) {
    let open = || Indexer::open(open(), FoldConfig::default()).unwrap();
    let records = indexer::synth::trades(400, 10);
    let n = records.len();
    let writer = open();
    writer.ingest(records[..1_000].to_vec(), 0, &[]).unwrap();
    let replica = open();
    let same = |what: &str| -> Applied {
        let applied = replica.catch_up().unwrap();
        assert_eq!(
            replica.state().hash(),
            writer.state().hash(),
            "{what}: the replica's state is the writer's"
        );
        applied
    };
    assert_eq!(same("opened").stored, 0);

    let late = records[1_500].clone();
    let rest: Vec<_> = records[1_000..]
        .iter()
        .filter(|r| r.signature() != late.signature())
        .cloned()
        .collect();
    for chunk in rest.chunks(300) {
        writer.ingest(chunk.to_vec(), 0, &[]).unwrap();
        let applied = same("appended");
        assert_eq!((applied.stored, applied.refolded), (chunk.len(), false));
    }
    writer.ingest(vec![late], 0, &[]).unwrap();
    let applied = same("a record landing 900 back");
    assert!(applied.refolded && applied.refolded_records < 2 * 900 + 600);

    let mut moved = records[n - 30].clone();
    moved.tx.slot = records[n - 1].tx.slot;
    moved.index = 1;
    writer.ingest(vec![moved], 0, &[]).unwrap();
    let applied = same("a fork moving a record 30 back");
    assert!(applied.refolded && applied.refolded_records < 2 * 30 + 600);

    let gone = records[n - 10].signature().to_string();
    writer
        .ingest(vec![], 0, std::slice::from_ref(&gone))
        .unwrap();
    let applied = same("a provisional record vanishing");
    assert_eq!(applied.removed, 1);
    assert!(!replica.state().has_folded(&gone));
    assert_eq!(
        replica.refolds(),
        1,
        "only the opening fold read the whole log"
    );
    assert!(replica.suffix_refolds() >= 3);
    assert_eq!(same("nothing new").stored, 0);

    // removals pruned past the replica: it refolds once, then catches up
    // from where that refold read again
    let gone = records[n - 5].signature().to_string();
    writer
        .ingest(vec![], 0, std::slice::from_ref(&gone))
        .unwrap();
    writer.store().prune_removals(0).unwrap();
    let applied = same("removals pruned past the replica");
    assert!(applied.refolded && replica.refolds() == 2);
    assert!(!replica.state().has_folded(&gone));
    assert_eq!(same("nothing new after the prune").stored, 0);
    assert_eq!(replica.refolds(), 2);

    // a rebuild: the log cleared (no removal listed per record: the
    // replica refolds), then everything again, caught up as appends
    writer.store().clear_log().unwrap();
    writer.refold().unwrap();
    same("cleared");
    assert_eq!(replica.state().transactions, 0);
    assert_eq!(replica.refolds(), 3);
    writer.ingest(records.clone(), 0, &[]).unwrap();
    same("rebuilt");
    assert_eq!(replica.state().transactions, n as u64);
    assert_eq!(
        replica.refolds(),
        3,
        "the rebuild's records came as changes"
    );
}
