//! `brainctl wallet new|show|address|balance|airdrop|import|export-key`.
//! The secret goes only where the user sends it (a 0600 file, or stdout
//! after a warning); never into logs or errors.

use crate::args::WalletCmd;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use node::chain::Signer;
use node::wallet::Wallet;
use serde_json::json;
use std::io::Read as _;

pub fn run(cmd: WalletCmd, ctx: &Context) -> CliResult<u8> {
    let path = &ctx.wallet_path;
    match cmd {
        WalletCmd::New { force } => {
            let w = Wallet::generate();
            let backup = w.save(&ctx.own_wallet_path, force)?;
            report_saved(ctx, &w, backup, "created")
        }
        WalletCmd::Import { file, force } => {
            let w = if file.as_os_str() == "-" {
                let mut text = zeroize::Zeroizing::new(Vec::new());
                std::io::Read::read_to_end(&mut std::io::stdin().take(MAX_SECRET_BYTES), &mut text)
                    .map_err(|e| anyhow!("reading the key from standard input: {e}"))?;
                Wallet::from_secret_text(&text, std::path::Path::new("standard input"))?
            } else {
                Wallet::load_unchecked_perms(&file)?
            };
            let backup = w.save(&ctx.own_wallet_path, force)?;
            report_saved(ctx, &w, backup, "imported")
        }
        WalletCmd::ExportKey { output, force } => export_key(ctx, output, force),
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

/// Largest key text read from standard input.
const MAX_SECRET_BYTES: u64 = 4096;

/// The warning printed on stderr before a secret reaches stdout (or a file).
const SECRET_WARNING: &str = "\
============================================================
  SAFETY: this is your FULL Solana private key. Anyone who
  copies it can sign as you and drain your wallet.
  - NEVER paste it into a chat, AI tool, or screenshot.
  - NEVER commit it to git or store it in a cloud note.
  - Import it in your wallet app under \"import private key\"
    (Phantom, Backpack, Solflare, Glow).
  - There is no recovery phrase: losing it is final.
============================================================";

/// `wallet export-key`: the base58 secret to stdout (after the warning)
/// or to a 0600 file (`-o`, never overwritten without `--force`).
fn export_key(ctx: &Context, output: Option<std::path::PathBuf>, force: bool) -> CliResult<u8> {
    let w = ctx.wallet()?;
    let secret = w.secret_base58();
    eprintln!("{SECRET_WARNING}");
    match output {
        Some(dst) => {
            if dst.exists() && !force {
                return Err(Failure::bad_input(anyhow!(
                    "{} already exists; pass --force to overwrite it",
                    dst.display()
                )));
            }
            super::files::write_private_atomic(&dst, secret.as_bytes())?;
            let v = json!({"ok": true, "address": w.address(), "dst": dst, "mode": "0600", "private_key_b58": null});
            ctx.emit(&v, || {
                format!(
                    "wrote the base58 private key of {} to {} (mode 0600)",
                    w.address(),
                    dst.display()
                )
            });
        }
        None => {
            let v = json!({"ok": true, "address": w.address(), "private_key_b58": secret.as_str()});
            ctx.emit(&v, || secret.to_string());
        }
    }
    Ok(0)
}

fn report_saved(
    ctx: &Context,
    w: &Wallet,
    backup: Option<std::path::PathBuf>,
    verb: &str,
) -> CliResult<u8> {
    let path = &ctx.own_wallet_path;
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
