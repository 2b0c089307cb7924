//! What the chain says about a listing: the memos that name it (`offer`,
//! `buy`, `release`, `cancel`) in the payment address's history, counted
//! per action over successful transactions. Negotiation memos name offers,
//! not listings; their states come from the seller's own records instead.
//! A summary for people (from the `memo` field, no transaction fetches),
//! never a settlement decision.

use crate::chain::memo_field::parse_memo_field;
use crate::chain::{Chain, ChainError, Pubkey};
use crate::market::MemoOp;
use std::collections::BTreeMap;

/// Counts per action of the memos naming `listing_id` in `pay_to`'s history.
pub async fn listing_memos(
    chain: &Chain,
    pay_to: &Pubkey,
    listing_id: &str,
) -> Result<BTreeMap<&'static str, usize>, ChainError> {
    let mut out = BTreeMap::new();
    for info in chain
        .signatures_for(pay_to, None)
        .await?
        .iter()
        .filter(|i| i.err.is_none())
    {
        let memos = info
            .memo
            .as_deref()
            .map(parse_memo_field)
            .and_then(Result::ok)
            .unwrap_or_default();
        for op in memos.iter().filter_map(|m| MemoOp::parse(m).ok()) {
            let names_it = match &op {
                MemoOp::Offer { listing_id: l, .. }
                | MemoOp::Buy { listing_id: l, .. }
                | MemoOp::Release { listing_id: l, .. }
                | MemoOp::Cancel { listing_id: l } => l == listing_id,
                _ => false,
            };
            if names_it {
                *out.entry(op.action()).or_default() += 1;
            }
        }
    }
    Ok(out)
}
