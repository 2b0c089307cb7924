//! The facilitator's check of an x402 `exact` payment on Solana: the
//! client's partially signed transaction must be exactly a payment of the
//! listing's price, in its mint, into the seller's associated token
//! account, authorized and signed by its payer, with the buy memo, and
//! nothing the seller's node (its fee payer) could be made to pay for
//! beyond the fee. The specification's rules (x402 `exact` on SVM,
//! "Facilitator Verification Rules"), stricter where it allows: the fee
//! payer must be account 0 and in no instruction, no lookup tables,
//! capped compute (at most 40 lamports of priority fee), after the
//! transfer only the optional instructions the specification allows
//! (wallets' Lighthouse assertions, at most two, in places 4 and 5; one
//! memo), the mint's decimals, the exact amount, the payer's signature
//! checked here.
//!
//! Pure: decodes and checks; co-signing is [`cosign`]. Never sends.

use crate::chain::token::{associated_account, TokenMint};
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signer::Signer;
use solana_sdk::transaction::VersionedTransaction;

/// The compute-budget program.
const COMPUTE_BUDGET: Pubkey = solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111");
/// Lighthouse, whose assertions wallets (Phantom: one, Solflare: two)
/// add after the transfer to protect their user; the specification
/// requires a facilitator to allow them.
pub const LIGHTHOUSE: Pubkey = solana_sdk::pubkey!("L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95");
/// SPL Memo v3.
const MEMO: Pubkey = solana_sdk::pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
/// The highest compute-unit price the fee payer pays (micro-lamports;
/// the SDK's client asks 1).
pub const MAX_COMPUTE_UNIT_PRICE: u64 = 1_000;
/// The highest compute-unit limit (the SDK's client asks 20,000): with
/// the price cap, at most 40 lamports of priority fee a payment.
pub const MAX_COMPUTE_UNIT_LIMIT: u32 = 40_000;

/// What the payment must be.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The seller's node: pays the fee, co-signs, moves nothing.
    pub fee_payer: Pubkey,
    /// The buyer the request named: signs and authorizes the transfer.
    pub payer: Pubkey,
    /// The listing's mint.
    pub mint: TokenMint,
    /// The wallet paid (its associated token account receives).
    pub pay_to: Pubkey,
    /// The price in base units.
    pub amount: u64,
    /// What the one memo must say.
    pub memo: MemoRule<'a>,
}

/// What the payment's one memo must say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoRule<'a> {
    /// Exactly this (a listing's buy memo).
    Exactly(&'a str),
    /// The client's nonce (the Python SDK writes 32 hex characters), which
    /// keeps two payments of the same price apart: 1 to
    /// [`MAX_NONCE_BYTES`] ASCII letters and digits, and nothing else. The
    /// node co-signs the payment with the wallet that signs its marketplace
    /// actions, so a free-form memo could make it sign an `accept`, a
    /// `cancel` or a buy memo in its own name.
    Nonce,
}

/// The longest nonce memo taken.
pub const MAX_NONCE_BYTES: usize = 64;

