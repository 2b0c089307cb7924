//! The commitment to an escrow blob: leaf `i` is
//! `SHA-256(0x00 ‖ le32(i) ‖ SHA-256(cipher_i) ‖ plain_hash(k, i, plain_i))`, so one
//! leaf binds what the buyer can check before paying (the ciphertext on
//! Arweave) to what the key must open it to (the plaintext chunk). Leaves
//! are padded with [`EMPTY`] to a power of two; an inner node is
//! `SHA-256(0x01 ‖ left ‖ right)`. The depth follows from the chunk count
//! the listing records, so a path has exactly one length.

use crate::sha256;

/// A 32-byte hash.
pub type Hash = [u8; 32];

/// The padding leaf (no chunk hashes to it: leaves start with 0x00).
pub const EMPTY: Hash = [0u8; 32];

/// Leaf `index` from its chunk's ciphertext and plaintext hashes.
pub fn leaf(index: u32, cipher_hash: &Hash, plain_hash: &Hash) -> Hash {
    sha256(&[&[0x00], &index.to_le_bytes(), cipher_hash, plain_hash])
}

/// An inner node.
pub fn node(left: &Hash, right: &Hash) -> Hash {
    sha256(&[&[0x01], left, right])
}

/// Depth of the tree over `count` leaves (`⌈log2 count⌉`; 0 for one).
pub fn depth(count: u32) -> u32 {
    count.max(1).next_power_of_two().trailing_zeros()
}

/// The levels of the padded tree, leaves first, root last.
fn levels(leaves: &[Hash]) -> Vec<Vec<Hash>> {
    let width = (leaves.len().max(1)).next_power_of_two();
    let mut level: Vec<Hash> = leaves.to_vec();
    level.resize(width, EMPTY);
    let mut out = vec![level];
    while out.last().is_some_and(|l| l.len() > 1) {
        let next = out[out.len() - 1]
            .chunks(2)
            .map(|p| node(&p[0], &p[1]))
            .collect();
        out.push(next);
    }
    out
}

/// The root over `leaves`.
pub fn root(leaves: &[Hash]) -> Hash {
    levels(leaves).last().map(|l| l[0]).unwrap_or(EMPTY)
}

/// The sibling hashes from leaf `index` up (empty for an index past the
/// end).
pub fn path(leaves: &[Hash], index: u32) -> Vec<Hash> {
    if index as usize >= leaves.len() {
        return Vec::new();
    }
    let all = levels(leaves);
    let mut at = index as usize;
    all[..all.len() - 1]
        .iter()
        .map(|level| {
            let sibling = level[at ^ 1];
            at /= 2;
            sibling
        })
        .collect()
}

/// Whether `leaf` sits at `index` under `root` in a tree of `count` leaves.
pub fn verify(root: &Hash, count: u32, index: u32, leaf: &Hash, path: &[Hash]) -> bool {
    if index >= count || path.len() != depth(count) as usize {
        return false;
    }
    let mut at = index;
    let mut acc = *leaf;
    for sibling in path {
        acc = if at & 1 == 0 {
            node(&acc, sibling)
        } else {
            node(sibling, &acc)
        };
        at >>= 1;
    }
    acc == *root
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_path_verifies_and_no_other(n in 1u32..70, pick in any::<u32>(), flip in any::<u8>()) {
            let leaves: Vec<Hash> = (0..n).map(|i| leaf(i, &[i as u8; 32], &[!(i as u8); 32])).collect();
            let r = root(&leaves);
            let i = pick % n;
            let p = path(&leaves, i);
            prop_assert!(verify(&r, n, i, &leaves[i as usize], &p));
            // another index, another leaf, a shorter path: refused
            if n > 1 {
                prop_assert!(!verify(&r, n, (i + 1) % n, &leaves[i as usize], &p));
            }
            prop_assert!(!verify(&r, n, i, &leaf(i, &[1; 32], &[flip; 32]), &p) || (i as u8 == 1 && !(i as u8) == flip));
            prop_assert!(!verify(&r, n, n, &leaves[i as usize], &p));
            if !p.is_empty() {
                prop_assert!(!verify(&r, n, i, &leaves[i as usize], &p[1..]));
            }
        }
    }

    #[test]
    fn depths() {
        assert_eq!([1, 2, 3, 4, 5, 256, 257].map(depth), [0, 1, 2, 2, 3, 8, 9]);
    }
}
