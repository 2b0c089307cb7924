//! `brainctl quarantine list|show|promote|purge`: the review of memories
//! from other agents (the rules are `node::store::quarantine`'s).

use crate::args::QuarantineCmd;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use node::store::{ListQuery, StoreError};
use serde_json::json;

/// A store refusal about the scope or a row is bad input (exit 2).
fn refusal(e: StoreError) -> Failure {
    match e {
        StoreError::NotQuarantine(_) | StoreError::NotInScope { .. } => Failure::bad_input(e),
        other => other.into(),
    }
}

pub fn run(cmd: QuarantineCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        QuarantineCmd::List => {
            let scopes = ctx.memory_store()?.quarantine()?;
            ctx.emit(&json!({"ok": true, "scopes": scopes}), || {
                if scopes.is_empty() {
                    return "nothing in quarantine".into();
                }
                scopes
                    .iter()
                    .map(|q| {
                        format!(
                            "{}  {} memories, {} flagged suspicious  from {} ({})",
                            q.scope,
                            q.memories,
                            q.suspicious,
                            q.signer.as_deref().unwrap_or("?"),
                            q.source.as_deref().unwrap_or("-")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        QuarantineCmd::Show { scope } => {
            if !scope.starts_with(node::store::QUARANTINE_PREFIX) {
                return Err(refusal(StoreError::NotQuarantine(scope)));
            }
            let rows = ctx.memory_store()?.list(&ListQuery {
                scope: Some(scope.clone()),
                include_quarantined: true,
                limit: 10_000,
                ..Default::default()
            })?;
            ctx.emit(
                &json!({"ok": true, "scope": scope, "memories": rows}),
                || super::memory::table(&rows),
            );
        }
        QuarantineCmd::Promote { scope, to, ids } => {
            let p = ctx
                .memory_store()?
                .promote_quarantined(&scope, &to, &ids)
                .map_err(refusal)?;
            ctx.emit(
                &json!({"ok": true, "from": scope, "to": to, "moved": p.moved, "held_suspicious": p.held_suspicious}),
                || {
                    let mut out = format!("moved {} memories from {scope} to {to}", p.moved);
                    if !p.held_suspicious.is_empty() {
                        let ids: Vec<String> = p.held_suspicious.iter().map(|i| format!("--id {i}")).collect();
                        out.push_str(&format!(
                            "\n  {} flagged suspicious stay in quarantine; review them (quarantine show {scope}) and promote one by one: {}",
                            p.held_suspicious.len(),
                            ids.join(" ")
                        ));
                    }
                    out
                },
            );
        }
        QuarantineCmd::Purge { scope, yes } => {
            if !yes {
                return Err(Failure::bad_input(anyhow!(
                    "purge deletes {scope}'s memories for good; pass --yes to confirm"
                )));
            }
            let p = ctx
                .memory_store()?
                .purge_quarantined(&scope)
                .map_err(refusal)?;
            ctx.emit(&json!({"ok": true, "scope": scope, "purged": p}), || {
                format!(
                    "purged {scope}: {} memories, {} search entries, {} import records",
                    p.memories, p.search_entries, p.imports
                )
            });
        }
    }
    Ok(0)
}
