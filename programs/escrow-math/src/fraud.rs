//! The fraud proof, decided by the program alone: the buyer reveals the
//! listing's scalar `k` (it learned `k = s − b` from the seller's reveal),
//! one chunk of the committed ciphertext, that chunk's committed plaintext
//! hash and the Merkle path binding both to the listing's root. If `k`
//! opens the listing's key commitment (`k·G = K`) and the path holds, the
//! chunk decrypts deterministically: to the committed plaintext (the
//! seller was honest, the proof is refused) or to something else (fraud).
//!
//! Against a v2 blob (midstate commitments, `crate::midstate`) two more
//! proofs bind the plaintext to `bundle_hash`: a step proof (one chunk's
//! committed states are not SHA-256's step over its plaintext) and a link
//! proof (one chunk's state after is not the next one's state before).
//! Whenever the plaintext `k` opens does not hash to `bundle_hash`, one of
//! them holds: if every step and link were honest, the chain would run
//! from the IV through every chunk to the digest of the plaintext, and the
//! last step would end at `bundle_hash`.
//!
//! Against a v3 blob the same two proofs also carry each chunk's memory
//! tallies (`crate::tally`): a step that does not take its tally before to
//! its tally after (or chunk 0's not starting at [`tally::START`]), or a
//! link whose tallies do not join, is fraud too. So when every proof is
//! refused, the last chunk's public tally is the plaintext's true memory
//! count, the one the buyer compared with the manifest before paying.

use crate::merkle::{self, Hash};
use crate::midstate::{self, Side, State};
use crate::tally::{self, Tally};
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
    /// SHA-256 of the plaintext the listing promised (the last step of a
    /// v2 blob must end at it).
    pub bundle_hash: Hash,
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

/// A step proof against a v2 blob (midstate commitments): chunk `index`
/// does not take its committed `before` state to its committed `after`
/// (nor open to its plaintext hash, nor start at SHA-256's IV for chunk 0,
/// nor end at `bundle_hash` for the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepProof<'a> {
    /// The listing's scalar.
    pub k: point::Scalar,
    /// Which chunk.
    pub index: u32,
    /// That chunk of the committed ciphertext.
    pub cipher: &'a [u8],
    /// Its committed plaintext hash.
    pub plain_hash: Hash,
    /// Its committed masked state before.
    pub before: State,
    /// Its committed masked state after.
    pub after: State,
    /// Its committed tallies before and after (v3 blobs; `None` for v2).
    pub tallies: Option<[Tally; 2]>,
    /// Its Merkle path.
    pub path: &'a [Hash],
}

/// One v2 or v3 leaf's parts, as a link proof carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafParts {
    /// Masked state before the chunk.
    pub before: State,
    /// Masked state after it.
    pub after: State,
    /// The committed tallies before and after it (v3; `None` for v2).
    pub tallies: Option<[Tally; 2]>,
    /// `SHA-256(cipher ‖ plain_hash)`.
    pub body: Hash,
}

impl LeafParts {
    /// The leaf at `index` these parts hash to (v3 with tallies, else v2).
    pub fn leaf(&self, index: u32) -> Hash {
        match &self.tallies {
            Some(t) => merkle::leaf_v3(index, &self.before, &self.after, t, &self.body),
            None => merkle::leaf_v2(index, &self.before, &self.after, &self.body),
        }
    }
}

/// A link proof against a v2 blob: chunk `index`'s committed `after`
/// state is not chunk `index + 1`'s committed `before`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkProof<'a> {
    /// The listing's scalar (the masks are keyed by it).
    pub k: point::Scalar,
    /// The first of the two chunks.
    pub index: u32,
    /// Leaf `index`.
    pub left: LeafParts,
    /// Leaf `index + 1`.
    pub right: LeafParts,
    /// Leaf `index`'s whole path.
    pub path: &'a [Hash],
    /// Leaf `index + 1`'s path below where it joins (`merkle::next_path`).
    pub next: &'a [Hash],
}

