//! The fold over a working set: the part of the market a batch of records
//! can touch, loaded from durable storage, folded by the same rules as the
//! whole state, and written back as the rows that changed.
//!
//! A record touches only entities its own data names: the listing ids,
//! offer ids and buy signatures in its memos and in the manifest bodies
//! it carries, the escrow accounts its program events name, and through
//! them each such listing's offers and buys, an offer's listing and the
//! buy an escrow's deposit made. [`State::working_set`] loads that closure
//! (a superset is harmless; a subset would change the fold, which the
//! differential tests against the whole in-memory fold rule out) and
//! [`State::changes_from`] says what a fold of the batch changed.
//!
//! Owns "which rows a batch needs and which it changed"; never touches a
//! database (the [`Rows`] it reads from is the caller's).

use super::{EscrowState, ListingState, OfferState, Rejected, Settlement, State};
use crate::record::{Position, TxRecord};
use node::escrow::EscrowEvent;
use node::market::{MemoError, MemoOp};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The fold's scalars: what the state hash writes before the entities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Head {
    /// Newest block time folded.
    pub now: i64,
    /// Last position folded.
    pub last: Option<Position>,
    /// Transactions folded.
    pub transactions: u64,
}

/// Where the fold reads rows from (a database's current state). Every
/// call takes a set of keys and answers the rows it holds among them.
pub trait Rows {
    /// The storage's error.
    type Error;
    /// The scalars.
    fn head(&mut self) -> Result<Head, Self::Error>;
    /// Listings by id.
    fn listings(&mut self, ids: &BTreeSet<String>) -> Result<Vec<ListingState>, Self::Error>;
    /// Offers by id.
    fn offers(&mut self, ids: &BTreeSet<String>) -> Result<Vec<OfferState>, Self::Error>;
    /// Every offer of the listings `ids`.
    fn offers_of(&mut self, listing_ids: &BTreeSet<String>)
        -> Result<Vec<OfferState>, Self::Error>;
    /// Buys by signature.
    fn settlements(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, Self::Error>;
    /// Every buy of the listings `ids`, in chain order.
    fn settlements_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, Self::Error>;
    /// Escrow deposits by escrow account.
    fn escrows(
        &mut self,
        accounts: &BTreeSet<String>,
    ) -> Result<Vec<(String, EscrowState)>, Self::Error>;
    /// Where each of `signatures` that was folded sits.
    fn seen(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Position)>, Self::Error>;
}

/// The keys a batch names directly.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Keys {
    /// Transaction signatures named by the records (buys named by
    /// envelopes): never the records' own, which no storage holds before
    /// their batch is folded (the log holds a signature once, batches are
    /// disjoint and in chain order while the catch-up is the log's only
    /// writer, and a rewind takes back the seen rows of what it takes
    /// back), so reading them would find nothing.
    pub signatures: BTreeSet<String>,
    /// Listing ids.
    pub listings: BTreeSet<String>,
    /// Offer ids.
    pub offers: BTreeSet<String>,
    /// Escrow accounts.
    pub escrows: BTreeSet<String>,
    /// Manifest ids the memos name.
    pub manifests: BTreeSet<String>,
}

/// The escrow account an event names.
fn escrow_of(ev: &EscrowEvent) -> Option<String> {
    match ev {
        EscrowEvent::Deposited { escrow, .. }
        | EscrowEvent::Revealed { escrow }
        | EscrowEvent::Declined { escrow }
        | EscrowEvent::Claimed { escrow, .. }
        | EscrowEvent::Refunded { escrow, .. }
        | EscrowEvent::FraudProven { escrow, .. }
        | EscrowEvent::Expired { escrow, .. } => Some(escrow.to_string()),
        EscrowEvent::UsdQuoted(_) | EscrowEvent::Other(_) => None,
    }
}

