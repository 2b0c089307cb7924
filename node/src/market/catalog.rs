//! The seller's catalog for `listen`: listings recorded by `list`, with
//! their keys from the keys dir.

use crate::keys::KeyDir;
use crate::listen::pass::Catalog;
use crate::listen::release::Goods;
use crate::listen::{ListenDb, ListingRecord, ListingTerms, NegotiatedTerms, StateError};
use crate::mint::token2022::NftSpec;

/// Listings plus keys, loaded once per pass.
pub struct DbCatalog {
    entries: Vec<(ListingRecord, [u8; 32])>,
}

impl DbCatalog {
    /// Loads every recorded listing whose key is present (others are
    /// skipped with a warning: they cannot be released).
    pub fn load(db: &ListenDb, keys: &KeyDir) -> Result<DbCatalog, StateError> {
        let mut entries = Vec::new();
        for l in db.listings()? {
            match keys.load_for_listing(&l.listing_id) {
                Ok((_, key)) => entries.push((l, *key)),
                Err(e) => {
                    tracing::warn!(listing = %l.listing_id, error = %e, "no key for listing; buys of it cannot be released")
                }
            }
        }
        Ok(DbCatalog { entries })
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
            expires_at: l.expires_at,
            cancelled_at_slot: l.cancelled_at_slot,
            fee: None,
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
        })
    }

    fn negotiated(&self, _: &str, _: &str) -> Option<NegotiatedTerms> {
        None
    }
}
