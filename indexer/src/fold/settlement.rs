//! The settlement family: `buy` and `release` memos. A buy is judged by
//! the shared settlement rules (`node::settle`: price, payee, fee, expiry,
//! signers, escrow deposits) and kept either paid or rejected with its
//! typed reason; a release settles the buy its envelope names (or the
//! oldest paid one, for the reference's bare envelope). Never judges
//! offers (see `offer`).

use super::listing::escrow_listing_account;
use super::refusal::{BuyRefusal, Refusal};
use super::{At, FoldConfig, State};
use crate::book::{Checked, ManifestBook};
use crate::record::TxRecord;
use node::bundle::verify_manifest_by;
use node::escrow;
use node::settle::{verify_buy, verify_escrow_deposit, ListingTerms};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// Where a buy stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SettlementStatus {
    /// Verified paid; awaiting the seller's release.
    Paid,
    /// The seller released.
    Released {
        /// The release transaction. (Encoded as a second `at` key beside
        /// the buy's own, as it always was; stored state renames it to
        /// read it back: `statedb::decode_settlement`.)
        #[serde(alias = "status_at")]
        at: At,
        /// Envelope id.
        envelope_id: String,
        /// Token minted to the buyer.
        minted_token: String,
    },
    /// Does not count as a buy.
    Rejected {
        /// Why.
        reason: BuyRefusal,
    },
    /// An escrow buy the seller never released: the buyer took the
    /// deposit back after the window (and the stake's share, once slashed).
    Refunded {
        /// The refund transaction (a second `at`, as for a release).
        #[serde(alias = "status_at")]
        at: At,
        /// Lamports of the seller's stake paid to the buyer (0 until slashed).
        slashed_lamports: u64,
    },
}

