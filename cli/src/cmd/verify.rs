//! `brainctl verify FILE [--check-onchain]`: exit 0 valid (and pinned, when
//! asked), 1 tampered, 2 malformed or no pin found.

use super::files::read_capped;
use crate::args::VerifyArgs;
use crate::context::Context;
use crate::failure::CliResult;
use node::bundle::verify_file_text;
use serde_json::json;

/// Exit code when `--check-onchain` finds no pin.
const EXIT_NOT_PINNED: u8 = 2;

pub fn run(a: &VerifyArgs, ctx: &Context) -> CliResult<u8> {
    let text = read_capped(&a.file)?;
    let report = verify_file_text(&text);
    let mut code = report.verdict.exit_code();
    let mut onchain = None;
    if report.ok && a.check_onchain {
        let chain = ctx.chain()?;
        let signer = report.signer_pubkey.clone().unwrap_or_default();
        let hash = report.bundle_hash.clone().unwrap_or_default();
        let found = ctx.block_on(node::chain::pin::find_pin(&chain, &signer, &hash))?;
        if found.is_none() {
            code = EXIT_NOT_PINNED;
        }
        onchain = Some(
            json!({"pinned": found.is_some(), "pin": found, "rpc_url": chain.endpoint().rpc_url}),
        );
    }
    let mut v = serde_json::to_value(&report).expect("serializes");
    if let Some(o) = &onchain {
        v["onchain"] = o.clone();
        v["ok"] = json!(code == 0);
    }
    if !report.ok && !ctx.json {
        eprintln!(
            "invalid: {}",
            report.error.as_deref().unwrap_or("unknown error")
        );
        return Ok(code);
    }
    if onchain.as_ref().is_some_and(|o| o["pin"].is_null()) && !ctx.json {
        eprintln!(
            "not pinned: no successful transaction signed by the signer carries the exact pin memo"
        );
    }
    // through emit: printed, or captured when an MCP tool runs it (stdout
    // is the protocol's there)
    ctx.emit(&v, || {
        let mut out = format!(
            "valid: {} memories signed by {} at {}\n  bundle hash {}",
            report.memories_count,
            report.signer_pubkey.as_deref().unwrap_or("?"),
            report.signed_at.as_deref().unwrap_or("?"),
            report.bundle_hash.as_deref().unwrap_or("?")
        );
        if let Some(p) = onchain.as_ref().and_then(|o| o["pin"].as_object()) {
            out.push_str(&format!(
                "\n  pinned on chain: {} (slot {})",
                p["signature"].as_str().unwrap_or("?"),
                p["slot"]
            ));
        }
        out
    });
    Ok(code)
}
