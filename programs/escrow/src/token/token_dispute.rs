//! `dispute_token` (with `dispute_step_token`, `dispute_link_token`):
//! `dispute` for a listing in a token. A proof that holds convicts the
//! listing and records it in the escrow without moving a token: the
//! escrow becomes `Expired`, the stake share moves into it (lamports),
//! and the deposit stays in the vault for the buyer's
//! `refund_sealed_token`. Nothing the mint's freeze authority does to the
//! vault can stop a conviction or let the seller claim: a frozen vault
//! only delays the buyer's withdrawal until it is thawed.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::sealed::dispute::{convict, Decide};
use crate::sealed::state::{SealedEscrow, SealedEscrowStatus, SealedListing, Settings};
use anchor_lang::prelude::*;

/// Accounts of `dispute_token` (and its step and link forms).
#[event_cpi]
#[derive(Accounts)]
pub struct DisputeToken<'info> {
    /// Settings (dispute window, slash share).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing (its commitments judge; its stake pays).
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = !listing.in_lamports() @ EscrowError::ListingInLamports
    )]
    pub listing: Account<'info, SealedListing>,
    /// The buyer's escrow: expired with the share when the proof holds.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing,
        has_one = buyer @ EscrowError::NotBuyer
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer.
    pub buyer: Signer<'info>,
}

impl DisputeToken<'_> {
    /// Decides the proof; on fraud, convicts and moves the share into the
    /// escrow, the deposit left in its vault.
    pub fn handler(ctx: Context<DisputeToken>, proof: &impl Decide) -> Result<()> {
        let a = ctx.accounts;
        let escrow = a.escrow.to_account_info();
        let events = a.event_authority.to_account_info();
        convict(
            &a.settings,
            &mut a.listing,
            &a.escrow,
            &escrow,
            proof,
            &events,
        )?;
        a.escrow.status = SealedEscrowStatus::Expired;
        Ok(())
    }
}
