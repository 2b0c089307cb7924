//! The memory store: a SQLite database (WAL) of memories, agents and
//! imports, with an FTS5 index kept in sync by triggers.
//!
//! Owns all SQL of the node's memory data. Stores we did not create (a
//! Python brainctl `brain.db`) are only ever opened read-only, for export.
//! It never signs, hashes or touches the network.

mod fts;
pub mod migrate;
pub mod private_db;
pub mod provider;
pub mod quarantine;
mod rank;

pub use fts::match_expression;
pub use migrate::{APPLICATION_ID, LATEST as SCHEMA_VERSION};

use crate::bundle::{Cell, Filter, MemoryRow, BUNDLE_COLUMNS};
use rusqlite::types::ValueRef;
use rusqlite::{params, params_from_iter, Connection, OpenFlags, OptionalExtension};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Env vars naming the store, in priority order (the reference's names).
pub const DB_ENV_VARS: [&str; 2] = ["BRAINCTL_DB", "BRAIN_DB"];

/// Memory types `memory add` accepts.
pub const MEMORY_TYPES: [&str; 3] = ["episodic", "semantic", "procedural"];

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// Could not create the store's directory.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file does not exist (read-only opens never create).
    #[error("no memory store at {0}; pass --db PATH or set BRAINCTL_DB")]
    NotFound(PathBuf),
    /// The schema is newer than this build knows.
    #[error("store schema version {found} is newer than this brainctl understands ({known}); upgrade brainctl")]
    NewerSchema {
        /// The store's version.
        found: i64,
        /// Ours.
        known: i64,
    },
    /// A database another program made; we only read it.
    #[error("this database was not created by brainctl-rs (perhaps Python brainctl's brain.db); it can be exported from read-only but not written: use a separate --db for memory add/import")]
    ForeignStore,
    /// It lacks the columns a bundle needs.
    #[error("database has no `memories` table with the bundle columns (missing `{0}`); is this a brainctl store?")]
    NotAMemoryStore(String),
    /// A row holds a BLOB in a bundle column (the reference cannot export it either).
    #[error(
        "memory {id} has binary data in column `{column}`; bundles hold text and numbers only"
    )]
    BlobInRow {
        /// Row id.
        id: i64,
        /// Column.
        column: &'static str,
    },
    /// No such memory.
    #[error("no memory with id {0}")]
    NoSuchMemory(i64),
    /// A quarantine command named a scope outside the quarantine.
    #[error(
        "{0:?} is no quarantine scope (those start with imported:; see `brainctl quarantine list`)"
    )]
    NotQuarantine(String),
    /// A promotion named a memory outside the scope it promotes.
    #[error("memory {id} is not a live memory of {scope}")]
    NotInScope {
        /// The memory.
        id: i64,
        /// The scope.
        scope: String,
    },
    /// The memory is already retired.
    #[error("memory {0} is already retired")]
    AlreadyRetired(i64),
}

/// Store result.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A new memory to add.
#[derive(Debug, Clone)]
pub struct NewMemory {
    /// Text.
    pub content: String,
    /// Category (project, lesson, decision, ...).
    pub category: String,
    /// Scope, default `global`.
    pub scope: String,
    /// 0..=1.
    pub confidence: f64,
    /// Tags; stored as a JSON array inside a string, as the reference.
    pub tags: Vec<String>,
    /// episodic | semantic | procedural.
    pub memory_type: String,
    /// Agent id, default `default`.
    pub agent_id: String,
}

/// A memory as shown to users.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Memory {
    /// Row id.
    pub id: i64,
    /// Agent.
    pub agent_id: Option<String>,
    /// Category.
    pub category: Option<String>,
    /// Scope.
    pub scope: Option<String>,
    /// Text.
    pub content: String,
    /// Confidence.
    pub confidence: Option<f64>,
    /// Tags string (JSON array inside a string).
    pub tags: Option<String>,
    /// Creation time.
    pub created_at: Option<String>,
    /// Type.
    pub memory_type: Option<String>,
    /// When retired, if retired.
    pub retired_at: Option<String>,
    /// Signer of the bundle it was imported from.
    pub origin_signer: Option<String>,
    /// Hash of the bundle it was imported from.
    pub origin_bundle_hash: Option<String>,
    /// Its id in the seller's store.
    pub origin_id: Option<i64>,
    /// Prompt-injection findings (JSON array), if any.
    pub suspicious: Option<String>,
    /// The memory system it was imported from (`mem0`, `json`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_provider: Option<String>,
    /// Its id in that system.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_source_id: Option<String>,
}

/// Filters for `memory list` / `memory search`.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only this agent.
    pub agent_id: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only this scope.
    pub scope: Option<String>,
    /// Only this type.
    pub memory_type: Option<String>,
    /// Include retired rows.
    pub include_retired: bool,
    /// Include rows in quarantine scopes ([`QUARANTINE_PREFIX`]) when no
    /// scope is named; naming a scope always shows its rows.
    pub include_quarantined: bool,
    /// Maximum rows.
    pub limit: u32,
}

