//! The seller's durable state (`listen.db`): the listings `list` made,
//! the offers the seller decided, and the `listen` daemon's buys: one
//! SQLite row per buy signature,
//! advanced `seen → verified → envelope_uploaded → released` (or
//! `rejected`), each step in its own transaction and guarded on the state
//! it leaves, so a repeated step is a no-op and a skipped one is refused.
//! A restart resumes from [`ListenDb::unfinished`]; every unfinished
//! state, `seen` included, is resumed. A transient problem with one buy is
//! recorded on its row ([`ListenDb::note_retry`]: attempts, last error,
//! when to retry, capped backoff) and never blocks the others.
//!
//! Concurrency: the database is SQLite in WAL mode with short
//! transactions, so the seller's own commands (`list`, `accept`, `status`,
//! …) open it with [`ListenDb::open`] while the daemon runs. Only the
//! daemon takes the exclusive lock on `<db>.lock` ([`ListenDb::open_daemon`]),
//! so a second daemon on the same state is refused.

use crate::settle::{Rejection, VerifiedBuy};
use rusqlite::{params, Connection, OptionalExtension};
use std::fs::File;
use std::path::{Path, PathBuf};

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/listen/0001_init.sql"),
    include_str!("../../migrations/listen/0002_listings.sql"),
    include_str!("../../migrations/listen/0003_offers.sql"),
    include_str!("../../migrations/listen/0004_escrow_listings.sql"),
    include_str!("../../migrations/listen/0005_retries.sql"),
    include_str!("../../migrations/listen/0006_listing_mint.sql"),
    include_str!("../../migrations/listen/0007_listing_usd.sql"),
    include_str!("../../migrations/listen/0008_token_offers_expire.sql"),
    include_str!("../../migrations/listen/0009_release_sends.sql"),
    include_str!("../../migrations/listen/0010_fee_at_release.sql"),
    include_str!("../../migrations/listen/0011_release_sends_shared.sql"),
    include_str!("../../migrations/listen/0012_lookup_table.sql"),
];

/// First retry delay of a buy; doubles per attempt up to [`RETRY_CAP_MS`].
pub const RETRY_BASE_MS: i64 = 500;
/// The longest wait between two attempts on one buy.
pub const RETRY_CAP_MS: i64 = 60_000;

/// The wait before attempt `attempts + 1` (capped exponential backoff).
pub fn retry_delay_ms(attempts: u32) -> i64 {
    let doublings = attempts.saturating_sub(1).min(20);
    (RETRY_BASE_MS << doublings).min(RETRY_CAP_MS)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One of the seller's listings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ListingRecord {
    /// Listing id.
    pub listing_id: String,
    /// Manifest item id.
    pub manifest_id: String,
    /// Bundle hash.
    pub bundle_hash: String,
    /// Blob item id (its key is in the keys dir).
    pub blob_id: String,
    /// `ar://` metadata URI for buyers' tokens.
    pub metadata_uri: String,
    /// Payment address.
    pub payment_address: String,
    /// Price in base units of `currency` (lamports for SOL).
    pub price_lamports: u64,
    /// What the price is paid in.
    pub currency: crate::settle::Currency,
    /// Expiry (unix seconds).
    pub expires_at: i64,
    /// Cancel slot, if cancelled.
    pub cancelled_at_slot: Option<u64>,
    /// The list memo's transaction.
    pub list_signature: String,
    /// Settled through the escrow program (buyers deposit; release pays out).
    pub escrow: bool,
    /// Priced in USD at settle time (each buy's quote fixes its lamports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<crate::settle::UsdTerms>,
}

/// State errors.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// SQLite.
    #[error("listen state database: {0}")]
    Sql(#[from] rusqlite::Error),
    /// Another daemon holds the lock.
    #[error("another `brainctl marketplace listen` is running on {0} (lock held); stop it first")]
    AlreadyRunning(PathBuf),
    /// Lock file I/O.
    #[error("lock file {path}: {source}")]
    Lock {
        /// Path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A step from the wrong state (e.g. releasing an unverified buy).
    #[error("buy {signature} is `{state}`, cannot {step}")]
    WrongState {
        /// Buy.
        signature: String,
        /// Its state.
        state: BuyState,
        /// The refused step.
        step: &'static str,
    },
    /// No such buy.
    #[error("no buy {0} in the listen state")]
    Unknown(String),
    /// Newer schema.
    #[error("listen state schema {0} is newer than this brainctl understands")]
    NewerSchema(i64),
}

/// Where a buy stands: `seen → verified → envelope_uploaded → released`,
/// or `rejected` (from `seen`, or abandoned after verifying).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BuyState {
    /// Recorded from the chain, not yet verified.
    Seen,
    /// A paid buy by the settlement rules.
    Verified,
    /// Its sealed envelope is stored (and its mint recorded).
    EnvelopeUploaded,
    /// Released exactly once.
    Released,
    /// Not a paid buy (or no longer releasable), with its reason.
    Rejected,
}

impl BuyState {
    /// Its name in the database and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            BuyState::Seen => "seen",
            BuyState::Verified => "verified",
            BuyState::EnvelopeUploaded => "envelope_uploaded",
            BuyState::Released => "released",
            BuyState::Rejected => "rejected",
        }
    }

    /// Its position on the release path (`None` for `rejected`).
    fn rank(self) -> Option<usize> {
        match self {
            BuyState::Seen => Some(0),
            BuyState::Verified => Some(1),
            BuyState::EnvelopeUploaded => Some(2),
            BuyState::Released => Some(3),
            BuyState::Rejected => None,
        }
    }
}

impl std::fmt::Display for BuyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for BuyState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl rusqlite::types::ToSql for BuyState {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for BuyState {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        match v.as_str()? {
            "seen" => Ok(BuyState::Seen),
            "verified" => Ok(BuyState::Verified),
            "envelope_uploaded" => Ok(BuyState::EnvelopeUploaded),
            "released" => Ok(BuyState::Released),
            "rejected" => Ok(BuyState::Rejected),
            other => Err(rusqlite::types::FromSqlError::Other(
                format!("unknown buy state {other:?}").into(),
            )),
        }
    }
}

