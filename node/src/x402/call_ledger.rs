//! The durable record of paid tool calls: one row per payment (keyed by
//! its transaction signature, which the node's deterministic co-signature
//! makes the same for the same payment sent again), moving
//! `sending` → `paid` → `served` (or `failed` when it landed failed).
//!
//! What makes a paid call run once: a payment whose row is `served` is
//! refused; one `paid` but not yet `served` (the process stopped between
//! the two) runs its call on the next try; one `sending` (the answer never
//! came) is reconciled against the chain by sending it again.
//!
//! Several processes may share one ledger (more than one `mcp --http`
//! beside one wallet): a request settling a payment first claims its row
//! ([`CallLedger::claim`]), so a payment retried at two processes at once
//! runs its call at one of them; a claim its process never released (it
//! was killed) lapses after its lease.
//!
//! Owns: the SQLite file (WAL, 0600, beside the wallet). Never: talks to
//! the chain or decides whether a payment is good.

use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// The ledger's name, in the wallet's directory.
pub const LEDGER_FILE: &str = "paid-calls.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS paid_calls (
    signature TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    payer TEXT NOT NULL,
    mint TEXT NOT NULL,
    units INTEGER NOT NULL CHECK (units > 0),
    state TEXT NOT NULL CHECK (state IN ('sending', 'paid', 'served', 'failed')),
    recorded_at INTEGER NOT NULL,
    settled_at INTEGER,
    served_at INTEGER,
    claimed_by TEXT,
    claimed_at INTEGER
);
";

/// The claim columns, added to a ledger made before them.
const CLAIM_COLUMNS: [&str; 2] = ["claimed_by TEXT", "claimed_at INTEGER"];

/// The claim columns `conn`'s ledger lacks.
fn missing_claim_columns(conn: &Connection) -> Result<Vec<&'static str>, LedgerError> {
    let has: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('paid_calls')")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(CLAIM_COLUMNS
        .into_iter()
        .filter(|column| {
            let name = column.split(' ').next().unwrap_or(column);
            !has.iter().any(|h| h == name)
        })
        .collect())
}

/// Where a payment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallState {
    /// Recorded and sent (or about to be); not known to have landed.
    Sending,
    /// Landed; its call has not answered yet.
    Paid,
    /// Its call ran and answered.
    Served,
    /// Landed failed: nothing was paid.
    Failed,
}

