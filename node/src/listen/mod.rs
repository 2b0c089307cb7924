//! The settlement daemon's parts. Today: the buy verification rules
//! ([`verify`]) and the durable per-buy state machine ([`state`]). The
//! daemon loop (backfill, wake-ups, release) builds on them with the trade.

pub mod fault;
pub mod pass;
pub mod release;
pub mod state;
pub mod verify;
pub mod wake;

pub use state::{BuyRow, ListenDb, ListingRecord, OfferRecord, StateError, Step};

pub use verify::{
    verify_buy, verify_escrow_buy, verify_escrow_deposit, ListingTerms, NegotiatedTerms, Rejection,
    VerifiedBuy,
};
