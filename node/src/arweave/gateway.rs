//! Upload to an Arweave gateway the way a bundler does: the signed data
//! item goes into an ANS-104 bundle (`Bundle-Format: binary`,
//! `Bundle-Version: 2.0.0`), the bundle into a format-2 Arweave
//! transaction signed with RSA-PSS (SHA-256) by the gateway wallet, and
//! the gateway serves the item by its own id. Made for `arlocal`, which
//! checks the transaction id, signature, data root and size, and the
//! wallet's balance (funded here through its `/mint` route), then
//! unbundles without checking the items (we verify on download).
//!
//! Owns the Arweave transaction and bundle bytes; never the item format.

use super::deep_hash::{deep_hash, Chunk};
use super::merkle::data_root;
use super::{DataItem, StorageError};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use rsa::pss::BlindedSigningKey;
use rsa::signature::{RandomizedSigner, SignatureEncoding};
use rsa::traits::PublicKeyParts;
use rsa::RsaPrivateKey;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// RSA modulus size of generated gateway wallets.
pub const KEY_BITS: usize = 2048;

/// The ANS-104 bundle of `items`: count, (size, id) pairs, then the items.
pub fn bundle_bytes(items: &[DataItem]) -> Vec<u8> {
    let le32 = |n: usize| {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&(n as u64).to_le_bytes());
        b
    };
    let raw: Vec<Vec<u8>> = items.iter().map(DataItem::to_bytes).collect();
    let mut out = le32(items.len()).to_vec();
    for (item, bytes) in items.iter().zip(&raw) {
        out.extend_from_slice(&le32(bytes.len()));
        out.extend_from_slice(&Sha256::digest(item.signature));
    }
    for bytes in raw {
        out.extend_from_slice(&bytes);
    }
    out
}

/// A gateway wallet (RSA) and where it posts.
#[derive(Clone)]
pub struct Gateway {
    url: String,
    key: Arc<RsaPrivateKey>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

fn net(e: impl std::fmt::Display) -> StorageError {
    StorageError::Http(e.to_string())
}

impl Gateway {
    /// A gateway at `url` posting with `key`.
    pub fn new(url: &str, key: RsaPrivateKey) -> Gateway {
        Gateway {
            url: url.trim_end_matches('/').to_string(),
            key: Arc::new(key),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
        }
    }

