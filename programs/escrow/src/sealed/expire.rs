//! `expire`: anyone closes the window of a deposit the seller never
//! answered (past the release window and its grace), or of a reveal on a
//! listing convicted of fraud: the escrow stops counting as open (so a
//! buyer that never refunds cannot keep the seller from retiring), and the
//! slash share reserved at its deposit moves from the listing's stake into
//! the escrow, where the deposit still is. The buyer takes both whenever
//! it comes back (`refund_sealed`, `refund_sealed_token`); nothing here
//! touches the buyer's or the vault's accounts, so nobody's account can
//! make it fail. Both currencies: the share is lamports, a token deposit
//! stays in its vault.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::now;
use crate::sealed::answer_deadline;
use crate::sealed::events::{emit, EscrowExpired};
use crate::sealed::sealed_refund::slash_to;
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, Settings,
};
use anchor_lang::prelude::*;

/// Accounts of `expire`.
#[event_cpi]
#[derive(Accounts)]
pub struct Expire<'info> {
    /// Settings (release window).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing (its stake pays the share).
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow expired.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), escrow.buyer.as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing
    )]
    pub escrow: Account<'info, SealedEscrow>,
}

/// Whether `escrow` may be expired at `at`: deposited and past its answer
/// deadline, or revealed on a convicted listing.
pub fn expirable(
    settings: &Settings,
    listing: &SealedListing,
    escrow: &SealedEscrow,
    at: i64,
) -> Result<bool> {
    Ok(match escrow.status {
        SealedEscrowStatus::Deposited => at >= answer_deadline(settings, escrow.deposited_at)?,
        SealedEscrowStatus::Revealed => listing.status == SealedListingStatus::Convicted,
        _ => false,
    })
}

impl Expire<'_> {
    /// Moves the share into the escrow and marks it expired.
    pub fn handler(ctx: Context<Expire>) -> Result<()> {
        let a = ctx.accounts;
        require!(
            expirable(&a.settings, &a.listing, &a.escrow, now()?)?,
            EscrowError::NotExpirable
        );
        let escrow = a.escrow.to_account_info();
        let slashed = slash_to(&mut a.listing, &a.escrow, &escrow)?;
        a.escrow.status = SealedEscrowStatus::Expired;
        emit(
            &a.event_authority,
            &EscrowExpired {
                escrow: a.escrow.key(),
                slashed,
            },
        )
    }
}