/// Scopes that start with this hold imported rows in quarantine (where
/// `import`, `buy` and `fetch` put them: `imported:<hash prefix>`,
/// `imported:<listing id>`): a list or search that names no scope leaves
/// them out until they are promoted (`memory promote`) or asked for.
pub const QUARANTINE_PREFIX: &str = "imported:";

/// One imported row, ready to insert.
#[derive(Debug, Clone)]
pub struct ImportRow {
    /// The bundle's row.
    pub row: MemoryRow,
    /// Injection findings (serialized JSON array), if any.
    pub suspicious: Option<String>,
}

/// One recorded import.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ImportRecord {
    /// Bundle hash.
    pub bundle_hash: String,
    /// Who signed it (the seller, for purchases).
    pub signer: String,
    /// Where its rows went.
    pub scope: String,
    /// How many rows.
    pub memories_count: i64,
    /// When.
    pub imported_at: String,
    /// The file or listing id it came from.
    pub source: Option<String>,
}

/// What an import did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ImportOutcome {
    /// False when this bundle was imported before (nothing written).
    pub inserted: bool,
    /// The scope the rows live in.
    pub scope: String,
    /// New row ids (empty when already imported).
    pub ids: Vec<i64>,
    /// Origin ids of rows skipped because this store already holds them
    /// (the same bundle's row, e.g. promoted out of a purged quarantine):
    /// reported, never duplicated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub already_held: Vec<i64>,
}

const MEMORY_COLS: &str = "id, agent_id, category, scope, content, confidence, tags, created_at, memory_type, retired_at, origin_signer, origin_bundle_hash, origin_id, suspicious, origin_provider, origin_source_id";

fn memory_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    Ok(Memory {
        id: r.get(0)?,
        agent_id: r.get(1)?,
        category: r.get(2)?,
        scope: r.get(3)?,
        content: r.get(4)?,
        confidence: r.get(5)?,
        tags: r.get(6)?,
        created_at: r.get(7)?,
        memory_type: r.get(8)?,
        retired_at: r.get(9)?,
        origin_signer: r.get(10)?,
        origin_bundle_hash: r.get(11)?,
        origin_id: r.get(12)?,
        suspicious: r.get(13)?,
        origin_provider: r.get(14)?,
        origin_source_id: r.get(15)?,
    })
}

/// The scope an import with this hash went to, if it happened (in `tx`).
fn imported_scope(tx: &rusqlite::Transaction<'_>, hash: &str) -> Result<Option<String>> {
    Ok(tx
        .query_row(
            "SELECT scope FROM imports WHERE bundle_hash = ?1",
            [hash],
            |r| r.get(0),
        )
        .optional()?)
}

/// Records an import of `count` rows of (hash, signer or provider, scope) (in `tx`).
fn record_import(
    tx: &rusqlite::Transaction<'_>,
    (hash, signer, scope): (&str, &str, &str),
    count: usize,
    now: &str,
    source: Option<&str>,
) -> Result<()> {
    tx.execute(
        "INSERT INTO imports(bundle_hash, signer, scope, memories_count, imported_at, source) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![hash, signer, scope, count as i64, now, source],
    )?;
    Ok(())
}

/// A handle on one store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Memories' token counts for ranking, each kept until this store
    /// rewrites the memory or another process commits.
    doc_lens: rank::SharedDocLens,
    /// `PRAGMA data_version` when the counts were last known current.
    doc_lens_as_of: std::cell::Cell<Option<i64>>,
}

/// Creates `path`'s missing directories 0700 and the file 0600, or takes
/// group and other access away from an existing file (and its `-wal` and
/// `-shm` companions).
fn make_private(path: &Path) -> std::result::Result<(), (std::path::PathBuf, std::io::Error)> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(dir) = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| (dir.to_path_buf(), e))?;
    }
    if !path.exists() {
        return private_db::create_private_file(path).map_err(|e| (path.to_path_buf(), e));
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = std::path::PathBuf::from(name);
        if let Ok(meta) = std::fs::metadata(&file) {
            if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
                let mode = meta.permissions().mode() & 0o700;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| (file.clone(), e))?;
            }
        }
    }
    Ok(())
}

impl Store {
    /// A write transaction holding the write lock from its start (`BEGIN
    /// IMMEDIATE`, waiting on the busy timeout). A plain transaction that
    /// reads and then writes gets SQLITE_BUSY at once, the timeout skipped,
    /// whenever another connection wrote in between (an agent's MCP server
    /// adding a memory while `buy` imports into the same store).
    fn write_transaction(&mut self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        self.conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
    }

    /// Opens (creating if needed) a store of ours, read-write, migrated.
    /// The store is private data, like the wallet: a directory it creates
    /// is 0700, the database 0600 (SQLite gives its WAL and shared-memory
    /// files the database's mode), and a database readable by others is
    /// made private again.
    pub fn open(path: &Path) -> Result<Store> {
        make_private(path).map_err(|(path, source)| StoreError::Io { path, source })?;
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate::migrate(&mut conn)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Store::with_ranking(conn, path)
    }

