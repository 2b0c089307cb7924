//! `refund_sealed`: the buyer closes its escrow and takes what it holds:
//! - declined: the whole deposit, no slash;
//! - deposited and the release window closed without a reveal: the whole
//!   deposit and the configured share of the listing's stake, in this one
//!   instruction (no separate slash a buyer's account could block);
//! - revealed, on a listing convicted of fraud (every reveal of it opened
//!   the same lying blob): the whole deposit and the stake share;
//! - claimed: the rent.
//!
//! The escrow's rent returns to the buyer in every case.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{now, share_of, sub};
use crate::sealed::events::SealedRefunded;
use crate::sealed::release_deadline;
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, Settings,
};
use anchor_lang::prelude::*;

/// Accounts of `refund_sealed`.
#[derive(Accounts)]
pub struct RefundSealed<'info> {
    /// Settings (release window, slash share).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing (its stake pays a slash).
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump
    )]
    pub listing: Account<'info, SealedListing>,
    /// The buyer's escrow, closed to the buyer.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing,
        has_one = buyer @ EscrowError::NotBuyer,
        close = buyer
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer.
    #[account(mut)]
    pub buyer: Signer<'info>,
}

/// Pays the buyer the settings' share of the listing's stake; returns it.
pub fn slash_to(
    settings: &Settings,
    listing: &mut Account<'_, SealedListing>,
    buyer: &AccountInfo<'_>,
) -> Result<u64> {
    let share = share_of(listing.stake, settings.slash_bps);
    listing.stake = sub(listing.stake, share)?;
    listing.sub_lamports(share)?;
    buyer.add_lamports(share)?;
    Ok(share)
}

impl RefundSealed<'_> {
    /// Returns what the escrow holds, with a slash when one is owed.
    pub fn handler(ctx: Context<RefundSealed>) -> Result<()> {
        let a = ctx.accounts;
        let amount = a.escrow.amount;
        let (returned, slashed) = match a.escrow.status {
            SealedEscrowStatus::Declined => (amount, 0),
            SealedEscrowStatus::Claimed => (0, 0),
            SealedEscrowStatus::Deposited => {
                require!(
                    now()? >= release_deadline(&a.settings, a.escrow.deposited_at)?,
                    EscrowError::ReleaseWindowOpen
                );
                a.listing.open_escrows = sub(a.listing.open_escrows, 1)?;
                let buyer = a.buyer.to_account_info();
                (amount, slash_to(&a.settings, &mut a.listing, &buyer)?)
            }
            SealedEscrowStatus::Revealed if a.listing.status == SealedListingStatus::Convicted => {
                a.listing.open_escrows = sub(a.listing.open_escrows, 1)?;
                let buyer = a.buyer.to_account_info();
                (amount, slash_to(&a.settings, &mut a.listing, &buyer)?)
            }
            SealedEscrowStatus::Revealed => return err!(EscrowError::WrongEscrowState),
        };
        emit!(SealedRefunded {
            escrow: a.escrow.key(),
            amount: returned,
            slashed,
        });
        Ok(())
    }
}
