//! The trade as its participants drive it: the signed manifests
//! ([`manifest`]: listing, offer, counter) and the release [`envelope`];
//! the seller's `list` and `cancel` ([`list`]), negotiation
//! ([`negotiate`]), the buyer's plan, pay and fetch ([`buy`]), escrow plans
//! checked against the program's accounts ([`escrow_trade`]), the
//! program operator's `initialize_config` ([`escrow_admin`]), transaction
//! builders ([`tx`]), the chain's view of a listing ([`status`]) and a
//! listing's USD at settle time as clients quote it ([`usd_price`]).
//!
//! Never judges a buy (that is [`crate::settle`]'s) and never runs a loop
//! (that is the seller's daemon, `listen`). The memo grammar lives in
//! [`crate::memo`] and is re-exported here.

#[cfg(feature = "chain")]
pub mod buy;
pub mod envelope;
#[cfg(feature = "chain")]
pub mod escrow_admin;
#[cfg(feature = "chain")]
pub mod escrow_trade;
#[cfg(feature = "chain")]
pub mod list;
pub mod manifest;
pub mod pending;
pub use crate::memo;
#[cfg(feature = "chain")]
pub mod negotiate;
#[cfg(feature = "chain")]
pub mod status;
#[cfg(feature = "chain")]
pub mod tx;
#[cfg(feature = "chain")]
pub mod usd_price;

pub use crate::memo::{is_arweave_id, is_listing_id, is_offer_id, is_pubkey, MemoError, MemoOp};
