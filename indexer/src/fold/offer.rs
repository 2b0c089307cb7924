//! The offer family: `offer`, `counter`, `accept`, `reject` and
//! `withdraw` memos, an offer's lineage of terms, and which accepted
//! terms a buyer may pay. Never judges a payment (see `settlement`).

use super::listing::expect_manifest;
use super::refusal::{ManifestKind, Party, Refusal};
use super::{At, State};
use crate::book::{Checked, ManifestBook};
use crate::record::TxRecord;
use node::settle::NegotiatedTerms;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// Terms of an offer or counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Terms {
    /// Who signed these terms.
    pub from: String,
    /// Arweave id of the manifest.
    pub manifest_id: String,
    /// Price (USD).
    pub price_usd: f64,
    /// Price (lamports), when fixed, on a listing that settles in SOL.
    pub price_lamports: Option<u64>,
    /// Price (base units of the listing's token), when fixed, on a
    /// listing that settles in a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_units: Option<u64>,
    /// Expiry (unix seconds).
    pub expires_at: i64,
    /// The memo's transaction.
    pub at: At,
    /// The signed manifest.
    pub manifest: Arc<Value>,
}

/// Where an offer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

impl State {
    pub(super) fn offer(
        &mut self,
        listing_id: &str,
        manifest_id: &str,
        buyer: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), Refusal> {
        if !r.tx.signed_by(buyer) {
            return Err(Refusal::OfferNotSignedByBuyer);
        }
        let listing = self.listing(listing_id)?;
        listing.live_at(r.tx.block_time)?;
        if listing.seller == buyer {
            return Err(Refusal::OwnListing);
        }
        let currency = listing.currency.clone();
        let o = expect_manifest(book, manifest_id, ManifestKind::Offer, |c| match c {
            Checked::Offer(o) => Some(o),
            _ => None,
        })?;
        if o.listing_id.as_deref() != Some(listing_id) || o.from_pubkey != buyer {
            return Err(Refusal::OfferManifestMismatch);
        }
        if self.offers.contains_key(&o.offer_id) {
            return Err(Refusal::OfferExists {
                offer_id: o.offer_id.clone(),
            });
        }
        self.offers_by_listing
            .entry(listing_id.to_string())
            .or_default()
            .insert(o.offer_id.clone());
        self.offers.insert(
            o.offer_id.clone(),
            Arc::new(OfferState {
                offer_id: o.offer_id.clone(),
                listing_id: listing_id.into(),
                buyer: buyer.into(),
                buyer_x25519: o.buyer_x25519.clone(),
                status: OfferStatus::Open,
                terms: vec![Terms {
                    from: buyer.into(),
                    manifest_id: manifest_id.into(),
                    price_usd: o.price_usd,
                    price_lamports: lamports_in(o, &currency),
                    price_units: units_in(o, &currency),
                    expires_at: o.expires_at,
                    at: At::of(r),
                    manifest: o.raw.clone(),
                }],
                closed: None,
            }),
        );
        Ok(())
    }

    /// The offer and its listing's seller and currency, if the offer can
    /// still be negotiated at `r`.
    fn negotiable(
        &self,
        offer_id: &str,
        r: &TxRecord,
    ) -> Result<(&OfferState, String, node::settle::Currency), Refusal> {
        let offer = self
            .offers
            .get(offer_id)
            .ok_or_else(|| Refusal::UnknownOffer {
                offer_id: offer_id.into(),
            })?;
        if !offer.status.negotiable() {
            return Err(Refusal::OfferClosed {
                offer_id: offer_id.into(),
                status: offer.status,
            });
        }
        let listing = self.listing(&offer.listing_id)?;
        listing.live_at(r.tx.block_time)?;
        let t = r.tx.block_time.unwrap_or(i64::MAX);
        if t >= offer.current().expires_at {
            return Err(Refusal::OfferTermsExpired {
                offer_id: offer_id.into(),
                expires_at: offer.current().expires_at,
            });
        }
        Ok((offer, listing.seller.clone(), listing.currency.clone()))
    }

    pub(super) fn counter(
        &mut self,
        offer_id: &str,
        manifest_id: &str,
        counterer: &str,
        r: &TxRecord,
        book: &ManifestBook,
    ) -> Result<(), Refusal> {
        if !r.tx.signed_by(counterer) {
            return Err(Refusal::CounterNotSignedByCounterer);
        }
        let (offer, seller, currency) = self.negotiable(offer_id, r)?;
        if counterer != seller && counterer != offer.buyer {
            return Err(Refusal::CounterNotParty);
        }
        let c = expect_manifest(book, manifest_id, ManifestKind::Counter, |c| match c {
            Checked::Counter(c) => Some(c),
            _ => None,
        })?;
        if c.offer_id != offer_id || c.from_pubkey != counterer {
            return Err(Refusal::CounterManifestMismatch);
        }
        let offer = Arc::make_mut(self.offers.get_mut(offer_id).expect("checked above"));
        offer.status = OfferStatus::Countered;
        offer.terms.push(Terms {
            from: counterer.into(),
            manifest_id: manifest_id.into(),
            price_usd: c.price_usd,
            price_lamports: lamports_in(c, &currency),
            price_units: units_in(c, &currency),
            expires_at: c.expires_at,
            at: At::of(r),
            manifest: c.raw.clone(),
        });
        Ok(())
    }

    /// Accept, reject (the seller) or withdraw (the buyer) an offer.
    pub(super) fn close_offer(
        &mut self,
        offer_id: &str,
        to: OfferStatus,
        r: &TxRecord,
    ) -> Result<(), Refusal> {
        let (offer, seller, _) = self.negotiable(offer_id, r)?;
        let (who, party) = match to {
            OfferStatus::Withdrawn => (offer.buyer.clone(), Party::Buyer),
            _ => (seller, Party::Seller),
        };
        if !r.tx.signed_by(&who) {
            return Err(Refusal::NotSignedBy(party));
        }
        let offer = Arc::make_mut(self.offers.get_mut(offer_id).expect("checked above"));
        offer.status = to;
        offer.closed = Some(At::of(r));
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
                    price_lamports: t.price_lamports.or(t.price_units)?,
                    expires_at: t.expires_at,
                })
            })
            .collect()
    }
}

/// The lamports `terms` fix on a listing settling in `currency` (SOL
/// listings only; the state's shape for SOL is the one it always had).
fn lamports_in(
    terms: &node::market::manifest::Offer,
    currency: &node::settle::Currency,
) -> Option<u64> {
    match currency {
        node::settle::Currency::Sol => terms.price_in(currency),
        node::settle::Currency::Token { .. } => None,
    }
}

/// The token base units `terms` fix on a listing settling in the token
/// `currency` (`None` on a SOL listing, or in another mint).
fn units_in(
    terms: &node::market::manifest::Offer,
    currency: &node::settle::Currency,
) -> Option<u64> {
    match currency {
        node::settle::Currency::Sol => None,
        node::settle::Currency::Token { .. } => terms.price_in(currency),
    }
}
