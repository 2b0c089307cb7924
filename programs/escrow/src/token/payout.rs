//! `claim_token`: `claim` for a listing in a token. The escrow PDA signs
//! the vault's payments: the price less the fee to a token account of the
//! seller for the mint, the fee to the treasury's associated account of
//! the mint (created when the listing opened), or to the seller when that
//! account cannot take it (closed, no longer the treasury's, or with an
//! extension that could refuse it). A frozen treasury account fails the
//! claim instead (`TreasuryFrozen`): whoever holds the mint's freeze
//! authority (a seller who chose its own mint) never waives the fee by a
//! freeze; the claim pays once it is thawed. The emptied vault stays for
//! the buyer to close.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{fee_of, sub};
use crate::sealed::claim::{claimable, claimed};
use crate::sealed::state::{SealedEscrow, SealedListing, Settings};
use crate::token::as_escrow;
use crate::token::vault::{
    self, extensions_within, token_account, Token, FROZEN, IMMUTABLE_OWNER, INITIALIZED,
};
use anchor_lang::prelude::*;

/// Accounts of `claim_token`.
#[event_cpi]
#[derive(Accounts)]
pub struct ClaimToken<'info> {
    /// Settings (fee, treasury, dispute window).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller,
        constraint = !listing.in_lamports() @ EscrowError::ListingInLamports
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow claimed.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), escrow.buyer.as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// CHECK: the listing's seller (checked); owner of `seller_token`.
    pub seller: UncheckedAccount<'info>,
    /// CHECK: the listing's mint (address checked).
    #[account(address = listing.mint @ EscrowError::WrongMint)]
    pub mint: UncheckedAccount<'info>,
    /// CHECK: the escrow's vault (address checked).
    #[account(
        mut,
        address = vault::associated(&escrow.key(), &mint.key(), &token_program.key())
            @ EscrowError::WrongVault
    )]
    pub vault: UncheckedAccount<'info>,
    /// CHECK: a token account of the seller for the mint (the handler
    /// checks owner and mint).
    #[account(mut)]
    pub seller_token: UncheckedAccount<'info>,
    /// CHECK: the treasury's associated account of the mint (address
    /// checked; may not exist).
    #[account(
        mut,
        address = vault::associated(&settings.treasury, &mint.key(), &token_program.key())
            @ EscrowError::WrongTreasury
    )]
    pub treasury_token: UncheckedAccount<'info>,
    /// CHECK: the mint's owner (address checked).
    #[account(address = *mint.owner @ EscrowError::WrongTokenProgram)]
    pub token_program: UncheckedAccount<'info>,
}

impl ClaimToken<'_> {
    /// Pays the vault out once the dispute window has passed.
    pub fn handler(ctx: Context<ClaimToken>) -> Result<()> {
        let a = ctx.accounts;
        let amount = claimable(&a.settings, &a.listing, &a.escrow)?;
        let (seller, mint) = (a.listing.seller, a.listing.mint);
        // a freeze never waives the fee: the claim waits for the thaw
        require!(
            !token_account(&a.treasury_token).is_some_and(|t| {
                t.owner == a.settings.treasury && t.mint == mint && t.state == FROZEN
            }),
            EscrowError::TreasuryFrozen
        );
        token_account(&a.seller_token)
            .filter(|t| t.owner == seller && t.mint == mint)
            .ok_or_else(|| error!(EscrowError::WrongSellerAccount))?;
        // the treasury's own account, live, with no extension that could
        // refuse the fee (required memos, a CPI guard)
        let treasury_takes =
            token_account(&a.treasury_token).is_some_and(|t| {
                t.owner == a.settings.treasury && t.mint == mint && t.state == INITIALIZED
            }) && extensions_within(&a.treasury_token.try_borrow_data()?, &[IMMUTABLE_OWNER]);
        let fee = if treasury_takes {
            fee_of(amount, a.settings.fee_bps)
        } else {
            0
        };
        let to_seller = sub(amount, fee)?;
        let token = Token::new(&a.token_program, &a.mint)?;
        let escrow = a.escrow.to_account_info();
        as_escrow(&a.escrow, |seeds| {
            token.transfer(&a.vault, &a.seller_token, &escrow, to_seller, seeds)?;
            if fee > 0 {
                token.transfer(&a.vault, &a.treasury_token, &escrow, fee, seeds)?;
            }
            Ok(())
        })?;
        claimed(
            &a.event_authority,
            &mut a.listing,
            &mut a.escrow,
            to_seller,
            fee,
        )
    }
}
