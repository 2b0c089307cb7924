//! The facilitator's check of an x402 `exact` payment on Solana: the
//! client's partially signed transaction must be exactly a payment of the
//! listing's price, in its mint, into the seller's associated token
//! account, authorized and signed by its payer, with the buy memo, and
//! nothing the seller's node (its fee payer) could be made to pay for
//! beyond the fee. The specification's rules (x402 `exact` on SVM), with
//! each instruction classified by its role, as the reference's layout
//! check does: the payment's own instructions in the protocol's order
//! (compute-unit limit, price, `TransferChecked`, one memo), and up to
//! [`MAX_GUARDS`] of a wallet's Lighthouse guards anywhere among them
//! (Phantom's three before the transfer and one after, Solflare's two).
//! Stricter where the specification allows: the fee payer must be account
//! 0 and named by no instruction except a Lighthouse *assertion* (a guard
//! on its lamports reads it; a memory write or close, which could charge
//! it, is refused), a guard names only the payment's own accounts, no
//! lookup tables, a priority fee of at most [`MAX_PRIORITY_LAMPORTS`], the
//! mint's decimals, the exact amount, the payer's signature checked here.
//!
//! Pure: decodes and checks; co-signing is [`cosign`]. Never sends.

use crate::chain::token::{associated_account, TokenMint};
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signer::Signer;
use solana_sdk::transaction::VersionedTransaction;

