//! The fraud proof, decided by the program alone: the buyer reveals the
//! listing's scalar `k` (it learned `k = s − b` from the seller's reveal),
//! one chunk of the committed ciphertext, that chunk's committed plaintext
//! hash and the Merkle path binding both to the listing's root. If `k`
//! opens the listing's key commitment (`k·G = K`) and the path holds, the
//! chunk decrypts deterministically: to the committed plaintext (the
//! seller was honest, the proof is refused) or to something else (fraud).

use crate::merkle::{self, Hash};
use crate::{chunk_count, chunk_len, plain_hash, point, sha256, stream, CHUNK_LEN};

/// What a listing committed to, as the program holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commitments {
    /// K = k·G.
    pub key_point: point::Point,
    /// Root over the blob's chunk leaves.
    pub blob_root: Hash,
    /// Plaintext length in bytes (fixes the chunk count and each length).
    pub plain_len: u64,
}

/// One fraud proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof<'a> {
    /// The listing's scalar.
    pub k: point::Scalar,
    /// Which chunk.
    pub index: u32,
    /// That chunk of the committed ciphertext.
    pub cipher: &'a [u8],
    /// That chunk's committed plaintext hash.
    pub plain_hash: Hash,
    /// Its Merkle path.
    pub path: &'a [Hash],
}

/// Why a proof proves nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// `k` is not canonical or `k·G ≠ K`.
    #[error("the revealed scalar does not open the listing's key commitment")]
    WrongKey,
    /// Index past the last chunk, or a chunk of the wrong length.
    #[error("no such chunk, or a chunk of the wrong length")]
    BadChunk,
    /// The path does not bind the chunk to the committed root.
    #[error("the Merkle path does not reach the committed root")]
    BadPath,
    /// The chunk decrypts to its committed plaintext: the seller was honest.
    #[error("the chunk decrypts to its committed plaintext: no fraud")]
    Honest,
}

/// `Ok(())` when the proof shows the committed ciphertext does not decrypt
/// under the committed key to the committed plaintext.
pub fn check(c: &Commitments, p: &Proof<'_>) -> Result<(), ProofError> {
    if point::mul_base(&p.k) != Some(c.key_point) {
        return Err(ProofError::WrongKey);
    }
    let count = chunk_count(c.plain_len).ok_or(ProofError::BadChunk)?;
    if chunk_len(c.plain_len, p.index) != Some(p.cipher.len()) {
        return Err(ProofError::BadChunk);
    }
    let leaf = merkle::leaf(p.index, &sha256(&[p.cipher]), &p.plain_hash);
    if !merkle::verify(&c.blob_root, count, p.index, &leaf, p.path) {
        return Err(ProofError::BadPath);
    }
    let mut plain = [0u8; CHUNK_LEN];
    let plain = &mut plain[..p.cipher.len()];
    plain.copy_from_slice(p.cipher);
    stream::apply(&p.k, p.index, plain);
    if plain_hash(&p.k, p.index, plain) == p.plain_hash {
        return Err(ProofError::Honest);
    }
    Ok(())
}
