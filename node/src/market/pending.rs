//! The buyer's pending escrow buys, kept across restarts: each deposit
//! this wallet made into the sealed escrow, with the listing manifest it
//! verified and the blob it checked against the committed root before
//! paying, until the buy ends (imported, fraud proven, refunded, or closed
//! by hand). `buy` records one as soon as its deposit lands; `buy` itself,
//! `fetch`, and the `marketplace watch` service finish it
//! ([`super::watch`]). A gateway that stops serving the blob never leaves
//! the buyer unable to open it or to prove a lie: the checked copy is here.
//!
//! One SQLite file beside the wallet (0600 in a 0700 directory); every
//! change is one statement. Never sends anything.

use crate::market::manifest::Listing;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

const FILE: &str = "pending-escrows.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pending (
    buy_signature TEXT PRIMARY KEY,
    listing_id TEXT NOT NULL,
    escrow TEXT NOT NULL,
    manifest TEXT NOT NULL,
    blob BLOB NOT NULL,
    target TEXT NOT NULL,
    state TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_open ON pending (state) WHERE state = 'pending';
";

/// The pending-escrow file of a wallet file.
pub fn pending_path(wallet_path: &Path) -> PathBuf {
    wallet_path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(FILE)
}

/// Errors of the pending store.
#[derive(Debug, thiserror::Error)]
pub enum PendingError {
    /// Its file or directory.
    #[error("pending escrows {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// SQLite.
    #[error("pending escrows: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored manifest that no longer verifies (the file was edited).
    #[error("pending escrow {buy_signature}: its stored manifest does not verify: {why}")]
    BadManifest {
        /// The buy.
        buy_signature: String,
        /// Why.
        why: String,
    },
}

/// Where a buy's memories go once opened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The node's store at this path (a quarantine scope).
    Store(PathBuf),
    /// A Python brainctl `brain.db` at this path.
    BrainctlDb(PathBuf),
}

/// How a pending buy ended (or that it has not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Deposited; waiting for the reveal (or the window's end).
    Pending,
    /// Opened and imported.
    Imported,
    /// The revealed key opened something else than committed: proven on
    /// chain, deposit and stake share back.
    Disputed,
    /// Never revealed (or declined, or expired): deposit (and share) back.
    Refunded,
    /// The escrow is gone (closed by hand) or the lie was found too late
    /// to prove: nothing more this client can do.
    Closed,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Imported => "imported",
            State::Disputed => "disputed",
            State::Refunded => "refunded",
            State::Closed => "closed",
        }
    }

    fn parse(s: &str) -> State {
        match s {
            "imported" => State::Imported,
            "disputed" => State::Disputed,
            "refunded" => State::Refunded,
            "closed" => State::Closed,
            _ => State::Pending,
        }
    }
}

/// One pending (or finished) escrow buy.
#[derive(Debug, Clone)]
pub struct PendingBuy {
    /// The deposit's signature.
    pub buy_signature: String,
    /// The escrow account (base58).
    pub escrow: String,
    /// The listing, verified again when read.
    pub listing: Listing,
    /// The blob checked against the committed root before paying.
    pub blob: Vec<u8>,
    /// Where its memories go.
    pub target: Target,
    /// Where it stands.
    pub state: State,
    /// The last outcome's signature or the last error.
    pub detail: String,
}

/// The store.
pub struct PendingEscrows {
    conn: Connection,
}

impl PendingEscrows {
    /// Opens (creating) the store at `path` (0600 in a 0700 directory).
    pub fn open(path: &Path) -> Result<PendingEscrows, PendingError> {
        use crate::store::private_db::{self, PrivateDbError};
        let conn = private_db::open(path).map_err(|e| match e {
            PrivateDbError::Io { path, source } => PendingError::Io { path, source },
            PrivateDbError::Sql(e) => PendingError::Sql(e),
        })?;
        conn.execute_batch(SCHEMA)?;
        Ok(PendingEscrows { conn })
    }

    /// Records a deposit that landed (kept as it was when recorded again).
    pub fn record(
        &self,
        buy_signature: &str,
        escrow: &str,
        listing: &Listing,
        blob: &[u8],
        target: &Target,
        now: i64,
    ) -> Result<(), PendingError> {
        let target = serde_json::to_string(target).expect("a target serializes");
        self.conn.execute(
            "INSERT OR IGNORE INTO pending (buy_signature, listing_id, escrow, manifest, blob,
                 target, state, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?7)",
            params![
                buy_signature,
                listing.listing_id,
                escrow,
                listing.raw.to_string(),
                blob,
                target,
                now
            ],
        )?;
        Ok(())
    }

    /// Marks a buy ended (`detail`: the outcome's signature or why).
    pub fn finish(
        &self,
        buy_signature: &str,
        state: State,
        detail: &str,
        now: i64,
    ) -> Result<(), PendingError> {
        self.conn.execute(
            "UPDATE pending SET state = ?2, detail = ?3, updated_at = ?4 WHERE buy_signature = ?1",
            params![buy_signature, state.as_str(), detail, now],
        )?;
        Ok(())
    }

    /// Notes the last error of a buy still pending (it is tried again).
    pub fn note(&self, buy_signature: &str, detail: &str, now: i64) -> Result<(), PendingError> {
        self.conn.execute(
            "UPDATE pending SET detail = ?2, updated_at = ?3 WHERE buy_signature = ?1",
            params![buy_signature, detail, now],
        )?;
        Ok(())
    }

    /// The buys still pending, oldest first.
    pub fn pending(&self) -> Result<Vec<PendingBuy>, PendingError> {
        self.select(
            "WHERE state = 'pending' ORDER BY created_at, buy_signature",
            [],
        )
    }

    /// Every buy, newest first (at most `limit`).
    pub fn recent(&self, limit: usize) -> Result<Vec<PendingBuy>, PendingError> {
        self.select(
            "ORDER BY created_at DESC, buy_signature LIMIT ?1",
            [limit as i64],
        )
    }

    /// The buy of `buy_signature`, if recorded.
    pub fn get(&self, buy_signature: &str) -> Result<Option<PendingBuy>, PendingError> {
        let rows = self.select("WHERE buy_signature = ?1", [buy_signature])?;
        Ok(rows.into_iter().next())
    }

    fn select<P: rusqlite::Params>(
        &self,
        clause: &str,
        p: P,
    ) -> Result<Vec<PendingBuy>, PendingError> {
        let sql = format!(
            "SELECT buy_signature, escrow, manifest, blob, target, state, detail FROM pending {clause}"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let raw = stmt
            .query_map(p, |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        raw.into_iter()
            .map(|(sig, escrow, manifest, blob, target, state, detail)| {
                let bad = |why: String| PendingError::BadManifest {
                    buy_signature: sig.clone(),
                    why,
                };
                let v: serde_json::Value =
                    serde_json::from_str(&manifest).map_err(|e| bad(e.to_string()))?;
                let listing = Listing::from_value(v).map_err(|e| bad(e.to_string()))?;
                let target = serde_json::from_str(&target).map_err(|e| bad(e.to_string()))?;
                Ok(PendingBuy {
                    buy_signature: sig,
                    escrow,
                    listing,
                    blob,
                    target,
                    state: State::parse(&state),
                    detail,
                })
            })
            .collect()
    }

    /// Whether `buy_signature` is recorded and still pending.
    pub fn is_pending(&self, buy_signature: &str) -> Result<bool, PendingError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM pending WHERE buy_signature = ?1 AND state = 'pending'",
                [buy_signature],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }
}
