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

/// `keys` split into those `held` answers and the rest.
fn split<T>(
    keys: &BTreeSet<String>,
    held: impl Fn(&str) -> Option<T>,
) -> (Vec<T>, BTreeSet<String>) {
    let (mut found, mut rest) = (Vec::new(), BTreeSet::new());
    for k in keys {
        match held(k) {
            Some(v) => found.push(v),
            None => {
                rest.insert(k.clone());
            }
        }
    }
    (found, rest)
}

impl<R: Rows + ?Sized> Rows for Overlay<'_, R> {
    type Error = R::Error;

    fn head(&mut self) -> Result<Head, Self::Error> {
        Ok(self.folded.head())
    }

    fn listings(&mut self, ids: &BTreeSet<String>) -> Result<Vec<ListingState>, Self::Error> {
        let (mut out, rest) = split(ids, |id| {
            self.folded.listings.get(id).map(|l| (**l).clone())
        });
        if !rest.is_empty() {
            out.extend(self.rows.listings(&rest)?);
        }
        Ok(out)
    }

    fn offers(&mut self, ids: &BTreeSet<String>) -> Result<Vec<OfferState>, Self::Error> {
        let (mut out, rest) = split(ids, |id| self.folded.offers.get(id).map(|o| (**o).clone()));
        if !rest.is_empty() {
            out.extend(self.rows.offers(&rest)?);
        }
        Ok(out)
    }

    fn offers_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<OfferState>, Self::Error> {
        let mut out = self.rows.offers_of(listing_ids)?;
        for o in &mut out {
            if let Some(newer) = self.folded.offers.get(&o.offer_id) {
                *o = (**newer).clone();
            }
        }
        let stored: HashSet<String> = out.iter().map(|o| o.offer_id.clone()).collect();
        for l in listing_ids {
            for id in self.folded.offers_by_listing.get(l).into_iter().flatten() {
                if !stored.contains(id) {
                    out.extend(self.folded.offers.get(id).map(|o| (**o).clone()));
                }
            }
        }
        Ok(out)
    }

    fn settlements(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, Self::Error> {
        let (mut out, rest) = split(signatures, |sig| {
            self.folded
                .settlements
                .get(sig)
                .map(|b| (sig.to_string(), (**b).clone()))
        });
        if !rest.is_empty() {
            out.extend(self.rows.settlements(&rest)?);
        }
        Ok(out)
    }

    fn settlements_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, Self::Error> {
        let mut out = self.rows.settlements_of(listing_ids)?;
        for (sig, b) in &mut out {
            if let Some(newer) = self.folded.settlements.get(sig) {
                *b = (**newer).clone();
            }
        }
        // a listing's buys the batch added follow its stored ones
        let stored: HashSet<String> = out.iter().map(|(sig, _)| sig.clone()).collect();
        for l in listing_ids {
            for sig in self.folded.buys_by_listing.get(l).into_iter().flatten() {
                if !stored.contains(sig) {
                    if let Some(b) = self.folded.settlements.get(sig) {
                        out.push((sig.clone(), (**b).clone()));
                    }
                }
            }
        }
        Ok(out)
    }

    fn escrows(
        &mut self,
        accounts: &BTreeSet<String>,
    ) -> Result<Vec<(String, EscrowState)>, Self::Error> {
        let (mut out, rest) = split(accounts, |a| {
            self.folded
                .escrows
                .get(a)
                .map(|e| (a.to_string(), e.clone()))
        });
        if !rest.is_empty() {
            out.extend(self.rows.escrows(&rest)?);
        }
        Ok(out)
    }

    fn seen(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Position)>, Self::Error> {
        let (mut out, rest) = split(signatures, |sig| {
            self.folded.folded_at(sig).map(|at| (sig.to_string(), at))
        });
        if !rest.is_empty() {
            out.extend(self.rows.seen(&rest)?);
        }
        Ok(out)
    }
}
