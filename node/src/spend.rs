//! The buyer's spending policy and its durable ledger.
//!
//! Owns: the policy file (`spend-policy.json` beside the wallet, 0600, the
//! same permission rule as key files), the ledger (`spend.db` beside it,
//! SQLite WAL) and the one decision "may this wallet spend this much on
//! this seller now". A buy *reserves* its full cost (price, protocol fee,
//! escrow rent, network fee) inside one `BEGIN IMMEDIATE` transaction that
//! first sums what was reserved or paid in the last 24 hours, so two
//! processes buying at once cannot both squeeze under the budget, and a
//! crash between reserving and paying still counts: restarting never
//! resets the budget. A reservation is given back only when its
//! transaction provably never landed.
//!
//! Every other marketplace action an agent can cause (list, offer,
//! counter, accept, reject, withdraw, cancel) reserves its cost too, as an
//! [`OpSpend`]: its network fee, the protocol's op fee where due and an
//! escrow listing's stake count against the same 24 h budget (the per-buy
//! maximum and the seller allowlist are about buys and leave them alone).
//!
//! Never: sends anything, reads the chain, or lets a caller change the
//! policy (it is read from the file an operator wrote, and may only be
//! tightened by the program that runs the buy).

use rusqlite::{params, Connection, TransactionBehavior};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The policy file's name, in the wallet's directory.
pub const POLICY_FILE: &str = "spend-policy.json";
/// The ledger's name, in the wallet's directory.
pub const LEDGER_FILE: &str = "spend.db";
/// The rolling budget window.
pub const WINDOW_SECS: i64 = 24 * 3600;
/// Largest policy file read.
const MAX_POLICY_BYTES: u64 = 64 * 1024;

/// What a wallet may spend on buys. Every limit is optional; a missing
/// file means no policy (a person at a terminal), an empty object means
/// "record every spend, limit nothing".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpendPolicy {
    /// Most one buy may cost, all in (price + fees + rent), in lamports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_buy_lamports: Option<u64>,
    /// Most all buys of the last 24 hours may cost together, in lamports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_24h_lamports: Option<u64>,
    /// When set, the only sellers (base58 pubkeys) this wallet buys from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sellers: Option<Vec<String>>,
    /// The tokens (by mint, base58) this wallet may pay listings in, each
    /// with its limits in base units; a listing settling in a mint not
    /// named here is refused (the lamport limits still cover each buy's
    /// network fee).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tokens: std::collections::BTreeMap<String, TokenLimits>,
    /// The most priority fee any one transaction of this wallet may pay,
    /// in lamports (below `--priority-fee-cap` when both are set; shown in
    /// every quote as `priority_fee_max_lamports`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_fee_max_lamports: Option<u64>,
}

/// A spend policy's limits for one token, in its base units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenLimits {
    /// Most one buy may pay in the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_buy_units: Option<u64>,
    /// Most all buys of the last 24 hours may pay in the token together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_24h_units: Option<u64>,
}

/// Why a buy was refused by the policy. Nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "refusal", rename_all = "snake_case")]
pub enum Refusal {
    /// The buy alone costs more than one buy may.
    #[error("this buy costs {lamports} lamports, over the spend policy's per-buy maximum of {max} lamports")]
    OverPerBuyMax {
        /// The buy's full cost.
        lamports: u64,
        /// `max_per_buy_lamports`.
        max: u64,
    },
    /// The buy would take the last 24 hours over the budget.
    #[error("this buy costs {lamports} lamports; {spent} were spent or reserved in the last 24 h and the spend policy's 24 h budget is {budget} ({remaining} left)")]
    OverBudget {
        /// The buy's full cost.
        lamports: u64,
        /// Spent or reserved in the window.
        spent: u64,
        /// `budget_24h_lamports`.
        budget: u64,
        /// What is left of the budget.
        remaining: u64,
    },
    /// The seller is not on the allowlist.
    #[error("seller {seller} is not on the spend policy's seller allowlist")]
    SellerNotAllowed {
        /// The listing's seller.
        seller: String,
    },
    /// The listing settles in a token the policy does not name.
    #[error("this buy pays in token {mint}, which the spend policy's `tokens` does not name (add it with its limits to allow such buys)")]
    TokenNotAllowed {
        /// The mint.
        mint: String,
    },
    /// The buy alone pays more of the token than one buy may.
    #[error("this buy pays {units} base units of {mint}, over the spend policy's per-buy maximum of {max}")]
    TokenOverPerBuyMax {
        /// The mint.
        mint: String,
        /// The buy's payment.
        units: u64,
        /// `max_per_buy_units`.
        max: u64,
    },
    /// The buy would take the token's last 24 hours over its budget.
    #[error("this buy pays {units} base units of {mint}; {spent} were spent or reserved in the last 24 h and the spend policy's 24 h budget for it is {budget} ({remaining} left)")]
    TokenOverBudget {
        /// The mint.
        mint: String,
        /// The buy's payment.
        units: u64,
        /// Spent or reserved in the window.
        spent: u64,
        /// `budget_24h_units`.
        budget: u64,
        /// What is left of the budget.
        remaining: u64,
    },
    /// An escrow listing whose blob cannot prove on chain what its
    /// manifest promises: no policy allows paying for one (a person buys
    /// it by hand, naming the risk, with no policy in force).
    #[error("this escrow listing's blob cannot prove on chain what its manifest promises (see `brainctl marketplace quote`): a spend policy never allows such a buy")]
    UnprovenBlob,
}

