//! PDA seeds and protocol limits the program enforces.

/// Highest protocol fee, in basis points (PROTOCOL.md §8).
pub const MAX_FEE_BPS: u16 = 1_000;
/// Basis points in one.
pub const BPS: u64 = 10_000;
/// Length of a listing id (`YYYYMMDD-<12 hex>`).
pub const LISTING_ID_LEN: usize = 21;
/// Seed of the single [`crate::sealed::state::Settings`].
pub const SETTINGS_SEED: &[u8] = b"settings";
/// Seed prefix of a [`crate::sealed::state::SealedListing`] (with seller and listing id).
pub const SEALED_LISTING_SEED: &[u8] = b"sealed-listing";
/// Seed prefix of a [`crate::sealed::state::SealedEscrow`] (with listing and buyer).
pub const SEALED_ESCROW_SEED: &[u8] = b"sealed-escrow";
/// Shortest release window, in seconds: longer than a transaction's
/// blockhash lifetime (~60-90 s), so a seller's client can always keep a
/// margin and never have a reveal land after the window (where it would
/// fail, yet publish s to a buyer then owed a refund).
pub const MIN_RELEASE_WINDOW_SECS: i64 = 120;
/// Seconds past the release window in which a reveal (or decline) is
/// still taken, and after which refunds and `expire` open: a reveal sent
/// inside the window lands inside the grace (a blockhash lives ~60-90 s),
/// so it never fails after publishing s to a buyer then owed a refund.
pub const REVEAL_GRACE_SECS: i64 = 90;
/// Shortest dispute window of a cluster users trade on, in seconds (6
/// hours): a buyer whose client is offline for a few hours (a laptop
/// asleep, a restarted agent) still proves a lie when it comes back
/// (`marketplace watch` resumes every pending escrow), so a lying seller
/// is never paid for the buyer's absence.
pub const MAINNET_MIN_WINDOW_SECS: i64 = 6 * 3_600;
/// Shortest dispute window of the `localnet` build (what `localnet/
/// install-sbf` builds for the tests and the demo, which run in seconds;
/// never deploy that build where users trade).
pub const LOCALNET_MIN_WINDOW_SECS: i64 = 10;
/// Shortest dispute window of this build, in seconds.
pub const MIN_WINDOW_SECS: i64 = if cfg!(feature = "localnet") {
    LOCALNET_MIN_WINDOW_SECS
} else {
    MAINNET_MIN_WINDOW_SECS
};
/// Longest release or dispute window, in seconds (30 days).
pub const MAX_WINDOW_SECS: i64 = 30 * 86_400;
