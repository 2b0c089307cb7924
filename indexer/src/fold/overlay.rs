//! The rows a batch reads while the batch before it is still being
//! committed: [`Overlay`] answers [`Rows`] from the state that batch's
//! fold left (its working set, folded, not yet stored) wherever that
//! state holds a row, and from the storage, committed up to the batch
//! before it, everywhere else. Every change the fold makes is an insert
//! or an update, so a row the folded state holds is the row the storage
//! holds once the batch commits; the storage's rows of a listing (its
//! offers, its buys in chain order) are completed by the ones the batch
//! added, which sit after every stored one.
//!
//! So a writer folds the next batch while the database commits the last
//! ([`crate::statedb::durable`]). Owns that merge; never touches a
//! database (the storage is the caller's [`Rows`]).

use super::working::{Head, Rows};
use super::{EscrowState, ListingState, OfferState, Settlement, State};
use crate::record::Position;
use std::collections::{BTreeSet, HashSet};

/// The storage's rows as they will be once `folded` is stored.
pub struct Overlay<'a, R: ?Sized> {
    /// The storage (committed up to the batch before `folded`'s).
    pub rows: &'a mut R,
    /// A batch's working set after its fold, not stored yet.
    pub folded: &'a State,
}

/// The rows of `keys`: those `held` answers, then the rest from `stored`
/// (not called when `held` answers every key).
fn held_then_stored<T, E>(
    keys: &BTreeSet<String>,
    held: impl Fn(&str) -> Option<T>,
    stored: impl FnOnce(&BTreeSet<String>) -> Result<Vec<T>, E>,
) -> Result<Vec<T>, E> {
    let (mut out, mut rest) = (Vec::new(), BTreeSet::new());
    for k in keys {
        match held(k) {
            Some(v) => out.push(v),
            None => {
                rest.insert(k.clone());
            }
        }
    }
    if !rest.is_empty() {
        out.extend(stored(&rest)?);
    }
    Ok(out)
}

/// A listing's rows: the `stored` ones (in the storage's order), each
/// replaced by the one `held` has for its `key`, then the `added` keys'
/// rows the storage lacks (a batch's rows of a listing follow its stored
/// ones).
fn stored_then_added<'k, T>(
    mut stored: Vec<T>,
    key: impl Fn(&T) -> &str,
    held: impl Fn(&str) -> Option<T>,
    added: impl Iterator<Item = &'k String>,
) -> Vec<T> {
    for row in &mut stored {
        if let Some(newer) = held(key(row)) {
            *row = newer;
        }
    }
    let known: HashSet<String> = stored.iter().map(|r| key(r).to_string()).collect();
    for k in added {
        if !known.contains(k) {
            stored.extend(held(k));
        }
    }
    stored
}

/// `state`'s settlement of the buy `sig`, keyed by it.
fn settled(state: &State, sig: &str) -> Option<(String, Settlement)> {
    state
        .settlements
        .get(sig)
        .map(|b| (sig.to_string(), (**b).clone()))
}

impl<R: Rows + ?Sized> Rows for Overlay<'_, R> {
    type Error = R::Error;

    fn head(&mut self) -> Result<Head, Self::Error> {
        Ok(self.folded.head())
    }

    fn listings(&mut self, ids: &BTreeSet<String>) -> Result<Vec<ListingState>, Self::Error> {
        held_then_stored(
            ids,
            |id| self.folded.listings.get(id).map(|l| (**l).clone()),
            |rest| self.rows.listings(rest),
        )
    }

    fn offers(&mut self, ids: &BTreeSet<String>) -> Result<Vec<OfferState>, Self::Error> {
        held_then_stored(
            ids,
            |id| self.folded.offers.get(id).map(|o| (**o).clone()),
            |rest| self.rows.offers(rest),
        )
    }

    fn offers_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<OfferState>, Self::Error> {
        let added = listing_ids
            .iter()
            .flat_map(|l| self.folded.offers_by_listing.get(l).into_iter().flatten());
        Ok(stored_then_added(
            self.rows.offers_of(listing_ids)?,
            |o| &o.offer_id,
            |id| self.folded.offers.get(id).map(|o| (**o).clone()),
            added,
        ))
    }

    fn settlements(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, Self::Error> {
        held_then_stored(
            signatures,
            |sig| settled(self.folded, sig),
            |rest| self.rows.settlements(rest),
        )
    }

    fn settlements_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, Self::Error> {
        let added = listing_ids
            .iter()
            .flat_map(|l| self.folded.buys_by_listing.get(l).into_iter().flatten());
        Ok(stored_then_added(
            self.rows.settlements_of(listing_ids)?,
            |(sig, _)| sig,
            |sig| settled(self.folded, sig),
            added,
        ))
    }

    fn escrows(
        &mut self,
        accounts: &BTreeSet<String>,
    ) -> Result<Vec<(String, EscrowState)>, Self::Error> {
        held_then_stored(
            accounts,
            |a| {
                self.folded
                    .escrows
                    .get(a)
                    .map(|e| (a.to_string(), e.clone()))
            },
            |rest| self.rows.escrows(rest),
        )
    }

    fn seen(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Position)>, Self::Error> {
        held_then_stored(
            signatures,
            |sig| self.folded.folded_at(sig).map(|at| (sig.to_string(), at)),
            |rest| self.rows.seen(rest),
        )
    }
}