/// Spend policy and ledger errors.
#[derive(Debug, thiserror::Error)]
pub enum SpendError {
    /// The policy refuses this buy.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The policy file is readable by others.
    #[error("spend policy {path} is readable by group/others (mode {mode:o}); fix with: chmod 600 {path}")]
    InsecurePermissions {
        /// The file.
        path: PathBuf,
        /// Its mode.
        mode: u32,
    },
    /// The policy file is not a policy.
    #[error("spend policy {path}: {why} (expected a JSON object with max_per_buy_lamports, budget_24h_lamports, sellers, tokens)")]
    BadPolicy {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Reading or creating a file.
    #[error("spend policy files: {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The ledger database.
    #[error("spend ledger: {0}")]
    Ledger(#[from] rusqlite::Error),
    /// A reservation id that is not (or no longer) reserved.
    #[error("spend ledger: reservation {0} is not open")]
    NotReserved(i64),
}

/// The policy path for a wallet file.
pub fn policy_path(wallet_path: &Path) -> PathBuf {
    sibling(wallet_path, POLICY_FILE)
}

/// The ledger path for a wallet file.
pub fn ledger_path(wallet_path: &Path) -> PathBuf {
    sibling(wallet_path, LEDGER_FILE)
}

fn sibling(wallet_path: &Path, name: &str) -> PathBuf {
    wallet_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(name)
}

impl SpendPolicy {
    /// Reads the policy at `path`: `None` when there is no file; refused
    /// when group/other can read it or it is not a policy.
    pub fn load(path: &Path) -> Result<Option<SpendPolicy>, SpendError> {
        let io = |source| SpendError::Io {
            path: path.into(),
            source,
        };
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SpendError::InsecurePermissions {
                path: path.into(),
                mode,
            });
        }
        if meta.len() > MAX_POLICY_BYTES {
            return Err(SpendError::BadPolicy {
                path: path.into(),
                why: format!("over {MAX_POLICY_BYTES} bytes"),
            });
        }
        let text = std::fs::read(path).map_err(io)?;
        let policy: SpendPolicy =
            serde_json::from_slice(&text).map_err(|e| SpendError::BadPolicy {
                path: path.into(),
                why: e.to_string(),
            })?;
        Ok(Some(policy))
    }