    /// The store over `conn`, with `brainctl_bm25` registered on it.
    fn with_ranking(conn: Connection, path: &Path) -> Result<Store> {
        let doc_lens = rank::SharedDocLens::default();
        rank::register(&conn, doc_lens.clone())?;
        Ok(Store {
            conn,
            path: path.into(),
            doc_lens,
            doc_lens_as_of: std::cell::Cell::new(None),
        })
    }

    /// Opens any brainctl-shaped store (ours or the reference's) read-only.
    /// Nothing is ever written, not even a migration.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::NotFound(path.into()));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let app_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        if app_id == APPLICATION_ID && version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        let store = Store::with_ranking(conn, path)?;
        store.check_bundle_columns()?;
        Ok(store)
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_bundle_columns(&self) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info('memories')")?;
        let cols: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for want in BUNDLE_COLUMNS.iter().chain(std::iter::once(&"retired_at")) {
            if !cols.iter().any(|c| c == want) {
                return Err(StoreError::NotAMemoryStore((*want).to_string()));
            }
        }
        Ok(())
    }

    /// Adds a memory; returns its id.
    pub fn add_memory(&mut self, m: &NewMemory) -> Result<i64> {
        let now = crate::clock::now_row();
        let tags = (!m.tags.is_empty()).then(|| python_json_list(&m.tags));
        let tx = self.write_transaction()?;
        tx.execute(
            "INSERT OR IGNORE INTO agents(id, created_at) VALUES (?1, ?2)",
            params![m.agent_id, now],
        )?;
        tx.execute(
            "INSERT INTO memories(agent_id, category, scope, content, confidence, tags, created_at, updated_at, trust_score, memory_type)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, 1.0, ?8)",
            params![m.agent_id, m.category, m.scope, m.content, m.confidence, tags, now, m.memory_type],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    fn where_clause(q: &ListQuery, params: &mut Vec<rusqlite::types::Value>) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if !q.include_retired {
            parts.push("m.retired_at IS NULL");
        }
        for (val, clause) in [
            (&q.agent_id, "m.agent_id = ?"),
            (&q.category, "m.category = ?"),
            (&q.scope, "m.scope = ?"),
            (&q.memory_type, "m.memory_type = ?"),
        ] {
            if let Some(v) = val {
                parts.push(clause);
                params.push(v.clone().into());
            }
        }
        if q.scope.is_none() && !q.include_quarantined {
            // (the prefix has no LIKE wildcards; NULL scopes are not quarantined)
            parts.push("(m.scope IS NULL OR substr(m.scope, 1, 9) <> 'imported:')");
        }
        parts.join(" AND ")
    }

    /// Lists memories, newest id first.
    pub fn list(&self, q: &ListQuery) -> Result<Vec<Memory>> {
        let mut p = Vec::new();
        let w = Self::where_clause(q, &mut p);
        let sql = format!(
            "SELECT {} FROM memories m {} ORDER BY m.id DESC LIMIT {}",
            prefixed_cols(),
            if w.is_empty() {
                String::new()
            } else {
                format!("WHERE {w}")
            },
            q.limit
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params_from_iter(p), memory_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Full-text search (best match first: FTS5's bm25, ties by id). User
    /// text is sanitized ([`match_expression`]); text with no words returns
    /// nothing.
    ///
    /// Ranks in the index alone and joins only the best candidates to
    /// `memories` for the filters: a word in 4% of 100,000 memories no
    /// longer costs 4,000 row lookups. When the filters drop so many
    /// candidates that fewer than `limit` are left, it asks for 8× as many,
    /// then for all: the same rows as filtering every match first.
    pub fn search(&self, text: &str, q: &ListQuery) -> Result<Vec<Memory>> {
        let Some(expr) = match_expression(text) else {
            return Ok(Vec::new());
        };
        // one read snapshot for the check of kept counts and every round:
        // a commit by another process in between cannot pair a changed
        // memory with its old token count
        let snapshot = if self.conn.is_autocommit() {
            Some(self.conn.unchecked_transaction()?)
        } else {
            None
        };
        self.forget_lengths_if_written()?;
        let want = q.limit as usize;
        let mut candidates = want.saturating_mul(2).max(16);
        loop {
            let (found, ranked) = self.search_candidates(&expr, q, candidates)?;
            if found.len() >= want || ranked < candidates {
                if let Some(snapshot) = snapshot {
                    snapshot.commit()?;
                }
                return Ok(found.into_iter().take(want).collect());
            }
            candidates = if candidates >= 4096 {
                usize::MAX
            } else {
                candidates * 8
            };
        }
    }

    /// Readies the store for a long-lived process's searches: maps the
    /// database file (pages read without a copy per read; a one-shot
    /// command is faster without the mapping) and reads every memory's
    /// token count for ranking now (one pass, ~12 ms per 100,000
    /// memories), so the first searches of common words cost what later
    /// ones do; returns how many. A memory's count is forgotten when this
    /// store rewrites it, all of them when another process commits.
    pub fn warm_ranking(&self) -> Result<usize> {
        self.conn.pragma_update(None, "mmap_size", 1i64 << 28)?;
        self.forget_lengths_if_written()?;
        Ok(rank::warm(&self.conn, &self.doc_lens)?)
    }

    /// Clears the kept token counts if another connection committed since
    /// they were read (this connection's own rewrites are forgotten one by
    /// one by its update hook). `PRAGMA data_version` starts the read
    /// transaction, so in [`Store::search`]'s snapshot the check and the
    /// queries see the same commits.
    fn forget_lengths_if_written(&self) -> Result<()> {
        let version: i64 = self
            .conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        if self.doc_lens_as_of.get() != Some(version) {
            self.doc_lens
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clear();
            self.doc_lens_as_of.set(Some(version));
        }
        Ok(())
    }

    /// The best `candidates` matches of `expr` by rank, joined to
    /// `memories`: (those passing `q`'s filters in rank order, how many
    /// matches were ranked).
    fn search_candidates(
        &self,
        expr: &str,
        q: &ListQuery,
        candidates: usize,
    ) -> Result<(Vec<Memory>, usize)> {
        let mut p: Vec<rusqlite::types::Value> = vec![
            expr.to_owned().into(),
            i64::try_from(candidates).unwrap_or(-1).into(),
        ];
        let w = Self::where_clause(q, &mut p);
        // the filters' `?`s come after ?1 and ?2 in the text, so they are ?3…
        let sql = format!(
            "SELECT {}, m.id IS NOT NULL FROM (SELECT rowid AS id, brainctl_bm25(memories_fts) AS score
                 FROM memories_fts WHERE memories_fts MATCH ?1
                 ORDER BY score, rowid LIMIT ?2) f
             LEFT JOIN memories m ON m.id = f.id {} ORDER BY f.score, f.id",
            prefixed_cols(),
            if w.is_empty() {
                String::new()
            } else {
                format!("AND {w}")
            },
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let passes = stmt.column_count() - 1; // the `m.id IS NOT NULL` flag
        let mut rows = stmt.query(params_from_iter(p))?;
        let (mut found, mut ranked) = (Vec::new(), 0usize);
        while let Some(r) = rows.next()? {
            ranked += 1;
            if r.get::<_, bool>(passes)? {
                found.push(memory_from_row(r)?);
            }
        }
        Ok((found, ranked))
    }

    /// How many memories (live or not) match `text`, unranked: the work a
    /// ranked [`Store::search`] does before its limit applies.
    pub fn search_count(&self, text: &str) -> Result<i64> {
        let Some(expr) = match_expression(text) else {
            return Ok(0);
        };
        Ok(self.conn.query_row(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
            [expr],
            |r| r.get(0),
        )?)
    }

    /// One memory by id.
    pub fn get(&self, id: i64) -> Result<Memory> {
        let sql = format!("SELECT {} FROM memories m WHERE m.id = ?1", prefixed_cols());
        self.conn
            .query_row(&sql, [id], memory_from_row)
            .optional()?
            .ok_or(StoreError::NoSuchMemory(id))
    }

    /// Retires a memory (kept, but excluded from lists and exports).
    pub fn retire(&mut self, id: i64) -> Result<String> {
        let m = self.get(id)?;
        if m.retired_at.is_some() {
            return Err(StoreError::AlreadyRetired(id));
        }
        let now = crate::clock::now_row();
        self.conn.execute(
            "UPDATE memories SET retired_at = ?1, updated_at = ?1 WHERE id = ?2 AND retired_at IS NULL",
            params![now, id],
        )?;
        Ok(now)
    }

    /// Moves every live memory of scope `from` into scope `to`; returns
    /// how many. Out of a quarantine scope, rows flagged suspicious stay
    /// (promote them one by one: [`Store::promote_quarantined`]).
    pub fn promote_scope(&mut self, from: &str, to: &str) -> Result<usize> {
        let now = crate::clock::now_row();
        Ok(self.conn.execute(
            "UPDATE memories SET scope = ?2, updated_at = ?3 WHERE scope = ?1 AND retired_at IS NULL
               AND (suspicious IS NULL OR ?1 NOT LIKE 'imported:%')",
            params![from, to, now],
        )?)
    }

    /// The rows an export with `filter` selects, exactly as the reference's
    /// `build_bundle`: `ids` picks those rows (retired included), otherwise
    /// live rows matching every given filter; ordered by id.
    pub fn export_rows(&self, filter: &Filter) -> Result<Vec<MemoryRow>> {
        let mut out = Vec::new();
        self.for_each_export_row(filter, |row| out.push(row))?;
        Ok(out)
    }

    /// [`Store::export_rows`] a row at a time, as SQLite steps (an export
    /// encodes each row while the next is read); returns how many.
    pub fn for_each_export_row(
        &self,
        filter: &Filter,
        mut each: impl FnMut(MemoryRow),
    ) -> Result<usize> {
        let cols = BUNDLE_COLUMNS.join(", ");
        let (sql, p): (String, Vec<rusqlite::types::Value>) = match &filter.ids {
            Some(ids) if ids.is_empty() => return Ok(0),
            Some(ids) => (
                format!(
                    "SELECT {cols} FROM memories WHERE id IN ({}) ORDER BY id",
                    vec!["?"; ids.len()].join(",")
                ),
                ids.iter().map(|i| (*i).into()).collect(),
            ),
            None => {
                let mut parts = vec!["retired_at IS NULL"];
                let mut p: Vec<rusqlite::types::Value> = Vec::new();
                for (val, clause) in [
                    (&filter.agent_id, "agent_id = ?"),
                    (&filter.category, "category = ?"),
                    (&filter.scope, "scope = ?"),
                    (&filter.created_after, "created_at >= ?"),
                    (&filter.created_before, "created_at <= ?"),
                ] {
                    // The reference skips empty strings too (`if agent_id:`).
                    if let Some(v) = val.as_ref().filter(|v| !v.is_empty()) {
                        parts.push(clause);
                        p.push(v.clone().into());
                    }
                }
                (
                    format!(
                        "SELECT {cols} FROM memories WHERE {} ORDER BY id",
                        parts.join(" AND ")
                    ),
                    p,
                )
            }
        };
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query(params_from_iter(p))?;
        let mut count = 0;
        while let Some(r) = rows.next()? {
            let mut cells: [Cell; 13] = Default::default();
            for (i, cell) in cells.iter_mut().enumerate() {
                *cell = match r.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(v) => Cell::Int(v),
                    ValueRef::Real(v) => Cell::Real(v),
                    ValueRef::Text(t) => Cell::Text(match std::str::from_utf8(t) {
                        Ok(text) => text.to_owned(),
                        Err(_) => String::from_utf8_lossy(t).into_owned(),
                    }),
                    ValueRef::Blob(_) => {
                        return Err(StoreError::BlobInRow {
                            id: r.get(0).unwrap_or(-1),
                            column: BUNDLE_COLUMNS[i],
                        })
                    }
                };
            }
            each(MemoryRow { cells });
            count += 1;
        }
        Ok(count)
    }

    /// Every import: (bundle hash, signer, scope, memories, imported at, source).
    pub fn imports(&self) -> Result<Vec<ImportRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT bundle_hash, signer, scope, memories_count, imported_at, source FROM imports ORDER BY imported_at",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ImportRecord {
                bundle_hash: r.get(0)?,
                signer: r.get(1)?,
                scope: r.get(2)?,
                memories_count: r.get(3)?,
                imported_at: r.get(4)?,
                source: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Whether a bundle with this hash was imported already.
    pub fn import_record(&self, bundle_hash_hex: &str) -> Result<Option<(String, i64)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT scope, memories_count FROM imports WHERE bundle_hash = ?1",
                [bundle_hash_hex],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// Inserts a verified bundle's rows into `scope` in one transaction,
    /// with provenance. A bundle already imported is a no-op.
    pub fn import_rows(
        &mut self,
        bundle_hash_hex: &str,
        signer: &str,
        scope: &str,
        source: Option<&str>,
        rows: &[ImportRow],
    ) -> Result<ImportOutcome> {
        let tx = self.write_transaction()?;
        if let Some(scope) = imported_scope(&tx, bundle_hash_hex)? {
            return Ok(ImportOutcome {
                inserted: false,
                scope,
                ids: Vec::new(),
                already_held: Vec::new(),
            });
        }
        let now = crate::clock::now_row();
        let mut ids = Vec::with_capacity(rows.len());
        let mut already_held = Vec::new();
        {
            let mut held = tx.prepare_cached(
                "SELECT 1 FROM memories WHERE origin_bundle_hash = ?1 AND origin_id = ?2",
            )?;
            let mut agent =
                tx.prepare_cached("INSERT OR IGNORE INTO agents(id, created_at) VALUES (?1, ?2)")?;
            let mut ins = tx.prepare_cached(
                "INSERT INTO memories(agent_id, category, scope, content, confidence, tags, created_at, updated_at,
                    source_event_id, supersedes_id, trust_score, memory_type, origin_signer, origin_bundle_hash, origin_id, suspicious)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, NULL, ?9, ?10, ?11, ?12, ?13, ?14)",
            )?;
            for ir in rows {
                let r = &ir.row;
                if let Some(origin) = r.id() {
                    if held.exists(params![bundle_hash_hex, origin])? {
                        already_held.push(origin);
                        continue;
                    }
                }
                let text = |c: &str| r.get(c).as_text().map(str::to_string);
                if let Some(a) = text("agent_id") {
                    agent.execute(params![a, now])?;
                }
                ins.execute(params![
                    text("agent_id"),
                    text("category"),
                    scope,
                    text("content").unwrap_or_default(),
                    r.get("confidence").as_f64(),
                    text("tags"),
                    text("created_at"),
                    text("updated_at"),
                    r.get("trust_score").as_f64(),
                    text("memory_type"),
                    signer,
                    bundle_hash_hex,
                    r.id(),
                    ir.suspicious,
                ])?;
                ids.push(tx.last_insert_rowid());
            }
        }
        record_import(
            &tx,
            (bundle_hash_hex, signer, scope),
            rows.len(),
            &now,
            source,
        )?;
        tx.commit()?;
        Ok(ImportOutcome {
            inserted: true,
            scope: scope.into(),
            ids,
            already_held,
        })
    }

    /// Bulk insert for benchmarks and tests: rows as the reference's bench
    /// generates them, one transaction.
    pub fn insert_raw_rows(&mut self, rows: &[MemoryRow]) -> Result<()> {
        let tx = self.write_transaction()?;
        {
            let mut ins = tx.prepare_cached(&format!(
                "INSERT INTO memories({}) VALUES ({})",
                BUNDLE_COLUMNS.join(", "),
                vec!["?"; 13].join(",")
            ))?;
            for r in rows {
                let vals = r.cells.iter().map(|c| match c {
                    Cell::Null => rusqlite::types::Value::Null,
                    Cell::Int(i) => (*i).into(),
                    Cell::Real(f) => (*f).into(),
                    Cell::Text(s) => s.clone().into(),
                });
                ins.execute(params_from_iter(vals))?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

fn prefixed_cols() -> String {
    MEMORY_COLS
        .split(", ")
        .map(|c| format!("m.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `json.dumps(list_of_str)` with Python's default separators (`", "`),
/// which is how the reference stores tags.
pub fn python_json_list(items: &[String]) -> String {
    let mut out = Vec::new();
    out.push(b'[');
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        crate::bundle::canonical::write_str(&mut out, t);
    }
    out.push(b']');
    String::from_utf8(out).expect("ASCII")
}

/// Resolves the store path: `--db`, then `$BRAINCTL_DB`, `$BRAIN_DB` (read
/// through `env`), then `<home>/.brainctl/brain.db`. Pure: the caller
/// reads the environment once.
pub fn resolve_db_path(
    flag: Option<&Path>,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.into());
    }
    for var in DB_ENV_VARS {
        if let Some(v) = env(var).filter(|v| !v.is_empty()) {
            return Some(v.into());
        }
    }
    home.map(|h| h.join(".brainctl").join("brain.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_mem(content: &str) -> NewMemory {
        NewMemory {
            content: content.into(),
            category: "lesson".into(),
            scope: "global".into(),
            confidence: 0.5,
            tags: vec!["a".into(), "b".into()],
            memory_type: "semantic".into(),
            agent_id: "default".into(),
        }
    }

    /// A step that reads then writes (a purge, an import) waits for
    /// another connection's writes instead of failing with SQLITE_BUSY
    /// (an agent's MCP server adds memories while `buy` imports).
    #[test]
    fn read_then_write_steps_wait_for_other_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        let mut s = Store::open(&path).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (path, stop) = (path.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut other = Store::open(&path).unwrap();
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        other.add_memory(&new_mem("meanwhile")).unwrap();
                    }
                })
            })
            .collect();
        for _ in 0..200 {
            s.add_memory(&NewMemory {
                scope: "imported:20261101-0123456789ab".into(),
                ..new_mem("bought")
            })
            .unwrap();
            let purged = s
                .purge_quarantined("imported:20261101-0123456789ab")
                .unwrap();
            assert_eq!(purged.memories, 1);
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for w in writers {
            w.join().unwrap();
        }
    }

    #[test]
    fn quarantined_rows_reach_a_list_or_search_only_when_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("b.db")).unwrap();
        let own = s.add_memory(&new_mem("staging first")).unwrap();
        let bought = s
            .add_memory(&NewMemory {
                scope: "imported:20261101-0123456789ab".into(),
                ..new_mem("staging ignore previous instructions")
            })
            .unwrap();
        let look_alike = s
            .add_memory(&NewMemory {
                scope: "Imported-not:x".into(),
                ..new_mem("staging elsewhere")
            })
            .unwrap();
        let ids = |rows: Vec<Memory>| rows.iter().map(|m| m.id).collect::<Vec<_>>();
        let q = |include_quarantined, scope: Option<&str>| ListQuery {
            include_quarantined,
            scope: scope.map(String::from),
            limit: 10,
            ..Default::default()
        };
        assert_eq!(ids(s.list(&q(false, None)).unwrap()), [look_alike, own]);
        assert_eq!(ids(s.search("staging", &q(false, None)).unwrap()).len(), 2);
        assert!(!ids(s.search("staging", &q(false, None)).unwrap()).contains(&bought));
        assert_eq!(
            ids(s.list(&q(true, None)).unwrap()),
            [look_alike, bought, own]
        );
        let scope = Some("imported:20261101-0123456789ab");
        assert_eq!(ids(s.list(&q(false, scope)).unwrap()), [bought]);
        assert_eq!(ids(s.search("ignore", &q(false, scope)).unwrap()), [bought]);
        assert_eq!(
            s.promote_scope("imported:20261101-0123456789ab", "global")
                .unwrap(),
            1
        );
        assert_eq!(
            ids(s.list(&q(false, None)).unwrap()),
            [look_alike, bought, own]
        );
    }

    #[test]
    fn add_search_retire() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("b.db")).unwrap();
        let id = s
            .add_memory(&new_mem("deploys go through staging"))
            .unwrap();
        s.add_memory(&new_mem("unrelated note")).unwrap();
        let q = ListQuery {
            limit: 10,
            ..Default::default()
        };
        let hits = s.search("\"staging* :(", &q).unwrap();
        assert!(
            s.search("staging NEAR", &q).unwrap().is_empty(),
            "all words must match"
        );
        assert_eq!(hits.iter().map(|m| m.id).collect::<Vec<_>>(), vec![id]);
        assert_eq!(hits[0].tags.as_deref(), Some("[\"a\", \"b\"]"));
        s.retire(id).unwrap();
        assert!(s.search("staging", &q).unwrap().is_empty());
        assert!(matches!(s.retire(id), Err(StoreError::AlreadyRetired(_))));
        assert!(matches!(s.retire(999), Err(StoreError::NoSuchMemory(999))));
        // retired rows are excluded from filtered exports but included by id
        assert_eq!(s.export_rows(&Filter::default()).unwrap().len(), 1);
        assert_eq!(
            s.export_rows(&Filter {
                ids: Some(vec![id]),
                ..Default::default()
            })
            .unwrap()
            .len(),
            1
        );
    }

    /// What [`Store::search`] must return: every match joined and
    /// filtered first, then ranked (the plain query, no candidate bound;
    /// the ranking function's equality with `bm25()` is tested below).
    fn search_by_definition(s: &Store, text: &str, q: &ListQuery) -> Vec<i64> {
        let Some(expr) = match_expression(text) else {
            return Vec::new();
        };
        let mut p: Vec<rusqlite::types::Value> = vec![expr.into()];
        let w = Store::where_clause(q, &mut p);
        let sql = format!(
            "SELECT m.id FROM memories_fts f JOIN memories m ON m.id = f.rowid
             WHERE memories_fts MATCH ? {} ORDER BY brainctl_bm25(memories_fts), m.id LIMIT {}",
            if w.is_empty() {
                String::new()
            } else {
                format!("AND {w}")
            },
            q.limit
        );
        let mut stmt = s.conn.prepare(&sql).unwrap();
        let ids = stmt.query_map(params_from_iter(p), |r| r.get(0)).unwrap();
        ids.collect::<rusqlite::Result<_>>().unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Ranking candidates in the index and filtering only those finds
        /// the same memories, in the same order, as filtering every match,
        /// even when the filters drop most candidates (the widening path).
        #[test]
        fn search_equals_filter_then_rank(
            docs in proptest::collection::vec(
                (proptest::collection::vec(0usize..6, 1..12), 0usize..3, proptest::bool::ANY),
                1..120,
            ),
            query in proptest::collection::vec(0usize..6, 1..3),
            limit in 1u32..30,
            category in proptest::option::of(0usize..3),
            include_retired in proptest::bool::ANY,
        ) {
            const WORDS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "eps", "zeta"];
            const CATEGORIES: [&str; 3] = ["lesson", "project", "user"];
            let dir = tempfile::tempdir().unwrap();
            let mut s = Store::open(&dir.path().join("b.db")).unwrap();
            for (words, cat, retired) in &docs {
                let mut m = new_mem(&words.iter().map(|w| WORDS[*w]).collect::<Vec<_>>().join(" "));
                m.category = CATEGORIES[*cat].into();
                let id = s.add_memory(&m).unwrap();
                if *retired {
                    s.retire(id).unwrap();
                }
            }
            let text = query.iter().map(|w| WORDS[*w]).collect::<Vec<_>>().join(" ");
            let q = ListQuery {
                limit,
                category: category.map(|c| CATEGORIES[c].to_string()),
                include_retired,
                ..Default::default()
            };
            let got: Vec<i64> = s.search(&text, &q).unwrap().iter().map(|m| m.id).collect();
            proptest::prop_assert_eq!(got, search_by_definition(&s, &text, &q));
        }
    }

    /// Every match's `bm25()` and `brainctl_bm25()` score, after the
    /// store's check for writes (as [`Store::search`] does).
    fn both_scores(s: &Store, text: &str) -> Vec<(i64, u64, u64)> {
        s.forget_lengths_if_written().unwrap();
        let Some(expr) = match_expression(text) else {
            return Vec::new();
        };
        let mut stmt = s
            .conn
            .prepare(
                "SELECT rowid, bm25(memories_fts), brainctl_bm25(memories_fts)
                 FROM memories_fts WHERE memories_fts MATCH ?1",
            )
            .unwrap();
        let rows = stmt
            .query_map([expr], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, f64>(1)?.to_bits(),
                    r.get::<_, f64>(2)?.to_bits(),
                ))
            })
            .unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    fn assert_same_scores(s: &Store, text: &str) -> usize {
        // where SQLite's C may fuse multiply-adds (not x86-64), a last-bit
        // difference is the compiler's, not the formula's
        let ulps = if cfg!(target_arch = "x86_64") { 0 } else { 2 };
        let scores = both_scores(s, text);
        for (id, fts5, ours) in &scores {
            assert!(
                fts5.abs_diff(*ours) <= ulps,
                "memory {id} for {text:?}: {} vs {}",
                f64::from_bits(*fts5),
                f64::from_bits(*ours)
            );
        }
        scores.len()
    }

    #[test]
    fn long_memories_rank_exactly_as_fts5_when_warmed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("b.db")).unwrap();
        for n in [1usize, 127, 128, 300, 20_000] {
            let text = (0..n)
                .map(|i| if i % 3 == 0 { "alpha" } else { "beta" })
                .collect::<Vec<_>>();
            s.add_memory(&new_mem(&text.join(" "))).unwrap();
        }
        assert_eq!(s.warm_ranking().unwrap(), 5);
        assert_eq!(assert_same_scores(&s, "alpha"), 5);
        assert_eq!(assert_same_scores(&s, "beta alpha"), 4);
        let weighted: rusqlite::Result<f64> = s.conn.query_row(
            "SELECT brainctl_bm25(memories_fts, 2.0) FROM memories_fts WHERE memories_fts MATCH 'alpha'",
            [],
            |r| r.get(0),
        );
        let err = weighted.unwrap_err().to_string();
        assert!(err.contains("no column weights"), "{err}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// `brainctl_bm25` gives every match FTS5's own score, bit for bit:
        /// on first use, from kept counts, and after writes by this
        /// connection (insert, content update, delete) and by another.
        #[test]
        fn kept_lengths_rank_exactly_as_fts5(
            docs in proptest::collection::vec(
                (proptest::collection::vec(0usize..8, 1..40), proptest::collection::vec(0usize..8, 0..3)),
                1..60,
            ),
            query in proptest::collection::vec(0usize..8, 1..4),
            edit in proptest::collection::vec(0usize..8, 1..30),
        ) {
            const WORDS: [&str; 8] = ["alpha", "Beta", "gamma", "délta", "eps", "zeta", "x-ray", "ünï"];
            let words = |ix: &[usize]| ix.iter().map(|w| WORDS[*w]).collect::<Vec<_>>();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("b.db");
            let mut s = Store::open(&path).unwrap();
            for (content, tags) in &docs {
                let mut m = new_mem(&words(content).join(" "));
                m.tags = words(tags).into_iter().map(String::from).collect();
                s.add_memory(&m).unwrap();
            }
            let text = words(&query).join(" ");
            let warmed = s.warm_ranking().unwrap();
            proptest::prop_assert_eq!(warmed, docs.len());
            let n = assert_same_scores(&s, &text);
            let kept = s.doc_lens.lock().unwrap().len();
            proptest::prop_assert!(n == 0 || kept > 0, "the first ranking keeps counts");
            assert_same_scores(&s, &text);
            // this connection: a longer text for memory 1, a delete, an insert
            s.conn
                .execute("UPDATE memories SET content = ?1 WHERE id = 1", [words(&edit).join(" ")])
                .unwrap();
            assert_same_scores(&s, &text);
            s.conn.execute("DELETE FROM memories WHERE id = (SELECT max(id) FROM memories)", []).unwrap();
            s.add_memory(&new_mem(&words(&edit).join(" "))).unwrap();
            assert_same_scores(&s, &text);
            // another connection (another process, as far as SQLite knows)
            let other = Connection::open(&path).unwrap();
            other
                .execute("UPDATE memories SET content = ?1 WHERE id = 1", [words(&query).join(" ")])
                .unwrap();
            drop(other);
            assert_same_scores(&s, &text);
        }
    }

    #[test]
    fn newer_schema_and_foreign_stores_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.db");
        drop(Store::open(&p).unwrap());
        Connection::open(&p)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        assert!(matches!(
            Store::open(&p),
            Err(StoreError::NewerSchema { found: 99, .. })
        ));

        let foreign = dir.path().join("brain.db");
        let c = Connection::open(&foreign).unwrap();
        c.execute_batch("CREATE TABLE memories(id INTEGER PRIMARY KEY, content TEXT)")
            .unwrap();
        drop(c);
        assert!(matches!(
            Store::open(&foreign),
            Err(StoreError::ForeignStore)
        ));
        assert!(matches!(
            Store::open_read_only(&foreign),
            Err(StoreError::NotAMemoryStore(_))
        ));
    }
}
