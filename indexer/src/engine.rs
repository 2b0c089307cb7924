//! The indexer's core: the durable log ([`LogStore`]) and the state folded
//! from it, kept in step. New records after everything folded are folded
//! in place; anything else (a late record, a fork moving one, a vanished
//! provisional one, a read replica's catch-up) refolds only the suffix of
//! the log from the newest snapshot before the earliest change
//! ([`Snapshots`]), so the state is always exactly the fold of the stored
//! log and the cost of a change does not grow with the log's history.
//!
//! With PostgreSQL the state lives in the database instead
//! ([`Indexer::open_tables`], [`crate::statedb`]): the writer folds each
//! change into the state tables in bounded memory, and every reader
//! (the writer's own API, any number of API servers on the primary or a
//! hot standby) answers from them ([`Indexer::read`]), folding nothing.
//!
//! Owns that invariant only: it never talks to the network.

use crate::book::ManifestBook;
use crate::fold::{FoldConfig, State};
use crate::record::{sort_chain_order, Position, TxRecord};
use crate::snapshots::Snapshots;
use crate::statedb::answers::{self, Answer, Answers, Staleness};
use crate::statedb::read::Scope;
use crate::statedb::StateDb;
use crate::store::{LogStore, StoreError};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

/// What one ingest changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// Records stored (new or updated).
    pub stored: usize,
    /// Provisional records removed.
    pub removed: usize,
    /// Whether the state was refolded (from the newest snapshot before
    /// the earliest change, or from the start).
    pub refolded: bool,
    /// Transactions folded again by that refold.
    pub refolded_records: usize,
}

struct Folded {
    state: Arc<State>,
    book: ManifestBook,
    /// The state's hash, computed at most once per fold (on first ask).
    hash: Arc<OnceLock<String>>,
    /// Earlier states a refold starts from.
    snapshots: Snapshots,
}

impl Folded {
    fn changed(&mut self) {
        self.hash = Arc::new(OnceLock::new());
    }
}

/// Records a refold reads and folds at a time.
pub const REFOLD_PAGE: usize = 10_000;

/// Most hinted records waiting for their turn to be stored and folded.
pub const MAX_LATE_QUEUE: usize = 1024;

/// The state as tables: the writer's connection (none where this process
/// only serves) and a pool of readers.
struct Tables {
    writer: Option<Mutex<Box<dyn StateDb>>>,
    readers: Vec<Mutex<Box<dyn StateDb>>>,
    next: AtomicUsize,
    /// The hash of the tables at a head (slot position, transactions).
    hash: Mutex<Option<(Option<Position>, u64, String)>>,
    /// The hot answers' states at the tables' current version.
    answers: Answers,
}