impl CallState {
    fn as_str(self) -> &'static str {
        match self {
            CallState::Sending => "sending",
            CallState::Paid => "paid",
            CallState::Served => "served",
            CallState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Option<CallState> {
        [
            CallState::Sending,
            CallState::Paid,
            CallState::Served,
            CallState::Failed,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// One payment for one call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaidCall {
    /// The payment's transaction signature.
    pub signature: String,
    /// The tool paid for.
    pub tool: String,
    /// Who paid (the transfer's authority).
    pub payer: String,
    /// The token.
    pub mint: String,
    /// The price paid, in base units.
    pub units: u64,
    /// `sending`, `paid`, `served` or `failed`.
    pub state: String,
    /// When it was recorded (unix seconds).
    pub recorded_at: i64,
    /// When it landed.
    pub settled_at: Option<i64>,
    /// When its call answered.
    pub served_at: Option<i64>,
}

/// Why the ledger failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// SQLite.
    #[error("paid-call ledger: {0}")]
    Sql(#[from] rusqlite::Error),
    /// Creating the file.
    #[error("paid-call ledger {path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A row the code did not write.
    #[error("paid-call ledger: unknown state {0:?}")]
    State(String),
}

/// The open ledger.
pub struct CallLedger {
    conn: Connection,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl CallLedger {
    /// Opens (creating, 0600) the ledger at `path`.
    pub fn open(path: &Path) -> Result<CallLedger, LedgerError> {
        use crate::store::private_db::{self, PrivateDbError};
        let mut conn = private_db::open(path).map_err(|e| match e {
            PrivateDbError::Io { path, source } => LedgerError::Io { path, source },
            PrivateDbError::Sql(e) => LedgerError::Sql(e),
        })?;
        conn.execute_batch(SCHEMA)?;
        if !missing_claim_columns(&conn)?.is_empty() {
            // a ledger made before the claims: one process at a time adds
            // them (read again under the write lock)
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for column in missing_claim_columns(&tx)? {
                tx.execute_batch(&format!("ALTER TABLE paid_calls ADD COLUMN {column}"))?;
            }
            tx.commit()?;
        }
        Ok(CallLedger { conn })
    }

    /// Claims `signature`'s row for `owner` (a process's id) to settle it
    /// and run its call: whether it did. A row claimed by another owner
    /// less than `lease_secs` ago is not taken; the same owner claiming
    /// again renews its claim.
    pub fn claim(
        &self,
        signature: &str,
        owner: &str,
        lease_secs: i64,
    ) -> Result<bool, LedgerError> {
        self.claim_at(signature, owner, lease_secs, now())
    }

    fn claim_at(
        &self,
        signature: &str,
        owner: &str,
        lease_secs: i64,
        at: i64,
    ) -> Result<bool, LedgerError> {
        let n = self.conn.execute(
            "UPDATE paid_calls SET claimed_by = ?2, claimed_at = ?3
             WHERE signature = ?1
               AND (claimed_by IS NULL OR claimed_by = ?2 OR claimed_at <= ?3 - ?4)",
            params![signature, owner, at, lease_secs],
        )?;
        Ok(n == 1)
    }

    /// Releases `owner`'s claim on `signature` (another's is left alone).
    pub fn release_claim(&self, signature: &str, owner: &str) -> Result<(), LedgerError> {
        self.conn.execute(
            "UPDATE paid_calls SET claimed_by = NULL, claimed_at = NULL
             WHERE signature = ?1 AND claimed_by = ?2",
            params![signature, owner],
        )?;
        Ok(())
    }

    /// Where `signature` stands (`None`: never recorded).
    pub fn state(&self, signature: &str) -> Result<Option<CallState>, LedgerError> {
        let s: Option<String> = self
            .conn
            .query_row(
                "SELECT state FROM paid_calls WHERE signature = ?1",
                [signature],
                |r| r.get(0),
            )
            .optional()?;
        s.map(|s| CallState::parse(&s).ok_or(LedgerError::State(s)))
            .transpose()
    }

    /// Records a payment about to be sent, unless it is recorded already;
    /// returns where it stands after, and whether this call recorded it.
    pub fn record_sending(
        &self,
        signature: &str,
        tool: &str,
        payer: &str,
        mint: &str,
        units: u64,
    ) -> Result<(CallState, bool), LedgerError> {
        let inserted = self.conn.execute(
            "INSERT OR IGNORE INTO paid_calls (signature, tool, payer, mint, units, state, recorded_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'sending', ?6)",
            params![signature, tool, payer, mint, units as i64, now()],
        )? == 1;
        Ok((
            self.state(signature)?.unwrap_or(CallState::Sending),
            inserted,
        ))
    }

    /// Forgets a payment still `sending` that provably never went out
    /// (the simulation refused it on its first try).
    pub fn forget_unsent(&self, signature: &str) -> Result<(), LedgerError> {
        self.conn.execute(
            "DELETE FROM paid_calls WHERE signature = ?1 AND state = 'sending'",
            [signature],
        )?;
        Ok(())
    }

    /// Moves `signature` from `from` to `to`; whether it did.
    pub fn advance(
        &self,
        signature: &str,
        from: CallState,
        to: CallState,
    ) -> Result<bool, LedgerError> {
        let column = match to {
            CallState::Paid | CallState::Failed => "settled_at",
            CallState::Served => "served_at",
            CallState::Sending => "recorded_at",
        };
        let n = self.conn.execute(
            &format!(
                "UPDATE paid_calls SET state = ?3, {column} = ?4 WHERE signature = ?1 AND state = ?2"
            ),
            params![signature, from.as_str(), to.as_str(), now()],
        )?;
        Ok(n == 1)
    }

    /// Every payment, oldest first.
    pub fn all(&self) -> Result<Vec<PaidCall>, LedgerError> {
        let mut st = self.conn.prepare(
            "SELECT signature, tool, payer, mint, units, state, recorded_at, settled_at, served_at
             FROM paid_calls ORDER BY recorded_at, signature",
        )?;
        let rows = st.query_map([], |r| {
            Ok(PaidCall {
                signature: r.get(0)?,
                tool: r.get(1)?,
                payer: r.get(2)?,
                mint: r.get(3)?,
                units: r.get::<_, i64>(4)?.max(0) as u64,
                state: r.get(5)?,
                recorded_at: r.get(6)?,
                settled_at: r.get(7)?,
                served_at: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payment_moves_forward_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEDGER_FILE);
        let l = CallLedger::open(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(l.state("s").unwrap(), None);
        let rec = |l: &CallLedger| {
            l.record_sending("s", "memory_search", "p", "m", 10)
                .unwrap()
        };
        assert_eq!(rec(&l), (CallState::Sending, true));
        l.forget_unsent("s").unwrap();
        assert_eq!(l.state("s").unwrap(), None);
        assert_eq!(rec(&l), (CallState::Sending, true));
        assert!(l.advance("s", CallState::Sending, CallState::Paid).unwrap());
        // recorded again (the same payment sent again): stays where it is
        assert_eq!(rec(&l), (CallState::Paid, false));
        l.forget_unsent("s").unwrap();
        assert_eq!(l.state("s").unwrap(), Some(CallState::Paid));
        assert!(!l.advance("s", CallState::Sending, CallState::Paid).unwrap());
        assert!(l.advance("s", CallState::Paid, CallState::Served).unwrap());
        assert!(!l.advance("s", CallState::Paid, CallState::Served).unwrap());
        // durable: a new process sees it served
        drop(l);
        let l = CallLedger::open(&path).unwrap();
        assert_eq!(l.state("s").unwrap(), Some(CallState::Served));
        let all = l.all().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!((all[0].units, all[0].state.as_str()), (10, "served"));
        assert!(all[0].settled_at.is_some() && all[0].served_at.is_some());
    }

    /// Two processes on one ledger: one claim at a time, the owner's
    /// renewal and release, and a lapsed claim taken over.
    #[test]
    fn one_process_at_a_time_settles_a_payment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEDGER_FILE);
        let (a, b) = (
            CallLedger::open(&path).unwrap(),
            CallLedger::open(&path).unwrap(),
        );
        assert!(!a.claim("s", "A", 600).unwrap(), "no row, no claim");
        a.record_sending("s", "memory_search", "p", "m", 10)
            .unwrap();
        assert!(a.claim_at("s", "A", 600, 1_000).unwrap());
        assert!(!b.claim_at("s", "B", 600, 1_001).unwrap(), "A holds it");
        assert!(a.claim_at("s", "A", 600, 1_002).unwrap(), "A renews");
        b.release_claim("s", "B").unwrap();
        assert!(
            !b.claim_at("s", "B", 600, 1_003).unwrap(),
            "B cannot release A's claim"
        );
        a.release_claim("s", "A").unwrap();
        assert!(
            b.claim_at("s", "B", 600, 1_004).unwrap(),
            "released: B takes it"
        );
        // B was killed holding it: A takes it once the lease lapsed
        assert!(!a.claim_at("s", "A", 600, 1_603).unwrap());
        assert!(a.claim_at("s", "A", 600, 1_604).unwrap());
    }

    /// A ledger made before the claim columns gets them on open, its rows
    /// kept.
    #[test]
    fn an_older_ledger_gains_the_claim_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEDGER_FILE);
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE paid_calls (
                signature TEXT PRIMARY KEY, tool TEXT NOT NULL, payer TEXT NOT NULL,
                mint TEXT NOT NULL, units INTEGER NOT NULL CHECK (units > 0),
                state TEXT NOT NULL CHECK (state IN ('sending', 'paid', 'served', 'failed')),
                recorded_at INTEGER NOT NULL, settled_at INTEGER, served_at INTEGER);
             INSERT INTO paid_calls (signature, tool, payer, mint, units, state, recorded_at)
             VALUES ('s', 't', 'p', 'm', 5, 'paid', 1);",
        )
        .unwrap();
        drop(old);
        let l = CallLedger::open(&path).unwrap();
        assert_eq!(l.state("s").unwrap(), Some(CallState::Paid));
        assert!(l.claim("s", "A", 600).unwrap());
        drop(l);
        // and opening it again changes nothing
        let l = CallLedger::open(&path).unwrap();
        assert!(!l.claim("s", "B", 600).unwrap());
    }
}
