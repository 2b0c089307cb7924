//! The [`LogStore`] on PostgreSQL, for operators who outgrow one machine:
//! one writer (`brainctl-indexer run --pg`) ingests into the log and
//! folds it into the state tables beside it; any number of API servers
//! (`serve --pg`) share its sessions and nonces. Each change to the log
//! takes a change number in its own transaction, so the writer's
//! catch-up reads only what changed.
//!
//! Built on `tokio-postgres` (the async client; the sync `postgres` crate
//! wraps it and would panic when called from an async context). The store
//! trait is synchronous, so each store owns a one-thread runtime that
//! drives its connection; a call sends its query there and waits on a
//! channel, from any thread, inside a runtime or not.
//!
//! Owns persistence only, exactly as the SQLite store does.

use super::pg_conn::Conn;
use super::{after_key, nonce_bounds, LogChanges, LogStore, Nonce, NoncePut, Session, StoreError};
use crate::record::{Position, TxRecord};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio_postgres::NoTls;

/// The schema version a state reader needs (the state tables with their
/// listings' view columns).
pub const STATE_SCHEMA: usize = 5;

const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/indexer-pg/0001_init.sql"),
    include_str!("../../../migrations/indexer-pg/0002_change_numbers.sql"),
    include_str!("../../../migrations/indexer-pg/0003_state.sql"),
    include_str!("../../../migrations/indexer-pg/0004_carried_manifests.sql"),
    include_str!("../../../migrations/indexer-pg/0005_listing_view_columns.sql"),
    include_str!("../../../migrations/indexer-pg/0006_drop_state_manifests.sql"),
    include_str!("../../../migrations/indexer-pg/0007_signatures_compare_as_bytes.sql"),
    include_str!("../../../migrations/indexer-pg/0008_txs_moved.sql"),
    include_str!("../../../migrations/indexer-pg/0009_seen_by_hash.sql"),
    include_str!("../../../migrations/indexer-pg/0010_txs_by_hash.sql"),
];
/// Advisory lock held while migrating (several processes may start at once).
const MIGRATION_LOCK: i64 = 0x4252_4e49;
/// Advisory lock held by every transaction that changes the log, so
/// change numbers commit in the order they are taken.
const LOG_LOCK: i64 = 0x4252_4e4a;

/// The Postgres store.
pub struct PgStore {
    rt: Option<tokio::runtime::Runtime>,
    client: Arc<Conn>,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // never blocks (a store may be dropped inside an async context)
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Runs `fut` on `rt` and waits for it from any thread.
fn on<T: Send + 'static>(
    rt: &tokio::runtime::Runtime,
    fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().map_err(|_| StoreError::Closed)?
}

impl PgStore {
    /// Connects to `url` (a libpq URL or key=value string) and brings the
    /// schema up to date.
    pub fn connect(url: &str) -> Result<PgStore, StoreError> {
        let store = PgStore::open(url)?;
        store.migrate()?;
        store.offer_prewarm()?;
        Ok(store)
    }

    /// Installs `pg_prewarm` (PostgreSQL's contrib, in Debian's server
    /// package) where this role may ([`LogStore::warm_lookups`] uses it);
    /// where it may not, the log works the same, only colder after a
    /// rebuild.
    fn offer_prewarm(&self) -> Result<(), StoreError> {
        self.run(|c| async move {
            c.batch_execute(
                "DO $$ BEGIN CREATE EXTENSION IF NOT EXISTS pg_prewarm;
                 EXCEPTION WHEN OTHERS THEN
                   RAISE DEBUG 'pg_prewarm not installed: %', SQLERRM;
                 END $$",
            )
            .await?;
            Ok(())
        })
    }

