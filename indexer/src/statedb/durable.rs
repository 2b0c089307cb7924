//! The state tables kept equal to the fold of the log, in bounded memory:
//! [`catch_up`] reads the log's changes since the change number the tables
//! reflect, takes back the batches a late, moved or removed record
//! invalidates ([`StateDb::rewind`]), then folds the log after the head a
//! page at a time, each page over its own working set
//! ([`State::working_set`]) and committed with its undo rows. Only the last
//! page records the new change number, so a process killed at any step
//! redoes the rest on restart and nothing is folded twice or lost.
//!
//! Owns that loop; never reads the chain, never serves.

use super::{rows_of, undo_of, Commit, Rewound, StateDb};
use crate::book::ManifestBook;
use crate::fold::{FoldConfig, Overlay, State};
use crate::record::{Position, TxRecord};
use crate::store::{LogChanges, LogStore, StoreError};
use std::collections::BTreeSet;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Records folded per committed batch.
pub const PAGE: usize = 5_000;
/// A rebuild writes undo rows only for its last records: a rewind further
/// back (an old record arriving late) rebuilds.
pub const UNDO_TAIL: usize = 20_000;
/// Most records a batch with undo rows folds (a rewind takes back whole
/// batches).
pub const UNDO_BATCH: usize = 500;

/// What one catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaughtUp {
    /// Records folded.
    pub folded: usize,
    /// Whether batches were taken back first.
    pub rewound: bool,
    /// Whether the state was rebuilt from the empty state.
    pub rebuilt: bool,
}

/// Progress of a long fold: records folded so far, of how many.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

/// Brings `db` up to the log in `log`, folding `page` records a commit
/// (a rebuild keeps undo rows for its last [`UNDO_TAIL`]).
///
/// The caller is the log's only writer while this runs (the engine's
/// fold turn; the one writer the tables' lock admits): a record read
/// twice in one catch-up, moved under it, would be folded twice, since
/// a batch never looks up its own records ([`crate::fold::Keys`]).
pub fn catch_up(
    log: &dyn LogStore,
    db: &mut dyn StateDb,
    cfg: &FoldConfig,
    page: usize,
    progress: Progress<'_>,
) -> Result<CaughtUp, StoreError> {
    catch_up_with(log, db, cfg, page, UNDO_TAIL, progress)
}

/// [`catch_up`], a rebuild keeping undo rows for its last `undo_tail`
/// records.
pub fn catch_up_with(
    log: &dyn LogStore,
    db: &mut dyn StateDb,
    cfg: &FoldConfig,
    page: usize,
    undo_tail: usize,
    progress: Progress<'_>,
) -> Result<CaughtUp, StoreError> {
    let started = std::time::Instant::now();
    // read before the fold: every change after it is caught up next time
    let seq = log.log_seq()?;
    let changes = match db.applied_seq()? {
        Some(applied) => log.changes_since(applied)?,
        None => None,
    };
    let mut done = CaughtUp::default();
    match changes {
        None => {
            db.clear()?;
            done.rebuilt = true;
        }
        Some(changes) => {
            if let Some(from) = earliest_change(db, &changes)? {
                match db.rewind(from)? {
                    Rewound::To(_) => done.rewound = true,
                    Rewound::Unreachable => {
                        db.clear()?;
                        done.rebuilt = true;
                    }
                }
            }
        }
    }
    let changes_read = started.elapsed();
    let tail = done.rebuilt.then_some(undo_tail);
    done.folded = fold_log(log, db, cfg, seq, page, tail, progress)?;
    if done.rebuilt {
        warm_lookups(log);
    }
    tracing::debug!(
        folded = done.folded,
        rewound = done.rewound,
        rebuilt = done.rebuilt,
        changes_ms = changes_read.as_secs_f64() * 1e3,
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        "caught up"
    );
    Ok(done)
}

/// After a rebuild, which read the whole log and pushed the indexes new
/// records are looked up by out of the server's cache, reads them back in
/// (best effort: a failure costs only speed, so it is logged, not raised).
fn warm_lookups(log: &dyn LogStore) {
    let started = std::time::Instant::now();
    match log.warm_lookups() {
        Ok(0) => {}
        Ok(blocks) => tracing::info!(
            blocks,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "read the log's lookup indexes back into the database's cache"
        ),
        Err(e) => tracing::warn!(error = %e, "could not warm the log's lookup indexes"),
    }
}

