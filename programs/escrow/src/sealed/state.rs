//! The sealed escrow's accounts. Sizes come from `InitSpace`; every PDA
//! stores its bump.

use crate::constants::LISTING_ID_LEN;
use crate::instructions::sub;
use anchor_lang::prelude::*;

/// Program-wide settings of the sealed escrow, set once by the upgrade
/// authority, every value bounded.
#[account]
#[derive(InitSpace)]
pub struct Settings {
    /// Who initialized it.
    pub admin: Pubkey,
    /// Where fees go (a system account).
    pub treasury: Pubkey,
    /// Fee on each claim, in basis points (≤ 1000).
    pub fee_bps: u16,
    /// Share of the listing's stake paid to a buyer refunded for a missed
    /// reveal or a proven fraud (1 to 10,000 bps).
    pub slash_bps: u16,
    /// Seconds after a deposit in which the seller may reveal; the buyer's
    /// refund opens when it closes.
    pub release_window_secs: i64,
    /// Seconds after a reveal in which the buyer may prove fraud; the
    /// seller's claim opens when it closes.
    pub dispute_window_secs: i64,
    /// Stake a listing must hold at every deposit.
    pub min_stake: u64,
    /// PDA bump.
    pub bump: u8,
}

/// What a sealed listing commits to: the buyer's deposit repeats it and the
/// program refuses any difference.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, InitSpace, Debug)]
pub struct SealedTerms {
    /// Price each buyer deposits: lamports, or base units of the
    /// listing's mint (the field keeps its first name on the wire).
    pub price_lamports: u64,
    /// K = k·G, the key commitment (compressed Edwards25519).
    pub key_point: [u8; 32],
    /// Merkle root over the escrow blob's chunk leaves.
    pub blob_root: [u8; 32],
    /// Plaintext length in bytes.
    pub plain_len: u64,
    /// SHA-256 of the plaintext bundle (the manifest's `bundle_hash`).
    pub bundle_hash: [u8; 32],
    /// The seller's X25519 key, for the blinding Diffie-Hellman.
    pub seller_x25519: [u8; 32],
    /// Unix seconds after which no deposit is taken.
    pub expires_at: i64,
}

/// Where a sealed listing is in its life.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, InitSpace, Debug)]
pub enum SealedListingStatus {
    /// Open for deposits.
    Live,
    /// Retired by the seller: stake returned, the account kept so the id
    /// can never come back with other terms.
    Retired,
    /// A fraud proof held against it: no more deposits; the seller may
    /// retire it (for what stake is left) once nothing is open.
    Convicted,
}

/// A seller's sealed listing and its stake.
#[account]
#[derive(InitSpace)]
pub struct SealedListing {
    /// Seller (paid on claim).
    pub seller: Pubkey,
    /// `YYYYMMDD-<12 hex>`.
    #[max_len(LISTING_ID_LEN)]
    pub listing_id: String,
    /// The committed terms.
    pub terms: SealedTerms,
    /// Stake still held (lamports above rent).
    pub stake: u64,
    /// Lifecycle.
    pub status: SealedListingStatus,
    /// Escrows deposited or revealed and not yet claimed, refunded,
    /// declined or disputed.
    pub open_escrows: u32,
    /// PDA bump.
    pub bump: u8,
    /// The currency deposits are in: the default key for lamports, else
    /// an SPL Token or Token-2022 mint (`list_sealed_token`; the terms'
    /// price is then in its base units, held in each escrow's vault).
    pub mint: Pubkey,
    /// Stake reserved for the open escrows' slash shares (each reserved
    /// at its deposit): `stake - reserved` is what a new deposit can be
    /// backed by, so N open escrows can never take more than N shares.
    pub reserved: u64,
    /// The seller's cap on open escrows (at least 1).
    pub max_open: u32,
}

impl SealedListing {
    /// Whether deposits are in lamports (not in a token).
    pub fn in_lamports(&self) -> bool {
        self.mint == Pubkey::default()
    }

    /// An escrow stops being open (claimed, declined, refunded, proven
    /// fraudulent or expired): its reserved share is free again.
    pub fn close_escrow(&mut self, escrow: &SealedEscrow) -> Result<()> {
        self.open_escrows = sub(self.open_escrows, 1)?;
        self.reserved = sub(self.reserved, escrow.share)?;
        Ok(())
    }

    /// An escrow closes owing its buyer its reserved share: the share
    /// leaves the stake (the caller moves the lamports). Returns it.
    pub fn close_escrow_slashed(&mut self, escrow: &SealedEscrow) -> Result<u64> {
        self.close_escrow(escrow)?;
        self.stake = sub(self.stake, escrow.share)?;
        Ok(escrow.share)
    }
}

/// Where a sealed escrow is in its life.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, InitSpace, Debug)]
pub enum SealedEscrowStatus {
    /// The price is held; the seller may reveal inside the window.
    Deposited,
    /// The seller revealed s; the price waits out the dispute window.
    Revealed,
    /// The seller declined it (a wrong B, or no sale): the buyer takes it
    /// all back, no slash.
    Declined,
    /// The seller was paid; the buyer may close it for the rent.
    Claimed,
    /// The release window (and its grace) closed without a reveal, or the
    /// listing was convicted after the reveal, and anyone expired it; or
    /// its buyer proved fraud on a token listing (`dispute_token`): the
    /// slash share moved into the escrow, which the buyer closes for the
    /// deposit and the share whenever it comes back.
    Expired,
}

/// One buyer's deposit on one sealed listing.
#[account]
#[derive(InitSpace)]
pub struct SealedEscrow {
    /// The listing account.
    pub listing: Pubkey,
    /// Buyer (refunded, slashed to, rent returned to).
    pub buyer: Pubkey,
    /// The buyer's X25519 key.
    pub buyer_x25519: [u8; 32],
    /// B = b·G, the blinding commitment.
    pub blind_point: [u8; 32],
    /// What is held: lamports, or the listing's token's base units (in
    /// the escrow's vault).
    pub amount: u64,
    /// Unix seconds of the deposit.
    pub deposited_at: i64,
    /// Lifecycle.
    pub status: SealedEscrowStatus,
    /// s, once revealed (zero before).
    pub revealed: [u8; 32],
    /// Unix seconds of the reveal (zero before).
    pub revealed_at: i64,
    /// PDA bump.
    pub bump: u8,
    /// The slash share reserved from the listing's stake at the deposit:
    /// what the buyer is paid for a missed reveal or a proven fraud.
    pub share: u64,
}
