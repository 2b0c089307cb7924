//! `brainctl import FILE`: verify, then insert into a quarantine scope once.

use super::files::read_capped;
use crate::args::ImportArgs;
use crate::context::Context;
use crate::failure::CliResult;
use node::bundle::Verdict;
use node::import::{import_signed, ImportError};
use serde_json::json;

pub fn run(a: &ImportArgs, ctx: &Context) -> CliResult<u8> {
    let text = read_capped(&a.file)?;
    let mut store = ctx.store()?;
    let source = a.file.display().to_string();
    let report = match import_signed(&mut store, &text, a.scope.as_deref(), Some(&source)) {
        Ok(r) => r,
        Err(ImportError::Invalid(v)) => {
            let code = if v.verdict == Verdict::Malformed {
                2
            } else {
                1
            };
            let msg = format!(
                "bundle did not verify, nothing imported: {}",
                v.error.as_deref().unwrap_or("invalid")
            );
            if ctx.json {
                println!("{}", json!({"ok": false, "error": msg, "verify": *v}));
            } else {
                eprintln!("error: {msg}");
            }
            return Ok(code);
        }
        Err(e) => return Err(e.into()),
    };
    let v = json!({"ok": true, "already_imported": !report.outcome.inserted, "report": report});
    ctx.emit(&v, || {
        let o = &report.outcome;
        if !o.inserted {
            return format!(
                "already imported (bundle {}), nothing changed (its rows were imported into scope {})",
                report.bundle_hash, o.scope
            );
        }
        let mut s = format!(
            "imported {} memories signed by {} into scope {}\n  bundle hash {}",
            o.ids.len(),
            report.signer,
            o.scope,
            report.bundle_hash
        );
        for r in &report.suspicious {
            s.push_str(&format!(
                "\n  suspicious: memory #{} (origin #{}) matches {}",
                r.id.unwrap_or(-1),
                r.origin_id.unwrap_or(-1),
                r.patterns.join(", ")
            ));
        }
        s.push_str(&format!(
            "\n  review, then: brainctl memory promote --scope {} --to <scope>",
            o.scope
        ));
        s
    });
    Ok(0)
}
