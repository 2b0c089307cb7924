//! The escrow blob (ours alone; direct-pay listings keep the reference's
//! AES-GCM bytes): what a seller uploads to Arweave when listing through
//! the escrow, public before any payment.
//!
//! ```text
//! v3: "BCESCRW3" ‖ le32(CHUNK_LEN) ‖ le64(plain_len)
//!       ‖ (plain_hash_i ‖ before_i ⊕ mask(k, i, 0) ‖ after_i ⊕ mask(k, i, 1)
//!          ‖ tally_before_i ⊕ tmask(k, i, 2) ‖ tally_after_i ⊕ tmask(k, i, 3)) for each chunk
//!       ‖ ciphertext            (the last chunk's tally_after unmasked: the public count)
//! v2: "BCESCRW2" ‖ le32(CHUNK_LEN) ‖ le64(plain_len)
//!       ‖ (plain_hash(k, i, plain_i) ‖ before_i ⊕ mask(k, i, 0) ‖ after_i ⊕ mask(k, i, 1)) for each chunk
//!       ‖ ciphertext
//! v1: "BCESCRW1" ‖ le32(CHUNK_LEN) ‖ le64(plain_len) ‖ plain_hash(k, i, plain_i) for each chunk ‖ ciphertext
//! ```
//!
//! The ciphertext is the plaintext with [`crate::stream`]'s keystream under
//! the listing's `k`; `before_i`/`after_i` are SHA-256's chaining states
//! around chunk `i` ([`crate::midstate`]). From the blob alone anyone
//! recomputes the listing's committed root; after the reveal the buyer
//! opens it, chunk by chunk checked, and holds a fraud proof for the first
//! chunk (or link) that lies. A v3 blob also commits the memory tally
//! around each chunk ([`crate::tally`]), so its last, public tally is the
//! plaintext's provable memory count. New listings seal v3; v2 and v1
//! blobs (listed before) still parse, open and prove what they commit (v1:
//! a lying chunk only).

use crate::fraud::LeafParts;
use crate::merkle::{self, Hash};
use crate::midstate::{self, Side, State};
use crate::tally::{self, Tally};
use crate::{chunk_count, plain_hash, sha256, stream, CHUNK_LEN};

/// First bytes of a v1 escrow blob (no midstate commitments: listings
/// made before them; they still trade, without the bundle_hash proof).
pub const MAGIC: &[u8; 8] = b"BCESCRW1";
/// First bytes of a v2 escrow blob: each chunk also commits its masked
/// SHA-256 states before and after it, so a plaintext that does not hash
/// to `bundle_hash` is provable fraud.
pub const MAGIC_V2: &[u8; 8] = b"BCESCRW2";
/// First bytes of a v3 blob: midstates and memory tallies, so a lying
/// memory count is provable too.
pub const MAGIC_V3: &[u8; 8] = b"BCESCRW3";
/// Header bytes before the per-chunk commitments.
pub const HEADER_LEN: usize = 8 + 4 + 8;

/// Which blob format: what a dispute against it can prove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Chunk hashes only: a chunk that does not open to its hash is
    /// provable; a plaintext that is not the promised bundle is not.
    V1,
    /// Chunk hashes and masked midstates: both are provable.
    V2,
    /// V2 and masked memory tallies: a memory count other than the one
    /// the blob states publicly is provable as well.
    V3,
}

impl Format {
    /// Committed bytes per chunk before the ciphertext.
    pub fn record_len(self) -> usize {
        match self {
            Format::V1 => 32,
            Format::V2 => 96,
            Format::V3 => 104,
        }
    }

    /// Whether it commits SHA-256's midstates (v2 and v3).
    pub fn has_midstates(self) -> bool {
        self != Format::V1
    }

    /// The number manifests give it in `escrow_terms.blob_format`.
    pub fn number(self) -> u8 {
        match self {
            Format::V1 => 1,
            Format::V2 => 2,
            Format::V3 => 3,
        }
    }

    /// The format a manifest's `blob_format` number names.
    pub fn from_number(n: u64) -> Option<Format> {
        match n {
            1 => Some(Format::V1),
            2 => Some(Format::V2),
            3 => Some(Format::V3),
            _ => None,
        }
    }