/// The compute-budget program.
const COMPUTE_BUDGET: Pubkey = solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111");
/// Lighthouse, whose assertions wallets (Phantom, Solflare) add around
/// the transfer to protect their user; the specification requires a
/// facilitator to allow them.
pub const LIGHTHOUSE: Pubkey = solana_sdk::pubkey!("L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95");
/// Lighthouse's assertion instructions (their first data byte: 2
/// `AssertAccountData` … 17 `AssertBubblegumTreeConfigAccount`): they
/// read accounts and fail the transaction, nothing else. 0
/// (`MemoryWrite`) and 1 (`MemoryClose`) take a payer and write.
const LIGHTHOUSE_ASSERTIONS: std::ops::RangeInclusive<u8> = 2..=17;
/// The most Lighthouse guards a payment may carry (current Phantom: four).
pub const MAX_GUARDS: usize = 4;
/// SPL Memo v3.
const MEMO: Pubkey = solana_sdk::pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
/// The highest compute-unit price the fee payer pays (micro-lamports;
/// the specification's default cap for a sponsor; the SDKs ask 1).
pub const MAX_COMPUTE_UNIT_PRICE: u64 = 50_000;
/// The highest compute-unit limit (the SDKs ask 20,000, Faremeter 50,000,
/// a wallet's guards need more).
pub const MAX_COMPUTE_UNIT_LIMIT: u32 = 400_000;
/// The most priority fee a payment may cost the fee payer (limit × price,
/// in lamports, rounded up): what bounds the fee, whatever the limit.
pub const MAX_PRIORITY_LAMPORTS: u64 = 5_000;

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
    /// Not 3 to 4 + [`MAX_GUARDS`] instructions.
    #[error("the transaction has {0} instructions; an exact payment has 3 to 8 (its 4 and at most {MAX_GUARDS} Lighthouse guards)")]
    InstructionCount(usize),
    /// No compute-unit limit first among the payment's instructions.
    #[error("the payment's first instruction must set a compute-unit limit")]
    ComputeLimit,
    /// A compute-unit limit over [`MAX_COMPUTE_UNIT_LIMIT`].
    #[error("the compute-unit limit {0} is over {MAX_COMPUTE_UNIT_LIMIT}")]
    ComputeLimitTooHigh(u32),
    /// No compute-unit price second among the payment's instructions.
    #[error("the payment's second instruction must set a compute-unit price")]
    ComputePrice,
    /// A compute-unit price over [`MAX_COMPUTE_UNIT_PRICE`], or a priority
    /// fee over [`MAX_PRIORITY_LAMPORTS`].
    #[error("a compute-unit price of {0} micro-lamports is over this node's cap ({MAX_COMPUTE_UNIT_PRICE}, and at most {MAX_PRIORITY_LAMPORTS} lamports of priority fee)")]
    ComputePriceTooHigh(u64),
    /// No `TransferChecked` of a token program third among the payment's
    /// instructions.
    #[error(
        "the payment's third instruction must be a TransferChecked of the SPL Token or Token-2022 program"
    )]
    NoTransfer,
    /// An instruction that is none of the payment's own (compute budget,
    /// transfer, memo) nor a Lighthouse assertion, or one out of the
    /// protocol's order. (An assertion can pass the simulation and fail on
    /// chain at the fee payer's cost: the payer's failure budget,
    /// `super::guard`, bounds that.)
    #[error("instruction {} is not one an exact payment has (compute limit, compute price, TransferChecked, memo, in that order, and Lighthouse assertions)", .0 + 1)]
    UnknownInstruction(usize),
    /// A Lighthouse instruction that writes or closes an account (it
    /// takes a payer), not an assertion.
    #[error("instruction {} is a Lighthouse write or close, not an assertion", .0 + 1)]
    GuardWrites(usize),
    /// More Lighthouse guards than [`MAX_GUARDS`].
    #[error("the transaction carries {0} Lighthouse guards; at most {MAX_GUARDS} are taken")]
    TooManyGuards(usize),
    /// A guard naming an account outside the payment's own (fee payer,
    /// payer, the transfer's accounts).
    #[error("instruction {} is a Lighthouse guard over an account outside the payment ({})", .0 + 1, .1)]
    GuardAccount(usize, Pubkey),
    /// No memo: the buy memo is what `listen` counts a payment by.
    #[error("the transaction carries no memo: this seller counts a payment by its memo (the requirements' extra.memo); clients that send none (PayAI's x402-solana) cannot pay here")]
    NoMemo,
    /// More than one memo, or not the memo asked for.
    #[error("the transaction must carry exactly one memo (the buy memo where one is asked for)")]
    Memo,
    /// The fee payer is an account of an instruction (it could be made to pay).
    #[error("the fee payer appears in an instruction other than a Lighthouse assertion: it pays the fee and nothing else")]
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
            Refusal::InstructionCount(_) | Refusal::TooManyGuards(_) => {
                "invalid_exact_svm_payload_transaction_instructions_length"
            }
            Refusal::ComputeLimit => {
                "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction"
            }
            Refusal::ComputeLimitTooHigh(_) => {
                "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high"
            }
            Refusal::ComputePrice => {
                "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction"
            }
            Refusal::ComputePriceTooHigh(_) => {
                "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"
            }
            Refusal::NoTransfer | Refusal::TokenProgram(_) | Refusal::Decimals(_) => {
                "invalid_exact_svm_payload_no_transfer_instruction"
            }
            Refusal::UnknownInstruction(3) => {
                "invalid_exact_svm_payload_unknown_fourth_instruction"
            }
            Refusal::UnknownInstruction(4) => "invalid_exact_svm_payload_unknown_fifth_instruction",
            Refusal::UnknownInstruction(5) => "invalid_exact_svm_payload_unknown_sixth_instruction",
            Refusal::UnknownInstruction(6) => {
                "invalid_exact_svm_payload_unknown_seventh_instruction"
            }
            Refusal::UnknownInstruction(_) | Refusal::GuardWrites(_) | Refusal::GuardAccount(..) => {
                "invalid_exact_svm_payload_unknown_optional_instruction"
            }
            Refusal::NoMemo => "invalid_exact_svm_payload_memo_count",
            Refusal::Memo => "invalid_exact_svm_payload_memo_mismatch",
            Refusal::FeePayerInInstruction | Refusal::Authority(_) => {
                "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
            }
            Refusal::Mint(_) => "invalid_exact_svm_payload_mint_mismatch",
            Refusal::Recipient(_) => "invalid_exact_svm_payload_recipient_mismatch",
            Refusal::Amount { .. } => "invalid_exact_svm_payload_amount_mismatch",
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

/// What one instruction of a payment is, by its program and data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `SetComputeUnitLimit`.
    Limit,
    /// `SetComputeUnitPrice`.
    Price,
    /// A token program's `TransferChecked`.
    Transfer,
    /// An SPL memo.
    Memo,
    /// A Lighthouse assertion (a wallet's guard).
    Guard,
    /// A Lighthouse instruction that writes or closes.
    GuardWriting,
}

