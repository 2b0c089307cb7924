//! x402 helpers for tests: the client venv's python (the `x402` SDK) and
//! payments no honest client builds.

use node::chain::token::TokenMint;
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

/// The official TypeScript x402 client (`tests/x402/buy.mjs` with
/// `@x402/fetch` and `@x402/svm` from the cache): a command running the
/// script from `work`. `localnet/install` installs the packages; missing
/// fails and names it.
pub fn ts_client(work: &std::path::Path) -> std::process::Command {
    node_client(work, "buy.mjs", "@x402/svm")
}

/// Faremeter's x402 client (`tests/x402/faremeter.mjs` with
/// `@faremeter/fetch` and `@faremeter/payment-solana` from the cache).
pub fn faremeter_client(work: &std::path::Path) -> std::process::Command {
    node_client(work, "faremeter.mjs", "@faremeter/payment-solana")
}

/// A person at a shop page in headless Chromium (`tests/x402/shop.mjs`
/// with playwright-core from the cache, the installed Chromium).
pub fn shop_client(work: &std::path::Path) -> std::process::Command {
    let mut cmd = node_client(work, "shop.mjs", "playwright-core");
    cmd.arg("--chromium").arg(crate::chromium());
    cmd
}

/// The shop page's script as `localnet/install` built it (missing fails
/// the test, naming the step).
pub fn shop_script() -> std::path::PathBuf {
    let script = cache().join("shop/app.js");
    assert!(
        script.is_file(),
        "{} is missing: run ./localnet/install (its step building the shop page's script)",
        script.display()
    );
    script
}

/// `node tests/x402/<script>` run from `work` (a copy beside a link to
/// the installed packages, which must hold `package`: Node resolves an ES
/// module's imports from where the file is).
fn node_client(work: &std::path::Path, script: &str, package: &str) -> std::process::Command {
    let modules = cache().join("x402-js/node_modules");
    assert!(
        modules.join(package).is_dir(),
        "{} has no {package}: run ./localnet/install (its step installing the TypeScript x402 clients)",
        modules.display()
    );
    let dir = work.join("ts-client");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("node_modules");
    if !link.exists() {
        std::os::unix::fs::symlink(&modules, &link).unwrap();
    }
    let copy = dir.join(script);
    std::fs::copy(
        format!("{}/x402/{script}", env!("CARGO_MANIFEST_DIR")),
        &copy,
    )
    .unwrap();
    let mut cmd = std::process::Command::new("node");
    cmd.arg(copy);
    cmd
}

/// The compute-budget program.
const COMPUTE_BUDGET: &str = "ComputeBudget111111111111111111111111111111";
/// SPL Memo.
const MEMO: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";

/// A `PAYMENT-SIGNATURE` header (v2) paying `requirements` (the 402's, as
/// JSON) with `transfer` as its third instruction, the buy memo after it,
/// and a compute-unit price of `cu_price` micro-lamports (distinct prices
/// make distinct payments of the same terms), on `blockhash`, signed by
/// `payer` as the second signer.
fn payment_with(
    (fee_payer, payer): (&Pubkey, &Keypair),
    transfer: Instruction,
    memo_accounts: Vec<AccountMeta>,
    requirements: &Value,
    (cu_price, blockhash): (u64, solana_sdk::hash::Hash),
) -> String {
    use base64::Engine as _;
    let memo = requirements["extra"]["memo"].as_str().unwrap();
    let compute_budget: Pubkey = COMPUTE_BUDGET.parse().unwrap();
    let mut price = vec![3];
    price.extend_from_slice(&cu_price.to_le_bytes());
    let ixs = [
        Instruction::new_with_bytes(compute_budget, &[2, 0x20, 0x4e, 0, 0], vec![]),
        Instruction::new_with_bytes(compute_budget, &price, vec![]),
        transfer,
        Instruction::new_with_bytes(MEMO.parse().unwrap(), memo.as_bytes(), memo_accounts),
    ];
    let message =
        VersionedMessage::V0(v0::Message::try_compile(fee_payer, &ixs, &[], blockhash).unwrap());
    let sig = payer.sign_message(&message.serialize());
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

/// `TransferChecked` of `requirements`' amount of `mint` from `owner`'s
/// associated account to the payee's, by `owner`.
fn transfer_of(owner: &Pubkey, mint: &TokenMint, requirements: &Value) -> Instruction {
    let amount: u64 = requirements["amount"].as_str().unwrap().parse().unwrap();
    let pay_to: Pubkey = requirements["payTo"].as_str().unwrap().parse().unwrap();
    node::chain::token::transfer_to(owner, &pay_to, mint, amount)
}

/// An honest payment of `requirements` by `payer` from its own associated
/// account (what the SDK's client builds), at compute-unit price
/// `cu_price`, on `blockhash` (a recent one: it is meant to land).
pub fn payment(
    fee_payer: &Pubkey,
    payer: &Keypair,
    mint: &TokenMint,
    requirements: &Value,
    cu_price: u64,
    blockhash: solana_sdk::hash::Hash,
) -> String {
    let transfer = transfer_of(&payer.pubkey(), mint, requirements);
    payment_with(
        (fee_payer, payer),
        transfer,
        vec![],
        requirements,
        (cu_price, blockhash),
    )
}

/// A `PAYMENT-SIGNATURE` header for `requirements` whose transaction
/// moves the fee payer's own tokens (the fee payer as the transfer's
/// owner and authority), signed by `buyer` as the second signer with the
/// buy memo.
pub fn payment_spending_fee_payer(
    fee_payer: &Pubkey,
    buyer: &Keypair,
    mint: &TokenMint,
    requirements: &Value,
) -> String {
    // the payee is the fee payer: its own account is paid back to itself
    let transfer = transfer_of(fee_payer, mint, requirements);
    payment_with(
        (fee_payer, buyer),
        transfer,
        // the buyer still signs (the memo names it)
        vec![AccountMeta::new_readonly(buyer.pubkey(), true)],
        requirements,
        (1, solana_sdk::hash::Hash::new_unique()),
    )
}

/// The localnet's cache (`$BRAINCTL_CACHE`, else ~/.cache/brainctl).
fn cache() -> std::path::PathBuf {
    std::env::var("BRAINCTL_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/brainctl")
        })
}
