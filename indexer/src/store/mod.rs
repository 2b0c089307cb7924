//! Durable storage behind one narrow trait, [`LogStore`]: the log of
//! recorded transactions (provisional or final), the manifest cache,
//! per-address checkpoints, and auth nonces/sessions. SQLite (WAL) is the
//! embedded default ([`SqliteStore`], here); [`postgres::PgStore`] keeps
//! the same in PostgreSQL so a writer and read replicas share one log.
//!
//! Owns persistence only: it never interprets a record.

pub mod pg_conn;
pub mod postgres;

pub use postgres::PgStore;

use crate::record::{Position, TxRecord};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/indexer/0001_init.sql"),
    include_str!("../../../migrations/indexer/0002_nonce_pubkey.sql"),
    include_str!("../../../migrations/indexer/0003_change_numbers.sql"),
    include_str!("../../../migrations/indexer/0004_carried_manifests.sql"),
    include_str!("../../../migrations/indexer/0005_txs_moved.sql"),
];
/// `PRAGMA application_id` of indexer databases ("BRNI").
pub const APPLICATION_ID: i64 = 0x4252_4e49;

/// The manifest bodies `records` carry, once per id, as text.
pub(crate) fn carried(records: &[TxRecord]) -> std::collections::BTreeMap<&str, String> {
    records
        .iter()
        .flat_map(|r| &r.manifests)
        .map(|(id, body)| (id.as_str(), body.to_string()))
        .collect()
}

/// Storage errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite.
    #[error("indexer database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored record does not decode.
    #[error("stored record {signature} is corrupt: {source}")]
    Corrupt {
        /// Which.
        signature: String,
        /// Why.
        source: serde_json::Error,
    },
    /// Not an indexer database, or a newer one.
    #[error("{0}")]
    Foreign(String),
    /// PostgreSQL.
    #[error("indexer database (postgres): {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The writer's lock file cannot be opened or locked.
    #[error("indexer writer lock {path}: {source}")]
    Lock {
        /// The lock file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store's connection task is gone.
    #[error("indexer database connection closed")]
    Closed,
}

/// The log's changes after a change number ([`LogStore::changes_since`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogChanges {
    /// Records stored or updated since, in chain order.
    pub records: Vec<TxRecord>,
    /// Signatures removed since and not stored again.
    pub removed: Vec<String>,
    /// The newest change number read (the next call's `seq`).
    pub seq: u64,
    /// The signatures among `records` stored only where they are now
    /// (never at another position, and not removed since and stored
    /// again): a fold can have folded such a record only there, so one
    /// after the fold's head was not folded and needs no lookup.
    pub in_place: std::collections::HashSet<String>,
}

impl LogChanges {
    /// The changes of `rows` (each record with whether it was ever stored
    /// at another position) and `listed` (removals, oldest first), read
    /// up to change number `seq`.
    fn of(rows: Vec<(TxRecord, bool)>, listed: Vec<String>, seq: u64) -> LogChanges {
        let in_place = {
            let removed: std::collections::HashSet<&str> =
                listed.iter().map(String::as_str).collect();
            rows.iter()
                .filter(|(r, moved)| !moved && !removed.contains(r.signature()))
                .map(|(r, _)| r.signature().to_string())
                .collect()
        };
        let records: Vec<TxRecord> = rows.into_iter().map(|(r, _)| r).collect();
        let stored: std::collections::HashSet<&str> =
            records.iter().map(|r| r.signature()).collect();
        let removed = unstored_removals(listed, &stored);
        LogChanges {
            records,
            removed,
            seq,
            in_place,
        }
    }
}

/// A session: who, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Wallet.
    pub pubkey: String,
    /// Expiry (unix seconds).
    pub expires_at: i64,
}

/// A pending challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nonce {
    /// Wallet it was issued to.
    pub pubkey: String,
    /// The exact message to sign.
    pub message: String,
    /// Expiry (unix seconds).
    pub expires_at: i64,
}

