//! `claim`: after the dispute window, anyone may pay a revealed escrow to
//! its seller, minus the fee to the treasury. It never touches the buyer's
//! account (the buyer closes the escrow for its rent with `refund`).
//!
//! Nothing of a listing convicted of fraud is claimed: every reveal of it
//! opened the same lying blob, and its buyers take their deposits back
//! (`refund_sealed`).
//!
//! A fee the treasury cannot take (it would stay under rent exemption, or
//! the account became executable) goes to the seller: a claim never fails
//! for the treasury's state.

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{add, fee_of, now, sub};
use crate::sealed::events::{emit, PaymentClaimed};
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, Settings,
};
use anchor_lang::prelude::*;

/// Accounts of `claim`.
#[event_cpi]
#[derive(Accounts)]
pub struct Claim<'info> {
    /// Settings (fee, treasury, dispute window).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing.
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller,
        constraint = listing.in_lamports() @ EscrowError::ListingInToken
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
    /// CHECK: only receives lamports; must be the listing's seller.
    #[account(mut)]
    pub seller: UncheckedAccount<'info>,
    /// CHECK: only receives lamports; must be the settings' treasury.
    #[account(mut, address = settings.treasury @ EscrowError::WrongTreasury)]
    pub treasury: UncheckedAccount<'info>,
}

impl Claim<'_> {
    /// Pays out once the dispute window has passed.
    pub fn handler(ctx: Context<Claim>) -> Result<()> {
        let a = ctx.accounts;
        let amount = claimable(&a.settings, &a.listing, &a.escrow)?;
        let fee = fee_of(amount, a.settings.fee_bps);
        let treasury_after = a.treasury.lamports().saturating_add(fee);
        let fee = if fee > 0
            && (a.treasury.executable
                || !Rent::get()?.is_exempt(treasury_after, a.treasury.data_len()))
        {
            0
        } else {
            fee
        };
        let to_seller = sub(amount, fee)?;
        a.escrow.sub_lamports(amount)?;
        a.seller.add_lamports(to_seller)?;
        a.treasury.add_lamports(fee)?;
        claimed(
            &a.event_authority,
            &mut a.listing,
            &mut a.escrow,
            to_seller,
            fee,
        )
    }
}

/// What a claim of `escrow` pays out, if it may be claimed now: revealed,
/// its listing not convicted, the dispute window passed.
pub fn claimable(
    settings: &Settings,
    listing: &SealedListing,
    escrow: &SealedEscrow,
) -> Result<u64> {
    require!(
        escrow.status == SealedEscrowStatus::Revealed,
        EscrowError::WrongEscrowState
    );
    require!(
        listing.status != SealedListingStatus::Convicted,
        EscrowError::ListingConvicted
    );
    let opens = add(escrow.revealed_at, settings.dispute_window_secs)?;
    require!(now()? >= opens, EscrowError::DisputeWindowOpen);
    Ok(escrow.amount)
}

/// Marks `escrow` claimed (paid `to_seller` and `fee`) and emits
/// [`PaymentClaimed`].
pub fn claimed(
    event_authority: &AccountInfo<'_>,
    listing: &mut Account<'_, SealedListing>,
    escrow: &mut Account<'_, SealedEscrow>,
    to_seller: u64,
    fee: u64,
) -> Result<()> {
    escrow.status = SealedEscrowStatus::Claimed;
    listing.close_escrow(escrow)?;
    emit(
        event_authority,
        &PaymentClaimed {
            escrow: escrow.key(),
            to_seller,
            fee,
        },
    )
}