    /// Loads the wallet at `path` (PKCS#8 DER, 0600), creating it once.
    pub fn load_or_create_key(path: &Path) -> Result<RsaPrivateKey, StorageError> {
        use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey};
        if path.exists() {
            let der = std::fs::read(path).map_err(|source| StorageError::Io {
                path: path.into(),
                source,
            })?;
            return RsaPrivateKey::from_pkcs8_der(&der).map_err(|_| StorageError::BadWalletKey {
                path: path.into(),
                why: "not a PKCS#8 RSA key".into(),
            });
        }
        let key = RsaPrivateKey::new(&mut rand_core::OsRng, KEY_BITS).map_err(|e| {
            StorageError::BadWalletKey {
                path: path.into(),
                why: format!("RSA key generation: {e}"),
            }
        })?;
        let der = key.to_pkcs8_der().map_err(|e| StorageError::BadWalletKey {
            path: path.into(),
            why: format!("PKCS#8 encoding: {e}"),
        })?;
        let (dir, name) = (
            path.parent().unwrap_or(Path::new(".")),
            path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
                StorageError::BadWalletKey {
                    path: path.into(),
                    why: "not a file path".into(),
                }
            })?,
        );
        crate::keys::KeyDir::new(dir).create_exclusive(name, der.as_bytes())?;
        Ok(key)
    }

    /// The wallet's Arweave address: base64url(SHA-256(modulus)).
    pub fn address(&self) -> String {
        B64URL.encode(Sha256::digest(self.key.n().to_bytes_be()))
    }

    /// Signs a format-2 transaction carrying `data` with `tags`.
    pub fn transaction(
        &self,
        data: &[u8],
        tags: &[(&str, &str)],
        last_tx: &str,
        reward: &str,
    ) -> Result<serde_json::Value, StorageError> {
        let owner = self.key.n().to_bytes_be();
        let root = data_root(data);
        let size = data.len().to_string();
        let anchor = B64URL.decode(last_tx).map_err(|_| net("bad tx anchor"))?;
        let tag_chunks: Vec<Chunk<'_>> = tags
            .iter()
            .map(|(n, v)| Chunk::List(vec![Chunk::Blob(n.as_bytes()), Chunk::Blob(v.as_bytes())]))
            .collect();
        let digest = deep_hash(&Chunk::List(vec![
            Chunk::Blob(b"2"),
            Chunk::Blob(&owner),
            Chunk::Blob(&[]),
            Chunk::Blob(b"0"),
            Chunk::Blob(reward.as_bytes()),
            Chunk::Blob(&anchor),
            Chunk::List(tag_chunks),
            Chunk::Blob(size.as_bytes()),
            Chunk::Blob(&root),
        ]));
        let signer = BlindedSigningKey::<Sha256>::new((*self.key).clone());
        let signature = signer
            .try_sign_with_rng(&mut rand_core::OsRng, &digest)
            .map_err(|e| net(format!("RSA-PSS: {e}")))?
            .to_vec();
        Ok(json!({
            "format": 2,
            "id": B64URL.encode(Sha256::digest(&signature)),
            "last_tx": last_tx,
            "owner": B64URL.encode(&owner),
            "tags": tags.iter().map(|(n, v)| json!({
                "name": B64URL.encode(n), "value": B64URL.encode(v)
            })).collect::<Vec<_>>(),
            "target": "",
            "quantity": "0",
            "data": B64URL.encode(data),
            "data_size": size,
            "data_root": B64URL.encode(root),
            "reward": reward,
            "signature": B64URL.encode(&signature),
        }))
    }

    async fn get_text(&self, path: &str) -> Result<String, StorageError> {
        let res = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .map_err(net)?;
        if !res.status().is_success() {
            return Err(net(format!("GET {path}: {}", res.status())));
        }
        res.text().await.map_err(net)
    }

    /// Posts `item` in a one-item bundle, mines it, returns the item id.
    pub async fn put(&self, item: &DataItem) -> Result<String, StorageError> {
        let bundle = bundle_bytes(std::slice::from_ref(item));
        let reward = self.get_text(&format!("/price/{}", bundle.len())).await?;
        let reward = reward.trim().to_string();
        // arlocal's faucet; a real gateway has no such route and the
        // wallet must hold AR already.
        let _ = self
            .get_text(&format!("/mint/{}/{}", self.address(), reward))
            .await;
        let anchor = self.get_text("/tx_anchor").await?;
        let tx = self.transaction(
            &bundle,
            &[("Bundle-Format", "binary"), ("Bundle-Version", "2.0.0")],
            anchor.trim(),
            &reward,
        )?;
        let res = self
            .http
            .post(format!("{}/tx", self.url))
            .json(&tx)
            .send()
            .await
            .map_err(net)?;
        let status = res.status();
        if !status.is_success() {
            let body = res.text().await.unwrap_or_default();
            return Err(net(format!(
                "POST /tx: {status}: {}",
                body.chars().take(300).collect::<String>()
            )));
        }
        // arlocal mines on request (a real gateway has no `/mine`: its
        // miners take the transaction by themselves); arlocal answers a
        // mine asked while another runs with 404, so ask again a few
        // times, and never fail an upload the gateway took
        for attempt in 1..=5u64 {
            match self.get_text("/mine").await {
                Ok(_) => break,
                Err(e) if attempt == 5 => {
                    tracing::warn!(error = %e, item = %item.id(), "the gateway did not mine on request; the item waits for its miners");
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100 * attempt)).await,
            }
        }
        Ok(item.id())
    }
}
