//! `reveal`: the seller publishes s with s·G = K + B inside the release
//! window (and its grace). That s gives the escrow's buyer (who knows b) the listing's
//! k = s − b and nobody else anything; the payment then waits out the
//! dispute window (`claim`).

use crate::constants::{REVEAL_GRACE_SECS, SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{add, now};
use crate::sealed::events::{emit, KeyRevealed};
use crate::sealed::state::{SealedEscrow, SealedEscrowStatus, SealedListing, Settings};
use anchor_lang::prelude::*;

/// Accounts of `reveal`.
#[event_cpi]
#[derive(Accounts)]
pub struct Reveal<'info> {
    /// Settings (release window).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing, whose seller must sign.
    #[account(
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow revealed to.
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

/// Unix seconds at which the release window of an escrow deposited at
/// `deposited_at` closes (the seller's clients aim to answer before it).
pub fn release_deadline(settings: &Settings, deposited_at: i64) -> Result<i64> {
    add(deposited_at, settings.release_window_secs)
}

/// Unix seconds until which an escrow deposited at `deposited_at` takes a
/// reveal or a decline (the window and [`REVEAL_GRACE_SECS`]), and from
/// which its refund and `expire` open.
pub fn answer_deadline(settings: &Settings, deposited_at: i64) -> Result<i64> {
    add(release_deadline(settings, deposited_at)?, REVEAL_GRACE_SECS)
}

impl Reveal<'_> {
    /// Checks the window and the equation; records s.
    pub fn handler(ctx: Context<Reveal>, revealed: [u8; 32]) -> Result<()> {
        let a = ctx.accounts;
        require!(
            a.escrow.status == SealedEscrowStatus::Deposited,
            EscrowError::WrongEscrowState
        );
        let at = now()?;
        require!(
            at < answer_deadline(&a.settings, a.escrow.deposited_at)?,
            EscrowError::ReleaseWindowClosed
        );
        require!(
            escrow_math::point::reveals(
                &revealed,
                &a.listing.terms.key_point,
                &a.escrow.blind_point
            ),
            EscrowError::WrongReveal
        );
        a.escrow.status = SealedEscrowStatus::Revealed;
        a.escrow.revealed = revealed;
        a.escrow.revealed_at = at;
        emit(
            &a.event_authority,
            &KeyRevealed {
                escrow: a.escrow.key(),
                revealed,
            },
        )
    }
}