    /// Writes the policy to `path` as a new 0600 file (an operator's
    /// set-up step; agents have no tool for it).
    pub fn write(&self, path: &Path) -> Result<(), SpendError> {
        let io = |source| SpendError::Io {
            path: path.into(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        let text = serde_json::to_vec_pretty(self).expect("policy serializes");
        std::io::Write::write_all(&mut f, &text).map_err(io)
    }

    /// This policy narrowed by `other`: the smaller of each limit, the
    /// sellers on both allowlists.
    pub fn tightened(&self, other: &SpendPolicy) -> SpendPolicy {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sellers = match (&self.sellers, &other.sellers) {
            (Some(a), Some(b)) => Some(a.iter().filter(|s| b.contains(s)).cloned().collect()),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        // tokens: both policies' when both name some (the smaller limits)
        let tokens = match (self.tokens.is_empty(), other.tokens.is_empty()) {
            (_, true) => self.tokens.clone(),
            (true, false) => other.tokens.clone(),
            (false, false) => self
                .tokens
                .iter()
                .filter_map(|(mint, a)| {
                    other.tokens.get(mint).map(|b| {
                        (
                            mint.clone(),
                            TokenLimits {
                                max_per_buy_units: min(a.max_per_buy_units, b.max_per_buy_units),
                                budget_24h_units: min(a.budget_24h_units, b.budget_24h_units),
                            },
                        )
                    })
                })
                .collect(),
        };
        SpendPolicy {
            max_per_buy_lamports: min(self.max_per_buy_lamports, other.max_per_buy_lamports),
            budget_24h_lamports: min(self.budget_24h_lamports, other.budget_24h_lamports),
            sellers,
            tokens,
            priority_fee_max_lamports: min(
                self.priority_fee_max_lamports,
                other.priority_fee_max_lamports,
            ),
        }
    }

    /// The verdict on a buy paying `units` of `mint` when `spent` units of
    /// it were spent or reserved in the window.
    pub fn judge_token(&self, mint: &str, units: u64, spent: u64) -> Result<(), Refusal> {
        let limits = self
            .tokens
            .get(mint)
            .ok_or_else(|| Refusal::TokenNotAllowed { mint: mint.into() })?;
        if let Some(max) = limits.max_per_buy_units.filter(|max| units > *max) {
            return Err(Refusal::TokenOverPerBuyMax {
                mint: mint.into(),
                units,
                max,
            });
        }
        if let Some(budget) = limits
            .budget_24h_units
            .filter(|b| spent.saturating_add(units) > *b)
        {
            return Err(Refusal::TokenOverBudget {
                mint: mint.into(),
                units,
                spent,
                budget,
                remaining: budget.saturating_sub(spent),
            });
        }
        Ok(())
    }

    /// The verdict on a marketplace action costing `lamports` when `spent`
    /// lamports were spent or reserved in the window: the 24 h budget alone.
    pub fn judge_op(&self, lamports: u64, spent: u64) -> Result<(), Refusal> {
        SpendPolicy {
            budget_24h_lamports: self.budget_24h_lamports,
            ..SpendPolicy::default()
        }
        .judge("", lamports, spent)
    }

    /// The verdict on a buy of `lamports` from `seller` when `spent`
    /// lamports were spent or reserved in the window.
    pub fn judge(&self, seller: &str, lamports: u64, spent: u64) -> Result<(), Refusal> {
        if let Some(allowed) = &self.sellers {
            if !allowed.iter().any(|s| s == seller) {
                return Err(Refusal::SellerNotAllowed {
                    seller: seller.into(),
                });
            }
        }
        if let Some(max) = self.max_per_buy_lamports {
            if lamports > max {
                return Err(Refusal::OverPerBuyMax { lamports, max });
            }
        }
        if let Some(budget) = self.budget_24h_lamports {
            if spent.saturating_add(lamports) > budget {
                return Err(Refusal::OverBudget {
                    lamports,
                    spent,
                    budget,
                    remaining: budget.saturating_sub(spent),
                });
            }
        }
        Ok(())
    }
}

/// What a buy is about to spend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spend<'a> {
    /// The listing.
    pub listing_id: &'a str,
    /// Its seller.
    pub seller: &'a str,
    /// Full cost in lamports (for a token buy: fees and rent).
    pub lamports: u64,
    /// What a token buy pays: the mint and base units.
    pub token: Option<(&'a str, u64)>,
    /// An escrow buy whose blob cannot prove what its manifest promises
    /// (`buy --allow-unproven-blob`): refused by every policy.
    pub unproven: bool,
}

/// What a marketplace action other than a buy is about to spend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSpend<'a> {
    /// The action (`list`, `offer`, `counter`, `accept`, ...).
    pub action: &'a str,
    /// What it is about (a listing, offer or bundle id).
    pub subject: &'a str,
    /// Its cost in lamports (fees, and an escrow listing's stake).
    pub lamports: u64,
}

/// How a reserved buy ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It landed and paid.
    Paid {
        /// The buy signature.
        signature: String,
        /// What it cost in all, once known (the transaction's fee read
        /// back: the priority fee it paid, not its most); `None` keeps the
        /// reservation's.
        lamports: Option<u64>,
    },
    /// It landed failed: only the network fee was spent.
    Failed {
        /// The signature.
        signature: String,
        /// The fee charged.
        fee_lamports: u64,
    },
    /// It provably never landed (nothing spent): the reservation is freed.
    NeverLanded {
        /// Why we know.
        reason: String,
    },
}

/// One ledger row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpendRow {
    /// Row id (the reservation).
    pub id: i64,
    /// `buy`, or the marketplace action (`list`, `offer`, ...).
    pub kind: String,
    /// Unix seconds it was reserved.
    pub at: i64,
    /// Listing (an action's subject: listing, offer or bundle id).
    pub listing_id: String,
    /// Seller (empty for an action).
    pub seller: String,
    /// Lamports counted against the budget.
    pub lamports: u64,
    /// `reserved`, `paid`, `failed` or `never_landed`.
    pub state: String,
    /// The buy signature, once known.
    pub signature: Option<String>,
}

