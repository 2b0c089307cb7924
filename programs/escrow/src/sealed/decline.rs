//! `decline`: inside the release window (and its grace) the seller turns a deposit down
//! (its B is not the blinding both parties derive, or the seller will not
//! sell): the buyer takes it all back with `refund`, and no stake is
//! slashed. Nothing moves here, so a buyer's account can never make it
//! fail.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::now;
use crate::sealed::answer_deadline;
use crate::sealed::events::{emit, DepositDeclined};
use crate::sealed::state::{SealedEscrow, SealedEscrowStatus, SealedListing, Settings};
use anchor_lang::prelude::*;

/// Accounts of `decline`.
#[event_cpi]
#[derive(Accounts)]
pub struct Decline<'info> {
    /// Settings (release window).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing, whose seller must sign.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow declined.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), escrow.buyer.as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The seller.
    pub seller: Signer<'info>,
}

impl Decline<'_> {
    /// Marks the deposit declined.
    pub fn handler(ctx: Context<Decline>) -> Result<()> {
        let a = ctx.accounts;
        require!(
            a.escrow.status == SealedEscrowStatus::Deposited,
            EscrowError::WrongEscrowState
        );
        require!(
            now()? < answer_deadline(&a.settings, a.escrow.deposited_at)?,
            EscrowError::ReleaseWindowClosed
        );
        a.escrow.status = SealedEscrowStatus::Declined;
        a.listing.close_escrow(&a.escrow)?;
        emit(
            &a.event_authority,
            &DepositDeclined {
                escrow: a.escrow.key(),
            },
        )
    }
}
