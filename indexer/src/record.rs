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

/// Where the earliest change among `records` (stored or updated) and
/// `removed` lies against a fold whose head is `head` and which folded
/// each signature at `folded_at`, if any is not simply after the head: a
/// record folded at another position (the earlier of the two), a new
/// record at or before the head, a removed record that was folded.
pub fn earliest_change(
    head: Option<Position>,
    folded_at: impl Fn(&str) -> Option<Position>,
    records: &[TxRecord],
    removed: &[String],
) -> Option<Position> {
    let mut earliest: Option<Position> = None;
    let mut note = |p: Position| earliest = Some(earliest.map_or(p, |e: Position| e.min(p)));
    for r in records {
        let at = r.position();
        match folded_at(r.signature()) {
            Some(folded) if folded == at => {}
            Some(folded) => note(folded.min(at)),
            None if head.is_some_and(|last| at <= last) => note(at),
            None => {}
        }
    }
    for sig in removed {
        if let Some(folded) = folded_at(sig) {
            note(folded);
        }
    }
    earliest
}