/// Why a payment is refused; [`Refusal::reason`] is x402's
/// `invalidReason` where the protocol names one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The transaction does not decode.
    #[error("the payment's transaction is not base64 of a bincode versioned transaction")]
    Undecodable,
    /// Not two signatures (fee payer, payer).
    #[error(
        "the transaction has {0} required signatures; an exact payment has 2 (fee payer, payer)"
    )]
    Signatures(usize),
    /// Account 0 is not the node's fee payer.
    #[error("the transaction's fee payer is {0}, not this node's")]
    FeePayer(Pubkey),
    /// Account 1 is not the payer the request named.
    #[error("the transaction is signed by {0}, not by the payer the request named")]
    Payer(Pubkey),
    /// The message loads accounts from lookup tables.
    #[error("the transaction loads accounts from lookup tables")]
    LookupTables,
    /// Not 3 to 6 instructions.
    #[error("the transaction has {0} instructions; an exact payment has 3 to 6")]
    InstructionCount(usize),
    /// The first instruction is not a compute-unit limit (or too high).
    #[error(
        "the first instruction must set a compute-unit limit of at most {MAX_COMPUTE_UNIT_LIMIT}"
    )]
    ComputeLimit,
    /// The second is not a compute-unit price (or too high).
    #[error("the second instruction must set a compute-unit price of at most {MAX_COMPUTE_UNIT_PRICE} micro-lamports")]
    ComputePrice,
    /// The third is not a `TransferChecked` of a token program.
    #[error(
        "the third instruction must be a TransferChecked of the SPL Token or Token-2022 program"
    )]
    NoTransfer,
    /// An instruction after the transfer is neither a memo nor, in places
    /// 4 and 5, a Lighthouse assertion. (An assertion can pass the
    /// simulation and fail on chain at the fee payer's cost: the payer's
    /// failure budget, `super::guard`, bounds that.)
    #[error("instruction {} is not one the specification allows after the transfer (a memo; a Lighthouse assertion in places 4 and 5)", .0 + 1)]
    UnknownInstruction(usize),
    /// Not exactly one memo, or not the memo asked for.
    #[error("the transaction must carry exactly one memo (the buy memo where one is asked for)")]
    Memo,
    /// The fee payer is an account of an instruction (it could be made to pay).
    #[error("the fee payer appears in an instruction: it pays the fee and nothing else")]
    FeePayerInInstruction,
    /// The transfer's authority is not the payer.
    #[error("the transfer is authorized by {0}, not by the payer")]
    Authority(Pubkey),
    /// Another mint.
    #[error("the transfer moves mint {0}, not the listing's")]
    Mint(Pubkey),
    /// Another program than the mint's.
    #[error("the transfer runs {0}, not the mint's token program")]
    TokenProgram(Pubkey),
    /// Not into the seller's associated account.
    #[error("the transfer pays {0}, not the seller's associated token account")]
    Recipient(Pubkey),
    /// Not the mint's decimals.
    #[error("the transfer states {0} decimals, not the mint's")]
    Decimals(u8),
    /// Not the price.
    #[error("the transfer moves {got} base units; the price is {want}")]
    Amount {
        /// Moved.
        got: u64,
        /// The price.
        want: u64,
    },
    /// The payer's signature does not verify.
    #[error("the payer's signature does not verify")]
    PayerSignature,
}

impl Refusal {
    /// x402's `invalidReason` for it.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Undecodable => "invalid_exact_svm_payload_transaction_could_not_be_decoded",
            Refusal::Signatures(_) | Refusal::PayerSignature | Refusal::Payer(_) => {
                "invalid_exact_svm_payload_transaction_signature"
            }
            Refusal::FeePayer(_) => "fee_payer_not_managed_by_facilitator",
            Refusal::LookupTables => "invalid_exact_svm_payload_transaction_lookup_tables",
            Refusal::InstructionCount(_) => {
                "invalid_exact_svm_payload_transaction_instructions_length"
            }
            Refusal::ComputeLimit => {
                "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction"
            }
            Refusal::ComputePrice => {
                "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction"
            }
            Refusal::NoTransfer | Refusal::TokenProgram(_) | Refusal::Decimals(_) => {
                "invalid_exact_svm_payload_no_transfer_instruction"
            }
            Refusal::UnknownInstruction(3) => {
                "invalid_exact_svm_payload_unknown_fourth_instruction"
            }
            Refusal::UnknownInstruction(4) => "invalid_exact_svm_payload_unknown_fifth_instruction",
            Refusal::UnknownInstruction(_) => "invalid_exact_svm_payload_unknown_sixth_instruction",
            Refusal::Memo => "invalid_exact_svm_payload_memo_mismatch",
            Refusal::FeePayerInInstruction | Refusal::Authority(_) => {
                "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
            }
            Refusal::Mint(_) => "invalid_exact_svm_payload_mint_mismatch",
            Refusal::Recipient(_) => "invalid_exact_svm_payload_recipient_mismatch",
            Refusal::Amount { .. } => "invalid_exact_svm_payload_amount_insufficient",
        }
    }
}

/// The payment's transaction from its base64.
pub fn decode(transaction_b64: &str) -> Result<VersionedTransaction, Refusal> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(transaction_b64.trim())
        .map_err(|_| Refusal::Undecodable)?;
    if bytes.len() > 1_232 {
        return Err(Refusal::Undecodable);
    }
    bincode::deserialize(&bytes).map_err(|_| Refusal::Undecodable)
}

