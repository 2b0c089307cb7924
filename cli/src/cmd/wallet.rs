//! `brainctl wallet new|show|address|import`.

use crate::args::WalletCmd;
use crate::context::Context;
use crate::failure::CliResult;
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