/// Where the budget stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// Spent or reserved in the last 24 hours.
    pub spent_24h_lamports: u64,
    /// What is left of the 24 h budget (`None`: no budget).
    pub remaining_24h_lamports: Option<u64>,
}

/// The durable record of every buy this wallet reserved.
pub struct SpendLedger {
    conn: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    listing_id TEXT NOT NULL,
    seller TEXT NOT NULL,
    lamports INTEGER NOT NULL CHECK (lamports >= 0),
    state TEXT NOT NULL CHECK (state IN ('reserved', 'paid', 'failed', 'never_landed')),
    signature TEXT,
    note TEXT
);
CREATE INDEX IF NOT EXISTS spends_at ON spends(at);
";

/// Columns added since the first ledgers: `kind` (actions counted), and
/// `mint` / `units` (what a token buy pays, beside its lamports).
const ADDED_COLUMNS: [(&str, &str); 3] = [
    (
        "kind",
        "ALTER TABLE spends ADD COLUMN kind TEXT NOT NULL DEFAULT 'buy'",
    ),
    ("mint", "ALTER TABLE spends ADD COLUMN mint TEXT"),
    (
        "units",
        "ALTER TABLE spends ADD COLUMN units INTEGER NOT NULL DEFAULT 0 CHECK (units >= 0)",
    ),
];

impl SpendLedger {
    /// Opens (creating, 0600) the ledger at `path`.
    pub fn open(path: &Path) -> Result<SpendLedger, SpendError> {
        use crate::store::private_db::{self, PrivateDbError};
        let conn = private_db::open(path).map_err(|e| match e {
            PrivateDbError::Io { path, source } => SpendError::Io { path, source },
            PrivateDbError::Sql(e) => SpendError::Ledger(e),
        })?;
        conn.execute_batch(SCHEMA)?;
        let mut ledger = SpendLedger { conn };
        ledger.add_columns()?;
        Ok(ledger)
    }

