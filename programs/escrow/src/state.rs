//! Account layouts. Sizes come from `InitSpace`; every PDA stores its bump.

use crate::constants::{LISTING_ID_LEN, MAX_ENVELOPE_ID_LEN};
use anchor_lang::prelude::*;

/// Program-wide settings, set once by the admin.
#[account]
#[derive(InitSpace)]
pub struct Config {
    /// Who initialized it.
    pub admin: Pubkey,
    /// Where fees go.
    pub treasury: Pubkey,
    /// Fee on each release, in basis points (≤ 1000).
    pub fee_bps: u16,
    /// Share of the remaining stake paid to a buyer whose escrow was refunded.
    pub slash_bps: u16,
    /// Seconds after a deposit before the buyer may take a refund.
    pub release_window_secs: i64,
    /// Smallest stake a listing needs.
    pub min_stake: u64,
    /// PDA bump.
    pub bump: u8,
}

/// Where a listing is in its life.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, InitSpace, Debug)]
pub enum ListingStatus {
    /// Open for deposits.
    Live,
    /// Withdrawn by the seller (account then closed).
    Cancelled,
}

/// A seller's listing: terms plus the stake held by this account.
#[account]
#[derive(InitSpace)]
pub struct Listing {
    /// Seller (paid on release).
    pub seller: Pubkey,
    /// `YYYYMMDD-<12 hex>`.
    #[max_len(LISTING_ID_LEN)]
    pub listing_id: String,
    /// SHA-256 of the canonical bundle.
    pub bundle_hash: [u8; 32],
    /// Price each buyer deposits.
    pub price_lamports: u64,
    /// Stake still held (lamports above rent).
    pub stake: u64,
    /// Unix seconds after which no deposit is taken.
    pub expires_at: i64,
    /// Lifecycle.
    pub status: ListingStatus,
    /// Deposits neither released nor refunded.
    pub open_escrows: u32,
    /// Refunds not yet slashed (the stake stays until they are).
    pub unslashed_refunds: u32,
    /// PDA bump.
    pub bump: u8,
}

/// Where an escrow is in its life.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, InitSpace, Debug)]
pub enum EscrowStatus {
    /// The price is held.
    Deposited,
    /// Paid to the seller (minus the fee).
    Released,
    /// Returned to the buyer after the window.
    Refunded,
}

/// One buyer's deposit on one listing, kept as a receipt after settling.
#[account]
#[derive(InitSpace)]
pub struct Escrow {
    /// The listing account.
    pub listing: Pubkey,
    /// Buyer (refunded, or slashed to).
    pub buyer: Pubkey,
    /// Buyer's X25519 key, for the sealed bundle key.
    pub buyer_x25519: [u8; 32],
    /// Lamports held.
    pub amount: u64,
    /// Unix seconds of the deposit.
    pub deposited_at: i64,
    /// Lifecycle.
    pub status: EscrowStatus,
    /// Envelope (Arweave item id) named on release.
    #[max_len(MAX_ENVELOPE_ID_LEN)]
    pub envelope_id: String,
    /// Whether the stake was slashed for this refund.
    pub slashed: bool,
    /// PDA bump.
    pub bump: u8,
}