/// Outcome of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The row moved.
    Applied,
    /// It was already there (a repeated step after a crash): nothing changed.
    AlreadyDone,
}

/// One buy row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuyRow {
    /// Signature.
    pub signature: String,
    /// Listing.
    pub listing_id: String,
    /// Slot.
    pub slot: u64,
    /// Where it stands.
    pub state: BuyState,
    /// Buyer, once verified.
    pub buyer: Option<String>,
    /// Buyer X25519, once verified.
    pub buyer_x25519: Option<String>,
    /// Envelope item id, once uploaded.
    pub envelope_id: Option<String>,
    /// Mint address, once chosen.
    pub mint_address: Option<String>,
    /// Release signature, once released.
    pub release_sig: Option<String>,
    /// Rejection JSON.
    pub reason: Option<String>,
    /// Failed attempts at the current step.
    pub attempts: u32,
    /// The last transient error at the current step.
    pub last_error: Option<String>,
    /// When the next attempt is due (unix ms).
    pub retry_at: i64,
    /// The receipt `mint_address` is: `light` | `token2022` (a mint for
    /// this buy), `light-listing` (a unit of the listing's mint), `none`.
    pub token_standard: Option<String>,
    /// The treasury's share its release must pay
    /// ([`VerifiedBuy::fee_at_release`]).
    pub fee_at_release: u64,
}

/// An offer as the seller decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferRecord {
    /// Offer id.
    pub offer_id: String,
    /// Listing.
    pub listing_id: String,
    /// The buyer.
    pub buyer: String,
    /// The price that applies (the counter's once countered).
    pub price_lamports: u64,
    /// Expiry (unix seconds) of the applicable terms.
    pub expires_at: i64,
    /// Where the seller stands.
    pub state: OfferState,
    /// The seller's counter, if any.
    pub counter_manifest_id: Option<String>,
    /// The buyer's offer manifest (item id).
    pub offer_manifest_id: String,
}

/// Where the seller stands on an offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OfferState {
    /// The seller countered (the counter's terms apply once accepted).
    Countered,
    /// Accepted: `listen` holds this buyer to the recorded price.
    Accepted,
    /// Rejected.
    Rejected,
}

impl OfferState {
    /// Its name in the database and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            OfferState::Countered => "countered",
            OfferState::Accepted => "accepted",
            OfferState::Rejected => "rejected",
        }
    }

    /// Whether the seller has decided (no further answer possible).
    pub fn is_final(self) -> bool {
        matches!(self, OfferState::Accepted | OfferState::Rejected)
    }
}

impl std::fmt::Display for OfferState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl rusqlite::types::ToSql for OfferState {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for OfferState {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        match v.as_str()? {
            "countered" => Ok(OfferState::Countered),
            "accepted" => Ok(OfferState::Accepted),
            "rejected" => Ok(OfferState::Rejected),
            other => Err(rusqlite::types::FromSqlError::Other(
                format!("unknown offer state {other:?}").into(),
            )),
        }
    }
}

/// The state database (locked for this process when opened as the daemon).
pub struct ListenDb {
    conn: Connection,
    _lock: Option<File>,
}

const BUY_COLUMNS: &str = "signature, listing_id, slot, state, buyer, buyer_x25519, envelope_id, mint_address, release_sig, reason, attempts, last_error, retry_at, token_standard, fee_at_release";

fn buy_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BuyRow> {
    Ok(BuyRow {
        signature: r.get(0)?,
        listing_id: r.get(1)?,
        slot: r.get::<_, i64>(2)? as u64,
        state: r.get(3)?,
        buyer: r.get(4)?,
        buyer_x25519: r.get(5)?,
        envelope_id: r.get(6)?,
        mint_address: r.get(7)?,
        release_sig: r.get(8)?,
        reason: r.get(9)?,
        attempts: r.get::<_, i64>(10)?.clamp(0, u32::MAX as i64) as u32,
        last_error: r.get(11)?,
        retry_at: r.get(12)?,
        token_standard: r.get(13)?,
        fee_at_release: r.get::<_, i64>(14)?.max(0) as u64,
    })
}

/// `text` cut to its first `head` and last `tail` characters.
fn clip(text: &str, head: usize, tail: usize) -> String {
    let n = text.chars().count();
    if n <= head + tail {
        return text.to_string();
    }
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start} … {end}")
}

fn ensure_parent(path: &Path) -> Result<(), StateError> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|source| StateError::Lock {
            path: dir.into(),
            source,
        }),
        None => Ok(()),
    }
}

/// The state key of the `n`-th deposit (from 0) recorded at escrow
/// account `escrow`: the address itself for the first (as every daemon
/// before re-deposits were answered recorded it), `<escrow>#<n>` after.
/// The key seeds the buyer's receipt mint, so each deposit's release mints
/// its own.
pub fn deposit_key(escrow: &str, n: u64) -> String {
    match n {
        0 => escrow.to_string(),
        n => format!("{escrow}#{n}"),
    }
}

/// The escrow account a deposit's state key names ([`deposit_key`]).
pub fn escrow_of_key(key: &str) -> &str {
    key.split_once('#').map_or(key, |(escrow, _)| escrow)
}

impl ListenDb {
    /// Opens (creating) the state at `path` for the seller's commands:
    /// no lock, safe beside a running daemon.
    pub fn open(path: &Path) -> Result<ListenDb, StateError> {
        Self::open_with(path, None)
    }

