//! `deposit_sealed_token`: `deposit_sealed` for a listing in a token. The
//! escrow's vault (its associated token account of the mint) is created
//! when missing and the buyer's `TransferChecked` moves the price into it;
//! what the vault received must be the price exactly. The mint's extensions
//! are checked again at every deposit (the mint may have been made again).

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::sealed::sealed_deposit::{check_deposit, deposit_share, NewDeposit};
use crate::sealed::state::{
    SealedEscrow, SealedListing, SealedListingStatus, SealedTerms, Settings,
};
use crate::token::vault::{self, check_escrow_mint, vault_balance, Token};
use anchor_lang::prelude::*;

/// Accounts of `deposit_sealed_token`.
#[event_cpi]
#[derive(Accounts)]
pub struct DepositSealedToken<'info> {
    /// Settings (stake floor).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing bought.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = listing.status == SealedListingStatus::Live @ EscrowError::ListingClosed,
        constraint = !listing.in_lamports() @ EscrowError::ListingInLamports
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow PDA, created here (the vault's authority).
    #[account(
        init,
        payer = buyer,
        space = 8 + SealedEscrow::INIT_SPACE,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer: pays the rents and the price.
    #[account(mut)]
    pub buyer: Signer<'info>,
    /// CHECK: the listing's mint (address checked; read by the handler).
    #[account(address = listing.mint @ EscrowError::WrongMint)]
    pub mint: UncheckedAccount<'info>,
    /// CHECK: the buyer's token account; the token program checks its
    /// mint and that the buyer signs for it.
    #[account(mut)]
    pub buyer_token: UncheckedAccount<'info>,
    /// CHECK: the escrow's vault, its associated token account of the
    /// mint (address checked), created here when missing.
    #[account(
        mut,
        address = vault::associated(&escrow.key(), &mint.key(), &token_program.key())
            @ EscrowError::WrongVault
    )]
    pub vault: UncheckedAccount<'info>,
    /// CHECK: the mint's owner (address checked).
    #[account(address = *mint.owner @ EscrowError::WrongTokenProgram)]
    pub token_program: UncheckedAccount<'info>,
    /// CHECK: the associated-token-account program (address checked).
    #[account(address = vault::ATA_PROGRAM)]
    pub associated_token_program: UncheckedAccount<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl DepositSealedToken<'_> {
    /// Checks as `deposit_sealed` does; creates the vault and moves the
    /// price into it.
    pub fn handler(
        ctx: Context<DepositSealedToken>,
        terms: SealedTerms,
        blind_point: [u8; 32],
        buyer_x25519: [u8; 32],
    ) -> Result<()> {
        let bump = ctx.bumps.escrow;
        let a = ctx.accounts;
        let at = check_deposit(&a.settings, &a.listing, &terms, &blind_point, &buyer_x25519)?;
        // again at every deposit, not only at listing: a mint with a close
        // authority can be closed and made again at the same address with
        // an extension that could pull or freeze the vault
        check_escrow_mint(&a.mint)?;
        let token = Token::new(&a.token_program, &a.mint)?;
        let escrow = a.escrow.to_account_info();
        token.create_associated(
            &a.buyer,
            &a.vault,
            &escrow,
            &a.system_program,
            &a.associated_token_program,
        )?;
        let (owner, mint) = (a.escrow.key(), a.mint.key());
        let before = vault_balance(&a.vault, &owner, &mint)?;
        let price = terms.price_lamports;
        token.transfer(&a.buyer_token, &a.vault, &a.buyer, price, &[])?;
        let after = vault_balance(&a.vault, &owner, &mint)?;
        require!(
            after.checked_sub(before) == Some(price),
            EscrowError::DepositShort
        );
        let deposit = NewDeposit {
            buyer: a.buyer.key(),
            buyer_x25519,
            blind_point,
            amount: price,
            at,
            bump,
            share: deposit_share(&a.settings),
        };
        deposit.record(&a.event_authority, &mut a.listing, &mut a.escrow)
    }
}
