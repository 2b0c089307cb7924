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

use super::StateDb;
use crate::fold::{State, Totals};
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
    db.begin_read()?;
    let s = read(db, scope);
    db.end_read()?;
    s
}

fn read(db: &mut dyn StateDb, scope: &Scope) -> Result<State, StoreError> {
    let head = db.head()?;
    let mut s = State::new();
    s.now = head.now;
    s.last = head.last;
    s.transactions = head.transactions;
    s.totals = Some(db.totals()?);
    let mut listings: BTreeSet<String> = BTreeSet::new();
    // listings already read whole (a page's), not read again
    let mut read_whole: Vec<crate::fold::ListingState> = Vec::new();
    match scope {
        Scope::Listing(id) => {
            listings.insert(id.clone());
        }
        // an offer and a buy always name a folded listing: its scope
        // holds them, in chain order
        Scope::Offer(id) => {
            listings.extend(db.offers(&one(id))?.into_iter().map(|o| o.listing_id));
        }
        Scope::Settlement(sig) => {
            listings.extend(
                db.settlements(&one(sig))?
                    .into_iter()
                    .map(|(_, b)| b.listing_id),
            );
        }
        Scope::Seller(pk) => {
            for l in db.listings_of_seller(pk)? {
                listings.insert(l.listing_id.clone());
            }
        }
        Scope::Escrow(account) => {
            for (account, e) in db.escrows(&one(account))? {
                if let Some(l) = db.listing_by_escrow(&e.listing)? {
                    listings.insert(l.listing_id.clone());
                }
                s.escrows.insert(account, e);
            }
        }
        Scope::Page(f) => {
            let now = s.view_now();
            let mut after = f.after.clone();
            let mut scan = (f.limit + 1).min(PAGE_SCAN);
            'scan: loop {
                let rows = db.listings_after(after.as_deref(), f.seller.as_deref(), scan)?;
                let full = rows.len() == scan;
                let last = rows.last().map(|l| l.listing_id.clone());
                for l in rows {
                    if f.matches(&l, now) {
                        listings.insert(l.listing_id.clone());
                        read_whole.push(l);
                        // one past the page: the view sets the next cursor
                        if read_whole.len() > f.limit {
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
        }
        Scope::Transactions(sigs) => {
            let sigs: BTreeSet<String> = sigs.iter().cloned().collect();
            for (sig, at) in db.seen(&sigs)? {
                s.put_seen(sig, at);
            }
            for (sig, r) in db.rejected(&sigs)? {
                s.rejected.insert(sig, r);
            }
        }
        Scope::Head => {}
    }
    if listings.is_empty() {
        return Ok(s);
    }
    let mut accounts = BTreeSet::new();
    if read_whole.is_empty() {
        read_whole = db.listings(&listings)?;
    }
    for l in read_whole {
        if let Some(account) = s.put_listing(Arc::new(l)) {
            accounts.insert(account);
        }
    }
    for o in db.offers_of(&listings)? {
        s.put_offer(Arc::new(o));
    }
    for (sig, b) in db.settlements_of(&listings)? {
        s.put_settlement(sig, Arc::new(b));
    }
    for (account, e) in db.escrows_into(&accounts)? {
        s.escrows.insert(account, e);
    }
    Ok(s)
}

fn one(key: &str) -> BTreeSet<String> {
    BTreeSet::from([key.to_string()])
}

/// Row counts of the whole market.
pub fn totals_of(listings: i64, offers: i64, settlements: i64, rejected: i64) -> Totals {
    Totals {
        listings: listings as u64,
        offers: offers as u64,
        settlements: settlements as u64,
        rejected: rejected as u64,
    }
}
