//! Ed25519 verification that accepts exactly what ed25519-dalek's
//! `VerifyingKey::verify_strict` accepts, with less work per signature:
//!
//! - a signer's key is decompressed once per thread (signers repeat: a
//!   seller signs every listing, envelope and counter), not per signature;
//! - `R` is never decompressed: `verify_strict` decompresses it only to
//!   refuse small-order points, and the encodings that decompress to one
//!   are a short fixed list (the eight torsion points, each with either
//!   sign bit and, for `y < 19`, the non-canonical `y + p`), computed from
//!   dalek's own points and filtered by dalek's own decompression. An `R`
//!   that does not decompress cannot equal the canonical compression of
//!   the recomputed point, so the final comparison refuses it either way.
//!
//! The equation is dalek's: `[s]B - [k]A` compressed must equal `R`'s
//! bytes, `k = SHA-512(R || A || M) mod ℓ` over the key's bytes as given,
//! `s` canonical. Proven equal on adversarial vectors (small-order and
//! mixed-order keys and `R`, non-canonical `s` and encodings) in the tests.
//!
//! Owns verification only; no keys, no formats.

use super::SignatureError;
use curve25519_dalek::constants::EIGHT_TORSION;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use sha2::{Digest, Sha512};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Keys kept per thread before the cache starts over.
const MAX_CACHED_KEYS: usize = 4096;

/// A decompressed signer key: `-A`, or why it can never verify.
#[derive(Clone, Copy)]
enum Key {
    MinusA(EdwardsPoint),
    /// Not a curve point (a malformed pubkey).
    NotAPoint,
    /// A small-order point (`verify_strict` refuses weak keys).
    Weak,
}

thread_local! {
    static KEYS: RefCell<HashMap<[u8; 32], Key>> = RefCell::new(HashMap::new());
}

fn key(pk: &[u8; 32]) -> Key {
    KEYS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(k) = cache.get(pk) {
            return *k;
        }
        let k = match CompressedEdwardsY(*pk).decompress() {
            None => Key::NotAPoint,
            Some(a) if a.is_small_order() => Key::Weak,
            Some(a) => Key::MinusA(-a),
        };
        if cache.len() >= MAX_CACHED_KEYS {
            cache.clear();
        }
        cache.insert(*pk, k);
        k
    })
}

/// Every 32-byte string that decompresses to a small-order point.
pub fn small_order_encodings() -> &'static [[u8; 32]] {
    static SET: OnceLock<Vec<[u8; 32]>> = OnceLock::new();
    SET.get_or_init(|| {
        let mut out: Vec<[u8; 32]> = Vec::new();
        for t in EIGHT_TORSION.iter() {
            let canonical = t.compress().to_bytes();
            for sign in [0u8, 0x80] {
                let mut b = canonical;
                b[31] = (b[31] & 0x7f) | sign;
                out.push(b);
                // y < 19 also has the non-canonical encoding y + p < 2^255
                if b[0] < 19 && b[1..31].iter().all(|x| *x == 0) && b[31] & 0x7f == 0 {
                    let mut n = [0xffu8; 32];
                    n[0] = 0xed + b[0];
                    n[31] = 0x7f | sign;
                    out.push(n);
                }
            }
        }
        out.retain(|b| {
            CompressedEdwardsY(*b)
                .decompress()
                .is_some_and(|p| p.is_small_order())
        });
        out.sort();
        out.dedup();
        out
    })
}

