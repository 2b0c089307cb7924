//! Signed marketplace manifests (PROTOCOL.md §7): hash, sign, verify.
//!
//! A manifest is any JSON object; its hash is SHA-256 of the canonical
//! encoding without `signature_b58`, and `signature_b58` is Ed25519 over
//! that digest. This module owns that rule only; which key must have
//! signed which schema is the caller's (market, indexer) to decide.

use super::canonical::write_canonical_object;
use crate::crypto::{sha256, verify_ed25519, SignatureError};
use crate::wallet::Wallet;
use serde_json::Value;

/// The field that carries the signature.
pub const SIGNATURE_FIELD: &str = "signature_b58";

/// Errors of manifest handling.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not a JSON object.
    #[error("manifest is not a JSON object")]
    NotAnObject,
    /// `signature_b58` missing or not a string.
    #[error("manifest has no `signature_b58` string")]
    Unsigned,
    /// The field naming the signer is missing.
    #[error("manifest has no `{0}` string naming its signer")]
    NoSigner(String),
    /// Signature does not verify.
    #[error(transparent)]
    Signature(#[from] SignatureError),
}

/// SHA-256 of the canonical manifest without its signature.
pub fn manifest_hash(manifest: &Value) -> Result<[u8; 32], ManifestError> {
    let obj = manifest.as_object().ok_or(ManifestError::NotAnObject)?;
    let mut out = Vec::with_capacity(512);
    write_canonical_object(&mut out, obj, Some(SIGNATURE_FIELD));
    Ok(sha256(&out))
}

/// Signs a manifest in place (replacing any previous signature).
pub fn sign_manifest(manifest: &mut Value, wallet: &Wallet) -> Result<[u8; 32], ManifestError> {
    let digest = manifest_hash(manifest)?;
    let sig = bs58::encode(wallet.sign(&digest)).into_string();
    let obj = manifest.as_object_mut().ok_or(ManifestError::NotAnObject)?;
    obj.insert(SIGNATURE_FIELD.into(), Value::String(sig));
    Ok(digest)
}

/// Verifies the manifest's signature against the pubkey in `signer_field`
/// (`seller_pubkey`, `buyer_pubkey`, `from_pubkey`, ...). Returns the digest.
pub fn verify_manifest(manifest: &Value, signer_field: &str) -> Result<[u8; 32], ManifestError> {
    let signer = manifest
        .get(signer_field)
        .and_then(Value::as_str)
        .ok_or_else(|| ManifestError::NoSigner(signer_field.to_string()))?;
    verify_manifest_by(manifest, signer)
}

/// Verifies the manifest's signature against an explicit base58 pubkey.
pub fn verify_manifest_by(manifest: &Value, signer_b58: &str) -> Result<[u8; 32], ManifestError> {
    let sig = manifest
        .get(SIGNATURE_FIELD)
        .and_then(Value::as_str)
        .ok_or(ManifestError::Unsigned)?;
    let digest = manifest_hash(manifest)?;
    verify_ed25519(signer_b58, sig, &digest)?;
    Ok(digest)
}
