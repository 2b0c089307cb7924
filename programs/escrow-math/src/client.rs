//! What clients compute and the program never sees: the listing's scalar
//! `k` from the seller's wallet seed (derivable again after any crash, never
//! a second secret to lose), the blinding scalar `b` both parties derive
//! from their X25519 keys and the escrow address, and the scalar sums of
//! the reveal (`s = k + b`) and its opening (`k = s − b`).

use crate::point::{Point, Scalar};
use crate::x25519::is_low_order;
use curve25519_dalek::{EdwardsPoint, MontgomeryPoint, Scalar as D};
use sha2::{Digest, Sha512};
use zeroize::Zeroizing;

/// Domain of the listing scalar of the first derivation (seed and
/// account only; still opened for listings made with it).
pub const KEY_DOMAIN: &[u8] = b"brainctl-escrow-key-v1";
/// Domain of the listing scalar bound to its cluster.
pub const CLUSTER_KEY_DOMAIN: &[u8] = b"brainctl-escrow-key-v2";
/// Domain of the blinding scalar.
pub const BLIND_DOMAIN: &[u8] = b"brainctl-escrow-blind-v1";

/// Why a client computation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// A low-order X25519 key, or a Diffie-Hellman that came out zero.
    #[error("the other party's X25519 key is of low order: no shared secret")]
    LowOrderKey,
    /// A scalar that is not canonical.
    #[error("a revealed scalar is not canonical")]
    NonCanonical,
    /// A point that does not decode, is of small order, or has a torsion part.
    #[error("a committed point is not a prime-order point")]
    BadPoint,
}

fn wide(domain: &[u8], parts: &[&[u8]]) -> D {
    let mut h = Sha512::new();
    h.update(domain);
    for p in parts {
        h.update((p.len() as u32).to_le_bytes());
        h.update(p);
    }
    D::from_bytes_mod_order_wide(&h.finalize().into())
}

/// The listing's scalar `k`: a function of the seller's wallet seed and
/// the listing's program account (a PDA of the program, the seller and the
/// listing id: the same id on another deployment gets another `k`).
pub fn listing_scalar(seller_seed: &[u8; 32], listing_account: &[u8; 32]) -> Zeroizing<Scalar> {
    Zeroizing::new(wide(KEY_DOMAIN, &[seller_seed, listing_account]).to_bytes())
}

/// The listing's scalar `k` bound to its cluster too: a function of the
/// seller's wallet seed, the cluster's genesis hash and the listing's
/// program account, so a listing id reused on another cluster with the
/// same program id (same account address) gets another `k`, and a
/// reveal on one cluster opens nothing listed on another. What `list
/// --escrow` derives; the seller finds which derivation a listing used by
/// its committed `K` (`node::escrow::committed_scalar`).
pub fn cluster_listing_scalar(
    seller_seed: &[u8; 32],
    genesis_hash: &[u8; 32],
    listing_account: &[u8; 32],
) -> Zeroizing<Scalar> {
    Zeroizing::new(
        wide(
            CLUSTER_KEY_DOMAIN,
            &[seller_seed, genesis_hash, listing_account],
        )
        .to_bytes(),
    )
}

/// X25519(secret, public), refusing low-order keys and a zero result.
pub fn x25519_shared(
    secret: &[u8; 32],
    public: &[u8; 32],
) -> Result<Zeroizing<[u8; 32]>, ClientError> {
    if is_low_order(public) {
        return Err(ClientError::LowOrderKey);
    }
    let shared = MontgomeryPoint(*public).mul_clamped(*secret).to_bytes();
    if shared == [0u8; 32] {
        return Err(ClientError::LowOrderKey);
    }
    Ok(Zeroizing::new(shared))
}

/// The blinding scalar `b` of one escrow: both parties derive it from
/// their Diffie-Hellman secret and the escrow account's address.
pub fn blind_scalar(shared: &[u8; 32], escrow: &[u8; 32]) -> Zeroizing<Scalar> {
    Zeroizing::new(wide(BLIND_DOMAIN, &[shared, escrow]).to_bytes())
}

