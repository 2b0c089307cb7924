//! One event per transition of the sealed escrow (Anchor event encoding in
//! `Program data:` log lines): the indexer folds them, counting only lines
//! emitted while this program itself runs, in successful transactions.

use anchor_lang::prelude::*;

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
    /// Lamports held.
    pub amount: u64,
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