    /// Connects to `url` without touching the schema (a hot standby is
    /// read-only): the schema must already be at least `version`.
    pub fn connect_read_only(url: &str, version: usize) -> Result<PgStore, StoreError> {
        let store = PgStore::open(url)?;
        let have: i32 = store.run(|c| async move {
            Ok(
                c.query_opt("SELECT version FROM brainctl_indexer_schema", &[])
                    .await
                    .ok()
                    .flatten()
                    .map_or(0, |r| r.get(0)),
            )
        })?;
        if (have as usize) < version {
            return Err(StoreError::Foreign(format!(
                "the database holds indexer schema v{have}, this reader needs v{version}: start the writer (`brainctl-indexer run --pg`) on its primary first"
            )));
        }
        Ok(store)
    }

    /// The connection alone.
    fn open(url: &str) -> Result<PgStore, StoreError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("indexer-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Foreign(format!("postgres runtime: {e}")))?;
        let url = url.to_string();
        let client = on(&rt, async move {
            let (client, conn) = tokio_postgres::connect(&url, NoTls).await?;
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::warn!(error = %e, "postgres connection ended");
                }
            });
            // every query here is an index lookup or a bounded page: JIT
            // compiles (about 5 ms) only a plan the planner misestimated,
            // e.g. before the first ANALYZE of a freshly loaded log. A
            // server without JIT (before PostgreSQL 11) refuses the name
            // and has nothing to turn off
            if let Err(e) = client.batch_execute("SET jit = off").await {
                tracing::debug!(error = %e, "postgres without jit");
            }
            Ok(client)
        })?;
        Ok(PgStore {
            rt: Some(rt),
            client: Arc::new(Conn::new(client)),
        })
    }

    /// Runs `f` with the client on the store's runtime.
    pub(crate) fn run<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Conn>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let rt = self.rt.as_ref().ok_or(StoreError::Closed)?;
        on(rt, f(self.client.clone()))
    }

    /// Runs `f` in a transaction (committed when it returns `Ok`).
    pub(crate) fn transaction<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Conn>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        self.run(|c| {
            let body = f(c.clone());
            async move {
                c.batch_execute("BEGIN").await?;
                match body.await {
                    Ok(v) => {
                        c.batch_execute("COMMIT").await?;
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = c.batch_execute("ROLLBACK").await;
                        Err(e)
                    }
                }
            }
        })
    }

    fn migrate(&self) -> Result<(), StoreError> {
        self.transaction(|c| async move {
            c.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            c.batch_execute(
                "CREATE TABLE IF NOT EXISTS brainctl_indexer_schema (version INTEGER NOT NULL)",
            )
            .await?;
            let version: i32 = match c
                .query_opt("SELECT version FROM brainctl_indexer_schema", &[])
                .await?
            {
                Some(row) => row.get(0),
                None => {
                    c.execute("INSERT INTO brainctl_indexer_schema VALUES (0)", &[])
                        .await?;
                    0
                }
            };
            if version as usize > MIGRATIONS.len() {
                return Err(StoreError::Foreign(format!(
                    "indexer schema v{version} is newer than this build (v{}); upgrade brainctl-indexer",
                    MIGRATIONS.len()
                )));
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                c.batch_execute(sql).await?;
                c.execute(
                    "UPDATE brainctl_indexer_schema SET version = $1",
                    &[&(i as i32 + 1)],
                )
                .await?;
            }
            Ok(())
        })
    }
}

/// Takes the log's lock for the rest of the transaction.
async fn lock_log(c: &Conn) -> Result<(), StoreError> {
    c.execute("SELECT pg_advisory_xact_lock($1)", &[&LOG_LOCK])
        .await?;
    Ok(())
}

/// Decodes (signature, record) rows.
fn decode_rows(rows: Vec<tokio_postgres::Row>) -> Result<Vec<TxRecord>, StoreError> {
    rows.into_iter()
        .map(|r| decode(r.get(0), r.get::<_, &str>(1)))
        .collect()
}

/// The number after which the removal log is complete (meta
/// [`super::REMOVALS_KEPT_AFTER`]; 0 while nothing was pruned or cleared).
async fn removals_kept_after(c: &Conn) -> Result<i64, StoreError> {
    Ok(c.query_opt(
        "SELECT value FROM meta WHERE key = $1",
        &[&super::REMOVALS_KEPT_AFTER],
    )
    .await?
    .and_then(|r| r.get::<_, String>(0).parse().ok())
    .unwrap_or(0))
}

