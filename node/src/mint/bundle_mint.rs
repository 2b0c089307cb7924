//! `export --mint`: encrypt a signed bundle, upload the blob and the token
//! metadata, keep the key, and mint one token to the recipient.
//!
//! Order is crash-safe: the key file is written (0600, O_EXCL) right after
//! the blob upload and before anything else, so a key is never lost for an
//! uploaded blob; the mint address derives from the bundle hash and blob
//! id, so a re-run after a crash cannot mint a second token for them.

use super::token2022::{mint_nft, seed_from, NftSpec};
use crate::arweave::{DataItem, Tag, Uploader};
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
    /// Item building.
    #[error(transparent)]
    Item(#[from] crate::arweave::ItemError),
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
    /// Recipient's token account.
    pub token_account: String,
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

/// Runs the whole flow for `signed` (signed by `wallet`).
pub async fn mint_bundle(
    chain: &Chain,
    wallet: &Wallet,
    signed: &SignedBundle,
    uploader: &Uploader,
    keys: &KeyDir,
    recipient: &Pubkey,
) -> Result<MintReceipt, MintError> {
    let plaintext = signed.bundle.canonical_bytes();
    let key = crate::seal::new_blob_key();
    let blob = crate::seal::encrypt_blob(&key, &plaintext)?;
    let blob_item = DataItem::sign(
        wallet,
        blob,
        vec![
            Tag::new("Content-Type", BLOB_CONTENT_TYPE),
            Tag::new("App-Name", "brainctl"),
            Tag::new("Schema", BLOB_SCHEMA),
        ],
        None,
        None,
    )?;
    let blob_id = uploader.put(&blob_item).await?;
    let key_path = keys.save(&blob_id, &key)?;
    let meta = metadata_json(
        &signed.bundle_hash_hex,
        &blob_id,
        signed.bundle.memories.len(),
    );
    let meta_item = DataItem::sign(
        wallet,
        serde_json::to_vec(&meta).expect("serializes"),
        vec![
            Tag::new("Content-Type", "application/json"),
            Tag::new("App-Name", "brainctl"),
            Tag::new("Schema", METADATA_SCHEMA),
        ],
        None,
        None,
    )?;
    let metadata_id = uploader.put(&meta_item).await?;
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
    let minted = mint_nft(chain, &payer, &seed, recipient, &spec, extra).await?;
    Ok(MintReceipt {
        bundle_hash: signed.bundle_hash_hex.clone(),
        blob_id,
        metadata_id,
        metadata_uri: spec.uri,
        key_path: key_path.display().to_string(),
        mint: minted.mint.to_string(),
        token_account: minted.token_account.to_string(),
        recipient: recipient.to_string(),
        signature: minted.sent.signature.to_string(),
        slot: minted.sent.slot,
        storage: uploader.kind().into(),
        token_standard: "token2022",
    })
}
