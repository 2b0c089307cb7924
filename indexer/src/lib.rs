//! brainctl indexer: rebuilds listings, offers and settlements from chain
//! memos alone (ingest → decode → fold) and serves them over HTTP.
//!
//! The ingest, fold and API land with the indexer issue; this crate holds
//! no keys and never signs.
#![deny(missing_docs)]

/// Version of the indexer's state encoding.
pub const STATE_VERSION: u32 = 1;
