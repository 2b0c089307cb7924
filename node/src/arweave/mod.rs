//! Arweave storage: ANS-104 data items (Solana-signed, type 2) with Avro
//! tags and deep-hash signatures. Uploaders and verified downloads build on
//! these (storage issue).
//!
//! Owns the item bytes; never trusts a gateway: callers verify what they
//! fetch against what they expect.

pub mod deep_hash;
pub mod fs_store;
#[cfg(feature = "net")]
pub mod gateway;
#[cfg(feature = "net")]
pub mod http;
pub mod item;
pub mod merkle;
#[cfg(feature = "net")]
pub mod proven;
pub mod tags;
pub mod uploader;

pub use fs_store::FsStore;
pub use item::{DataItem, ItemError};
pub use tags::Tag;
pub use uploader::{Source, Uploader};

/// Storage errors.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Not a 43-character base64url id.
    #[error("`{0}` is not a data item id (43 base64url characters)")]
    BadId(String),
    /// Nothing stored under that id.
    #[error("no data item {0}")]
    NotFound(String),
    /// The stored or returned item has another id.
    #[error("id mismatch: asked for {want}, got {got}")]
    IdMismatch {
        /// Asked for.
        want: String,
        /// Got.
        got: String,
    },
    /// The content does not hash to what the caller expects.
    #[error("content of {id} does not match: expected sha256 {want}, got {got}")]
    HashMismatch {
        /// Item id.
        id: String,
        /// Expected hex.
        want: String,
        /// Actual hex.
        got: String,
    },
    /// The bundler wants payment (HTTP 402).
    #[error("{0}")]
    PaymentRequired(String),
    /// Too large (HTTP 413, or a download over its cap).
    #[error("too large: {0}")]
    TooLarge(String),
    /// Other HTTP failure.
    #[error("HTTP error: {0}")]
    Http(String),
    /// Filesystem failure.
    #[error("storage I/O on {path}: {source}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The Arweave wallet file is not an RSA key we can use.
    #[error("Arweave wallet {path}: {why}")]
    BadWalletKey {
        /// The key file.
        path: std::path::PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The Arweave wallet could not be saved.
    #[error(transparent)]
    WalletKeyFile(#[from] crate::keys::KeyError),
    /// The bytes are not a valid signed item.
    #[error(transparent)]
    Item(#[from] ItemError),
    /// A gateway's answer for an id is not that item: its signed header
    /// does not hash to the id, or the signature does not cover the data.
    #[error("the gateway's answer for {id} is not that data item: {why}")]
    NotTheItem {
        /// The id asked for.
        id: String,
        /// What disagrees.
        why: String,
    },
}
