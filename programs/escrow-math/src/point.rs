//! Edwards25519 points and scalars as their 32-byte encodings, and the
//! two group operations the escrow needs: `x·G` and `P + Q`. On SBF these
//! are the curve25519 syscalls (`sol_curve_group_op`, `sol_curve_validate_point`);
//! on the host the same crate runs curve25519-dalek, so the node computes
//! exactly what the program checks.
//!
//! Scalars must be canonical (below the group order ℓ): the syscall
//! refuses others, and so does every check here.

use solana_curve25519::edwards::{
    add_edwards, multiply_edwards, validate_edwards, PodEdwardsPoint,
};
use solana_curve25519::scalar::PodScalar;

/// A compressed Edwards25519 point.
pub type Point = [u8; 32];
/// A little-endian scalar, canonical (below ℓ).
pub type Scalar = [u8; 32];

/// The Ed25519 base point G, compressed.
pub const BASEPOINT: Point = [
    0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
    0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
];

/// The identity point, compressed.
pub const IDENTITY: Point = {
    let mut p = [0u8; 32];
    p[0] = 1;
    p
};

/// The scalar 8 (the cofactor).
const EIGHT: Scalar = {
    let mut s = [0u8; 32];
    s[0] = 8;
    s
};

/// `x·G`, or `None` for a non-canonical scalar.
pub fn mul_base(x: &Scalar) -> Option<Point> {
    multiply_edwards(&PodScalar(*x), &PodEdwardsPoint(BASEPOINT)).map(|p| p.0)
}

/// `p + q`, or `None` when either is not a point.
pub fn add(p: &Point, q: &Point) -> Option<Point> {
    add_edwards(&PodEdwardsPoint(*p), &PodEdwardsPoint(*q)).map(|p| p.0)
}

/// Whether `p` decodes as a point and is not of small order (`8·p ≠ O`):
/// what the program asks of every committed point (K, B). The identity
/// and the seven other torsion points are refused.
pub fn is_usable(p: &Point) -> bool {
    let pod = PodEdwardsPoint(*p);
    validate_edwards(&pod)
        && multiply_edwards(&PodScalar(EIGHT), &pod).is_some_and(|e| e.0 != IDENTITY)
}

/// Whether `s·G = k_point + b_point`: the reveal equation. False for a
/// non-canonical `s` or points that do not decode.
pub fn reveals(s: &Scalar, k_point: &Point, b_point: &Point) -> bool {
    match (mul_base(s), add(k_point, b_point)) {
        (Some(lhs), Some(rhs)) => lhs == rhs,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
    use curve25519_dalek::Scalar as D;
    use proptest::prelude::*;

    fn scalar() -> impl Strategy<Value = D> {
        any::<[u8; 32]>().prop_map(D::from_bytes_mod_order)
    }

    proptest! {
        #[test]
        fn mul_base_and_add_agree_with_dalek(a in scalar(), b in scalar()) {
            let ka = (a * ED25519_BASEPOINT_POINT).compress().to_bytes();
            let kb = (b * ED25519_BASEPOINT_POINT).compress().to_bytes();
            prop_assert_eq!(mul_base(&a.to_bytes()), Some(ka));
            prop_assert_eq!(add(&ka, &kb), Some(((a + b) * ED25519_BASEPOINT_POINT).compress().to_bytes()));
            prop_assert!(reveals(&(a + b).to_bytes(), &ka, &kb));
            prop_assert!(!reveals(&(a + b + D::ONE).to_bytes(), &ka, &kb));
            prop_assert!(is_usable(&ka) || a == D::ZERO);
        }

        #[test]
        fn non_canonical_scalars_are_refused(x in any::<[u8; 32]>()) {
            let canonical = Option::<D>::from(D::from_canonical_bytes(x)).is_some();
            prop_assert_eq!(mul_base(&x).is_some(), canonical);
        }
    }

    #[test]
    fn small_order_points_are_refused() {
        assert_eq!(BASEPOINT, ED25519_BASEPOINT_POINT.compress().to_bytes());
        for t in EIGHT_TORSION {
            assert!(!is_usable(&t.compress().to_bytes()), "{t:?}");
        }
        assert!(!is_usable(&IDENTITY));
        assert!(is_usable(&BASEPOINT));
        // y = 2 is not on the curve
        let mut off_curve = [0u8; 32];
        off_curve[0] = 2;
        assert!(!validate_edwards(&PodEdwardsPoint(off_curve)));
        assert!(!is_usable(&off_curve));
    }
}
