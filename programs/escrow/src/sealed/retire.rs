//! `retire_sealed`: the seller ends a listing (live, or convicted of fraud)
//! with nothing open and takes what stake is left. The account stays (rent-exempt, `Retired`): a listing id
//! is used once.

use crate::constants::SEALED_LISTING_SEED;
use crate::error::EscrowError;
use crate::sealed::events::{emit, SealedRetired};
use crate::sealed::state::{SealedListing, SealedListingStatus};
use anchor_lang::prelude::*;

/// Accounts of `retire_sealed`.
#[event_cpi]
#[derive(Accounts)]
pub struct RetireSealed<'info> {
    /// The listing.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller,
        constraint = listing.open_escrows == 0 @ EscrowError::OpenEscrows,
        constraint = listing.status != SealedListingStatus::Retired @ EscrowError::ListingClosed
    )]
    pub listing: Account<'info, SealedListing>,
    /// The seller, paid the stake.
    #[account(mut)]
    pub seller: Signer<'info>,
}

impl RetireSealed<'_> {
    /// Returns the stake and retires the listing.
    pub fn handler(ctx: Context<RetireSealed>) -> Result<()> {
        let a = ctx.accounts;
        let stake = a.listing.stake;
        a.listing.sub_lamports(stake)?;
        a.seller.add_lamports(stake)?;
        a.listing.stake = 0;
        a.listing.status = SealedListingStatus::Retired;
        emit(
            &a.event_authority,
            &SealedRetired {
                listing: a.listing.key(),
                stake_returned: stake,
            },
        )
    }
}
