//! Confidentiality: AES-256-GCM bundle blobs (PROTOCOL.md §4) and libsodium
//! `crypto_box_seal` envelopes of the blob key (§7).
//!
//! Owns the blob layout `nonce(12) ‖ ciphertext ‖ tag(16)` and the 81,920
//! byte cap. Never writes key files (that is `mint`'s) and never logs keys.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use zeroize::Zeroizing;

/// Largest blob the protocol accepts.
pub const MAX_BLOB_BYTES: usize = 81_920;
/// AES-GCM nonce length.
pub const NONCE_LEN: usize = 12;
/// AES-GCM tag length.
pub const TAG_LEN: usize = 16;
/// Length of a sealed 32-byte key: ephemeral pk (32) + MAC (16) + 32.
pub const SEALED_KEY_LEN: usize = 80;

/// Sealing errors.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// The blob would exceed the cap.
    #[error("encrypted bundle would be {size} bytes, over the {MAX_BLOB_BYTES}-byte limit; narrow the export with --ids, --category, --scope, --filter-agent or --created-after/--created-before")]
    TooLarge {
        /// The size it would have.
        size: usize,
    },
    /// Shorter than nonce + tag.
    #[error("encrypted blob is truncated ({0} bytes; at least {min} needed)", min = NONCE_LEN + TAG_LEN)]
    Truncated(usize),
    /// Wrong key or tampered bytes.
    #[error("decryption failed: wrong key or the blob was modified")]
    Decrypt,
    /// Key of the wrong size.
    #[error("key must be 32 bytes (64 hex characters), got {0} bytes")]
    KeyLength(usize),
    /// Sealed box could not be opened.
    #[error("sealed key could not be opened: not sealed to this wallet, or modified")]
    Unseal,
    /// Recipient key is not a valid X25519 key.
    #[error("recipient X25519 key is invalid")]
    BadRecipient,
}

/// A 32-byte AES key, wiped on drop.
pub type BlobKey = Zeroizing<[u8; 32]>;

/// A fresh random blob key.
pub fn new_blob_key() -> BlobKey {
    Zeroizing::new(crate::crypto::random_bytes::<32>())
}

/// Parses a hex key (as in key files), accepting surrounding whitespace.
pub fn key_from_hex(text: &str) -> Result<BlobKey, SealError> {
    let bytes = Zeroizing::new(
        hex::decode(text.trim()).map_err(|_| SealError::KeyLength(text.trim().len() / 2))?,
    );
    let arr: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| SealError::KeyLength(bytes.len()))?;
    Ok(Zeroizing::new(arr))
}

/// Encrypts `plaintext` into a blob with a random nonce.
pub fn encrypt_blob(key: &[u8; 32], plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
    let size = NONCE_LEN + plaintext.len() + TAG_LEN;
    if size > MAX_BLOB_BYTES {
        return Err(SealError::TooLarge { size });
    }
    let nonce = crate::crypto::random_bytes::<NONCE_LEN>();
    let cipher = Aes256Gcm::new(key.into());
    let ct = cipher
        .encrypt(Nonce::from_slice(&nonce), plaintext)
        .map_err(|_| SealError::Decrypt)?;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct);
    Ok(out)
}

/// Decrypts a blob; refuses oversize, truncated or tampered input.
pub fn decrypt_blob(key: &[u8; 32], blob: &[u8]) -> Result<Zeroizing<Vec<u8>>, SealError> {
    if blob.len() > MAX_BLOB_BYTES {
        return Err(SealError::TooLarge { size: blob.len() });
    }
    if blob.len() < NONCE_LEN + TAG_LEN {
        return Err(SealError::Truncated(blob.len()));
    }
    let cipher = Aes256Gcm::new(key.into());
    let (nonce, ct) = blob.split_at(NONCE_LEN);
    cipher
        .decrypt(Nonce::from_slice(nonce), ct)
        .map(Zeroizing::new)
        .map_err(|_| SealError::Decrypt)
}

/// libsodium `crypto_box_seal(message, recipient_x25519_pk)`.
pub fn seal_to(recipient_x25519: &[u8; 32], message: &[u8]) -> Result<Vec<u8>, SealError> {
    let pk = crypto_box::PublicKey::from(*recipient_x25519);
    pk.seal(&mut crypto_box::aead::OsRng, message)
        .map_err(|_| SealError::BadRecipient)
}

/// libsodium `crypto_box_seal_open` with our X25519 secret.
pub fn open_sealed(
    x25519_secret: &[u8; 32],
    sealed: &[u8],
) -> Result<Zeroizing<Vec<u8>>, SealError> {
    let sk = crypto_box::SecretKey::from(*x25519_secret);
    sk.unseal(sealed)
        .map(Zeroizing::new)
        .map_err(|_| SealError::Unseal)
}

/// Opens a sealed blob key and checks it is 32 bytes.
pub fn open_sealed_key(x25519_secret: &[u8; 32], sealed: &[u8]) -> Result<BlobKey, SealError> {
    let plain = open_sealed(x25519_secret, sealed)?;
    let arr: [u8; 32] = plain
        .as_slice()
        .try_into()
        .map_err(|_| SealError::KeyLength(plain.len()))?;
    Ok(Zeroizing::new(arr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_round_trip_and_typed_failures() {
        let key = new_blob_key();
        let blob = encrypt_blob(&key, b"hello").unwrap();
        assert_eq!(blob.len(), NONCE_LEN + 5 + TAG_LEN);
        assert_eq!(&*decrypt_blob(&key, &blob).unwrap(), b"hello");
        let mut bad = blob.clone();
        bad[NONCE_LEN] ^= 1;
        assert_eq!(decrypt_blob(&key, &bad).unwrap_err(), SealError::Decrypt);
        assert_eq!(
            decrypt_blob(&key, &blob[..20]).unwrap_err(),
            SealError::Truncated(20)
        );
        let other = new_blob_key();
        assert_eq!(decrypt_blob(&other, &blob).unwrap_err(), SealError::Decrypt);
        let big = vec![0u8; MAX_BLOB_BYTES];
        assert!(matches!(
            encrypt_blob(&key, &big),
            Err(SealError::TooLarge { .. })
        ));
        assert!(matches!(
            decrypt_blob(&key, &vec![0u8; MAX_BLOB_BYTES + 1]),
            Err(SealError::TooLarge { .. })
        ));
    }

    #[test]
    fn key_hex_must_be_32_bytes() {
        assert_eq!(key_from_hex("abcd").unwrap_err(), SealError::KeyLength(2));
        assert!(key_from_hex("zz").is_err());
        assert!(key_from_hex(&"ab".repeat(32)).is_ok());
    }

    #[test]
    fn seal_round_trip() {
        let w = crate::wallet::Wallet::from_seed(&[5u8; 32]);
        let sealed = seal_to(&w.x25519_public(), &[7u8; 32]).unwrap();
        assert_eq!(sealed.len(), SEALED_KEY_LEN);
        assert_eq!(
            *open_sealed_key(&w.x25519_secret(), &sealed).unwrap(),
            [7u8; 32]
        );
        let other = crate::wallet::Wallet::from_seed(&[6u8; 32]);
        assert_eq!(
            open_sealed_key(&other.x25519_secret(), &sealed).unwrap_err(),
            SealError::Unseal
        );
    }
}
