//! Marketplace actions. Today: the memo grammar shared by the trade
//! commands, the `listen` daemon and the indexer.

pub mod memo;

pub use memo::{MemoError, MemoOp};