/// Verifies `signature` by `pubkey` over `message`, accepting exactly what
/// `VerifyingKey::from_bytes(pubkey)?.verify_strict(message, signature)`
/// accepts (`BadPubkey` where `from_bytes` fails, `Mismatch` otherwise).
pub fn verify(
    pubkey: &[u8; 32],
    signature: &[u8; 64],
    message: &[u8],
) -> Result<(), SignatureError> {
    let minus_a = match key(pubkey) {
        Key::MinusA(p) => p,
        Key::NotAPoint => return Err(SignatureError::BadPubkey("not an ed25519 point")),
        Key::Weak => return Err(SignatureError::Mismatch),
    };
    let r: [u8; 32] = signature[..32].try_into().expect("64 bytes");
    let s_bytes: [u8; 32] = signature[32..].try_into().expect("64 bytes");
    let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes)) else {
        return Err(SignatureError::Mismatch);
    };
    if small_order_encodings().contains(&r) {
        return Err(SignatureError::Mismatch);
    }
    let mut h = Sha512::new();
    h.update(r);
    h.update(pubkey);
    h.update(message);
    let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
    let expected = EdwardsPoint::vartime_double_scalar_mul_basepoint(&k, &minus_a, &s).compress();
    match expected.to_bytes() == r {
        true => Ok(()),
        false => Err(SignatureError::Mismatch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::ED25519_BASEPOINT_POINT as B;
    use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
    use proptest::prelude::*;

    /// dalek's verdict, in our error terms.
    fn reference(pk: &[u8; 32], sig: &[u8; 64], msg: &[u8]) -> Result<(), SignatureError> {
        let key = VerifyingKey::from_bytes(pk)
            .map_err(|_| SignatureError::BadPubkey("not an ed25519 point"))?;
        key.verify_strict(msg, &Signature::from_bytes(sig))
            .map_err(|_| SignatureError::Mismatch)
    }

    fn same(pk: &[u8; 32], sig: &[u8; 64], msg: &[u8]) -> Result<(), SignatureError> {
        let want = reference(pk, sig, msg);
        assert_eq!(verify(pk, sig, msg), want, "pk {pk:?} sig {sig:?}");
        want
    }

    fn k_of(r: &[u8; 32], a: &[u8; 32], m: &[u8]) -> Scalar {
        let mut h = Sha512::new();
        h.update(r);
        h.update(a);
        h.update(m);
        Scalar::from_bytes_mod_order_wide(&h.finalize().into())
    }

    fn sig_of(r: &[u8; 32], s: &Scalar) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[..32].copy_from_slice(r);
        out[32..].copy_from_slice(s.as_bytes());
        out
    }

    #[test]
    fn the_small_order_encodings_are_the_known_ones() {
        let set = small_order_encodings();
        // 8 points; ±0 sign variants where x = 0 (y = ±1); y + p for y = 0, 1
        assert!(set.len() >= 8 && set.len() <= 32, "{}", set.len());
        for b in set {
            assert!(CompressedEdwardsY(*b)
                .decompress()
                .unwrap()
                .is_small_order());
        }
    }

    /// Signatures made by mixed-order keys (`A = aB + T`) and with `R`
    /// chosen so that the cofactorless equation holds with a torsion
    /// component: strict accepts some, refuses small-order `R`; we agree.
    #[test]
    fn mixed_and_small_order_keys_and_r_get_the_same_verdict() {
        let a = Scalar::from(0x1234_5678_9abc_u64);
        let mut accepted = 0;
        let mut refused = 0;
        for (ti, t) in EIGHT_TORSION.iter().enumerate() {
            let big_a = a * B + t;
            let a_bytes = big_a.compress().to_bytes();
            for (ri, t_r) in EIGHT_TORSION.iter().enumerate() {
                for nonce in 0u64..24 {
                    let msg = format!("m{ti}-{ri}-{nonce}").into_bytes();
                    // R = rB + T_r, s = r + k a: [s]B - [k]A = rB - kT
                    let r = Scalar::from(nonce + 7);
                    let big_r = r * B + t_r;
                    let r_bytes = big_r.compress().to_bytes();
                    let k = k_of(&r_bytes, &a_bytes, &msg);
                    let s = r + k * a;
                    if same(&a_bytes, &sig_of(&r_bytes, &s), &msg).is_ok() {
                        accepted += 1;
                    } else {
                        refused += 1;
                    }
                    // R a pure torsion point: [s]B - [k]A = -kT with s = k a
                    let r_bytes = t_r.compress().to_bytes();
                    let k = k_of(&r_bytes, &a_bytes, &msg);
                    assert!(same(&a_bytes, &sig_of(&r_bytes, &(k * a)), &msg).is_err());
                }
            }
            // the torsion point itself as a key
            let weak = t.compress().to_bytes();
            let msg = b"weak";
            let r_bytes = (Scalar::from(3u8) * B).compress().to_bytes();
            assert!(same(&weak, &sig_of(&r_bytes, &Scalar::from(3u8)), msg).is_err());
        }
        assert!(accepted > 0 && refused > 0, "{accepted} / {refused}");
    }

    #[test]
    fn every_small_order_encoding_as_r_or_key_is_refused_alike() {
        let sk = SigningKey::from_bytes(&[5u8; 32]);
        let pk = sk.verifying_key().to_bytes();
        for enc in small_order_encodings() {
            for s in [Scalar::ZERO, Scalar::ONE, Scalar::from(99u8)] {
                same(&pk, &sig_of(enc, &s), b"x").unwrap_err();
                same(enc, &sig_of(enc, &s), b"x").unwrap_err();
            }
        }
    }

    #[test]
    fn non_canonical_s_and_r_are_refused_alike() {
        let sk = SigningKey::from_bytes(&[6u8; 32]);
        let pk = sk.verifying_key().to_bytes();
        let msg = b"canonical";
        let good = sk.sign(msg).to_bytes();
        same(&pk, &good, msg).unwrap();
        // s + ℓ (fits in 256 bits): same point, non-canonical scalar
        let l: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9,
            0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let mut bad = good;
        let mut carry = 0u16;
        for i in 0..32 {
            let v = bad[32 + i] as u16 + l[i] as u16 + carry;
            bad[32 + i] = v as u8;
            carry = v >> 8;
        }
        same(&pk, &bad, msg).unwrap_err();
        // R with the sign bit flipped, R = y + p where possible
        let mut flipped = good;
        flipped[31] ^= 0x80;
        same(&pk, &flipped, msg).unwrap_err();
        // small y values: some not on the curve, some non-canonical
        let mut not_point = [0u8; 32];
        for cand in 2u8..40 {
            not_point[0] = cand;
            let _ = same(&not_point, &good, msg);
        }
    }

    proptest! {
        /// Valid signatures, and each with one bit flipped anywhere.
        #[test]
        fn random_signatures_and_bit_flips_agree(
            seed in any::<[u8; 32]>(),
            msg in proptest::collection::vec(any::<u8>(), 0..200),
            flip in 0usize..(64 + 32) * 8,
        ) {
            let sk = SigningKey::from_bytes(&seed);
            let pk = sk.verifying_key().to_bytes();
            let sig = sk.sign(&msg).to_bytes();
            prop_assert!(same(&pk, &sig, &msg).is_ok());
            let (mut pk2, mut sig2) = (pk, sig);
            if flip < 512 {
                sig2[flip / 8] ^= 1 << (flip % 8);
            } else {
                let f = flip - 512;
                pk2[f / 8] ^= 1 << (f % 8);
            }
            let _ = same(&pk2, &sig2, &msg);
        }

        /// Arbitrary bytes: the same verdict (almost always a refusal).
        #[test]
        fn arbitrary_bytes_agree(
            pk in any::<[u8; 32]>(),
            r in any::<[u8; 32]>(),
            s in any::<[u8; 32]>(),
        ) {
            let mut sig = [0u8; 64];
            sig[..32].copy_from_slice(&r);
            sig[32..].copy_from_slice(&s);
            let _ = same(&pk, &sig, b"m");
        }
    }
}