/// Folds every log record after the tables' head, `page` a commit; the
/// last commit records `seq`. Undo rows are written only for the last
/// `undo_tail` records (`None`: for all).
///
/// Three stages overlap: a checker thread verifies the manifests of the
/// page after next ([`ManifestBook`]: signatures), this thread folds the
/// next page, and a committer thread, which alone uses `db`, commits the
/// page before. The next page reads its working set through the folded,
/// not yet committed page ([`Overlay`]), read before that page's commit
/// on the one connection, so it sees exactly what the tables will hold.
/// Commits stay in order, one batch each: a process killed at any step
/// resumes from the last one. At most two pages are read ahead (and up
/// to half a page held back, [`LogPages`]) and one folded page waits,
/// so memory stays bounded.
fn fold_log(
    log: &dyn LogStore,
    db: &mut dyn StateDb,
    cfg: &FoldConfig,
    seq: Option<u64>,
    page: usize,
    undo_tail: Option<usize>,
    progress: Progress<'_>,
) -> Result<usize, StoreError> {
    let after = db.head()?.last;
    let mut pages = LogPages::new(log, after);
    // a rebuild counts first: where its undo tail starts depends on it
    let rebuild_total = match undo_tail {
        Some(_) => Some(log.count_after(after)?),
        None => None,
    };
    let undo_from = match (undo_tail, rebuild_total) {
        (Some(t), Some(total)) => total.saturating_sub(t),
        _ => 0,
    };
    let (mut total, mut recorded) = (rebuild_total, false);
    let folded = std::thread::scope(|s| -> Result<usize, StoreError> {
        let (to_check, checking) = sync_channel::<Page>(1);
        let (to_fold, checked) = sync_channel::<(Page, ManifestBook)>(1);
        s.spawn(move || {
            for p in checking {
                let book = checked_book(&p.records);
                if to_fold.send((p, book)).is_err() {
                    return;
                }
            }
        });
        let (to_commit, jobs) = sync_channel::<Job>(2);
        let db = &mut *db;
        let committer = s.spawn(move || commit_jobs(db, jobs));
        let mut fold = || -> Result<usize, StoreError> {
            let (mut read, mut folded, mut ahead, mut more) = (0usize, 0usize, 0usize, true);
            let mut pending: Option<(State, Commit)> = None;
            loop {
                while more && ahead < 2 {
                    // the tail a rewind may reach is folded in small
                    // batches: taking one back refolds little more than
                    // the distance to the change
                    let undo = read + page > undo_from;
                    let size = if undo { page.min(UNDO_BATCH) } else { page };
                    let (records, last) = pages.next(size.max(1))?;
                    if records.is_empty() {
                        more = false;
                        break;
                    }
                    more = !last;
                    let undo = read + records.len() > undo_from;
                    read += records.len();
                    // a catch-up of two pages or less needs no count (the
                    // planner may scan the log for one); a longer one
                    // counts once, for progress
                    if last {
                        total = total.or(Some(read));
                    } else if total.is_none() && read >= 2 * size {
                        total = Some(read + pages.held.len() + log.count_after(pages.after)?);
                    }
                    to_check
                        .send(Page {
                            records,
                            undo,
                            last,
                        })
                        .map_err(|_| checker_gone())?;
                    ahead += 1;
                }
                if ahead == 0 {
                    if let Some((_, commit)) = pending {
                        to_commit
                            .send(Job::Commit(commit))
                            .map_err(|_| committer_gone())?;
                    }
                    return Ok(folded);
                }
                let (p, book) = checked.recv().map_err(|_| checker_gone())?;
                ahead -= 1;
                let (keys, book) = with_bodies(log, &p.records, book)?;
                let (over, commit) = pending.take().map(|(s, c)| (Box::new(s), c)).unzip();
                let (reply, answer) = sync_channel(1);
                to_commit
                    .send(Job::Read { keys, over, reply })
                    .map_err(|_| committer_gone())?;
                if let Some(c) = commit {
                    to_commit
                        .send(Job::Commit(c))
                        .map_err(|_| committer_gone())?;
                }
                let before = answer.recv().map_err(|_| committer_gone())??;
                // the last page records the change number: no commit of
                // its own after it
                let applied = if p.last { seq } else { None };
                recorded |= p.last;
                pending = Some(fold_page(&before, &p.records, &book, cfg, p.undo, applied));
                folded += p.records.len();
                progress(folded, total.unwrap_or(read + pages.held.len()));
            }
        };
        let folded = fold();
        drop(to_commit);
        // the committer's own failure first: it is why the fold stopped
        let committed = committer.join().map_err(|_| committer_gone())?;
        committed?;
        folded
    })?;
    if seq.is_some() && !recorded {
        let before = State::working_set(db, crate::fold::Keys::default())?;
        let (_, commit) = fold_page(&before, &[], &ManifestBook::new(), cfg, true, seq);
        db.commit(&commit)?;
    }
    Ok(folded)
}

