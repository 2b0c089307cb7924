//! Writing verified memories into the agent's own store: a Python
//! brainctl 2.8 `brain.db`, row for row as the reference's `memory add`
//! writes them (see `docs/reference-brain-db.md`, read from its source):
//! the `marketplace-buyer` agent, a quarantine scope (`imported:<...>`),
//! `memory_type` `episodic`, tags as a JSON list, the FTS index kept by
//! the database's own triggers, and an `access_log` write row.
//!
//! One transaction (`BEGIN IMMEDIATE`, so a Python process holding the
//! database in WAL mode is waited for, up to 10 s, never corrupted);
//! idempotent (a memory already in the scope with the same content is not
//! added again); nothing but the new rows, the buyer agent and their log
//! rows is written. A database that is not recognisably brainctl 2.8's
//! (missing tables or columns, a schema version it never sets) is refused
//! before anything is written.
//!
//! Final values go in the INSERT itself: the reference's FTS update
//! triggers fire in the wrong order, so any later UPDATE of an indexed
//! row would drop it from its search index.
//!
//! Owns the reference schema's rules for an insert; verification is the
//! caller's (`import`), and it never reads or changes other rows.

use crate::bundle::MemoryRow;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

/// The agent bought memories are written as (the reference's choice).
pub const BUYER_AGENT: &str = "marketplace-buyer";

/// Tables and `memories` columns the insert relies on.
const TABLES: &[&str] = &["agents", "memories", "memories_fts", "access_log"];
const COLUMNS: &[&str] = &[
    "agent_id",
    "category",
    "scope",
    "content",
    "confidence",
    "tags",
    "memory_type",
    "alpha",
    "beta",
    "write_tier",
    "indexed",
    "created_at",
    "updated_at",
    "retired_at",
    "encoding_task_context",
    "encoding_context_hash",
];
/// The newest reference migration this writer knows (2.8.0's snapshot).
const NEWEST_KNOWN_MIGRATION: i64 = 75;

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum BrainDbError {
    /// No database there.
    #[error("{path}: no such brain.db (create it with the reference's `brainctl init`, or pass the agent's BRAINCTL_DB path)")]
    Missing {
        /// The path given.
        path: String,
    },
    /// Not the reference's schema.
    #[error("{path}: not a brainctl 2.8 brain.db: {missing}; pass the agent's brain.db (BRAINCTL_DB, or $BRAINCTL_HOME/db/brain.db)")]
    NotBrainctl {
        /// The path given.
        path: String,
        /// What is missing.
        missing: String,
    },
    /// A schema newer than the one this writer follows.
    #[error("{path}: schema version {found} is newer than brainctl 2.8's ({NEWEST_KNOWN_MIGRATION}); nothing written (upgrade brainctl-rs)")]
    Newer {
        /// The path given.
        path: String,
        /// The version found.
        found: i64,
    },
    /// A row of the bundle has no content.
    #[error("memory #{index} of the bundle has no text content; nothing written")]
    NoContent {
        /// Its position in the bundle.
        index: usize,
    },
    /// SQLite (the transaction rolled back).
    #[error("brain.db: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// What an import into brain.db did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BrainDbReport {
    /// The database written.
    pub path: String,
    /// The scope the rows are in.
    pub scope: String,
    /// The agent they are written as.
    pub agent: &'static str,
    /// Ids of the rows added.
    pub inserted: Vec<i64>,
    /// Memories of the bundle already in the scope (not added again).
    pub already_present: usize,
}

/// `YYYY-MM-DDTHH:MM:SSZ`, the reference's timestamp.
fn now_z() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The reference's `encoding_context_hash` for an agent with no task:
/// the first 16 hex digits of SHA-256(`:<agent>:`).
pub fn context_hash(agent: &str) -> String {
    hex::encode(Sha256::digest(format!(":{agent}:").as_bytes()))[..16].to_string()
}

/// Tags as the reference stores them: a JSON list of strings, in
/// `json.dumps`'s layout. A bundle
/// carries them as a JSON list in a string, or comma-separated.
fn tags_json(raw: Option<&str>) -> Option<String> {
    let raw = raw?.trim();
    if raw.is_empty() {
        return None;
    }
    let list: Vec<String> = match serde_json::from_str::<Vec<String>>(raw) {
        Ok(list) => list,
        Err(_) => raw
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
    };
    // as Python's json.dumps(list) writes it: ", " between items, ASCII
    let mut out = Vec::from(&b"["[..]);
    for (i, t) in list.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        crate::bundle::canonical::write_str(&mut out, t);
    }
    out.push(b']');
    Some(String::from_utf8(out).expect("ASCII"))
}

