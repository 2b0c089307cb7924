//! One event per state transition, so an indexer can follow the program
//! from its logs alone (`Program data:` lines, Anchor event encoding).

use anchor_lang::prelude::*;

/// A listing was created and staked.
#[event]
pub struct ListingCreated {
    /// Listing account.
    pub listing: Pubkey,
    /// Seller.
    pub seller: Pubkey,
    /// Listing id.
    pub listing_id: String,
    /// Price.
    pub price_lamports: u64,
    /// Stake.
    pub stake: u64,
}

/// A buyer deposited the price.
#[event]
pub struct Deposited {
    /// Listing account.
    pub listing: Pubkey,
    /// Escrow account.
    pub escrow: Pubkey,
    /// Buyer.
    pub buyer: Pubkey,
    /// Lamports.
    pub amount: u64,
}

/// The seller released: paid, fee to the treasury, envelope recorded.
#[event]
pub struct Released {
    /// Escrow account.
    pub escrow: Pubkey,
    /// Envelope item id.
    pub envelope_id: String,
    /// Paid to the seller.
    pub to_seller: u64,
    /// Paid to the treasury.
    pub fee: u64,
}

/// The buyer took the deposit back after the window.
#[event]
pub struct Refunded {
    /// Escrow account.
    pub escrow: Pubkey,
    /// Lamports returned.
    pub amount: u64,
}

/// The seller cancelled; stake returned.
#[event]
pub struct ListingCancelled {
    /// Listing account.
    pub listing: Pubkey,
    /// Stake returned.
    pub stake_returned: u64,
}

/// A refunded buyer received a share of the stake.
#[event]
pub struct Slashed {
    /// Escrow account.
    pub escrow: Pubkey,
    /// Lamports paid to the buyer.
    pub amount: u64,
}