/// What the committer thread does, in the order sent.
enum Job {
    /// Read a page's working set, through a folded page not committed
    /// yet (sent before its commit).
    Read {
        keys: crate::fold::Keys,
        over: Option<Box<State>>,
        reply: SyncSender<Result<State, StoreError>>,
    },
    /// Commit a folded page.
    Commit(Commit),
}

/// Runs `jobs` on `db` until they end or one fails (a failed read is
/// answered to the fold; a failed commit is returned).
fn commit_jobs(db: &mut dyn StateDb, jobs: Receiver<Job>) -> Result<(), StoreError> {
    for job in jobs {
        match job {
            Job::Read { keys, over, reply } => {
                let before = match &over {
                    Some(folded) => {
                        let mut rows = Overlay {
                            rows: &mut *db,
                            folded,
                        };
                        State::working_set(&mut rows, keys)
                    }
                    None => State::working_set(&mut *db, keys),
                };
                let failed = before.is_err();
                if reply.send(before).is_err() || failed {
                    return Ok(());
                }
            }
            Job::Commit(c) => db.commit(&c)?,
        }
    }
    Ok(())
}

/// A page read from the log, on its way to the fold.
struct Page {
    records: Vec<TxRecord>,
    /// Whether its commit writes undo rows.
    undo: bool,
    /// Whether it ends the log.
    last: bool,
}

/// The log after a position, a page at a time, in chain order. A page
/// asked for `size` records holds up to half as many again when that
/// ends the log, so a catch-up of up to one and a half pages folds and
/// commits once.
struct LogPages<'a> {
    log: &'a dyn LogStore,
    /// The position after which the next read starts.
    after: Option<Position>,
    /// Records read and not handed out yet (at most half a page and
    /// one, or what a larger page size left).
    held: std::collections::VecDeque<TxRecord>,
}

impl<'a> LogPages<'a> {
    fn new(log: &'a dyn LogStore, after: Option<Position>) -> LogPages<'a> {
        LogPages {
            log,
            after,
            held: Default::default(),
        }
    }

    /// The next page of about `size` records, and whether it ends the
    /// log (empty: nothing after).
    fn next(&mut self, size: usize) -> Result<(Vec<TxRecord>, bool), StoreError> {
        // up to half a page more when that ends the log (at least one
        // more: a log never ends on an empty page)
        let limit = size + (size / 2).max(1);
        // a page held back from a larger size may already fill this one
        if self.held.len() <= limit {
            // one past the limit tells whether the log ends within it
            let wanted = limit + 1 - self.held.len();
            let fresh = self.log.records_page(self.after, wanted)?;
            let last = fresh.len() < wanted;
            if let Some(r) = fresh.last() {
                self.after = Some(r.position());
            }
            self.held.extend(fresh);
            if last {
                return Ok((self.held.drain(..).collect(), true));
            }
        }
        let records: Vec<TxRecord> = self.held.drain(..size.min(self.held.len())).collect();
        Ok((records, false))
    }
}

fn checker_gone() -> StoreError {
    StoreError::Foreign("the manifest checker thread stopped".into())
}

fn committer_gone() -> StoreError {
    StoreError::Foreign("the committer thread stopped".into())
}

/// The manifests `records` carry, checked.
fn checked_book(records: &[TxRecord]) -> ManifestBook {
    let mut book = ManifestBook::new();
    book.add_records(records);
    book
}

/// The keys `records` name, and `book` (the manifests they carry,
/// checked) with the bodies other records carried that their memos
/// name, from the log ([`LogStore::carried_bodies`]): a page sees every
/// body the whole-log fold sees.
fn with_bodies(
    log: &dyn LogStore,
    records: &[TxRecord],
    mut book: ManifestBook,
) -> Result<(crate::fold::Keys, ManifestBook), StoreError> {
    let keys = crate::fold::Keys::of(records);
    let mut named = keys.manifests.clone();
    named.retain(|id| book.get(id).is_none());
    let bodies = log.carried_bodies(&named)?;
    book.add_bodies(bodies.iter().map(|(id, b)| (id, b)));
    Ok((keys, book))
}

/// Folds `records` (after the head, in chain order) over their working
/// set `before`: the state after, and the commit of what changed.
fn fold_page(
    before: &State,
    records: &[TxRecord],
    book: &ManifestBook,
    cfg: &FoldConfig,
    undo: bool,
    applied_seq: Option<u64>,
) -> (State, Commit) {
    let mut after = before.clone();
    for r in records {
        after.apply_one(r, book, cfg);
    }
    let changes = after.changes_from(before);
    let commit = Commit {
        rows: rows_of(&changes),
        deletes: Vec::new(),
        head: after.head(),
        undo: undo.then(|| (before.head(), undo_of(&changes, before))),
        applied_seq,
        added: changes.added,
    };
    (after, commit)
}

/// [`crate::record::earliest_change`] of `changes` against the tables'
/// head and the positions they hold. A record stored only where it is
/// now ([`LogChanges::in_place`]) and after the head was never folded
/// (the head moves back only by a rewind, which takes back the seen rows
/// of what it takes back): its position is not looked up, so a batch of
/// new records costs no lookup each.
fn earliest_change(
    db: &mut dyn StateDb,
    changes: &LogChanges,
) -> Result<Option<Position>, StoreError> {
    let head = db.head()?.last;
    let unfolded = |r: &TxRecord| {
        changes.in_place.contains(r.signature()) && head.is_none_or(|h| r.position() > h)
    };
    let mut sigs: BTreeSet<String> = changes
        .records
        .iter()
        .filter(|r| !unfolded(r))
        .map(|r| r.tx.signature.clone())
        .collect();
    sigs.extend(changes.removed.iter().cloned());
    // none to look up costs no query on either database
    let seen: std::collections::HashMap<String, Position> = db.seen(&sigs)?.into_iter().collect();
    Ok(crate::record::earliest_change(
        head,
        |sig| seen.get(sig).copied(),
        &changes.records,
        &changes.removed,
    ))
}

#[cfg(test)]
mod tests {
    use super::LogPages;
    use crate::record::TxRecord;
    use crate::store::{LogStore, SqliteStore};