fn check_schema(conn: &Connection, path: &str) -> Result<(), BrainDbError> {
    let not = |missing: String| BrainDbError::NotBrainctl {
        path: path.to_string(),
        missing,
    };
    for t in TABLES {
        let found: Option<String> = conn
            .query_row(
                "SELECT name FROM sqlite_master WHERE name = ?1 AND type IN ('table', 'view')",
                [t],
                |r| r.get(0),
            )
            .optional()?;
        if found.is_none() {
            return Err(not(format!("no `{t}` table")));
        }
    }
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('memories')")?;
    let have: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if let Some(c) = COLUMNS.iter().find(|c| !have.iter().any(|h| h == *c)) {
        return Err(not(format!("`memories` has no `{c}` column")));
    }
    let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let migrated: Option<i64> = conn
        .query_row("SELECT max(version) FROM schema_versions", [], |r| r.get(0))
        .optional()
        .unwrap_or(None)
        .flatten();
    let found = user_version.max(migrated.unwrap_or(0));
    if found > NEWEST_KNOWN_MIGRATION {
        return Err(BrainDbError::Newer {
            path: path.to_string(),
            found,
        });
    }
    Ok(())
}

/// Writes `memories` into the brain.db at `path`, in `scope`, as the
/// reference's buyer agent. Verify the bundle before calling this.
pub fn import_into(
    path: &Path,
    memories: &[MemoryRow],
    scope: &str,
) -> Result<BrainDbReport, BrainDbError> {
    let shown = path.display().to_string();
    if !path.is_file() {
        return Err(BrainDbError::Missing { path: shown });
    }
    let rows: Vec<(String, String, f64, Option<String>)> = memories
        .iter()
        .enumerate()
        .map(|(index, m)| {
            let content = m
                .get("content")
                .as_text()
                .filter(|c| !c.trim().is_empty())
                .ok_or(BrainDbError::NoContent { index })?;
            let category = m.get("category").as_text().unwrap_or("lesson");
            let confidence = m.get("confidence").as_f64().unwrap_or(1.0);
            Ok((
                content.to_string(),
                category.to_string(),
                confidence,
                tags_json(m.get("tags").as_text()),
            ))
        })
        .collect::<Result<_, BrainDbError>>()?;
    let mut conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    check_schema(&conn, &shown)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "INSERT OR IGNORE INTO agents (id, display_name, agent_type, status) VALUES (?1, ?1, 'cli', 'active')",
        [BUYER_AGENT],
    )?;
    let (now, context, hash) = (
        now_z(),
        serde_json::json!({ "agent_id": BUYER_AGENT }).to_string(),
        context_hash(BUYER_AGENT),
    );
    let mut inserted = Vec::new();
    let mut already_present = 0;
    {
        let mut present = tx.prepare(
            "SELECT 1 FROM memories WHERE agent_id = ?1 AND scope = ?2 AND content = ?3 AND retired_at IS NULL",
        )?;
        let mut insert = tx.prepare(
            "INSERT INTO memories (agent_id, category, scope, content, confidence, tags, \
             memory_type, alpha, beta, write_tier, indexed, created_at, updated_at, \
             encoding_task_context, encoding_context_hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'episodic', 1.0, 1.0, 'full', 1, ?7, ?7, ?8, ?9)",
        )?;
        let mut log = tx.prepare(
            "INSERT INTO access_log (agent_id, action, target_table, target_id) VALUES (?1, 'write', 'memories', ?2)",
        )?;
        for (content, category, confidence, tags) in &rows {
            if present.exists(params![BUYER_AGENT, scope, content])? {
                already_present += 1;
                continue;
            }
            insert.execute(params![
                BUYER_AGENT,
                category,
                scope,
                content,
                confidence,
                tags,
                now,
                context,
                hash
            ])?;
            let id = tx.last_insert_rowid();
            log.execute(params![BUYER_AGENT, id])?;
            inserted.push(id);
        }
    }
    tx.commit()?;
    Ok(BrainDbReport {
        path: shown,
        scope: scope.to_string(),
        agent: BUYER_AGENT,
        inserted,
        already_present,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_hash_is_the_references() {
        // computed by the reference for agent `marketplace-buyer`
        assert_eq!(context_hash(BUYER_AGENT), "87cc7c37afac37c2");
    }

    #[test]
    fn tags_become_a_json_list() {
        assert_eq!(
            tags_json(Some(r#"["rust","safety"]"#)).unwrap(),
            r#"["rust", "safety"]"#
        );
        assert_eq!(tags_json(Some("a, b,,c")).unwrap(), r#"["a", "b", "c"]"#);
        assert_eq!(tags_json(Some("ü")).unwrap(), r#"["\u00fc"]"#);
        assert_eq!(tags_json(Some("  ")), None);
        assert_eq!(tags_json(None), None);
    }

    #[test]
    fn a_foreign_database_is_refused_before_any_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT);")
            .unwrap();
        drop(conn);
        let err = import_into(&path, &[], "imported:x").unwrap_err();
        assert!(matches!(err, BrainDbError::NotBrainctl { .. }), "{err}");
        assert!(err.to_string().contains("agents"), "{err}");
        let err = import_into(&dir.path().join("none.db"), &[], "s").unwrap_err();
        assert!(matches!(err, BrainDbError::Missing { .. }), "{err}");
    }
}
