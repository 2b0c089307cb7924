//! `export --mint`: publish a signed bundle ([`crate::publish`]: encrypt,
//! upload the blob and the token metadata, keep the key), then mint one
//! token to the recipient.
//!
//! Order is crash-safe: the key file is written (0600, O_EXCL) right after
//! the blob upload and before anything else, so a key is never lost for an
//! uploaded blob; the mint address derives from the bundle hash and blob
//! id, so a re-run after a crash cannot mint a second token for them.

use super::token2022::{mint_nft, seed_from, NftSpec};
use crate::arweave::Uploader;
use crate::bundle::SignedBundle;
use crate::chain::{Chain, ChainError, FeeOp, FeePolicy, Pubkey, Signer};
use crate::keys::KeyDir;
use crate::publish::store_encrypted;
use crate::wallet::Wallet;
use serde::Serialize;

/// Token symbol.
pub use crate::publish::SYMBOL;

/// Errors of the mint flow.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// Encrypting, uploading or keeping the key.
    #[error(transparent)]
    Publish(#[from] crate::publish::PublishError),
    /// Chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// What `export --mint` produced.
#[derive(Debug, Clone, Serialize)]
pub struct MintReceipt {
    /// The bundle.
    pub bundle_hash: String,
    /// Encrypted blob item id.
    pub blob_id: String,
    /// Metadata item id.
    pub metadata_id: String,
    /// `ar://<metadata id>`.
    pub metadata_uri: String,
    /// Key file.
    pub key_path: String,
    /// The new mint.
    pub mint: String,
    /// Recipient's token account (Token-2022; compressed tokens live in
    /// the state tree instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_account: Option<String>,
    /// Recipient.
    pub recipient: String,
    /// Mint transaction.
    pub signature: String,
    /// Its slot.
    pub slot: u64,
    /// Storage backend.
    pub storage: String,
    /// Token standard.
    pub token_standard: &'static str,
}

/// Which token `export --mint` creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStandard {
    /// A Light Protocol compressed token (SPL mint + token pool, supply 1,
    /// authority revoked). The metadata URI lives in the receipt and the
    /// stored metadata item, not on chain.
    LightCompressed,
    /// A Token-2022 NFT with MetadataPointer + TokenMetadata (`ar://` URI).
    Token2022,
}

impl TokenStandard {
    /// From a `--token-standard` value (`token2022`, else Light).
    pub fn from_flag(flag: &str) -> TokenStandard {
        match flag {
            "token2022" => TokenStandard::Token2022,
            _ => TokenStandard::LightCompressed,
        }
    }

    /// The name used in flags and receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStandard::LightCompressed => "light",
            TokenStandard::Token2022 => "token2022",
        }
    }
}

/// Runs the whole flow for `signed` (signed by `wallet`).
pub async fn mint_bundle(
    chain: &Chain,
    wallet: &Wallet,
    signed: &SignedBundle,
    uploader: &Uploader,
    keys: &KeyDir,
    recipient: &Pubkey,
    standard: TokenStandard,
) -> Result<MintReceipt, MintError> {
    let stored = store_encrypted(
        wallet,
        uploader,
        keys,
        &signed.bundle.canonical_bytes(),
        &signed.bundle_hash_hex,
        signed.bundle.memories.len(),
    )
    .await?;
    let (blob_id, metadata_id, key_path, meta) = (
        stored.blob_id,
        stored.metadata_id,
        stored.key_path,
        stored.metadata,
    );
    let spec = NftSpec {
        name: meta["name"].as_str().expect("set above").to_string(),
        symbol: SYMBOL.into(),
        uri: format!("ar://{metadata_id}"),
    };
    let payer = wallet.solana_keypair();
    let fees = FeePolicy::from_env(chain.cluster_kind().await?)?;
    let extra: Vec<_> = fees
        .fee_instruction(FeeOp::Mint, &payer.pubkey())
        .into_iter()
        .collect();
    let seed = seed_from(format!("{}:{blob_id}", signed.bundle_hash_hex).as_bytes());
    let (mint, token_account, sent) = match standard {
        TokenStandard::Token2022 => {
            let m = mint_nft(chain, &payer, &seed, recipient, &spec, extra).await?;
            (m.mint, Some(m.token_account.to_string()), m.sent)
        }
        TokenStandard::LightCompressed => {
            let m = super::light::mint_compressed(chain, wallet, &seed, recipient, 1, &spec, extra)
                .await?;
            (m.mint, None, m.sent)
        }
    };
    Ok(MintReceipt {
        bundle_hash: signed.bundle_hash_hex.clone(),
        blob_id,
        metadata_id,
        metadata_uri: spec.uri,
        key_path: key_path.display().to_string(),
        mint: mint.to_string(),
        token_account,
        recipient: recipient.to_string(),
        signature: sent.signature.to_string(),
        slot: sent.slot,
        storage: uploader.kind().into(),
        token_standard: standard.as_str(),
    })
}
