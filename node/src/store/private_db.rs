//! Opening a small SQLite ledger that holds what a wallet did (its
//! spending, its paid calls): created 0600 like a key file, WAL, and a
//! busy timeout so concurrent processes wait for the write lock instead of
//! failing. Owns nothing else; each ledger creates its own tables.

use rusqlite::Connection;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

/// How long a writer waits for another's lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a ledger does not open.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDbError {
    /// Creating the file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// SQLite.
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

/// Creates `path` empty with mode 0600 if it does not exist (never
/// truncating one that does): the one place a private SQLite file is born.
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    if !path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
    }
    Ok(())
}

/// Opens (creating, 0600) the ledger at `path`, in WAL mode.
pub fn open(path: &Path) -> Result<Connection, PrivateDbError> {
    create_private_file(path).map_err(|source| PrivateDbError::Io {
        path: path.into(),
        source,
    })?;
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    Ok(conn)
}
