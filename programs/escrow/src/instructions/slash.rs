//! `slash`: anyone may pay a refunded buyer the configured share of the
//! listing's remaining stake, once per refund.

use super::{share_of, sub};
use crate::constants::{CONFIG_SEED, ESCROW_SEED, LISTING_SEED};
use crate::error::EscrowError;
use crate::events::Slashed;
use crate::state::{Config, Escrow, EscrowStatus, Listing};
use anchor_lang::prelude::*;

/// Accounts of `slash`.
#[derive(Accounts)]
pub struct Slash<'info> {
    /// Program settings (slash share).
    #[account(seeds = [CONFIG_SEED], bump = config.bump)]
    pub config: Account<'info, Config>,
    /// The listing whose stake pays.
    #[account(
        mut,
        seeds = [LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump
    )]
    pub listing: Account<'info, Listing>,
    /// The refunded escrow.
    #[account(
        mut,
        seeds = [ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing,
        has_one = buyer @ EscrowError::NotBuyer
    )]
    pub escrow: Account<'info, Escrow>,
    /// The refunded buyer, paid.
    #[account(mut)]
    pub buyer: SystemAccount<'info>,
    /// Whoever asks (pays the transaction fee only).
    pub caller: Signer<'info>,
}

impl Slash<'_> {
    /// Pays the share once.
    pub fn handler(ctx: Context<Slash>) -> Result<()> {
        let a = ctx.accounts;
        require!(
            a.escrow.status == EscrowStatus::Refunded,
            EscrowError::NoCause
        );
        require!(!a.escrow.slashed, EscrowError::AlreadySlashed);
        let amount = share_of(a.listing.stake, a.config.slash_bps);
        a.listing.stake = sub(a.listing.stake, amount)?;
        a.listing.sub_lamports(amount)?;
        a.buyer.add_lamports(amount)?;
        a.escrow.slashed = true;
        a.listing.unslashed_refunds = sub(a.listing.unslashed_refunds, 1)?;
        emit!(Slashed {
            escrow: a.escrow.key(),
            amount,
        });
        Ok(())
    }
}
