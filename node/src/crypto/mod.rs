//! Small cryptographic helpers shared by bundles, manifests and wallets:
//! SHA-256, base58 Ed25519 signature checks, secure random bytes.
//!
//! Owns no keys and no formats; errors never contain key material.

pub mod hex32;
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

/// Decodes a base58 string of exactly `N` bytes (keys and signatures,
/// 32 and 64, go through `five8`, several times faster than `bs58`;
/// both accept exactly the same strings, tested below).
pub fn b58_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    match N {
        32 => {
            let mut o = [0u8; 32];
            five8::decode_32(s, &mut o).ok()?;
            out.copy_from_slice(&o);
        }
        64 => {
            let mut o = [0u8; 64];
            five8::decode_64(s, &mut o).ok()?;
            out.copy_from_slice(&o);
        }
        _ => return b58_array_slow(s),
    }
    Some(out)
}

/// `b58_array` by `bs58` (any length).
fn b58_array_slow<const N: usize>(s: &str) -> Option<[u8; N]> {
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

    proptest::proptest! {
        /// five8 and bs58 accept the same strings and decode them alike:
        /// encodings of arbitrary bytes (leading zeros included), and
        /// arbitrary strings over the alphabet and beyond.
        #[test]
        fn fast_base58_agrees_with_bs58(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
            zeros in 0usize..40,
            text in "[1-9A-HJ-NP-Za-km-z0OIl+/ ]{0,100}",
        ) {
            let mut b = vec![0u8; zeros];
            b.extend(&bytes);
            for s in [bs58::encode(&b).into_string(), text.clone(), format!("1{text}")] {
                proptest::prop_assert_eq!(b58_array::<32>(&s), b58_array_slow::<32>(&s), "{}", s);
                proptest::prop_assert_eq!(b58_array::<64>(&s), b58_array_slow::<64>(&s), "{}", s);
            }
        }
    }

    #[test]
    fn b58_array_rejects_wrong_lengths() {
        assert!(b58_array::<32>("11111111111111111111111111111111").is_some());
        assert!(b58_array::<32>("1111").is_none());
        assert!(b58_array::<32>("0OIl").is_none());
        let long = bs58::encode([7u8; 40]).into_string();
        assert!(b58_array::<32>(&long).is_none());
    }
}
