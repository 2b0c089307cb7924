//! Marketplace actions. Today: the memo grammar shared by the trade
//! commands, the `listen` daemon and the indexer, the signed manifests
//! (listing, offer, counter) and the release envelope.

#[cfg(feature = "chain")]
pub mod buy;
#[cfg(feature = "chain")]
pub mod catalog;
pub mod envelope;
#[cfg(feature = "chain")]
pub mod escrow_trade;
#[cfg(feature = "chain")]
pub mod list;
pub mod manifest;
pub mod memo;
#[cfg(feature = "chain")]
pub mod negotiate;
#[cfg(feature = "chain")]
pub mod status;
#[cfg(feature = "chain")]
pub mod tx;

pub use memo::{is_arweave_id, is_listing_id, is_offer_id, is_pubkey, MemoError, MemoOp};
