//! `list_sealed_token`: `list_sealed` for a listing whose deposits are in
//! an SPL Token or Token-2022 mint (the terms' price in its base units).

use crate::constants::{SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::sealed::list::Opening;
use crate::sealed::state::{SealedListing, SealedTerms, Settings};
use crate::token::vault::mint_decimals;
use anchor_lang::prelude::*;

/// Accounts of `list_sealed_token`.
#[derive(Accounts)]
#[instruction(listing_id: String)]
pub struct ListSealedToken<'info> {
    /// Settings (stake floor).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing PDA of (seller, listing id), created here.
    #[account(
        init,
        payer = seller,
        space = 8 + SealedListing::INIT_SPACE,
        seeds = [SEALED_LISTING_SEED, seller.key().as_ref(), listing_id.as_bytes()],
        bump
    )]
    pub listing: Account<'info, SealedListing>,
    /// The seller: pays rent and the stake (in lamports).
    #[account(mut)]
    pub seller: Signer<'info>,
    /// CHECK: the mint deposits are in; the handler checks it is an
    /// initialized SPL Token or Token-2022 mint.
    pub mint: UncheckedAccount<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl ListSealedToken<'_> {
    /// Checks the mint, then opens the listing as `list_sealed` does.
    pub fn handler(
        ctx: Context<ListSealedToken>,
        listing_id: String,
        terms: SealedTerms,
        stake: u64,
    ) -> Result<()> {
        let bump = ctx.bumps.listing;
        let a = ctx.accounts;
        mint_decimals(&a.mint)?;
        let listing = Opening {
            listing_id,
            terms,
            stake,
            mint: a.mint.key(),
            bump,
        };
        listing.open(&a.settings, &mut a.listing, &a.seller, &a.system_program)
    }
}
