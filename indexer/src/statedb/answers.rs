//! What the hot answers read, kept for the commit they were read at: the
//! state of a listings page or of one listing ([`Scope::Page`],
//! [`Scope::Listing`]), keyed by the scope and valid while the tables'
//! version ([`super::StateDb::version`]) stays the one it was read at.
//! A request that sees a newer version empties the cache first, so an
//! answer never outlives its commit; each kept state is one snapshot's,
//! so an answer served from here is consistent with the one log position
//! it names. The states are viewer-free: the views decide per reader
//! what each reader may see.
//!
//! Bounded: at most [`MAX_ANSWERS`] states, for one version.
//!
//! Owns the kept states; never reads the database.

use super::read::Scope;
use crate::fold::State;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most states kept (for one version).
pub const MAX_ANSWERS: usize = 128;

/// States read at one version of the tables.
#[derive(Default)]
pub struct Answers {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    version: Option<i64>,
    states: HashMap<String, Arc<State>>,
}

impl Kept {
    /// Forgets every state of another version than `version`.
    fn at(&mut self, version: i64) -> &mut HashMap<String, Arc<State>> {
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
    /// The state kept for `key` at `version`.
    pub fn get(&self, version: i64, key: &str) -> Option<Arc<State>> {
        self.lock().at(version).get(key).cloned()
    }

    /// Keeps `state`, read at `version` or later, for `key` (nothing when
    /// full: the next version starts empty).
    pub fn put(&self, version: i64, key: String, state: Arc<State>) {
        let mut kept = self.lock();
        let states = kept.at(version);
        if states.len() < MAX_ANSWERS {
            states.insert(key, state);
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
        let s = Arc::new(State::new());
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
}
