//! What every instruction uses: the clock, checked arithmetic, fee and
//! share math, the listing id's shape.

use crate::constants::LISTING_ID_LEN;
use crate::error::EscrowError;
use anchor_lang::prelude::*;

/// Now, from the Clock sysvar.
pub fn now() -> Result<i64> {
    Ok(Clock::get()?.unix_timestamp)
}

/// `a + b`, or [`EscrowError::Overflow`].
pub fn add<T: num::CheckedOps>(a: T, b: T) -> Result<T> {
    a.add(b).ok_or_else(|| error!(EscrowError::Overflow))
}

/// `a - b`, or [`EscrowError::Overflow`].
pub fn sub<T: num::CheckedOps>(a: T, b: T) -> Result<T> {
    a.sub(b).ok_or_else(|| error!(EscrowError::Overflow))
}

/// The checked arithmetic the handlers use.
pub(crate) mod num {
    /// Checked add/sub over the integer types in accounts.
    pub trait CheckedOps: Sized {
        /// Checked add.
        fn add(self, b: Self) -> Option<Self>;
        /// Checked sub.
        fn sub(self, b: Self) -> Option<Self>;
    }
    macro_rules! checked {
        ($($t:ty),*) => {$(
            impl CheckedOps for $t {
                fn add(self, b: Self) -> Option<Self> { self.checked_add(b) }
                fn sub(self, b: Self) -> Option<Self> { self.checked_sub(b) }
            }
        )*};
    }
    checked!(u32, u64, i64);
}

/// ceil(amount × bps / 10,000) (PROTOCOL.md §8), without overflow.
pub fn fee_of(amount: u64, bps: u16) -> u64 {
    ((amount as u128 * bps as u128).div_ceil(crate::constants::BPS as u128)) as u64
}

/// Whether `id` is `YYYYMMDD-<12 lowercase hex>`.
pub fn is_listing_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == LISTING_ID_LEN
        && b[8] == b'-'
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[9..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}
