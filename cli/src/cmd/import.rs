//! `brainctl import FILE`: verify, then insert into a quarantine scope once.

use super::files::read_capped;
use crate::args::ImportArgs;
use crate::context::Context;
use crate::failure::CliResult;
use node::bundle::{Verdict, VerifyReport};
use node::import::{import_signed, import_signed_into_brain_db, BrainDbImportError, ImportError};
use serde_json::json;

pub fn run(a: &ImportArgs, ctx: &Context) -> CliResult<u8> {
    let text = read_capped(&a.file)?;
    if let Some(db) = &a.into_brainctl_db {
        return into_brainctl_db(db, &text, a, ctx);
    }
    let mut store = ctx.store()?;
    let source = a.file.display().to_string();
    let report = match import_signed(&mut store, &text, a.scope.as_deref(), Some(&source)) {
        Ok(r) => r,
        Err(ImportError::Invalid(v)) => return Ok(refused(&v, ctx)),
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

/// Reports a bundle that did not verify; its exit code (2 malformed, 1 invalid).
fn refused(v: &VerifyReport, ctx: &Context) -> u8 {
    let msg = format!(
        "bundle did not verify, nothing imported: {}",
        v.error.as_deref().unwrap_or("invalid")
    );
    if ctx.json {
        ctx.emit(
            &json!({"ok": false, "error": msg, "verify": v}),
            String::new,
        );
    } else {
        eprintln!("error: {msg}");
    }
    match v.verdict == Verdict::Malformed {
        true => 2,
        false => 1,
    }
}

/// `import --into-brainctl-db PATH`.
fn into_brainctl_db(
    db: &std::path::Path,
    text: &[u8],
    a: &ImportArgs,
    ctx: &Context,
) -> CliResult<u8> {
    let report = match import_signed_into_brain_db(db, text, a.scope.as_deref()) {
        Ok(r) => r,
        Err(BrainDbImportError::Bundle(ImportError::Invalid(v))) => return Ok(refused(&v, ctx)),
        Err(e) => return Err(e.into()),
    };
    let v = json!({"ok": true, "brainctl_db": report});
    ctx.emit(&v, || {
        format!(
            "{} memories written into {} (scope {}, agent {}); {} already there\n  the agent sees them with: BRAINCTL_DB={} brainctl --agent {} memory list --scope {}",
            report.inserted.len(),
            report.path,
            report.scope,
            report.agent,
            report.already_present,
            report.path,
            report.agent,
            report.scope
        )
    });
    Ok(0)
}
