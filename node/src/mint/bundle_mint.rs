//! `export --mint`: encrypt a signed bundle, upload the blob and the token
//! metadata, keep the key, and mint one token to the recipient.
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
use crate::wallet::Wallet;
use serde::Serialize;
use serde_json::json;

/// Content type of encrypted bundle blobs.
pub const BLOB_CONTENT_TYPE: &str = "application/x-brnctl-encrypted-bundle";
/// Schema tag of blobs.
pub const BLOB_SCHEMA: &str = "brnctl/mint/v1";
/// Schema tag of token metadata.
pub const METADATA_SCHEMA: &str = "brnctl/mint/v1/metadata";
/// Token symbol.
pub const SYMBOL: &str = "BRNDL";

/// Errors of the mint flow.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// Encryption (size cap).
    #[error(transparent)]
    Seal(#[from] crate::seal::SealError),
    /// Upload.
    #[error("upload failed: {0}")]
    Storage(#[from] crate::arweave::StorageError),
    /// Key file.
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
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

/// The token metadata JSON (PROTOCOL.md §4).
pub fn metadata_json(bundle_hash: &str, blob_id: &str, memories: usize) -> serde_json::Value {
    json!({
        "name": format!("brainctl bundle {}", &bundle_hash[..12]),
        "symbol": SYMBOL,
        "description": format!("Encrypted brainctl memory bundle ({memories} memories), sha256 {bundle_hash}"),
        "properties": {
            "files": [{"uri": format!("ar://{blob_id}"), "type": BLOB_CONTENT_TYPE}],
            "bundle_hash": bundle_hash,
        }
    })
}

/// An encrypted bundle in storage.
#[derive(Debug, Clone)]
pub struct StoredBundle {
    /// Encrypted blob item id.
    pub blob_id: String,
    /// Token metadata item id.
    pub metadata_id: String,
    /// The metadata JSON.
    pub metadata: serde_json::Value,
    /// Key file.
    pub key_path: std::path::PathBuf,
}

/// Encrypts the canonical inner bundle `plaintext` with a fresh key,
/// uploads the blob, saves the key (0600, O_EXCL) before anything else,
/// then uploads the token metadata naming the blob.
pub async fn store_encrypted(
    wallet: &Wallet,
    uploader: &Uploader,
    keys: &KeyDir,
    plaintext: &[u8],
    bundle_hash_hex: &str,
    memories: usize,
) -> Result<StoredBundle, MintError> {
    let key = crate::seal::new_blob_key();
    let blob = crate::seal::encrypt_blob(&key, plaintext)?;
    let blob_id = uploader
        .put_signed(wallet, blob, BLOB_CONTENT_TYPE, BLOB_SCHEMA)
        .await?;
    let key_path = keys.save(&blob_id, &key)?;
    let metadata = metadata_json(bundle_hash_hex, &blob_id, memories);
    let metadata_id = uploader
        .put_signed(
            wallet,
            serde_json::to_vec(&metadata).expect("serializes"),
            "application/json",
            METADATA_SCHEMA,
        )
        .await?;
    Ok(StoredBundle {
        blob_id,
        metadata_id,
        metadata,
        key_path,
    })
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
