//! The indexer's core: the durable log ([`LogStore`]) and the state folded
//! from it, kept in step. New records are appended and folded
//! incrementally when they come after everything folded so far; anything
//! else (a late record, a fork moving one, a vanished provisional one)
//! refolds from the log, so the state is always exactly the fold of the
//! stored log.
//!
//! Owns that invariant only: it never talks to the network.

use crate::book::ManifestBook;
use crate::fold::{FoldConfig, State};
use crate::record::{sort_chain_order, TxRecord};
use crate::store::{LogStore, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

/// What one ingest changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// Records stored (new or updated).
    pub stored: usize,
    /// Provisional records removed.
    pub removed: usize,
    /// Whether the state was refolded from the whole log.
    pub refolded: bool,
}

struct Folded {
    state: Arc<State>,
    book: ManifestBook,
    /// The state's hash, computed at most once per fold (on first ask).
    hash: Arc<OnceLock<String>>,
}

impl Folded {
    fn changed(&mut self) {
        self.hash = Arc::new(OnceLock::new());
    }
}

/// Most hinted records waiting for their turn to be stored and folded.
pub const MAX_LATE_QUEUE: usize = 1024;

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
    refolds: AtomicU64,
    /// The chain's clock, shared by every state installed.
    clock: Arc<crate::clock::ChainClock>,
}

impl Indexer {
    /// Opens over a store, folding its whole log.
    pub fn open(store: Box<dyn LogStore>, cfg: FoldConfig) -> Result<Indexer, StoreError> {
        let ix = Indexer {
            store: Mutex::new(store),
            folded: RwLock::new(Folded {
                state: Arc::new(State::new()),
                book: ManifestBook::new(),
                hash: Arc::new(OnceLock::new()),
            }),
            cfg,
            late: Mutex::new(Vec::new()),
            late_turn: Mutex::new(()),
            refolds: AtomicU64::new(0),
            clock: Arc::new(crate::clock::ChainClock::default()),
        };
        ix.refold()?;
        Ok(ix)
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
        self.refolds.fetch_add(1, Ordering::Relaxed);
        let records = self.store().records()?;
        let mut book = self.folded.read().expect("state lock").book.clone();
        book.add_records(&records);
        let mut state = State::fold(&records, &book, &self.cfg);
        state.clock = self.clock.clone();
        *self.folded.write().expect("state lock") = Folded {
            state: Arc::new(state),
            book,
            hash: Arc::new(OnceLock::new()),
        };
        Ok(())
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
        if self.state().has_folded(&signature) {
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
        let (moved, removed) = {
            let mut store = self.store();
            let moved = store.put_records(&records, final_slot)?;
            store.finalize_through(final_slot)?;
            (moved, store.remove(vanished)?)
        };
        let mut applied = Applied {
            stored: records.len(),
            removed,
            refolded: false,
        };
        if moved > 0 || removed > 0 {
            self.refold()?;
            applied.refolded = true;
            return Ok(applied);
        }
        let mut guard = self.folded.write().expect("state lock");
        guard.changed();
        let Folded { state, book, .. } = &mut *guard;
        book.add_records(&records);
        let fresh: Vec<TxRecord> = records
            .into_iter()
            .filter(|r| !state.has_folded(r.signature()))
            .collect();
        // In place: `apply_batch` checks the order before changing
        // anything, and `make_mut` copies only while a reader holds the
        // previous snapshot.
        match Arc::make_mut(state).apply_batch(&fresh, book, &self.cfg) {
            Ok(()) => {}
            Err(_) => {
                drop(guard);
                self.refold()?;
                applied.refolded = true;
            }
        }
        Ok(applied)
    }
}
