//! brainctl indexer: rebuilds every listing, offer and settlement from
//! chain memos alone (ingest → record → fold) and serves them over HTTP.
//!
//! - [`record`]: one transaction as logged (chain facts + manifest bodies)
//! - [`book`]: manifests verified once, in parallel
//! - [`fold`]: the pure state fold and its hash
//! - [`store`]: the durable log behind a narrow trait (SQLite or Postgres)
//! - [`engine`]: log and state kept in step
//! - [`statedb`]: the folded state as tables (SQLite or Postgres), kept
//!   up with the log in bounded memory
//! - [`ingest`]: RPC polling, checkpoints, finality
//! - [`logfile`]: JSONL export/replay of the log
//! - [`loadtest`]: the benchmarks (run by the dev binary `brainctl-indexer-bench`)
//! - [`synth`]: synthetic logs for tests and benchmarks (deterministic but
//!   for the releases' sealed envelopes)
//! - [`clock`]: the chain's clock as last read (views judge expiry by it)
//! - [`auth`], [`views`], [`api`]: the HTTP surface
//! - [`explorer`]: the web explorer (HTML for people) at `/`
//! - [`position`]: the log position each answer names (a header)
//! - [`http`]: the API and the explorer on one router, served
//! - [`service`]: the writer and replica loops with their shutdown futures
//!
//! It holds no keys, never signs and never custodies funds.
#![deny(missing_docs)]

pub mod api;
pub mod auth;
pub mod book;
pub mod clock;
pub mod engine;
pub mod explorer;
pub mod fold;
pub mod http;
pub mod ingest;
pub mod loadtest;
pub mod logfile;
pub mod position;
pub mod record;
pub mod service;
pub mod snapshots;
pub mod statedb;
pub mod store;
pub mod synth;
pub mod views;

/// Version of the indexer's state encoding (part of the state hash).
pub const STATE_VERSION: u32 = 2;
