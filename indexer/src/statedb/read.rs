//! One answer's part of the market, read from the state tables: a
//! [`State`] holding exactly what the views ([`crate::views`]) read for a
//! [`Scope`] (a listing with its offers, buys and escrow deposits; a
//! seller's listings with their buys; a page of listings), every query in
//! one read snapshot of the tables, so the answer is consistent with one
//! head (its `last` says which). The views run unchanged over it, so an
//! API server that folds nothing answers what the writer's whole state
//! would.
//!
//! Owns "which rows an answer needs"; never writes.

use super::around::{Anchor, Around};
use super::sieve::Sieve;
use super::StateDb;
use crate::fold::{ListingState, State};
use crate::store::StoreError;
use crate::views::ListingFilter;
use std::collections::BTreeSet;
use std::sync::Arc;

/// What an answer is about.
#[derive(Debug, Clone)]
pub enum Scope {
    /// A listing: its offers, buys and escrow deposits.
    Listing(String),
    /// An offer, and its listing's scope.
    Offer(String),
    /// A buy, and its listing's scope.
    Settlement(String),
    /// A seller: every listing of theirs, with its buys.
    Seller(String),
    /// An escrow deposit, and the listing it went into.
    Escrow(String),
    /// One page of listings (with their buys) as the filter picks them.
    Page(ListingFilter),
    /// Transactions: whether each was folded, and its refused memos.
    Transactions(Vec<String>),
    /// The head and the counts alone.
    Head,
}

/// Most listings read per query while a page is filled (the first query
/// reads one page's worth, each next one twice the last).
const PAGE_SCAN: usize = 1_000;

/// The state for `scope`, read in one snapshot.
pub fn scope(db: &mut dyn StateDb, scope: &Scope) -> Result<State, StoreError> {
    let anchor = match scope {
        Scope::Listing(id) => Anchor::Listings {
            ids: BTreeSet::from([id.clone()]),
            bodies: true,
        },
        Scope::Offer(id) => Anchor::Offer(id.clone()),
        Scope::Settlement(sig) => Anchor::Settlement(sig.clone()),
        Scope::Seller(pk) => Anchor::Seller(pk.clone()),
        Scope::Escrow(account) => Anchor::Escrow(account.clone()),
        Scope::Head => Anchor::nothing(),
        // several statements: one read transaction holds them together
        Scope::Page(f) => return in_read(db, |db| page(db, f)),
        Scope::Transactions(sigs) => return in_read(db, |db| transactions(db, sigs)),
    };
    let mut s = State::new();
    put_around(&mut s, db.around(&anchor)?);
    Ok(s)
}

/// `f` inside a read transaction.
fn in_read(
    db: &mut dyn StateDb,
    f: impl FnOnce(&mut dyn StateDb) -> Result<State, StoreError>,
) -> Result<State, StoreError> {
    db.begin_read()?;
    let s = f(db);
    db.end_read()?;
    s
}

/// A page of listings as `f` picks them, with what hangs on them: the
/// database sieves ([`Sieve`]), the filter decides.
fn page(db: &mut dyn StateDb, f: &ListingFilter) -> Result<State, StoreError> {
    let mut s = State::new();
    s.now = db.head()?.now;
    let now = s.view_now();
    let mut picked: Vec<ListingState> = Vec::new();
    let mut after = f.after.clone();
    let mut scan = (f.limit + 1).min(PAGE_SCAN);
    'scan: loop {
        let rows = db.listings_after(&Sieve::of(f, after.as_deref(), now), scan)?;
        let full = rows.len() == scan;
        let last = rows.last().map(|l| l.listing_id.clone());
        for l in rows {
            if f.matches(&l, now) {
                picked.push(l);
                // one past the page: the view sets the next cursor
                if picked.len() > f.limit {
                    break 'scan;
                }
            }
        }
        match last {
            Some(id) if full => after = Some(id),
            _ => break,
        }
        scan = (scan * 2).min(PAGE_SCAN);
    }
    let ids = picked.iter().map(|l| l.listing_id.clone()).collect();
    let mut around = db.around(&Anchor::Listings { ids, bodies: false })?;
    around.listings = picked;
    put_around(&mut s, around);
    Ok(s)
}

/// Whether each of `sigs` was folded, and its refused memos.
fn transactions(db: &mut dyn StateDb, sigs: &[String]) -> Result<State, StoreError> {
    let mut s = State::new();
    put_around(&mut s, db.around(&Anchor::nothing())?);
    let sigs: BTreeSet<String> = sigs.iter().cloned().collect();
    for (sig, at) in db.seen(&sigs)? {
        s.put_seen(sig, at);
    }
    for (sig, r) in db.rejected(&sigs)? {
        s.rejected.insert(sig, r);
    }
    Ok(s)
}

/// Puts what an [`Around`] read into `s`.
fn put_around(s: &mut State, a: Around) {
    s.now = a.head.now;
    s.last = a.head.last;
    s.transactions = a.head.transactions;
    s.totals = Some(a.totals);
    for l in a.listings {
        s.put_listing(Arc::new(l));
    }
    for o in a.offers {
        s.put_offer(Arc::new(o));
    }
    for (sig, b) in a.settlements {
        s.put_settlement(sig, Arc::new(b));
    }
    for (account, e) in a.escrows {
        s.escrows.insert(account, e);
    }
}