/// Checks `tx` against `e` (see the module doc).
pub fn check(tx: &VersionedTransaction, e: &Expected<'_>) -> Result<(), Refusal> {
    let m = &tx.message;
    let keys = m.static_account_keys();
    let required = usize::from(m.header().num_required_signatures);
    if required != 2 || tx.signatures.len() != 2 || keys.len() < 2 {
        return Err(Refusal::Signatures(required));
    }
    if keys[0] != e.fee_payer {
        return Err(Refusal::FeePayer(keys[0]));
    }
    if keys[1] != e.payer {
        return Err(Refusal::Payer(keys[1]));
    }
    if m.address_table_lookups().is_some_and(|l| !l.is_empty()) {
        return Err(Refusal::LookupTables);
    }
    let ixs = m.instructions();
    if !(3..=6).contains(&ixs.len()) {
        return Err(Refusal::InstructionCount(ixs.len()));
    }
    let key = |i: u8| keys.get(usize::from(i)).copied();
    // every account any instruction names resolves, and none is the fee payer
    for ix in ixs {
        for &a in &ix.accounts {
            match key(a) {
                None => return Err(Refusal::Undecodable),
                Some(k) if k == e.fee_payer => return Err(Refusal::FeePayerInInstruction),
                Some(_) => {}
            }
        }
    }
    let program = |i: usize| key(ixs[i].program_id_index).ok_or(Refusal::Undecodable);
    let limit = (program(0)? == COMPUTE_BUDGET)
        .then_some(&ixs[0].data)
        .filter(|d| d.len() == 5 && d[0] == 2)
        .map(|d| u32::from_le_bytes(d[1..5].try_into().expect("4 bytes")));
    if limit.is_none_or(|l| l > MAX_COMPUTE_UNIT_LIMIT) {
        return Err(Refusal::ComputeLimit);
    }
    let price = (program(1)? == COMPUTE_BUDGET)
        .then_some(&ixs[1].data)
        .filter(|d| d.len() == 9 && d[0] == 3)
        .map(|d| u64::from_le_bytes(d[1..9].try_into().expect("8 bytes")));
    if price.is_none_or(|p| p > MAX_COMPUTE_UNIT_PRICE) {
        return Err(Refusal::ComputePrice);
    }
    check_transfer(program(2)?, &ixs[2], &key, e)?;
    let mut memos = 0;
    for (i, ix) in ixs.iter().enumerate().skip(3) {
        match program(i)? {
            // the wallet's own assertions, before the memo's last place
            p if p == LIGHTHOUSE && i <= 4 => {}
            p if p == MEMO => {
                memos += 1;
                let said = match e.memo {
                    MemoRule::Exactly(memo) => ix.data == memo.as_bytes(),
                    MemoRule::Nonce => {
                        (1..=MAX_NONCE_BYTES).contains(&ix.data.len())
                            && ix.data.iter().all(u8::is_ascii_alphanumeric)
                    }
                };
                if !ix.accounts.is_empty() || !said {
                    return Err(Refusal::Memo);
                }
            }
            _ => return Err(Refusal::UnknownInstruction(i)),
        }
    }
    if memos != 1 {
        return Err(Refusal::Memo);
    }
    if !tx.signatures[1].verify(e.payer.as_ref(), &m.serialize()) {
        return Err(Refusal::PayerSignature);
    }
    Ok(())
}

/// The payer a payment names: its second signer (the transfer's
/// authority, once [`check`] passed).
pub fn payer_of(tx: &VersionedTransaction) -> Option<Pubkey> {
    tx.message.static_account_keys().get(1).copied()
}

/// The token account a checked payment spends (its transfer's source).
pub fn source_of(tx: &VersionedTransaction) -> Option<Pubkey> {
    let m = &tx.message;
    let ix = m.instructions().get(2)?;
    m.static_account_keys()
        .get(usize::from(*ix.accounts.first()?))
        .copied()
}

