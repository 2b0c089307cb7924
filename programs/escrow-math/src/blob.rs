//! The escrow blob (ours alone; direct-pay listings keep the reference's
//! AES-GCM bytes): what a seller uploads to Arweave when listing through
//! the escrow, public before any payment.
//!
//! ```text
//! "BCESCRW1" ‖ le32(CHUNK_LEN) ‖ le64(plain_len) ‖ plain_hash(k, i, plain_i) for each chunk ‖ ciphertext
//! ```
//!
//! The ciphertext is the plaintext with [`crate::stream`]'s keystream under
//! the listing's `k`. From the blob alone anyone recomputes the listing's
//! committed root; after the reveal the buyer opens it, chunk by chunk
//! checked, and holds a fraud proof for the first chunk that lies.

use crate::merkle::{self, Hash};
use crate::{chunk_count, plain_hash, sha256, stream, CHUNK_LEN};

/// First bytes of every escrow blob.
pub const MAGIC: &[u8; 8] = b"BCESCRW1";
/// Header bytes before the plaintext hashes.
pub const HEADER_LEN: usize = 8 + 4 + 8;

/// Why bytes are not an escrow blob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// Wrong magic or chunk size.
    #[error("not an escrow blob (magic or chunk size)")]
    NotEscrowBlob,
    /// Empty, too large, or lengths that do not add up.
    #[error("escrow blob lengths do not add up: {0}")]
    BadLength(&'static str),
    /// The key opened chunk `index` to something other than its commitment.
    #[error("chunk {index} does not decrypt to its committed plaintext")]
    Misdelivery {
        /// The first lying chunk.
        index: u32,
    },
}

/// A sealed bundle: the blob and what the listing commits to.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The blob bytes to upload.
    pub bytes: Vec<u8>,
    /// Root over its leaves.
    pub root: Hash,
    /// Plaintext length.
    pub plain_len: u64,
}

/// Seals `plain` under `k`.
pub fn seal(k: &[u8; 32], plain: &[u8]) -> Result<Sealed, BlobError> {
    chunk_count(plain.len() as u64).ok_or(BlobError::BadLength("empty or over 32 MiB"))?;
    let mut bytes =
        Vec::with_capacity(HEADER_LEN + plain.len() / CHUNK_LEN * 32 + 32 + plain.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(CHUNK_LEN as u32).to_le_bytes());
    bytes.extend_from_slice(&(plain.len() as u64).to_le_bytes());
    for (i, chunk) in plain.chunks(CHUNK_LEN).enumerate() {
        bytes.extend_from_slice(&plain_hash(k, i as u32, chunk));
    }
    let start = bytes.len();
    bytes.extend_from_slice(plain);
    for (i, chunk) in bytes[start..].chunks_mut(CHUNK_LEN).enumerate() {
        stream::apply(k, i as u32, chunk);
    }
    let root = Blob::parse(&bytes)?.root();
    Ok(Sealed {
        bytes,
        root,
        plain_len: plain.len() as u64,
    })
}

/// A parsed escrow blob.
#[derive(Debug, Clone, Copy)]
pub struct Blob<'a> {
    /// Plaintext length.
    pub plain_len: u64,
    plain_hashes: &'a [u8],
    cipher: &'a [u8],
}

