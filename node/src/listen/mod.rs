//! The settlement daemon's parts. Today: the buy verification rules
//! ([`verify`]). The durable per-buy state machine and the daemon loop
//! build on it with the trade issue.

pub mod verify;

pub use verify::{verify_buy, ListingTerms, NegotiatedTerms, Rejection, VerifiedBuy};
