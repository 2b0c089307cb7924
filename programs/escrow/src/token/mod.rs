//! The sealed escrow in an SPL token (Token or Token-2022): the same
//! protocol as `crate::sealed` (same terms, reveal, windows, stake in
//! lamports, fee and slash rules), with the price held in a vault, the
//! escrow PDA's associated token account of the listing's mint, instead
//! of the escrow's lamports:
//!
//! - `list_sealed_token` opens a listing whose deposits are in `mint`;
//! - `deposit_sealed_token` creates the vault and moves the price into it
//!   (`TransferChecked`, signed by the buyer), refusing a deposit the
//!   vault does not receive in full (a transfer fee);
//! - `claim_token` pays the vault out to the seller's token account and
//!   the fee to the treasury's associated account (to the seller when the
//!   treasury has none that can take it: a claim never fails for the
//!   treasury's state), signed by the escrow PDA;
//! - `dispute_token` convicts without moving a token: the escrow becomes
//!   `Expired` with the stake share in it, the deposit left in the vault;
//! - `refund_sealed_token` returns everything the vault holds to the
//!   buyer's token account and closes it to the buyer.
//!
//! `reveal`, `decline` and `retire_sealed` serve both currencies; the
//! lamport instructions refuse a token listing and these a lamport one.
//! A mint whose freeze authority freezes a vault delays its payments (that
//! is the mint's power over every account of it, stated to sellers and
//! buyers) but decides nothing: a conviction is recorded without a token
//! moving, and a frozen treasury account fails the claim.

pub mod deposit;
pub mod exit;
pub mod open;
pub mod payout;
pub mod token_dispute;
pub mod vault;

pub use deposit::*;
pub use exit::*;
pub use open::*;
pub use payout::*;
pub use token_dispute::*;

use crate::constants::SEALED_ESCROW_SEED;
use crate::sealed::state::SealedEscrow;
use anchor_lang::prelude::*;

/// Runs `f` with the signer seeds of the escrow PDA `escrow` (the vault's
/// authority).
pub fn as_escrow<T>(
    escrow: &Account<'_, SealedEscrow>,
    f: impl FnOnce(&[&[&[u8]]]) -> Result<T>,
) -> Result<T> {
    let bump = [escrow.bump];
    let seeds: &[&[u8]] = &[
        SEALED_ESCROW_SEED,
        escrow.listing.as_ref(),
        escrow.buyer.as_ref(),
        &bump,
    ];
    f(&[seeds])
}