impl<'a> Blob<'a> {
    /// Parses and checks the lengths.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BlobError> {
        let header = bytes.get(..HEADER_LEN).ok_or(BlobError::NotEscrowBlob)?;
        if &header[..8] != MAGIC || header[8..12] != (CHUNK_LEN as u32).to_le_bytes() {
            return Err(BlobError::NotEscrowBlob);
        }
        let plain_len = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
        let count = chunk_count(plain_len).ok_or(BlobError::BadLength("empty or over 32 MiB"))?;
        let hashes_end = HEADER_LEN + count as usize * 32;
        if bytes.len() as u64 != hashes_end as u64 + plain_len {
            return Err(BlobError::BadLength(
                "the blob's size is not header + hashes + plaintext length",
            ));
        }
        Ok(Blob {
            plain_len,
            plain_hashes: &bytes[HEADER_LEN..hashes_end],
            cipher: &bytes[hashes_end..],
        })
    }

    /// Number of chunks.
    pub fn count(&self) -> u32 {
        (self.plain_hashes.len() / 32) as u32
    }

    /// Chunk `index` of the ciphertext.
    pub fn cipher_chunk(&self, index: u32) -> &'a [u8] {
        self.cipher
            .chunks(CHUNK_LEN)
            .nth(index as usize)
            .unwrap_or(&[])
    }

    /// The committed plaintext hash of chunk `index`.
    pub fn plain_hash(&self, index: u32) -> Hash {
        let at = index as usize * 32;
        self.plain_hashes
            .get(at..at + 32)
            .and_then(|h| h.try_into().ok())
            .unwrap_or(merkle::EMPTY)
    }

    /// The leaves, in order.
    pub fn leaves(&self) -> Vec<Hash> {
        (0..self.count())
            .map(|i| merkle::leaf(i, &sha256(&[self.cipher_chunk(i)]), &self.plain_hash(i)))
            .collect()
    }

    /// The root a listing of this blob commits to.
    pub fn root(&self) -> Hash {
        merkle::root(&self.leaves())
    }

    /// Opens the blob under `k`, checking every chunk against its
    /// commitment; the first that lies is named.
    pub fn open(&self, k: &[u8; 32]) -> Result<Vec<u8>, BlobError> {
        let mut out = self.cipher.to_vec();
        for (i, chunk) in out.chunks_mut(CHUNK_LEN).enumerate() {
            stream::apply(k, i as u32, chunk);
            if plain_hash(k, i as u32, chunk) != self.plain_hash(i as u32) {
                return Err(BlobError::Misdelivery { index: i as u32 });
            }
        }
        Ok(out)
    }

    /// The fraud-proof parts for chunk `index`: its ciphertext, its
    /// committed plaintext hash and its path.
    pub fn proof_parts(&self, index: u32) -> (&'a [u8], Hash, Vec<Hash>) {
        (
            self.cipher_chunk(index),
            self.plain_hash(index),
            merkle::path(&self.leaves(), index),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{listing_scalar, point_of};
    use crate::fraud::{check, Commitments, Proof, ProofError};
    use proptest::prelude::*;

    fn commitments(k: &[u8; 32], s: &Sealed) -> Commitments {
        Commitments {
            key_point: point_of(k),
            blob_root: s.root,
            plain_len: s.plain_len,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn honest_blobs_open_and_refuse_every_proof(plain in proptest::collection::vec(any::<u8>(), 1..2000), pick in any::<u32>()) {
            let k = listing_scalar(&[4; 32], &[6; 32]);
            let sealed = seal(&k, &plain).unwrap();
            let blob = Blob::parse(&sealed.bytes).unwrap();
            prop_assert_eq!(blob.root(), sealed.root);
            prop_assert_eq!(blob.open(&k).unwrap(), plain);
            let i = pick % blob.count();
            let (cipher, plain_hash, path) = blob.proof_parts(i);
            let proof = Proof { k: *k, index: i, cipher, plain_hash, path: &path };
            prop_assert_eq!(check(&commitments(&k, &sealed), &proof), Err(ProofError::Honest));
            // a wrong key is no proof
            let other = listing_scalar(&[5; 32], &[6; 32]);
            prop_assert_eq!(check(&commitments(&k, &sealed), &Proof { k: *other, ..proof.clone() }), Err(ProofError::WrongKey));
        }

        #[test]
        fn a_lying_chunk_is_found_and_proven(plain in proptest::collection::vec(any::<u8>(), 1..2000), pick in any::<u32>(), bit in 0u8..8) {
            let k = listing_scalar(&[4; 32], &[6; 32]);
            // the seller commits to `plain` but ships a ciphertext with one bit flipped, the root recomputed over it
            let honest = seal(&k, &plain).unwrap();
            let mut bytes = honest.bytes.clone();
            let count = Blob::parse(&bytes).unwrap().count();
            let i = pick % count;
            let at = HEADER_LEN + count as usize * 32 + i as usize * CHUNK_LEN;
            bytes[at] ^= 1 << bit;
            let lying = Blob::parse(&bytes).unwrap();
            let c = Commitments { key_point: point_of(&k), blob_root: lying.root(), plain_len: lying.plain_len };
            prop_assert_eq!(lying.open(&k), Err(BlobError::Misdelivery { index: i }));
            let (cipher, plain_hash, path) = lying.proof_parts(i);
            prop_assert_eq!(check(&c, &Proof { k: *k, index: i, cipher, plain_hash, path: &path }), Ok(()));
            // the same proof against the honest commitment does not reach its root
            prop_assert_eq!(check(&commitments(&k, &honest), &Proof { k: *k, index: i, cipher, plain_hash, path: &path }), Err(ProofError::BadPath));
        }
    }

    #[test]
    fn malformed_blobs_are_typed_errors() {
        assert_eq!(Blob::parse(b"short").unwrap_err(), BlobError::NotEscrowBlob);
        let sealed = seal(&[1; 32], &[7u8; 300]).unwrap();
        assert!(matches!(
            Blob::parse(&sealed.bytes[..sealed.bytes.len() - 1]),
            Err(BlobError::BadLength(_))
        ));
        let mut big = sealed.bytes.clone();
        big[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(Blob::parse(&big), Err(BlobError::BadLength(_))));
        assert!(seal(&[1; 32], &[]).is_err());
    }
}
