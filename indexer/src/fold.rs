//! Marketplace state as a pure fold of recorded transactions in chain
//! order (slot, then index in block), applying the protocol's rules
//! (PROTOCOL.md §6, DESIGN.md §Settlement): who may do what, expiry by
//! block time, offer lineage, the listing lifecycle and settlements.
//!
//! Same records in the same order give the same [`State`], byte for byte
//! ([`State::hash`]). Nothing here touches the network, the disk or the
//! clock: "now" is the newest block time folded. Every memo that does not
//! count is kept with its reason; nothing panics on hostile input.

use crate::book::{Checked, ManifestBook};
use crate::record::{Position, TxRecord};
use node::bundle::verify_manifest_by;
use node::escrow;
use node::market::{MemoError, MemoOp};
use node::settle::{verify_buy, verify_escrow_deposit, ListingTerms, NegotiatedTerms};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Seconds after a paid buy without a release before it counts against
/// the seller as unreleased.
pub const DEFAULT_RELEASE_GRACE_SECS: i64 = 3_600;
/// Longest raw memo kept with a rejection.
const MAX_KEPT_MEMO: usize = 600;

/// Rules that depend on the cluster, fixed for a whole fold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldConfig {
    /// Treasury that must receive the settle fee (mainnet-beta only).
    pub fee_treasury: Option<String>,
    /// Grace period before a paid buy counts as unreleased.
    pub release_grace_secs: i64,
}

impl Default for FoldConfig {
    fn default() -> Self {
        FoldConfig {
            fee_treasury: None,
            release_grace_secs: DEFAULT_RELEASE_GRACE_SECS,
        }
    }
}

/// Where an action happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct At {
    /// Transaction signature.
    pub signature: String,
    /// Slot.
    pub slot: u64,
    /// Block time (unix seconds), when known.
    pub block_time: Option<i64>,
}

impl At {
    fn of(r: &TxRecord) -> At {
        At {
            signature: r.tx.signature.clone(),
            slot: r.tx.slot,
            block_time: r.tx.block_time,
        }
    }
}

/// A listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListingState {
    /// Listing id.
    pub listing_id: String,
    /// Arweave id of the manifest.
    pub manifest_id: String,
    /// Seller.
    pub seller: String,
    /// Where buyers pay.
    pub payment_address: String,
    /// Bundle hash.
    pub bundle_hash: String,
    /// Price (USD).
    pub price_usd: f64,
    /// Price (lamports), when the manifest fixes one.
    pub price_lamports: Option<u64>,
    /// Fee in basis points.
    pub fee_bps: u64,
    /// auction | private.
    pub visibility: String,
    /// Expiry (unix seconds).
    pub expires_at: i64,
    /// The `list` transaction.
    pub listed: At,
    /// The seller's `cancel`, if any.
    pub cancelled: Option<At>,
    /// The signed manifest.
    pub manifest: Arc<Value>,
    /// Other sellers who listed the same listing id after this one (a
    /// listing id names one seller's listing; a copy is a squat attempt,
    /// or a collision): such a listing is `contested` and never settled
    /// through this indexer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contested_by: Vec<String>,
}

impl ListingState {
    /// live | cancelled | expired | contested, at `now`.
    pub fn status(&self, now: i64) -> &'static str {
        if self.cancelled.is_some() {
            "cancelled"
        } else if now >= self.expires_at {
            "expired"
        } else if !self.contested_by.is_empty() {
            "contested"
        } else {
            "live"
        }
    }

    fn live_at(&self, block_time: Option<i64>) -> Result<(), String> {
        if let Some(c) = &self.cancelled {
            return Err(format!("listing was cancelled at slot {}", c.slot));
        }
        match block_time {
            Some(t) if t >= self.expires_at => Err(format!(
                "listing expired at {} (block time {t})",
                self.expires_at
            )),
            None => Err("no block time; expiry cannot be judged".into()),
            Some(_) => Ok(()),
        }
    }
}

/// Terms of an offer or counter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Terms {
    /// Who signed these terms.
    pub from: String,
    /// Arweave id of the manifest.
    pub manifest_id: String,
    /// Price (USD).
    pub price_usd: f64,
    /// Price (lamports), when fixed.
    pub price_lamports: Option<u64>,
    /// Expiry (unix seconds).
    pub expires_at: i64,
    /// The memo's transaction.
    pub at: At,
    /// The signed manifest.
    pub manifest: Arc<Value>,
}

