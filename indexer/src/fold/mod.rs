//! Marketplace state as a pure fold of recorded transactions in chain
//! order (slot, then index in block), applying the protocol's rules
//! (PROTOCOL.md §6, DESIGN.md §Settlement): who may do what, expiry by
//! block time, offer lineage, the listing lifecycle and settlements.
//!
//! Same records in the same order give the same [`State`], byte for byte
//! ([`State::hash`]). Nothing here touches the network, the disk or the
//! clock: "now" is the newest block time folded. Every memo that does not
//! count is kept with its typed reason ([`Refusal`]); nothing panics on
//! hostile input.
//!
//! # Layout
//! - `listing`: `list`/`cancel`, the lifecycle, the squat rule
//! - `offer`: `offer`/`counter`/`accept`/`reject`/`withdraw`, lineage
//! - `settlement`: `buy`/`release`, judged by `node::settle`
//! - `escrow`: the escrow program's events and the buys they settle
//! - `refusal`: why a memo or a buy does not count
//! - here: the state, the order rules, dispatch and the state hash

mod escrow;
mod listing;
mod offer;
mod overlay;
mod refusal;
mod settlement;
mod working;

pub use escrow::EscrowState;
pub use listing::escrow_listing_account;
pub use listing::ListingState;
pub use offer::{OfferState, OfferStatus, Terms};
pub use overlay::Overlay;
pub use refusal::{BuyRefusal, ManifestKind, Party, Refusal};
pub use settlement::{Settlement, SettlementStatus};
pub use working::{Changes, Head, Keys, Rows};

use crate::book::ManifestBook;
use crate::record::{Position, TxRecord};
use imbl::{HashMap, OrdMap, OrdSet};
use node::market::{MemoError, MemoOp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct At {
    /// Transaction signature.
    pub signature: String,
    /// Slot.
    pub slot: u64,
    /// Block time (unix seconds), when known.
    pub block_time: Option<i64>,
}

impl At {
    pub(crate) fn of(r: &TxRecord) -> At {
        At {
            signature: r.tx.signature.clone(),
            slot: r.tx.slot,
            block_time: r.tx.block_time,
        }
    }
}

/// A marketplace memo that changed nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected {
    /// Slot.
    pub slot: u64,
    /// The memo (truncated).
    pub memo: String,
    /// Why it does not count (serialized as its message).
    pub reason: Refusal,
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
    /// Listings by id (shared: a path copy of the map clones pointers).
    pub listings: OrdMap<String, Arc<ListingState>>,
    /// Offers by id.
    pub offers: OrdMap<String, Arc<OfferState>>,
    /// Buys by transaction signature.
    pub settlements: OrdMap<String, Arc<Settlement>>,
    /// Refused memos by transaction signature.
    pub rejected: OrdMap<String, Vec<Rejected>>,
    /// Escrow-program deposits by escrow account (from its events).
    #[serde(skip_serializing_if = "OrdMap::is_empty")]
    pub escrows: OrdMap<String, EscrowState>,
    /// Where each folded transaction sits (what a moved or removed record
    /// invalidates).
    #[serde(skip)]
    seen: HashMap<String, Position>,
    /// Buy signatures by listing (an index over `settlements`).
    #[serde(skip)]
    buys_by_listing: OrdMap<String, imbl::Vector<String>>,
    /// Offer ids by listing (an index over `offers`: a buy looks up its
    /// listing's accepted offers without scanning every offer).
    #[serde(skip)]
    offers_by_listing: OrdMap<String, OrdSet<String>>,
    /// Listing ids by their escrow-program account (an index over the
    /// escrow listings: an escrow event finds its buy without deriving
    /// every listing's account).
    #[serde(skip)]
    escrow_listings: OrdMap<String, String>,
    /// The chain's clock, as the indexer serving this state last read it.
    #[serde(skip)]
    pub clock: std::sync::Arc<crate::clock::ChainClock>,
    /// The whole market's counts, where this state holds only part of it
    /// (read from tables for one answer: [`State::totals`]).
    #[serde(skip)]
    pub totals: Option<Totals>,
}

/// How many of each entity the whole market holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Listings.
    pub listings: u64,
    /// Offers.
    pub offers: u64,
    /// Buys.
    pub settlements: u64,
    /// Transactions with refused memos.
    pub rejected: u64,
}

impl State {
    /// The escrow listing whose program account is `account`, if folded.
    pub fn escrow_listing_id(&self, account: &str) -> Option<&str> {
        self.escrow_listings.get(account).map(String::as_str)
    }

    /// The whole market's counts (this state's own where it holds all).
    pub fn totals(&self) -> Totals {
        self.totals.unwrap_or(Totals {
            listings: self.listings.len() as u64,
            offers: self.offers.len() as u64,
            settlements: self.settlements.len() as u64,
            rejected: self.rejected.len() as u64,
        })
    }

    /// "Now" for views: the chain's clock where the indexer reads one,
    /// never before the newest block folded.
    pub fn view_now(&self) -> i64 {
        self.clock.now().map_or(self.now, |t| t.max(self.now))
    }
}

/// Feeds serde_json's output straight into the hasher (no buffer).
pub(crate) struct HashWriter<'a>(pub(crate) &'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
            s.apply_one(r, book, cfg);
        }
        s
    }

    /// Whether the transaction `signature` has been folded.
    pub fn has_folded(&self, signature: &str) -> bool {
        self.seen.contains_key(signature)
    }

    /// Where the folded transaction `signature` sits.
    pub fn folded_at(&self, signature: &str) -> Option<Position> {
        self.seen.get(signature).copied()
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

    /// Folds one record; the caller keeps chain order (a record already
    /// folded is skipped).
    pub fn apply_one(&mut self, r: &TxRecord, book: &ManifestBook, cfg: &FoldConfig) {
        if self
            .seen
            .insert(r.tx.signature.clone(), r.position())
            .is_some()
        {
            return;
        }
        self.transactions += 1;
        self.last = Some(r.position());
        if let Some(t) = r.tx.block_time {
            self.now = self.now.max(t);
        }
        if r.tx.succeeded {
            for ev in node::escrow::events_in(&r.tx) {
                self.apply_escrow(ev, r);
            }
        }
        for memo in &r.tx.memos {
            let outcome = match MemoOp::parse(memo) {
                // an x402 payment's compact buy memo
                Err(MemoError::NotMarketplace) if r.tx.succeeded => {
                    match node::memo::x402_buy_listing(memo) {
                        Some(listing_id) => self.buy(listing_id, None, r, cfg),
                        None => continue,
                    }
                }
                Err(MemoError::NotMarketplace) => continue,
                Err(e) => Err(Refusal::Malformed(e)),
                Ok(_) if !r.tx.succeeded => Err(Refusal::TxFailed),
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

    fn apply_op(
        &mut self,
        op: &MemoOp,
        r: &TxRecord,
        book: &ManifestBook,
        cfg: &FoldConfig,
    ) -> Result<(), Refusal> {
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
            } => self.buy(listing_id, Some(buyer_x25519), r, cfg),
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
                cfg,
            ),
            MemoOp::Cancel { listing_id } => self.cancel(listing_id, r),
        }
    }
}
