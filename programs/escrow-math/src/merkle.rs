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

/// Leaf `index` of a v2 blob (with midstate commitments):
/// `SHA-256(0x02 ‖ le32(i) ‖ before ‖ after ‖ body)`, `before` and `after`
/// the chunk's masked chaining states and `body = SHA-256(cipher_i ‖
/// plain_hash_i)` ([`body`]), so a link proof carries 96 bytes a leaf. Its
/// prefix differs from a v1 leaf's and a node's: no v2 proof reaches a v1
/// root.
pub fn leaf_v2(index: u32, before: &Hash, after: &Hash, body: &Hash) -> Hash {
    sha256(&[&[0x02], &index.to_le_bytes(), before, after, body])
}

/// Leaf `index` of a v3 blob (midstates and memory tallies):
/// `SHA-256(0x03 ‖ le32(i) ‖ before ‖ after ‖ tally_before ‖ tally_after ‖
/// body)`, the tallies as committed (`crate::tally`): 104 bytes a leaf in
/// a link proof. Its prefix differs from every other leaf's and a node's.
pub fn leaf_v3(
    index: u32,
    before: &Hash,
    after: &Hash,
    tallies: &[[u8; 4]; 2],
    body: &Hash,
) -> Hash {
    sha256(&[
        &[0x03],
        &index.to_le_bytes(),
        before,
        after,
        &tallies[0],
        &tallies[1],
        body,
    ])
}

/// A v2 leaf's body: `SHA-256(cipher ‖ plain_hash)` (the plain hash is a
/// fixed 32 bytes at the end, so the split is unambiguous).
pub fn body(cipher: &[u8], plain_hash: &Hash) -> Hash {
    sha256(&[cipher, plain_hash])
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
    index < count && path.len() == depth(count) as usize && fold(index, leaf, path) == *root
}

/// The node `path.len()` levels above `leaf` at `index`.
fn fold(index: u32, leaf: &Hash, path: &[Hash]) -> Hash {
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
    acc
}

/// How many levels above leaves `index` and `index + 1` their paths join:
/// the trailing ones of `index` (0 when they are siblings).
pub fn join_level(index: u32) -> u32 {
    index.trailing_ones()
}

/// The part of leaf `index + 1`'s path below where it joins leaf
/// `index`'s ([`join_level`] hashes): with `index`'s whole path it proves
/// both leaves.
pub fn next_path(leaves: &[Hash], index: u32) -> Vec<Hash> {
    let mut p = path(leaves, index + 1);
    p.truncate(join_level(index) as usize);
    p
}

/// Whether leaves `left` at `index` and `right` at `index + 1` both sit
/// under `root` in a tree of `count` leaves: `path` is `index`'s whole
/// path, `next` the [`next_path`] of `index + 1`, whose fold must be the
/// sibling `path` names at the level they join.
pub fn verify_adjacent(
    root: &Hash,
    count: u32,
    index: u32,
    left: &Hash,
    right: &Hash,
    path: &[Hash],
    next: &[Hash],
) -> bool {
    let join = join_level(index) as usize;
    index.checked_add(1).is_some_and(|n| n < count)
        && next.len() == join
        && path.get(join) == Some(&fold(index + 1, right, next))
        && verify(root, count, index, left, path)
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

    proptest! {
        #[test]
        fn adjacent_leaves_verify_with_a_shared_path(n in 2u32..70, pick in any::<u32>()) {
            let leaves: Vec<Hash> = (0..n).map(|i| leaf(i, &[i as u8; 32], &[7; 32])).collect();
            let r = root(&leaves);
            let i = pick % (n - 1);
            let (p, q) = (path(&leaves, i), next_path(&leaves, i));
            let (a, b) = (leaves[i as usize], leaves[i as usize + 1]);
            prop_assert!(verify_adjacent(&r, n, i, &a, &b, &p, &q));
            prop_assert!(!verify_adjacent(&r, n, i, &b, &a, &p, &q));
            prop_assert!(!verify_adjacent(&r, n, i, &a, &a, &p, &q));
            prop_assert!(!verify_adjacent(&r, n, n - 1, &a, &b, &p, &q));
            let mut longer = q.clone();
            longer.push([0; 32]);
            prop_assert!(!verify_adjacent(&r, n, i, &a, &b, &p, &longer));
        }
    }

    #[test]
    fn depths() {
        assert_eq!([1, 2, 3, 4, 5, 256, 257].map(depth), [0, 1, 2, 2, 3, 8, 9]);
    }
}
