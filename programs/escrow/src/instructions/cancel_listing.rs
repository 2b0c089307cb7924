//! `cancel_listing`: the seller closes a listing with nothing held and
//! nothing owed; stake and rent return to the seller.

use crate::constants::LISTING_SEED;
use crate::error::EscrowError;
use crate::events::ListingCancelled;
use crate::state::{Listing, ListingStatus};
use anchor_lang::prelude::*;

/// Accounts of `cancel_listing`.
#[derive(Accounts)]
pub struct CancelListing<'info> {
    /// The listing, closed to the seller.
    #[account(
        mut,
        seeds = [LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller,
        constraint = listing.open_escrows == 0 && listing.unslashed_refunds == 0
            @ EscrowError::OpenEscrows,
        close = seller
    )]
    pub listing: Account<'info, Listing>,
    /// The seller.
    #[account(mut)]
    pub seller: Signer<'info>,
}

impl CancelListing<'_> {
    /// Marks the listing cancelled; Anchor closes it to the seller.
    pub fn handler(ctx: Context<CancelListing>) -> Result<()> {
        let listing = &mut ctx.accounts.listing;
        listing.status = ListingStatus::Cancelled;
        emit!(ListingCancelled {
            listing: listing.key(),
            stake_returned: listing.stake,
        });
        Ok(())
    }
}