/// What [`LogStore::put_nonce`] did. A full store refuses the new nonce;
/// it never evicts a pending one (that would let anyone who asks for
/// challenges in a victim's name cancel the victim's sign-in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoncePut {
    /// Stored.
    Stored,
    /// The pubkey already has [`MAX_NONCES_PER_KEY`] pending: nothing stored.
    KeyFull {
        /// When the oldest of them expires (unix seconds).
        oldest_expires_at: i64,
    },
    /// [`MAX_NONCES`] are pending in all: nothing stored.
    StoreFull,
}

/// What the indexer persists.
pub trait LogStore: Send {
    /// Inserts or updates records; those at or below `final_slot` are
    /// final. (A record stored again at another position, a fork having
    /// moved it, is the engine's to notice: the folded state knows where
    /// each one was.)
    fn put_records(&mut self, records: &[TxRecord], final_slot: u64) -> Result<(), StoreError>;
    /// Every record, in chain order.
    fn records(&self) -> Result<Vec<TxRecord>, StoreError>;
    /// At most `limit` records after `after` (strictly; `None`: from the
    /// start), in chain order: a refold reads the log a page at a time
    /// (positions are unique: a slot and an index in its block).
    fn records_page(
        &self,
        after: Option<Position>,
        limit: usize,
    ) -> Result<Vec<TxRecord>, StoreError>;
    /// At most `limit` of the manifest bodies the log's records carried
    /// (kept by [`LogStore::put_records`], never taken back: an id names
    /// one body), `(id, body)` in id order (bytewise) after `after`.
    fn carried_manifests(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StoreError>;
    /// The bodies among `ids` that the log's records carried (a memo may
    /// name a body another record carried), decoded: what a fold of part
    /// of the log needs to see every body the whole-log fold sees.
    fn carried_bodies(
        &self,
        ids: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<(String, Arc<Value>)>, StoreError>;
    /// How many records come after `after` (`None`: all of them).
    fn count_after(&self, after: Option<Position>) -> Result<usize, StoreError>;
    /// What changed in the log after change number `seq` (a read
    /// replica's catch-up), or `None` where the store keeps no change
    /// numbers or no longer keeps the removals after `seq` (a rebuild
    /// cleared the log since, or they were pruned: [`REMOVALS_KEPT`]);
    /// then the replica refolds.
    fn changes_since(&self, seq: u64) -> Result<Option<LogChanges>, StoreError> {
        let _ = seq;
        Ok(None)
    }
    /// The newest change number committed (`None` where the store keeps
    /// none): read before a fold, every change after it is in
    /// [`LogStore::changes_since`].
    fn log_seq(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }
    /// Signatures and slots of provisional records.
    fn provisional(&self) -> Result<Vec<(String, u64)>, StoreError>;
    /// Marks provisional records at or below `final_slot` final.
    fn finalize_through(&mut self, final_slot: u64) -> Result<usize, StoreError>;
    /// Removes records (transactions that vanished before finality),
    /// logging each with a change number; the removal log keeps the
    /// newest [`REMOVALS_KEPT`].
    fn remove(&mut self, signatures: &[String]) -> Result<usize, StoreError>;
    /// Drops every record and checkpoint (a rebuild) and the removal log
    /// (a replica from before the clear refolds); manifests, auth and
    /// metadata are kept.
    fn clear_log(&mut self) -> Result<(), StoreError>;
    /// Keeps only the newest `keep` entries of the removal log (a replica
    /// older than the oldest kept refolds). [`LogStore::remove`] keeps
    /// [`REMOVALS_KEPT`]; stores without change numbers keep none.
    fn prune_removals(&mut self, keep: u64) -> Result<(), StoreError> {
        let _ = keep;
        Ok(())
    }
    /// Reads the indexes a stored batch looks its records up by back into
    /// the server's cache, after a long read of the whole log (a rebuild)
    /// pushed them out: else the batches stored next read them a page a
    /// record. How many blocks it read; 0 where there is no such cache
    /// (SQLite) or no way to fill it (PostgreSQL without `pg_prewarm`).
    fn warm_lookups(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    /// Whether no record is stored.
    fn is_empty(&self) -> Result<bool, StoreError>;
    /// Whether a record is stored.
    fn has(&self, signature: &str) -> Result<bool, StoreError>;
    /// The checkpoint of a watched address.
    fn checkpoint(&self, address: &str) -> Result<Option<(String, u64)>, StoreError>;
    /// Moves an address's checkpoint forward (never back).
    fn set_checkpoint(
        &mut self,
        address: &str,
        signature: &str,
        slot: u64,
    ) -> Result<(), StoreError>;
    /// A cached manifest body.
    fn manifest(&self, id: &str) -> Result<Option<Value>, StoreError>;
    /// Caches a manifest body.
    fn put_manifest(&mut self, id: &str, body: &Value) -> Result<(), StoreError>;
    /// A metadata value.
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// Sets a metadata value.
    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError>;
    /// Stores a challenge nonce, keeping storage bounded: at most
    /// [`MAX_NONCES_PER_KEY`] pending per pubkey and [`MAX_NONCES`] in
    /// all. Over a bound the new nonce is refused ([`NoncePut`]); a
    /// pending one is never dropped. Counts what is stored: purge expired
    /// nonces first ([`LogStore::purge_auth`]).
    fn put_nonce(&mut self, nonce: &str, n: &Nonce) -> Result<NoncePut, StoreError>;
    /// Takes a nonce out (single use: a second take finds nothing).
    fn take_nonce(&mut self, nonce: &str) -> Result<Option<Nonce>, StoreError>;
    /// Stores a session under the SHA-256 of its token.
    fn put_session(&mut self, token_sha256: &str, s: &Session) -> Result<(), StoreError>;
    /// The session for a token hash.
    fn session(&self, token_sha256: &str) -> Result<Option<Session>, StoreError>;
    /// Drops expired nonces and sessions.
    fn purge_auth(&mut self, now: i64) -> Result<(), StoreError>;
}

/// Outstanding challenge nonces kept per pubkey.
pub const MAX_NONCES_PER_KEY: usize = 8;
/// Outstanding challenge nonces kept in all.
pub const MAX_NONCES: usize = 100_000;

/// The verdict on one more nonce for a key holding `mine` pending (the
/// oldest expiring at `oldest`), with `all` pending in the store.
fn nonce_bounds(mine: i64, oldest: Option<i64>, all: i64) -> NoncePut {
    if mine >= MAX_NONCES_PER_KEY as i64 {
        NoncePut::KeyFull {
            oldest_expires_at: oldest.unwrap_or_default(),
        }
    } else if all >= MAX_NONCES as i64 {
        NoncePut::StoreFull
    } else {
        NoncePut::Stored
    }
}

/// The SQLite store.
pub struct SqliteStore {
    conn: Connection,
}

impl SqliteStore {
    /// Decodes the (signature, record) rows `sql` selects.
    fn read_records(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<TxRecord>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let rows = stmt.query_map(params, |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|row| {
            let (sig, json) = row?;
            decode(sig, &json)
        })
        .collect()
    }

    /// Opens (creating) the database at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(path)?;
        Self::init(conn)
    }

    /// An in-memory database (tests, replays without `--db`).
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<SqliteStore, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let app_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if app_id != APPLICATION_ID && tables > 0 {
            return Err(StoreError::Foreign(
                "not a brainctl indexer database (pass a new --db path)".into(),
            ));
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StoreError::Foreign(format!(
                "indexer database schema v{version} is newer than this build (v{}); upgrade brainctl-indexer",
                MIGRATIONS.len()
            )));
        }
        node::store::migrate::apply(&mut conn, MIGRATIONS, Some(APPLICATION_ID))?;
        Ok(SqliteStore { conn })
    }
}

