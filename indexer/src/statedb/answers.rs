//! What the hot answers read, kept: the state of a listings page or of
//! one listing ([`Scope::Page`], [`Scope::Listing`]), keyed by the scope,
//! with the tables' version ([`super::StateDb::version`]) it was read at.
//! A request at a newer version reads the state again; however many ask
//! at once, one reads and the others wait for it ([`Answers::get_or_read`]),
//! so a commit costs one read per hot key, not one per request. Routes
//! that allow it ([`Staleness::WhileRead`]: the anonymous `GET`s) are
//! answered meanwhile from the state of the commit before, as a lagging
//! standby would answer: each kept state is one snapshot's, so an answer
//! is consistent with the one log position it names. The states are
//! viewer-free: the views decide per reader what each reader may see.
//! What a route answered an anonymous reader from a kept state is kept
//! beside it ([`Answer::public`]), so a hot page is rendered once per
//! commit and view time, not per request.
//!
//! Bounded: at most [`MAX_ANSWERS`] states, each with at most
//! [`MAX_RENDERS`] renderings.
//!
//! Owns the kept states and renderings; never reads the database, never
//! renders (the caller's closures do).

use super::read::Scope;
use crate::fold::State;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most states kept.
pub const MAX_ANSWERS: usize = 128;
/// Most renderings kept per state (one per route reading its scope).
pub const MAX_RENDERS: usize = 4;

/// A state one read returned, and what anonymous readers were answered
/// from it.
pub struct Answer {
    /// The state read.
    pub state: Arc<State>,
    public: Mutex<Vec<Rendered>>,
}

/// One route's answer to anonymous readers at one view time.
struct Rendered {
    route: &'static str,
    /// [`State::view_now`] when rendered: the views' statuses depend on it.
    now: i64,
    body: Bytes,
}

impl Answer {
    /// `state`, nothing rendered yet.
    pub fn new(state: Arc<State>) -> Answer {
        Answer {
            state,
            public: Mutex::new(Vec::new()),
        }
    }

    /// What `route` answers an anonymous reader from this state: rendered
    /// by `render` the first time, and again once the views' clock
    /// ([`State::view_now`]) has moved on. Two first requests at once may
    /// both render; they render the same bytes.
    pub fn public<E>(
        &self,
        route: &'static str,
        render: impl FnOnce(&State) -> Result<Vec<u8>, E>,
    ) -> Result<Bytes, E> {
        let now = self.state.view_now();
        if let Some(r) = self
            .lock()
            .iter()
            .find(|r| r.route == route && r.now == now)
        {
            return Ok(r.body.clone());
        }
        let body = Bytes::from(render(&self.state)?);
        let mut public = self.lock();
        public.retain(|r| r.route != route);
        if public.len() < MAX_RENDERS {
            public.push(Rendered {
                route,
                now,
                body: body.clone(),
            });
        }
        Ok(body)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Rendered>> {
        self.public.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The cache key of `scope`, if its answers are kept.
pub fn key(scope: &Scope) -> Option<String> {
    match scope {
        Scope::Page(_) | Scope::Listing(_) => Some(format!("{scope:?}")),
        _ => None,
    }
}

/// Whether an answer may come from an older commit while another
/// request reads the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staleness {
    /// Only the tables' current version: read-your-writes (a hint's
    /// verdict, `/settle`); waits for a read already under way.
    Never,
    /// The kept state of an older commit while another request reads
    /// the current one (the anonymous `GET` routes: the answer names its
    /// position, as a standby's does).
    WhileRead,
}

/// The kept states, one per key: each read at one version of the tables.
#[derive(Default)]
pub struct Answers {
    kept: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One key's kept state, and the turn to read it again.
#[derive(Default)]
struct Slot {
    /// Held by the one request reading this key's state.
    turn: Mutex<()>,
    state: Mutex<Option<(i64, Arc<Answer>)>>,
}

impl Slot {
    /// The kept answer if it was read at `version` (any version: `None`).
    fn at(&self, version: Option<i64>) -> Option<Arc<Answer>> {
        let kept = self.state.lock().unwrap_or_else(|p| p.into_inner());
        kept.as_ref()
            .filter(|(v, _)| version.is_none_or(|want| *v == want))
            .map(|(_, a)| a.clone())
    }

    fn keep(&self, version: i64, answer: Arc<Answer>) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = Some((version, answer));
    }

    /// Whether its state is of another version than `version`.
    fn older(&self, version: i64) -> bool {
        self.at(Some(version)).is_none()
    }
}

impl Answers {
    /// The answer for `key` at `version`: kept, or read by `read` and
    /// kept. However many ask at once, one reads; the others wait for
    /// it, or, given [`Staleness::WhileRead`] and a state kept from an
    /// older commit, are answered from that one meanwhile. With no room
    /// left (every kept state current), `read` answers unkept.
    pub fn get_or_read<E>(
        &self,
        version: i64,
        key: String,
        staleness: Staleness,
        read: impl FnOnce() -> Result<Answer, E>,
    ) -> Result<Arc<Answer>, E> {
        let Some(slot) = self.slot(version, key) else {
            return read().map(Arc::new);
        };
        if let Some(a) = slot.at(Some(version)) {
            return Ok(a);
        }
        let turn = match slot.turn.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if staleness == Staleness::WhileRead {
                    if let Some(a) = slot.at(None) {
                        return Ok(a);
                    }
                }
                let g = slot.turn.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(a) = slot.at(Some(version)) {
                    return Ok(a);
                }
                g
            }
        };
        let a = Arc::new(read()?);
        slot.keep(version, a.clone());
        drop(turn);
        Ok(a)
    }