impl Keys {
    /// What `records` name: every id in their memos, every `listing_id`,
    /// `offer_id` and `buy_signature` in the bodies they carry, every
    /// escrow account their events name.
    pub fn of(records: &[TxRecord]) -> Keys {
        let mut k = Keys::default();
        for r in records {
            for ev in node::escrow::events_in(&r.tx) {
                k.escrows.extend(escrow_of(&ev));
            }
            for body in r.manifests.values() {
                let field = |f: &str| body.get(f).and_then(Value::as_str).map(str::to_string);
                k.listings.extend(field("listing_id"));
                k.offers.extend(field("offer_id"));
                k.signatures.extend(field("buy_signature"));
            }
            for memo in &r.tx.memos {
                match MemoOp::parse(memo) {
                    Ok(op) => k.add_op(&op),
                    Err(MemoError::NotMarketplace) => {
                        k.listings
                            .extend(node::memo::x402_buy_listing(memo).map(str::to_string));
                    }
                    Err(_) => {}
                }
            }
        }
        for r in records {
            k.signatures.remove(&r.tx.signature);
        }
        k
    }

    fn add_op(&mut self, op: &MemoOp) {
        match op {
            MemoOp::List {
                listing_arweave_id, ..
            } => {
                self.manifests.insert(listing_arweave_id.clone());
            }
            MemoOp::Offer {
                listing_id,
                offer_arweave_id,
                ..
            } => {
                self.listings.insert(listing_id.clone());
                self.manifests.insert(offer_arweave_id.clone());
            }
            MemoOp::Release {
                listing_id,
                envelope_arweave_id,
                ..
            } => {
                self.listings.insert(listing_id.clone());
                self.manifests.insert(envelope_arweave_id.clone());
            }
            MemoOp::Counter {
                offer_id,
                counter_arweave_id,
                ..
            } => {
                self.offers.insert(offer_id.clone());
                self.manifests.insert(counter_arweave_id.clone());
            }
            MemoOp::Buy { listing_id, .. } | MemoOp::Cancel { listing_id } => {
                self.listings.insert(listing_id.clone());
            }
            MemoOp::Accept { offer_id }
            | MemoOp::Reject { offer_id }
            | MemoOp::Withdraw { offer_id } => {
                self.offers.insert(offer_id.clone());
            }
        }
    }
}

/// What a fold changed, as rows: the new value of each changed key
/// (every change the fold makes is an insert or an update).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Changes {
    /// Listings.
    pub listings: Vec<Arc<ListingState>>,
    /// Offers.
    pub offers: Vec<Arc<OfferState>>,
    /// Buys, with where their transaction sits (`None`: a buy folded
    /// before this batch, whose stored position stands).
    pub settlements: Vec<(String, Option<Position>, Arc<Settlement>)>,
    /// Refused memos by transaction.
    pub rejected: Vec<(String, Vec<Rejected>)>,
    /// Escrow deposits by account.
    pub escrows: Vec<(String, EscrowState)>,
    /// Transactions folded, and where.
    pub seen: Vec<(String, Position)>,
    /// How many listings, offers, buys and refused transactions are new.
    pub added: super::Totals,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.listings.is_empty()
            && self.offers.is_empty()
            && self.settlements.is_empty()
            && self.rejected.is_empty()
            && self.escrows.is_empty()
            && self.seen.is_empty()
    }
}

impl State {
    /// The state holding every row the records `keys` were read from
    /// ([`Keys::of`]) can touch, read from `rows` (with the scalars),
    /// indexes rebuilt: folding those records over it changes exactly
    /// what folding them over the whole state would.
    pub fn working_set<R: Rows + ?Sized>(rows: &mut R, mut keys: Keys) -> Result<State, R::Error> {
        let head = rows.head()?;
        let mut s = State {
            now: head.now,
            last: head.last,
            transactions: head.transactions,
            ..State::default()
        };
        // offers lead to their listing, escrows to the buy they hold
        for o in rows.offers(&keys.offers)? {
            keys.listings.insert(o.listing_id.clone());
        }
        for (account, e) in rows.escrows(&keys.escrows)? {
            keys.signatures.insert(e.deposited.signature.clone());
            s.escrows.insert(account, e);
        }
        for l in rows.listings(&keys.listings)? {
            s.put_listing(Arc::new(l));
        }
        for o in rows.offers_of(&keys.listings)? {
            s.put_offer(Arc::new(o));
        }
        for (sig, b) in rows.settlements_of(&keys.listings)? {
            s.put_settlement(sig, Arc::new(b));
        }
        let mut loose = keys.signatures.clone();
        loose.retain(|sig| !s.settlements.contains_key(sig));
        for (sig, b) in rows.settlements(&loose)? {
            s.put_settlement(sig, Arc::new(b));
        }
        for (sig, at) in rows.seen(&keys.signatures)? {
            s.put_seen(sig, at);
        }
        Ok(s)
    }