impl Tables {
    /// A reader: a free one if any, else the next in turn.
    fn reader(&self) -> MutexGuard<'_, Box<dyn StateDb>> {
        for r in &self.readers {
            if let Ok(g) = r.try_lock() {
                return g;
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[i].lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Log + state.
pub struct Indexer {
    store: Mutex<Box<dyn LogStore>>,
    folded: RwLock<Folded>,
    cfg: FoldConfig,
    /// Hinted records waiting to be ingested, and the turn to do so: one
    /// caller at a time ingests everything queued, so a flood of hints of
    /// old transactions costs one refold per turn, not one per hint.
    late: Mutex<Vec<TxRecord>>,
    late_turn: Mutex<()>,
    /// One change of the log and the state at a time.
    fold_turn: Mutex<()>,
    refolds: AtomicU64,
    suffix_refolds: AtomicU64,
    /// The log's change number the state includes (a read replica's
    /// catch-up point; `None` where the store keeps no numbers).
    applied_seq: Mutex<Option<u64>>,
    /// The chain's clock, shared by every state installed.
    clock: Arc<crate::clock::ChainClock>,
    /// The state as tables (`None`: folded in memory).
    tables: Option<Tables>,
}

impl Indexer {
    /// The indexer over `store`, nothing folded yet.
    fn with(store: Box<dyn LogStore>, cfg: FoldConfig, tables: Option<Tables>) -> Indexer {
        Indexer {
            store: Mutex::new(store),
            folded: RwLock::new(Folded {
                state: Arc::new(State::new()),
                book: ManifestBook::new(),
                hash: Arc::new(OnceLock::new()),
                snapshots: Snapshots::new(),
            }),
            cfg,
            late: Mutex::new(Vec::new()),
            late_turn: Mutex::new(()),
            fold_turn: Mutex::new(()),
            refolds: AtomicU64::new(0),
            suffix_refolds: AtomicU64::new(0),
            applied_seq: Mutex::new(None),
            clock: Arc::new(crate::clock::ChainClock::default()),
            tables,
        }
    }

    /// Opens over a store, folding its whole log.
    pub fn open(store: Box<dyn LogStore>, cfg: FoldConfig) -> Result<Indexer, StoreError> {
        let ix = Indexer::with(store, cfg, None);
        // read before the fold: every change after it is caught up later
        *ix.applied_seq.lock().unwrap_or_else(|p| p.into_inner()) = ix.store().log_seq()?;
        ix.refold()?;
        Ok(ix)
    }

    /// Opens over a store with the state kept as tables: `writer` (the
    /// one process that folds; `None` on an API server) is brought up to
    /// the log at once (`progress`: records folded, of how many), and
    /// `readers` (at least one) answer [`Indexer::read`]. Nothing is
    /// folded in memory.
    pub fn open_tables(
        store: Box<dyn LogStore>,
        cfg: FoldConfig,
        writer: Option<Box<dyn StateDb>>,
        readers: Vec<Box<dyn StateDb>>,
        progress: crate::statedb::durable::Progress<'_>,
    ) -> Result<Indexer, StoreError> {
        if readers.is_empty() {
            return Err(StoreError::Foreign(
                "the state tables need at least one reader connection".into(),
            ));
        }
        let tables = Tables {
            writer: writer.map(Mutex::new),
            readers: readers.into_iter().map(Mutex::new).collect(),
            next: AtomicUsize::new(0),
            hash: Mutex::new(None),
            answers: Answers::default(),
        };
        let ix = Indexer::with(store, cfg, Some(tables));
        ix.fold_into_tables(progress)?;
        Ok(ix)
    }

    /// Whether the state is kept as tables.
    pub fn keeps_tables(&self) -> bool {
        self.tables.is_some()
    }

    /// Brings the state tables up to the log (the writer only; a no-op
    /// elsewhere). Holds the fold turn.
    fn fold_into_tables(
        &self,
        progress: crate::statedb::durable::Progress<'_>,
    ) -> Result<Applied, StoreError> {
        let Some(writer) = self.tables.as_ref().and_then(|t| t.writer.as_ref()) else {
            return Ok(Applied::default());
        };
        let _turn = self.fold_turn.lock().unwrap_or_else(|p| p.into_inner());
        let mut db = writer.lock().unwrap_or_else(|p| p.into_inner());
        let store = self.store();
        let done = crate::statedb::durable::catch_up(
            &**store,
            &mut **db,
            &self.cfg,
            crate::statedb::durable::PAGE,
            progress,
        )?;
        if done.rebuilt {
            self.refolds.fetch_add(1, Ordering::Relaxed);
        } else if done.rewound {
            self.suffix_refolds.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Applied {
            refolded: done.rewound || done.rebuilt,
            refolded_records: done.folded,
            ..Applied::default()
        })
    }

    /// The part of the market `scope` names, consistent with one head:
    /// the whole state where it is folded in memory, else read from the
    /// tables for this answer alone, or, for a page or a listing, the
    /// state read at the tables' current version for every request that
    /// asks for it ([`answers`]).
    pub fn read(&self, scope: &Scope) -> Result<Arc<State>, StoreError> {
        Ok(self.answer(scope, Staleness::Never)?.state.clone())
    }

    /// [`Indexer::read`], with what anonymous readers were answered from
    /// the same state at the same version ([`Answer::public`]; nothing
    /// kept where the state is folded in memory or not kept). Given
    /// [`Staleness::WhileRead`], a page or listing another request is
    /// reading at a newer version is answered from the state kept for
    /// the commit before (it names its own position).
    pub fn answer(&self, scope: &Scope, staleness: Staleness) -> Result<Arc<Answer>, StoreError> {
        let Some(tables) = &self.tables else {
            return Ok(Arc::new(Answer::new(self.state())));
        };
        let mut db = tables.reader();
        let read = |db: &mut dyn StateDb| -> Result<Answer, StoreError> {
            let mut s = crate::statedb::read::scope(db, scope)?;
            s.clock = self.clock.clone();
            Ok(Answer::new(Arc::new(s)))
        };
        match (answers::key(scope), db.version()?) {
            (Some(key), Some(version)) => {
                tables
                    .answers
                    .get_or_read(version, key, staleness, || read(&mut **db))
            }
            _ => read(&mut **db).map(Arc::new),
        }
    }

    /// Which of `signatures` are not folded yet.
    pub fn unfolded(&self, signatures: &[String]) -> Result<Vec<String>, StoreError> {
        let s = self.read(&Scope::Transactions(signatures.to_vec()))?;
        Ok(signatures
            .iter()
            .filter(|sig| !s.has_folded(sig))
            .cloned()
            .collect())
    }

    /// The head and the state hash, computed once per head (streamed
    /// from the tables, where the state is kept there).
    pub fn head_hash(&self) -> Result<(Arc<State>, String), StoreError> {
        let Some(tables) = &self.tables else {
            return Ok(self.state_hash());
        };
        let mut db = tables.reader();
        db.begin_read()?;
        let hashed = (|| -> Result<_, StoreError> {
            let head = db.head()?;
            let mut cached = tables.hash.lock().unwrap_or_else(|p| p.into_inner());
            let hash = match &*cached {
                Some((last, n, h)) if *last == head.last && *n == head.transactions => h.clone(),
                _ => {
                    let h = crate::statedb::state_hash(&mut **db)?;
                    *cached = Some((head.last, head.transactions, h.clone()));
                    h
                }
            };
            Ok((head, hash))
        })();
        db.end_read()?;
        let (head, hash) = hashed?;
        let mut s = State::new();
        s.now = head.now;
        s.last = head.last;
        s.transactions = head.transactions;
        Ok((Arc::new(s), hash))
    }

    /// The fold's rules.
    pub fn config(&self) -> &FoldConfig {
        &self.cfg
    }

    /// The current state (a cheap snapshot; never blocks ingest for long).
    pub fn state(&self) -> Arc<State> {
        self.folded.read().expect("state lock").state.clone()
    }

    /// The state and its hash (computed once per fold, then cached, so
    /// asking repeatedly costs nothing until the state changes).
    pub fn state_hash(&self) -> (Arc<State>, String) {
        let (state, hash) = {
            let f = self.folded.read().expect("state lock");
            (f.state.clone(), f.hash.clone())
        };
        let h = hash.get_or_init(|| state.hash()).clone();
        (state, h)
    }

    /// Whole-log refolds since open (the opening fold included).
    pub fn refolds(&self) -> u64 {
        self.refolds.load(Ordering::Relaxed)
    }

    /// Refolds of a suffix of the log (from a snapshot) since open.
    pub fn suffix_refolds(&self) -> u64 {
        self.suffix_refolds.load(Ordering::Relaxed)
    }

    /// Records the chain's time (the block time of its newest slot, read
    /// now): views judge expiry by it ([`State::view_now`]).
    pub fn observe_chain_time(&self, block_time: i64) {
        self.clock.observe(block_time);
    }

    /// The store, for checkpoints, manifests and auth.
    pub fn store(&self) -> MutexGuard<'_, Box<dyn LogStore>> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rebuilds the state from the whole log. Manifests already checked
    /// are not checked again: the book caches verdicts by Arweave id, and
    /// an id names one body (the hash of its signature).
    pub fn refold(&self) -> Result<(), StoreError> {
        let _turn = self.fold_turn.lock().unwrap_or_else(|p| p.into_inner());
        self.refold_from(None).map(|_| ())
    }

    /// Refolds the log after the newest snapshot that folded nothing at or
    /// after `from` (`None`: the whole log) and installs the result; how
    /// many records it folded. Holds the fold turn.
    fn refold_from(&self, from: Option<Position>) -> Result<usize, StoreError> {
        let (base, mut book, mut snapshots) = {
            let f = self.folded.read().expect("state lock");
            let mut snapshots = f.snapshots.clone();
            let base = match from {
                Some(p) => {
                    snapshots.forget_from(p);
                    snapshots.before(p).cloned()
                }
                None => {
                    snapshots.clear();
                    None
                }
            };
            (base, f.book.clone(), snapshots)
        };
        let mut after = base.as_ref().and_then(|s| s.last);
        match base {
            Some(_) => self.suffix_refolds.fetch_add(1, Ordering::Relaxed),
            None => self.refolds.fetch_add(1, Ordering::Relaxed),
        };
        // snapshots only near the end: one taken far from the head would
        // be dropped by the thinning anyway, after costing copies
        let total = self.store().count_after(after)?;
        let near_end = total.saturating_sub(crate::snapshots::MAX_DISTANCE as usize);
        let mut state = base.unwrap_or_default();
        // a page at a time: what a refold holds besides the state is one
        // page, however long the log
        let mut folded = 0usize;
        loop {
            let page = self.store().records_page(after, REFOLD_PAGE)?;
            book.add_records(&page);
            for r in &page {
                state.apply_one(r, &book, &self.cfg);
                if folded >= near_end {
                    snapshots.observe(&state);
                }
                folded += 1;
            }
            match page.last() {
                Some(last) if page.len() == REFOLD_PAGE => after = Some(last.position()),
                _ => break,
            }
        }
        state.clock = self.clock.clone();
        *self.folded.write().expect("state lock") = Folded {
            state: Arc::new(state),
            book,
            hash: Arc::new(OnceLock::new()),
            snapshots,
        };
        Ok(folded)
    }

    /// Stores and folds a record a client hinted, which may be older than
    /// what is folded. Queued behind the current turn; whoever takes the
    /// turn ingests every queued record in one batch (one refold at most).
    /// `None` when the queue is full (the caller says "busy, retry").
    pub fn ingest_hinted(
        &self,
        record: TxRecord,
        final_slot: u64,
    ) -> Result<Option<Applied>, StoreError> {
        let signature = record.signature().to_string();
        {
            let mut queue = self.late.lock().unwrap_or_else(|p| p.into_inner());
            if queue.len() >= MAX_LATE_QUEUE {
                return Ok(None);
            }
            queue.push(record.clone());
        }
        let _turn = self.late_turn.lock().unwrap_or_else(|p| p.into_inner());
        if self.unfolded(std::slice::from_ref(&signature))?.is_empty() {
            return Ok(Some(Applied::default()));
        }
        let mut batch = std::mem::take(&mut *self.late.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() {
            // an earlier turn took it and failed: ours to retry
            batch.push(record);
        }
        let mut queued = std::collections::HashSet::new();
        batch.retain(|r| queued.insert(r.signature().to_string()));
        self.ingest(batch, final_slot, &[]).map(Some)
    }

    /// Stores `records` (final at or below `final_slot`), removes
    /// `vanished` provisional ones, and brings the state up to date.
    pub fn ingest(
        &self,
        mut records: Vec<TxRecord>,
        final_slot: u64,
        vanished: &[String],
    ) -> Result<Applied, StoreError> {
        sort_chain_order(&mut records);
        let _turn = self.fold_turn.lock().unwrap_or_else(|p| p.into_inner());
        let removed = {
            let mut store = self.store();
            store.put_records(&records, final_slot)?;
            store.finalize_through(final_slot)?;
            store.remove(vanished)?
        };
        if self.tables.is_some() {
            drop(_turn);
            let mut applied = self.fold_into_tables(&mut |_, _| {})?;
            applied.stored = records.len();
            applied.removed = removed;
            return Ok(applied);
        }
        let removed_sigs: &[String] = if removed > 0 { vanished } else { &[] };
        let mut applied = self.fold_changes(records, removed_sigs)?;
        applied.removed = removed;
        Ok(applied)
    }

    /// Brings a read replica's state up to date with the shared log
    /// (which it never writes): the changes after the last change number
    /// applied, folded as the writer folds them (suffix refolds
    /// included), or a whole refold where the store keeps no numbers.
    pub fn catch_up(&self) -> Result<Applied, StoreError> {
        if self.tables.is_some() {
            // the tables are the state: nothing to fold here
            return Ok(Applied::default());
        }
        let _turn = self.fold_turn.lock().unwrap_or_else(|p| p.into_inner());
        let since = *self.applied_seq.lock().unwrap_or_else(|p| p.into_inner());
        let changes = match since {
            Some(seq) => self.store().changes_since(seq)?,
            None => None,
        };
        let Some(changes) = changes else {
            // read before the fold: every change after it is caught up next
            let seq = self.store().log_seq()?;
            let n = self.refold_from(None)?;
            *self.applied_seq.lock().unwrap_or_else(|p| p.into_inner()) = seq;
            return Ok(Applied {
                refolded: true,
                refolded_records: n,
                ..Applied::default()
            });
        };
        let mut records = changes.records;
        sort_chain_order(&mut records);
        let mut applied = self.fold_changes(records, &changes.removed)?;
        applied.removed = changes.removed.len();
        *self.applied_seq.lock().unwrap_or_else(|p| p.into_inner()) = Some(changes.seq);
        Ok(applied)
    }

    /// Folds `records` (stored, in chain order) and the removal of
    /// `removed`: in place when every new one comes after the head and
    /// none moved or went, else a refold from the earliest change.
    /// Holds the fold turn.
    fn fold_changes(
        &self,
        records: Vec<TxRecord>,
        removed: &[String],
    ) -> Result<Applied, StoreError> {
        let mut applied = Applied {
            stored: records.len(),
            ..Applied::default()
        };
        let earliest = {
            let f = self.folded.read().expect("state lock");
            let s = &f.state;
            crate::record::earliest_change(s.last, |sig| s.folded_at(sig), &records, removed)
        };
        if let Some(from) = earliest {
            applied.refolded_records = self.refold_from(Some(from))?;
            applied.refolded = true;
            return Ok(applied);
        }
        let mut guard = self.folded.write().expect("state lock");
        guard.changed();
        let Folded {
            state,
            book,
            snapshots,
            ..
        } = &mut *guard;
        book.add_records(&records);
        let state = Arc::make_mut(state);
        for r in &records {
            if !state.has_folded(r.signature()) {
                state.apply_one(r, book, &self.cfg);
                snapshots.observe(state);
            }
        }
        Ok(applied)
    }
}