    fn magic(self) -> &'static [u8; 8] {
        match self {
            Format::V1 => MAGIC,
            Format::V2 => MAGIC_V2,
            Format::V3 => MAGIC_V3,
        }
    }
}

/// Why bytes are not an escrow blob, or do not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// Wrong magic or chunk size.
    #[error("not an escrow blob (magic or chunk size)")]
    NotEscrowBlob,
    /// Empty, too large, or lengths that do not add up.
    #[error("escrow blob lengths do not add up: {0}")]
    BadLength(&'static str),
    /// The key opened chunk `index` to something other than its
    /// commitment (its plaintext hash, or in a v2 blob its SHA-256 step,
    /// the IV before chunk 0 or `bundle_hash` after the last): a step proof
    /// (v1: a chunk proof) convicts.
    #[error("chunk {index} does not decrypt to its committed plaintext")]
    Misdelivery {
        /// The first lying chunk.
        index: u32,
    },
    /// Chunk `index`'s committed state after is not chunk `index + 1`'s
    /// state before: a link proof convicts.
    #[error("chunk {index}'s committed hash state does not continue into chunk {}", index + 1)]
    BrokenLink {
        /// The first of the two chunks.
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

/// Seals `plain` under `k` in the current format (v3).
pub fn seal(k: &[u8; 32], plain: &[u8]) -> Result<Sealed, BlobError> {
    seal_as(Format::V3, k, plain)
}

/// Seals `plain` under `k` in the v2 format (midstates, no tallies): what
/// listings made before v3 hold; kept for their tests.
pub fn seal_v2(k: &[u8; 32], plain: &[u8]) -> Result<Sealed, BlobError> {
    seal_as(Format::V2, k, plain)
}

/// Seals `plain` under `k` in the v1 format (no midstates): what listings
/// made before v2 hold; kept for their tests.
pub fn seal_v1(k: &[u8; 32], plain: &[u8]) -> Result<Sealed, BlobError> {
    seal_as(Format::V1, k, plain)
}

fn seal_as(format: Format, k: &[u8; 32], plain: &[u8]) -> Result<Sealed, BlobError> {
    let count =
        chunk_count(plain.len() as u64).ok_or(BlobError::BadLength("empty or over 32 MiB"))?;
    let mut bytes =
        Vec::with_capacity(HEADER_LEN + count as usize * format.record_len() + plain.len());
    bytes.extend_from_slice(format.magic());
    bytes.extend_from_slice(&(CHUNK_LEN as u32).to_le_bytes());
    bytes.extend_from_slice(&(plain.len() as u64).to_le_bytes());
    let mut states = midstate::chain(plain);
    let mut tallies = tally::chain(plain);
    for (i, chunk) in plain.chunks(CHUNK_LEN).enumerate() {
        let i = i as u32;
        bytes.extend_from_slice(&plain_hash(k, i, chunk));
        if format.has_midstates() {
            let (before, after) = states.next().expect("one state pair a chunk");
            bytes.extend_from_slice(&midstate::xor(&before, &midstate::mask(k, i, Side::Before)));
            bytes.extend_from_slice(&midstate::xor(&after, &midstate::mask(k, i, Side::After)));
        }
        if format == Format::V3 {
            let (before, after) = tallies.next().expect("one tally pair a chunk");
            let [before, after] = tally::masked(k, i, i + 1 == count, &[before, after]);
            bytes.extend_from_slice(&before);
            bytes.extend_from_slice(&after);
        }
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
    /// Its format.
    pub format: Format,
    /// Plaintext length.
    pub plain_len: u64,
    records: &'a [u8],
    cipher: &'a [u8],
}

/// A step proof's parts, as the blob commits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepParts<'a> {
    /// The chunk's ciphertext.
    pub cipher: &'a [u8],
    /// Its committed plaintext hash.
    pub plain_hash: Hash,
    /// Its committed masked states before and after.
    pub before: State,
    /// The state after.
    pub after: State,
    /// Its committed tallies before and after (v3).
    pub tallies: Option<[Tally; 2]>,
    /// Its Merkle path.
    pub path: Vec<Hash>,
}

/// A link proof's parts: both leaves, the first's path, the second's path
/// below the join.
pub type LinkParts = (LeafParts, LeafParts, Vec<Hash>, Vec<Hash>);

impl<'a> Blob<'a> {
    /// Parses and checks the lengths.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BlobError> {
        let header = bytes.get(..HEADER_LEN).ok_or(BlobError::NotEscrowBlob)?;
        let format = match &header[..8] {
            m if m == MAGIC => Format::V1,
            m if m == MAGIC_V2 => Format::V2,
            m if m == MAGIC_V3 => Format::V3,
            _ => return Err(BlobError::NotEscrowBlob),
        };
        if header[8..12] != (CHUNK_LEN as u32).to_le_bytes() {
            return Err(BlobError::NotEscrowBlob);
        }
        let plain_len = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
        let count = chunk_count(plain_len).ok_or(BlobError::BadLength("empty or over 32 MiB"))?;
        let records_end = HEADER_LEN + count as usize * format.record_len();
        if bytes.len() as u64 != records_end as u64 + plain_len {
            return Err(BlobError::BadLength(
                "the blob's size is not header + commitments + plaintext length",
            ));
        }
        Ok(Blob {
            format,
            plain_len,
            records: &bytes[HEADER_LEN..records_end],
            cipher: &bytes[records_end..],
        })
    }

    /// Number of chunks.
    pub fn count(&self) -> u32 {
        (self.records.len() / self.format.record_len()) as u32
    }

    /// Where the ciphertext starts in the blob's bytes.
    pub fn cipher_offset(&self) -> usize {
        HEADER_LEN + self.records.len()
    }

    /// Chunk `index` of the ciphertext.
    pub fn cipher_chunk(&self, index: u32) -> &'a [u8] {
        self.cipher
            .chunks(CHUNK_LEN)
            .nth(index as usize)
            .unwrap_or(&[])
    }

    fn record(&self, index: u32, at: usize) -> Hash {
        let start = index as usize * self.format.record_len() + at;
        self.records
            .get(start..start + 32)
            .and_then(|h| h.try_into().ok())
            .unwrap_or(merkle::EMPTY)
    }

    /// The committed plaintext hash of chunk `index`.
    pub fn plain_hash(&self, index: u32) -> Hash {
        self.record(index, 0)
    }

    /// The committed masked states before and after chunk `index` (v2,
    /// v3; zeros in a v1 blob).
    pub fn states(&self, index: u32) -> (State, State) {
        match self.format {
            Format::V1 => (merkle::EMPTY, merkle::EMPTY),
            Format::V2 | Format::V3 => (self.record(index, 32), self.record(index, 64)),
        }
    }

    /// The committed tallies before and after chunk `index`, as stored
    /// (v3; `None` before).
    pub fn tallies(&self, index: u32) -> Option<[Tally; 2]> {
        if self.format != Format::V3 {
            return None;
        }
        let start = index as usize * self.format.record_len() + 96;
        let t = self.records.get(start..start + 8)?;
        Some([
            t[..4].try_into().expect("4 bytes"),
            t[4..].try_into().expect("4 bytes"),
        ])
    }

    /// The memory count the blob states publicly (the last chunk's tally
    /// after it; v3 only): what the buyer compares with the manifest
    /// before paying, and what the proofs hold the plaintext to.
    pub fn stated_memories(&self) -> Option<u16> {
        let last = self.count().checked_sub(1)?;
        self.tallies(last).map(|t| tally::count(&t[1]))
    }

    /// Leaf `index`'s parts (v2, v3).
    pub fn leaf_parts(&self, index: u32) -> LeafParts {
        let (before, after) = self.states(index);
        LeafParts {
            before,
            after,
            tallies: self.tallies(index),
            body: merkle::body(self.cipher_chunk(index), &self.plain_hash(index)),
        }
    }

    /// The leaves, in order.
    pub fn leaves(&self) -> Vec<Hash> {
        (0..self.count())
            .map(|i| match self.format {
                Format::V1 => {
                    merkle::leaf(i, &sha256(&[self.cipher_chunk(i)]), &self.plain_hash(i))
                }
                Format::V2 | Format::V3 => self.leaf_parts(i).leaf(i),
            })
            .collect()
    }

    /// The root a listing of this blob commits to.
    pub fn root(&self) -> Hash {
        merkle::root(&self.leaves())
    }

    /// Opens the blob under `k`, checking every chunk against its
    /// commitments, in order; the first that lies is named. A v2 or v3
    /// blob that opens is the plaintext whose SHA-256 is `bundle_hash` (a
    /// v3 one holds [`Blob::stated_memories`] memories); a v1 blob's
    /// plaintext is not checked against it here.
    pub fn open(&self, k: &[u8; 32], bundle_hash: &Hash) -> Result<Vec<u8>, BlobError> {
        let count = self.count();
        let mut out = self.cipher.to_vec();
        for (i, chunk) in out.chunks_mut(CHUNK_LEN).enumerate() {
            let i = i as u32;
            stream::apply(k, i, chunk);
            if plain_hash(k, i, chunk) != self.plain_hash(i) {
                return Err(BlobError::Misdelivery { index: i });
            }
            if self.format == Format::V1 {
                continue;
            }
            let (before, after) = self.unmasked(k, i);
            let stepped = midstate::step(&before, chunk, i + 1 == count, self.plain_len);
            let tallies = self.unmasked_tallies(k, i);
            let tally_lies = tallies.is_some_and(|[tb, ta]| {
                tally::step(&tb, chunk) != ta || (i == 0 && tb != tally::START)
            });
            if stepped != after
                || (i == 0 && before != midstate::IV)
                || (i + 1 == count && stepped != *bundle_hash)
                || tally_lies
            {
                return Err(BlobError::Misdelivery { index: i });
            }
            let next_tally = |t: Option<[Tally; 2]>| t.map(|[_, after]| after);
            if i + 1 < count
                && (after != self.unmasked(k, i + 1).0
                    || next_tally(tallies)
                        != self.unmasked_tallies(k, i + 1).map(|[before, _]| before))
            {
                return Err(BlobError::BrokenLink { index: i });
            }
        }
        Ok(out)
    }

    fn unmasked_tallies(&self, k: &[u8; 32], index: u32) -> Option<[Tally; 2]> {
        let t = self.tallies(index)?;
        Some(tally::masked(k, index, index + 1 == self.count(), &t))
    }

    fn unmasked(&self, k: &[u8; 32], index: u32) -> (State, State) {
        let (before, after) = self.states(index);
        (
            midstate::xor(&before, &midstate::mask(k, index, Side::Before)),
            midstate::xor(&after, &midstate::mask(k, index, Side::After)),
        )
    }

    /// The v1 chunk-proof parts for chunk `index`: its ciphertext, its
    /// committed plaintext hash and its path.
    pub fn proof_parts(&self, index: u32) -> (&'a [u8], Hash, Vec<Hash>) {
        (
            self.cipher_chunk(index),
            self.plain_hash(index),
            merkle::path(&self.leaves(), index),
        )
    }

    /// The v2/v3 step-proof parts for chunk `index`.
    pub fn step_parts(&self, index: u32) -> StepParts<'a> {
        let (before, after) = self.states(index);
        StepParts {
            cipher: self.cipher_chunk(index),
            plain_hash: self.plain_hash(index),
            before,
            after,
            tallies: self.tallies(index),
            path: merkle::path(&self.leaves(), index),
        }
    }

    /// The v2 link-proof parts between chunks `index` and `index + 1`.
    pub fn link_parts(&self, index: u32) -> LinkParts {
        let leaves = self.leaves();
        (
            self.leaf_parts(index),
            self.leaf_parts(index + 1),
            merkle::path(&leaves, index),
            merkle::next_path(&leaves, index),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{listing_scalar, point_of};
    use crate::fraud::{
        check, check_link, check_step, Commitments, LinkProof, Proof, ProofError, StepProof,
    };
    use proptest::prelude::*;

    fn commitments(k: &[u8; 32], s: &Sealed, bundle_hash: Hash) -> Commitments {
        Commitments {
            key_point: point_of(k),
            blob_root: s.root,
            plain_len: s.plain_len,
            bundle_hash,
        }
    }

    fn step<'a>(k: &[u8; 32], blob: &Blob<'a>, i: u32, path: &'a mut Vec<Hash>) -> StepProof<'a> {
        let parts = blob.step_parts(i);
        *path = parts.path;
        StepProof {
            k: *k,
            index: i,
            cipher: parts.cipher,
            plain_hash: parts.plain_hash,
            before: parts.before,
            after: parts.after,
            tallies: parts.tallies,
            path,
        }
    }

    type Verdicts = Vec<Result<(), ProofError>>;

    /// Every step and every link proof against `sealed`, as the program
    /// decides them: the verdicts, index by index.
    fn verdicts(k: &[u8; 32], sealed: &Sealed, bundle_hash: Hash) -> (Verdicts, Verdicts) {
        let c = commitments(k, sealed, bundle_hash);
        let blob = Blob::parse(&sealed.bytes).unwrap();
        let steps = (0..blob.count())
            .map(|i| {
                let mut path = Vec::new();
                check_step(&c, &step(k, &blob, i, &mut path))
            })
            .collect();
        let links = (0..blob.count() - 1)
            .map(|i| {
                let (left, right, path, next) = blob.link_parts(i);
                check_link(
                    &c,
                    &LinkProof {
                        k: *k,
                        index: i,
                        left,
                        right,
                        path: &path,
                        next: &next,
                    },
                )
            })
            .collect();
        (steps, links)
    }

    /// The proof the client builds from what `open` names.
    fn convicted(k: &[u8; 32], sealed: &Sealed, bundle_hash: Hash) -> bool {
        let blob = Blob::parse(&sealed.bytes).unwrap();
        let c = commitments(k, sealed, bundle_hash);
        match blob.open(k, &bundle_hash) {
            Ok(_) => false,
            Err(BlobError::Misdelivery { index }) => {
                let mut path = Vec::new();
                check_step(&c, &step(k, &blob, index, &mut path)) == Ok(())
            }
            Err(BlobError::BrokenLink { index }) => {
                let (left, right, path, next) = blob.link_parts(index);
                check_link(
                    &c,
                    &LinkProof {
                        k: *k,
                        index,
                        left,
                        right,
                        path: &path,
                        next: &next,
                    },
                ) == Ok(())
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn digest(plain: &[u8]) -> Hash {
        sha256(&[plain])
    }

    fn resealed(bytes: Vec<u8>, plain_len: u64) -> Sealed {
        let root = Blob::parse(&bytes).unwrap().root();
        Sealed {
            bytes,
            root,
            plain_len,
        }
    }

    /// Re-seals `plain` (current format) with chunk `j`'s committed states
    /// replaced by a step from `start` (consistent in itself, so only a
    /// link can show it).
    fn with_forged_states(k: &[u8; 32], plain: &[u8], j: u32, start: State) -> Sealed {
        let mut bytes = seal(k, plain).unwrap().bytes;
        let count = chunk_count(plain.len() as u64).unwrap();
        let chunk = plain.chunks(CHUNK_LEN).nth(j as usize).unwrap();
        let after = midstate::step(&start, chunk, j + 1 == count, plain.len() as u64);
        let at = HEADER_LEN + j as usize * Format::V3.record_len() + 32;
        bytes[at..at + 32]
            .copy_from_slice(&midstate::xor(&start, &midstate::mask(k, j, Side::Before)));
        bytes[at + 32..at + 64]
            .copy_from_slice(&midstate::xor(&after, &midstate::mask(k, j, Side::After)));
        resealed(bytes, plain.len() as u64)
    }

    /// A canonical-looking bundle of `n` memories of `size` content bytes.
    fn bundle(n: usize, size: usize) -> Vec<u8> {
        let rows: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"agent_id":"a","content":"{}","id":{i}}}"#,
                    "m{".repeat(size / 2)
                )
            })
            .collect();
        format!(
            r#"{{"filter_used":{{"agent_id":null}},"memories":[{}],"version":1}}"#,
            rows.join(",")
        )
        .into_bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn honest_v2_and_v3_blobs_open_and_refuse_every_step_and_link(plain in proptest::collection::vec(any::<u8>(), 1..1600), v3 in any::<bool>()) {
            let k = listing_scalar(&[4; 32], &[6; 32]);
            let sealed = if v3 { seal(&k, &plain).unwrap() } else { seal_v2(&k, &plain).unwrap() };
            let blob = Blob::parse(&sealed.bytes).unwrap();
            prop_assert_eq!(blob.format, if v3 { Format::V3 } else { Format::V2 });
            prop_assert_eq!(blob.stated_memories(), v3.then(|| tally::count_of(&plain)));
            prop_assert_eq!(blob.open(&k, &digest(&plain)).unwrap(), plain.clone());
            let (steps, links) = verdicts(&k, &sealed, digest(&plain));
            prop_assert!(steps.iter().all(|v| *v == Err(ProofError::Honest)), "{:?}", steps);
            prop_assert!(links.iter().all(|v| *v == Err(ProofError::Honest)), "{:?}", links);
            // a wrong key, or another listing's commitments, prove nothing
            let other = listing_scalar(&[5; 32], &[6; 32]);
            let mut path = Vec::new();
            let wrong_key = StepProof { k: *other, ..step(&k, &blob, 0, &mut path) };
            prop_assert_eq!(check_step(&commitments(&k, &sealed, digest(&plain)), &wrong_key), Err(ProofError::WrongKey));
        }

        /// Whatever else the seller sealed under the promised bundle_hash,
        /// opening names a chunk or link and its proof convicts.
        #[test]
        fn another_plaintext_is_always_convicted(
            plain in proptest::collection::vec(any::<u8>(), 2..1600),
            pick in any::<u32>(),
            bit in 0u8..8,
            how in 0u8..5,
        ) {
            let k = listing_scalar(&[4; 32], &[6; 32]);
            let promised = digest(&plain);
            let count = chunk_count(plain.len() as u64).unwrap();
            let sealed = match how {
                // one bit changed, sealed consistently
                0 => {
                    let mut other = plain.clone();
                    other[pick as usize % plain.len()] ^= 1 << bit;
                    seal(&k, &other).unwrap()
                }
                // two chunks swapped (or, with one chunk, reversed)
                1 => {
                    let mut other = plain.clone();
                    if count >= 2 && plain.len() >= 2 * CHUNK_LEN {
                        let (a, b) = other.split_at_mut(CHUNK_LEN);
                        a.swap_with_slice(&mut b[..CHUNK_LEN]);
                    } else {
                        other.reverse();
                    }
                    prop_assume!(other != plain);
                    seal(&k, &other).unwrap()
                }
                // truncated
                2 => seal(&k, &plain[..1 + pick as usize % (plain.len() - 1)]).unwrap(),
                // the right plaintext, a wrong bundle_hash promised: checked below
                3 => seal(&k, &plain).unwrap(),
                // the right plaintext, one chunk's states forged consistently
                _ => {
                    let j = pick % count;
                    let mut start = midstate::IV;
                    start[bit as usize] ^= 1;
                    with_forged_states(&k, &plain, j, start)
                }
            };
            let promised = if how == 3 { digest(b"another bundle") } else { promised };
            prop_assert!(convicted(&k, &sealed, promised));
        }

        /// A bundle whose blob states more memories than it holds is
        /// convicted, wherever the tallies first lie; an honest one states
        /// its count and refuses every proof.
        #[test]
        fn a_lying_memory_count_is_always_convicted(
            n in 0usize..12,
            size in 0usize..400,
            pick in any::<u32>(),
            extra in 1u16..5,
            at_link in any::<bool>(),
        ) {
            let k = listing_scalar(&[4; 32], &[6; 32]);
            let plain = bundle(n, size);
            let honest = seal(&k, &plain).unwrap();
            prop_assert_eq!(Blob::parse(&honest.bytes).unwrap().stated_memories(), Some(n as u16));
            let (steps, links) = verdicts(&k, &honest, digest(&plain));
            prop_assert!(steps.iter().chain(&links).all(|v| *v == Err(ProofError::Honest)));
            let count = chunk_count(plain.len() as u64).unwrap();
            let lying = crate::forgery::overstate_memories(&k, &plain, pick % count, extra, at_link);
            let blob = Blob::parse(&lying.bytes).unwrap();
            prop_assert_eq!(blob.stated_memories(), Some(n as u16 + extra));
            prop_assert!(blob.open(&k, &digest(&plain)).is_err());
            prop_assert!(convicted(&k, &lying, digest(&plain)));
        }

        #[test]
        fn v1_blobs_still_open_and_prove_a_lying_chunk(plain in proptest::collection::vec(any::<u8>(), 1..2000), pick in any::<u32>(), bit in 0u8..8) {
            let k = listing_scalar(&[4; 32], &[6; 32]);
            let honest = seal_v1(&k, &plain).unwrap();
            let blob = Blob::parse(&honest.bytes).unwrap();
            prop_assert_eq!(blob.format, Format::V1);
            // v1 does not check the plaintext against bundle_hash: any value opens
            prop_assert_eq!(blob.open(&k, &[0; 32]).unwrap(), plain.clone());
            let i = pick % blob.count();
            let (cipher, plain_hash, path) = blob.proof_parts(i);
            let c = commitments(&k, &honest, [0; 32]);
            prop_assert_eq!(check(&c, &Proof { k: *k, index: i, cipher, plain_hash, path: &path }), Err(ProofError::Honest));
            // one bit flipped in the ciphertext, the root recomputed over it
            let mut bytes = honest.bytes.clone();
            bytes[blob.cipher_offset() + i as usize * CHUNK_LEN] ^= 1 << bit;
            let lying = Blob::parse(&bytes).unwrap();
            let lc = Commitments { blob_root: lying.root(), ..c };
            prop_assert_eq!(lying.open(&k, &[0; 32]), Err(BlobError::Misdelivery { index: i }));
            let (cipher, plain_hash, path) = lying.proof_parts(i);
            prop_assert_eq!(check(&lc, &Proof { k: *k, index: i, cipher, plain_hash, path: &path }), Ok(()));
            prop_assert_eq!(check(&c, &Proof { k: *k, index: i, cipher, plain_hash, path: &path }), Err(ProofError::BadPath));
            // no v2 proof reaches a v1 root
            let v2 = seal(&k, &plain).unwrap();
            let v2blob = Blob::parse(&v2.bytes).unwrap();
            let mut p = Vec::new();
            prop_assert_eq!(check_step(&c, &step(&k, &v2blob, i, &mut p)), Err(ProofError::BadPath));
        }
    }

    #[test]
    fn a_broken_link_is_named_and_proven() {
        let k = listing_scalar(&[4; 32], &[6; 32]);
        let plain: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let sealed = with_forged_states(&k, &plain, 2, [9; 32]);
        let blob = Blob::parse(&sealed.bytes).unwrap();
        assert_eq!(
            blob.open(&k, &digest(&plain)),
            Err(BlobError::BrokenLink { index: 1 })
        );
        let (steps, links) = verdicts(&k, &sealed, digest(&plain));
        assert!(steps.iter().all(|v| *v == Err(ProofError::Honest)));
        assert_eq!(links, vec![Err(ProofError::Honest), Ok(()), Ok(())]);
    }

    #[test]
    fn malformed_blobs_are_typed_errors() {
        assert_eq!(Blob::parse(b"short").unwrap_err(), BlobError::NotEscrowBlob);
        for sealed in [
            seal(&[1; 32], &[7u8; 300]).unwrap(),
            seal_v1(&[1; 32], &[7u8; 300]).unwrap(),
        ] {
            assert!(matches!(
                Blob::parse(&sealed.bytes[..sealed.bytes.len() - 1]),
                Err(BlobError::BadLength(_))
            ));
            let mut big = sealed.bytes.clone();
            big[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
            assert!(matches!(Blob::parse(&big), Err(BlobError::BadLength(_))));
        }
        assert!(seal(&[1; 32], &[]).is_err());
    }
}