/// The third instruction: `TransferChecked` of exactly the price, in the
/// mint, from any account to the seller's associated one, by the payer.
fn check_transfer(
    program: Pubkey,
    ix: &solana_sdk::message::compiled_instruction::CompiledInstruction,
    key: &impl Fn(u8) -> Option<Pubkey>,
    e: &Expected<'_>,
) -> Result<(), Refusal> {
    let legacy = crate::chain::token::TOKEN_PROGRAM_ID;
    if program != legacy && program != spl_token_2022_interface::ID {
        return Err(Refusal::NoTransfer);
    }
    let d = &ix.data;
    if d.len() != 10 || d[0] != 12 || ix.accounts.len() != 4 {
        return Err(Refusal::NoTransfer);
    }
    if program != e.mint.program {
        return Err(Refusal::TokenProgram(program));
    }
    let account = |i: usize| key(ix.accounts[i]).ok_or(Refusal::Undecodable);
    let (mint, destination, authority) = (account(1)?, account(2)?, account(3)?);
    if authority != e.payer {
        return Err(Refusal::Authority(authority));
    }
    if mint != e.mint.address {
        return Err(Refusal::Mint(mint));
    }
    if destination != associated_account(&e.pay_to, &e.mint) {
        return Err(Refusal::Recipient(destination));
    }
    if d[9] != e.mint.decimals {
        return Err(Refusal::Decimals(d[9]));
    }
    let amount = u64::from_le_bytes(d[1..9].try_into().expect("8 bytes"));
    if amount != e.amount {
        return Err(Refusal::Amount {
            got: amount,
            want: e.amount,
        });
    }
    Ok(())
}

/// Signs `tx` as its fee payer (signature 0), over the message as sent.
pub fn cosign(tx: &mut VersionedTransaction, fee_payer: &solana_sdk::signature::Keypair) {
    tx.signatures[0] = fee_payer.sign_message(&tx.message.serialize());
}

#[cfg(test)]
mod tests {
    use super::*;
    use solana_sdk::hash::Hash;
    use solana_sdk::instruction::{AccountMeta, Instruction};
    use solana_sdk::message::{v0, VersionedMessage};
    use solana_sdk::signature::{Keypair, Signature};

    struct Case {
        fee_payer: Keypair,
        buyer: Keypair,
        mint: TokenMint,
        pay_to: Pubkey,
    }

    const BUY_MEMO: &str = "brainctl-marketplace/v1:buy:20261126-0123456789ab:X";

    impl Case {
        fn new() -> Case {
            Case {
                fee_payer: Keypair::new(),
                buyer: Keypair::new(),
                mint: crate::chain::test_dollar::mint(),
                pay_to: Pubkey::new_unique(),
            }
        }

        fn expected(&self) -> Expected<'static> {
            Expected {
                fee_payer: self.fee_payer.pubkey(),
                payer: self.buyer.pubkey(),
                mint: self.mint,
                pay_to: self.pay_to,
                amount: 2_000_000,
                memo: MemoRule::Exactly(BUY_MEMO),
            }
        }

        /// The instructions the Python SDK's client builds.
        fn honest(&self) -> Vec<Instruction> {
            let e = self.expected();
            let mut transfer = crate::chain::token::transfer_to(
                &self.buyer.pubkey(),
                &self.pay_to,
                &self.mint,
                e.amount,
            );
            transfer.accounts[0] =
                AccountMeta::new(associated_account(&self.buyer.pubkey(), &self.mint), false);
            vec![
                Instruction::new_with_bytes(COMPUTE_BUDGET, &[2, 0x20, 0x4e, 0, 0], vec![]),
                Instruction::new_with_bytes(COMPUTE_BUDGET, &[3, 1, 0, 0, 0, 0, 0, 0, 0], vec![]),
                transfer,
                Instruction::new_with_bytes(MEMO, BUY_MEMO.as_bytes(), vec![]),
            ]
        }