    /// Pages of a log of `n` records asked `sizes` in turn: each page's
    /// length and whether it was flagged last.
    fn pages(n: u64, sizes: &[usize]) -> (Vec<(usize, bool)>, Vec<TxRecord>, Vec<TxRecord>) {
        let mut log = SqliteStore::in_memory().unwrap();
        let records = crate::synth::trades(n, 3);
        log.put_records(&records, u64::MAX).unwrap();
        let mut p = LogPages::new(&log, None);
        let (mut shape, mut read) = (Vec::new(), Vec::new());
        for size in sizes.iter().cycle() {
            let (page, last) = p.next(*size).unwrap();
            shape.push((page.len(), last));
            read.extend(page);
            if last {
                break;
            }
        }
        (shape, read, log.records().unwrap())
    }

    #[test]
    fn a_page_takes_the_end_of_the_log_when_it_is_under_half_a_page_more() {
        // 4 trades: 24 records
        let (shape, read, all) = pages(4, &[10]);
        assert_eq!(shape, vec![(10, false), (14, true)]);
        assert_eq!(read, all);
        // exactly one and a half pages: one page
        let (shape, read, all) = pages(4, &[16]);
        assert_eq!(shape, vec![(24, true)]);
        assert_eq!(read, all);
        // one more: two
        let (shape, _, _) = pages(4, &[15]);
        assert_eq!(shape, vec![(15, false), (9, true)]);
        // a page larger than the log
        let (shape, _, _) = pages(4, &[100]);
        assert_eq!(shape, vec![(24, true)]);
    }

    #[test]
    fn pages_of_changing_sizes_hand_out_every_record_once_in_order() {
        // a size that shrinks hands out what a larger one held back
        for sizes in [&[10, 2][..], &[1], &[3, 7, 1], &[9, 30], &[8, 1, 1, 2]] {
            let (shape, read, all) = pages(4, sizes);
            assert_eq!(read, all, "sizes {sizes:?}: {shape:?}");
            for (i, (len, last)) in shape.iter().enumerate() {
                let size = sizes[i % sizes.len()];
                // a page is its size, or up to half as much again ending the log
                assert_eq!(*last, i + 1 == shape.len(), "{sizes:?}: {shape:?}");
                match last {
                    false => assert_eq!(*len, size, "{sizes:?}: {shape:?}"),
                    true => assert!(*len > 0 && *len <= size + (size / 2).max(1)),
                }
            }
        }
    }

    #[test]
    fn an_empty_log_is_one_empty_last_page() {
        let log = SqliteStore::in_memory().unwrap();
        assert_eq!(LogPages::new(&log, None).next(5).unwrap(), (vec![], true));
    }
}
