//! `brainctl import FILE`: verify, then insert into a quarantine scope once;
//! `brainctl import mem0|json FILE`: another memory system's export (the
//! rules are `node::provider_import`'s).

use super::files::read_capped;
use crate::args::ImportArgs;
use crate::context::Context;
use crate::failure::CliResult;
use node::bundle::{Verdict, VerifyReport};
use node::import::{import_signed, import_signed_into_brain_db, BrainDbImportError, ImportError};
use serde_json::json;

pub fn run(a: &ImportArgs, ctx: &Context) -> CliResult<u8> {
    if let Some(source) = &a.source {
        return provider(a, source, ctx);
    }
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

/// `import mem0|json FILE`.
fn provider(a: &ImportArgs, source: &std::path::Path, ctx: &Context) -> CliResult<u8> {
    use node::provider_import::{import_provider, ProviderError};
    let provider = a.file.to_string_lossy().to_string();
    if a.into_brainctl_db.is_some() {
        return Err(crate::failure::Failure::bad_input(anyhow::anyhow!(
            "--into-brainctl-db takes signed bundles only; import {provider} exports into this store"
        )));
    }
    let bytes = read_capped(source)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        crate::failure::Failure::bad_input(anyhow::anyhow!(
            "{} is not UTF-8 text",
            source.display()
        ))
    })?;
    let jsonl = source
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
    let scope = if a.no_quarantine {
        Some("global")
    } else {
        a.scope.as_deref()
    };
    let mut store = ctx.store()?;
    let r = import_provider(
        &mut store,
        &provider,
        (&text, &source.display().to_string(), jsonl),
        scope,
        a.category.as_deref(),
        a.dry_run,
    )
    // an unknown provider and a file that is not its export are bad input
    // (exit 2, as the contract in --help says; the reference exits 1 for
    // the second)
    .map_err(|e| match e {
        ProviderError::UnknownProvider(_) | ProviderError::Shape { .. } => {
            crate::failure::Failure::bad_input(e)
        }
        other => other.into(),
    })?;
    let v = json!({"ok": true, "report": r});
    ctx.emit(&v, || {
        let mut out = match (&r.outcome, r.dry_run) {
            (_, true) => format!(
                "dry run: {} records from {provider} would go to {} ({} already held, {} flagged suspicious); nothing written",
                r.parsed, r.scope, r.would_skip_held.len(), r.suspicious.len()
            ),
            (Some(o), _) if !o.inserted => format!(
                "already imported (file {}), nothing changed (its rows went to {})",
                r.file_hash, o.scope
            ),
            (Some(o), _) => format!(
                "imported {} memories from {provider} into {} ({} already held, skipped; {} flagged suspicious)",
                o.ids.len(), o.scope, o.already_held.len(), r.suspicious.len()
            ),
            (None, false) => String::new(),
        };
        if r.skipped > 0 {
            out.push_str(&format!("\n  {} records skipped: {}", r.skipped, r.warnings.iter().take(5).cloned().collect::<Vec<_>>().join("; ")));
        }
        if r.scope.starts_with(node::store::QUARANTINE_PREFIX) && !r.dry_run {
            out.push_str(&format!("\n  review, then: brainctl quarantine promote {} --to global", r.scope));
        }
        out
    });
    Ok(0)
}
