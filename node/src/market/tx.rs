//! Instruction lists of marketplace transactions: every one carries the
//! discovery reference first and its memo last; payments and fees sit
//! between, so a buy is atomic with its payment.

use crate::chain::instructions::{discovery, memo, registry_from_env, transfer, DEFAULT_CU_LIMIT};
use crate::chain::{Chain, ChainError, FeeOp, FeePolicy, Pubkey, Sent, Signer};
use crate::market::MemoOp;
use crate::wallet::Wallet;

/// What one [`post_memo`] costs its signer: the network fee and the op
/// fee where due (the spend policy reserves it before the action is sent).
pub async fn op_cost(chain: &Chain) -> Result<u64, ChainError> {
    let fees = FeePolicy::from_env(chain.cluster_kind().await?)?;
    let op_fee = if fees.enabled { fees.op_fee } else { 0 };
    Ok(crate::chain::fees::LAMPORTS_PER_SIGNATURE.saturating_add(op_fee))
}

/// Posts a marketplace memo signed by `signer`: the discovery reference
/// (with `pay_to` appended read-only when it is not the signer, so that
/// address's history shows the action), the op fee where due, the memo.
pub async fn post_memo(
    chain: &Chain,
    signer: &Wallet,
    op: &MemoOp,
    pay_to: &Pubkey,
) -> Result<Sent, ChainError> {
    post_memo_with(chain, signer, op, pay_to, vec![]).await
}

/// [`post_memo`] with `extra` instructions before the memo, in the same
/// transaction (e.g. the escrow program's `create_listing` with `list`).
pub async fn post_memo_with(
    chain: &Chain,
    signer: &Wallet,
    op: &MemoOp,
    pay_to: &Pubkey,
    extra: Vec<solana_sdk::instruction::Instruction>,
) -> Result<Sent, ChainError> {
    let kp = signer.solana_keypair();
    let mut reference = discovery(&registry_from_env()?, DEFAULT_CU_LIMIT);
    if *pay_to != kp.pubkey() {
        reference
            .accounts
            .push(solana_sdk::instruction::AccountMeta::new_readonly(
                *pay_to, false,
            ));
    }
    let mut ixs = vec![reference];
    ixs.extend(
        FeePolicy::from_env(chain.cluster_kind().await?)?.fee_instruction(FeeOp::Op, &kp.pubkey()),
    );
    ixs.extend(extra);
    ixs.push(memo(&op.to_string(), &kp.pubkey()));
    chain.send(&ixs, &[&kp]).await
}

/// The instructions of a buy, signed by the buyer alone: pay the price
/// (what the buyer pays in all) to the payment address, less the fee paid
/// to the treasury where one is due (the reference's split), post
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
    let mut ixs = vec![
        discovery(registry, DEFAULT_CU_LIMIT),
        transfer(
            buyer,
            payment_address,
            price_lamports.saturating_sub(fee.map_or(0, |(_, l)| l)),
        ),
    ];
    if let Some((treasury, lamports)) = fee.filter(|(_, l)| *l > 0) {
        ixs.push(transfer(buyer, treasury, lamports));
    }
    ixs.push(buy_memo(buyer, listing_id, buyer_x25519_b58));
    ixs
}

/// The buyer's `buy:<listing>:<buyer x25519>` memo.
fn buy_memo(
    buyer: &Pubkey,
    listing_id: &str,
    buyer_x25519_b58: &str,
) -> solana_sdk::instruction::Instruction {
    let op = MemoOp::Buy {
        listing_id: listing_id.into(),
        buyer_x25519: buyer_x25519_b58.into(),
    };
    memo(&op.to_string(), buyer)
}

/// The instructions of a buy of a listing paid in a token, signed by the
/// buyer alone: as [`buy_instructions`], but the price (less the fee, to
/// the treasury) moves by checked transfers from the buyer's associated
/// token account into the payee's (created first, at the buyer's cost,
/// where missing: a no-op when it exists).
#[allow(clippy::too_many_arguments)]
pub fn token_buy_instructions(
    buyer: &Pubkey,
    payment_address: &Pubkey,
    mint: &crate::chain::token::TokenMint,
    price: u64,
    listing_id: &str,
    buyer_x25519_b58: &str,
    registry: &Pubkey,
    fee: Option<(&Pubkey, u64)>,
) -> Vec<solana_sdk::instruction::Instruction> {
    use crate::chain::token::{create_associated_account, transfer_to};
    let mut ixs = vec![
        discovery(registry, DEFAULT_CU_LIMIT),
        create_associated_account(buyer, payment_address, mint),
        transfer_to(
            buyer,
            payment_address,
            mint,
            price.saturating_sub(fee.map_or(0, |(_, f)| f)),
        ),
    ];
    if let Some((treasury, units)) = fee.filter(|(_, f)| *f > 0) {
        ixs.push(create_associated_account(buyer, treasury, mint));
        ixs.push(transfer_to(buyer, treasury, mint, units));
    }
    ixs.push(buy_memo(buyer, listing_id, buyer_x25519_b58));
    ixs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buy_is_discovery_payment_fee_memo() {
        let (buyer, seller, treasury, reg) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let x = "6tZPpkyrbRbL9PKX5WMK9dHbeCfAftmtGswHdPgULGaR";
        let with_fee = buy_instructions(
            &buyer,
            &seller,
            1_000,
            "20261123-0123456789ab",
            x,
            &reg,
            Some((&treasury, 25)),
        );
        assert_eq!(with_fee.len(), 4);
        assert_eq!(with_fee[1].accounts[1].pubkey, seller);
        // the fee is the treasury's share of the price: the seller gets the rest
        assert_eq!(&with_fee[1].data[4..12], &975u64.to_le_bytes());
        assert_eq!(with_fee[2].accounts[1].pubkey, treasury);
        assert_eq!(&with_fee[2].data[4..12], &25u64.to_le_bytes());
        assert_eq!(
            with_fee[3].data,
            format!("brainctl-marketplace/v1:buy:20261123-0123456789ab:{x}").into_bytes()
        );
        assert!(with_fee[3].accounts[0].is_signer && with_fee[3].accounts[0].pubkey == buyer);
        let no_fee = buy_instructions(
            &buyer,
            &seller,
            1_000,
            "20261123-0123456789ab",
            x,
            &reg,
            Some((&treasury, 0)),
        );
        assert_eq!(no_fee.len(), 3, "a zero fee adds no transfer");
    }
}
