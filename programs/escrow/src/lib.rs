//! Escrow program prototype (Anchor) for brainctl settlements, so a buyer
//! need not trust the seller to release after paying:
//!
//! - a seller stakes to list (`create_listing`, a PDA per seller + listing id);
//! - a buyer deposits the price into an escrow PDA (`deposit`);
//! - the seller `release`s, naming the envelope and committing to the bundle
//!   hash: paid, minus the fee to the treasury;
//! - without a release inside the window the buyer takes a `refund`, and
//!   anyone may `slash` the listing's stake for it, once;
//! - `cancel_listing` returns stake and rent when nothing is held or owed.
//!
//! This file only dispatches; checks live in each instruction's accounts.
#![allow(unexpected_cfgs)]
#![allow(missing_docs)] // the #[program] macro generates undocumented items

use anchor_lang::prelude::*;
#[cfg(target_os = "solana")]
use solana_compiler_builtins as _;

pub mod constants;
pub mod error;
pub mod events;
pub mod instructions;
pub mod sealed;
pub mod state;

pub use instructions::*;
pub use sealed::*;

declare_id!("GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq");

/// The program's instructions.
#[program]
pub mod escrow {
    use super::*;

    /// Creates the Config (admin, once).
    pub fn initialize_config(
        ctx: Context<InitializeConfig>,
        treasury: Pubkey,
        fee_bps: u16,
        slash_bps: u16,
        release_window_secs: i64,
        min_stake: u64,
    ) -> Result<()> {
        InitializeConfig::handler(
            ctx,
            treasury,
            fee_bps,
            slash_bps,
            release_window_secs,
            min_stake,
        )
    }

    /// Seller: list and stake.
    pub fn create_listing(
        ctx: Context<CreateListing>,
        listing_id: String,
        bundle_hash: [u8; 32],
        price_lamports: u64,
        stake: u64,
        expires_at: i64,
    ) -> Result<()> {
        CreateListing::handler(
            ctx,
            listing_id,
            bundle_hash,
            price_lamports,
            stake,
            expires_at,
        )
    }

    /// Buyer: deposit the price.
    pub fn deposit(ctx: Context<Deposit>, buyer_x25519: [u8; 32]) -> Result<()> {
        Deposit::handler(ctx, buyer_x25519)
    }

    /// Seller: release (envelope id + bundle hash commitment).
    pub fn release(
        ctx: Context<Release>,
        envelope_id: String,
        bundle_hash: [u8; 32],
    ) -> Result<()> {
        Release::handler(ctx, envelope_id, bundle_hash)
    }

    /// Buyer: refund after the window.
    pub fn refund(ctx: Context<Refund>) -> Result<()> {
        Refund::handler(ctx)
    }

    /// Seller: cancel with nothing held or owed.
    pub fn cancel_listing(ctx: Context<CancelListing>) -> Result<()> {
        CancelListing::handler(ctx)
    }

    /// Anyone: slash the stake for a refunded escrow.
    pub fn slash(ctx: Context<Slash>) -> Result<()> {
        Slash::handler(ctx)
    }

    /// Creates the sealed escrow's Settings (upgrade authority, once).
    pub fn init_settings(ctx: Context<InitSettings>, args: SettingsArgs) -> Result<()> {
        InitSettings::handler(ctx, args)
    }

    /// Seller: a sealed listing, its commitments and its stake.
    pub fn list_sealed(
        ctx: Context<ListSealed>,
        listing_id: String,
        terms: SealedTerms,
        stake: u64,
    ) -> Result<()> {
        ListSealed::handler(ctx, listing_id, terms, stake)
    }

    /// Buyer: deposit under the terms checked, binding B.
    pub fn deposit_sealed(
        ctx: Context<DepositSealed>,
        terms: SealedTerms,
        blind_point: [u8; 32],
        buyer_x25519: [u8; 32],
    ) -> Result<()> {
        DepositSealed::handler(ctx, terms, blind_point, buyer_x25519)
    }

    /// Seller: reveal s with s·G = K + B.
    pub fn reveal(ctx: Context<Reveal>, revealed: [u8; 32]) -> Result<()> {
        Reveal::handler(ctx, revealed)
    }

    /// Seller: decline a deposit (returned in full by `refund_sealed`).
    pub fn decline(ctx: Context<Decline>) -> Result<()> {
        Decline::handler(ctx)
    }

    /// Anyone: pay the seller after the dispute window.
    pub fn claim(ctx: Context<Claim>) -> Result<()> {
        Claim::handler(ctx)
    }

    /// Buyer: close the escrow and take what it holds.
    pub fn refund_sealed(ctx: Context<RefundSealed>) -> Result<()> {
        RefundSealed::handler(ctx)
    }

    /// Buyer: prove a misdelivery.
    pub fn dispute(ctx: Context<Dispute>, proof: FraudProof) -> Result<()> {
        Dispute::handler(ctx, proof)
    }

    /// Seller: retire a listing with nothing open; stake returned.
    pub fn retire_sealed(ctx: Context<RetireSealed>) -> Result<()> {
        RetireSealed::handler(ctx)
    }
}
