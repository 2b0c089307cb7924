//! `brainctl memory add|list|search|retire|promote`.

use crate::args::{MemoryCmd, MemoryFilter};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use node::store::{ListQuery, Memory, NewMemory};
use serde_json::json;

fn query(f: MemoryFilter, agent: Option<String>) -> ListQuery {
    ListQuery {
        agent_id: agent,
        category: f.category,
        scope: f.scope,
        memory_type: f.memory_type,
        include_retired: f.include_retired,
        include_quarantined: f.include_imported,
        limit: f.limit,
    }
}

pub(super) fn table(rows: &[Memory]) -> String {
    if rows.is_empty() {
        return "no memories".into();
    }
    rows.iter()
        .map(|m| {
            let flag = match (&m.retired_at, &m.suspicious) {
                (Some(_), _) => " [retired]",
                (_, Some(_)) => " [suspicious]",
                _ => "",
            };
            format!(
                "#{:<6} {:<10} {:<16} {}{flag}",
                m.id,
                m.category.as_deref().unwrap_or("-"),
                m.scope.as_deref().unwrap_or("-"),
                m.content.replace('\n', " ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn run(cmd: MemoryCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        MemoryCmd::Add {
            content,
            category,
            scope,
            confidence,
            tags,
            memory_type,
        } => {
            if !(0.0..=1.0).contains(&confidence) {
                return Err(Failure::bad_input(anyhow!(
                    "--confidence must be between 0 and 1, got {confidence}"
                )));
            }
            if content.trim().is_empty() {
                return Err(Failure::bad_input(anyhow!(
                    "memory content is empty; pass the text as the first argument"
                )));
            }
            let tags: Vec<String> = tags
                .into_iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            let id = ctx.memory_store()?.add_memory(&NewMemory {
                content,
                category,
                scope,
                confidence,
                tags,
                memory_type: memory_type.as_str().into(),
                agent_id: ctx.agent.clone().unwrap_or_else(|| "default".into()),
            })?;
            ctx.emit(&json!({"ok": true, "id": id}), || {
                format!("added memory #{id}")
            });
        }
        MemoryCmd::List(f) => {
            let rows = ctx.memory_store()?.list(&query(f, ctx.agent.clone()))?;
            ctx.emit(&json!({"ok": true, "memories": rows}), || table(&rows));
        }
        MemoryCmd::Search {
            query: text,
            filter,
        } => {
            let rows = ctx
                .memory_store()?
                .search(&text, &query(filter, ctx.agent.clone()))?;
            ctx.emit(
                &json!({"ok": true, "query": text, "memories": rows}),
                || table(&rows),
            );
        }
        MemoryCmd::Retire { id } => {
            let at = ctx.memory_store()?.retire(id)?;
            ctx.emit(&json!({"ok": true, "id": id, "retired_at": at}), || {
                format!("retired memory #{id}")
            });
        }
        MemoryCmd::Promote { scope, to } => {
            let n = ctx.memory_store()?.promote_scope(&scope, &to)?;
            ctx.emit(
                &json!({"ok": true, "from": scope, "to": to, "moved": n}),
                || format!("moved {n} memories from {scope} to {to}"),
            );
        }
    }
    Ok(0)
}
