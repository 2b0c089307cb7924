//! x402 helpers for tests: the client venv's python (the `x402` SDK) and
//! payments no honest client builds.

use node::chain::token::{associated_account, TokenMint};
use node::chain::{Keypair, Pubkey, Signer};
use serde_json::{json, Value};
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::message::{v0, VersionedMessage};
use solana_sdk::signature::Signature;
use solana_sdk::transaction::VersionedTransaction;

/// The venv's python with the `x402` SDK (and PyNaCl): `localnet/install`
/// puts them in the MCP client venv; missing fails and names the step.
pub fn python() -> std::path::PathBuf {
    let py = crate::mcp_python();
    let ok = std::process::Command::new(&py)
        .args(["-c", "import x402.mechanisms.svm.exact, nacl.bindings"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} has no x402 SDK or PyNaCl: run ./localnet/install (its step installing the MCP and x402 clients)",
        py.display()
    );
    py
}

/// A `PAYMENT-SIGNATURE` header for `requirements` (the 402's, as JSON)
/// whose transaction moves the fee payer's own tokens (the fee payer as
/// the transfer's owner and authority), signed by `buyer` as the second
/// signer with the buy memo.
pub fn payment_spending_fee_payer(
    fee_payer: &Pubkey,
    buyer: &Keypair,
    mint: &TokenMint,
    requirements: &Value,
) -> String {
    use base64::Engine as _;
    let amount: u64 = requirements["amount"].as_str().unwrap().parse().unwrap();
    let memo = requirements["extra"]["memo"].as_str().unwrap();
    let mut data = vec![12];
    data.extend_from_slice(&amount.to_le_bytes());
    data.push(mint.decimals);
    let compute_budget: Pubkey = "ComputeBudget111111111111111111111111111111"
        .parse()
        .unwrap();
    let memo_program: Pubkey = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
        .parse()
        .unwrap();
    let ixs = [
        Instruction::new_with_bytes(compute_budget, &[2, 0x20, 0x4e, 0, 0], vec![]),
        Instruction::new_with_bytes(compute_budget, &[3, 1, 0, 0, 0, 0, 0, 0, 0], vec![]),
        Instruction {
            program_id: mint.program,
            accounts: vec![
                AccountMeta::new(associated_account(fee_payer, mint), false),
                AccountMeta::new_readonly(mint.address, false),
                AccountMeta::new(associated_account(fee_payer, mint), false),
                AccountMeta::new_readonly(*fee_payer, true),
            ],
            data,
        },
        Instruction::new_with_bytes(
            memo_program,
            memo.as_bytes(),
            vec![AccountMeta::new_readonly(buyer.pubkey(), true)],
        ),
    ];
    let blockhash = solana_sdk::hash::Hash::new_unique();
    let message =
        VersionedMessage::V0(v0::Message::try_compile(fee_payer, &ixs, &[], blockhash).unwrap());
    let sig = buyer.sign_message(&message.serialize());
    let tx = VersionedTransaction {
        signatures: vec![Signature::default(), sig],
        message,
    };
    let payload = json!({
        "x402Version": 2,
        "payload": {"transaction": base64::engine::general_purpose::STANDARD.encode(bincode::serialize(&tx).unwrap())},
        "accepted": requirements,
    });
    base64::engine::general_purpose::STANDARD.encode(payload.to_string())
}
