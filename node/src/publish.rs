//! Publishing a bundle for sale or for a token: encrypt the canonical
//! inner bundle with a fresh key, upload the blob, keep the key (0600,
//! O_EXCL) before anything else, then upload the token metadata naming the
//! blob. Shared by `export --mint` (then `mint` mints) and `marketplace
//! list` (then `market::list` posts the listing).
//!
//! Order is crash-safe: a key is never lost for an uploaded blob. Never
//! touches the chain.

use crate::arweave::Uploader;
use crate::keys::KeyDir;
use crate::wallet::Wallet;
use serde_json::json;

/// Content type of encrypted bundle blobs.
pub const BLOB_CONTENT_TYPE: &str = "application/x-brnctl-encrypted-bundle";
/// Schema tag of blobs.
pub const BLOB_SCHEMA: &str = "brnctl/mint/v1";
/// Schema tag of token metadata.
pub const METADATA_SCHEMA: &str = "brnctl/mint/v1/metadata";
/// Token symbol (in the metadata and on the mints).
pub const SYMBOL: &str = "BRNDL";

/// Errors of publishing.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Encryption (size cap).
    #[error(transparent)]
    Seal(#[from] crate::seal::SealError),
    /// Upload.
    #[error("upload failed: {0}")]
    Storage(#[from] crate::arweave::StorageError),
    /// Key file.
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
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
) -> Result<StoredBundle, PublishError> {
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
