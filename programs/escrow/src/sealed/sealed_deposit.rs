//! `deposit_sealed`: a buyer pays the price into an escrow PDA of
//! (listing, buyer), repeating the terms its client checked (the program
//! refuses any difference: a re-created or edited listing cannot take
//! more than the buyer saw) and binding its blinding point B.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{add, now};
use crate::sealed::events::SealedDeposited;
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, SealedTerms, Settings,
};
use anchor_lang::prelude::*;
use anchor_lang::system_program::{transfer, Transfer};

/// Accounts of `deposit_sealed`.
#[derive(Accounts)]
pub struct DepositSealed<'info> {
    /// Settings (stake floor).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing bought.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = listing.status == SealedListingStatus::Live @ EscrowError::ListingClosed
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow PDA, created here.
    #[account(
        init,
        payer = buyer,
        space = 8 + SealedEscrow::INIT_SPACE,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer: pays rent and the price.
    #[account(mut)]
    pub buyer: Signer<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl DepositSealed<'_> {
    /// Checks terms, expiry, stake floor and keys; moves the price.
    pub fn handler(
        ctx: Context<DepositSealed>,
        terms: SealedTerms,
        blind_point: [u8; 32],
        buyer_x25519: [u8; 32],
    ) -> Result<()> {
        let a = ctx.accounts;
        let at = now()?;
        require!(terms == a.listing.terms, EscrowError::TermsMismatch);
        require!(at < a.listing.terms.expires_at, EscrowError::ListingExpired);
        require!(
            a.listing.stake >= a.settings.min_stake,
            EscrowError::StakeBelowFloor
        );
        require!(
            escrow_math::point::is_usable(&blind_point),
            EscrowError::BadPoint
        );
        require!(
            !escrow_math::x25519::is_low_order(&buyer_x25519),
            EscrowError::LowOrderKey
        );
        let amount = terms.price_lamports;
        transfer(
            CpiContext::new(
                a.system_program.key(),
                Transfer {
                    from: a.buyer.to_account_info(),
                    to: a.escrow.to_account_info(),
                },
            ),
            amount,
        )?;
        a.listing.open_escrows = add(a.listing.open_escrows, 1)?;
        let buyer = a.buyer.key();
        a.escrow.set_inner(SealedEscrow {
            listing: a.listing.key(),
            buyer,
            buyer_x25519,
            blind_point,
            amount,
            deposited_at: at,
            status: SealedEscrowStatus::Deposited,
            revealed: [0; 32],
            revealed_at: 0,
            bump: ctx.bumps.escrow,
        });
        emit!(SealedDeposited {
            listing: a.listing.key(),
            escrow: a.escrow.key(),
            buyer,
            amount,
        });
        Ok(())
    }
}