    /// The slot of `key`, made if there is room (a full cache gives up
    /// one whose state is older than `version`).
    fn slot(&self, version: i64, key: String) -> Option<Arc<Slot>> {
        let mut kept = self.lock();
        if let Some(s) = kept.get(&key) {
            return Some(s.clone());
        }
        if kept.len() >= MAX_ANSWERS {
            let old = kept
                .iter()
                .find(|(_, s)| s.older(version))
                .map(|(k, _)| k.clone())?;
            kept.remove(&old);
        }
        let s = Arc::new(Slot::default());
        kept.insert(key, s.clone());
        Some(s)
    }

    /// How many keys have a kept state.
    pub fn len(&self) -> usize {
        self.lock()
            .values()
            .filter(|s| s.at(None).is_some())
            .count()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::ListingFilter;

    /// An answer of an empty state, and a read counting itself.
    fn reading(reads: &std::sync::atomic::AtomicUsize) -> Result<Answer, ()> {
        reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Answer::new(Arc::new(State::new())))
    }

    #[test]
    fn a_kept_state_is_served_at_its_version_only_and_the_cache_stays_bounded() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let answers = Answers::default();
        let page = key(&Scope::Page(ListingFilter::default())).unwrap();
        let one = key(&Scope::Listing("L1".into())).unwrap();
        assert_ne!(page, one);
        assert_eq!(key(&Scope::Head), None);
        assert_eq!(key(&Scope::Seller("S".into())), None);
        let reads = AtomicUsize::new(0);
        let get = |v: i64, k: &str| {
            answers
                .get_or_read(v, k.to_string(), Staleness::WhileRead, || reading(&reads))
                .unwrap()
        };
        let first = get(7, &page);
        assert!(Arc::ptr_eq(&first, &get(7, &page)), "kept");
        assert_eq!(reads.load(SeqCst), 1);
        // another key reads its own
        assert!(!Arc::ptr_eq(&first, &get(7, &one)));
        assert_eq!(reads.load(SeqCst), 2);
        // a newer version reads again, uncontended: never the older state
        let newer = get(8, &page);
        assert!(!Arc::ptr_eq(&first, &newer));
        // and an older one (a reader behind) does not see the newer's
        assert!(!Arc::ptr_eq(&newer, &get(7, &page)));
        assert_eq!(reads.load(SeqCst), 4);
        for i in 0..MAX_ANSWERS + 10 {
            get(9, &format!("k{i}"));
        }
        // full of current states: more are read, not kept
        assert_eq!(answers.len(), MAX_ANSWERS);
        let before = reads.load(SeqCst);
        get(9, "one more");
        get(9, "one more");
        assert_eq!(reads.load(SeqCst), before + 2);
        // a newer version takes the room of older states
        get(10, "newest");
        get(10, "newest");
        assert_eq!(reads.load(SeqCst), before + 3);
        assert_eq!(answers.len(), MAX_ANSWERS);
    }

    #[test]
    fn while_one_request_reads_a_key_the_others_wait_or_get_the_commit_before() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        use std::sync::mpsc::channel;
        let answers = Arc::new(Answers::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let old = answers
            .get_or_read(1, "k".into(), Staleness::Never, || reading(&reads))
            .unwrap();
        // a reader at version 2 holds the turn until told to finish
        let (started, is_started) = channel();
        let (finish, finishing) = channel::<()>();
        let slow = {
            let (answers, reads) = (answers.clone(), reads.clone());
            std::thread::spawn(move || {
                answers
                    .get_or_read(2, "k".into(), Staleness::Never, || {
                        started.send(()).unwrap();
                        finishing.recv().unwrap();
                        reading(&reads)
                    })
                    .unwrap()
            })
        };
        is_started.recv().unwrap();
        // an anonymous GET meanwhile: the state of the commit before, at once
        let stale = answers
            .get_or_read(2, "k".into(), Staleness::WhileRead, || reading(&reads))
            .unwrap();
        assert!(Arc::ptr_eq(&stale, &old));
        // a read-your-writes caller waits for the read under way
        let waiter = {
            let (answers, reads) = (answers.clone(), reads.clone());
            std::thread::spawn(move || {
                answers
                    .get_or_read(2, "k".into(), Staleness::Never, || reading(&reads))
                    .unwrap()
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "it waits for the read under way");
        finish.send(()).unwrap();
        let fresh = slow.join().unwrap();
        let waited = waiter.join().unwrap();
        assert!(Arc::ptr_eq(&fresh, &waited), "one read for both");
        assert!(!Arc::ptr_eq(&fresh, &old));
        assert_eq!(reads.load(SeqCst), 2);
        // once read, every caller gets the current one
        let now = answers
            .get_or_read(2, "k".into(), Staleness::WhileRead, || reading(&reads))
            .unwrap();
        assert!(Arc::ptr_eq(&now, &fresh));
    }

    #[test]
    fn a_rendering_is_kept_per_route_and_view_time() {
        let clock = Arc::new(crate::clock::ChainClock::default());
        let mut state = State::new();
        state.now = 100;
        state.clock = clock.clone();
        let a = Answer::new(Arc::new(state));
        let renders = std::cell::Cell::new(0);
        let render = |s: &State| -> Result<Vec<u8>, ()> {
            renders.set(renders.get() + 1);
            Ok(format!("{}:{}", renders.get(), s.view_now()).into_bytes())
        };
        let first = a.public("browse", render).unwrap();
        assert_eq!(&first[..], b"1:100");
        // kept for the same route at the same view time
        assert_eq!(a.public("browse", render).unwrap(), first);
        assert_eq!(renders.get(), 1);
        // another route renders its own
        assert_eq!(&a.public("listing", render).unwrap()[..], b"2:100");
        // a failed rendering keeps nothing
        assert_eq!(a.public("offers", |_| Err::<Vec<u8>, _>(7)), Err(7));
        // the views' clock moves on (read from the chain): rendered again
        clock.observe(10_000);
        let later = a.public("browse", render).unwrap();
        assert!(later.starts_with(b"3:"), "{later:?}");
        assert_ne!(later, first);
        for route in ["a", "b", "c", "d", "e"] {
            a.public(route, render).unwrap();
        }
        assert!(a.lock().len() <= MAX_RENDERS);
    }
}
