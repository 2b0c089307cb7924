//! The settlement daemon: the buy verification rules ([`verify`]), the
//! durable per-buy state machine ([`state`]), the deposits the escrow
//! program holds ([`deposits`]), one pass over a payment address ([`pass`]), releasing ([`release`]), wake-ups ([`wake`]) and the
//! service loop that runs them until shut down ([`daemon`]).

pub mod daemon;
pub mod deposits;
pub mod fault;
pub mod pass;
pub mod release;
pub mod state;
pub mod verify;
pub mod wake;

pub use state::{BuyRow, ListenDb, ListingRecord, OfferRecord, StateError, Step};

pub use verify::{
    binding_price, verify_buy, verify_escrow_buy, verify_escrow_deposit, ListingTerms,
    NegotiatedTerms, Rejection, VerifiedBuy,
};