    /// A listing loaded from storage, with the indexes it feeds; its
    /// escrow program account, for an escrow listing.
    pub(crate) fn put_listing(&mut self, l: Arc<ListingState>) -> Option<String> {
        let mut account = None;
        if l.is_escrow() {
            if let Ok(a) = super::escrow_listing_account(&l.seller, &l.listing_id) {
                self.escrow_listings.insert(a.clone(), l.listing_id.clone());
                account = Some(a);
            }
        }
        self.listings.insert(l.listing_id.clone(), l);
        account
    }

    /// A folded transaction's position, loaded from storage.
    pub(crate) fn put_seen(&mut self, signature: String, at: Position) {
        self.seen.insert(signature, at);
    }

    /// An offer loaded from storage, with the index it feeds.
    pub(crate) fn put_offer(&mut self, o: Arc<OfferState>) {
        self.offers_by_listing
            .entry(o.listing_id.clone())
            .or_default()
            .insert(o.offer_id.clone());
        self.offers.insert(o.offer_id.clone(), o);
    }

    /// A buy loaded from storage (in chain order), with the index it feeds.
    pub(crate) fn put_settlement(&mut self, sig: String, b: Arc<Settlement>) {
        if self.settlements.contains_key(&sig) {
            return;
        }
        self.buys_by_listing
            .entry(b.listing_id.clone())
            .or_default()
            .push_back(sig.clone());
        self.settlements.insert(sig, b);
    }

    /// The scalars.
    pub fn head(&self) -> Head {
        Head {
            now: self.now,
            last: self.last,
            transactions: self.transactions,
        }
    }

    /// What changed from `before` (the working set as loaded) to `self`
    /// (after folding over it).
    pub fn changes_from(&self, before: &State) -> Changes {
        use imbl::ordmap::DiffItem;
        fn changed<V: Clone>(d: DiffItem<'_, '_, String, V>) -> Option<(String, V)> {
            match d {
                DiffItem::Add(k, v) | DiffItem::Update { new: (k, v), .. } => {
                    Some((k.clone(), v.clone()))
                }
                DiffItem::Remove(..) => None,
            }
        }
        let position = |sig: &str| self.folded_at(sig);
        fn adds<V: PartialEq>(
            d: imbl::ordmap::DiffIter<'_, '_, String, V, imbl::shared_ptr::DefaultSharedPtr>,
        ) -> u64 {
            d.filter(|d| matches!(d, DiffItem::Add(..))).count() as u64
        }
        let added = super::Totals {
            listings: adds(before.listings.diff(&self.listings)),
            offers: adds(before.offers.diff(&self.offers)),
            settlements: adds(before.settlements.diff(&self.settlements)),
            rejected: adds(before.rejected.diff(&self.rejected)),
        };
        Changes {
            added,
            listings: before
                .listings
                .diff(&self.listings)
                .filter_map(changed)
                .map(|(_, l)| l)
                .collect(),
            offers: before
                .offers
                .diff(&self.offers)
                .filter_map(changed)
                .map(|(_, o)| o)
                .collect(),
            settlements: before
                .settlements
                .diff(&self.settlements)
                .filter_map(changed)
                .map(|(sig, b)| {
                    let at = position(&b.at.signature);
                    (sig, at, b)
                })
                .collect(),
            rejected: before
                .rejected
                .diff(&self.rejected)
                .filter_map(changed)
                .collect(),
            escrows: before
                .escrows
                .diff(&self.escrows)
                .filter_map(changed)
                .collect(),
            seen: self
                .seen
                .iter()
                .filter(|(sig, _)| !before.seen.contains_key(*sig))
                .map(|(sig, at)| (sig.clone(), *at))
                .collect(),
        }
    }
}