/// Where an offer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OfferStatus {
    /// Made, no answer yet.
    Open,
    /// Countered by either side.
    Countered,
    /// Accepted by the seller: the current terms bind for this buyer.
    Accepted,
    /// Rejected by the seller.
    Rejected,
    /// Withdrawn by the buyer.
    Withdrawn,
}

impl OfferStatus {
    fn negotiable(self) -> bool {
        matches!(self, OfferStatus::Open | OfferStatus::Countered)
    }
}

/// An offer and its lineage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferState {
    /// Offer id.
    pub offer_id: String,
    /// Listing.
    pub listing_id: String,
    /// Buyer.
    pub buyer: String,
    /// Buyer's X25519 key from the offer.
    pub buyer_x25519: Option<String>,
    /// Status.
    pub status: OfferStatus,
    /// The offer, then each counter in order.
    pub terms: Vec<Terms>,
    /// The accept/reject/withdraw that closed it.
    pub closed: Option<At>,
}

impl OfferState {
    /// The terms that apply now (the last counter's, else the offer's).
    pub fn current(&self) -> &Terms {
        self.terms
            .last()
            .expect("an offer always has its own terms")
    }
}

/// Where a buy stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SettlementStatus {
    /// Verified paid; awaiting the seller's release.
    Paid,
    /// The seller released.
    Released {
        /// The release transaction.
        at: At,
        /// Envelope id.
        envelope_id: String,
        /// Token minted to the buyer.
        minted_token: String,
    },
    /// Does not count as a buy.
    Rejected {
        /// Why.
        reason: String,
    },
    /// An escrow buy the seller never released: the buyer took the
    /// deposit back after the window (and the stake's share, once slashed).
    Refunded {
        /// The refund transaction.
        at: At,
        /// Lamports of the seller's stake paid to the buyer (0 until slashed).
        slashed_lamports: u64,
    },
}

/// One buy transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settlement {
    /// Listing.
    pub listing_id: String,
    /// Buyer (fee payer).
    pub buyer: String,
    /// Buyer's X25519 key from the memo.
    pub buyer_x25519: String,
    /// Paid to the payment address.
    pub paid_lamports: u64,
    /// Price it was held to (0 when rejected before pricing).
    pub price_lamports: u64,
    /// Offer whose price applied.
    pub offer_id: Option<String>,
    /// The buy.
    pub at: At,
    /// Status.
    #[serde(flatten)]
    pub status: SettlementStatus,
}

/// A marketplace memo that changed nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// Slot.
    pub slot: u64,
    /// The memo (truncated).
    pub memo: String,
    /// Why it does not count.
    pub reason: String,
}

/// One escrow deposit as the program's events tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EscrowState {
    /// Listing account (program PDA).
    pub listing: String,
    /// Buyer.
    pub buyer: String,
    /// Lamports deposited.
    pub amount: u64,
    /// deposited | released | refunded.
    pub status: &'static str,
    /// Envelope named on release.
    pub envelope_id: Option<String>,
    /// Paid to the seller and to the treasury on release.
    pub paid: Option<(u64, u64)>,
    /// Deposit transaction.
    pub deposited: At,
    /// Release or refund transaction.
    pub settled: Option<At>,
    /// Stake paid to the refunded buyer, once slashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slashed: Option<u64>,
}

/// The whole marketplace.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct State {
    /// Newest block time folded (the fold's "now").
    pub now: i64,
    /// Last position folded.
    pub last: Option<Position>,
    /// Transactions folded.
    pub transactions: u64,
    /// Listings by id.
    pub listings: BTreeMap<String, ListingState>,
    /// Offers by id.
    pub offers: BTreeMap<String, OfferState>,
    /// Buys by transaction signature.
    pub settlements: BTreeMap<String, Settlement>,
    /// Refused memos by transaction signature.
    pub rejected: BTreeMap<String, Vec<Rejected>>,
    /// Escrow-program deposits by escrow account (from its events).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub escrows: BTreeMap<String, EscrowState>,
    #[serde(skip)]
    seen: BTreeSet<String>,
    /// Buy signatures by listing (an index over `settlements`).
    #[serde(skip)]
    buys_by_listing: BTreeMap<String, Vec<String>>,
    /// Offer ids by listing (an index over `offers`: a buy looks up its
    /// listing's accepted offers without scanning every offer).
    #[serde(skip)]
    offers_by_listing: BTreeMap<String, BTreeSet<String>>,
}

