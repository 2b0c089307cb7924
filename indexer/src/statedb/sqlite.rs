//! The state tables in SQLite: the embedded default, in the indexer's own
//! database file beside the log (its own connection, so a batch's commit
//! never waits on the log's) or in memory for tests.
//!
//! Owns the SQL only.

use super::around::{self, Anchor, Around, AroundRow, Dialect};
use super::sieve::{Param, Sieve};
use super::{
    decoded, keys, position, restore, settlements, table, Commit, HeadJson, Kind, Rewound, Row,
    StateDb, Undo,
};
use crate::fold::{
    EscrowState, Head, ListingState, OfferState, Rejected, Rows, Settlement, Totals,
};
use crate::record::Position;
use crate::store::StoreError;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeSet;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The schema (idempotent: every statement creates only what is missing).
pub const SCHEMA: &str = include_str!("../../../migrations/indexer/state.sql");

/// Adds and fills the listings' view columns in a file from before them.
const VIEW_COLUMNS: &str = include_str!("../../../migrations/indexer/state-view-columns.sql");

/// The index a live page walks (see [`super::sieve`]); made after the
/// columns it names exist.
const OPEN_INDEX: &str = "CREATE INDEX IF NOT EXISTS state_listings_open
    ON state_listings (id, expires_at) WHERE NOT cancelled AND NOT contested";

/// [`around::TEMPLATE`] in SQLite's notation.
const DIALECT: Dialect = Dialect {
    ids_cte: "{ids}",
    in_ids: "IN (SELECT id FROM ids)",
    in_accounts: "IN (SELECT escrow_account FROM l)",
    params: ["?1", "?2", "?3"],
    unnest: "SELECT value AS id FROM json_each(?1)",
    head: "json_array({cols})",
    collate: "COLLATE BINARY",
};

/// The SQLite state tables.
pub struct SqliteState {
    conn: Connection,
    /// The writer's lock file, held open (and locked) while it lives.
    _writer: Option<std::fs::File>,
}

impl SqliteState {
    /// Opens the tables in the database at `path` (the indexer's own file:
    /// open its log store first, which creates and stamps it).
    pub fn open(path: &Path) -> Result<SqliteState, StoreError> {
        Self::init(Connection::open(path)?)
    }

    /// Opens the tables as their one writer: refused while another
    /// process holds the writer's lock (`<path>.writer.lock`; two
    /// writers would fold the same batches twice). The lock goes with
    /// the process, however it ends.
    pub fn open_writer(path: &Path) -> Result<SqliteState, StoreError> {
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".writer.lock");
        let lock_path = std::path::PathBuf::from(lock_path);
        let lock_err = |source: std::io::Error| StoreError::Lock {
            path: lock_path.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(&lock_err)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Foreign(format!(
                    "another writer (`brainctl-indexer run`) holds {} (lock {}); stop it first",
                    path.display(),
                    lock_path.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(lock_err(e)),
        }
        let mut s = Self::open(path)?;
        s._writer = Some(file);
        Ok(s)
    }

    /// Tables in memory.
    pub fn in_memory() -> Result<SqliteState, StoreError> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<SqliteState, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        add_view_columns(&conn)?;
        conn.execute_batch(OPEN_INDEX)?;
        Ok(SqliteState {
            conn,
            _writer: None,
        })
    }

