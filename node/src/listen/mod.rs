//! The settlement daemon: the seller's catalog ([`catalog`]), the deposits
//! the escrow program holds ([`deposits`]), one pass over a payment
//! address ([`pass`]), releasing ([`release`]) with the journal of releases in flight
//! ([`journal`]), wake-ups ([`wake`]) and the
//! service loop that runs them until shut down ([`daemon`]).
//!
//! It applies the settlement rules of [`crate::settle`] (shared with the
//! indexer) and advances each buy in the seller's state
//! ([`crate::seller`]); both are re-exported here for its callers.

pub mod catalog;
pub mod daemon;
pub mod deposits;
pub mod journal;
pub mod pass;
pub mod release;
pub mod tables;
pub mod wake;

pub use crate::seller::{BuyRow, BuyState, ListenDb, ListingRecord, OfferRecord, StateError, Step};

pub use crate::settle::{
    binding_price, verify_buy, verify_escrow_buy, verify_escrow_deposit, ListingTerms,
    NegotiatedTerms, Rejection, VerifiedBuy,
};