    /// Opens the state for the daemon: takes the exclusive daemon lock
    /// first (a second daemon gets [`StateError::AlreadyRunning`]).
    pub fn open_daemon(path: &Path) -> Result<ListenDb, StateError> {
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        ensure_parent(path)?;
        let lock = File::create(&lock_path).map_err(|source| StateError::Lock {
            path: lock_path.clone(),
            source,
        })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StateError::AlreadyRunning(path.into()))
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StateError::Lock {
                    path: lock_path,
                    source,
                })
            }
        }
        Self::open_with(path, Some(lock))
    }

    fn open_with(path: &Path, lock: Option<File>) -> Result<ListenDb, StateError> {
        // two processes opening a new state at once (an agent's parallel
        // tool calls) can meet SQLite's lock where its busy handler does
        // not wait (switching to WAL, upgrading a read): tried again
        let mut tries = 0;
        loop {
            match Self::connect(path) {
                Err(StateError::Sql(rusqlite::Error::SqliteFailure(e, _)))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && tries < 100 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(e),
                Ok(conn) => return Ok(ListenDb { conn, _lock: lock }),
            }
        }
    }

    fn connect(path: &Path) -> Result<Connection, StateError> {
        ensure_parent(path)?;
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StateError::NewerSchema(version));
        }
        crate::store::migrate::apply(&mut conn, MIGRATIONS, None)?;
        Ok(conn)
    }

    /// The seller's release lookup table's address, if one was made
    /// (`listen::tables`).
    pub fn lookup_table(&self) -> Result<Option<String>, StateError> {
        use rusqlite::OptionalExtension;
        Ok(self
            .conn
            .query_row("SELECT address FROM lookup_tables LIMIT 1", [], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// Records `address` as the seller's release lookup table (the only
    /// one), before the transaction creating it is sent.
    pub fn set_lookup_table(&mut self, address: &str) -> Result<(), StateError> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM lookup_tables", [])?;
        tx.execute(
            "INSERT INTO lookup_tables(address, created_at) VALUES (?1, ?2)",
            rusqlite::params![address, crate::clock::now_iso()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The file this state lives in (`None` for an in-memory one).
    pub fn path(&self) -> Option<&str> {
        self.conn.path().filter(|p| !p.is_empty())
    }

    /// Records a buy signature as seen (idempotent).
    pub fn record_seen(
        &mut self,
        signature: &str,
        listing_id: &str,
        slot: u64,
    ) -> Result<Step, StateError> {
        let now = crate::clock::now_iso();
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO buys(signature, listing_id, slot, state, seen_at, updated_at) VALUES (?1, ?2, ?3, 'seen', ?4, ?4)",
            params![signature, listing_id, slot as i64, now],
        )?;
        Ok(if n == 1 {
            Step::Applied
        } else {
            Step::AlreadyDone
        })
    }

    /// Whether a buy of `b`'s buyer on its listing is unanswered: then a
    /// deposit the program holds at its escrow address is that buy (see
    /// [`ListenDb::record_deposit`]).
    fn holds_unanswered(&self, b: &VerifiedBuy) -> Result<bool, StateError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM buys WHERE listing_id = ?1 AND buyer = ?2
               AND state IN ('seen', 'verified', 'envelope_uploaded'))",
            params![b.listing_id, b.buyer],
            |r| r.get(0),
        )?)
    }

    /// How many deposits are recorded at escrow account `escrow`.
    fn deposits_at(&self, escrow: &str) -> Result<u64, StateError> {
        // base58 has no '#', '%' or '_': the pattern matches this escrow's
        // keys only
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM buys WHERE signature = ?1 OR signature LIKE ?1 || '#%'",
            params![escrow],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as u64)
    }

    /// Records a deposit the escrow program holds at escrow account
    /// `b.signature`, seen `Deposited` now, straight as `verified`: the
    /// account is the evidence. Returns the key it is recorded under
    /// ([`deposit_key`]), or `None` when it is a deposit already recorded.
    ///
    /// One escrow address serves every deposit of one buyer on one listing
    /// in turn (the program lets the buyer close it and deposit again), so
    /// the address alone does not name a deposit: while a buy of this buyer
    /// on this listing is unanswered (`seen`, `verified`,
    /// `envelope_uploaded`: this escrow's, or a memo buy of an older
    /// daemon), the deposit is that buy; once every one is answered
    /// (revealed or declined, landed: `released`, `rejected`), an escrow
    /// the program still holds as `Deposited` is a new deposit, recorded
    /// under the next key. A deposit left unanswered is refunded with a
    /// share of the seller's stake, so a new one is never taken for an old.
    pub fn record_deposit(&mut self, b: &VerifiedBuy) -> Result<Option<String>, StateError> {
        self.in_one_commit(|db| {
            if db.holds_unanswered(b)? {
                return Ok(None);
            }
            let key = deposit_key(&b.signature, db.deposits_at(&b.signature)?);
            let now = crate::clock::now_iso();
            db.conn.execute(
                "INSERT INTO buys(signature, listing_id, slot, state, buyer, buyer_x25519, paid_lamports, price_lamports, offer_id, seen_at, updated_at) VALUES (?1, ?2, ?3, 'verified', ?4, ?5, ?6, ?7, NULL, ?8, ?8)",
                params![
                    key,
                    b.listing_id,
                    b.slot as i64,
                    b.buyer,
                    b.buyer_x25519,
                    b.paid_lamports as i64,
                    b.price_lamports as i64,
                    now
                ],
            )?;
            Ok(Some(key))
        })
    }

    /// One row.
    pub fn get(&self, signature: &str) -> Result<BuyRow, StateError> {
        self.conn
            .query_row(
                &format!("SELECT {BUY_COLUMNS} FROM buys WHERE signature = ?1"),
                [signature],
                buy_row,
            )
            .optional()?
            .ok_or_else(|| StateError::Unknown(signature.into()))
    }

    fn buys_where(
        &self,
        clause: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<BuyRow>, StateError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {BUY_COLUMNS} FROM buys WHERE {clause} ORDER BY slot, signature"
        ))?;
        let rows = stmt.query_map(args, buy_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every buy of one listing (all states), oldest slot first.
    pub fn buys_of(&self, listing_id: &str) -> Result<Vec<BuyRow>, StateError> {
        self.buys_where("listing_id = ?1", &[&listing_id])
    }

    /// The buys of one listing by one buyer (all states), oldest first: a
    /// client that pays again for what it bought is answered with these.
    pub fn buys_by(&self, listing_id: &str, buyer: &str) -> Result<Vec<BuyRow>, StateError> {
        self.buys_where("listing_id = ?1 AND buyer = ?2", &[&listing_id, &buyer])
    }

    /// Records a transient failure of `signature` at its current step:
    /// one more attempt, the error, and when to try again (capped
    /// exponential backoff). Returns the attempts so far.
    pub fn note_retry(&mut self, signature: &str, error: &str) -> Result<u32, StateError> {
        let row = self.get(signature)?;
        let attempts = row.attempts.saturating_add(1);
        let retry_at = now_ms() + retry_delay_ms(attempts);
        // errors come from RPC/gateway text: keep the head and the tail
        // (a failed simulation's last log lines say why)
        let error = clip(error, 300, 700);
        self.conn.execute(
            "UPDATE buys SET attempts = ?2, last_error = ?3, retry_at = ?4, updated_at = ?5 WHERE signature = ?1",
            params![signature, attempts as i64, error, retry_at, crate::clock::now_iso()],
        )?;
        Ok(attempts)
    }

    /// Runs `f` in one commit: the steps it records become durable
    /// together (one sync instead of one per step); an error rolls them all
    /// back, as a crash would, and every step is idempotent to redo. The
    /// transaction takes the write lock first (`BEGIN IMMEDIATE`, waiting
    /// on the busy timeout): a step that read in a plain transaction and
    /// then wrote would get SQLITE_BUSY at once, without waiting, whenever
    /// another connection (the seller's `list`, a `status`) wrote in
    /// between. Inside a commit already open, `f` simply joins it.
    pub fn in_one_commit<T>(
        &mut self,
        f: impl FnOnce(&mut ListenDb) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        if !self.conn.is_autocommit() {
            return f(self);
        }
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Unfinished buys in `state` whose next attempt is due at `now_ms`.
    pub fn due(&self, state: BuyState, now_ms: i64) -> Result<Vec<BuyRow>, StateError> {
        self.buys_where("state = ?1 AND retry_at <= ?2", &[&state, &now_ms])
    }

    /// How many buys paying under `floor` lamports went on towards their
    /// release (`envelope_uploaded` or `released`) at or after `since` (a
    /// row timestamp). Only direct buys of listings in SOL count: the
    /// floor is lamports (a token's base units are another unit), and an
    /// escrow deposit is never held back (a deposit left unanswered past
    /// its release window is refunded with a share of the stake).
    pub fn below_cost_released_since(&self, floor: u64, since: &str) -> Result<u64, StateError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM buys WHERE paid_lamports < ?1
               AND state IN ('envelope_uploaded', 'released') AND updated_at >= ?2
               AND listing_id NOT IN (SELECT listing_id FROM listings WHERE escrow != 0 OR mint IS NOT NULL)",
            params![floor as i64, since],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as u64)
    }

    /// The `verified` direct buys of listings in SOL paying under `floor`
    /// lamports (as [`ListenDb::below_cost_released_since`] counts them).
    pub fn below_cost_verified(
        &self,
        floor: u64,
    ) -> Result<std::collections::HashSet<String>, StateError> {
        let mut st = self.conn.prepare(
            "SELECT signature FROM buys WHERE state = 'verified' AND paid_lamports < ?1
               AND listing_id NOT IN (SELECT listing_id FROM listings WHERE escrow != 0 OR mint IS NOT NULL)",
        )?;
        let rows = st.query_map([floor as i64], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Moves `signature` from `from` to `to` with `set` columns, in one
    /// transaction. Already at or past `to` on the same path: AlreadyDone.
    fn advance(
        &mut self,
        signature: &str,
        from: BuyState,
        to: BuyState,
        step: &'static str,
        set: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Step, StateError> {
        self.in_one_commit(|db| {
            let state: Option<BuyState> = db
                .conn
                .query_row(
                    "SELECT state FROM buys WHERE signature = ?1",
                    [signature],
                    |r| r.get(0),
                )
                .optional()?;
            let state = state.ok_or_else(|| StateError::Unknown(signature.into()))?;
            if state != from {
                return match (state.rank(), to.rank()) {
                    (Some(have), Some(want)) if have >= want => Ok(Step::AlreadyDone),
                    _ if state == to => Ok(Step::AlreadyDone),
                    _ => Err(StateError::WrongState {
                        signature: signature.into(),
                        state,
                        step,
                    }),
                };
            }
            let now = crate::clock::now_iso();
            let (to, from) = (to.as_str(), from.as_str());
            let sql = format!("UPDATE buys SET state = '{to}', updated_at = ?1, attempts = 0, last_error = NULL, retry_at = 0{set} WHERE signature = ?2 AND state = '{from}'");
            let mut all: Vec<&dyn rusqlite::ToSql> = vec![&now, &signature];
            all.extend_from_slice(args);
            db.conn.execute(&sql, all.as_slice())?;
            Ok(Step::Applied)
        })
    }

    /// `seen → verified`.
    pub fn mark_verified(&mut self, b: &VerifiedBuy) -> Result<Step, StateError> {
        self.advance(
            &b.signature,
            BuyState::Seen,
            BuyState::Verified,
            "verify",
            ", buyer = ?3, buyer_x25519 = ?4, paid_lamports = ?5, price_lamports = ?6, offer_id = ?7, fee_at_release = ?8",
            &[&b.buyer, &b.buyer_x25519, &(b.paid_lamports as i64), &(b.price_lamports as i64), &b.offer_id, &(b.fee_at_release as i64)],
        )
    }

    /// `seen → rejected` with the reason. A rejected buy never moves again.
    pub fn mark_rejected(&mut self, signature: &str, why: &Rejection) -> Result<Step, StateError> {
        let reason = serde_json::to_string(why).expect("serializes");
        self.advance(
            signature,
            BuyState::Seen,
            BuyState::Rejected,
            "reject",
            ", reason = ?3",
            &[&reason],
        )
    }

    /// `verified | envelope_uploaded → rejected` with the reason: a verified
    /// buy that can no longer be released (its escrow was refunded).
    pub fn mark_abandoned(&mut self, signature: &str, why: &Rejection) -> Result<Step, StateError> {
        let reason = serde_json::to_string(why).expect("serializes");
        let tx = self.conn.savepoint()?;
        let n = tx.execute(
            "UPDATE buys SET state = 'rejected', reason = ?3, updated_at = ?1
             WHERE signature = ?2 AND state IN ('verified', 'envelope_uploaded')",
            params![crate::clock::now_iso(), signature, reason],
        )?;
        tx.commit()?;
        if n == 1 {
            return Ok(Step::Applied);
        }
        match self.get(signature)?.state {
            BuyState::Rejected => Ok(Step::AlreadyDone),
            state => Err(StateError::WrongState {
                signature: signature.into(),
                state,
                step: "abandon",
            }),
        }
    }

    /// `verified → envelope_uploaded`, naming the envelope and the mint
    /// (of `standard`: `light` | `token2022`).
    pub fn mark_envelope_uploaded(
        &mut self,
        signature: &str,
        envelope_id: &str,
        mint: &str,
        standard: &str,
    ) -> Result<Step, StateError> {
        self.advance(
            signature,
            BuyState::Verified,
            BuyState::EnvelopeUploaded,
            "record the envelope",
            ", envelope_id = ?3, mint_address = ?4, token_standard = ?5",
            &[&envelope_id, &mint, &standard],
        )
    }

    /// `envelope_uploaded → released`.
    pub fn mark_released(
        &mut self,
        signature: &str,
        release_sig: &str,
    ) -> Result<Step, StateError> {
        self.advance(
            signature,
            BuyState::EnvelopeUploaded,
            BuyState::Released,
            "release",
            ", release_sig = ?3",
            &[&release_sig],
        )
    }

    /// Buys not yet released or rejected, oldest slot first (for resume).
    pub fn unfinished(&self) -> Result<Vec<BuyRow>, StateError> {
        self.buys_where("state NOT IN ('released', 'rejected')", &[])
    }

    /// Records a new listing of ours.
    pub fn add_listing(&mut self, l: &ListingRecord) -> Result<(), StateError> {
        self.conn.execute(
            "INSERT INTO listings(listing_id, manifest_id, bundle_hash, blob_id, metadata_uri, payment_address, price_lamports, expires_at, cancelled_at_slot, list_signature, created_at, escrow, mint, usd_at_settle)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                l.listing_id, l.manifest_id, l.bundle_hash, l.blob_id, l.metadata_uri, l.payment_address,
                l.price_lamports as i64, l.expires_at, l.cancelled_at_slot.map(|s| s as i64), l.list_signature,
                crate::clock::now_iso(), l.escrow,
                match &l.currency {
                    crate::settle::Currency::Sol => None,
                    crate::settle::Currency::Token { mint } => Some(mint),
                },
                l.usd.as_ref().map(|u| serde_json::to_string(u).expect("terms serialize")),
            ],
        )?;
        Ok(())
    }

    /// Records the transaction that posted our listing's `list` memo.
    pub fn set_list_signature(
        &mut self,
        listing_id: &str,
        signature: &str,
    ) -> Result<(), StateError> {
        self.conn.execute(
            "UPDATE listings SET list_signature = ?2 WHERE listing_id = ?1",
            params![listing_id, signature],
        )?;
        Ok(())
    }

    /// Records that our listing was cancelled at `slot`.
    pub fn mark_listing_cancelled(
        &mut self,
        listing_id: &str,
        slot: u64,
    ) -> Result<bool, StateError> {
        let n = self.conn.execute(
            "UPDATE listings SET cancelled_at_slot = ?2 WHERE listing_id = ?1 AND cancelled_at_slot IS NULL",
            params![listing_id, slot as i64],
        )?;
        Ok(n == 1)
    }

    /// Records (or updates) an offer's state and applicable price (a
    /// recorded counter is kept when `rec` names none).
    pub fn upsert_offer(&mut self, rec: &OfferRecord) -> Result<(), StateError> {
        let OfferRecord {
            offer_id,
            listing_id,
            buyer,
            price_lamports,
            expires_at,
            state,
            counter_manifest_id,
            offer_manifest_id,
        } = rec;
        self.conn.execute(
            "INSERT INTO offers(offer_id, listing_id, buyer, offer_manifest_id, price_lamports, expires_at, counter_manifest_id, state, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT(offer_id) DO UPDATE SET price_lamports = excluded.price_lamports, expires_at = excluded.expires_at,
                counter_manifest_id = COALESCE(excluded.counter_manifest_id, offers.counter_manifest_id),
                state = excluded.state, updated_at = excluded.updated_at",
            params![offer_id, listing_id, buyer, offer_manifest_id, *price_lamports as i64, expires_at, counter_manifest_id, state, crate::clock::now_iso()],
        )?;
        Ok(())
    }

    fn offers_where(&self, clause: &str, arg: &str) -> Result<Vec<OfferRecord>, StateError> {
        let sql = format!(
            "SELECT offer_id, listing_id, buyer, price_lamports, expires_at, state, counter_manifest_id, offer_manifest_id FROM offers WHERE {clause} ORDER BY updated_at"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([arg], |r| {
            Ok(OfferRecord {
                offer_id: r.get(0)?,
                listing_id: r.get(1)?,
                buyer: r.get(2)?,
                price_lamports: r.get::<_, i64>(3)? as u64,
                expires_at: r.get(4)?,
                state: r.get(5)?,
                counter_manifest_id: r.get(6)?,
                offer_manifest_id: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// One offer, if recorded.
    pub fn offer(&self, offer_id: &str) -> Result<Option<OfferRecord>, StateError> {
        Ok(self.offers_where("offer_id = ?1", offer_id)?.pop())
    }

    /// Offers on one listing.
    pub fn offers_of(&self, listing_id: &str) -> Result<Vec<OfferRecord>, StateError> {
        self.offers_where("listing_id = ?1", listing_id)
    }

    /// Buy states of one listing, counted.
    pub fn buy_counts(&self, listing_id: &str) -> Result<Vec<(String, i64)>, StateError> {
        let mut stmt = self.conn.prepare(
            "SELECT state, count(*) FROM buys WHERE listing_id = ?1 GROUP BY state ORDER BY state",
        )?;
        let rows = stmt.query_map([listing_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Accepted offers, oldest decision first.
    pub fn accepted_offers(&self) -> Result<Vec<OfferRecord>, StateError> {
        self.offers_where("state = ?1", OfferState::Accepted.as_str())
    }

    /// Our listings.
    pub fn listings(&self) -> Result<Vec<ListingRecord>, StateError> {
        let mut stmt = self.conn.prepare(
            "SELECT listing_id, manifest_id, bundle_hash, blob_id, metadata_uri, payment_address, price_lamports, expires_at, cancelled_at_slot, list_signature, escrow, mint, usd_at_settle FROM listings ORDER BY created_at",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ListingRecord {
                listing_id: r.get(0)?,
                manifest_id: r.get(1)?,
                bundle_hash: r.get(2)?,
                blob_id: r.get(3)?,
                metadata_uri: r.get(4)?,
                payment_address: r.get(5)?,
                price_lamports: r.get::<_, i64>(6)? as u64,
                expires_at: r.get(7)?,
                cancelled_at_slot: r.get::<_, Option<i64>>(8)?.map(|s| s as u64),
                list_signature: r.get(9)?,
                escrow: r.get(10)?,
                currency: match r.get::<_, Option<String>>(11)? {
                    None => crate::settle::Currency::Sol,
                    Some(mint) => crate::settle::Currency::Token { mint },
                },
                usd: r
                    .get::<_, Option<String>>(12)?
                    .map(|j| {
                        serde_json::from_str(&j).map_err(|e| {
                            rusqlite::Error::FromSqlConversionFailure(
                                12,
                                rusqlite::types::Type::Text,
                                Box::new(e),
                            )
                        })
                    })
                    .transpose()?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Counts per state (for the health line).
    pub fn counts(&self) -> Result<Vec<(String, i64)>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT state, count(*) FROM buys GROUP BY state ORDER BY state")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The checkpoint of a watched address.
    pub fn checkpoint(&self, address: &str) -> Result<Option<(String, u64)>, StateError> {
        Ok(self
            .conn
            .query_row(
                "SELECT signature, slot FROM checkpoints WHERE address = ?1",
                [address],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)),
            )
            .optional()?)
    }

    /// Moves the checkpoint forward (never back); callers pass only final slots.
    pub fn set_checkpoint(
        &mut self,
        address: &str,
        signature: &str,
        slot: u64,
    ) -> Result<(), StateError> {
        self.conn.execute(
            "INSERT INTO checkpoints(address, signature, slot, updated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(address) DO UPDATE SET signature = excluded.signature, slot = excluded.slot, updated_at = excluded.updated_at
             WHERE excluded.slot >= checkpoints.slot",
            params![address, signature, slot as i64, crate::clock::now_iso()],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buy(sig: &str) -> VerifiedBuy {
        VerifiedBuy {
            signature: sig.into(),
            listing_id: "20261101-0123456789ab".into(),
            buyer: "Buyer".into(),
            buyer_x25519: "X".into(),
            paid_lamports: 10,
            price_lamports: 10,
            offer_id: None,
            slot: 5,
            fee_at_release: 0,
        }
    }

    /// The daemon's steps read then write; another connection committing
    /// in between (the seller's `list`, an agent's tool call, a reader
    /// that migrates on open) must make them wait, never fail: SQLite
    /// answers a stale read snapshot's upgrade to a write with
    /// SQLITE_BUSY at once, the busy timeout skipped, and a state error
    /// ends the daemon.
    #[test]
    fn steps_wait_for_other_writers_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listen.db");
        let mut db = ListenDb::open(&path).unwrap();
        let n = 400;
        for i in 0..n {
            db.record_seen(&format!("s{i}"), "20261101-0123456789ab", 5)
                .unwrap();
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (path, stop) = (path.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut other = ListenDb::open(&path).unwrap();
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        other
                            .record_seen(&format!("w{w}-{i}"), "20261101-0123456789ab", 6)
                            .unwrap();
                        i += 1;
                    }
                })
            })
            .collect();
        for i in 0..n {
            let sig = format!("s{i}");
            db.mark_verified(&buy(&sig)).unwrap();
            db.mark_envelope_uploaded(&sig, "env", "mint", "light")
                .unwrap();
            db.mark_released(&sig, "r").unwrap();
            let mut deposit = buy(&format!("d{i}"));
            deposit.buyer = format!("buyer{i}");
            assert!(db.record_deposit(&deposit).unwrap().is_some());
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for w in writers {
            w.join().unwrap();
        }
    }

    #[test]
    fn steps_are_ordered_idempotent_and_durable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listen.db");
        {
            let mut db = ListenDb::open(&path).unwrap();
            assert_eq!(
                db.record_seen("s1", "20261101-0123456789ab", 5).unwrap(),
                Step::Applied
            );
            assert_eq!(
                db.record_seen("s1", "20261101-0123456789ab", 5).unwrap(),
                Step::AlreadyDone
            );
            assert!(
                matches!(
                    db.mark_released("s1", "r"),
                    Err(StateError::WrongState { .. })
                ),
                "no skipping"
            );
            assert_eq!(db.mark_verified(&buy("s1")).unwrap(), Step::Applied);
            assert_eq!(db.mark_verified(&buy("s1")).unwrap(), Step::AlreadyDone);
            assert_eq!(
                db.mark_envelope_uploaded("s1", "env", "mint", "light")
                    .unwrap(),
                Step::Applied
            );
            // "crash" here: the process ends with the buy half done
        }
        let mut db = ListenDb::open(&path).unwrap();
        let pending = db.unfinished().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(
            (
                pending[0].state.as_str(),
                pending[0].mint_address.as_deref()
            ),
            ("envelope_uploaded", Some("mint"))
        );
        assert_eq!(
            db.mark_verified(&buy("s1")).unwrap(),
            Step::AlreadyDone,
            "a replayed earlier step changes nothing"
        );
        assert_eq!(db.mark_released("s1", "rel").unwrap(), Step::Applied);
        assert_eq!(db.mark_released("s1", "other").unwrap(), Step::AlreadyDone);
        assert_eq!(
            db.get("s1").unwrap().release_sig.as_deref(),
            Some("rel"),
            "first release kept"
        );
        assert!(db.unfinished().unwrap().is_empty());
    }

    #[test]
    fn a_held_deposit_is_recorded_once_beside_a_memo_buy_of_its_buyer() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ListenDb::open(&dir.path().join("l.db")).unwrap();
        // a buy of this buyer recorded from its memo (an older daemon)
        db.record_seen("memo-sig", "20261101-0123456789ab", 5)
            .unwrap();
        db.mark_verified(&buy("memo-sig")).unwrap();
        assert_eq!(
            db.record_deposit(&buy("EscrowAccount1")).unwrap(),
            None,
            "the same buyer's unanswered buy on the same listing is that deposit"
        );
        // another buyer's deposit: recorded straight as verified, once
        let mut other = buy("EscrowAccount2");
        other.buyer = "Other".into();
        assert_eq!(
            db.record_deposit(&other).unwrap().as_deref(),
            Some("EscrowAccount2")
        );
        assert_eq!(db.record_deposit(&other).unwrap(), None);
        let row = db.get("EscrowAccount2").unwrap();
        assert_eq!(
            (
                row.state.as_str(),
                row.buyer.as_deref(),
                row.buyer_x25519.as_deref()
            ),
            ("verified", Some("Other"), Some("X"))
        );
        // a rejected memo buy of a buyer does not hide that buyer's deposit
        let mut third = buy("EscrowAccount3");
        third.buyer = "Third".into();
        db.record_seen("bad", "20261101-0123456789ab", 6).unwrap();
        db.mark_rejected("bad", &Rejection::TxFailed).unwrap();
        assert!(db.record_deposit(&third).unwrap().is_some());
    }

    /// The program lets a buyer close its escrow and deposit again at the
    /// same address: once every deposit recorded there is answered, the
    /// deposit held there is a new buy, under its own key (so its own
    /// receipt mint); while one is unanswered, it is that one.
    #[test]
    fn a_deposit_again_at_an_answered_escrow_is_a_new_buy() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ListenDb::open(&dir.path().join("l.db")).unwrap();
        let mut deposit = buy("Escrow1");
        deposit.buyer = "Repeat".into();
        assert!(!db.holds_unanswered(&deposit).unwrap());
        assert_eq!(
            db.record_deposit(&deposit).unwrap().as_deref(),
            Some("Escrow1")
        );
        // unanswered: the same deposit, every pass
        for _ in 0..2 {
            assert!(db.holds_unanswered(&deposit).unwrap());
            assert_eq!(db.record_deposit(&deposit).unwrap(), None);
        }
        // revealed: a deposit held again is the buyer buying again
        db.mark_envelope_uploaded("Escrow1", "Escrow1", "mint", "light")
            .unwrap();
        db.mark_released("Escrow1", "reveal").unwrap();
        assert!(!db.holds_unanswered(&deposit).unwrap());
        assert_eq!(
            db.record_deposit(&deposit).unwrap().as_deref(),
            Some("Escrow1#1")
        );
        assert_eq!(db.record_deposit(&deposit).unwrap(), None);
        // declined: and again
        db.mark_abandoned("Escrow1#1", &Rejection::BlindingDeclined)
            .unwrap();
        assert_eq!(
            db.record_deposit(&deposit).unwrap().as_deref(),
            Some("Escrow1#2")
        );
        let row = db.get("Escrow1#2").unwrap();
        assert_eq!(
            (row.state.as_str(), escrow_of_key(&row.signature)),
            ("verified", "Escrow1")
        );
        // another escrow whose address shares a prefix is not counted
        let mut other = buy("Escrow");
        other.buyer = "Other".into();
        assert_eq!(
            db.record_deposit(&other).unwrap().as_deref(),
            Some("Escrow")
        );
        assert_eq!(deposit_key("E", 0), "E");
        assert_eq!(deposit_key("E", 3), "E#3");
        assert_eq!(escrow_of_key("E#3"), "E");
    }

    /// The below-cost budget holds back only direct buys of listings in
    /// SOL: an escrow deposit is never held (the program slashes a missed
    /// window), and a token listing's base units are not lamports.
    #[test]
    fn only_direct_sol_buys_are_held_below_cost() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ListenDb::open(&dir.path().join("l.db")).unwrap();
        let listing = |id: &str, escrow: bool, currency: crate::settle::Currency| ListingRecord {
            listing_id: id.into(),
            manifest_id: "m".into(),
            bundle_hash: "h".into(),
            blob_id: "b".into(),
            metadata_uri: "ar://m".into(),
            payment_address: "P".into(),
            price_lamports: 10,
            currency,
            expires_at: i64::MAX,
            cancelled_at_slot: None,
            list_signature: "l".into(),
            escrow,
            usd: None,
        };
        let token = || crate::settle::Currency::Token { mint: "M".into() };
        let ids = [
            ("20261101-00000000000a", false, crate::settle::Currency::Sol),
            ("20261101-00000000000b", true, crate::settle::Currency::Sol),
            ("20261101-00000000000c", false, token()),
            ("20261101-00000000000d", true, token()),
        ];
        for (i, (id, escrow, currency)) in ids.into_iter().enumerate() {
            db.add_listing(&listing(id, escrow, currency)).unwrap();
            let mut b = buy(&format!("buy{i}"));
            b.listing_id = id.into();
            b.buyer = format!("buyer{i}");
            if escrow {
                db.record_deposit(&b).unwrap();
            } else {
                db.record_seen(&b.signature, id, 5).unwrap();
                db.mark_verified(&b).unwrap();
            }
        }
        let held = db.below_cost_verified(1_000).unwrap();
        assert_eq!(held, ["buy0".to_string()].into_iter().collect());
        for i in 0..4 {
            let sig = format!("buy{i}");
            db.mark_envelope_uploaded(&sig, "env", "mint", "light")
                .unwrap();
        }
        assert_eq!(db.below_cost_released_since(1_000, "").unwrap(), 1);
    }

    #[test]
    fn rejected_buys_never_release() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ListenDb::open(&dir.path().join("l.db")).unwrap();
        db.record_seen("bad", "20261101-0123456789ab", 7).unwrap();
        db.mark_rejected("bad", &Rejection::Underpaid { paid: 1, price: 2 })
            .unwrap();
        assert!(db.get("bad").unwrap().reason.unwrap().contains("underpaid"));
        assert!(matches!(
            db.mark_verified(&buy("bad")),
            Err(StateError::WrongState { .. })
        ));
        assert!(matches!(
            db.mark_envelope_uploaded("bad", "e", "m", "light"),
            Err(StateError::WrongState { .. })
        ));
        assert!(matches!(
            db.mark_released("bad", "r"),
            Err(StateError::WrongState { .. })
        ));
        assert!(matches!(
            db.mark_verified(&buy("nope")),
            Err(StateError::Unknown(_))
        ));
        assert_eq!(db.counts().unwrap(), vec![("rejected".to_string(), 1)]);
    }

    #[test]
    fn one_daemon_per_state_and_checkpoints_only_advance() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db");
        let mut db = ListenDb::open_daemon(&path).unwrap();
        assert!(matches!(
            ListenDb::open_daemon(&path),
            Err(StateError::AlreadyRunning(_))
        ));
        // the seller's commands open it beside the daemon and write to it
        let mut cmd = ListenDb::open(&path).unwrap();
        cmd.set_checkpoint("Other", "sigX", 3).unwrap();
        assert_eq!(db.checkpoint("Other").unwrap(), Some(("sigX".into(), 3)));
        drop(cmd);
        db.set_checkpoint("Seller", "sigA", 10).unwrap();
        db.set_checkpoint("Seller", "sigOld", 9).unwrap();
        assert_eq!(db.checkpoint("Seller").unwrap(), Some(("sigA".into(), 10)));
        db.set_checkpoint("Seller", "sigB", 11).unwrap();
        assert_eq!(db.checkpoint("Seller").unwrap(), Some(("sigB".into(), 11)));
        drop(db);
        assert!(
            ListenDb::open_daemon(&path).is_ok(),
            "lock released with the process/handle"
        );
    }

    #[test]
    fn a_refunded_escrow_buy_is_abandoned_once_and_never_released() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ListenDb::open(&dir.path().join("listen.db")).unwrap();
        db.record_seen("s1", "20261101-0123456789ab", 5).unwrap();
        let why = Rejection::RefundedBeforeRelease;
        assert!(
            matches!(
                db.mark_abandoned("s1", &why),
                Err(StateError::WrongState { .. })
            ),
            "only a verified buy is abandoned"
        );
        db.mark_verified(&buy("s1")).unwrap();
        db.mark_envelope_uploaded("s1", "env", "mint", "light")
            .unwrap();
        assert_eq!(db.mark_abandoned("s1", &why).unwrap(), Step::Applied);
        assert_eq!(db.mark_abandoned("s1", &why).unwrap(), Step::AlreadyDone);
        let row = db.get("s1").unwrap();
        assert_eq!(row.state, "rejected");
        assert!(db.unfinished().unwrap().is_empty(), "never retried");
        assert!(db.mark_released("s1", "r").is_err(), "never released");
    }

    #[test]
    fn a_stuck_buy_backs_off_and_a_step_clears_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ListenDb::open(&dir.path().join("listen.db")).unwrap();
        db.record_seen("s1", "20261101-0123456789ab", 5).unwrap();
        assert_eq!(db.due(BuyState::Seen, now_ms()).unwrap().len(), 1);
        assert_eq!(db.note_retry("s1", "not visible yet").unwrap(), 1);
        assert_eq!(db.note_retry("s1", "rpc 503").unwrap(), 2);
        let row = db.get("s1").unwrap();
        assert_eq!(
            (row.attempts, row.last_error.as_deref()),
            (2, Some("rpc 503"))
        );
        assert!(
            db.due(BuyState::Seen, now_ms()).unwrap().is_empty(),
            "backing off"
        );
        assert_eq!(db.due(BuyState::Seen, row.retry_at).unwrap().len(), 1);
        assert_eq!(db.unfinished().unwrap().len(), 1, "never dropped");
        db.mark_verified(&buy("s1")).unwrap();
        let row = db.get("s1").unwrap();
        assert_eq!((row.attempts, row.last_error, row.retry_at), (0, None, 0));
        assert_eq!(retry_delay_ms(1), RETRY_BASE_MS);
        assert_eq!(retry_delay_ms(2), 2 * RETRY_BASE_MS);
        assert_eq!(retry_delay_ms(u32::MAX), RETRY_CAP_MS);
        let long = format!("{}{}", "a".repeat(2_000), "why it failed");
        let kept = clip(&long, 300, 700);
        assert!(kept.ends_with("why it failed") && kept.chars().count() == 1_003);
    }
}
