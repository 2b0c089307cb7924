//! The buyer's pending escrow buys, kept across restarts: each deposit
//! this wallet made into the sealed escrow, with the listing manifest it
//! verified and the blob it checked against the committed root before
//! paying, until the buy ends (imported, fraud proven, refunded, or closed
//! by hand). `buy` records one the moment its deposit is signed, before it
//! is sent (its signature is known then: a crash or a lost confirmation
//! after landing leaves a row, never an untracked deposit), marked landed
//! once it is; `fetch` records one it does not find; `buy` itself, `fetch`,
//! and the `marketplace watch` service finish it (a row
//! whose deposit never landed is closed once its blockhash expired). A gateway that stops serving the blob never leaves
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

/// Columns added since the first schema: (name, definition). A row of a
/// file made before was recorded once its deposit landed.
const ADDED_COLUMNS: &[(&str, &str)] = &[
    ("landed", "INTEGER NOT NULL DEFAULT 1"),
    ("last_valid_height", "INTEGER NOT NULL DEFAULT 0"),
    ("escrow_open", "INTEGER NOT NULL DEFAULT 0"),
];

/// The rows `watch` still acts on: pending buys, and imported ones whose
/// escrow still holds its rent.
const OPEN: &str = "(state = 'pending' OR (state = 'imported' AND escrow_open = 1))";

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
    /// A stored row that no longer reads (its manifest no longer
    /// verifies, its target does not decode: the file was edited).
    #[error("pending escrow {buy_signature}: its stored row does not read: {why}")]
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
    /// Whether the deposit is known to have landed (`false`: recorded when
    /// signed, before it was sent; it may never land).
    pub landed: bool,
    /// The last block height its blockhash is valid at (0: not known).
    pub last_valid_height: u64,
    /// Imported, its escrow still holding its rent (closed once the seller
    /// is paid).
    pub escrow_open: bool,
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
        for (name, definition) in ADDED_COLUMNS {
            let has: bool = conn.query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('pending') WHERE name = ?1",
                [name],
                |r| r.get(0),
            )?;
            if !has {
                conn.execute_batch(&format!(
                    "ALTER TABLE pending ADD COLUMN {name} {definition}"
                ))?;
            }
        }
        Ok(PendingEscrows { conn })
    }

    /// Records a deposit that landed (kept as it was when recorded again,
    /// but marked landed).
    pub fn record(
        &self,
        buy_signature: &str,
        escrow: &str,
        listing: &Listing,
        blob: &[u8],
        target: &Target,
        now: i64,
    ) -> Result<(), PendingError> {
        self.insert(buy_signature, escrow, listing, blob, target, None, now)?;
        self.mark_landed(buy_signature, now)
    }

    /// Records a deposit signed and about to be sent, whose blockhash is
    /// valid until block height `last_valid_height`: it may land or not
    /// ([`PendingEscrows::mark_landed`] once it did; `watch` closes it
    /// once it can no longer land).
    #[allow(clippy::too_many_arguments)]
    pub fn record_signed(
        &self,
        buy_signature: &str,
        escrow: &str,
        listing: &Listing,
        blob: &[u8],
        target: &Target,
        last_valid_height: u64,
        now: i64,
    ) -> Result<(), PendingError> {
        self.insert(
            buy_signature,
            escrow,
            listing,
            blob,
            target,
            Some(last_valid_height),
            now,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &self,
        buy_signature: &str,
        escrow: &str,
        listing: &Listing,
        blob: &[u8],
        target: &Target,
        signed: Option<u64>,
        now: i64,
    ) -> Result<(), PendingError> {
        let target = serde_json::to_string(target).expect("a target serializes");
        self.conn.execute(
            "INSERT OR IGNORE INTO pending (buy_signature, listing_id, escrow, manifest, blob,
                 target, state, created_at, updated_at, landed, last_valid_height)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?7, ?8, ?9)",
            params![
                buy_signature,
                listing.listing_id,
                escrow,
                listing.raw.to_string(),
                blob,
                target,
                now,
                signed.is_none(),
                signed.unwrap_or(0) as i64,
            ],
        )?;
        Ok(())
    }

    /// Marks a recorded deposit landed.
    pub fn mark_landed(&self, buy_signature: &str, now: i64) -> Result<(), PendingError> {
        self.conn.execute(
            "UPDATE pending SET landed = 1, updated_at = ?2 WHERE buy_signature = ?1 AND landed = 0",
            params![buy_signature, now],
        )?;
        Ok(())
    }

    /// Marks a buy ended (`detail`: the outcome's signature or why). An
    /// imported buy's escrow still holds its rent until the seller is paid
    /// and the buyer closes it: `watch` keeps it open for that
    /// ([`PendingEscrows::escrow_closed`]).
    pub fn finish(
        &self,
        buy_signature: &str,
        state: State,
        detail: &str,
        now: i64,
    ) -> Result<(), PendingError> {
        self.conn.execute(
            "UPDATE pending SET state = ?2, detail = ?3, updated_at = ?4, escrow_open = ?5
             WHERE buy_signature = ?1",
            params![
                buy_signature,
                state.as_str(),
                detail,
                now,
                state == State::Imported
            ],
        )?;
        Ok(())
    }

    /// Notes an imported buy's escrow closed (its rent back: `detail`).
    pub fn escrow_closed(
        &self,
        buy_signature: &str,
        detail: &str,
        now: i64,
    ) -> Result<(), PendingError> {
        self.conn.execute(
            "UPDATE pending SET escrow_open = 0, detail = ?2, updated_at = ?3 WHERE buy_signature = ?1",
            params![buy_signature, detail, now],
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

    /// The buys still open (pending, or imported with the escrow's rent
    /// not yet back), oldest first; a row that does not read is
    /// its own error, beside the others (one bad row never hides the rest).
    pub fn pending(&self) -> Result<Vec<Result<PendingBuy, PendingError>>, PendingError> {
        self.select(
            &format!("WHERE {OPEN} ORDER BY created_at, buy_signature"),
            [],
        )
    }

    /// Every buy, newest first (at most `limit`), each row read or its error.
    pub fn recent(
        &self,
        limit: usize,
    ) -> Result<Vec<Result<PendingBuy, PendingError>>, PendingError> {
        self.select(
            "ORDER BY created_at DESC, buy_signature LIMIT ?1",
            [limit as i64],
        )
    }

    /// The buy of `buy_signature`, if recorded.
    pub fn get(&self, buy_signature: &str) -> Result<Option<PendingBuy>, PendingError> {
        let rows = self.select("WHERE buy_signature = ?1", [buy_signature])?;
        rows.into_iter().next().transpose()
    }

    /// How many buys are still open (rows that do not read included).
    pub fn open_count(&self) -> Result<u64, PendingError> {
        Ok(self.conn.query_row(
            &format!("SELECT COUNT(*) FROM pending WHERE {OPEN}"),
            [],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    fn select<P: rusqlite::Params>(
        &self,
        clause: &str,
        p: P,
    ) -> Result<Vec<Result<PendingBuy, PendingError>>, PendingError> {
        let sql = format!(
            "SELECT buy_signature, escrow, manifest, blob, target, state, detail, landed,
                 last_valid_height, escrow_open FROM pending {clause}"
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
                    r.get::<_, bool>(7)?,
                    r.get::<_, i64>(8)?,
                    r.get::<_, bool>(9)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(raw
            .into_iter()
            .map(
                |(sig, escrow, manifest, blob, target, state, detail, landed, valid, open)| {
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
                        landed,
                        last_valid_height: valid.max(0) as u64,
                        escrow_open: open,
                        escrow,
                        listing,
                        blob,
                        target,
                        state: State::parse(&state),
                        detail,
                    })
                },
            )
            .collect())
    }

    /// Whether `buy_signature` is recorded and still pending (not yet
    /// imported, proven, refunded or closed).
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
