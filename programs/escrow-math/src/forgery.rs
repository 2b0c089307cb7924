//! A lying seller's tools: blobs sealed to lie in one chosen way, so tests
//! (here, the program's, the binaries') can show each lie is convicted.
//! Built only for tests (feature `forgery`); no client ships it.
//!
//! Owns nothing the protocol needs; never used by the node's own sealing.

use crate::blob::{seal, Blob, Format, Sealed, HEADER_LEN};
use crate::midstate::{self, Side};
use crate::tally::{self, Tally};
use crate::{chunk_count, CHUNK_LEN};

/// `bytes` as a sealed blob, its root recomputed (what a lying seller
/// lists).
pub fn resealed(bytes: Vec<u8>, plain_len: u64) -> Sealed {
    let root = Blob::parse(&bytes).expect("a blob").root();
    Sealed {
        bytes,
        root,
        plain_len,
    }
}

/// `plain` sealed (v3) with the SHA-256 states of `states_of` committed
/// instead of its own (chunk by chunk, as far as `states_of` reaches).
pub fn with_states_of(k: &[u8; 32], plain: &[u8], states_of: &[u8]) -> Sealed {
    let mut bytes = seal(k, plain).expect("seals").bytes;
    let record = Format::V3.record_len();
    let chunks = plain.len().div_ceil(CHUNK_LEN);
    for (i, (before, after)) in midstate::chain(states_of).enumerate().take(chunks) {
        let at = HEADER_LEN + i * record + 32;
        let i = i as u32;
        bytes[at..at + 32]
            .copy_from_slice(&midstate::xor(&before, &midstate::mask(k, i, Side::Before)));
        bytes[at + 32..at + 64]
            .copy_from_slice(&midstate::xor(&after, &midstate::mask(k, i, Side::After)));
    }
    resealed(bytes, plain.len() as u64)
}

/// `plain` sealed (v3) stating `extra` more memories than it holds: every
/// tally from chunk `from` on counts `extra` more, starting with chunk
/// `from`'s tally before (`at_link`: the link into it lies, or chunk 0's
/// start) or after (its step lies).
pub fn overstate_memories(
    k: &[u8; 32],
    plain: &[u8],
    from: u32,
    extra: u16,
    at_link: bool,
) -> Sealed {
    let mut bytes = seal(k, plain).expect("seals").bytes;
    let count = chunk_count(plain.len() as u64).expect("a chunk");
    for i in from..count {
        let at = HEADER_LEN + i as usize * Format::V3.record_len() + 96;
        let stored: [Tally; 2] = [
            bytes[at..at + 4].try_into().expect("4 bytes"),
            bytes[at + 4..at + 8].try_into().expect("4 bytes"),
        ];
        let is_last = i + 1 == count;
        let [mut before, mut after] = tally::masked(k, i, is_last, &stored);
        let more = |t: &mut Tally| {
            let n = tally::count(t).wrapping_add(extra).to_le_bytes();
            t[..2].copy_from_slice(&n);
        };
        if i > from || at_link {
            more(&mut before);
        }
        more(&mut after);
        let [before, after] = tally::masked(k, i, is_last, &[before, after]);
        bytes[at..at + 4].copy_from_slice(&before);
        bytes[at + 4..at + 8].copy_from_slice(&after);
    }
    resealed(bytes, plain.len() as u64)
}
