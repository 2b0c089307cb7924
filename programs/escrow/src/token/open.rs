//! `list_sealed_token`: `list_sealed` for a listing whose deposits are in
//! an SPL Token or Token-2022 mint (the terms' price in its base units):
//! the mint must be one no extension of which can move, freeze, tax or
//! block a vault ([`check_escrow_mint`]), and the treasury's associated
//! account of it is created here (paid by the seller, when missing), so
//! every claim can pay the fee.

use crate::constants::{SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::sealed::list::Opening;
use crate::sealed::state::{SealedListing, SealedTerms, Settings};
use crate::token::vault::{self, check_escrow_mint, Token};
use anchor_lang::prelude::*;

/// Accounts of `list_sealed_token`.
#[event_cpi]
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
    /// initialized SPL Token or Token-2022 mint whose extensions it takes.
    pub mint: UncheckedAccount<'info>,
    /// CHECK: the settings' treasury (address checked), owner of `treasury_token`.
    #[account(address = settings.treasury @ EscrowError::WrongTreasury)]
    pub treasury: UncheckedAccount<'info>,
    /// CHECK: the treasury's associated account of the mint (address
    /// checked), created here when missing.
    #[account(
        mut,
        address = vault::associated(&settings.treasury, &mint.key(), &token_program.key())
            @ EscrowError::WrongTreasury
    )]
    pub treasury_token: UncheckedAccount<'info>,
    /// CHECK: the mint's owner (address checked).
    #[account(address = *mint.owner @ EscrowError::WrongTokenProgram)]
    pub token_program: UncheckedAccount<'info>,
    /// CHECK: the associated-token-account program (address checked).
    #[account(address = vault::ATA_PROGRAM)]
    pub associated_token_program: UncheckedAccount<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl ListSealedToken<'_> {
    /// Checks the mint, creates the treasury's account of it, then opens
    /// the listing as `list_sealed` does.
    pub fn handler(
        ctx: Context<ListSealedToken>,
        listing_id: String,
        terms: SealedTerms,
        stake: u64,
        max_open: u32,
    ) -> Result<()> {
        let bump = ctx.bumps.listing;
        let a = ctx.accounts;
        check_escrow_mint(&a.mint)?;
        Token::new(&a.token_program, &a.mint)?.create_associated(
            &a.seller,
            &a.treasury_token,
            &a.treasury,
            &a.system_program,
            &a.associated_token_program,
        )?;
        let listing = Opening {
            listing_id,
            terms,
            stake,
            max_open,
            mint: a.mint.key(),
            bump,
        };
        listing.open(
            &a.event_authority,
            &a.settings,
            &mut a.listing,
            &a.seller,
            &a.system_program,
        )
    }
}
