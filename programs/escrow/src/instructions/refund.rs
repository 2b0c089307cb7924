//! `refund`: after the release window without a release, the buyer takes
//! the deposit back; the listing then owes a slash.

use super::{add, now, sub};
use crate::constants::{CONFIG_SEED, ESCROW_SEED, LISTING_SEED};
use crate::error::EscrowError;
use crate::events::Refunded;
use crate::state::{Config, Escrow, EscrowStatus, Listing};
use anchor_lang::prelude::*;

/// Accounts of `refund`.
#[derive(Accounts)]
pub struct Refund<'info> {
    /// Program settings (release window).
    #[account(seeds = [CONFIG_SEED], bump = config.bump)]
    pub config: Account<'info, Config>,
    /// The listing.
    #[account(
        mut,
        seeds = [LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump
    )]
    pub listing: Account<'info, Listing>,
    /// The buyer's escrow.
    #[account(
        mut,
        seeds = [ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing,
        has_one = buyer @ EscrowError::NotBuyer
    )]
    pub escrow: Account<'info, Escrow>,
    /// The buyer, refunded.
    #[account(mut)]
    pub buyer: Signer<'info>,
}

impl Refund<'_> {
    /// Returns the deposit once the window has passed.
    pub fn handler(ctx: Context<Refund>) -> Result<()> {
        let a = ctx.accounts;
        require!(
            a.escrow.status == EscrowStatus::Deposited,
            EscrowError::AlreadySettled
        );
        let opens = add(a.escrow.deposited_at, a.config.release_window_secs)?;
        require!(now()? >= opens, EscrowError::ReleaseWindowOpen);
        let amount = a.escrow.amount;
        a.escrow.sub_lamports(amount)?;
        a.buyer.add_lamports(amount)?;
        a.escrow.status = EscrowStatus::Refunded;
        a.listing.open_escrows = sub(a.listing.open_escrows, 1)?;
        a.listing.unslashed_refunds = add(a.listing.unslashed_refunds, 1)?;
        emit!(Refunded {
            escrow: a.escrow.key(),
            amount,
        });
        Ok(())
    }
}
