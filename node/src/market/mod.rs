//! Marketplace actions. Today: the memo grammar shared by the trade
//! commands, the `listen` daemon and the indexer, and the release envelope.

pub mod envelope;
pub mod memo;

pub use memo::{MemoError, MemoOp};
