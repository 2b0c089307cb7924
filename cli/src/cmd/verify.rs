//! `brainctl verify FILE`: exit 0 valid, 1 tampered, 2 malformed.

use super::files::read_capped;
use crate::args::VerifyArgs;
use crate::context::Context;
use crate::failure::CliResult;
use node::bundle::verify_text;

pub fn run(a: &VerifyArgs, ctx: &Context) -> CliResult<u8> {
    let text = read_capped(&a.file)?;
    let (report, _) = verify_text(&text);
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("serializes")
        );
    } else if report.ok {
        println!(
            "valid: {} memories signed by {} at {}\n  bundle hash {}",
            report.memories_count,
            report.signer_pubkey.as_deref().unwrap_or("?"),
            report.signed_at.as_deref().unwrap_or("?"),
            report.bundle_hash.as_deref().unwrap_or("?")
        );
    } else {
        eprintln!(
            "invalid: {}",
            report.error.as_deref().unwrap_or("unknown error")
        );
    }
    Ok(report.verdict.exit_code())
}
