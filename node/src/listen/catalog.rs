//! The seller's catalog for `listen`: listings recorded by `list` in the
//! seller's state, with their keys from the keys dir (implements
//! [`super::pass::Catalog`]).

use super::pass::{BelowCost, Catalog};
use super::release::Goods;
use crate::keys::KeyDir;
use crate::mint::bundle_mint::TokenStandard;
use crate::mint::receipt::ReceiptMode;
use crate::mint::token2022::NftSpec;
use crate::seller::{ListenDb, ListingRecord, StateError};
use crate::settle::{ListingTerms, NegotiatedTerms};

/// Listings plus keys, loaded once per pass.
pub struct DbCatalog {
    entries: Vec<(ListingRecord, [u8; 32])>,
    fee: Option<(String, u64)>,
    accepted: Vec<NegotiatedTerms>,
    accepted_listing: Vec<String>,
    standard: TokenStandard,
    receipt: ReceiptMode,
    below_cost: Option<BelowCost>,
}

impl DbCatalog {
    /// Loads every recorded listing whose key is present (others are
    /// skipped with a warning: they cannot be released), and every escrow
    /// listing with or without its key file: a reveal needs no blob key
    /// (k is derived again from the wallet), so a lost key file never
    /// leaves a deposit unanswered and its seller slashed.
    /// `fee` is the protocol fee in force on this cluster (treasury,
    /// fee_bps), `None` off mainnet.
    pub fn load(
        db: &ListenDb,
        keys: &KeyDir,
        fee: Option<(String, u64)>,
    ) -> Result<DbCatalog, StateError> {
        let mut entries = Vec::new();
        for l in db.listings()? {
            match keys.load_for_listing(&l.listing_id) {
                Ok((_, key)) => entries.push((l, *key)),
                Err(e) if l.escrow => {
                    tracing::info!(listing = %l.listing_id, error = %e, "no key file for an escrow listing: its deposits are answered from the wallet alone");
                    entries.push((l, [0; 32]))
                }
                Err(e) => {
                    tracing::warn!(listing = %l.listing_id, error = %e, "no key for listing; buys of it cannot be released")
                }
            }
        }
        let (mut accepted, mut accepted_listing) = (Vec::new(), Vec::new());
        for o in db.accepted_offers()? {
            accepted.push(NegotiatedTerms {
                offer_id: o.offer_id,
                buyer: o.buyer,
                price_lamports: o.price_lamports,
                expires_at: o.expires_at,
            });
            accepted_listing.push(o.listing_id);
        }
        Ok(DbCatalog {
            entries,
            fee,
            accepted,
            accepted_listing,
            standard: TokenStandard::LightCompressed,
            receipt: ReceiptMode::default(),
            below_cost: None,
        })
    }

    /// Releases mint tokens of `standard` (default: Light compressed).
    pub fn with_standard(mut self, standard: TokenStandard) -> DbCatalog {
        self.standard = standard;
        self
    }

    /// Releases carry receipts of `mode` (default: a unit of the listing's mint).
    pub fn with_receipt(mut self, mode: ReceiptMode) -> DbCatalog {
        self.receipt = mode;
        self
    }

    /// Releases buys paying under a release's cost within `budget`.
    pub fn with_below_cost(mut self, budget: Option<BelowCost>) -> DbCatalog {
        self.below_cost = budget;
        self
    }

    fn find(&self, id: &str) -> Option<&(ListingRecord, [u8; 32])> {
        self.entries.iter().find(|(l, _)| l.listing_id == id)
    }

    /// How many listings are loaded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Catalog for DbCatalog {
    fn terms(&self, id: &str) -> Option<ListingTerms> {
        self.find(id).map(|(l, _)| ListingTerms {
            listing_id: l.listing_id.clone(),
            payment_address: l.payment_address.clone(),
            price_lamports: l.price_lamports,
            currency: l.currency.clone(),
            expires_at: l.expires_at,
            cancelled_at_slot: l.cancelled_at_slot,
            fee: self.fee.clone(),
            usd: l.usd.clone(),
        })
    }

    fn goods(&self, id: &str) -> Option<Goods<'_>> {
        self.find(id).map(|(l, key)| Goods {
            bundle_hash: &l.bundle_hash,
            key,
            token: NftSpec {
                name: format!("brainctl bundle {}", &l.bundle_hash[..12]),
                symbol: crate::mint::bundle_mint::SYMBOL.into(),
                uri: l.metadata_uri.clone(),
            },
            standard: self.standard,
            receipt: self.receipt,
            escrow: l.escrow,
            fee_to: match (&self.fee, &l.currency) {
                (Some((treasury, _)), crate::settle::Currency::Token { mint }) => {
                    Some((treasury.clone(), mint.clone()))
                }
                _ => None,
            },
        })
    }

    fn negotiated(&self, listing_id: &str, buyer: &str) -> Vec<NegotiatedTerms> {
        self.accepted
            .iter()
            .zip(&self.accepted_listing)
            .filter(|(o, l)| *l == listing_id && o.buyer == buyer)
            .map(|(o, _)| o.clone())
            .collect()
    }

    fn below_cost(&self) -> Option<BelowCost> {
        self.below_cost
    }

    fn escrow_listings(&self, payment_address: &str) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(l, _)| l.escrow && l.payment_address == payment_address)
            .map(|(l, _)| l.listing_id.clone())
            .collect()
    }
}