/// The payment's own instructions, in the order they must come in (guards
/// anywhere among them).
const PROTOCOL_ORDER: [Role; 4] = [Role::Limit, Role::Price, Role::Transfer, Role::Memo];

/// The role of an instruction of `program` with `data` (`None`: none a
/// payment has).
fn role_of(program: &Pubkey, data: &[u8]) -> Option<Role> {
    let token = *program == crate::chain::token::TOKEN_PROGRAM_ID
        || *program == spl_token_2022_interface::ID;
    let first = data.first().copied();
    if *program == COMPUTE_BUDGET {
        return match first {
            Some(2) => Some(Role::Limit),
            Some(3) => Some(Role::Price),
            _ => None,
        };
    }
    if token {
        return (first == Some(12)).then_some(Role::Transfer);
    }
    if *program == MEMO {
        return Some(Role::Memo);
    }
    if *program == LIGHTHOUSE {
        return Some(match first {
            Some(v) if LIGHTHOUSE_ASSERTIONS.contains(&v) => Role::Guard,
            _ => Role::GuardWriting,
        });
    }
    None
}

/// Why a payment lacks the protocol's instruction number `have` (0: the
/// compute-unit limit …), found at instruction `at` (or at its end).
fn missing(have: usize, at: usize) -> Refusal {
    match have {
        0 => Refusal::ComputeLimit,
        1 => Refusal::ComputePrice,
        2 => Refusal::NoTransfer,
        _ => Refusal::UnknownInstruction(at),
    }
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
    if !(3..=PROTOCOL_ORDER.len() + MAX_GUARDS).contains(&ixs.len()) {
        return Err(Refusal::InstructionCount(ixs.len()));
    }
    let key = |i: u8| keys.get(usize::from(i)).copied();
    // each instruction's role; the payment's own in the protocol's order
    let mut own: Vec<usize> = Vec::with_capacity(PROTOCOL_ORDER.len());
    let mut guards = Vec::new();
    for (i, ix) in ixs.iter().enumerate() {
        let program = key(ix.program_id_index).ok_or(Refusal::Undecodable)?;
        if ix.accounts.iter().any(|&a| key(a).is_none()) {
            return Err(Refusal::Undecodable);
        }
        match role_of(&program, &ix.data) {
            Some(Role::Guard) => guards.push(i),
            Some(Role::GuardWriting) => return Err(Refusal::GuardWrites(i)),
            Some(Role::Memo) if own.len() == PROTOCOL_ORDER.len() => return Err(Refusal::Memo),
            Some(role) if PROTOCOL_ORDER.get(own.len()) == Some(&role) => own.push(i),
            // out of the protocol's order: what was due there is missing
            Some(_) => return Err(missing(own.len(), i)),
            None if program == crate::chain::token::TOKEN_PROGRAM_ID
                || program == spl_token_2022_interface::ID =>
            {
                return Err(Refusal::NoTransfer)
            }
            None => return Err(Refusal::UnknownInstruction(i)),
        }
    }
    match own.len() {
        3 => return Err(Refusal::NoMemo),
        n if n < PROTOCOL_ORDER.len() => return Err(missing(n, ixs.len())),
        _ => {}
    }
    if guards.len() > MAX_GUARDS {
        return Err(Refusal::TooManyGuards(guards.len()));
    }
    let [limit_at, price_at, transfer_at, memo_at] = [own[0], own[1], own[2], own[3]];
    // the fee payer only inside an assertion (which reads it)
    for (i, ix) in ixs.iter().enumerate() {
        if !guards.contains(&i) && ix.accounts.iter().any(|&a| key(a) == Some(e.fee_payer)) {
            return Err(Refusal::FeePayerInInstruction);
        }
    }
    let limit = Some(&ixs[limit_at].data)
        .filter(|d| d.len() == 5)
        .map(|d| u32::from_le_bytes(d[1..5].try_into().expect("4 bytes")))
        .ok_or(Refusal::ComputeLimit)?;
    if limit > MAX_COMPUTE_UNIT_LIMIT {
        return Err(Refusal::ComputeLimitTooHigh(limit));
    }
    let price = Some(&ixs[price_at].data)
        .filter(|d| d.len() == 9)
        .map(|d| u64::from_le_bytes(d[1..9].try_into().expect("8 bytes")))
        .ok_or(Refusal::ComputePrice)?;
    let priority = (u128::from(limit) * u128::from(price)).div_ceil(1_000_000);
    if price > MAX_COMPUTE_UNIT_PRICE || priority > u128::from(MAX_PRIORITY_LAMPORTS) {
        return Err(Refusal::ComputePriceTooHigh(price));
    }
    let transfer = &ixs[transfer_at];
    let program = key(transfer.program_id_index).ok_or(Refusal::Undecodable)?;
    check_transfer(program, transfer, &key, e)?;
    // a guard reads only the payment's own accounts
    let mut payment_accounts = vec![e.fee_payer, e.payer];
    payment_accounts.extend(transfer.accounts.iter().filter_map(|&a| key(a)));
    for &i in &guards {
        for &a in &ixs[i].accounts {
            let k = key(a).ok_or(Refusal::Undecodable)?;
            if !payment_accounts.contains(&k) {
                return Err(Refusal::GuardAccount(i, k));
            }
        }
    }
    let memo = &ixs[memo_at];
    let said = match e.memo {
        MemoRule::Exactly(text) => memo.data == text.as_bytes(),
        MemoRule::Nonce => {
            (1..=MAX_NONCE_BYTES).contains(&memo.data.len())
                && memo.data.iter().all(u8::is_ascii_alphanumeric)
        }
    };
    if !memo.accounts.is_empty() || !said {
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
    let keys = m.static_account_keys();
    let ix = m.instructions().iter().find(|ix| {
        keys.get(usize::from(ix.program_id_index))
            .is_some_and(|p| role_of(p, &ix.data) == Some(Role::Transfer))
    })?;
    keys.get(usize::from(*ix.accounts.first()?)).copied()
}

/// The transfer: `TransferChecked` of exactly the price, in the mint,
/// from any account to the seller's associated one, by the payer.
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

    /// A Lighthouse assertion (`AssertAccountInfo` on lamports, ≥ 0: the
    /// shape of a wallet's guard) over `target`.
    fn guard(target: Pubkey) -> Instruction {
        let mut data = vec![5, 0, 0];
        data.extend_from_slice(&0u64.to_le_bytes());
        data.push(4);
        Instruction::new_with_bytes(
            LIGHTHOUSE,
            &data,
            vec![AccountMeta::new_readonly(target, false)],
        )
    }

    /// Current wallets' layouts, with their guards where they put them
    /// (Phantom: three before the transfer, one after the memo, guarding
    /// the fee payer's lamports among others; Solflare: two after the
    /// transfer) pass; a fifth guard, a Lighthouse memory write (naming the
    /// fee payer or not), a guard over an account outside the payment, or
    /// a non-assertion naming the fee payer are refused.
    #[test]
    fn phantom_and_solflare_layouts_pass_and_guards_only_read() {
        let c = Case::new();
        let e = c.expected();
        let [limit, price, transfer, memo]: [Instruction; 4] = c.honest().try_into().unwrap();
        let source = associated_account(&c.buyer.pubkey(), &c.mint);
        let fee_payer = c.fee_payer.pubkey();
        // Phantom (its compute budget raised for the guards)
        let phantom_limit =
            Instruction::new_with_bytes(COMPUTE_BUDGET, &[2, 0x40, 0x0d, 0x03, 0], vec![]);
        let phantom = vec![
            phantom_limit.clone(),
            price.clone(),
            guard(fee_payer),
            guard(source),
            guard(c.buyer.pubkey()),
            transfer.clone(),
            memo.clone(),
            guard(fee_payer),
        ];
        assert_eq!(check(&c.tx(&phantom), &e), Ok(()), "Phantom");
        let solflare = vec![
            limit.clone(),
            price.clone(),
            transfer.clone(),
            guard(source),
            guard(fee_payer),
            memo.clone(),
        ];
        assert_eq!(check(&c.tx(&solflare), &e), Ok(()), "Solflare");
        // Faremeter: a 50,000-unit limit
        let faremeter = vec![
            Instruction::new_with_bytes(COMPUTE_BUDGET, &[2, 0x50, 0xc3, 0, 0], vec![]),
            price.clone(),
            transfer.clone(),
            memo.clone(),
        ];
        assert_eq!(check(&c.tx(&faremeter), &e), Ok(()), "Faremeter");
        let tx = c.tx(&phantom);
        assert_eq!(payer_of(&tx), Some(c.buyer.pubkey()));
        assert_eq!(
            source_of(&tx),
            Some(source),
            "the transfer found by its role"
        );

        let mut five = phantom.clone();
        five.insert(2, guard(source));
        assert!(matches!(
            check(&c.tx(&five), &e),
            Err(Refusal::TooManyGuards(5) | Refusal::InstructionCount(9))
        ));
        // a memory write takes a payer: never, whoever it names
        for payer in [fee_payer, c.buyer.pubkey()] {
            let mut writing = solflare.clone();
            writing[3] = Instruction::new_with_bytes(
                LIGHTHOUSE,
                &[0, 0, 0, 0, 8, 0],
                vec![
                    AccountMeta::new_readonly(LIGHTHOUSE, false),
                    AccountMeta::new_readonly(
                        solana_sdk::pubkey!("11111111111111111111111111111111"),
                        false,
                    ),
                    AccountMeta::new(payer, true),
                    AccountMeta::new(Pubkey::new_unique(), false),
                    AccountMeta::new_readonly(source, false),
                ],
            );
            assert_eq!(check(&c.tx(&writing), &e), Err(Refusal::GuardWrites(3)));
            assert_eq!(
                Refusal::GuardWrites(3).reason(),
                "invalid_exact_svm_payload_unknown_optional_instruction"
            );
        }
        let mut elsewhere = solflare.clone();
        let stranger = Pubkey::new_unique();
        elsewhere[4] = guard(stranger);
        assert_eq!(
            check(&c.tx(&elsewhere), &e),
            Err(Refusal::GuardAccount(4, stranger))
        );
        // the fee payer in anything but an assertion
        let mut memo_naming = solflare.clone();
        memo_naming[5]
            .accounts
            .push(AccountMeta::new_readonly(fee_payer, false));
        assert_eq!(
            check(&c.tx(&memo_naming), &e),
            Err(Refusal::FeePayerInInstruction)
        );
        // the payment's own out of order
        let mut late_limit = phantom.clone();
        late_limit.swap(0, 1);
        assert_eq!(check(&c.tx(&late_limit), &e), Err(Refusal::ComputeLimit));
        let mut memo_first = solflare.clone();
        memo_first.swap(2, 5);
        assert_eq!(check(&c.tx(&memo_first), &e), Err(Refusal::NoTransfer));
        let no_memo = vec![limit, price, transfer, guard(source)];
        assert_eq!(check(&c.tx(&no_memo), &e), Err(Refusal::NoMemo));
        assert!(Refusal::NoMemo.to_string().contains("PayAI"));
        assert_eq!(
            Refusal::NoMemo.reason(),
            "invalid_exact_svm_payload_memo_count"
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
        assert_eq!(with_memo(&[]), Err(Refusal::NoMemo));
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
            Err(Refusal::NoMemo),
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
            with(&|ixs| ixs[0].data = vec![2, 0x81, 0x1a, 0x06, 0]),
            Err(Refusal::ComputeLimitTooHigh(400_001)),
        );
        assert_eq!(
            with(&|ixs| ixs[1].data[1..9].copy_from_slice(&50_001u64.to_le_bytes())),
            Err(Refusal::ComputePriceTooHigh(50_001))
        );
        // 200,000 units at 30,000 micro-lamports: 6,000 lamports of fee
        assert_eq!(
            with(&|ixs| {
                ixs[0].data = vec![2, 0x40, 0x0d, 0x03, 0];
                ixs[1].data[1..9].copy_from_slice(&30_000u64.to_le_bytes());
            }),
            Err(Refusal::ComputePriceTooHigh(30_000))
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
