//! Instruction lists of marketplace transactions: every one carries the
//! discovery reference first and its memo last; payments and fees sit
//! between, so a buy is atomic with its payment.

use crate::chain::instructions::{discovery, memo, transfer, DEFAULT_CU_LIMIT};
use crate::chain::Pubkey;
use crate::market::MemoOp;

/// The instructions of a buy, signed by the buyer alone: pay the price to
/// the payment address (and the fee to the treasury where due), post
/// `buy:<listing>:<buyer x25519>`, reference the registry.
pub fn buy_instructions(
    buyer: &Pubkey,
    payment_address: &Pubkey,
    price_lamports: u64,
    listing_id: &str,
    buyer_x25519_b58: &str,
    registry: &Pubkey,
    fee: Option<(&Pubkey, u64)>,
) -> Vec<solana_sdk::instruction::Instruction> {
    let op = MemoOp::Buy {
        listing_id: listing_id.into(),
        buyer_x25519: buyer_x25519_b58.into(),
    };
    let mut ixs = vec![
        discovery(registry, DEFAULT_CU_LIMIT),
        transfer(buyer, payment_address, price_lamports),
    ];
    if let Some((treasury, lamports)) = fee.filter(|(_, l)| *l > 0) {
        ixs.push(transfer(buyer, treasury, lamports));
    }
    ixs.push(memo(&op.to_string(), buyer));
    ixs
}
