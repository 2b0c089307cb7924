//! The memory count a bundle's plaintext holds, as a chain of small states
//! across chunks, the way [`crate::midstate`] chains SHA-256: what binds a
//! v3 blob's plaintext to the memory count the signed manifest promises.
//!
//! The count is defined by one byte-level automaton over the plaintext
//! (a JSON lexer that knows only strings, escapes and nesting): the
//! objects opened directly inside an array that is the value of the key
//! `"memories"` of the top-level object, spelled exactly
//! `"memories":[` (the canonical bundle's bytes: sorted keys, no
//! whitespace). In a canonical bundle that is the number of memories; in
//! anything else (not JSON, the memories under another key, garbage) it is
//! whatever the automaton counts, usually 0, so a seller who promises `n`
//! memories and seals something else is caught by the same proofs.
//!
//! A [`Tally`] is the automaton's whole state in 4 bytes: the count so
//! far, the nesting depth, how much of `"memories":[` was just seen, and
//! whether the lexer is inside a string, after a backslash, or inside the
//! memories array. A v3 blob commits every chunk's tally before and after
//! it, masked under `k` like the hash states, except the last chunk's
//! tally after, which is the public claim: the buyer compares its count
//! with the manifest before paying, and a step or link proof convicts a
//! chain of tallies that does not reach it honestly.
//!
//! Owns the automaton, its packing and its masks; never touches Merkle
//! trees, SHA-256 states or accounts.

use crate::midstate::{self, Side};

/// The automaton's state between two bytes, packed:
/// `le16(count) ‖ depth ‖ flags` (flags: bits 0–3 how many bytes of
/// `"memories":[` were just matched, bit 4 in a string, bit 5 after a
/// backslash in one, bit 6 inside the memories array).
pub type Tally = [u8; 4];

/// The state before the first byte.
pub const START: Tally = [0; 4];

/// The key whose array's objects are counted, as the canonical bundle
/// spells it.
const KEY: &[u8; 12] = br#""memories":["#;

const IN_STRING: u8 = 1 << 4;
const ESCAPED: u8 = 1 << 5;
const IN_MEMORIES: u8 = 1 << 6;

#[derive(Debug, Clone, Copy)]
struct Lexer {
    count: u16,
    depth: u8,
    matched: u8,
    in_string: bool,
    escaped: bool,
    in_memories: bool,
}

impl Lexer {
    /// Any 4 bytes unpack (a forged tally too): the rule is total.
    fn unpack(t: &Tally) -> Self {
        Lexer {
            count: u16::from_le_bytes([t[0], t[1]]),
            depth: t[2],
            matched: t[3] & 0x0f,
            in_string: t[3] & IN_STRING != 0,
            escaped: t[3] & ESCAPED != 0,
            in_memories: t[3] & IN_MEMORIES != 0,
        }
    }

    fn pack(&self) -> Tally {
        let [lo, hi] = self.count.to_le_bytes();
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        [
            lo,
            hi,
            self.depth,
            self.matched
                | flag(self.in_string, IN_STRING)
                | flag(self.escaped, ESCAPED)
                | flag(self.in_memories, IN_MEMORIES),
        ]
    }

    fn byte(&mut self, b: u8) {
        let was_in_string = self.in_string;
        // `"memories":[` opening at depth 1, outside a string
        let m = self.matched as usize;
        self.matched = if m > 0 && m < KEY.len() && b == KEY[m] {
            self.matched + 1
        } else {
            0
        };
        if self.matched == 0 && b == b'"' && !was_in_string && self.depth == 1 {
            self.matched = 1;
        }
        if was_in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
        } else {
            match b {
                b'"' => self.in_string = true,
                b'{' => {
                    if self.in_memories && self.depth == 2 {
                        self.count = self.count.saturating_add(1);
                    }
                    self.depth = self.depth.saturating_add(1);
                }
                b'[' => self.depth = self.depth.saturating_add(1),
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth < 2 {
                        self.in_memories = false;
                    }
                }
                _ => {}
            }
        }
        if self.matched as usize == KEY.len() {
            self.in_memories = true;
            self.matched = 0;
        }
    }
}

/// The tally after `bytes`, from the tally before them.
pub fn step(before: &Tally, bytes: &[u8]) -> Tally {
    let mut lexer = Lexer::unpack(before);
    for &b in bytes {
        lexer.byte(b);
    }
    lexer.pack()
}

/// The memories a tally has counted.
pub fn count(t: &Tally) -> u16 {
    u16::from_le_bytes([t[0], t[1]])
}

