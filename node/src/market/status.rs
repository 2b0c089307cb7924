//! What the chain says about a listing: the memos that name it (`offer`,
//! `buy`, `release`, `cancel`) in the payment address's history, counted
//! per action over successful transactions. Negotiation memos name offers,
//! not listings; their states come from the seller's own records instead.
//! A summary for people (from the `memo` field, no transaction fetches),
//! never a settlement decision.

use crate::chain::memo_field::parse_memo_field;
use crate::chain::{Chain, ChainError, Pubkey, Signature};
use crate::market::MemoOp;
use std::collections::BTreeMap;
use std::str::FromStr;

/// The marketplace memos in `address`'s history (successful transactions
/// only), newest first, with their transaction signatures. Read from the
/// RPC's `memo` field: callers that act on one fetch its transaction.
pub async fn memo_ops(
    chain: &Chain,
    address: &Pubkey,
) -> Result<Vec<(String, MemoOp)>, ChainError> {
    Ok(memo_ops_since(chain, address, None).await?.0)
}

/// [`memo_ops`] over the history newer than `until` only, with the newest
/// signature listed (failed or memo-less transactions included: where the
/// next call starts from).
pub async fn memo_ops_since(
    chain: &Chain,
    address: &Pubkey,
    until: Option<&Signature>,
) -> Result<(Vec<(String, MemoOp)>, Option<Signature>), ChainError> {
    let history = chain.signatures_for(address, until).await?;
    let newest = history
        .first()
        .and_then(|i| Signature::from_str(&i.signature).ok());
    let mut out = Vec::new();
    for info in history.into_iter().filter(|i| i.err.is_none()) {
        let memos = info
            .memo
            .as_deref()
            .map(parse_memo_field)
            .and_then(Result::ok)
            .unwrap_or_default();
        out.extend(
            memos
                .iter()
                .filter_map(|m| MemoOp::parse(m).ok())
                .map(|op| (info.signature.clone(), op)),
        );
    }
    Ok((out, newest))
}

/// Counts per action of the memos naming `listing_id` in `pay_to`'s history.
pub async fn listing_memos(
    chain: &Chain,
    pay_to: &Pubkey,
    listing_id: &str,
) -> Result<BTreeMap<&'static str, usize>, ChainError> {
    let mut out = BTreeMap::new();
    for (_, op) in memo_ops(chain, pay_to).await? {
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
    Ok(out)
}
