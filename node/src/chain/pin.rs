//! Pin memos (PROTOCOL.md §3): `brainctl/v1:<bundle_hash_hex>:<signer>`,
//! posted by the signer; and the on-chain check that finds one.
//!
//! The check is strict (a fix of the reference): the transaction must have
//! succeeded, be signed by the bundle's signer, and carry a memo *equal* to
//! the pin string. The signer's whole history is paged, no fixed window.

use super::client::{Chain, Sent};
use super::fees::{FeeOp, FeePolicy};
use super::instructions::memo;
use super::memo_field::parse_memo_field;
use super::ChainError;
use serde::Serialize;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signature::{Keypair, Signature};
use solana_sdk::signer::Signer;
use std::str::FromStr;

/// Prefix of pin memos.
pub const PIN_PREFIX: &str = "brainctl/v1";

/// The pin memo text.
pub fn pin_memo(bundle_hash_hex: &str, signer_b58: &str) -> String {
    format!("{PIN_PREFIX}:{bundle_hash_hex}:{signer_b58}")
}

/// Where a pin was found or posted.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PinReceipt {
    /// Transaction signature.
    pub signature: String,
    /// Slot.
    pub slot: u64,
    /// The memo text.
    pub memo: String,
    /// RPC used.
    pub rpc_url: String,
    /// Cluster name.
    pub cluster: String,
}

/// Posts the pin memo for `bundle_hash_hex`, signed by `signer` (plus the
/// op fee on mainnet-beta, atomically).
pub async fn post_pin(
    chain: &Chain,
    signer: &Keypair,
    bundle_hash_hex: &str,
) -> Result<PinReceipt, ChainError> {
    let kind = chain.cluster_kind().await?;
    let fees = FeePolicy::from_env(kind)?;
    let text = pin_memo(bundle_hash_hex, &signer.pubkey().to_string());
    let mut ixs = vec![memo(&text, &signer.pubkey())];
    ixs.extend(fees.fee_instruction(FeeOp::Op, &signer.pubkey()));
    let Sent { signature, slot } = chain.send(&ixs, &[signer]).await?;
    Ok(PinReceipt {
        signature: signature.to_string(),
        slot,
        memo: text,
        rpc_url: chain.endpoint().rpc_url.clone(),
        cluster: kind.name().into(),
    })
}

/// Finds a successful transaction signed by `signer` whose memo equals the
/// pin string for `bundle_hash_hex`. `None` when there is none.
pub async fn find_pin(
    chain: &Chain,
    signer_b58: &str,
    bundle_hash_hex: &str,
) -> Result<Option<PinReceipt>, ChainError> {
    let signer = Pubkey::from_str(signer_b58)
        .map_err(|_| ChainError::Config(format!("{signer_b58} is not a pubkey")))?;
    let want = pin_memo(bundle_hash_hex, signer_b58);
    let kind = chain.cluster_kind().await?;
    for info in chain.signatures_for(&signer, None).await? {
        if info.err.is_some() {
            continue;
        }
        // Cheap pre-filter on the listed memos; the transaction itself decides.
        let listed = info.memo.as_deref().map(parse_memo_field);
        if !matches!(&listed, Some(Ok(memos)) if memos.contains(&want)) {
            continue;
        }
        let sig = Signature::from_str(&info.signature).map_err(|_| {
            ChainError::Config(format!("RPC returned a bad signature {}", info.signature))
        })?;
        let Some(tx) = chain.transaction(&sig).await? else {
            continue;
        };
        if tx.succeeded && tx.signed_by(signer_b58) && tx.memos.contains(&want) {
            return Ok(Some(PinReceipt {
                signature: tx.signature,
                slot: tx.slot,
                memo: want,
                rpc_url: chain.endpoint().rpc_url.clone(),
                cluster: kind.name().into(),
            }));
        }
    }
    Ok(None)
}
