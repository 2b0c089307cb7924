//! The listing family: `list` and `cancel` memos, a listing's lifecycle
//! (live, cancelled, expired, contested) and the squat rule (a listing id
//! names the first seller's listing). Never judges offers or buys.

use super::refusal::{ManifestKind, Refusal};
use super::{At, State};
use crate::book::{Checked, ManifestBook};
use crate::record::TxRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Price (lamports), when the manifest fixes one (never for a listing
    /// that settles in a token).
    pub price_lamports: Option<u64>,
    /// What the listing settles in (the manifest's `settlement`: SOL when
    /// absent). Left out of the state's encoding for SOL, so a market of
    /// SOL listings hashes as before tokens existed.
    #[serde(default, skip_serializing_if = "node::settle::Currency::is_sol")]
    pub currency: node::settle::Currency,
    /// A token listing's price in base units of its mint (`None` for SOL:
    /// the price is `price_lamports`; see [`ListingState::price`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_units: Option<u64>,
    /// Priced in USD at settle time (the manifest's `usd_at_settle`): each
    /// buy's own `quote_usd` fixes its lamports (no `price_lamports`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<node::settle::UsdTerms>,
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contested_by: Vec<String>,
}

impl ListingState {
    /// The price in base units of the listing's currency (lamports for
    /// SOL), when the manifest fixes one.
    pub fn price(&self) -> Option<u64> {
        self.price_units.or(self.price_lamports)
    }

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

    /// Whether offers and counters may still be made at `block_time`.
    pub(super) fn live_at(&self, block_time: Option<i64>) -> Result<(), Refusal> {
        if let Some(c) = &self.cancelled {
            return Err(Refusal::ListingCancelled { slot: c.slot });
        }
        match block_time {
            Some(t) if t >= self.expires_at => Err(Refusal::ListingExpired {
                expires_at: self.expires_at,
                block_time: t,
            }),
            None => Err(Refusal::NoBlockTime),
            Some(_) => Ok(()),
        }
    }
}

/// The checked manifest `id` as the kind `kind` expects, or why not.
pub(super) fn expect_manifest<'b, T>(
    book: &'b ManifestBook,
    id: &str,
    kind: ManifestKind,
    pick: impl FnOnce(&'b Checked) -> Option<T>,
) -> Result<T, Refusal> {
    let checked = book.get(id).ok_or_else(|| Refusal::ManifestUnavailable {
        kind,
        manifest_id: id.into(),
    })?;
    if let Checked::Invalid(why) = checked {
        return Err(Refusal::ManifestRefused {
            kind,
            why: why.clone(),
        });
    }
    pick(checked).ok_or_else(|| Refusal::WrongManifestKind {
        kind,
        manifest_id: id.into(),
    })
}

impl State {
    pub(super) fn list(
        &mut self,
        manifest_id: &str,
        bundle_hash: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), Refusal> {
        let l = expect_manifest(book, manifest_id, ManifestKind::Listing, |c| match c {
            Checked::Listing(l) => Some(l),
            _ => None,
        })?;
        if l.bundle_hash != bundle_hash {
            return Err(Refusal::BundleHashDiffers);
        }
        if !r.tx.signed_by(&l.seller_pubkey) {
            return Err(Refusal::ListNotSignedBySeller);
        }
        if let Some(first) = self.listings.get_mut(&l.listing_id).map(Arc::make_mut) {
            if first.seller == l.seller_pubkey {
                return Err(Refusal::ListingExists {
                    listing_id: l.listing_id.clone(),
                });
            }
            if !first.contested_by.contains(&l.seller_pubkey) {
                first.contested_by.push(l.seller_pubkey.clone());
            }
            return Err(Refusal::Contested {
                listing_id: l.listing_id.clone(),
                first_seller: first.seller.clone(),
            });
        }
        // an escrow listing's program account (its events name it)
        let escrow_account = match l.escrow_program {
            Some(_) => Some(escrow_listing_account(&l.seller_pubkey, &l.listing_id)?),
            None => None,
        };
        self.listings.insert(
            l.listing_id.clone(),
            Arc::new(ListingState {
                listing_id: l.listing_id.clone(),
                manifest_id: manifest_id.into(),
                seller: l.seller_pubkey.clone(),
                payment_address: l.payment_address.clone(),
                bundle_hash: l.bundle_hash.clone(),
                price_usd: l.price_usd,
                price_lamports: l.price_lamports,
                currency: l.currency(),
                price_units: l.settlement.map(|t| t.price_units),
                usd: l.usd_at_settle.as_ref().map(|u| u.terms(l.price_usd)),
                fee_bps: l.fee_bps,
                visibility: l.visibility.clone(),
                expires_at: l.expires_at,
                listed: At::of(r),
                cancelled: None,
                manifest: l.raw.clone(),
                contested_by: Vec::new(),
            }),
        );
        if let Some(account) = escrow_account {
            self.escrow_listings.insert(account, l.listing_id.clone());
        }
        Ok(())
    }

    /// The listing `id`, or why it cannot be acted on.
    pub(super) fn listing(&self, id: &str) -> Result<&ListingState, Refusal> {
        self.listings
            .get(id)
            .map(|l| &**l)
            .ok_or_else(|| Refusal::UnknownListing {
                listing_id: id.into(),
            })
    }

    pub(super) fn cancel(&mut self, listing_id: &str, r: &TxRecord) -> Result<(), Refusal> {
        let listing = self.listing(listing_id)?;
        if !r.tx.signed_by(&listing.seller) {
            return Err(Refusal::CancelNotSignedBySeller);
        }
        if listing.cancelled.is_some() {
            return Err(Refusal::AlreadyCancelled);
        }
        Arc::make_mut(self.listings.get_mut(listing_id).expect("found above")).cancelled =
            Some(At::of(r));
        Ok(())
    }
}

impl ListingState {
    /// Whether the listing settles through the escrow program (its
    /// manifest names one).
    pub fn is_escrow(&self) -> bool {
        self.manifest
            .get("escrow_program")
            .is_some_and(|p| !p.is_null())
    }
}

/// The escrow program's listing account of (seller, listing id).
pub fn escrow_listing_account(seller: &str, listing_id: &str) -> Result<String, Refusal> {
    let seller_key: node::chain::Pubkey = seller.parse().map_err(|_| Refusal::SellerNotPubkey {
        seller: seller.into(),
    })?;
    Ok(node::escrow::listing_address(&seller_key, listing_id).to_string())
}
