//! `list_sealed`: the seller opens a sealed listing, commits to its terms,
//! stakes at least the floor and caps its open escrows. The account outlives the listing
//! (`retire_sealed` keeps it), so an id never comes back with other terms.

use crate::constants::{SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{is_listing_id, now};
use crate::sealed::events::{emit, SealedListed};
use crate::sealed::state::{SealedListing, SealedListingStatus, SealedTerms, Settings};
use anchor_lang::prelude::*;
use anchor_lang::system_program::{transfer, Transfer};

/// Accounts of `list_sealed`.
#[event_cpi]
#[derive(Accounts)]
#[instruction(listing_id: String)]
pub struct ListSealed<'info> {
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
    /// The seller: pays rent and the stake.
    #[account(mut)]
    pub seller: Signer<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

/// Checks what the program can check of a listing's terms.
pub fn check_terms(t: &SealedTerms, at: i64) -> Result<()> {
    require!(t.price_lamports > 0, EscrowError::ZeroPrice);
    require!(t.expires_at > at, EscrowError::ExpiryInPast);
    require!(
        escrow_math::chunk_count(t.plain_len).is_some(),
        EscrowError::BadPlainLen
    );
    require!(
        escrow_math::point::is_usable(&t.key_point),
        EscrowError::BadPoint
    );
    require!(
        !escrow_math::x25519::is_low_order(&t.seller_x25519),
        EscrowError::LowOrderKey
    );
    Ok(())
}

impl ListSealed<'_> {
    /// Checks the terms, records them and moves the stake.
    pub fn handler(
        ctx: Context<ListSealed>,
        listing_id: String,
        terms: SealedTerms,
        stake: u64,
        max_open: u32,
    ) -> Result<()> {
        let bump = ctx.bumps.listing;
        let a = ctx.accounts;
        let listing = Opening {
            listing_id,
            terms,
            stake,
            max_open,
            mint: Pubkey::default(),
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

/// A listing about to open: what `list_sealed` and `list_sealed_token`
/// record.
pub struct Opening {
    /// `YYYYMMDD-<12 hex>`.
    pub listing_id: String,
    /// The committed terms.
    pub terms: SealedTerms,
    /// Lamports staked.
    pub stake: u64,
    /// The seller's cap on open escrows (at least 1; `u32::MAX`: as many
    /// as the stake covers).
    pub max_open: u32,
    /// The currency of deposits (the default key: lamports).
    pub mint: Pubkey,
    /// The listing PDA's bump.
    pub bump: u8,
}

impl Opening {
    /// Checks the id, terms and stake, moves the stake from `seller` and
    /// writes the listing.
    pub fn open<'info>(
        self,
        event_authority: &AccountInfo<'info>,
        settings: &Settings,
        listing: &mut Account<'info, SealedListing>,
        seller: &Signer<'info>,
        system_program: &Program<'info, System>,
    ) -> Result<()> {
        require!(is_listing_id(&self.listing_id), EscrowError::BadListingId);
        check_terms(&self.terms, now()?)?;
        require!(self.stake >= settings.min_stake, EscrowError::StakeTooLow);
        require!(self.max_open > 0, EscrowError::ZeroMaxOpen);
        transfer(
            CpiContext::new(
                system_program.key(),
                Transfer {
                    from: seller.to_account_info(),
                    to: listing.to_account_info(),
                },
            ),
            self.stake,
        )?;
        let seller = seller.key();
        listing.set_inner(SealedListing {
            seller,
            listing_id: self.listing_id,
            terms: self.terms,
            stake: self.stake,
            status: SealedListingStatus::Live,
            open_escrows: 0,
            bump: self.bump,
            mint: self.mint,
            reserved: 0,
            max_open: self.max_open,
        });
        emit(
            event_authority,
            &SealedListed {
                listing: listing.key(),
                seller,
                price_lamports: self.terms.price_lamports,
                stake: self.stake,
            },
        )
    }
}
