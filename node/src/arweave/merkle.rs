//! The Arweave transaction data root (format 2): the data cut into chunks
//! of at most 256 KiB (the last two balanced when the tail would be under
//! 32 KiB), leaves `H(H(sha256(chunk)) ‖ H(note(end)))`, branches
//! `H(H(left) ‖ H(right) ‖ H(note(left end)))`, with `note` a 32-byte
//! big-endian offset and `H` SHA-256. Pure; what arweave-js computes.

use sha2::{Digest, Sha256};

const MAX_CHUNK: usize = 256 * 1024;
const MIN_CHUNK: usize = 32 * 1024;

fn h(parts: &[&[u8]]) -> [u8; 32] {
    let mut d = Sha256::new();
    for p in parts {
        d.update(p);
    }
    d.finalize().into()
}

fn note(n: usize) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[24..].copy_from_slice(&(n as u64).to_be_bytes());
    b
}

/// (data hash, end offset) of each chunk.
fn chunks(data: &[u8]) -> Vec<([u8; 32], usize)> {
    let mut out = Vec::new();
    let (mut rest, mut cursor) = (data, 0usize);
    while rest.len() >= MAX_CHUNK {
        let mut size = MAX_CHUNK;
        let next = rest.len() - MAX_CHUNK;
        if next > 0 && next < MIN_CHUNK {
            size = rest.len().div_ceil(2);
        }
        let (chunk, tail) = rest.split_at(size);
        cursor += chunk.len();
        out.push((h(&[chunk]), cursor));
        rest = tail;
    }
    out.push((h(&[rest]), cursor + rest.len()));
    out
}

/// The data root of `data`.
pub fn data_root(data: &[u8]) -> [u8; 32] {
    let mut layer: Vec<([u8; 32], usize)> = chunks(data)
        .into_iter()
        .map(|(hash, end)| (h(&[&h(&[&hash]), &h(&[&note(end)])]), end))
        .collect();
    while layer.len() > 1 {
        layer = layer
            .chunks(2)
            .map(|pair| match pair {
                [l, r] => (h(&[&h(&[&l.0]), &h(&[&r.0]), &h(&[&note(l.1)])]), r.1),
                [one] => *one,
                _ => unreachable!("chunks(2)"),
            })
            .collect();
    }
    layer[0].0
}
