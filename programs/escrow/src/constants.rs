//! PDA seeds and protocol limits the program enforces.

/// Seed of the single [`crate::state::Config`].
pub const CONFIG_SEED: &[u8] = b"config";
/// Seed prefix of a [`crate::state::Listing`] (with seller and listing id).
pub const LISTING_SEED: &[u8] = b"listing";
/// Seed prefix of an [`crate::state::Escrow`] (with listing and buyer).
pub const ESCROW_SEED: &[u8] = b"escrow";
/// Highest protocol fee, in basis points (PROTOCOL.md §8).
pub const MAX_FEE_BPS: u16 = 1_000;
/// Basis points in one.
pub const BPS: u64 = 10_000;
/// Length of a listing id (`YYYYMMDD-<12 hex>`).
pub const LISTING_ID_LEN: usize = 21;
/// Longest Arweave item id recorded on release.
pub const MAX_ENVELOPE_ID_LEN: usize = 64;
/// Seed of the single [`crate::sealed::state::Settings`].
pub const SETTINGS_SEED: &[u8] = b"settings";
/// Seed prefix of a [`crate::sealed::state::SealedListing`] (with seller and listing id).
pub const SEALED_LISTING_SEED: &[u8] = b"sealed-listing";
/// Seed prefix of a [`crate::sealed::state::SealedEscrow`] (with listing and buyer).
pub const SEALED_ESCROW_SEED: &[u8] = b"sealed-escrow";
/// Shortest release or dispute window, in seconds.
pub const MIN_WINDOW_SECS: i64 = 10;
/// Longest release or dispute window, in seconds (30 days).
pub const MAX_WINDOW_SECS: i64 = 30 * 86_400;
