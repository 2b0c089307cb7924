//! `deposit`: a buyer pays the price into an escrow PDA of (listing, buyer).

use super::{add, now};
use crate::constants::{ESCROW_SEED, LISTING_SEED};
use crate::error::EscrowError;
use crate::events::Deposited;
use crate::state::{Escrow, EscrowStatus, Listing, ListingStatus};
use anchor_lang::prelude::*;
use anchor_lang::system_program::{transfer, Transfer};

/// Accounts of `deposit`.
#[derive(Accounts)]
pub struct Deposit<'info> {
    /// The listing bought.
    #[account(
        mut,
        seeds = [LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = listing.status == ListingStatus::Live @ EscrowError::ListingCancelled
    )]
    pub listing: Account<'info, Listing>,
    /// The escrow PDA, created here (one per buyer and listing).
    #[account(
        init,
        payer = buyer,
        space = 8 + Escrow::INIT_SPACE,
        seeds = [ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump
    )]
    pub escrow: Account<'info, Escrow>,
    /// The buyer: pays rent and the price.
    #[account(mut)]
    pub buyer: Signer<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl<'info> Deposit<'info> {
    fn price_transfer(&self) -> CpiContext<'_, '_, '_, 'info, Transfer<'info>> {
        CpiContext::new(
            self.system_program.key(),
            Transfer {
                from: self.buyer.to_account_info(),
                to: self.escrow.to_account_info(),
            },
        )
    }

    /// Checks expiry, moves the price and records the escrow.
    pub fn handler(ctx: Context<Deposit>, buyer_x25519: [u8; 32]) -> Result<()> {
        let at = now()?;
        require!(
            at < ctx.accounts.listing.expires_at,
            EscrowError::ListingExpired
        );
        let amount = ctx.accounts.listing.price_lamports;
        transfer(ctx.accounts.price_transfer(), amount)?;
        let listing = &mut ctx.accounts.listing;
        listing.open_escrows = add(listing.open_escrows, 1)?;
        let buyer = ctx.accounts.buyer.key();
        ctx.accounts.escrow.set_inner(Escrow {
            listing: listing.key(),
            buyer,
            buyer_x25519,
            amount,
            deposited_at: at,
            status: EscrowStatus::Deposited,
            envelope_id: String::new(),
            slashed: false,
            bump: ctx.bumps.escrow,
        });
        emit!(Deposited {
            listing: listing.key(),
            escrow: ctx.accounts.escrow.key(),
            buyer,
            amount,
        });
        Ok(())
    }
}
