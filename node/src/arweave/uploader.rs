//! One interface over the storage backends, so flows (mint, list) don't
//! care where items go: the local fs store or a bundler.

use super::{DataItem, FsStore, StorageError};

/// A place signed items can be put.
#[derive(Debug, Clone)]
pub enum Uploader {
    /// Content-addressed directory.
    Fs(FsStore),
    /// Irys-compatible bundler.
    #[cfg(feature = "net")]
    Bundler(super::http::Bundler),
}

impl Uploader {
    /// Stores a signed item; returns its id.
    pub async fn put(&self, item: &DataItem) -> Result<String, StorageError> {
        match self {
            Uploader::Fs(s) => s.put(item),
            #[cfg(feature = "net")]
            Uploader::Bundler(b) => b.put(item).await,
        }
    }

    /// A short name for receipts.
    pub fn kind(&self) -> &'static str {
        match self {
            Uploader::Fs(_) => "fs",
            #[cfg(feature = "net")]
            Uploader::Bundler(_) => "bundler",
        }
    }
}
