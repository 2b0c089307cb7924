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
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

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
}

/// Log + state.
pub struct Indexer {
    store: Mutex<Box<dyn LogStore>>,
    folded: RwLock<Folded>,
    cfg: FoldConfig,
}

impl Indexer {
    /// Opens over a store, folding its whole log.
    pub fn open(store: Box<dyn LogStore>, cfg: FoldConfig) -> Result<Indexer, StoreError> {
        let ix = Indexer {
            store: Mutex::new(store),
            folded: RwLock::new(Folded {
                state: Arc::new(State::new()),
                book: ManifestBook::new(),
            }),
            cfg,
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

    /// The store, for checkpoints, manifests and auth.
    pub fn store(&self) -> MutexGuard<'_, Box<dyn LogStore>> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rebuilds the state from the whole log.
    pub fn refold(&self) -> Result<(), StoreError> {
        let records = self.store().records()?;
        let mut book = ManifestBook::new();
        book.add_records(&records);
        let state = State::fold(&records, &book, &self.cfg);
        *self.folded.write().expect("state lock") = Folded {
            state: Arc::new(state),
            book,
        };
        Ok(())
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
        let Folded { state, book } = &mut *guard;
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
