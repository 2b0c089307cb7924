//! `refund_sealed_token`: `refund_sealed` for a listing in a token. It
//! first returns everything the vault holds to the buyer's token account
//! and closes the vault to the buyer (its rent), signed by the escrow
//! PDA, then decides as `refund_sealed` does (a refused refund undoes it
//! all); the escrow closes to the buyer and a slash is paid in lamports
//! from the stake (or was moved into the escrow by `expire` or
//! `dispute_token`). An empty vault (a claimed escrow's) closes without
//! reading the mint, so a mint closed after the claim never locks the
//! escrow's or the vault's rent.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::sealed::sealed_refund::{refund_due, refunded};
use crate::sealed::state::{SealedEscrow, SealedListing, Settings};
use crate::token::as_escrow;
use crate::token::vault::{self, close_account, is_vault_program, vault_balance, Token};
use anchor_lang::prelude::*;

/// Accounts of `refund_sealed_token`.
#[event_cpi]
#[derive(Accounts)]
pub struct ExitToken<'info> {
    /// Settings (windows, slash share).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing (its stake pays a slash).
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = !listing.in_lamports() @ EscrowError::ListingInLamports
    )]
    pub listing: Account<'info, SealedListing>,
    /// The buyer's escrow, closed to the buyer.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing,
        has_one = buyer @ EscrowError::NotBuyer,
        close = buyer
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer.
    #[account(mut)]
    pub buyer: Signer<'info>,
    /// CHECK: the listing's mint (address checked).
    #[account(address = listing.mint @ EscrowError::WrongMint)]
    pub mint: UncheckedAccount<'info>,
    /// CHECK: the escrow's vault (address checked), closed here.
    #[account(
        mut,
        address = vault::associated(&escrow.key(), &mint.key(), &token_program.key())
            @ EscrowError::WrongVault
    )]
    pub vault: UncheckedAccount<'info>,
    /// CHECK: where the buyer takes the tokens (its choice: it signs; the
    /// token program checks the mint).
    #[account(mut)]
    pub buyer_token: UncheckedAccount<'info>,
    /// CHECK: the vault's token program, the mint's while it exists
    /// (checked).
    #[account(
        constraint = is_vault_program(&token_program, &vault, &mint)
            @ EscrowError::WrongTokenProgram
    )]
    pub token_program: UncheckedAccount<'info>,
}

impl ExitToken<'_> {
    /// Moves all the vault holds to the buyer's token account and closes
    /// the vault to the buyer (the mint is read only when it holds some).
    fn empty_vault(&self) -> Result<()> {
        let held = vault_balance(&self.vault, &self.escrow.key(), &self.mint.key())?;
        let escrow = self.escrow.to_account_info();
        let buyer = self.buyer.to_account_info();
        as_escrow(&self.escrow, |seeds| {
            if held > 0 {
                let token = Token::new(&self.token_program, &self.mint)?;
                token.transfer(&self.vault, &self.buyer_token, &escrow, held, seeds)?;
            }
            close_account(&self.token_program, &self.vault, &buyer, &escrow, seeds)
        })
    }

    /// `refund_sealed_token`: what `refund_sealed` returns, from the vault.
    pub fn refund(ctx: Context<ExitToken>) -> Result<()> {
        let a = ctx.accounts;
        a.empty_vault()?;
        let buyer = a.buyer.to_account_info();
        let (returned, slashed) = refund_due(&a.settings, &mut a.listing, &a.escrow, &buyer)?;
        refunded(&a.event_authority, &a.escrow, returned, slashed)
    }
}
