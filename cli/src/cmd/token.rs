//! `brainctl token balance|mint-test-dollars|test-dollar-genesis`: a
//! wallet's balance in a settlement token, and the localnet's test dollar
//! (`node::chain::test_dollar`). Maps flags and errors; the work is the
//! node's.

use crate::args::TokenCmd;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use node::chain::{test_dollar, Pubkey, Signer};
use serde_json::json;

pub fn run(cmd: TokenCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        TokenCmd::Balance { mint, owner } => balance(ctx, &mint, owner.as_deref()),
        TokenCmd::MintTestDollars { to, usd } => mint_test_dollars(ctx, &to, usd),
        TokenCmd::TestDollarGenesis { authority } => {
            let authority = pubkey("--authority", &authority)?;
            println!("{}", test_dollar::genesis_account_json(&authority));
            Ok(0)
        }
        TokenCmd::SolUsdGenesis { usd } => {
            if !(usd.is_finite() && usd > 0.0) {
                return Err(Failure::bad_input(anyhow::anyhow!(
                    "--usd {usd}: give a positive USD-per-SOL price"
                )));
            }
            let now = time::OffsetDateTime::now_utc().unix_timestamp();
            println!(
                "{}",
                node::chain::test_price::genesis_account_json(usd, now)
            );
            Ok(0)
        }
    }
}

/// `flag`'s value as a public key, or a bad-input failure naming it.
fn pubkey(flag: &str, value: &str) -> CliResult<Pubkey> {
    value.parse().map_err(|_| {
        Failure::bad_input(anyhow::anyhow!(
            "{flag} {value:?} is not a base58 public key"
        ))
    })
}

fn balance(ctx: &Context, mint: &str, owner: Option<&str>) -> CliResult<u8> {
    let mint = pubkey("--mint", mint)?;
    let owner = match owner {
        Some(o) => pubkey("--owner", o)?,
        None => ctx.wallet()?.solana_keypair().pubkey(),
    };
    let chain = ctx.chain()?;
    let token = ctx
        .block_on(node::chain::token::read_mint(&chain, &mint))
        .map_err(Failure::bad_input)?;
    let units = ctx.block_on(node::chain::token::balance(&chain, &owner, &token))?;
    let whole = units as f64 / 10f64.powi(i32::from(token.decimals));
    let v = json!({"ok": true, "mint": mint.to_string(), "owner": owner.to_string(),
        "units": units, "decimals": token.decimals, "amount": whole});
    ctx.emit(&v, || {
        format!("{owner} holds {whole} of {mint} ({units} base units)")
    });
    Ok(0)
}

fn mint_test_dollars(ctx: &Context, to: &str, usd: f64) -> CliResult<u8> {
    let to = pubkey("--to", to)?;
    if !(usd.is_finite() && usd > 0.0) {
        return Err(Failure::bad_input(anyhow::anyhow!(
            "--usd must be a positive amount, got {usd}"
        )));
    }
    let units = (usd * test_dollar::UNITS_PER_DOLLAR as f64).round() as u64;
    let wallet = ctx.wallet()?;
    let kp = wallet.solana_keypair();
    let chain = ctx.chain()?;
    let sent = ctx.block_on(chain.send(
        &test_dollar::mint_to_instructions(&kp.pubkey(), &to, units),
        &[&kp],
    ))?;
    let v = json!({"ok": true, "to": to.to_string(), "units": units,
        "mint": test_dollar::ADDRESS.to_string(), "signature": sent.signature.to_string()});
    ctx.emit(&v, || {
        format!(
            "minted {usd} test dollars ({units} base units of {}) to {to} ({})",
            test_dollar::ADDRESS,
            sent.signature
        )
    });
    Ok(0)
}