/// `x·G` of a scalar the client made (always canonical).
pub fn point_of(x: &Scalar) -> Point {
    (D::from_bytes_mod_order(*x) * curve25519_dalek::constants::ED25519_BASEPOINT_POINT)
        .compress()
        .to_bytes()
}

/// The seller's reveal `s = k + b`.
pub fn reveal(k: &Scalar, b: &Scalar) -> Scalar {
    (D::from_bytes_mod_order(*k) + D::from_bytes_mod_order(*b)).to_bytes()
}

/// The buyer's opening `k = s − b`, checked against the key commitment.
pub fn open(s: &Scalar, b: &Scalar, key_point: &Point) -> Result<Zeroizing<Scalar>, ClientError> {
    let s = Option::<D>::from(D::from_canonical_bytes(*s)).ok_or(ClientError::NonCanonical)?;
    let k = (s - D::from_bytes_mod_order(*b)).to_bytes();
    if point_of(&k) != *key_point {
        return Err(ClientError::BadPoint);
    }
    Ok(Zeroizing::new(k))
}

/// Whether `p` is a point of the prime-order subgroup, not the identity:
/// what a buyer asks of a listing's K before paying (the program refuses
/// small-order points; a torsion part would make every reveal fail).
pub fn is_prime_order(p: &Point) -> bool {
    curve25519_dalek::edwards::CompressedEdwardsY(*p)
        .decompress()
        .is_some_and(|e: EdwardsPoint| e.is_torsion_free() && !e.is_small_order())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn both_parties_derive_one_blinding_and_the_reveal_opens(
            seller in any::<[u8; 32]>(), buyer in any::<[u8; 32]>(), escrow in any::<[u8; 32]>()
        ) {
            let sx = MontgomeryPoint::mul_base_clamped(seller).to_bytes();
            let bx = MontgomeryPoint::mul_base_clamped(buyer).to_bytes();
            let b_seller = blind_scalar(&x25519_shared(&seller, &bx).unwrap(), &escrow);
            let b_buyer = blind_scalar(&x25519_shared(&buyer, &sx).unwrap(), &escrow);
            prop_assert_eq!(&*b_seller, &*b_buyer);
            let k = listing_scalar(&seller, &[9; 32]);
            // bound to the cluster: another genesis, another k, and never the first derivation's
            let on_a = cluster_listing_scalar(&seller, &[1; 32], &[9; 32]);
            let on_b = cluster_listing_scalar(&seller, &[2; 32], &[9; 32]);
            prop_assert_ne!(&*on_a, &*on_b);
            prop_assert_ne!(&*on_a, &*k);
            let (kp, bp) = (point_of(&k), point_of(&b_buyer));
            let s = reveal(&k, &b_seller);
            prop_assert!(crate::point::reveals(&s, &kp, &bp));
            prop_assert_eq!(&*open(&s, &b_buyer, &kp).unwrap(), &*k);
            prop_assert!(is_prime_order(&kp));
            // another escrow, another blinding: this reveal opens nothing there
            let other = blind_scalar(&x25519_shared(&buyer, &sx).unwrap(), &[!escrow[0]; 32]);
            prop_assert!(!crate::point::reveals(&s, &kp, &point_of(&other)));
            prop_assert!(open(&s, &other, &kp).is_err());
        }
    }

    #[test]
    fn low_order_keys_and_torsion_are_refused() {
        assert_eq!(
            x25519_shared(&[1; 32], &[0; 32]).unwrap_err(),
            ClientError::LowOrderKey
        );
        let torsion = curve25519_dalek::constants::EIGHT_TORSION[1];
        let k = point_of(&[5; 32]);
        let mixed = (curve25519_dalek::edwards::CompressedEdwardsY(k)
            .decompress()
            .unwrap()
            + torsion)
            .compress()
            .to_bytes();
        assert!(!is_prime_order(&mixed));
        assert!(!is_prime_order(&crate::point::IDENTITY));
    }
}