/// The (slot, idx) a query compares `(slot, idx) > key` against for the
/// records after `after` (`None`: before every record).
fn after_key(after: Option<Position>) -> (i64, i64) {
    after.map_or((-1, -1), |(slot, idx)| (slot as i64, idx as i64))
}

/// Removals a store logs for replicas to catch up on (vanished
/// provisional records are rare: this is days of a busy market's forks);
/// a replica further behind refolds.
pub const REMOVALS_KEPT: u64 = 100_000;

/// The meta key of the change number after which the removal log is
/// complete (every removal with a larger number is in it).
pub const REMOVALS_KEPT_AFTER: &str = "removals_kept_after";

/// SQLite: a meta number (0 when unset).
fn meta_number(conn: &Connection, key: &str) -> Result<i64, StoreError> {
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()?;
    Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// SQLite: sets a meta number.
fn set_meta_number(conn: &Connection, key: &str, value: i64) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, value.to_string()],
    )?;
    Ok(())
}

/// SQLite: drops all but the newest `keep` removals, moving the mark.
fn prune_removals_sqlite(conn: &Connection, keep: u64) -> Result<(), StoreError> {
    let cut: Option<i64> = conn
        .query_row(
            "SELECT seq FROM txs_removed ORDER BY seq DESC LIMIT 1 OFFSET ?1",
            [keep as i64],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(cut) = cut {
        conn.execute("DELETE FROM txs_removed WHERE seq <= ?1", [cut])?;
        let after = meta_number(conn, REMOVALS_KEPT_AFTER)?.max(cut);
        set_meta_number(conn, REMOVALS_KEPT_AFTER, after)?;
    }
    Ok(())
}

/// The last change number taken (meta `log_seq`).
fn taken_seq(conn: &Connection) -> Result<i64, StoreError> {
    meta_number(conn, "log_seq")
}

fn set_taken_seq(conn: &Connection, seq: i64) -> Result<(), StoreError> {
    set_meta_number(conn, "log_seq", seq)
}

/// The removals among `listed` (oldest first) whose record is not stored
/// again, each once: what a replica drops when it catches up.
fn unstored_removals(
    listed: impl IntoIterator<Item = String>,
    stored: &std::collections::HashSet<&str>,
) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    listed
        .into_iter()
        .filter(|sig| !stored.contains(sig.as_str()) && seen.insert(sig.clone()))
        .collect()
}

