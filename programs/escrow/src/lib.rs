//! Escrow program prototype (Anchor). Filled by the escrow issue; for now it
//! holds the protocol constants the program will enforce.
#![deny(missing_docs)]

/// Maximum fee in basis points the config may set.
pub const MAX_FEE_BPS: u16 = 1_000;