    /// `(key, body)` rows `sql` selects for each key in `set` (one cached
    /// statement, one lookup per key: SQLite answers in-process).
    fn each(&self, sql: &str, set: &BTreeSet<String>) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut out = Vec::new();
        for k in set {
            let rows = stmt.query_map([k], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }
}

/// Brings a state file from before the listings' view columns up to
/// them, once (the first process to open it; others wait on its lock).
fn add_view_columns(conn: &Connection) -> Result<(), StoreError> {
    let has = |conn: &Connection| -> Result<bool, StoreError> {
        Ok(conn.query_row(
            "SELECT count(*) FROM pragma_table_info('state_listings') WHERE name = 'expires_at'",
            [],
            |r| r.get::<_, i64>(0),
        )? > 0)
    };
    if has(conn)? {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let done = if has(conn)? {
        Ok(())
    } else {
        conn.execute_batch(VIEW_COLUMNS).map_err(StoreError::from)
    };
    conn.execute_batch(if done.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
    done
}

fn read_head(conn: &Connection) -> Result<(Head, Option<u64>, Option<Position>), StoreError> {
    let row = conn
        .query_row(
            "SELECT now, last_slot, last_idx, transactions, applied_seq, floor_slot, floor_idx
             FROM state_head WHERE one = 1",
            [],
            |r| {
                Ok((
                    Head {
                        now: r.get(0)?,
                        last: position(r.get(1)?, r.get(2)?),
                        transactions: r.get::<_, i64>(3)? as u64,
                    },
                    r.get::<_, Option<i64>>(4)?.map(|s| s as u64),
                    position(r.get(5)?, r.get(6)?),
                ))
            },
        )
        .optional()?;
    Ok(row.unwrap_or_default())
}

fn write_row(tx: &rusqlite::Transaction<'_>, row: &Row) -> Result<(), StoreError> {
    match row {
        Row::Listing(l) => tx
            .prepare_cached(
                "INSERT INTO state_listings (id, seller, escrow_account, body, cancelled,
                   contested, expires_at, visibility, price_usd)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (id) DO UPDATE SET seller = ?2, escrow_account = ?3, body = ?4,
                   cancelled = ?5, contested = ?6, expires_at = ?7, visibility = ?8,
                   price_usd = ?9",
            )?
            .execute(params![
                l.id,
                l.seller,
                l.escrow_account,
                l.body,
                l.cancelled,
                l.contested,
                l.expires_at,
                l.visibility,
                l.price_usd
            ])?,
        Row::Offer {
            id,
            listing_id,
            body,
        } => tx
            .prepare_cached(
                "INSERT INTO state_offers (id, listing_id, body) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET listing_id = ?2, body = ?3",
            )?
            .execute(params![id, listing_id, body])?,
        Row::Settlement {
            signature,
            listing_id,
            at,
            body,
        } => tx
            .prepare_cached(
                "INSERT INTO state_settlements (signature, listing_id, slot, idx, body)
                 VALUES (?1, ?2, coalesce(?3, 0), coalesce(?4, 0), ?5)
                 ON CONFLICT (signature) DO UPDATE SET listing_id = ?2,
                   slot = coalesce(?3, slot), idx = coalesce(?4, idx), body = ?5",
            )?
            .execute(params![
                signature,
                listing_id,
                at.map(|p| p.0 as i64),
                at.map(|p| p.1 as i64),
                body
            ])?,
        Row::Rejected { signature, body } => tx
            .prepare_cached(
                "INSERT INTO state_rejected (signature, body) VALUES (?1, ?2)
                 ON CONFLICT (signature) DO UPDATE SET body = ?2",
            )?
            .execute(params![signature, body])?,
        Row::Escrow {
            account,
            listing_account,
            body,
        } => tx
            .prepare_cached(
                "INSERT INTO state_escrows (account, listing_account, body) VALUES (?1, ?2, ?3)
                 ON CONFLICT (account) DO UPDATE SET listing_account = ?2, body = ?3",
            )?
            .execute(params![account, listing_account, body])?,
        Row::Seen { signature, at } => tx
            .prepare_cached(
                "INSERT INTO state_seen (signature, slot, idx) VALUES (?1, ?2, ?3)
                 ON CONFLICT (signature) DO UPDATE SET slot = ?2, idx = ?3",
            )?
            .execute(params![signature, at.0 as i64, at.1 as i64])?,
    };
    Ok(())
}

/// Moves the counts by `t` (`sign` 1: added, -1: taken away).
fn count(tx: &rusqlite::Transaction<'_>, t: Totals, sign: i64) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE state_head SET n_listings = n_listings + ?1, n_offers = n_offers + ?2,
           n_settlements = n_settlements + ?3, n_rejected = n_rejected + ?4",
        params![
            sign * t.listings as i64,
            sign * t.offers as i64,
            sign * t.settlements as i64,
            sign * t.rejected as i64
        ],
    )?;
    Ok(())
}

fn write_head(
    tx: &rusqlite::Transaction<'_>,
    head: &Head,
    applied_seq: Option<u64>,
    floor: Option<Position>,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO state_head (one, now, last_slot, last_idx, transactions, applied_seq, floor_slot, floor_idx)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (one) DO UPDATE SET now = ?1, last_slot = ?2, last_idx = ?3,
           transactions = ?4, applied_seq = ?5, floor_slot = ?6, floor_idx = ?7",
        params![
            head.now,
            head.last.map(|p| p.0 as i64),
            head.last.map(|p| p.1 as i64),
            head.transactions as i64,
            applied_seq.map(|s| s as i64),
            floor.map(|p| p.0 as i64),
            floor.map(|p| p.1 as i64),
        ],
    )?;
    Ok(())
}