fn decode(signature: String, json: &str) -> Result<TxRecord, StoreError> {
    serde_json::from_str(json).map_err(|source| StoreError::Corrupt { signature, source })
}

/// A carried manifest body back from its stored text.
pub(crate) fn decode_body(id: &str, body: &str) -> Result<(String, Arc<Value>), StoreError> {
    let value = serde_json::from_str(body).map_err(|source| StoreError::Corrupt {
        signature: id.to_string(),
        source,
    })?;
    Ok((id.to_string(), Arc::new(value)))
}

impl LogStore for SqliteStore {
    fn put_records(&mut self, records: &[TxRecord], final_slot: u64) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut seq = taken_seq(&tx)?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO txs (signature, slot, idx, final, record, seq, moved)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)
                 ON CONFLICT(signature) DO UPDATE SET slot = excluded.slot, idx = excluded.idx,
                   final = max(final, excluded.final), record = excluded.record, seq = excluded.seq,
                   moved = moved OR slot <> excluded.slot OR idx <> excluded.idx",
            )?;
            for r in records {
                let json = serde_json::to_string(r).expect("records serialize");
                seq += 1;
                stmt.execute(params![
                    r.tx.signature,
                    r.tx.slot as i64,
                    r.index,
                    (r.tx.slot <= final_slot) as i64,
                    json,
                    seq
                ])?;
            }
            let mut stmt = tx.prepare_cached(
                "INSERT OR IGNORE INTO carried_manifests (id, body) VALUES (?1, ?2)",
            )?;
            for (id, body) in carried(records) {
                stmt.execute(params![id, body])?;
            }
        }
        set_taken_seq(&tx, seq)?;
        tx.commit()?;
        Ok(())
    }

    fn carried_manifests(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, body FROM carried_manifests WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![after.unwrap_or(""), limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn carried_bodies(
        &self,
        ids: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<(String, Arc<Value>)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT body FROM carried_manifests WHERE id = ?1")?;
        let mut out = Vec::new();
        for id in ids {
            let body: Option<String> = stmt.query_row([id], |r| r.get(0)).optional()?;
            if let Some(body) = body {
                out.push(decode_body(id, &body)?);
            }
        }
        Ok(out)
    }

    fn clear_log(&mut self) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let seq = taken_seq(&tx)? + 1;
        // no removal listed per record: a replica from before refolds
        tx.execute_batch("DELETE FROM txs; DELETE FROM checkpoints; DELETE FROM txs_removed;")?;
        set_meta_number(&tx, REMOVALS_KEPT_AFTER, seq)?;
        set_taken_seq(&tx, seq)?;
        tx.commit()?;
        Ok(())
    }

    fn log_seq(&self) -> Result<Option<u64>, StoreError> {
        Ok(Some(taken_seq(&self.conn)? as u64))
    }

    fn changes_since(&self, seq: u64) -> Result<Option<LogChanges>, StoreError> {
        // one read transaction: both tables as of one commit
        let tx = self.conn.unchecked_transaction()?;
        if (seq as i64) < meta_number(&tx, REMOVALS_KEPT_AFTER)? {
            return Ok(None);
        }
        let newest = taken_seq(&tx)? as u64;
        let rows = {
            let mut stmt = tx.prepare_cached(
                "SELECT signature, record, moved FROM txs WHERE seq > ?1
                 ORDER BY slot, idx, signature",
            )?;
            let rows = stmt.query_map([seq as i64], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            })?;
            rows.map(|row| {
                let (sig, json, moved) = row?;
                Ok((decode(sig, &json)?, moved))
            })
            .collect::<Result<Vec<_>, StoreError>>()?
        };
        let listed = {
            let mut stmt =
                tx.prepare_cached("SELECT signature FROM txs_removed WHERE seq > ?1 ORDER BY seq")?;
            let listed = stmt
                .query_map([seq as i64], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            listed
        };
        tx.commit()?;
        Ok(Some(LogChanges::of(rows, listed, newest)))
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        let any: bool = self
            .conn
            .query_row("SELECT EXISTS(SELECT 1 FROM txs)", [], |r| r.get(0))?;
        Ok(!any)
    }

    fn records_page(
        &self,
        after: Option<Position>,
        limit: usize,
    ) -> Result<Vec<TxRecord>, StoreError> {
        let (slot, idx) = after_key(after);
        self.read_records(
            concat!(
                "SELECT signature, record FROM txs WHERE slot > ?1 OR (slot = ?1 AND idx > ?2)",
                " ORDER BY slot, idx, signature LIMIT ?3"
            ),
            params![slot, idx, limit as i64],
        )
    }

    fn count_after(&self, after: Option<Position>) -> Result<usize, StoreError> {
        let (slot, idx) = after_key(after);
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM txs WHERE slot > ?1 OR (slot = ?1 AND idx > ?2)",
            params![slot, idx],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    fn records(&self) -> Result<Vec<TxRecord>, StoreError> {
        self.read_records(
            "SELECT signature, record FROM txs ORDER BY slot, idx, signature",
            [],
        )
    }

    fn provisional(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT signature, slot FROM txs WHERE final = 0 ORDER BY slot, idx")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn finalize_through(&mut self, final_slot: u64) -> Result<usize, StoreError> {
        Ok(self.conn.execute(
            "UPDATE txs SET final = 1 WHERE final = 0 AND slot <= ?1",
            [final_slot as i64],
        )?)
    }

    fn remove(&mut self, signatures: &[String]) -> Result<usize, StoreError> {
        if signatures.is_empty() {
            return Ok(0);
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut seq = taken_seq(&tx)?;
        let mut n = 0;
        for s in signatures {
            let gone = tx.execute("DELETE FROM txs WHERE signature = ?1 AND final = 0", [s])?;
            if gone > 0 {
                seq += 1;
                tx.execute(
                    "INSERT INTO txs_removed (seq, signature) VALUES (?1, ?2)",
                    params![seq, s],
                )?;
            }
            n += gone;
        }
        set_taken_seq(&tx, seq)?;
        if n > 0 {
            prune_removals_sqlite(&tx, REMOVALS_KEPT)?;
        }
        tx.commit()?;
        Ok(n)
    }

    fn prune_removals(&mut self, keep: u64) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        prune_removals_sqlite(&tx, keep)?;
        tx.commit()?;
        Ok(())
    }

    fn has(&self, signature: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM txs WHERE signature = ?1",
                [signature],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    fn checkpoint(&self, address: &str) -> Result<Option<(String, u64)>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT signature, slot FROM checkpoints WHERE address = ?1",
                [address],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)),
            )
            .optional()?)
    }

    fn set_checkpoint(
        &mut self,
        address: &str,
        signature: &str,
        slot: u64,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO checkpoints (address, signature, slot) VALUES (?1, ?2, ?3)
             ON CONFLICT(address) DO UPDATE SET signature = excluded.signature, slot = excluded.slot
             WHERE excluded.slot >= checkpoints.slot",
            params![address, signature, slot as i64],
        )?;
        Ok(())
    }

    fn manifest(&self, id: &str) -> Result<Option<Value>, StoreError> {
        let body: Option<String> = self
            .conn
            .query_row("SELECT body FROM manifests WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(body.and_then(|b| serde_json::from_str(&b).ok()))
    }

    fn put_manifest(&mut self, id: &str, body: &Value) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO manifests (id, body) VALUES (?1, ?2)",
            params![id, body.to_string()],
        )?;
        Ok(())
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    fn put_nonce(&mut self, nonce: &str, n: &Nonce) -> Result<NoncePut, StoreError> {
        // IMMEDIATE: the count and the insert see no other writer between them
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let (mine, oldest): (i64, Option<i64>) = tx.query_row(
            "SELECT count(*), min(expires_at) FROM nonces WHERE pubkey = ?1",
            [&n.pubkey],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let all: i64 = tx.query_row("SELECT count(*) FROM nonces", [], |r| r.get(0))?;
        let put = nonce_bounds(mine, oldest, all);
        if put == NoncePut::Stored {
            tx.execute(
                "INSERT INTO nonces (nonce, pubkey, message, expires_at) VALUES (?1, ?2, ?3, ?4)",
                params![nonce, n.pubkey, n.message, n.expires_at],
            )?;
        }
        tx.commit()?;
        Ok(put)
    }

    fn take_nonce(&mut self, nonce: &str) -> Result<Option<Nonce>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "DELETE FROM nonces WHERE nonce = ?1 RETURNING pubkey, message, expires_at",
                [nonce],
                |r| {
                    Ok(Nonce {
                        pubkey: r.get(0)?,
                        message: r.get(1)?,
                        expires_at: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    fn put_session(&mut self, token_sha256: &str, s: &Session) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO sessions (token_sha256, pubkey, expires_at) VALUES (?1, ?2, ?3)",
            params![token_sha256, s.pubkey, s.expires_at],
        )?;
        Ok(())
    }

    fn session(&self, token_sha256: &str) -> Result<Option<Session>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT pubkey, expires_at FROM sessions WHERE token_sha256 = ?1",
                [token_sha256],
                |r| {
                    Ok(Session {
                        pubkey: r.get(0)?,
                        expires_at: r.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    fn purge_auth(&mut self, now: i64) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM nonces WHERE expires_at <= ?1", [now])?;
        self.conn
            .execute("DELETE FROM sessions WHERE expires_at <= ?1", [now])?;
        Ok(())
    }
}
