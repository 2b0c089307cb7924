//! The quarantine review: memories that came from another agent (bought or
//! imported) wait in scopes `imported:*`, out of every list and search that
//! does not name them, until someone reviews them here: list the scopes
//! (with how many rows the import scan flagged), promote a scope's rows into
//! the agent's own memory (flagged rows only when named one by one), or
//! purge a scope (its rows, their search entries and its import record).
//!
//! Owns those three operations on the store, each one transaction; never
//! decides what is suspicious (the import scan did).

use super::{Result, Store, StoreError, QUARANTINE_PREFIX};
use rusqlite::{params, params_from_iter, OptionalExtension};
use serde::Serialize;

/// One quarantine scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuarantinedScope {
    /// The scope (`imported:<listing id or hash prefix>`).
    pub scope: String,
    /// Live memories in it.
    pub memories: i64,
    /// Of those, the ones the import scan flagged (e.g. prompt injection).
    pub suspicious: i64,
    /// Who signed the bundle it came from.
    pub signer: Option<String>,
    /// The file or listing it came from.
    pub source: Option<String>,
    /// When it was imported.
    pub imported_at: Option<String>,
}

/// What a promotion did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Promoted {
    /// Memories moved into the target scope.
    pub moved: usize,
    /// Flagged memories left in quarantine (name them to promote them).
    pub held_suspicious: Vec<i64>,
}

/// What a purge removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Purged {
    /// Memories deleted.
    pub memories: usize,
    /// Their full-text search entries deleted.
    pub search_entries: i64,
    /// Import records (provenance) deleted.
    pub imports: usize,
}

fn quarantine_scope(scope: &str) -> Result<()> {
    if scope.starts_with(QUARANTINE_PREFIX) && scope.len() > QUARANTINE_PREFIX.len() {
        Ok(())
    } else {
        Err(StoreError::NotQuarantine(scope.into()))
    }
}

impl Store {
    /// Every quarantine scope holding live memories, oldest import first.
    pub fn quarantine(&self) -> Result<Vec<QuarantinedScope>> {
        let mut stmt = self.conn.prepare(
            "SELECT m.scope, COUNT(*), SUM(m.suspicious IS NOT NULL), i.signer, i.source, i.imported_at
             FROM memories m LEFT JOIN imports i ON i.scope = m.scope
             WHERE m.scope LIKE 'imported:%' AND m.retired_at IS NULL
             GROUP BY m.scope ORDER BY i.imported_at, m.scope",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(QuarantinedScope {
                scope: r.get(0)?,
                memories: r.get(1)?,
                suspicious: r.get(2)?,
                signer: r.get(3)?,
                source: r.get(4)?,
                imported_at: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Moves the live memories of quarantine `scope` into `to` (not a
    /// quarantine scope). Without `ids`, every unflagged row moves and the
    /// flagged ones stay (reported); with `ids`, exactly those rows move,
    /// flagged or not (each must be a live row of `scope`).
    pub fn promote_quarantined(&mut self, scope: &str, to: &str, ids: &[i64]) -> Result<Promoted> {
        quarantine_scope(scope)?;
        if to.starts_with(QUARANTINE_PREFIX) || to.is_empty() {
            return Err(StoreError::NotQuarantine(format!(
                "{to} (promote into the agent's own scope, e.g. global)"
            )));
        }
        let now = crate::clock::now_row();
        let tx = self.write_transaction()?;
        let moved = if ids.is_empty() {
            tx.execute(
                "UPDATE memories SET scope = ?2, updated_at = ?3
                 WHERE scope = ?1 AND retired_at IS NULL AND suspicious IS NULL",
                params![scope, to, now],
            )?
        } else {
            for id in ids {
                let here: Option<i64> = tx
                    .query_row(
                        "SELECT id FROM memories WHERE id = ?1 AND scope = ?2 AND retired_at IS NULL",
                        params![id, scope],
                        |r| r.get(0),
                    )
                    .optional()?;
                if here.is_none() {
                    return Err(StoreError::NotInScope {
                        id: *id,
                        scope: scope.into(),
                    });
                }
            }
            let marks = vec!["?"; ids.len()].join(",");
            let mut p: Vec<rusqlite::types::Value> = vec![to.to_string().into(), now.into()];
            p.extend(ids.iter().map(|i| (*i).into()));
            tx.execute(
                &format!("UPDATE memories SET scope = ?1, updated_at = ?2 WHERE id IN ({marks})"),
                params_from_iter(p),
            )?
        };
        let held_suspicious = {
            let mut st = tx.prepare(
                "SELECT id FROM memories WHERE scope = ?1 AND retired_at IS NULL
                   AND suspicious IS NOT NULL ORDER BY id",
            )?;
            let ids = st.query_map([scope], |r| r.get(0))?;
            ids.collect::<rusqlite::Result<Vec<i64>>>()?
        };
        tx.commit()?;
        Ok(Promoted {
            moved,
            held_suspicious,
        })
    }

    /// Deletes quarantine `scope`: its memories (retired ones too), their
    /// search entries and its import records, so the bundle could be
    /// imported again.
    pub fn purge_quarantined(&mut self, scope: &str) -> Result<Purged> {
        quarantine_scope(scope)?;
        let tx = self.write_transaction()?;
        let search_entries: i64 = tx.query_row(
            "SELECT COUNT(*) FROM memories_fts WHERE rowid IN (SELECT id FROM memories WHERE scope = ?1)",
            [scope],
            |r| r.get(0),
        )?;
        let memories = tx.execute("DELETE FROM memories WHERE scope = ?1", [scope])?;
        let imports = tx.execute("DELETE FROM imports WHERE scope = ?1", [scope])?;
        tx.commit()?;
        Ok(Purged {
            memories,
            search_entries,
            imports,
        })
    }
}