impl Rows for SqliteState {
    type Error = StoreError;

    fn head(&mut self) -> Result<Head, StoreError> {
        Ok(read_head(&self.conn)?.0)
    }

    fn listings(&mut self, ids: &BTreeSet<String>) -> Result<Vec<ListingState>, StoreError> {
        let rows = self.each("SELECT id, body FROM state_listings WHERE id = ?1", ids)?;
        Ok(decoded(rows)?.into_iter().map(|(_, l)| l).collect())
    }

    fn offers(&mut self, ids: &BTreeSet<String>) -> Result<Vec<OfferState>, StoreError> {
        let rows = self.each("SELECT id, body FROM state_offers WHERE id = ?1", ids)?;
        Ok(decoded(rows)?.into_iter().map(|(_, o)| o).collect())
    }

    fn offers_of(&mut self, listing_ids: &BTreeSet<String>) -> Result<Vec<OfferState>, StoreError> {
        let rows = self.each(
            "SELECT id, body FROM state_offers WHERE listing_id = ?1",
            listing_ids,
        )?;
        Ok(decoded(rows)?.into_iter().map(|(_, o)| o).collect())
    }

    fn settlements(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, StoreError> {
        settlements(self.each(
            "SELECT signature, body FROM state_settlements WHERE signature = ?1",
            signatures,
        )?)
    }

    fn settlements_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, StoreError> {
        settlements(self.each(
            "SELECT signature, body FROM state_settlements WHERE listing_id = ?1
             ORDER BY slot, idx, signature",
            listing_ids,
        )?)
    }

    fn escrows(
        &mut self,
        accounts: &BTreeSet<String>,
    ) -> Result<Vec<(String, EscrowState)>, StoreError> {
        decoded(self.each(
            "SELECT account, body FROM state_escrows WHERE account = ?1",
            accounts,
        )?)
    }

    fn seen(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Position)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT slot, idx FROM state_seen WHERE signature = ?1")?;
        let mut out = Vec::new();
        for sig in keys(signatures) {
            let at = stmt
                .query_row([&sig], |r| {
                    Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u32))
                })
                .optional()?;
            out.extend(at.map(|at| (sig, at)));
        }
        Ok(out)
    }
}

impl StateDb for SqliteState {
    fn applied_seq(&mut self) -> Result<Option<u64>, StoreError> {
        Ok(read_head(&self.conn)?.1)
    }

