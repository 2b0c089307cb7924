//! Small cryptographic helpers shared by bundles, manifests and wallets:
//! SHA-256, base58 Ed25519 signature checks, secure random bytes.
//!
//! Owns no keys and no formats; errors never contain key material.

pub mod strict;

use sha2::{Digest, Sha256};

/// Why an Ed25519 signature check failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    /// The pubkey is not base58 of 32 bytes, or not a curve point.
    #[error("malformed signer pubkey: {0}")]
    BadPubkey(&'static str),
    /// The signature is not base58 of 64 bytes.
    #[error("malformed signature: {0}")]
    BadSignature(&'static str),
    /// Well-formed, but does not verify.
    #[error("signature verification failed")]
    Mismatch,
}

/// SHA-256 digest.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Decodes a base58 string of exactly `N` bytes.
pub fn b58_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    match bs58::decode(s).onto(&mut out[..]) {
        Ok(n) if n == N => Some(out),
        _ => None,
    }
}

/// Verifies a base58 Ed25519 signature by a base58 pubkey over `message`
/// (strict verification: no malleable signatures, no small-order keys;
/// exactly dalek's `verify_strict`, see [`strict`]).
pub fn verify_ed25519(
    pubkey_b58: &str,
    signature_b58: &str,
    message: &[u8],
) -> Result<(), SignatureError> {
    let pk =
        b58_array::<32>(pubkey_b58).ok_or(SignatureError::BadPubkey("not base58 of 32 bytes"))?;
    let sig = b58_array::<64>(signature_b58)
        .ok_or(SignatureError::BadSignature("not base58 of 64 bytes"))?;
    strict::verify(&pk, &sig, message)
}

/// Bytes from the OS random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    getrandom::getrandom(&mut out).expect("the OS random source is available");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b58_array_rejects_wrong_lengths() {
        assert!(b58_array::<32>("11111111111111111111111111111111").is_some());
        assert!(b58_array::<32>("1111").is_none());
        assert!(b58_array::<32>("0OIl").is_none());
        let long = bs58::encode([7u8; 40]).into_string();
        assert!(b58_array::<32>(&long).is_none());
    }
}
