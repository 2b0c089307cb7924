//! Schema migrations for the memory store: SQL files from
//! `migrations/node`, applied in order inside one transaction each, the
//! version kept in `PRAGMA user_version`.
//!
//! Owns the store's identity (`PRAGMA application_id`) so a database made
//! by another program (e.g. Python brainctl's `brain.db`) is never altered.

use super::StoreError;
use rusqlite::Connection;

/// `PRAGMA application_id` of stores we create ("BRNC").
pub const APPLICATION_ID: i64 = 0x4252_4e43;

/// Migrations in order; index + 1 is the schema version they produce.
pub const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/node/0001_init.sql"),
    include_str!("../../../migrations/node/0002_provider_imports.sql"),
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings the store to [`LATEST`], refusing foreign or newer stores.
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let app_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    if app_id != APPLICATION_ID && tables > 0 {
        return Err(StoreError::ForeignStore);
    }
    if version > LATEST {
        return Err(StoreError::NewerSchema {
            found: version,
            known: LATEST,
        });
    }
    apply(conn, MIGRATIONS, Some(APPLICATION_ID))?;
    Ok(())
}

/// Applies `migrations` past the database's `user_version`, each in its own
/// transaction that also bumps the version (and sets `application_id`).
/// Callers check for newer schemas first.
///
/// Each step takes the write lock first (`BEGIN IMMEDIATE`) and reads the
/// version inside it, so processes or threads opening a new database at
/// once apply each migration exactly once: the later ones wait (the
/// connection's busy timeout) and then find it applied.
pub fn apply(
    conn: &mut Connection,
    migrations: &[&str],
    app_id: Option<i64>,
) -> rusqlite::Result<()> {
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let Some(sql) = migrations.get(usize::try_from(version).unwrap_or(0)) else {
            return tx.commit();
        };
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version.max(0) + 1)?;
        if let Some(id) = app_id {
            tx.pragma_update(None, "application_id", id)?;
        }
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight connections opening one new database at once: every
    /// migration applied once, no "table already exists".
    #[test]
    fn concurrent_opens_apply_each_migration_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race.db");
        let migrations: &[&str] = &[
            "CREATE TABLE a(x INTEGER);",
            "CREATE TABLE b(y INTEGER); INSERT INTO a VALUES (1);",
        ];
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let mut conn = Connection::open(&path).unwrap();
                    conn.busy_timeout(std::time::Duration::from_secs(10))
                        .unwrap();
                    barrier.wait();
                    apply(&mut conn, migrations, None).unwrap();
                });
            }
        });
        let conn = Connection::open(&path).unwrap();
        let (version, rows): (i64, i64) = (
            conn.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap(),
            conn.query_row("SELECT count(*) FROM a", [], |r| r.get(0))
                .unwrap(),
        );
        assert_eq!((version, rows), (2, 1));
    }
}
