//! `release`: the seller names the envelope and commits to the bundle
//! hash; the escrow pays the seller, minus the fee to the treasury.
//!
//! A fee the treasury cannot hold (it would stay under rent exemption: an
//! emptied or never-funded treasury and a fee under the minimum balance)
//! goes to the seller instead: a release never fails for the treasury's
//! state, since a failed release lets the buyer refund and slash an honest
//! seller.

use super::{fee_of, sub};
use crate::constants::{CONFIG_SEED, ESCROW_SEED, LISTING_SEED, MAX_ENVELOPE_ID_LEN};
use crate::error::EscrowError;
use crate::events::Released;
use crate::state::{Config, Escrow, EscrowStatus, Listing};
use anchor_lang::prelude::*;

/// Accounts of `release`.
#[derive(Accounts)]
pub struct Release<'info> {
    /// Program settings (fee, treasury).
    #[account(seeds = [CONFIG_SEED], bump = config.bump)]
    pub config: Account<'info, Config>,
    /// The listing, whose seller must sign.
    #[account(
        mut,
        seeds = [LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        has_one = seller @ EscrowError::NotSeller
    )]
    pub listing: Account<'info, Listing>,
    /// The escrow released.
    #[account(
        mut,
        seeds = [ESCROW_SEED, listing.key().as_ref(), escrow.buyer.as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing
    )]
    pub escrow: Account<'info, Escrow>,
    /// The seller, paid.
    #[account(mut)]
    pub seller: Signer<'info>,
    /// CHECK: only receives lamports; must be the config's treasury.
    #[account(mut, address = config.treasury @ EscrowError::WrongTreasury)]
    pub treasury: UncheckedAccount<'info>,
}

impl Release<'_> {
    /// Pays out once and records the envelope.
    pub fn handler(
        ctx: Context<Release>,
        envelope_id: String,
        bundle_hash: [u8; 32],
    ) -> Result<()> {
        let a = ctx.accounts;
        require!(
            a.escrow.status == EscrowStatus::Deposited,
            EscrowError::AlreadySettled
        );
        require!(
            bundle_hash == a.listing.bundle_hash,
            EscrowError::BundleHashMismatch
        );
        require!(
            !envelope_id.is_empty() && envelope_id.len() <= MAX_ENVELOPE_ID_LEN,
            EscrowError::BadEnvelopeId
        );
        let amount = a.escrow.amount;
        let fee = fee_of(amount, a.config.fee_bps);
        let treasury_after = a.treasury.lamports().saturating_add(fee);
        let fee = if fee > 0 && !Rent::get()?.is_exempt(treasury_after, a.treasury.data_len()) {
            0
        } else {
            fee
        };
        let to_seller = sub(amount, fee)?;
        a.escrow.sub_lamports(amount)?;
        a.seller.add_lamports(to_seller)?;
        a.treasury.add_lamports(fee)?;
        a.escrow.status = EscrowStatus::Released;
        a.escrow.envelope_id = envelope_id.clone();
        a.listing.open_escrows = sub(a.listing.open_escrows, 1)?;
        emit!(Released {
            escrow: a.escrow.key(),
            envelope_id,
            to_seller,
            fee,
        });
        Ok(())
    }
}
