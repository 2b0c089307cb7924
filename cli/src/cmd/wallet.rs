//! `brainctl wallet new|show|address|import`.

use crate::args::WalletCmd;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use node::chain::Signer;
use node::wallet::Wallet;
use serde_json::json;

pub fn run(cmd: WalletCmd, ctx: &Context) -> CliResult<u8> {
    let path = &ctx.wallet_path;
    match cmd {
        WalletCmd::New { force } => {
            let w = Wallet::generate();
            let backup = w.save(path, force)?;
            report_saved(ctx, &w, backup, "created")
        }
        WalletCmd::Import { file, force } => {
            let w = Wallet::load_unchecked_perms(&file)?;
            let backup = w.save(path, force)?;
            report_saved(ctx, &w, backup, "imported")
        }
        WalletCmd::Show => {
            let w = ctx.wallet()?;
            let x = w.x25519_address();
            let v = json!({"ok": true, "address": w.address(), "x25519_pubkey": x, "path": path});
            ctx.emit(&v, || {
                format!(
                    "address:        {}\nx25519 pubkey:  {x}\npath:           {}",
                    w.address(),
                    path.display()
                )
            });
            Ok(0)
        }
        WalletCmd::Balance => {
            let w = ctx.wallet()?;
            let chain = ctx.chain()?;
            let pk = w.solana_keypair().pubkey();
            let lamports = ctx.block_on(chain.balance(&pk))?;
            let sol = lamports as f64 / 1e9;
            let v = json!({"ok": true, "address": w.address(), "lamports": lamports, "sol": sol, "rpc_url": chain.endpoint().rpc_url});
            ctx.emit(&v, || {
                format!("{sol} SOL ({lamports} lamports) at {}", w.address())
            });
            Ok(0)
        }
        WalletCmd::Airdrop { sol } => {
            if !(sol > 0.0 && sol <= 1_000.0) {
                return Err(Failure::bad_input(anyhow!(
                    "airdrop amount must be in (0, 1000] SOL, got {sol}"
                )));
            }
            let w = ctx.wallet()?;
            let chain = ctx.chain()?;
            let pk = w.solana_keypair().pubkey();
            let lamports = (sol * 1e9).round() as u64;
            let sig = ctx.block_on(chain.airdrop(&pk, lamports))?;
            let balance = ctx.block_on(chain.balance(&pk))?;
            let v = json!({"ok": true, "signature": sig.to_string(), "lamports": lamports, "balance_lamports": balance});
            ctx.emit(&v, || {
                format!(
                    "airdropped {sol} SOL to {} ({sig}); balance {} SOL",
                    w.address(),
                    balance as f64 / 1e9
                )
            });
            Ok(0)
        }
        WalletCmd::Address => {
            let w = ctx.wallet()?;
            ctx.emit(&json!({"ok": true, "address": w.address()}), || w.address());
            Ok(0)
        }
    }
}

fn report_saved(
    ctx: &Context,
    w: &Wallet,
    backup: Option<std::path::PathBuf>,
    verb: &str,
) -> CliResult<u8> {
    let path = &ctx.wallet_path;
    let v = json!({"ok": true, "address": w.address(), "path": path, "backup": backup});
    ctx.emit(&v, || {
        let mut s = format!(
            "{verb} wallet {}\n  saved to {} (mode 0600)",
            w.address(),
            path.display()
        );
        if let Some(b) = &backup {
            s.push_str(&format!("\n  previous wallet kept at {}", b.display()));
        }
        s.push_str("\n  back this file up: it is the only copy of the key");
        s
    });
    Ok(0)
}
