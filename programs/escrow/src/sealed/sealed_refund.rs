//! `refund_sealed`: the buyer closes its escrow and takes what it holds:
//! - declined: the whole deposit, no slash;
//! - deposited and the release window (and its grace) closed without a
//!   reveal: the whole deposit and the slash share reserved at the deposit,
//!   in this one instruction (no separate slash a buyer's account could
//!   block);
//! - expired (anyone closed the window for it): the deposit and the share
//!   `expire` moved into the escrow;
//! - revealed, on a listing convicted of fraud (every reveal of it opened
//!   the same lying blob): the whole deposit and the stake share;
//! - claimed: the rent.
//!
//! The escrow's rent returns to the buyer in every case.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::now;
use crate::sealed::answer_deadline;
use crate::sealed::events::{emit, SealedRefunded};
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, Settings,
};
use anchor_lang::prelude::*;

/// Accounts of `refund_sealed`.
#[event_cpi]
#[derive(Accounts)]
pub struct RefundSealed<'info> {
    /// Settings (release window, slash share).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing (its stake pays a slash).
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = listing.in_lamports() @ EscrowError::ListingInToken
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

/// Closes `escrow` on `listing` owing its buyer the share reserved at its
/// deposit, and moves that share from the listing to `to` (the buyer, or
/// the escrow itself when expired); returns it.
pub fn slash_to(
    listing: &mut Account<'_, SealedListing>,
    escrow: &SealedEscrow,
    to: &AccountInfo<'_>,
) -> Result<u64> {
    let share = listing.close_escrow_slashed(escrow)?;
    listing.sub_lamports(share)?;
    to.add_lamports(share)?;
    Ok(share)
}

impl RefundSealed<'_> {
    /// Returns what the escrow holds, with a slash when one is owed.
    pub fn handler(ctx: Context<RefundSealed>) -> Result<()> {
        let a = ctx.accounts;
        let buyer = a.buyer.to_account_info();
        // the escrow's lamports (deposit and rent) close to the buyer
        let (returned, slashed) = refund_due(&a.settings, &mut a.listing, &a.escrow, &buyer)?;
        refunded(&a.event_authority, &a.escrow, returned, slashed)
    }
}

/// What a refund of `escrow` returns now, and the stake share it pays
/// `buyer` (moved here, or at `expire`): the deposit when declined; the
/// deposit and the share when deposited past the window and its grace, or
/// revealed on a convicted listing, or expired (the share already in the
/// escrow); nothing but the rent once claimed.
pub fn refund_due(
    settings: &Settings,
    listing: &mut Account<'_, SealedListing>,
    escrow: &SealedEscrow,
    buyer: &AccountInfo<'_>,
) -> Result<(u64, u64)> {
    let amount = escrow.amount;
    Ok(match escrow.status {
        SealedEscrowStatus::Declined => (amount, 0),
        SealedEscrowStatus::Claimed => (0, 0),
        SealedEscrowStatus::Expired => (amount, escrow.share),
        SealedEscrowStatus::Deposited => {
            require!(
                now()? >= answer_deadline(settings, escrow.deposited_at)?,
                EscrowError::ReleaseWindowOpen
            );
            (amount, slash_to(listing, escrow, buyer)?)
        }
        SealedEscrowStatus::Revealed if listing.status == SealedListingStatus::Convicted => {
            (amount, slash_to(listing, escrow, buyer)?)
        }
        SealedEscrowStatus::Revealed => return err!(EscrowError::WrongEscrowState),
    })
}

/// Emits [`SealedRefunded`].
pub fn refunded(
    event_authority: &AccountInfo<'_>,
    escrow: &Account<'_, SealedEscrow>,
    amount: u64,
    slashed: u64,
) -> Result<()> {
    emit(
        event_authority,
        &SealedRefunded {
            escrow: escrow.key(),
            amount,
            slashed,
        },
    )
}