        /// `ixs` as the client sends them: v0, fee payer first, signed by
        /// the buyer alone.
        fn tx(&self, ixs: &[Instruction]) -> VersionedTransaction {
            let m =
                v0::Message::try_compile(&self.fee_payer.pubkey(), ixs, &[], Hash::new_unique())
                    .unwrap();
            let message = VersionedMessage::V0(m);
            let sig = self.buyer.sign_message(&message.serialize());
            VersionedTransaction {
                signatures: vec![Signature::default(), sig],
                message,
            }
        }
    }

    #[test]
    fn the_sdks_payment_passes_and_cosigns() {
        let c = Case::new();
        let mut tx = c.tx(&c.honest());
        // through the wire form
        let b64 = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(bincode::serialize(&tx).unwrap())
        };
        assert_eq!(decode(&b64).unwrap(), tx);
        assert_eq!(check(&tx, &c.expected()), Ok(()));
        cosign(&mut tx, &c.fee_payer);
        assert!(tx.verify_with_results().iter().all(|ok| *ok));
        assert_eq!(
            check(&tx, &c.expected()),
            Ok(()),
            "co-signed: still the payment"
        );
    }

    /// Wallets' own Lighthouse assertions after the transfer: Phantom's
    /// one, Solflare's two, before the memo or around it, as the
    /// specification places them; a third, one in the last place, or one
    /// naming the fee payer is refused.
    #[test]
    fn wallets_lighthouse_assertions_pass_within_the_specs_places() {
        let c = Case::new();
        let e = c.expected();
        // an assertion on the buyer's token account, as a wallet writes one
        let assertion = || {
            Instruction::new_with_bytes(
                LIGHTHOUSE,
                &[4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                vec![AccountMeta::new_readonly(
                    associated_account(&c.buyer.pubkey(), &c.mint),
                    false,
                )],
            )
        };
        let shaped = |tail: &[&str]| {
            let mut ixs = c.honest();
            let memo = ixs.pop().unwrap();
            for t in tail {
                ixs.push(if *t == "lh" {
                    assertion()
                } else {
                    memo.clone()
                });
            }
            check(&c.tx(&ixs), &e)
        };
        assert_eq!(shaped(&["lh", "memo"]), Ok(()), "Phantom");
        assert_eq!(shaped(&["lh", "lh", "memo"]), Ok(()), "Solflare");
        assert_eq!(shaped(&["memo", "lh"]), Ok(()), "memo first");
        assert_eq!(
            shaped(&["lh", "memo", "lh"]),
            Err(Refusal::UnknownInstruction(5))
        );
        assert_eq!(
            Refusal::UnknownInstruction(5).reason(),
            "invalid_exact_svm_payload_unknown_sixth_instruction"
        );
        assert_eq!(
            shaped(&["lh", "lh", "lh", "memo"]),
            Err(Refusal::InstructionCount(7))
        );
        assert_eq!(shaped(&["lh", "lh"]), Err(Refusal::Memo), "no memo");
        let mut ixs = c.honest();
        let mut naming_fee_payer = assertion();
        naming_fee_payer
            .accounts
            .push(AccountMeta::new_readonly(c.fee_payer.pubkey(), false));
        ixs.insert(3, naming_fee_payer);
        assert_eq!(check(&c.tx(&ixs), &e), Err(Refusal::FeePayerInInstruction));
        let tx = c.tx(&c.honest());
        assert_eq!(payer_of(&tx), Some(c.buyer.pubkey()));
        assert_eq!(
            source_of(&tx),
            Some(associated_account(&c.buyer.pubkey(), &c.mint))
        );
    }

    /// A paid tool call takes one memo that is a nonce: letters and
    /// digits, bounded; never a marketplace action the node would sign.
    #[test]
    fn a_nonce_memo_is_one_short_alphanumeric_memo() {
        let c = Case::new();
        let e = Expected {
            memo: MemoRule::Nonce,
            ..c.expected()
        };
        let with_memo = |memos: &[Vec<u8>]| {
            let mut ixs = c.honest();
            ixs.pop();
            for m in memos {
                ixs.push(Instruction::new_with_bytes(MEMO, m, vec![]));
            }
            check(&c.tx(&ixs), &e)
        };
        let nonce = b"0123456789abcdef0123456789abcdef".to_vec();
        assert_eq!(with_memo(std::slice::from_ref(&nonce)), Ok(()));
        assert_eq!(with_memo(&[vec![b'x'; MAX_NONCE_BYTES]]), Ok(()));
        for forged in [
            vec![b'x'; MAX_NONCE_BYTES + 1],
            b"brainctl-marketplace/v1:accept:offer-20261126-0123456789ab".to_vec(),
            b"brainctl-marketplace/v1:cancel:20261126-0123456789ab".to_vec(),
            b"x402:buy:20261126-0123456789ab".to_vec(),
            b"nonce with spaces".to_vec(),
            vec![],
        ] {
            assert_eq!(
                with_memo(std::slice::from_ref(&forged)),
                Err(Refusal::Memo),
                "{}",
                String::from_utf8_lossy(&forged)
            );
        }
        assert_eq!(with_memo(&[]), Err(Refusal::Memo));
        assert_eq!(with_memo(&[nonce.clone(), nonce]), Err(Refusal::Memo));
    }

    /// Every way a client could bend the payment is refused, with the
    /// protocol's reason.
    #[test]
    fn hostile_payments_are_refused() {
        let c = Case::new();
        let e = c.expected();
        let with = |edit: &dyn Fn(&mut Vec<Instruction>)| {
            let mut ixs = c.honest();
            edit(&mut ixs);
            check(&c.tx(&ixs), &e)
        };
        let amount = |a: u64| {
            move |ixs: &mut Vec<Instruction>| ixs[2].data[1..9].copy_from_slice(&a.to_le_bytes())
        };
        assert_eq!(
            with(&amount(1_999_999)),
            Err(Refusal::Amount {
                got: 1_999_999,
                want: 2_000_000
            })
        );
        assert!(
            matches!(with(&amount(2_000_001)), Err(Refusal::Amount { .. })),
            "exact"
        );
        let other_mint = Pubkey::new_unique();
        assert_eq!(
            with(&|ixs| ixs[2].accounts[1].pubkey = other_mint),
            Err(Refusal::Mint(other_mint))
        );
        let elsewhere = Pubkey::new_unique();
        assert_eq!(
            with(&|ixs| ixs[2].accounts[2].pubkey = elsewhere),
            Err(Refusal::Recipient(elsewhere))
        );
        assert_eq!(with(&|ixs| ixs[2].data[9] = 9), Err(Refusal::Decimals(9)));
        assert_eq!(
            with(&|ixs| ixs[2].data[0] = 3),
            Err(Refusal::NoTransfer),
            "unchecked transfer"
        );
        assert_eq!(
            with(&|ixs| ixs[2].program_id = spl_token_2022_interface::ID),
            Err(Refusal::TokenProgram(spl_token_2022_interface::ID))
        );
        assert_eq!(
            with(&|ixs| ixs[3].data = b"another memo".to_vec()),
            Err(Refusal::Memo)
        );
        assert_eq!(
            with(&|ixs| {
                ixs.pop();
            }),
            Err(Refusal::Memo),
            "no memo"
        );
        assert_eq!(
            with(&|ixs| ixs.push(ixs[3].clone())),
            Err(Refusal::Memo),
            "two memos"
        );
        assert_eq!(
            with(&|ixs| ixs.push(crate::chain::instructions::transfer(
                &c.buyer.pubkey(),
                &c.pay_to,
                1
            ))),
            Err(Refusal::UnknownInstruction(4))
        );
        assert_eq!(
            with(&|ixs| ixs[0].data = vec![2, 0x41, 0x9c, 0, 0]),
            Err(Refusal::ComputeLimit),
            "40,001 units"
        );
        assert_eq!(
            with(&|ixs| ixs[1].data[1..9].copy_from_slice(&1_001u64.to_le_bytes())),
            Err(Refusal::ComputePrice)
        );
        assert_eq!(with(&|ixs| ixs.swap(0, 1)), Err(Refusal::ComputeLimit));
        // the fee payer as the transfer's source owner and authority: it
        // would pay the seller out of its own account
        let fp = c.fee_payer.pubkey();
        let buyer = c.buyer.pubkey();
        assert_eq!(
            with(&|ixs| {
                ixs[2].accounts[3] = AccountMeta::new_readonly(fp, true);
                // the buyer still signs (the memo names it)
                ixs[3].accounts.push(AccountMeta::new_readonly(buyer, true));
            }),
            Err(Refusal::FeePayerInInstruction)
        );
        assert_eq!(
            with(&|ixs| ixs[3].accounts.push(AccountMeta::new_readonly(fp, false))),
            Err(Refusal::FeePayerInInstruction)
        );
        // another payer than the request named
        let stranger = Case {
            buyer: Keypair::new(),
            ..Case::new()
        };
        let theirs = stranger.tx(&stranger.honest());
        assert!(matches!(check(&theirs, &e), Err(Refusal::FeePayer(_))));
        // a forged payer signature
        let mut forged = c.tx(&c.honest());
        forged.signatures[1] = Signature::from([7u8; 64]);
        assert_eq!(check(&forged, &e), Err(Refusal::PayerSignature));
        // a single signer (the fee payer alone)
        let mut alone = c.tx(&c.honest());
        alone.signatures.pop();
        assert_eq!(check(&alone, &e), Err(Refusal::Signatures(2)));
        assert_eq!(decode("!!"), Err(Refusal::Undecodable));
        assert_eq!(decode(""), Err(Refusal::Undecodable));
        for r in [Refusal::Memo, Refusal::Undecodable, Refusal::LookupTables] {
            assert!(r.reason().starts_with("invalid_exact_svm_payload"));
        }
    }
}