    /// Adds the columns an older ledger lacks (under the write lock, so
    /// two processes opening it at once add each once).
    fn add_columns(&mut self) -> Result<(), SpendError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for (column, add) in ADDED_COLUMNS {
            let has: bool = tx.query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('spends') WHERE name = ?1",
                [column],
                |r| r.get(0),
            )?;
            if !has {
                tx.execute_batch(add)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn units_spent_since(conn: &Connection, mint: &str, since: i64) -> Result<u64, SpendError> {
        let n: i64 = conn.query_row(
            "SELECT COALESCE(SUM(units), 0) FROM spends
             WHERE at > ?1 AND mint = ?2 AND state IN ('reserved', 'paid', 'failed')",
            params![since, mint],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as u64)
    }

    fn spent_since(conn: &Connection, since: i64) -> Result<u64, SpendError> {
        let n: i64 = conn.query_row(
            "SELECT COALESCE(SUM(lamports), 0) FROM spends
             WHERE at > ?1 AND state IN ('reserved', 'paid', 'failed')",
            [since],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as u64)
    }

    /// Where the budget stands at `now` under `policy`.
    pub fn standing(&self, policy: &SpendPolicy, now: i64) -> Result<Standing, SpendError> {
        let spent = Self::spent_since(&self.conn, now - WINDOW_SECS)?;
        Ok(Standing {
            spent_24h_lamports: spent,
            remaining_24h_lamports: policy.budget_24h_lamports.map(|b| b.saturating_sub(spent)),
        })
    }

    /// The verdict on `spend` at `now`, writing nothing (a quote).
    pub fn check(
        &self,
        policy: &SpendPolicy,
        spend: &Spend<'_>,
        now: i64,
    ) -> Result<Standing, SpendError> {
        let standing = self.standing(policy, now)?;
        if spend.unproven {
            return Err(Refusal::UnprovenBlob.into());
        }
        policy.judge(spend.seller, spend.lamports, standing.spent_24h_lamports)?;
        if let Some((mint, units)) = spend.token {
            let spent = Self::units_spent_since(&self.conn, mint, now - WINDOW_SECS)?;
            policy.judge_token(mint, units, spent)?;
        }
        Ok(standing)
    }

    /// Reserves `spend` if the policy allows it at `now`: the check and the
    /// insert are one IMMEDIATE transaction. Returns the reservation id.
    pub fn reserve(
        &mut self,
        policy: &SpendPolicy,
        spend: &Spend<'_>,
        now: i64,
    ) -> Result<i64, SpendError> {
        self.reserve_row(
            ("buy", spend.listing_id, spend.seller, spend.lamports),
            spend.token,
            now,
            |tx, spent| {
                if spend.unproven {
                    return Err(Refusal::UnprovenBlob.into());
                }
                policy.judge(spend.seller, spend.lamports, spent)?;
                if let Some((mint, units)) = spend.token {
                    let spent = Self::units_spent_since(tx, mint, now - WINDOW_SECS)?;
                    policy.judge_token(mint, units, spent)?;
                }
                Ok(())
            },
        )
    }

    /// Reserves a marketplace action's cost if the 24 h budget allows it
    /// at `now` (as [`SpendLedger::reserve`]). Returns the reservation id.
    pub fn reserve_op(
        &mut self,
        policy: &SpendPolicy,
        op: &OpSpend<'_>,
        now: i64,
    ) -> Result<i64, SpendError> {
        self.reserve_row(
            (op.action, op.subject, "", op.lamports),
            None,
            now,
            |_, spent| Ok(policy.judge_op(op.lamports, spent)?),
        )
    }

    /// Inserts a reserved row (kind, subject, seller, lamports, and what a
    /// token buy pays) if `judge` allows it given what the window spent,
    /// in one IMMEDIATE transaction.
    fn reserve_row(
        &mut self,
        (kind, subject, seller, lamports): (&str, &str, &str, u64),
        token: Option<(&str, u64)>,
        now: i64,
        judge: impl FnOnce(&Connection, u64) -> Result<(), SpendError>,
    ) -> Result<i64, SpendError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        judge(&tx, Self::spent_since(&tx, now - WINDOW_SECS)?)?;
        tx.execute(
            "INSERT INTO spends (at, kind, listing_id, seller, lamports, state, mint, units)
             VALUES (?1, ?2, ?3, ?4, ?5, 'reserved', ?6, ?7)",
            params![
                now,
                kind,
                subject,
                seller,
                lamports as i64,
                token.map(|(m, _)| m),
                token.map_or(0, |(_, u)| u as i64)
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Records the fee `lamports` a transaction `signature` of this wallet
    /// paid for `kind` on `subject` (a refund, a fraud proof, an escrow's
    /// close: money coming back, which no policy refuses) as spent at
    /// `now`, so the 24 h budget counts it. Once per signature: `false`
    /// when it was recorded already.
    pub fn record_fee(
        &mut self,
        (kind, subject): (&str, &str),
        signature: &str,
        lamports: u64,
        now: i64,
    ) -> Result<bool, SpendError> {
        let n = self.conn.execute(
            "INSERT INTO spends (at, kind, listing_id, seller, lamports, state, signature)
             SELECT ?1, ?2, ?3, '', ?4, 'paid', ?5
             WHERE NOT EXISTS (SELECT 1 FROM spends WHERE signature = ?5)",
            params![now, kind, subject, lamports as i64, signature],
        )?;
        Ok(n == 1)
    }

    /// Records how reservation `id` ended.
    pub fn settle(&mut self, id: i64, outcome: &Outcome) -> Result<(), SpendError> {
        let (state, lamports, signature, note): (&str, Option<u64>, Option<&str>, Option<&str>) =
            match outcome {
                Outcome::Paid {
                    signature,
                    lamports,
                } => (
                    "paid",
                    *lamports,
                    Some(signature.as_str()).filter(|s| !s.is_empty()),
                    None,
                ),
                Outcome::Failed {
                    signature,
                    fee_lamports,
                } => ("failed", Some(*fee_lamports), Some(signature), None),
                Outcome::NeverLanded { reason } => ("never_landed", Some(0), None, Some(reason)),
            };
        // a buy that failed or never landed moved no tokens
        let n = self.conn.execute(
            "UPDATE spends SET state = ?2, lamports = COALESCE(?3, lamports),
                 units = CASE WHEN ?2 = 'paid' THEN units ELSE 0 END,
                 signature = COALESCE(?4, signature), note = COALESCE(?5, note)
             WHERE id = ?1 AND state = 'reserved'",
            params![id, state, lamports.map(|l| l as i64), signature, note],
        )?;
        if n == 0 {
            return Err(SpendError::NotReserved(id));
        }
        Ok(())
    }

    /// The newest `limit` rows, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<SpendRow>, SpendError> {
        let mut st = self.conn.prepare(
            "SELECT id, at, kind, listing_id, seller, lamports, state, signature
             FROM spends ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = st
            .query_map([limit as i64], |r| {
                Ok(SpendRow {
                    id: r.get(0)?,
                    at: r.get(1)?,
                    kind: r.get(2)?,
                    listing_id: r.get(3)?,
                    seller: r.get(4)?,
                    lamports: r.get::<_, i64>(5)?.max(0) as u64,
                    state: r.get(6)?,
                    signature: r.get(7)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn spend(lamports: u64) -> Spend<'static> {
        Spend {
            listing_id: "20261124-aaaaaaaaaaaa",
            seller: "Seller1111",
            lamports,
            token: None,
            unproven: false,
        }
    }

    fn ledger() -> (tempfile::TempDir, SpendLedger) {
        let dir = tempfile::tempdir().unwrap();
        let l = SpendLedger::open(&dir.path().join(LEDGER_FILE)).unwrap();
        (dir, l)
    }

    #[test]
    fn budget_counts_reserved_paid_and_failed_fees_in_the_window_only() {
        let (_d, mut l) = ledger();
        let p = SpendPolicy {
            budget_24h_lamports: Some(1_000),
            ..Default::default()
        };
        let a = l.reserve(&p, &spend(400), NOW - WINDOW_SECS).unwrap(); // falls out
        l.settle(
            a,
            &Outcome::Paid {
                signature: "s0".into(),
                lamports: None,
            },
        )
        .unwrap();
        let b = l.reserve(&p, &spend(400), NOW).unwrap();
        let c = l.reserve(&p, &spend(500), NOW).unwrap();
        // 900 in the window: a 101 buy is over, 100 fits
        assert_eq!(
            l.reserve(&p, &spend(101), NOW).unwrap_err().to_string(),
            Refusal::OverBudget {
                lamports: 101,
                spent: 900,
                budget: 1_000,
                remaining: 100
            }
            .to_string()
        );
        // a failed tx counts its fee only, a never-landed one nothing
        l.settle(
            b,
            &Outcome::Failed {
                signature: "s1".into(),
                fee_lamports: 5,
            },
        )
        .unwrap();
        l.settle(
            c,
            &Outcome::NeverLanded {
                reason: "expired".into(),
            },
        )
        .unwrap();
        assert_eq!(l.standing(&p, NOW).unwrap().spent_24h_lamports, 5);
        assert_eq!(
            l.standing(&p, NOW).unwrap().remaining_24h_lamports,
            Some(995)
        );
        // a settled reservation can't be settled again
        assert!(matches!(
            l.settle(
                c,
                &Outcome::Paid {
                    signature: "x".into(),
                    lamports: None,
                }
            ),
            Err(SpendError::NotReserved(_))
        ));
    }

    #[test]
    fn per_buy_max_and_allowlist() {
        let p = SpendPolicy {
            max_per_buy_lamports: Some(10),
            budget_24h_lamports: None,
            sellers: Some(vec!["A".into()]),
            ..Default::default()
        };
        assert_eq!(p.judge("A", 10, u64::MAX), Ok(()));
        assert_eq!(
            p.judge("A", 11, 0),
            Err(Refusal::OverPerBuyMax {
                lamports: 11,
                max: 10
            })
        );
        assert_eq!(
            p.judge("B", 1, 0),
            Err(Refusal::SellerNotAllowed { seller: "B".into() })
        );
    }

    /// A token buy needs its mint named by the policy; its units count
    /// against that mint's limits alone, and only while it may have paid.
    #[test]
    fn no_policy_allows_an_unproven_escrow_blob() {
        let (_d, mut l) = ledger();
        // the most permissive policy there is still refuses it
        let p = SpendPolicy::default();
        let unproven = Spend {
            unproven: true,
            ..spend(1)
        };
        assert!(matches!(
            l.check(&p, &unproven, NOW),
            Err(SpendError::Refused(Refusal::UnprovenBlob))
        ));
        assert!(matches!(
            l.reserve(&p, &unproven, NOW),
            Err(SpendError::Refused(Refusal::UnprovenBlob))
        ));
        assert_eq!(l.standing(&p, NOW).unwrap().spent_24h_lamports, 0);
        assert!(l.reserve(&p, &spend(1), NOW).is_ok());
    }

    #[test]
    fn token_buys_count_against_their_mints_limits() {
        let (_d, mut l) = ledger();
        let mut p = SpendPolicy::default();
        let usdc = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
        let buy = |units| Spend {
            token: Some((usdc, units)),
            ..spend(5_000)
        };
        assert_eq!(
            l.reserve(&p, &buy(1), NOW).unwrap_err().to_string(),
            format!("this buy pays in token {usdc}, which the spend policy's `tokens` does not name (add it with its limits to allow such buys)")
        );
        p.tokens.insert(
            usdc.into(),
            TokenLimits {
                max_per_buy_units: Some(5_000_000),
                budget_24h_units: Some(8_000_000),
            },
        );
        assert!(matches!(
            l.reserve(&p, &buy(5_000_001), NOW),
            Err(SpendError::Refused(Refusal::TokenOverPerBuyMax {
                max: 5_000_000,
                ..
            }))
        ));
        let first = l.reserve(&p, &buy(5_000_000), NOW).unwrap();
        assert!(matches!(
            l.reserve(&p, &buy(3_000_001), NOW),
            Err(SpendError::Refused(Refusal::TokenOverBudget {
                spent: 5_000_000,
                remaining: 3_000_000,
                ..
            }))
        ));
        // a failed buy moved no tokens: its units leave the window
        l.settle(
            first,
            &Outcome::Failed {
                signature: "s".into(),
                fee_lamports: 5_000,
            },
        )
        .unwrap();
        let second = l.reserve(&p, &buy(5_000_000), NOW).unwrap();
        l.settle(
            second,
            &Outcome::Paid {
                signature: "t".into(),
                lamports: None,
            },
        )
        .unwrap();
        assert!(l.reserve(&p, &buy(3_000_000), NOW).is_ok());
        assert!(l.reserve(&p, &buy(1), NOW).is_err(), "8 of 8 spent");
        // a SOL buy is not limited by the token's budget
        assert!(l.reserve(&p, &spend(5_000), NOW).is_ok());
        // a policy file names them in base units
        let read: SpendPolicy = serde_json::from_str(&format!(
            r#"{{"tokens": {{"{usdc}": {{"max_per_buy_units": 5000000}}}}}}"#
        ))
        .unwrap();
        assert_eq!(read.tokens[usdc].max_per_buy_units, Some(5_000_000));
        // tightening keeps the mints both name, at the smaller limits
        let flags = SpendPolicy {
            tokens: [(
                usdc.to_string(),
                TokenLimits {
                    max_per_buy_units: Some(1),
                    budget_24h_units: None,
                },
            )]
            .into(),
            ..Default::default()
        };
        let t = p.tightened(&flags);
        assert_eq!(t.tokens[usdc].max_per_buy_units, Some(1));
        assert_eq!(t.tokens[usdc].budget_24h_units, Some(8_000_000));
        assert_eq!(p.tightened(&SpendPolicy::default()).tokens, p.tokens);
    }

    #[test]
    fn tightening_never_loosens() {
        let file = SpendPolicy {
            max_per_buy_lamports: Some(100),
            budget_24h_lamports: None,
            sellers: Some(vec!["A".into(), "B".into()]),
            priority_fee_max_lamports: Some(3_000),
            ..Default::default()
        };
        let flags = SpendPolicy {
            max_per_buy_lamports: Some(1_000),
            budget_24h_lamports: Some(500),
            sellers: Some(vec!["B".into(), "C".into()]),
            priority_fee_max_lamports: Some(7_000),
            ..Default::default()
        };
        let t = file.tightened(&flags);
        assert_eq!(t.max_per_buy_lamports, Some(100));
        assert_eq!(t.priority_fee_max_lamports, Some(3_000));
        assert_eq!(t.budget_24h_lamports, Some(500));
        assert_eq!(t.sellers, Some(vec!["B".to_string()]));
        assert_eq!(flags.tightened(&file), t);
    }

    #[test]
    fn the_ledger_survives_reopening_and_is_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEDGER_FILE);
        let p = SpendPolicy {
            budget_24h_lamports: Some(100),
            ..Default::default()
        };
        SpendLedger::open(&path)
            .unwrap()
            .reserve(&p, &spend(60), NOW)
            .unwrap();
        let l = SpendLedger::open(&path).unwrap();
        assert_eq!(l.standing(&p, NOW + 1).unwrap().spent_24h_lamports, 60);
        assert!(l.check(&p, &spend(41), NOW + 1).is_err());
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn policy_files_are_permission_checked_and_strict() {
        let dir = tempfile::tempdir().unwrap();
        let path = policy_path(&dir.path().join("wallet.json"));
        assert_eq!(SpendPolicy::load(&path).unwrap(), None);
        let p = SpendPolicy {
            max_per_buy_lamports: Some(7),
            ..Default::default()
        };
        p.write(&path).unwrap();
        assert_eq!(SpendPolicy::load(&path).unwrap(), Some(p));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            SpendPolicy::load(&path),
            Err(SpendError::InsecurePermissions { mode: 0o644, .. })
        ));
        std::fs::write(&path, br#"{"max_per_buy": 1}"#).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = SpendPolicy::load(&path).unwrap_err().to_string();
        assert!(e.contains("unknown field `max_per_buy`"), "{e}");
    }

    /// A refund's, a fraud proof's or an escrow close's fee is recorded
    /// even over the budget (money coming back is never refused), once
    /// per signature, and counts against what buys may spend after it.
    #[test]
    fn fees_of_refunds_and_proofs_count_once_and_are_never_refused() {
        let (_d, mut l) = ledger();
        let p = SpendPolicy {
            budget_24h_lamports: Some(1_000),
            ..Default::default()
        };
        let a = l.reserve(&p, &spend(990), NOW).unwrap();
        l.settle(
            a,
            &Outcome::Paid {
                signature: "buy".into(),
                lamports: None,
            },
        )
        .unwrap();
        assert!(l
            .record_fee(("refund", "20261124-aaaaaaaaaaaa"), "r1", 15, NOW)
            .unwrap());
        assert!(!l
            .record_fee(("refund", "20261124-aaaaaaaaaaaa"), "r1", 15, NOW)
            .unwrap());
        assert!(l
            .record_fee(("dispute", "20261124-aaaaaaaaaaaa"), "d1", 5, NOW)
            .unwrap());
        let standing = l.standing(&p, NOW).unwrap();
        assert_eq!(
            (standing.spent_24h_lamports, standing.remaining_24h_lamports),
            (1_010, Some(0))
        );
        assert!(l.reserve(&p, &spend(1), NOW).is_err());
        let rows = l.recent(3).unwrap();
        assert_eq!(
            rows.iter()
                .map(|r| (r.kind.as_str(), r.state.as_str(), r.lamports))
                .collect::<Vec<_>>(),
            [
                ("dispute", "paid", 5),
                ("refund", "paid", 15),
                ("buy", "paid", 990)
            ]
        );
    }

    #[test]
    fn actions_count_against_the_budget_but_not_the_per_buy_maximum() {
        let (_d, mut l) = ledger();
        let p = SpendPolicy {
            max_per_buy_lamports: Some(10),
            budget_24h_lamports: Some(1_000),
            sellers: Some(vec!["Other".into()]),
            ..Default::default()
        };
        let op = |lamports| OpSpend {
            action: "offer",
            subject: "20261124-aaaaaaaaaaaa",
            lamports,
        };
        let a = l.reserve_op(&p, &op(600), NOW).unwrap();
        l.settle(
            a,
            &Outcome::Paid {
                signature: String::new(),
                lamports: None,
            },
        )
        .unwrap();
        let err = l.reserve_op(&p, &op(600), NOW).unwrap_err();
        assert!(
            matches!(
                err,
                SpendError::Refused(Refusal::OverBudget {
                    spent: 600,
                    remaining: 400,
                    ..
                })
            ),
            "{err}"
        );
        // what actions spent leaves less for buys
        let buys = SpendPolicy {
            sellers: None,
            ..p.clone()
        };
        l.reserve(&buys, &spend(10), NOW).unwrap();
        assert!(matches!(
            l.reserve(&buys, &spend(10), NOW + 1).map(|_| ()),
            Ok(())
        ));
        let err = l
            .reserve(
                &SpendPolicy {
                    max_per_buy_lamports: None,
                    ..buys
                },
                &spend(400),
                NOW,
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                SpendError::Refused(Refusal::OverBudget { spent: 620, .. })
            ),
            "{err}"
        );
        let rows = l.recent(5).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>(),
            ["buy", "buy", "offer"]
        );
        assert_eq!(
            (rows[2].state.as_str(), rows[2].signature.as_deref()),
            ("paid", None)
        );
    }

    #[test]
    fn a_ledger_written_before_actions_counted_gains_the_kind_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEDGER_FILE);
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(SCHEMA).unwrap();
            c.execute(
                "INSERT INTO spends (at, listing_id, seller, lamports, state) VALUES (?1, 'l', 's', 7, 'paid')",
                [NOW],
            )
            .unwrap();
        }
        let l = SpendLedger::open(&path).unwrap();
        let rows = l.recent(1).unwrap();
        assert_eq!((rows[0].kind.as_str(), rows[0].lamports), ("buy", 7));
        drop(l);
        SpendLedger::open(&path).unwrap();
    }
}