/// `Ok(())` when the step proof shows fraud (see [`StepProof`]).
pub fn check_step(c: &Commitments, p: &StepProof<'_>) -> Result<(), ProofError> {
    check_key(c, &p.k)?;
    let count = chunk_count(c.plain_len).ok_or(ProofError::BadChunk)?;
    if chunk_len(c.plain_len, p.index) != Some(p.cipher.len()) {
        return Err(ProofError::BadChunk);
    }
    let parts = LeafParts {
        before: p.before,
        after: p.after,
        tallies: p.tallies,
        body: merkle::body(p.cipher, &p.plain_hash),
    };
    let leaf = parts.leaf(p.index);
    if !merkle::verify(&c.blob_root, count, p.index, &leaf, p.path) {
        return Err(ProofError::BadPath);
    }
    let mut buf = [0u8; CHUNK_LEN];
    let plain = decrypt(&p.k, p.index, p.cipher, &mut buf);
    let before = midstate::xor(&p.before, &midstate::mask(&p.k, p.index, Side::Before));
    let after = midstate::xor(&p.after, &midstate::mask(&p.k, p.index, Side::After));
    let is_last = p.index + 1 == count;
    let stepped = midstate::step(&before, plain, is_last, c.plain_len);
    let tallies_hold = p.tallies.is_none_or(|t| {
        let [t_before, t_after] = tally::masked(&p.k, p.index, is_last, &t);
        tally::step(&t_before, plain) == t_after && (p.index != 0 || t_before == tally::START)
    });
    let honest = plain_hash(&p.k, p.index, plain) == p.plain_hash
        && stepped == after
        && (p.index != 0 || before == midstate::IV)
        && (!is_last || stepped == c.bundle_hash)
        && tallies_hold;
    if honest {
        return Err(ProofError::Honest);
    }
    Ok(())
}

/// `Ok(())` when the link proof shows fraud (see [`LinkProof`]).
pub fn check_link(c: &Commitments, p: &LinkProof<'_>) -> Result<(), ProofError> {
    check_key(c, &p.k)?;
    let count = chunk_count(c.plain_len).ok_or(ProofError::BadChunk)?;
    let next = p.index.checked_add(1).ok_or(ProofError::BadChunk)?;
    if next >= count {
        return Err(ProofError::BadChunk);
    }
    if p.left.tallies.is_some() != p.right.tallies.is_some() {
        return Err(ProofError::BadPath);
    }
    if !merkle::verify_adjacent(
        &c.blob_root,
        count,
        p.index,
        &p.left.leaf(p.index),
        &p.right.leaf(next),
        p.path,
        p.next,
    ) {
        return Err(ProofError::BadPath);
    }
    let after = midstate::xor(&p.left.after, &midstate::mask(&p.k, p.index, Side::After));
    let before = midstate::xor(&p.right.before, &midstate::mask(&p.k, next, Side::Before));
    // the left chunk is never the last: both tallies are masked
    let tallies_join = match (p.left.tallies, p.right.tallies) {
        (Some(l), Some(r)) => {
            tally::masked(&p.k, p.index, false, &l)[1]
                == tally::masked(&p.k, next, next + 1 == count, &r)[0]
        }
        _ => true,
    };
    if after == before && tallies_join {
        return Err(ProofError::Honest);
    }
    Ok(())
}

/// Chunk `index` of the ciphertext (at most [`CHUNK_LEN`] bytes, checked
/// by the caller) decrypted under `k` into `buf`.
fn decrypt<'b>(k: &[u8; 32], index: u32, cipher: &[u8], buf: &'b mut [u8; CHUNK_LEN]) -> &'b [u8] {
    let plain = &mut buf[..cipher.len()];
    plain.copy_from_slice(cipher);
    stream::apply(k, index, plain);
    plain
}

fn check_key(c: &Commitments, k: &point::Scalar) -> Result<(), ProofError> {
    if point::mul_base(k) != Some(c.key_point) {
        return Err(ProofError::WrongKey);
    }
    Ok(())
}

/// `Ok(())` when the proof shows the committed ciphertext does not decrypt
/// under the committed key to the committed plaintext.
pub fn check(c: &Commitments, p: &Proof<'_>) -> Result<(), ProofError> {
    check_key(c, &p.k)?;
    let count = chunk_count(c.plain_len).ok_or(ProofError::BadChunk)?;
    if chunk_len(c.plain_len, p.index) != Some(p.cipher.len()) {
        return Err(ProofError::BadChunk);
    }
    let leaf = merkle::leaf(p.index, &sha256(&[p.cipher]), &p.plain_hash);
    if !merkle::verify(&c.blob_root, count, p.index, &leaf, p.path) {
        return Err(ProofError::BadPath);
    }
    let mut buf = [0u8; CHUNK_LEN];
    let plain = decrypt(&p.k, p.index, p.cipher, &mut buf);
    if plain_hash(&p.k, p.index, plain) == p.plain_hash {
        return Err(ProofError::Honest);
    }
    Ok(())
}
