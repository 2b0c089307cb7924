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
    /// A bundle the sealed-escrow blob cannot hold (empty or over 64 MiB).
    #[error("escrow blob: {0}")]
    EscrowBlob(#[from] escrow_math::blob::BlobError),
    /// The bundle's bytes do not count, by the escrow's rule
    /// (`escrow_math::tally`), the memories it exports: buyers would
    /// refuse the listing (its blob states another count than its
    /// preview).
    #[error("the bundle holds {memories} memories but its canonical bytes count {counted} by the escrow's rule (objects in the top-level \"memories\":[ array); it is not a canonical bundle, so an escrow listing of it would be refused by every buyer")]
    MemoryCount {
        /// Exported.
        memories: usize,
        /// Counted over the plaintext.
        counted: u16,
    },
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
    let sealed = Sealed {
        bytes: blob,
        key: &key,
        schema: BLOB_SCHEMA,
    };
    store_blob(wallet, uploader, keys, sealed, bundle_hash_hex, memories).await
}

/// Seals `plaintext` as a sealed-escrow blob under the listing's scalar
/// `k` (`escrow_math::blob`), uploads it, saves `k` as the blob's key,
/// then uploads the metadata. Returns what the listing commits to.
pub async fn store_escrow_sealed(
    wallet: &Wallet,
    uploader: &Uploader,
    keys: &KeyDir,
    plaintext: &[u8],
    k: &[u8; 32],
    bundle_hash_hex: &str,
    memories: usize,
) -> Result<(StoredBundle, escrow_math::merkle::Hash, u64), PublishError> {
    let counted = escrow_math::tally::count_of(plaintext);
    if usize::from(counted) != memories {
        return Err(PublishError::MemoryCount { memories, counted });
    }
    let blob = escrow_math::blob::seal(k, plaintext)?;
    // the same cap as every blob a buyer fetches
    if blob.bytes.len() > crate::seal::MAX_BLOB_BYTES {
        return Err(crate::seal::SealError::TooLarge {
            size: blob.bytes.len(),
        }
        .into());
    }
    let (root, plain_len) = (blob.root, blob.plain_len);
    let sealed = Sealed {
        bytes: blob.bytes,
        key: k,
        schema: ESCROW_BLOB_SCHEMA,
    };
    let stored = store_blob(wallet, uploader, keys, sealed, bundle_hash_hex, memories).await?;
    Ok((stored, root, plain_len))
}

/// Schema tag of sealed-escrow blobs (ours alone).
pub const ESCROW_BLOB_SCHEMA: &str = "brainctl/escrow-blob/v1";

/// A blob ready to upload and the key that opens it.
struct Sealed<'a> {
    bytes: Vec<u8>,
    key: &'a [u8; 32],
    schema: &'static str,
}

async fn store_blob(
    wallet: &Wallet,
    uploader: &Uploader,
    keys: &KeyDir,
    sealed: Sealed<'_>,
    bundle_hash_hex: &str,
    memories: usize,
) -> Result<StoredBundle, PublishError> {
    let blob_id = uploader
        .put_signed(wallet, sealed.bytes, BLOB_CONTENT_TYPE, sealed.schema)
        .await?;
    let key_path = keys.save(&blob_id, sealed.key)?;
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
