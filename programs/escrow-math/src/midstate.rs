//! SHA-256's chaining state at chunk boundaries: what binds an escrow
//! blob's plaintext to the listing's `bundle_hash`, one chunk at a time.
//!
//! A chunk is 256 bytes, four SHA-256 blocks, so chunk boundaries are block
//! boundaries and the hash of the whole plaintext is a chain of per-chunk
//! steps: `before_0 = IV`, `after_i = compress⁴(before_i, chunk_i)`,
//! `before_{i+1} = after_i`, and the last chunk's step includes SHA-256's
//! padding and ends at the digest. A v2 blob commits every chunk's
//! `before` and `after`, each XOR-masked under the listing's `k`
//! ([`mask`]), so a fraud proof checks one step (four or five compressions,
//! here in software: SBF has no compression syscall) or one link, never
//! the whole plaintext.
//!
//! Owns the compression function, the masks and the step; never touches
//! Merkle trees, accounts or the keystream.

use crate::{sha256, CHUNK_LEN};

/// A chaining state as 32 bytes: the eight words big-endian, so the state
/// after the last step is the digest itself.
pub type State = [u8; 32];

/// SHA-256's initial state.
pub const IV: State = words_to_state(&[
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

/// Domain of the keyed masks over committed states.
pub const MID_DOMAIN: &[u8] = b"brainctl-escrow-mid-v1";

/// Which of a chunk's two committed states a mask covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The state before the chunk.
    Before = 0,
    /// The state after it.
    After = 1,
    /// The memory tally before the chunk (`crate::tally`, v3 blobs).
    TallyBefore = 2,
    /// The memory tally after it.
    TallyAfter = 3,
}

/// The mask over chunk `index`'s `side` state:
/// `SHA-256("brainctl-escrow-mid-v1" ‖ k ‖ le32(index) ‖ side)`. Every
/// committed state has its own mask: with one mask per chunk, the XOR of a
/// chunk's two masked states would equal the XOR of its unmasked ones,
/// which for chunk 0 (before = IV) gives away the state after it and so
/// confirms a guess of the chunk.
pub fn mask(k: &[u8; 32], index: u32, side: Side) -> State {
    sha256(&[MID_DOMAIN, k, &index.to_le_bytes(), &[side as u8]])
}

/// `state` XOR `mask` (masks and unmasks alike).
pub fn xor(state: &State, mask: &State) -> State {
    let mut out = *state;
    out.iter_mut().zip(mask).for_each(|(o, m)| *o ^= m);
    out
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const fn words_to_state(w: &[u32; 8]) -> State {
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 8 {
        let b = w[i].to_be_bytes();
        out[4 * i] = b[0];
        out[4 * i + 1] = b[1];
        out[4 * i + 2] = b[2];
        out[4 * i + 3] = b[3];
        i += 1;
    }
    out
}

fn state_to_words(s: &State) -> [u32; 8] {
    let mut w = [0u32; 8];
    for (word, bytes) in w.iter_mut().zip(s.chunks_exact(4)) {
        *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    w
}

/// SHA-256's compression function (FIPS 180-4 §6.2.2) on one 64-byte
/// block.
pub fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
    let mut w = [0u32; 64];
    for (t, bytes) in block.chunks_exact(4).enumerate() {
        w[t] = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    for t in 16..64 {
        let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
        let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16]
            .wrapping_add(s0)
            .wrapping_add(w[t - 7])
            .wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for t in 0..64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(K[t])
            .wrapping_add(w[t]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

/// The state after chunk `index` of a `plain_len`-byte plaintext, from the
/// state before it. `chunk` must have the chunk's length (every chunk but
/// the last is [`CHUNK_LEN`] bytes); the last chunk's step appends
/// SHA-256's padding for `plain_len` and so returns the digest.
pub fn step(before: &State, chunk: &[u8], is_last: bool, plain_len: u64) -> State {
    let mut words = state_to_words(before);
    let mut blocks = chunk.chunks_exact(64);
    for block in &mut blocks {
        compress(&mut words, block.try_into().expect("64 bytes"));
    }
    if is_last {
        // the tail, 0x80, zeros, the length in bits: one or two blocks
        let tail = blocks.remainder();
        let mut pad = [0u8; 128];
        pad[..tail.len()].copy_from_slice(tail);
        pad[tail.len()] = 0x80;
        let end = if tail.len() + 9 <= 64 { 64 } else { 128 };
        pad[end - 8..end].copy_from_slice(&plain_len.wrapping_mul(8).to_be_bytes());
        for block in pad[..end].chunks_exact(64) {
            compress(&mut words, block.try_into().expect("64 bytes"));
        }
    }
    let mut out = [0u8; 32];
    for (bytes, word) in out.chunks_exact_mut(4).zip(words) {
        bytes.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// Every chunk's `(before, after)` state of `plain`, unmasked (the last
/// `after` is `SHA-256(plain)`).
pub fn chain(plain: &[u8]) -> impl Iterator<Item = (State, State)> + '_ {
    let count = plain.len().div_ceil(CHUNK_LEN);
    let mut state = IV;
    plain.chunks(CHUNK_LEN).enumerate().map(move |(i, chunk)| {
        let before = state;
        state = step(&before, chunk, i + 1 == count, plain.len() as u64);
        (before, state)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::digest::generic_array::GenericArray;
    use sha2::Digest;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Ours against RustCrypto's compression function, any state, any block.
        #[test]
        fn compress_matches_rustcryptos(state in any::<[u32; 8]>(), block in proptest::collection::vec(any::<u8>(), 64)) {
            let mut ours = state;
            compress(&mut ours, block.as_slice().try_into().unwrap());
            let mut theirs = state;
            sha2::compress256(&mut theirs, &[*GenericArray::from_slice(&block)]);
            prop_assert_eq!(ours, theirs);
        }

        /// The chain of steps ends at SHA-256 of the whole plaintext, and
        /// each link holds.
        #[test]
        fn the_chain_ends_at_the_digest(plain in proptest::collection::vec(any::<u8>(), 1..1400)) {
            let states: Vec<_> = chain(&plain).collect();
            prop_assert_eq!(states[0].0, IV);
            for pair in states.windows(2) {
                prop_assert_eq!(pair[0].1, pair[1].0);
            }
            let digest: [u8; 32] = sha2::Sha256::digest(&plain).into();
            prop_assert_eq!(states.last().unwrap().1, digest);
        }
    }

    #[test]
    fn every_tail_length_pads_right() {
        // 55/56 and 119/120 are where the padding spills into a second block
        for len in [
            1usize, 55, 56, 63, 64, 65, 119, 120, 255, 256, 257, 511, 512,
        ] {
            let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let digest: [u8; 32] = sha2::Sha256::digest(&plain).into();
            assert_eq!(chain(&plain).last().unwrap().1, digest, "length {len}");
        }
    }

    #[test]
    fn masks_differ_by_side_index_and_key() {
        let k = [3u8; 32];
        assert_ne!(mask(&k, 0, Side::Before), mask(&k, 0, Side::After));
        assert_ne!(mask(&k, 0, Side::After), mask(&k, 1, Side::Before));
        assert_ne!(mask(&k, 0, Side::After), mask(&[4u8; 32], 0, Side::After));
        assert_eq!(
            xor(
                &xor(&IV, &mask(&k, 0, Side::Before)),
                &mask(&k, 0, Side::Before)
            ),
            IV
        );
    }
}
