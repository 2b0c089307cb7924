//! The keystream that seals an escrow blob: block `j` (32 bytes) of chunk
//! `i` is `SHA-256("brainctl-escrow-stream-v1" ‖ k ‖ le32(i) ‖ le32(j))`,
//! XORed onto the chunk. SHA-256 because the program has it as a syscall,
//! so a fraud proof decrypts a chunk for a few thousand compute units.
//! Each listing has its own `k`, and each (chunk, block) its own input, so
//! no block of keystream is ever used twice.

use crate::sha256;

/// Domain separation of the keystream.
pub const STREAM_DOMAIN: &[u8] = b"brainctl-escrow-stream-v1";

/// XORs the keystream of chunk `index` under `k` onto `data` (seals and
/// opens alike).
pub fn apply(k: &[u8; 32], index: u32, data: &mut [u8]) {
    for (j, block) in data.chunks_mut(32).enumerate() {
        let pad = sha256(&[
            STREAM_DOMAIN,
            k,
            &index.to_le_bytes(),
            &(j as u32).to_le_bytes(),
        ]);
        block.iter_mut().zip(pad).for_each(|(b, p)| *b ^= p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applying_twice_restores_and_chunks_differ() {
        let k = [9u8; 32];
        let plain = vec![0u8; 256];
        let mut a = plain.clone();
        apply(&k, 0, &mut a);
        let mut b = plain.clone();
        apply(&k, 1, &mut b);
        assert_ne!(a, b);
        assert_ne!(a[..32], a[32..64]);
        apply(&k, 0, &mut a);
        assert_eq!(a, plain);
        // a short last chunk uses the prefix of the same keystream
        let mut short = vec![0u8; 40];
        apply(&k, 1, &mut short);
        assert_eq!(short, b[..40]);
    }
}