/// The memory count of a whole plaintext.
pub fn count_of(plain: &[u8]) -> u16 {
    count(&step(&START, plain))
}

/// Every chunk's `(before, after)` tally of `plain`, unmasked.
pub fn chain(plain: &[u8]) -> impl Iterator<Item = (Tally, Tally)> + '_ {
    let mut t = START;
    plain.chunks(crate::CHUNK_LEN).map(move |chunk| {
        let before = t;
        t = step(&before, chunk);
        (before, t)
    })
}

/// The mask over chunk `index`'s tally before it (`after: false`) or
/// after it: the first 4 bytes of [`midstate::mask`] with its own side.
pub fn mask(k: &[u8; 32], index: u32, after: bool) -> Tally {
    let side = if after {
        Side::TallyAfter
    } else {
        Side::TallyBefore
    };
    let m = midstate::mask(k, index, side);
    [m[0], m[1], m[2], m[3]]
}

/// `t` XOR `mask` (masks and unmasks alike).
pub fn xor(t: &Tally, mask: &Tally) -> Tally {
    [
        t[0] ^ mask[0],
        t[1] ^ mask[1],
        t[2] ^ mask[2],
        t[3] ^ mask[3],
    ]
}

/// Chunk `index`'s tallies `[before, after]` with their masks applied:
/// the stored ones of true ones, the true ones of stored ones (XOR masks
/// and unmasks alike); the last chunk's after is public, never masked.
pub fn masked(k: &[u8; 32], index: u32, is_last: bool, t: &[Tally; 2]) -> [Tally; 2] {
    let after = if is_last {
        t[1]
    } else {
        xor(&t[1], &mask(k, index, true))
    };
    [xor(&t[0], &mask(k, index, false)), after]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bundle(n: usize) -> Vec<u8> {
        let mut out =
            br#"{"filter_used":{"agent_id":null,"ids":[1,2]},"generated_at":"x","memories":["#
                .to_vec();
        for i in 0..n {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(
                format!(r#"{{"agent_id":"a","content":"{{\"memories\":[{{}}]}} [{{","id":{i},"tags":"[\"x\"]"}}"#)
                    .as_bytes(),
            );
        }
        out.extend_from_slice(br#"],"version":1}"#);
        out
    }

    #[test]
    fn counts_the_memories_of_a_canonical_bundle_and_nothing_else() {
        for n in [0, 1, 2, 7, 300] {
            assert_eq!(count_of(&bundle(n)), n as u16, "{n}");
        }
        // the key elsewhere, or spelled otherwise, counts nothing
        assert_eq!(count_of(br#"{"x":{"memories":[{},{}]}}"#), 0);
        assert_eq!(count_of(br#"{"memories": [{},{}]}"#), 0);
        assert_eq!(count_of(br#"{"memories":[[{}],{}]}"#), 1);
        assert_eq!(count_of(b"garbage { [ \"memories\":[{}] }"), 0);
        assert_eq!(count_of(br#"{"a":"\"memories\":[{}]","memories":[{}]}"#), 1);
    }

    proptest! {
        /// Chunk by chunk, the chain reaches the whole plaintext's tally.
        #[test]
        fn the_chain_is_the_whole(n in 0usize..40, cut in any::<u16>()) {
            let plain = bundle(n);
            let states: Vec<_> = chain(&plain).collect();
            prop_assert_eq!(states[0].0, START);
            for pair in states.windows(2) {
                prop_assert_eq!(pair[0].1, pair[1].0);
            }
            prop_assert_eq!(count(&states.last().unwrap().1), n as u16);
            // any split point: the state carries everything
            let at = cut as usize % plain.len();
            prop_assert_eq!(step(&step(&START, &plain[..at]), &plain[at..]), step(&START, &plain));
        }

        /// Any 4 bytes are a state: no input panics, and packing is stable.
        #[test]
        fn every_state_steps(t in any::<[u8; 4]>(), bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let after = step(&t, &bytes);
            prop_assert_eq!(step(&after, &[]), after);
        }
    }

    #[test]
    fn masks_are_per_side_and_the_last_claim_is_public() {
        let k = [3u8; 32];
        assert_ne!(mask(&k, 0, false), mask(&k, 0, true));
        let t = [5, 0, 0, 0];
        assert_eq!(masked(&k, 2, true, &[t, t])[1], t);
        assert_eq!(
            xor(&masked(&k, 2, false, &[t, t])[1], &mask(&k, 2, true)),
            t
        );
        assert_eq!(masked(&k, 2, false, &masked(&k, 2, false, &[t, t])), [t, t]);
    }
}
