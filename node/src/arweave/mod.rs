//! Arweave storage: ANS-104 data items (Solana-signed, type 2) with Avro
//! tags and deep-hash signatures. Uploaders and verified downloads build on
//! these (storage issue).
//!
//! Owns the item bytes; never trusts a gateway: callers verify what they
//! fetch against what they expect.

pub mod deep_hash;
pub mod item;
pub mod tags;

pub use item::{DataItem, ItemError};
pub use tags::Tag;
