//! One module per instruction: its accounts (every check in attributes)
//! and its handler, an associated function of the accounts struct.

pub mod cancel_listing;
pub mod create_listing;
pub mod deposit;
pub mod initialize_config;
pub mod refund;
pub mod release;
pub mod slash;

pub use cancel_listing::*;
pub use create_listing::*;
pub use deposit::*;
pub use initialize_config::*;
pub use refund::*;
pub use release::*;
pub use slash::*;

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

/// floor(amount × bps / 10,000), without overflow.
pub fn share_of(amount: u64, bps: u16) -> u64 {
    ((amount as u128 * bps as u128) / crate::constants::BPS as u128) as u64
}
