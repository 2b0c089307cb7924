//! The sealed escrow (Anchor) for brainctl settlements: a buyer need not
//! trust the seller (protocol and security argument in
//! `docs/escrow-protocol.md`, math in `programs/escrow-math`):
//!
//! - a seller lists with commitments to its key, ciphertext and plaintext,
//!   and a stake (`list_sealed`);
//! - a buyer deposits under the terms it checked, binding a blinding point
//!   (`deposit_sealed`);
//! - the seller is paid only through `reveal`, whose scalar gives that
//!   buyer the key, then `claim` after the dispute window; or it declines;
//! - a buyer refunds (with a stake share when the reveal never came) or
//!   proves a misdelivery (`dispute`; against a v2 blob also a plaintext
//!   other than the promised bundle: `dispute_step`, `dispute_link`);
//! - anyone `expire`s a deposit left past its window (the buyer's share
//!   moves into the escrow), so a buyer that never refunds cannot keep a
//!   listing open;
//! - `retire_sealed` returns the stake when nothing is open.
//! - the same escrow in an SPL token (`token`): the `_token` variants of
//!   list, deposit, claim, refund and dispute hold the price in a vault;
//! - `quote_usd` (beside the escrow): a buy of a listing priced in USD at
//!   settle time converts at its slot's Pyth price, in its own logs.
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
pub mod token;
pub mod usd;

pub use sealed::*;
pub use token::*;
pub use usd::*;

declare_id!("GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq");

/// The program's instructions.
#[program]
pub mod escrow {
    use super::*;

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
        max_open: u32,
    ) -> Result<()> {
        ListSealed::handler(ctx, listing_id, terms, stake, max_open)
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
        Dispute::handler(ctx, &proof)
    }

    /// Buyer: prove a v2 blob's chunk is not its SHA-256 step (or does
    /// not start at the IV, or end at `bundle_hash`).
    pub fn dispute_step(ctx: Context<Dispute>, proof: StepFraud) -> Result<()> {
        Dispute::handler(ctx, &proof)
    }

    /// Buyer: prove a v2 blob's chunks' committed states do not join.
    pub fn dispute_link(ctx: Context<Dispute>, proof: LinkFraud) -> Result<()> {
        Dispute::handler(ctx, &proof)
    }

    /// Anyone: expire a deposit past its release window and grace (or a
    /// reveal on a convicted listing): its slash share moves into the
    /// escrow for the buyer, and it stops counting as open.
    pub fn expire(ctx: Context<Expire>) -> Result<()> {
        Expire::handler(ctx)
    }

    /// Seller: retire a listing with nothing open; stake returned.
    pub fn retire_sealed(ctx: Context<RetireSealed>) -> Result<()> {
        RetireSealed::handler(ctx)
    }

    /// Seller: a sealed listing whose deposits are in `mint`.
    pub fn list_sealed_token(
        ctx: Context<ListSealedToken>,
        listing_id: String,
        terms: SealedTerms,
        stake: u64,
        max_open: u32,
    ) -> Result<()> {
        ListSealedToken::handler(ctx, listing_id, terms, stake, max_open)
    }

    /// Buyer: deposit the price in the listing's token into the vault.
    pub fn deposit_sealed_token(
        ctx: Context<DepositSealedToken>,
        terms: SealedTerms,
        blind_point: [u8; 32],
        buyer_x25519: [u8; 32],
    ) -> Result<()> {
        DepositSealedToken::handler(ctx, terms, blind_point, buyer_x25519)
    }

    /// Anyone: pay the seller from the vault after the dispute window.
    pub fn claim_token(ctx: Context<ClaimToken>) -> Result<()> {
        ClaimToken::handler(ctx)
    }

    /// Buyer: empty and close the vault, close the escrow.
    pub fn refund_sealed_token(ctx: Context<ExitToken>) -> Result<()> {
        ExitToken::refund(ctx)
    }

    /// Buyer: prove a misdelivery; the escrow is convicted without a
    /// token moving (the deposit stays in the vault for
    /// `refund_sealed_token`).
    pub fn dispute_token(ctx: Context<DisputeToken>, proof: FraudProof) -> Result<()> {
        DisputeToken::handler(ctx, &proof)
    }

    /// Buyer: `dispute_step` for a listing in a token.
    pub fn dispute_step_token(ctx: Context<DisputeToken>, proof: StepFraud) -> Result<()> {
        DisputeToken::handler(ctx, &proof)
    }

    /// Buyer: `dispute_link` for a listing in a token.
    pub fn dispute_link_token(ctx: Context<DisputeToken>, proof: LinkFraud) -> Result<()> {
        DisputeToken::handler(ctx, &proof)
    }

    /// Buyer: the listing's USD in the currency paid, at this slot's
    /// price (a buy of a listing priced in USD at settle time runs it);
    /// returns the base units (also logged, with the price, as `UsdQuoted`).
    pub fn quote_usd(ctx: Context<QuoteUsd>, args: UsdQuoteArgs) -> Result<u64> {
        QuoteUsd::handler(ctx, args)
    }
}