/// One buy transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    /// Listing.
    pub listing_id: String,
    /// Buyer (fee payer).
    pub buyer: String,
    /// Buyer's X25519 key from the memo.
    pub buyer_x25519: String,
    /// Paid to the payment address, in base units of the listing's currency
    /// (lamports for SOL).
    pub paid_lamports: u64,
    /// Price it was held to (0 when rejected before pricing).
    pub price_lamports: u64,
    /// Offer whose price applied.
    pub offer_id: Option<String>,
    /// The buy.
    pub at: At,
    /// An escrow buy whose payment reached the seller: the `claim` after
    /// the dispute window (until then, and if the buyer proves fraud or
    /// refunds, it is no sale).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed: Option<At>,
    /// The treasury's share the seller's release must carry (an x402
    /// payment where the protocol fee applies pays the seller the whole
    /// price); a release without it releases nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fee_at_release: u64,
    /// Status.
    #[serde(flatten)]
    pub status: SettlementStatus,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl State {
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
            .map(|(sig, s)| (sig, &**s))
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

    pub(super) fn buy(
        &mut self,
        listing_id: &str,
        buyer_x25519: Option<&str>,
        r: &TxRecord,
        cfg: &FoldConfig,
    ) -> Result<(), Refusal> {
        if self.settlements.contains_key(&r.tx.signature) {
            return Ok(());
        }
        let listing = self.listing(listing_id)?;
        // the buyer by the settlement rules (an x402 payment's fee payer is
        // the seller's node), else the fee payer as the claimant
        let buyer = node::settle::buyer_of(&r.tx, &listing.payment_address)
            .map(String::as_str)
            .or(r.tx.fee_payer())
            .unwrap_or_default()
            .to_string();
        // an x402 buy memo names no X25519 key: the buyer's own key's
        let buyer_x25519 = match buyer_x25519 {
            Some(x) => x.to_string(),
            None => node::settle::x25519_of(&buyer).unwrap_or_default(),
        };
        let mut settlement = Settlement {
            listing_id: listing_id.into(),
            buyer: buyer.clone(),
            buyer_x25519,
            paid_lamports: listing
                .currency
                .paid(&r.tx, &buyer, &listing.payment_address),
            price_lamports: 0,
            offer_id: None,
            at: At::of(r),
            claimed: None,
            fee_at_release: 0,
            status: SettlementStatus::Paid,
        };
        // priced at settle time: the buy's own quote prices it
        let price = match &listing.usd {
            Some(_) => Some(0),
            None => listing.price(),
        };
        let verdict = match price {
            None => Err(BuyRefusal::Unpriced),
            Some(price_lamports) => {
                let terms = ListingTerms {
                    listing_id: listing_id.into(),
                    payment_address: listing.payment_address.clone(),
                    price_lamports,
                    currency: listing.currency.clone(),
                    expires_at: listing.expires_at,
                    cancelled_at_slot: listing.cancelled.as_ref().map(|c| c.slot),
                    fee: cfg
                        .fee_treasury
                        .clone()
                        .map(|t| (t, node::chain::fees::SETTLE_FEE_BPS)),
                    usd: listing.usd.clone(),
                };
                match listing
                    .manifest
                    .get("escrow_program")
                    .and_then(Value::as_str)
                {
                    None => {
                        let negotiated = self.accepted_for(listing_id, &buyer);
                        verify_buy(&r.tx, &terms, &negotiated).map_err(BuyRefusal::from)
                    }
                    Some(escrow::PROGRAM_ID) => {
                        let account = escrow_listing_account(&listing.seller, listing_id)?;
                        verify_escrow_deposit(&r.tx, &terms, &account)
                            .inspect(|v| settlement.paid_lamports = v.paid_lamports)
                            .map_err(BuyRefusal::from)
                    }
                    Some(other) => Err(BuyRefusal::ForeignEscrow {
                        program: other.into(),
                    }),
                }
            }
        };
        match verdict {
            Ok(v) => {
                settlement.price_lamports = v.price_lamports;
                settlement.offer_id = v.offer_id;
                settlement.fee_at_release = v.fee_at_release;
            }
            Err(reason) => settlement.status = SettlementStatus::Rejected { reason },
        }
        self.buys_by_listing
            .entry(settlement.listing_id.clone())
            .or_default()
            .push_back(r.tx.signature.clone());
        self.settlements
            .insert(r.tx.signature.clone(), Arc::new(settlement));
        Ok(())
    }

    pub(super) fn release(
        &mut self,
        listing_id: &str,
        envelope_id: &str,
        minted_token: &str,
        r: &TxRecord,
        book: &ManifestBook,
        cfg: &FoldConfig,
    ) -> Result<(), Refusal> {
        let listing = self.listing(listing_id)?;
        let (seller, bundle_hash) = (listing.seller.clone(), listing.bundle_hash.clone());
        if !r.tx.signed_by(&seller) {
            return Err(Refusal::ReleaseNotSignedBySeller);
        }
        // an escrow listing's buy is released by the program's reveal (its
        // event, folded before this transaction's memos); the memo beside
        // it is the seller's note, and a memo alone releases nothing
        if listing
            .manifest
            .get("escrow_program")
            .is_some_and(|p| !p.is_null())
        {
            let revealed_here = self.settlements_of(listing_id).any(|(_, s)| {
                matches!(&s.status, SettlementStatus::Released { at, .. } if at.signature == r.tx.signature)
            });
            return match revealed_here {
                true => Ok(()),
                false => Err(Refusal::EscrowReleasedInProgram),
            };
        }
        // The signed envelope names its buy; the reference's bare
        // envelope does not, so its release settles the oldest paid buy.
        let named = match book.get(envelope_id) {
            Some(Checked::Envelope { body: v, signed_by }) => {
                if !signed_by.contains(&seller) {
                    verify_manifest_by(v, &seller)
                        .map_err(|e| Refusal::EnvelopeRefused { why: e.to_string() })?;
                }
                if v.get("listing_id").and_then(Value::as_str) != Some(listing_id) {
                    return Err(Refusal::EnvelopeOtherListing);
                }
                if v.get("bundle_hash").and_then(Value::as_str) != Some(bundle_hash.as_str()) {
                    return Err(Refusal::EnvelopeOtherBundle);
                }
                v.get("buy_signature")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }
            _ => None,
        };
        let target = match named {
            Some(signature) => {
                let s = self.settlements.get(&signature).ok_or_else(|| {
                    Refusal::EnvelopeUnknownBuy {
                        signature: signature.clone(),
                    }
                })?;
                if s.listing_id != listing_id {
                    return Err(Refusal::EnvelopeBuyOtherListing);
                }
                if s.status != SettlementStatus::Paid {
                    return Err(Refusal::BuyNotAwaitingRelease { signature });
                }
                signature
            }
            None => self
                .settlements_of(listing_id)
                .find(|(_, s)| s.status == SettlementStatus::Paid)
                .map(|(k, _)| k.clone())
                .ok_or(Refusal::NoPaidBuy)?,
        };
        let due = self.settlements[&target].fee_at_release;
        if due > 0 {
            let paid = match &cfg.fee_treasury {
                Some(treasury) => {
                    node::settle::fee_paid_at_release(&r.tx, &listing.currency, &seller, treasury)
                }
                None => 0,
            };
            if paid < due {
                return Err(Refusal::FeeUnpaidAtRelease {
                    signature: target,
                    due,
                    paid,
                });
            }
        }
        let s = Arc::make_mut(self.settlements.get_mut(&target).expect("found above"));
        s.status = SettlementStatus::Released {
            at: At::of(r),
            envelope_id: envelope_id.into(),
            minted_token: minted_token.into(),
        };
        Ok(())
    }
}
