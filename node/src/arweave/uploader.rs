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
    /// An Arweave gateway (arlocal on localnet): a one-item bundle per put.
    #[cfg(feature = "net")]
    Gateway(super::gateway::Gateway),
}

impl Uploader {
    /// Stores a signed item; returns its id.
    pub async fn put(&self, item: &DataItem) -> Result<String, StorageError> {
        match self {
            Uploader::Fs(s) => s.put(item),
            #[cfg(feature = "net")]
            Uploader::Bundler(b) => b.put(item).await,
            #[cfg(feature = "net")]
            Uploader::Gateway(g) => g.put(item).await,
        }
    }

    /// Signs `data` as an item tagged `Content-Type`, `App-Name: brainctl`
    /// and `Schema`, stores it, and returns its id.
    pub async fn put_signed(
        &self,
        signer: &crate::wallet::Wallet,
        data: Vec<u8>,
        content_type: &str,
        schema: &str,
    ) -> Result<String, StorageError> {
        let tags = vec![
            super::Tag::new("Content-Type", content_type),
            super::Tag::new("App-Name", "brainctl"),
            super::Tag::new("Schema", schema),
        ];
        self.put(&DataItem::sign(signer, data, tags, None, None)?)
            .await
    }

    /// A short name for receipts.
    pub fn kind(&self) -> &'static str {
        match self {
            Uploader::Fs(_) => "fs",
            #[cfg(feature = "net")]
            Uploader::Bundler(_) => "bundler",
            #[cfg(feature = "net")]
            Uploader::Gateway(_) => "gateway",
        }
    }
}

/// A place items are read from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The local content-addressed store (items verified on read).
    Fs(FsStore),
    /// A gateway URL (`GET {url}/{id}`); callers check what they get.
    #[cfg(feature = "net")]
    Gateway(String),
}

impl Source {
    /// The data of item `id`, at most `max_bytes`. From a gateway this is
    /// whatever it answers: check it against what you expect (a hash, a
    /// manifest signature), or ask for [`Source::fetch_item`].
    pub async fn fetch(&self, id: &str, max_bytes: usize) -> Result<Vec<u8>, StorageError> {
        match self {
            Source::Fs(_) => Ok(self.fetch_item(id, max_bytes).await?.data),
            #[cfg(feature = "net")]
            Source::Gateway(url) => super::http::download(url, id, max_bytes).await,
        }
    }

    /// Item `id` (data at most `max_bytes`), proven to be that item: its
    /// id is the hash of its signature and the signature covers its data
    /// (the fs store reads whole items; a gateway's answer is checked
    /// against its signed header, [`super::proven`]).
    pub async fn fetch_item(&self, id: &str, max_bytes: usize) -> Result<DataItem, StorageError> {
        match self {
            Source::Fs(s) => {
                let item = s.get(id)?;
                if item.data.len() > max_bytes {
                    return Err(StorageError::TooLarge(format!(
                        "{id}: over {max_bytes} bytes"
                    )));
                }
                Ok(item)
            }
            #[cfg(feature = "net")]
            Source::Gateway(url) => super::proven::download_item(url, id, max_bytes).await,
        }
    }
}