    fn commit(&mut self, c: &Commit) -> Result<(), StoreError> {
        let (_, _, mut floor) = read_head(&self.conn)?;
        let applied = match c.applied_seq {
            Some(s) => Some(s),
            None => read_head(&self.conn)?.1,
        };
        let tx = self.conn.transaction()?;
        for row in &c.rows {
            write_row(&tx, row)?;
        }
        for (kind, key) in &c.deletes {
            let (t, k) = table(*kind);
            tx.prepare_cached(&format!("DELETE FROM {t} WHERE {k} = ?1"))?
                .execute([key])?;
        }
        let changed = !c.rows.is_empty() || !c.deletes.is_empty();
        match (&c.undo, c.head.last) {
            (Some((before, undo)), Some(last)) if changed => {
                tx.execute(
                    "INSERT INTO state_batches (last_slot, last_idx, head_before) VALUES (?1, ?2, ?3)",
                    params![last.0 as i64, last.1 as i64, super::body(&HeadJson::from(*before))],
                )?;
                let batch = tx.last_insert_rowid();
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO state_undo (batch, kind, key, body) VALUES (?1, ?2, ?3, ?4)",
                )?;
                for u in undo {
                    stmt.execute(params![batch, u.kind.number(), u.key, u.before])?;
                }
            }
            (None, last) if changed => floor = last.max(floor),
            _ => {}
        }
        write_head(&tx, &c.head, applied, floor)?;
        count(&tx, c.added, 1)?;
        tx.commit()?;
        Ok(())
    }

    fn rewind(&mut self, from: Position) -> Result<Rewound, StoreError> {
        let (_, applied, floor) = read_head(&self.conn)?;
        if floor.is_some_and(|f| from <= f) {
            return Ok(Rewound::Unreachable);
        }
        let batches: Vec<(i64, String)> = {
            let mut stmt = self.conn.prepare(
                "SELECT batch, head_before FROM state_batches
                 WHERE last_slot > ?1 OR (last_slot = ?1 AND last_idx >= ?2)
                 ORDER BY batch DESC",
            )?;
            let rows = stmt.query_map(params![from.0 as i64, from.1 as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        let Some((oldest, head_json)) = batches.last().cloned() else {
            return Ok(Rewound::To(read_head(&self.conn)?.0));
        };
        let head: Head = super::decode::<HeadJson>("state head", &head_json)?.into();
        let mut undo = Vec::new();
        {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT kind, key, body FROM state_undo WHERE batch = ?1")?;
            for (batch, _) in &batches {
                let rows = stmt.query_map([batch], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
                })?;
                for row in rows {
                    let (kind, key, before) = row?;
                    let kind = Kind::from_number(kind).ok_or_else(|| {
                        StoreError::Foreign(format!("undo row of unknown kind {kind}"))
                    })?;
                    undo.push(Undo { kind, key, before });
                }
            }
        }
        let (rows, deletes) = restore(&undo)?;
        let tx = self.conn.transaction()?;
        for row in &rows {
            write_row(&tx, row)?;
        }
        for (kind, key) in &deletes {
            let (t, k) = table(*kind);
            tx.prepare_cached(&format!("DELETE FROM {t} WHERE {k} = ?1"))?
                .execute([key])?;
        }
        tx.execute("DELETE FROM state_undo WHERE batch >= ?1", [oldest])?;
        tx.execute("DELETE FROM state_batches WHERE batch >= ?1", [oldest])?;
        write_head(&tx, &head, applied, floor)?;
        count(&tx, super::removed_by(&deletes), -1)?;
        tx.commit()?;
        Ok(Rewound::To(head))
    }

    fn clear(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch(
            "BEGIN;
             DELETE FROM state_listings; DELETE FROM state_offers; DELETE FROM state_settlements;
             DELETE FROM state_rejected; DELETE FROM state_escrows; DELETE FROM state_seen;
             DELETE FROM state_undo; DELETE FROM state_batches; DELETE FROM state_head;
             COMMIT;",
        )?;
        Ok(())
    }

    fn begin_read(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN DEFERRED")?;
        Ok(())
    }

    fn end_read(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    fn around(&mut self, anchor: &Anchor) -> Result<Around, StoreError> {
        let (p1, p2, p3) = anchor.params();
        let mut stmt = self.conn.prepare_cached(&DIALECT.sql(anchor))?;
        let rows = stmt
            .query_map(params![p1, p2, p3], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<Result<Vec<AroundRow>, _>>()?;
        around::decode_rows(rows)
    }

    fn listings_after(
        &mut self,
        sieve: &Sieve,
        limit: usize,
    ) -> Result<Vec<ListingState>, StoreError> {
        let (sql, params) = sieve.query(limit, |n| format!("?{n}"));
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let params = params.iter().map(|p| match p {
            Param::Text(s) => rusqlite::types::Value::Text(s.clone()),
            Param::Int(i) => rusqlite::types::Value::Integer(*i),
            Param::Real(f) => rusqlite::types::Value::Real(*f),
        });
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        let rows: Vec<(String, String)> = rows.collect::<Result<_, _>>()?;
        Ok(decoded(rows)?.into_iter().map(|(_, l)| l).collect())
    }

    fn rejected(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Vec<Rejected>)>, StoreError> {
        decoded(self.each(
            "SELECT signature, body FROM state_rejected WHERE signature = ?1",
            signatures,
        )?)
    }

    fn scan(
        &mut self,
        kind: Kind,
        f: &mut dyn FnMut(&str, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let (t, k) = table(kind);
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {k}, body FROM {t} ORDER BY {k}"))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let key: String = r.get(0)?;
            let body: String = r.get(1)?;
            f(&key, &body)?;
        }
        Ok(())
    }
}
