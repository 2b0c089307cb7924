//! One transaction as the indexer keeps it: what the chain said
//! ([`ParsedTx`]), its position in the block, and the bodies of the
//! manifests its memos reference, exactly as fetched. This is the unit of
//! the durable log, of `export-log`/`replay-log` files and of the fold.
//!
//! Owns the shape and ordering only; it never judges what a memo means.

use node::chain::ParsedTx;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Chain order: slot, then position in the block.
pub type Position = (u64, u32);

/// One recorded transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxRecord {
    /// What the transaction says (signature, slot, block time, success,
    /// signers with the fee payer first, memos, System transfers).
    pub tx: ParsedTx,
    /// Index of the transaction in its block.
    pub index: u32,
    /// Manifest bodies by Arweave item id, for the ids its memos name
    /// (absent when the gateway had none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub manifests: BTreeMap<String, std::sync::Arc<Value>>,
}

impl TxRecord {
    /// Where it sits in chain order.
    pub fn position(&self) -> Position {
        (self.tx.slot, self.index)
    }

    /// Transaction signature.
    pub fn signature(&self) -> &str {
        &self.tx.signature
    }
}

/// Sorts records into chain order (ties broken by signature so the order
/// is total even for hand-made logs).
pub fn sort_chain_order(records: &mut [TxRecord]) {
    records.sort_by(|a, b| {
        a.position()
            .cmp(&b.position())
            .then_with(|| a.tx.signature.cmp(&b.tx.signature))
    });
}
