//! One event per transition of the sealed escrow, emitted by a self-CPI
//! (Anchor's `emit_cpi!` encoding): each is an inner instruction of the
//! transaction, to this program, signed by its event authority PDA, whose
//! data is the event tag, the event's discriminator and its Borsh body.
//! Inner instructions are recorded whole, so no log flood earlier in the
//! transaction can hide one (log lines are truncated at 10 KB); only this
//! program can sign as its event authority, so nobody else can forge one.
//! The node and the indexer read them from there, in successful
//! transactions only.

use anchor_lang::prelude::*;
use anchor_lang::solana_program::instruction::{AccountMeta, Instruction};
use anchor_lang::solana_program::program::invoke_signed;

/// Emits `event` as an inner instruction (what `emit_cpi!` does, callable
/// from the helpers every variant of an instruction shares):
/// `event_authority` is the instruction's `#[event_cpi]` account.
pub fn emit<E: anchor_lang::Event>(event_authority: &AccountInfo<'_>, event: &E) -> Result<()> {
    let mut data = anchor_lang::event::EVENT_IX_TAG_LE.to_vec();
    data.extend(event.data());
    let ix = Instruction::new_with_bytes(
        crate::ID,
        &data,
        vec![AccountMeta::new_readonly(*event_authority.key, true)],
    );
    invoke_signed(
        &ix,
        std::slice::from_ref(event_authority),
        &[&[b"__event_authority", &[crate::EVENT_AUTHORITY_AND_BUMP.1]]],
    )
    .map_err(Into::into)
}

/// A sealed listing was created and staked.
#[event]
pub struct SealedListed {
    /// Listing account.
    pub listing: Pubkey,
    /// Seller.
    pub seller: Pubkey,
    /// Price.
    pub price_lamports: u64,
    /// Stake.
    pub stake: u64,
}

/// A buyer deposited under the listing's terms.
#[event]
pub struct SealedDeposited {
    /// Listing account.
    pub listing: Pubkey,
    /// Escrow account.
    pub escrow: Pubkey,
    /// Buyer.
    pub buyer: Pubkey,
    /// Held: lamports, or base units of `mint`.
    pub amount: u64,
    /// The listing's token (the default key: SOL).
    pub mint: Pubkey,
    /// Unix seconds of the deposit (its windows run from here).
    pub deposited_at: i64,
}

/// The seller revealed s for an escrow.
#[event]
pub struct KeyRevealed {
    /// Escrow account.
    pub escrow: Pubkey,
    /// s = k + b.
    pub revealed: [u8; 32],
}

/// The seller declined a deposit; the buyer takes it all back.
#[event]
pub struct DepositDeclined {
    /// Escrow account.
    pub escrow: Pubkey,
}

/// The seller was paid after the dispute window.
#[event]
pub struct PaymentClaimed {
    /// Escrow account.
    pub escrow: Pubkey,
    /// Paid to the seller.
    pub to_seller: u64,
    /// Paid to the treasury.
    pub fee: u64,
}

/// The buyer took the deposit back (and a stake share, when owed).
#[event]
pub struct SealedRefunded {
    /// Escrow account.
    pub escrow: Pubkey,
    /// Deposit returned.
    pub amount: u64,
    /// Stake paid to the buyer.
    pub slashed: u64,
}

/// A fraud proof held: deposit returned and stake slashed.
#[event]
pub struct FraudProven {
    /// Escrow account.
    pub escrow: Pubkey,
    /// The chunk that lied.
    pub index: u32,
    /// Deposit returned.
    pub amount: u64,
    /// Stake paid to the buyer.
    pub slashed: u64,
}

/// Anyone expired a deposit left past its window (or a reveal on a
/// convicted listing): the slash share moved into the escrow.
#[event]
pub struct EscrowExpired {
    /// Escrow account.
    pub escrow: Pubkey,
    /// Stake moved into the escrow for the buyer.
    pub slashed: u64,
}

/// The seller retired a listing; stake returned.
#[event]
pub struct SealedRetired {
    /// Listing account.
    pub listing: Pubkey,
    /// Stake returned.
    pub stake_returned: u64,
}
