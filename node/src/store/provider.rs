//! Rows from another memory system (mem0, a JSON export) into the store:
//! one transaction, with provenance (the provider, the record's id there,
//! the export file's hash, the record's position in it), idempotent per
//! file (its hash is recorded in `imports`), and never a second copy of a
//! memory the store already holds (same content): those are reported.
//!
//! Owns the insert only; parsing and scanning are `crate::provider_import`'s.

use super::{Result, Store};
use rusqlite::params;
use serde::Serialize;
use std::collections::HashSet;

/// One record ready to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRow {
    /// Text.
    pub content: String,
    /// Category (one of the reference's, else `project`).
    pub category: String,
    /// Tags (a JSON array inside a string, as the reference keeps them).
    pub tags: Option<String>,
    /// Confidence.
    pub confidence: f64,
    /// Its id in the provider.
    pub source_id: Option<String>,
    /// When the provider says it was made.
    pub created_at: Option<String>,
    /// The provider's agent or user.
    pub agent_id: Option<String>,
    /// Injection findings (JSON array), if any.
    pub suspicious: Option<String>,
}

/// What an insert did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderOutcome {
    /// False when this file was imported before (nothing written).
    pub inserted: bool,
    /// Where the rows went.
    pub scope: String,
    /// New row ids.
    pub ids: Vec<i64>,
    /// Positions (in the file) of records the store already holds.
    pub already_held: Vec<usize>,
}

fn content_key(content: &str) -> [u8; 32] {
    crate::crypto::sha256(content.as_bytes())
}

impl Store {
    /// The positions of `rows` whose content the store already holds (or an
    /// earlier row of `rows` has).
    pub fn held_contents(&self, rows: &[ProviderRow]) -> Result<Vec<usize>> {
        let mut held = HashSet::new();
        let mut st = self.conn.prepare("SELECT content FROM memories")?;
        let mut q = st.query([])?;
        while let Some(r) = q.next()? {
            held.insert(content_key(r.get_ref(0)?.as_str().unwrap_or("")));
        }
        Ok(rows
            .iter()
            .enumerate()
            .filter(|(_, r)| !held.insert(content_key(&r.content)))
            .map(|(i, _)| i)
            .collect())
    }

    /// Inserts `rows` from `provider`'s export (SHA-256 `file_hash`) into
    /// `scope` in one transaction, skipping contents the store already
    /// holds; a file imported before is a no-op.
    pub fn import_provider_rows(
        &mut self,
        (provider, file_hash, source): (&str, &str, &str),
        scope: &str,
        rows: &[ProviderRow],
    ) -> Result<ProviderOutcome> {
        let already_held = self.held_contents(rows)?;
        let tx = self.write_transaction()?;
        if let Some(scope) = super::imported_scope(&tx, file_hash)? {
            return Ok(ProviderOutcome {
                inserted: false,
                scope,
                ids: Vec::new(),
                already_held: Vec::new(),
            });
        }
        let now = crate::clock::now_row();
        let mut ids = Vec::new();
        {
            let mut agent =
                tx.prepare_cached("INSERT OR IGNORE INTO agents(id, created_at) VALUES (?1, ?2)")?;
            let mut ins = tx.prepare_cached(
                "INSERT INTO memories(agent_id, category, scope, content, confidence, tags, created_at, updated_at,
                    memory_type, origin_bundle_hash, origin_id, suspicious, origin_provider, origin_source_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'episodic', ?9, ?10, ?11, ?12, ?13)",
            )?;
            let mut held = already_held.iter().peekable();
            for (i, r) in rows.iter().enumerate() {
                if held.peek() == Some(&&i) {
                    held.next();
                    continue;
                }
                if let Some(a) = &r.agent_id {
                    agent.execute(params![a, now])?;
                }
                ins.execute(params![
                    r.agent_id,
                    r.category,
                    scope,
                    r.content,
                    r.confidence,
                    r.tags,
                    r.created_at.clone().unwrap_or_else(|| now.clone()),
                    now,
                    file_hash,
                    i as i64,
                    r.suspicious,
                    provider,
                    r.source_id,
                ])?;
                ids.push(tx.last_insert_rowid());
            }
        }
        super::record_import(
            &tx,
            (file_hash, provider, scope),
            ids.len(),
            &now,
            Some(source),
        )?;
        tx.commit()?;
        Ok(ProviderOutcome {
            inserted: true,
            scope: scope.into(),
            ids,
            already_held,
        })
    }
}
