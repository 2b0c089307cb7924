//! What the hot answers read, kept for the commit they were read at: the
//! state of a listings page or of one listing ([`Scope::Page`],
//! [`Scope::Listing`]), keyed by the scope and valid while the tables'
//! version ([`super::StateDb::version`]) stays the one it was read at.
//! A request that sees a newer version empties the cache first, so an
//! answer never outlives its commit; each kept state is one snapshot's,
//! so an answer served from here is consistent with the one log position
//! it names. The states are viewer-free: the views decide per reader
//! what each reader may see. What a route answered an anonymous reader
//! from a kept state is kept beside it ([`Answer::public`]), so a hot
//! page is rendered once per commit and view time, not per request.
//!
//! Bounded: at most [`MAX_ANSWERS`] states, for one version, each with at
//! most [`MAX_RENDERS`] renderings.
//!
//! Owns the kept states and renderings; never reads the database, never
//! renders (the caller's closure does).

use super::read::Scope;
use crate::fold::State;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most states kept (for one version).
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

/// States read at one version of the tables.
#[derive(Default)]
pub struct Answers {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    version: Option<i64>,
    states: HashMap<String, Arc<Answer>>,
}

impl Kept {
    /// Forgets every state of another version than `version`.
    fn at(&mut self, version: i64) -> &mut HashMap<String, Arc<Answer>> {
        if self.version != Some(version) {
            self.version = Some(version);
            self.states.clear();
        }
        &mut self.states
    }
}

/// The cache key of `scope`, if its answers are kept.
pub fn key(scope: &Scope) -> Option<String> {
    match scope {
        Scope::Page(_) | Scope::Listing(_) => Some(format!("{scope:?}")),
        _ => None,
    }
}

impl Answers {
    /// The answer kept for `key` at `version`.
    pub fn get(&self, version: i64, key: &str) -> Option<Arc<Answer>> {
        self.lock().at(version).get(key).cloned()
    }

    /// Keeps `answer`, read at `version` or later, for `key` (nothing
    /// when full: the next version starts empty).
    pub fn put(&self, version: i64, key: String, answer: Arc<Answer>) {
        let mut kept = self.lock();
        let states = kept.at(version);
        if states.len() < MAX_ANSWERS {
            states.insert(key, answer);
        }
    }

    /// How many states are kept.
    pub fn len(&self) -> usize {
        self.lock().states.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::ListingFilter;

    #[test]
    fn a_kept_state_is_served_at_its_version_only_and_the_cache_stays_bounded() {
        let answers = Answers::default();
        let page = key(&Scope::Page(ListingFilter::default())).unwrap();
        let one = key(&Scope::Listing("L1".into())).unwrap();
        assert_ne!(page, one);
        assert_eq!(key(&Scope::Head), None);
        assert_eq!(key(&Scope::Seller("S".into())), None);
        let s = Arc::new(Answer::new(Arc::new(State::new())));
        answers.put(7, page.clone(), s.clone());
        assert!(Arc::ptr_eq(&answers.get(7, &page).unwrap(), &s));
        assert!(answers.get(7, &one).is_none());
        // a newer version empties it
        assert!(answers.get(8, &page).is_none());
        assert!(answers.is_empty());
        // and an older one (a reader behind) does not see the newer's states
        answers.put(8, page.clone(), s.clone());
        assert!(answers.get(7, &page).is_none());
        for i in 0..MAX_ANSWERS + 10 {
            answers.put(9, format!("k{i}"), s.clone());
        }
        assert_eq!(answers.len(), MAX_ANSWERS);
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
