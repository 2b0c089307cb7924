//! `brainctl doctor`: checks a user's set-up, one line per part, each
//! failure with what to do: the RPC and which cluster it is, the wallet
//! and its balance, the memory store, the storage buyers read from, the
//! escrow program, the indexer. Exit 0 when nothing failed (warnings
//! allowed), 1 otherwise. Reads only: it sends no transaction and writes
//! nothing but the store it opens (as any command does).

use crate::args::{DoctorArgs, StorageKind};
use crate::context::Context;
use crate::failure::CliResult;
use node::escrow;
use node::market::escrow_trade::{read_settings, EscrowPlanError, EscrowReadError};
use serde::Serialize;
use std::time::Duration;

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check's result.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    status: Status,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn check(check: &'static str, status: Status, detail: String, fix: Option<String>) -> Check {
    Check {
        check,
        status,
        detail,
        fix,
    }
}

pub fn run(a: DoctorArgs, ctx: &Context) -> CliResult<u8> {
    let mut checks = Vec::new();
    let chain = ctx.chain()?;
    // the RPC, and which cluster answers
    let cluster = ctx.block_on(chain.cluster_kind());
    let reachable = cluster.is_ok();
    checks.push(match &cluster {
        Ok(kind) => check(
            "rpc",
            Status::Ok,
            format!("{} answers: {kind:?} at {} commitment", ctx.url, ctx.commitment.as_str()),
            None,
        ),
        Err(e) => check(
            "rpc",
            Status::Fail,
            format!("{} does not answer: {e}", ctx.url),
            Some("pass -u devnet (or localhost, or an RPC URL), set BRAINCTL_RPC_URL, or `solana config set --url`".into()),
        ),
    });
    // the wallet, and what it can pay
    match ctx.wallet() {
        Ok(w) => {
            let address = w.address();
            checks.push(check(
                "wallet",
                Status::Ok,
                format!("{address} ({})", ctx.wallet_path.display()),
                None,
            ));
            if reachable {
                let pk = node::chain::Signer::pubkey(&w.solana_keypair());
                checks.push(match ctx.block_on(chain.balance(&pk)) {
                    Ok(0) => check(
                        "balance",
                        Status::Warn,
                        "0 lamports: it cannot pay a fee".into(),
                        Some(format!(
                            "fund {address} (devnet or localnet: `brainctl wallet airdrop 1`)"
                        )),
                    ),
                    Ok(l) => check("balance", Status::Ok, format!("{l} lamports"), None),
                    Err(e) => check("balance", Status::Fail, e.to_string(), None),
                });
            }
        }
        Err(e) => checks.push(check(
            "wallet",
            Status::Fail,
            format!("{}: {e}", ctx.wallet_path.display()),
            Some(
                "`brainctl wallet new` (or --keystore PATH, or the Solana CLI's keypair_path)"
                    .into(),
            ),
        )),
    }
    // the memory store
    checks.push(match ctx.store() {
        Ok(_) => check(
            "store",
            Status::Ok,
            format!("{} opens read-write", ctx.db_path.display()),
            None,
        ),
        Err(e) => check(
            "store",
            Status::Fail,
            format!("{}: {}", ctx.db_path.display(), e.error),
            Some("pass --db PATH to a store you can write".into()),
        ),
    });
    // where bundles and manifests are stored and read
    checks.push(storage_check(ctx, &a));
    // the escrow program, for `list --escrow` and escrow buys
    if reachable {
        checks.push(match ctx.block_on(read_settings(&chain)) {
            Ok(_) => check("escrow", Status::Ok, format!("program {} deployed and configured", escrow::PROGRAM_ID), None),
            Err(EscrowReadError::Plan(EscrowPlanError::NotDeployed)) => check(
                "escrow",
                Status::Warn,
                format!("program {} is not deployed on this cluster: escrow listings cannot be made or bought here", escrow::PROGRAM_ID),
                None,
            ),
            Err(EscrowReadError::Plan(EscrowPlanError::NoSettings)) => check(
                "escrow",
                Status::Warn,
                "deployed, not configured".into(),
                Some("its upgrade authority runs `brainctl escrow configure`".into()),
            ),
            Err(e) => check("escrow", Status::Fail, e.to_string(), None),
        });
    }
    // the indexer, for browse, show and the MCP tools
    checks.push(reach(
        ctx,
        "indexer",
        &format!("{}/listings?limit=1", a.indexer.url.trim_end_matches('/')),
        Status::Warn,
        "run `brainctl-indexer run`, or pass --indexer URL (BRNCTL_MARKETPLACE_API)",
    ));
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let v = serde_json::json!({"ok": failed == 0, "checks": checks});
    ctx.emit(&v, || {
        checks
            .iter()
            .map(|c| {
                let mark = match c.status {
                    Status::Ok => "ok  ",
                    Status::Warn => "warn",
                    Status::Fail => "FAIL",
                };
                let fix = c
                    .fix
                    .as_deref()
                    .map(|f| format!("\n        fix: {f}"))
                    .unwrap_or_default();
                format!("{mark}  {:<8} {}{fix}", c.check, c.detail)
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(if failed == 0 { 0 } else { 1 })
}

/// The storage `--storage` names: a writable directory, or a gateway (and
/// bundler) that answers.
fn storage_check(ctx: &Context, a: &DoctorArgs) -> Check {
    let o = &a.storage;
    match o.storage {
        StorageKind::Fs => match crate::cmd::storage::fs_store(ctx, o) {
            Ok(store) => {
                let dir = store.dir().to_path_buf();
                let writable = std::fs::create_dir_all(&dir).is_ok() && tempfile_in(&dir).is_ok();
                if writable {
                    check(
                        "storage",
                        Status::Warn,
                        format!("fs {} (local only: buyers elsewhere cannot read it)", dir.display()),
                        Some("sell with --storage bundler --bundler-url URL (or gateway on a localnet)".into()),
                    )
                } else {
                    check(
                        "storage",
                        Status::Fail,
                        format!("fs {} is not writable", dir.display()),
                        Some("pass --storage-dir DIR".into()),
                    )
                }
            }
            Err(e) => check("storage", Status::Fail, e.error.to_string(), None),
        },
        StorageKind::Gateway | StorageKind::Bundler => {
            let gateway = reach(
                ctx,
                "storage",
                &format!("{}/info", o.gateway_url.trim_end_matches('/')),
                Status::Fail,
                "pass --gateway-url URL (BRAINCTL_GATEWAY_URL)",
            );
            if gateway.status != Status::Ok || o.storage == StorageKind::Gateway {
                return gateway;
            }
            match &o.bundler_url {
                Some(b) => reach(
                    ctx,
                    "storage",
                    &format!("{}/info", b.trim_end_matches('/')),
                    Status::Fail,
                    "check --bundler-url (BRAINCTL_BUNDLER_URL)",
                ),
                None => check(
                    "storage",
                    Status::Fail,
                    "--storage bundler without a bundler".into(),
                    Some("pass --bundler-url URL (BRAINCTL_BUNDLER_URL)".into()),
                ),
            }
        }
    }
}

/// Creates and removes a file in `dir`.
fn tempfile_in(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// Whether `url` answers HTTP (any status below 500) within 10 s.
fn reach(ctx: &Context, name: &'static str, url: &str, on_fail: Status, fix: &str) -> Check {
    let got = ctx.block_on(async {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        http.get(url).send().await
    });
    match got {
        Ok(r) if r.status().as_u16() < 500 => check(
            name,
            Status::Ok,
            format!("{url} answers ({})", r.status()),
            None,
        ),
        Ok(r) => check(
            name,
            on_fail,
            format!("{url} answers {}", r.status()),
            Some(fix.into()),
        ),
        Err(e) => check(name, on_fail, format!("{url}: {e}"), Some(fix.into())),
    }
}
