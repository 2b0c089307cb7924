//! The trustless escrow's math, in one place: the program
//! (`programs/escrow`) checks with it, the node builds and opens trades with
//! it, the indexer reads with it. `docs/escrow-protocol.md` is the written
//! protocol and its security argument; this crate is its executable form.
//!
//! - [`point`]: Edwards25519 points and scalars as 32-byte values, the
//!   base-point multiplication and point addition the reveal equation
//!   `s·G = K + B` needs (the curve25519 syscalls on SBF, curve25519-dalek
//!   on the host), and the refusal of small-order points.
//! - [`stream`]: the SHA-256 keystream that seals an escrow blob's chunks
//!   under the listing's scalar `k`.
//! - [`merkle`]: the commitment to a blob: one leaf per chunk binding its
//!   ciphertext and plaintext hashes, a padded binary tree, paths.
//! - [`midstate`]: SHA-256's compression in software and the masked
//!   chaining states a v2 blob commits at chunk boundaries.
//! - [`tally`]: the memory count as a chain of lexer states a v3 blob
//!   commits at chunk boundaries beside the midstates.
//! - [`fraud`]: the fraud-proof checks the program runs alone.
//! - [`x25519`]: low-order X25519 keys, refused.
//! - [`usd`]: USD at settle time: a Pyth `PriceUpdateV2` account read and
//!   checked, and the one conversion rule the program and the clients run.
//! - `client` (feature): scalar derivation from wallet secrets, scalar
//!   arithmetic, whole-blob sealing and opening.
//! - `forgery` (feature, tests only): blobs sealed to lie in one chosen
//!   way, so tests show each lie convicted.
//!
//! It never touches accounts, the network or the clock.

pub mod fraud;
pub mod merkle;
pub mod midstate;
pub mod point;
pub mod stream;
pub mod tally;
pub mod usd;
pub mod x25519;

#[cfg(feature = "client")]
pub mod blob;
#[cfg(feature = "client")]
pub mod client;
#[cfg(any(all(test, feature = "client"), feature = "forgery"))]
pub mod forgery;

/// Bytes of plaintext (and ciphertext) per chunk: the unit a fraud proof
/// carries in one transaction.
pub const CHUNK_LEN: usize = 256;

/// Deepest Merkle path a fraud proof may carry (2^17 chunks of 256 bytes:
/// 32 MiB bundles), so that a proof, signed by the buyer alone with a
/// compute-unit limit and price, fits one 1,232-byte transaction.
pub const MAX_DEPTH: u32 = 17;

/// Most chunks a committed blob may have.
pub const MAX_CHUNKS: u64 = 1 << MAX_DEPTH;

/// The slash share each escrow deposit reserves from its listing's stake:
/// `⌊min_stake · slash_bps / 10⁴⌋`, the settings' share of the stake
/// floor whatever the listing staked (the program's `deposit_share`, the
/// node's plan before paying).
pub fn slash_share(min_stake: u64, slash_bps: u16) -> u64 {
    ((u128::from(min_stake) * u128::from(slash_bps)) / 10_000) as u64
}

/// SHA-256 of the concatenation of `parts` (the `sol_sha256` syscall on SBF).
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    solana_sha256_hasher::hashv(parts).to_bytes()
}

/// Domain of a committed plaintext chunk hash.
pub const PLAIN_DOMAIN: &[u8] = b"brainctl-escrow-plain-v1";

/// The committed hash of plaintext chunk `index`, keyed by the listing's
/// scalar `k`: public in the blob before any payment, it confirms no guess
/// of a chunk to anyone without `k`; a fraud proof carries `k` anyway.
pub fn plain_hash(k: &[u8; 32], index: u32, plain: &[u8]) -> [u8; 32] {
    sha256(&[PLAIN_DOMAIN, k, &index.to_le_bytes(), plain])
}

/// How many chunks a plaintext of `plain_len` bytes has, or `None` for an
/// empty or too large one.
pub fn chunk_count(plain_len: u64) -> Option<u32> {
    let n = plain_len.div_ceil(CHUNK_LEN as u64);
    (n > 0 && n <= MAX_CHUNKS).then_some(n as u32)
}

/// Length of chunk `index` of a plaintext of `plain_len` bytes (the last
/// one may be short), or `None` past the end.
pub fn chunk_len(plain_len: u64, index: u32) -> Option<usize> {
    let start = index as u64 * CHUNK_LEN as u64;
    (start < plain_len).then(|| (plain_len - start).min(CHUNK_LEN as u64) as usize)
}
