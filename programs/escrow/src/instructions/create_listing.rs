//! `create_listing`: the seller opens a listing and stakes lamports in it.

use super::now;
use crate::constants::{CONFIG_SEED, LISTING_ID_LEN, LISTING_SEED};
use crate::error::EscrowError;
use crate::events::ListingCreated;
use crate::state::{Config, Listing, ListingStatus};
use anchor_lang::prelude::*;
use anchor_lang::system_program::{transfer, Transfer};

/// Accounts of `create_listing`.
#[derive(Accounts)]
#[instruction(listing_id: String)]
pub struct CreateListing<'info> {
    /// Program settings.
    #[account(seeds = [CONFIG_SEED], bump = config.bump)]
    pub config: Account<'info, Config>,
    /// The listing PDA of (seller, listing id), created here.
    #[account(
        init,
        payer = seller,
        space = 8 + Listing::INIT_SPACE,
        seeds = [LISTING_SEED, seller.key().as_ref(), listing_id.as_bytes()],
        bump
    )]
    pub listing: Account<'info, Listing>,
    /// The seller: pays rent and the stake.
    #[account(mut)]
    pub seller: Signer<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

/// Whether `id` is `YYYYMMDD-<12 lowercase hex>`.
pub fn is_listing_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == LISTING_ID_LEN
        && b[8] == b'-'
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[9..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

impl<'info> CreateListing<'info> {
    fn stake_transfer(&self) -> CpiContext<'_, '_, '_, 'info, Transfer<'info>> {
        CpiContext::new(
            self.system_program.key(),
            Transfer {
                from: self.seller.to_account_info(),
                to: self.listing.to_account_info(),
            },
        )
    }

    /// Checks the terms, records them and moves the stake.
    pub fn handler(
        ctx: Context<CreateListing>,
        listing_id: String,
        bundle_hash: [u8; 32],
        price_lamports: u64,
        stake: u64,
        expires_at: i64,
    ) -> Result<()> {
        require!(is_listing_id(&listing_id), EscrowError::BadListingId);
        require!(price_lamports > 0, EscrowError::ZeroPrice);
        require!(
            stake >= ctx.accounts.config.min_stake,
            EscrowError::StakeTooLow
        );
        require!(expires_at > now()?, EscrowError::ExpiryInPast);
        if stake > 0 {
            transfer(ctx.accounts.stake_transfer(), stake)?;
        }
        let seller = ctx.accounts.seller.key();
        ctx.accounts.listing.set_inner(Listing {
            seller,
            listing_id: listing_id.clone(),
            bundle_hash,
            price_lamports,
            stake,
            expires_at,
            status: ListingStatus::Live,
            open_escrows: 0,
            unslashed_refunds: 0,
            bump: ctx.bumps.listing,
        });
        emit!(ListingCreated {
            listing: ctx.accounts.listing.key(),
            seller,
            listing_id,
            price_lamports,
            stake,
        });
        Ok(())
    }
}
