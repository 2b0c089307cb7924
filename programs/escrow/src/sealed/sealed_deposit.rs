//! `deposit_sealed`: a buyer pays the price into an escrow PDA of
//! (listing, buyer), repeating the terms its client checked (the program
//! refuses any difference: a re-created or edited listing cannot take
//! more than the buyer saw) and binding its blinding point B.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{add, now, sub};
use crate::sealed::events::{emit, SealedDeposited};
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, SealedTerms, Settings,
};
use anchor_lang::prelude::*;
use anchor_lang::system_program::{transfer, Transfer};

/// Accounts of `deposit_sealed`.
#[event_cpi]
#[derive(Accounts)]
pub struct DepositSealed<'info> {
    /// Settings (stake floor).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing bought.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = listing.status == SealedListingStatus::Live @ EscrowError::ListingClosed,
        constraint = listing.in_lamports() @ EscrowError::ListingInToken
    )]
    pub listing: Account<'info, SealedListing>,
    /// The escrow PDA, created here.
    #[account(
        init,
        payer = buyer,
        space = 8 + SealedEscrow::INIT_SPACE,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer: pays rent and the price.
    #[account(mut)]
    pub buyer: Signer<'info>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl DepositSealed<'_> {
    /// Checks terms, expiry, stake floor and keys; moves the price.
    pub fn handler(
        ctx: Context<DepositSealed>,
        terms: SealedTerms,
        blind_point: [u8; 32],
        buyer_x25519: [u8; 32],
    ) -> Result<()> {
        let bump = ctx.bumps.escrow;
        let a = ctx.accounts;
        let at = check_deposit(&a.settings, &a.listing, &terms, &blind_point, &buyer_x25519)?;
        transfer(
            CpiContext::new(
                a.system_program.key(),
                Transfer {
                    from: a.buyer.to_account_info(),
                    to: a.escrow.to_account_info(),
                },
            ),
            terms.price_lamports,
        )?;
        let deposit = NewDeposit {
            buyer: a.buyer.key(),
            buyer_x25519,
            blind_point,
            amount: terms.price_lamports,
            at,
            bump,
            share: deposit_share(&a.settings),
        };
        deposit.record(&a.event_authority, &mut a.listing, &mut a.escrow)
    }
}

/// The slash share each deposit reserves from its listing's stake: the
/// settings' share of the stake floor, whatever the listing staked (a
/// larger stake backs more open escrows, never a larger drain per escrow).
pub fn deposit_share(settings: &Settings) -> u64 {
    escrow_math::slash_share(settings.min_stake, settings.slash_bps)
}

/// Checks a deposit before anything moves: the terms the buyer checked
/// are the listing's, unexpired, its stake at the floor, the seller's cap
/// on open escrows not reached and the unreserved stake covering this
/// deposit's share, B and the buyer's X25519 key usable. Returns now.
pub fn check_deposit(
    settings: &Settings,
    listing: &SealedListing,
    terms: &SealedTerms,
    blind_point: &[u8; 32],
    buyer_x25519: &[u8; 32],
) -> Result<i64> {
    let at = now()?;
    require!(*terms == listing.terms, EscrowError::TermsMismatch);
    require!(at < listing.terms.expires_at, EscrowError::ListingExpired);
    require!(
        listing.stake >= settings.min_stake,
        EscrowError::StakeBelowFloor
    );
    require!(
        listing.open_escrows < listing.max_open,
        EscrowError::TooManyOpen
    );
    require!(
        sub(listing.stake, listing.reserved)? >= deposit_share(settings),
        EscrowError::StakeReserved
    );
    require!(
        escrow_math::point::is_usable(blind_point),
        EscrowError::BadPoint
    );
    require!(
        !escrow_math::x25519::is_low_order(buyer_x25519),
        EscrowError::LowOrderKey
    );
    Ok(at)
}

/// A deposit whose price has moved: what the escrow records.
pub struct NewDeposit {
    /// The buyer.
    pub buyer: Pubkey,
    /// Its X25519 key.
    pub buyer_x25519: [u8; 32],
    /// B.
    pub blind_point: [u8; 32],
    /// What is held (lamports or base units).
    pub amount: u64,
    /// Unix seconds of the deposit.
    pub at: i64,
    /// The escrow PDA's bump.
    pub bump: u8,
    /// The slash share reserved for it ([`deposit_share`]).
    pub share: u64,
}

impl NewDeposit {
    /// Writes the escrow, counts it open on the listing and emits
    /// [`SealedDeposited`].
    pub fn record(
        self,
        event_authority: &AccountInfo<'_>,
        listing: &mut Account<'_, SealedListing>,
        escrow: &mut Account<'_, SealedEscrow>,
    ) -> Result<()> {
        listing.open_escrows = add(listing.open_escrows, 1)?;
        listing.reserved = add(listing.reserved, self.share)?;
        escrow.set_inner(SealedEscrow {
            listing: listing.key(),
            buyer: self.buyer,
            buyer_x25519: self.buyer_x25519,
            blind_point: self.blind_point,
            amount: self.amount,
            deposited_at: self.at,
            status: SealedEscrowStatus::Deposited,
            revealed: [0; 32],
            revealed_at: 0,
            bump: self.bump,
            share: self.share,
        });
        emit(
            event_authority,
            &SealedDeposited {
                listing: listing.key(),
                escrow: escrow.key(),
                buyer: self.buyer,
                amount: self.amount,
                mint: listing.mint,
                deposited_at: self.at,
            },
        )
    }
}