/// Feeds serde_json's output straight into the hasher (no buffer).
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why records could not be folded incrementally.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("record at {got:?} is not after the last folded position {last:?}; refold from the start")]
pub struct OutOfOrder {
    /// Last folded.
    pub last: Position,
    /// Offered.
    pub got: Position,
}

fn truncate(s: &str) -> String {
    match s.char_indices().nth(MAX_KEPT_MEMO) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl State {
    /// The empty state.
    pub fn new() -> State {
        State::default()
    }

    /// Folds `records` (sorted into chain order) from the empty state.
    pub fn fold(records: &[TxRecord], book: &ManifestBook, cfg: &FoldConfig) -> State {
        let mut s = State::new();
        for r in records {
            s.apply_unchecked(r, book, cfg);
        }
        s
    }

    /// Folds `records`, all after the last folded position, in order.
    pub fn apply_batch(
        &mut self,
        records: &[TxRecord],
        book: &ManifestBook,
        cfg: &FoldConfig,
    ) -> Result<(), OutOfOrder> {
        let mut last = self.last;
        for r in records {
            if let Some(l) = last {
                if r.position() <= l {
                    return Err(OutOfOrder {
                        last: l,
                        got: r.position(),
                    });
                }
            }
            last = Some(r.position());
        }
        for r in records {
            self.apply_unchecked(r, book, cfg);
        }
        Ok(())
    }

    /// The buys of `listing_id` (signature, settlement), in chain order.
    pub fn settlements_of<'a>(
        &'a self,
        listing_id: &str,
    ) -> impl Iterator<Item = (&'a String, &'a Settlement)> + 'a {
        self.buys_by_listing
            .get(listing_id)
            .into_iter()
            .flatten()
            .filter_map(|sig| self.settlements.get_key_value(sig))
    }

    /// Whether the transaction `signature` has been folded.
    pub fn has_folded(&self, signature: &str) -> bool {
        self.seen.contains(signature)
    }

    /// SHA-256 (hex) of the state version and the canonical JSON of the state.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        h.update(format!(
            "brainctl-indexer/state/v{}\n",
            crate::STATE_VERSION
        ));
        serde_json::to_writer(HashWriter(&mut h), self).expect("state serializes");
        hex::encode(h.finalize())
    }

    fn apply_unchecked(&mut self, r: &TxRecord, book: &ManifestBook, cfg: &FoldConfig) {
        if !self.seen.insert(r.tx.signature.clone()) {
            return;
        }
        self.transactions += 1;
        self.last = Some(r.position());
        if let Some(t) = r.tx.block_time {
            self.now = self.now.max(t);
        }
        if r.tx.succeeded {
            for ev in node::escrow::events_in_logs(&r.tx.logs) {
                self.apply_escrow(ev, r);
            }
        }
        for memo in &r.tx.memos {
            let outcome = match MemoOp::parse(memo) {
                Err(MemoError::NotMarketplace) => continue,
                Err(e) => Err(format!("malformed memo: {e}")),
                Ok(_) if !r.tx.succeeded => Err("the transaction failed on chain".into()),
                Ok(op) => self.apply_op(&op, r, book, cfg),
            };
            if let Err(reason) = outcome {
                self.rejected
                    .entry(r.tx.signature.clone())
                    .or_default()
                    .push(Rejected {
                        slot: r.tx.slot,
                        memo: truncate(memo),
                        reason,
                    });
            }
        }
    }

    fn apply_escrow(&mut self, ev: node::escrow::EscrowEvent, r: &TxRecord) {
        use node::escrow::EscrowEvent as E;
        match ev {
            E::Deposited {
                listing,
                escrow,
                buyer,
                amount,
            } => {
                self.escrows.insert(
                    escrow.to_string(),
                    EscrowState {
                        listing: listing.to_string(),
                        buyer: buyer.to_string(),
                        amount,
                        status: "deposited",
                        envelope_id: None,
                        paid: None,
                        deposited: At::of(r),
                        settled: None,
                        slashed: None,
                    },
                );
            }
            E::Released {
                escrow,
                envelope_id,
                to_seller,
                fee,
            } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.status = "released";
                    e.envelope_id = Some(envelope_id);
                    e.paid = Some((to_seller, fee));
                    e.settled = Some(At::of(r));
                }
            }
            E::Refunded { escrow, .. } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.status = "refunded";
                    e.settled = Some(At::of(r));
                }
                if let Some(s) = self.escrow_settlement(&escrow.to_string()) {
                    s.status = SettlementStatus::Refunded {
                        at: At::of(r),
                        slashed_lamports: 0,
                    };
                }
            }
            E::Slashed { escrow, amount } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.slashed = Some(amount);
                }
                if let Some(s) = self.escrow_settlement(&escrow.to_string()) {
                    if let SettlementStatus::Refunded {
                        slashed_lamports, ..
                    } = &mut s.status
                    {
                        *slashed_lamports = amount;
                    }
                }
            }
            E::Other(_) => {}
        }
    }

    /// The buy whose deposit `escrow` holds (or held): the paid or
    /// refunded settlement of its buyer on the listing whose program
    /// account it belongs to.
    fn escrow_settlement(&mut self, escrow: &str) -> Option<&mut Settlement> {
        let e = self.escrows.get(escrow)?;
        let (account, buyer) = (e.listing.clone(), e.buyer.clone());
        let listing_id = self
            .listings
            .values()
            .find(|l| {
                escrow_listing_account(&l.seller, &l.listing_id).ok() == Some(account.clone())
            })?
            .listing_id
            .clone();
        let sig = self
            .settlements_of(&listing_id)
            .find(|(_, s)| {
                s.buyer == buyer
                    && matches!(
                        s.status,
                        SettlementStatus::Paid | SettlementStatus::Refunded { .. }
                    )
            })
            .map(|(k, _)| k.clone())?;
        self.settlements.get_mut(&sig)
    }

    fn apply_op(
        &mut self,
        op: &MemoOp,
        r: &TxRecord,
        book: &ManifestBook,
        cfg: &FoldConfig,
    ) -> Result<(), String> {
        match op {
            MemoOp::List {
                listing_arweave_id,
                bundle_hash,
            } => self.list(listing_arweave_id, bundle_hash, r, book),
            MemoOp::Offer {
                listing_id,
                offer_arweave_id,
                buyer_pubkey,
            } => self.offer(listing_id, offer_arweave_id, buyer_pubkey, r, book),
            MemoOp::Counter {
                offer_id,
                counter_arweave_id,
                counterer_pubkey,
            } => self.counter(offer_id, counter_arweave_id, counterer_pubkey, r, book),
            MemoOp::Accept { offer_id } => self.close_offer(offer_id, OfferStatus::Accepted, r),
            MemoOp::Reject { offer_id } => self.close_offer(offer_id, OfferStatus::Rejected, r),
            MemoOp::Withdraw { offer_id } => self.close_offer(offer_id, OfferStatus::Withdrawn, r),
            MemoOp::Buy {
                listing_id,
                buyer_x25519,
            } => self.buy(listing_id, buyer_x25519, r, cfg),
            MemoOp::Release {
                listing_id,
                envelope_arweave_id,
                minted_token_address,
            } => self.release(
                listing_id,
                envelope_arweave_id,
                minted_token_address,
                r,
                book,
            ),
            MemoOp::Cancel { listing_id } => self.cancel(listing_id, r),
        }
    }

    fn list(
        &mut self,
        manifest_id: &str,
        bundle_hash: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), String> {
        let l = match book.get(manifest_id) {
            Some(Checked::Listing(l)) => l,
            Some(Checked::Invalid(why)) => return Err(format!("listing manifest refused: {why}")),
            Some(_) => return Err(format!("{manifest_id} is not a listing manifest")),
            None => return Err(format!("listing manifest {manifest_id} unavailable")),
        };
        if l.bundle_hash != bundle_hash {
            return Err("memo bundle hash differs from the manifest's".into());
        }
        if !r.tx.signed_by(&l.seller_pubkey) {
            return Err("list memo not signed by the manifest's seller".into());
        }
        if let Some(first) = self.listings.get_mut(&l.listing_id) {
            if first.seller == l.seller_pubkey {
                return Err(format!("listing {} already exists", l.listing_id));
            }
            if !first.contested_by.contains(&l.seller_pubkey) {
                first.contested_by.push(l.seller_pubkey.clone());
            }
            return Err(format!(
                "listing id {} is already listed by seller {}; it is now contested and is not settled through this indexer",
                l.listing_id, first.seller
            ));
        }
        self.listings.insert(
            l.listing_id.clone(),
            ListingState {
                listing_id: l.listing_id.clone(),
                manifest_id: manifest_id.into(),
                seller: l.seller_pubkey.clone(),
                payment_address: l.payment_address.clone(),
                bundle_hash: l.bundle_hash.clone(),
                price_usd: l.price_usd,
                price_lamports: l.price_lamports,
                fee_bps: l.fee_bps,
                visibility: l.visibility.clone(),
                expires_at: l.expires_at,
                listed: At::of(r),
                cancelled: None,
                manifest: l.raw.clone(),
                contested_by: Vec::new(),
            },
        );
        Ok(())
    }

    fn listing(&self, id: &str) -> Result<&ListingState, String> {
        self.listings
            .get(id)
            .ok_or_else(|| format!("unknown listing {id}"))
    }

    fn offer(
        &mut self,
        listing_id: &str,
        manifest_id: &str,
        buyer: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), String> {
        if !r.tx.signed_by(buyer) {
            return Err("offer memo not signed by the buyer it names".into());
        }
        let listing = self.listing(listing_id)?;
        listing.live_at(r.tx.block_time)?;
        if listing.seller == buyer {
            return Err("a seller cannot offer on their own listing".into());
        }
        let o = match book.get(manifest_id) {
            Some(Checked::Offer(o)) => o,
            Some(Checked::Invalid(why)) => return Err(format!("offer manifest refused: {why}")),
            Some(_) => return Err(format!("{manifest_id} is not an offer manifest")),
            None => return Err(format!("offer manifest {manifest_id} unavailable")),
        };
        if o.listing_id.as_deref() != Some(listing_id) || o.from_pubkey != buyer {
            return Err("offer manifest names another listing or buyer than its memo".into());
        }
        if self.offers.contains_key(&o.offer_id) {
            return Err(format!("offer {} already exists", o.offer_id));
        }
        self.offers_by_listing
            .entry(listing_id.to_string())
            .or_default()
            .insert(o.offer_id.clone());
        self.offers.insert(
            o.offer_id.clone(),
            OfferState {
                offer_id: o.offer_id.clone(),
                listing_id: listing_id.into(),
                buyer: buyer.into(),
                buyer_x25519: o.buyer_x25519.clone(),
                status: OfferStatus::Open,
                terms: vec![Terms {
                    from: buyer.into(),
                    manifest_id: manifest_id.into(),
                    price_usd: o.price_usd,
                    price_lamports: o.price_lamports,
                    expires_at: o.expires_at,
                    at: At::of(r),
                    manifest: o.raw.clone(),
                }],
                closed: None,
            },
        );
        Ok(())
    }

    /// The offer and its listing's seller, if the offer can still be negotiated at `r`.
    fn negotiable(&self, offer_id: &str, r: &TxRecord) -> Result<(&OfferState, String), String> {
        let offer = self
            .offers
            .get(offer_id)
            .ok_or_else(|| format!("unknown offer {offer_id}"))?;
        if !offer.status.negotiable() {
            return Err(format!("offer {offer_id} is already {:?}", offer.status).to_lowercase());
        }
        let listing = self.listing(&offer.listing_id)?;
        listing.live_at(r.tx.block_time)?;
        let t = r.tx.block_time.unwrap_or(i64::MAX);
        if t >= offer.current().expires_at {
            return Err(format!(
                "offer {offer_id} terms expired at {}",
                offer.current().expires_at
            ));
        }
        Ok((offer, listing.seller.clone()))
    }

    fn counter(
        &mut self,
        offer_id: &str,
        manifest_id: &str,
        counterer: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), String> {
        if !r.tx.signed_by(counterer) {
            return Err("counter memo not signed by the counterer it names".into());
        }
        let (offer, seller) = self.negotiable(offer_id, r)?;
        if counterer != seller && counterer != offer.buyer {
            return Err("only the seller or the offer's buyer may counter".into());
        }
        let c = match book.get(manifest_id) {
            Some(Checked::Counter(c)) => c,
            Some(Checked::Invalid(why)) => return Err(format!("counter manifest refused: {why}")),
            Some(_) => return Err(format!("{manifest_id} is not a counter manifest")),
            None => return Err(format!("counter manifest {manifest_id} unavailable")),
        };
        if c.offer_id != offer_id || c.from_pubkey != counterer {
            return Err("counter manifest names another offer or signer than its memo".into());
        }
        let offer = self.offers.get_mut(offer_id).expect("checked above");
        offer.status = OfferStatus::Countered;
        offer.terms.push(Terms {
            from: counterer.into(),
            manifest_id: manifest_id.into(),
            price_usd: c.price_usd,
            price_lamports: c.price_lamports,
            expires_at: c.expires_at,
            at: At::of(r),
            manifest: c.raw.clone(),
        });
        Ok(())
    }

    fn close_offer(&mut self, offer_id: &str, to: OfferStatus, r: &TxRecord) -> Result<(), String> {
        let (offer, seller) = self.negotiable(offer_id, r)?;
        let (who, role) = match to {
            OfferStatus::Withdrawn => (offer.buyer.clone(), "the offer's buyer"),
            _ => (seller, "the listing's seller"),
        };
        if !r.tx.signed_by(&who) {
            return Err(format!("not signed by {role}"));
        }
        let offer = self.offers.get_mut(offer_id).expect("checked above");
        offer.status = to;
        offer.closed = Some(At::of(r));
        Ok(())
    }

    fn buy(
        &mut self,
        listing_id: &str,
        buyer_x25519: &str,
        r: &TxRecord,
        cfg: &FoldConfig,
    ) -> Result<(), String> {
        if self.settlements.contains_key(&r.tx.signature) {
            return Ok(());
        }
        let listing = self.listing(listing_id)?;
        let buyer = r.tx.fee_payer().unwrap_or_default().to_string();
        let mut settlement = Settlement {
            listing_id: listing_id.into(),
            buyer: buyer.clone(),
            buyer_x25519: buyer_x25519.into(),
            paid_lamports: r.tx.paid(&buyer, &listing.payment_address),
            price_lamports: 0,
            offer_id: None,
            at: At::of(r),
            status: SettlementStatus::Paid,
        };
        let verdict = match listing.price_lamports {
            None => Err("the listing fixes no price_lamports; it cannot be settled".to_string()),
            Some(price_lamports) => {
                let terms = ListingTerms {
                    listing_id: listing_id.into(),
                    payment_address: listing.payment_address.clone(),
                    price_lamports,
                    expires_at: listing.expires_at,
                    cancelled_at_slot: listing.cancelled.as_ref().map(|c| c.slot),
                    fee: cfg.fee_treasury.clone().map(|t| (t, listing.fee_bps)),
                };
                let negotiated = self.accepted_for(listing_id, &buyer);
                match listing
                    .manifest
                    .get("escrow_program")
                    .and_then(Value::as_str)
                {
                    None => verify_buy(&r.tx, &terms, &negotiated),
                    Some(escrow::PROGRAM_ID) => {
                        let account = escrow_listing_account(&listing.seller, listing_id)?;
                        verify_escrow_deposit(&r.tx, &terms, &account)
                            .inspect(|v| settlement.paid_lamports = v.paid_lamports)
                    }
                    Some(other) => {
                        return self.reject_buy(
                            settlement,
                            r,
                            format!("the listing names escrow program {other}, not ours"),
                        )
                    }
                }
                .map_err(|e| e.to_string())
            }
        };
        match verdict {
            Ok(v) => {
                settlement.price_lamports = v.price_lamports;
                settlement.offer_id = v.offer_id;
            }
            Err(reason) => settlement.status = SettlementStatus::Rejected { reason },
        }
        self.record_buy(settlement, r)
    }

    fn reject_buy(
        &mut self,
        mut settlement: Settlement,
        r: &TxRecord,
        reason: String,
    ) -> Result<(), String> {
        settlement.status = SettlementStatus::Rejected { reason };
        self.record_buy(settlement, r)
    }

    fn record_buy(&mut self, settlement: Settlement, r: &TxRecord) -> Result<(), String> {
        self.buys_by_listing
            .entry(settlement.listing_id.clone())
            .or_default()
            .push(r.tx.signature.clone());
        self.settlements.insert(r.tx.signature.clone(), settlement);
        Ok(())
    }

    /// The terms of every offer of `buyer` on `listing_id` the seller
    /// accepted (expired ones too: `verify_buy` decides which bind).
    pub fn accepted_for(&self, listing_id: &str, buyer: &str) -> Vec<NegotiatedTerms> {
        self.offers_by_listing
            .get(listing_id)
            .into_iter()
            .flatten()
            .filter_map(|id| self.offers.get(id))
            .filter(|o| {
                o.listing_id == listing_id && o.buyer == buyer && o.status == OfferStatus::Accepted
            })
            .filter_map(|o| {
                let t = o.current();
                Some(NegotiatedTerms {
                    offer_id: o.offer_id.clone(),
                    buyer: o.buyer.clone(),
                    price_lamports: t.price_lamports?,
                    expires_at: t.expires_at,
                })
            })
            .collect()
    }

    fn release(
        &mut self,
        listing_id: &str,
        envelope_id: &str,
        minted_token: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), String> {
        let listing = self.listing(listing_id)?;
        let (seller, bundle_hash) = (listing.seller.clone(), listing.bundle_hash.clone());
        if !r.tx.signed_by(&seller) {
            return Err("release not signed by the listing's seller".into());
        }
        // The signed envelope names its buy; the reference's bare
        // envelope does not, so its release settles the oldest paid buy.
        let named = match book.get(envelope_id) {
            Some(Checked::Envelope { body: v, signed_by }) => {
                if !signed_by.contains(&seller) {
                    verify_manifest_by(v, &seller).map_err(|e| format!("envelope refused: {e}"))?;
                }
                if v.get("listing_id").and_then(Value::as_str) != Some(listing_id) {
                    return Err("envelope names another listing".into());
                }
                if v.get("bundle_hash").and_then(Value::as_str) != Some(bundle_hash.as_str()) {
                    return Err("envelope names another bundle hash than the listing".into());
                }
                v.get("buy_signature")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }
            _ => None,
        };
        let target = match named {
            Some(sig) => {
                let s = self
                    .settlements
                    .get(&sig)
                    .ok_or_else(|| format!("envelope names unknown buy {sig}"))?;
                if s.listing_id != listing_id {
                    return Err("envelope's buy is of another listing".into());
                }
                if s.status != SettlementStatus::Paid {
                    return Err(format!("buy {sig} is not awaiting release"));
                }
                sig
            }
            None => self
                .settlements_of(listing_id)
                .find(|(_, s)| s.status == SettlementStatus::Paid)
                .map(|(k, _)| k.clone())
                .ok_or("no paid buy of this listing awaits release")?,
        };
        let s = self.settlements.get_mut(&target).expect("found above");
        s.status = SettlementStatus::Released {
            at: At::of(r),
            envelope_id: envelope_id.into(),
            minted_token: minted_token.into(),
        };
        Ok(())
    }

    fn cancel(&mut self, listing_id: &str, r: &TxRecord) -> Result<(), String> {
        let listing = self.listing(listing_id)?;
        if !r.tx.signed_by(&listing.seller) {
            return Err("cancel not signed by the listing's seller".into());
        }
        if listing.cancelled.is_some() {
            return Err("listing already cancelled".into());
        }
        self.listings
            .get_mut(listing_id)
            .expect("found above")
            .cancelled = Some(At::of(r));
        Ok(())
    }

    /// A settlement's status for display: `paid` turns `unreleased` once
    /// the grace period has passed without a release.
    pub fn settlement_status(&self, s: &Settlement, cfg: &FoldConfig) -> &'static str {
        match &s.status {
            SettlementStatus::Released { .. } => "released",
            SettlementStatus::Rejected { .. } => "rejected",
            SettlementStatus::Refunded { .. } => "refunded",
            SettlementStatus::Paid => match s.at.block_time {
                Some(t) if self.now - t > cfg.release_grace_secs => "unreleased",
                _ => "paid",
            },
        }
    }
}

/// The escrow program's listing account of (seller, listing id).
fn escrow_listing_account(seller: &str, listing_id: &str) -> Result<String, String> {
    let seller: node::chain::Pubkey = seller
        .parse()
        .map_err(|_| format!("seller {seller} is not a pubkey"))?;
    Ok(escrow::listing_address(&seller, listing_id).to_string())
}