async fn set_removals_kept_after(c: &Conn, after: i64) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO meta (key, value) VALUES ($1, $2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&super::REMOVALS_KEPT_AFTER, &after.to_string()],
    )
    .await?;
    Ok(())
}

/// Drops all but the newest `keep` removals, moving the mark (under the
/// log lock, in the caller's transaction).
async fn prune_removals_pg(c: &Conn, keep: u64) -> Result<(), StoreError> {
    let cut = c
        .query_opt(
            "SELECT seq FROM txs_removed ORDER BY seq DESC LIMIT 1 OFFSET $1",
            &[&(keep as i64)],
        )
        .await?;
    if let Some(cut) = cut.map(|r| r.get::<_, i64>(0)) {
        c.execute("DELETE FROM txs_removed WHERE seq <= $1", &[&cut])
            .await?;
        let after = removals_kept_after(c).await?.max(cut);
        set_removals_kept_after(c, after).await?;
    }
    Ok(())
}

fn decode(signature: String, json: &str) -> Result<TxRecord, StoreError> {
    serde_json::from_str(json).map_err(|source| StoreError::Corrupt { signature, source })
}

impl LogStore for PgStore {
    fn put_records(&mut self, records: &[TxRecord], final_slot: u64) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        // one row per signature (the last one given wins, as one by one would)
        let mut latest: std::collections::HashMap<&str, &TxRecord> = Default::default();
        for r in records {
            latest.insert(r.signature(), r);
        }
        let mut sigs = Vec::with_capacity(latest.len());
        let (mut slots, mut idxs, mut finals, mut jsons) = (vec![], vec![], vec![], vec![]);
        for r in latest.into_values() {
            sigs.push(r.tx.signature.clone());
            slots.push(r.tx.slot as i64);
            idxs.push(r.index as i64);
            finals.push(r.tx.slot <= final_slot);
            jsons.push(serde_json::to_string(r).expect("records serialize"));
        }
        let (ids, bodies): (Vec<String>, Vec<String>) = super::carried(records)
            .into_iter()
            .map(|(id, body)| (id.to_string(), body))
            .unzip();
        self.transaction(|c| async move {
            lock_log(&c).await?;
            // set-based: one statement per batch, whatever its size. No
            // unique index arbitrates (migration 0010: a hash index); the
            // log's lock makes this the only writer, which updates the
            // rows it has and inserts the rest
            c.execute(
                "WITH input (signature, slot, idx, final, record) AS (
                   SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bool[], $5::text[])),
                 stored AS (
                   UPDATE txs t SET slot = i.slot, idx = i.idx, final = t.final OR i.final,
                     record = i.record, seq = nextval('txs_seq'),
                     moved = t.moved OR t.slot <> i.slot OR t.idx <> i.idx
                   FROM input i WHERE t.signature = i.signature RETURNING t.signature)
                 INSERT INTO txs (signature, slot, idx, final, record, moved)
                 SELECT i.*, false FROM input i
                 WHERE NOT EXISTS (SELECT 1 FROM stored s WHERE s.signature = i.signature)",
                &[&sigs, &slots, &idxs, &finals, &jsons],
            )
            .await?;
            if !ids.is_empty() {
                c.execute(
                    "INSERT INTO carried_manifests (id, body)
                     SELECT * FROM UNNEST($1::text[], $2::text[])
                     ON CONFLICT (id) DO NOTHING",
                    &[&ids, &bodies],
                )
                .await?;
            }
            Ok(())
        })
    }

    fn records(&self) -> Result<Vec<TxRecord>, StoreError> {
        self.run(|c| async move {
            decode_rows(
                c.query(
                    "SELECT signature, record FROM txs ORDER BY slot, idx, signature",
                    &[],
                )
                .await?,
            )
        })
    }

    fn records_page(
        &self,
        after: Option<Position>,
        limit: usize,
    ) -> Result<Vec<TxRecord>, StoreError> {
        let (slot, idx) = after_key(after);
        let limit = limit as i64;
        self.run(move |c| async move {
            decode_rows(
                c.query(
                    "SELECT signature, record FROM txs WHERE (slot, idx) > ($1, $2)
                     ORDER BY slot, idx, signature LIMIT $3",
                    &[&slot, &idx, &limit],
                )
                .await?,
            )
        })
    }

    fn carried_manifests(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let (after, limit) = (after.unwrap_or("").to_string(), limit as i64);
        self.run(move |c| async move {
            let rows = c
                .query(
                    "SELECT id, body FROM carried_manifests WHERE id > $1 ORDER BY id LIMIT $2",
                    &[&after, &limit],
                )
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn carried_bodies(
        &self,
        ids: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<(String, Arc<Value>)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = ids.iter().cloned().collect();
        let rows: Vec<(String, String)> = self.run(move |c| async move {
            let rows = c
                .query(
                    "SELECT id, body FROM carried_manifests WHERE id = ANY($1)",
                    &[&ids],
                )
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })?;
        rows.iter()
            .map(|(id, body)| super::decode_body(id, body))
            .collect()
    }

    fn count_after(&self, after: Option<Position>) -> Result<usize, StoreError> {
        let (slot, idx) = after_key(after);
        self.run(move |c| async move {
            let n: i64 = c
                .query_one_planned(
                    "SELECT count(*) FROM txs WHERE (slot, idx) > ($1, $2)",
                    &[&slot, &idx],
                )
                .await?
                .get(0);
            Ok(n as usize)
        })
    }

    fn log_seq(&self) -> Result<Option<u64>, StoreError> {
        self.run(|c| async move {
            let row = c
                .query_one(
                    "SELECT GREATEST((SELECT COALESCE(MAX(seq), 0) FROM txs),
                                     (SELECT COALESCE(MAX(seq), 0) FROM txs_removed),
                                     (SELECT COALESCE(MAX(value::BIGINT), 0) FROM meta
                                      WHERE key = $1))",
                    &[&super::REMOVALS_KEPT_AFTER],
                )
                .await?;
            Ok(Some(row.get::<_, i64>(0) as u64))
        })
    }

    fn changes_since(&self, seq: u64) -> Result<Option<LogChanges>, StoreError> {
        let since = seq as i64;
        self.transaction(move |c| async move {
            // one snapshot of both tables
            c.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?;
            if since < removals_kept_after(&c).await? {
                return Ok(None);
            }
            let rows = c
                .query(
                    // by change number (its index): the caller sorts into
                    // chain order, and a sort by chain order here could
                    // walk that whole index for a few new rows
                    "SELECT signature, record, seq, moved FROM txs WHERE seq > $1 ORDER BY seq",
                    &[&since],
                )
                .await?;
            let mut newest = since;
            for r in &rows {
                newest = newest.max(r.get::<_, i64>(2));
            }
            let mut listed = Vec::new();
            for r in c
                .query(
                    "SELECT signature, seq FROM txs_removed WHERE seq > $1 ORDER BY seq",
                    &[&since],
                )
                .await?
            {
                newest = newest.max(r.get::<_, i64>(1));
                listed.push(r.get::<_, String>(0));
            }
            let rows = rows
                .into_iter()
                .map(|r| Ok((decode(r.get(0), r.get::<_, &str>(1))?, r.get::<_, bool>(3))))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(Some(LogChanges::of(rows, listed, newest as u64)))
        })
    }

    fn provisional(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.run(|c| async move {
            let rows = c
                .query(
                    "SELECT signature, slot FROM txs WHERE NOT final ORDER BY slot, idx",
                    &[],
                )
                .await?;
            Ok(rows
                .into_iter()
                .map(|r| (r.get(0), r.get::<_, i64>(1) as u64))
                .collect())
        })
    }

    fn finalize_through(&mut self, final_slot: u64) -> Result<usize, StoreError> {
        self.run(move |c| async move {
            Ok(c.execute(
                "UPDATE txs SET final = TRUE WHERE NOT final AND slot <= $1",
                &[&(final_slot as i64)],
            )
            .await? as usize)
        })
    }

    fn remove(&mut self, signatures: &[String]) -> Result<usize, StoreError> {
        if signatures.is_empty() {
            return Ok(0);
        }
        let sigs = signatures.to_vec();
        self.transaction(|c| async move {
            lock_log(&c).await?;
            let n = c
                .execute(
                    "WITH gone AS (DELETE FROM txs WHERE signature = ANY($1) AND NOT final
                                   RETURNING signature)
                     INSERT INTO txs_removed (signature) SELECT signature FROM gone",
                    &[&sigs],
                )
                .await? as usize;
            if n > 0 {
                prune_removals_pg(&c, super::REMOVALS_KEPT).await?;
            }
            Ok(n)
        })
    }

    fn prune_removals(&mut self, keep: u64) -> Result<(), StoreError> {
        self.transaction(move |c| async move {
            lock_log(&c).await?;
            prune_removals_pg(&c, keep).await
        })
    }

    fn clear_log(&mut self) -> Result<(), StoreError> {
        self.transaction(|c| async move {
            lock_log(&c).await?;
            // no removal listed per record: a replica from before refolds
            c.batch_execute("DELETE FROM txs; DELETE FROM checkpoints; DELETE FROM txs_removed;")
                .await?;
            let cleared_at: i64 = c.query_one("SELECT nextval('txs_seq')", &[]).await?.get(0);
            set_removals_kept_after(&c, cleared_at).await?;
            Ok(())
        })
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        self.run(|c| async move {
            let any: bool = c
                .query_one("SELECT EXISTS(SELECT 1 FROM txs)", &[])
                .await?
                .get(0);
            Ok(!any)
        })
    }

    fn warm_lookups(&self) -> Result<u64, StoreError> {
        self.run(|c| async move {
            let installed = c
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm')",
                    &[],
                )
                .await?
                .get::<_, bool>(0);
            if !installed {
                return Ok(0);
            }
            // the log's signature index and the carried bodies' ids, if
            // together they fit in half the shared buffers (more would
            // push out what the last batches use)
            let blocks: i64 = c
                .query_one(
                    "WITH lookups AS (
                       SELECT to_regclass(n) AS i
                       FROM unnest(ARRAY['txs_by_signature', 'carried_manifests_pkey']) n
                       WHERE to_regclass(n) IS NOT NULL),
                     fits AS (
                       SELECT sum(pg_relation_size(i)) / current_setting('block_size')::int8
                              <= (SELECT setting::int8 / 2 FROM pg_settings
                                  WHERE name = 'shared_buffers') AS ok
                       FROM lookups)
                     SELECT COALESCE(sum(pg_prewarm(i)), 0)::int8
                     FROM lookups, fits WHERE fits.ok",
                    &[],
                )
                .await?
                .get(0);
            Ok(blocks as u64)
        })
    }

    fn has(&self, signature: &str) -> Result<bool, StoreError> {
        let sig = signature.to_string();
        self.run(|c| async move {
            Ok(
                c.query_opt("SELECT 1 FROM txs WHERE signature = $1", &[&sig])
                    .await?
                    .is_some(),
            )
        })
    }

    fn checkpoint(&self, address: &str) -> Result<Option<(String, u64)>, StoreError> {
        let address = address.to_string();
        self.run(|c| async move {
            Ok(c.query_opt(
                "SELECT signature, slot FROM checkpoints WHERE address = $1",
                &[&address],
            )
            .await?
            .map(|r| (r.get(0), r.get::<_, i64>(1) as u64)))
        })
    }

    fn set_checkpoint(
        &mut self,
        address: &str,
        signature: &str,
        slot: u64,
    ) -> Result<(), StoreError> {
        let (address, signature) = (address.to_string(), signature.to_string());
        self.run(move |c| async move {
            c.execute(
                "INSERT INTO checkpoints (address, signature, slot) VALUES ($1, $2, $3)
                 ON CONFLICT (address) DO UPDATE SET signature = excluded.signature, slot = excluded.slot
                 WHERE excluded.slot >= checkpoints.slot",
                &[&address, &signature, &(slot as i64)],
            )
            .await?;
            Ok(())
        })
    }

    fn manifest(&self, id: &str) -> Result<Option<Value>, StoreError> {
        let id = id.to_string();
        self.run(|c| async move {
            Ok(
                c.query_opt("SELECT body FROM manifests WHERE id = $1", &[&id])
                    .await?
                    .and_then(|r| serde_json::from_str(r.get::<_, &str>(0)).ok()),
            )
        })
    }

    fn put_manifest(&mut self, id: &str, body: &Value) -> Result<(), StoreError> {
        let (id, body) = (id.to_string(), body.to_string());
        self.run(|c| async move {
            c.execute(
                "INSERT INTO manifests (id, body) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
                &[&id, &body],
            )
            .await?;
            Ok(())
        })
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        self.run(|c| async move {
            Ok(
                c.query_opt("SELECT value FROM meta WHERE key = $1", &[&key])
                    .await?
                    .map(|r| r.get(0)),
            )
        })
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        let (key, value) = (key.to_string(), value.to_string());
        self.run(|c| async move {
            c.execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
            .await?;
            Ok(())
        })
    }

    fn put_nonce(&mut self, nonce: &str, n: &Nonce) -> Result<NoncePut, StoreError> {
        let (nonce, n) = (nonce.to_string(), n.clone());
        self.transaction(|c| async move {
            // replicas share the table: one challenge per key at a time
            // counts and inserts (the lock ends with the transaction)
            c.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1))",
                &[&n.pubkey],
            )
            .await?;
            let row = c
                .query_one(
                    "SELECT count(*), min(expires_at) FROM nonces WHERE pubkey = $1",
                    &[&n.pubkey],
                )
                .await?;
            let all: i64 = c
                .query_one("SELECT count(*) FROM nonces", &[])
                .await?
                .get(0);
            let put = nonce_bounds(row.get(0), row.get(1), all);
            if put == NoncePut::Stored {
                c.execute(
                    "INSERT INTO nonces (nonce, pubkey, message, expires_at) VALUES ($1, $2, $3, $4)",
                    &[&nonce, &n.pubkey, &n.message, &n.expires_at],
                )
                .await?;
            }
            Ok(put)
        })
    }

    fn take_nonce(&mut self, nonce: &str) -> Result<Option<Nonce>, StoreError> {
        let nonce = nonce.to_string();
        self.run(|c| async move {
            Ok(c.query_opt(
                "DELETE FROM nonces WHERE nonce = $1 RETURNING pubkey, message, expires_at",
                &[&nonce],
            )
            .await?
            .map(|r| Nonce {
                pubkey: r.get(0),
                message: r.get(1),
                expires_at: r.get(2),
            }))
        })
    }

    fn put_session(&mut self, token_sha256: &str, s: &Session) -> Result<(), StoreError> {
        let (token, s) = (token_sha256.to_string(), s.clone());
        self.run(|c| async move {
            c.execute(
                "INSERT INTO sessions (token_sha256, pubkey, expires_at) VALUES ($1, $2, $3)",
                &[&token, &s.pubkey, &s.expires_at],
            )
            .await?;
            Ok(())
        })
    }

    fn session(&self, token_sha256: &str) -> Result<Option<Session>, StoreError> {
        let token = token_sha256.to_string();
        self.run(|c| async move {
            Ok(c.query_opt(
                "SELECT pubkey, expires_at FROM sessions WHERE token_sha256 = $1",
                &[&token],
            )
            .await?
            .map(|r| Session {
                pubkey: r.get(0),
                expires_at: r.get(1),
            }))
        })
    }

    fn purge_auth(&mut self, now: i64) -> Result<(), StoreError> {
        self.run(move |c| async move {
            c.execute("DELETE FROM nonces WHERE expires_at <= $1", &[&now])
                .await?;
            c.execute("DELETE FROM sessions WHERE expires_at <= $1", &[&now])
                .await?;
            Ok(())
        })
    }
}
