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
pub const MIGRATIONS: &[&str] = &[include_str!("../../../migrations/node/0001_init.sql")];

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
pub fn apply(
    conn: &mut Connection,
    migrations: &[&str],
    app_id: Option<i64>,
) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    for (i, sql) in migrations.iter().enumerate().skip(version.max(0) as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        if let Some(id) = app_id {
            tx.pragma_update(None, "application_id", id)?;
        }
        tx.commit()?;
    }
    Ok(())
}
