//! One context built from the flags and the environment (read once, here):
//! where the store, wallet and `~/.brainctl` are, and how to print.
//! Commands receive it; nothing else reads the environment (clap reads the
//! variables flags name with `env = ...`).

use crate::args::Cli;
use crate::failure::CliResult;
use anyhow::Context as _;
use node::store::Store;
use node::wallet::Wallet;
use serde::Serialize;
use std::path::PathBuf;

/// Resolved settings of one invocation.
pub struct Context {
    /// `$HOME`, if set.
    pub home: Option<PathBuf>,
    /// Store path.
    pub db_path: PathBuf,
    /// Wallet path.
    pub wallet_path: PathBuf,
    /// Where brainctl's own wallet is (`--keystore`, else
    /// ~/.brainctl/wallet.json): what `wallet new` and `wallet import`
    /// write, even while the Solana CLI's keypair is the default signer.
    pub own_wallet_path: PathBuf,
    /// `-a`/`--agent` ($AGENT_ID): attribution of new memories and the
    /// agent whose memories are listed; `None`: `default`, and every agent.
    pub agent: Option<String>,
    /// `--json`.
    pub json: bool,
    /// `-u`.
    pub url: String,
    /// `--commitment`.
    pub commitment: crate::args::Commitment,
    /// How transactions' compute is priced (`--priority-fee`,
    /// `--priority-fee-cap`, `BRAINCTL_PRIORITY_FEE_PERCENTILE`).
    pub priority: node::chain::priority::PriorityPolicy,
    /// Limits that tighten the wallet's spend policy file (`brainctl mcp`
    /// flags); `None` for plain commands.
    pub spend_limits: Option<node::spend::SpendPolicy>,
    /// Where [`Context::emit`] puts its value instead of printing (the MCP
    /// server runs commands this way; stdout carries only its protocol).
    pub captured: Option<std::cell::RefCell<Option<serde_json::Value>>>,
    /// The MCP server's store, kept open across its memory tool calls so
    /// its ranking counts stay warm ([`Context::memory_store`]); `None`:
    /// each command opens the store.
    pub kept_store: Option<KeptStore>,
}

/// A store opened once and shared by the commands of one process.
pub type KeptStore = std::sync::Arc<std::sync::Mutex<Option<Store>>>;

/// The store a memory command works on: its own, or the process's kept
/// one (locked while the command holds it).
pub enum StoreRef<'a> {
    /// Opened for this command.
    Owned(Box<Store>),
    /// The kept store (always `Some` once handed out).
    Kept(std::sync::MutexGuard<'a, Option<Store>>),
}

impl std::ops::Deref for StoreRef<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        match self {
            StoreRef::Owned(s) => s,
            StoreRef::Kept(g) => g.as_ref().expect("opened before it is handed out"),
        }
    }
}

impl std::ops::DerefMut for StoreRef<'_> {
    fn deref_mut(&mut self) -> &mut Store {
        match self {
            StoreRef::Owned(s) => s,
            StoreRef::Kept(g) => g.as_mut().expect("opened before it is handed out"),
        }
    }
}

impl Context {
    /// Resolves paths from flags and environment.
    pub fn new(cli: &Cli) -> CliResult<Context> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let db_path = node::store::resolve_db_path(
            cli.db.as_deref(),
            |k| std::env::var_os(k),
            home.as_deref(),
        )
        .context("cannot find a home directory; pass --db PATH")?;
        let solana = match home.as_deref() {
            Some(h) => crate::solana_config::read(h).map_err(crate::failure::Failure::bad_input)?,
            None => None,
        };
        let own_wallet_path = match &cli.keystore {
            Some(p) => p.clone(),
            None => node::wallet::default_wallet_path(home.as_deref())?,
        };
        let wallet_path = match solana.as_ref().and_then(|c| c.keypair_path.clone()) {
            Some(theirs)
                if cli.keystore.is_none() && !own_wallet_path.exists() && theirs.exists() =>
            {
                theirs
            }
            _ => own_wallet_path.clone(),
        };
        let url = cli
            .url
            .clone()
            .or_else(|| solana.as_ref().and_then(|c| c.json_rpc_url.clone()))
            .unwrap_or_else(|| "mainnet-beta".to_string());
        let commitment = match (cli.commitment, solana.as_ref().and_then(|c| c.commitment.as_deref())) {
            (Some(c), _) => c,
            (None, Some(name)) => crate::args::Commitment::from_config(name).ok_or_else(|| {
                crate::failure::Failure::bad_input(anyhow::anyhow!(
                    "commitment {name:?} in the Solana CLI config ({}) is not processed, confirmed or finalized",
                    crate::solana_config::default_path(home.as_deref().unwrap_or(std::path::Path::new("~"))).display()
                ))
            })?,
            (None, None) => crate::args::Commitment::Finalized,
        };
        let mut priority = node::chain::priority::PriorityPolicy::from_env()
            .map_err(crate::failure::Failure::bad_input)?;
        if let Some(price) = cli.priority_fee {
            priority.fixed_micro_lamports = Some(price);
        }
        if let Some(cap) = cli.priority_fee_cap {
            priority.max_lamports = cap;
        }
        Ok(Context {
            priority,
            home,
            db_path,
            wallet_path,
            own_wallet_path,
            json: cli.json,
            agent: cli.agent.clone().filter(|a| !a.is_empty()),
            url,
            commitment,
            spend_limits: None,
            captured: None,
            kept_store: None,
        })
    }

    /// Opens the store read-write (creating it).
    pub fn store(&self) -> CliResult<Store> {
        Ok(Store::open(&self.db_path)
            .with_context(|| format!("store {}", self.db_path.display()))?)
    }

    /// The store for `memory` commands: the kept one if this process keeps
    /// one (opened and its ranking warmed on first use), else its own.
    /// Commands that can run long (buys wait for a seller) open their own
    /// with [`Context::store`], so they never hold the kept one.
    pub fn memory_store(&self) -> CliResult<StoreRef<'_>> {
        let Some(kept) = &self.kept_store else {
            return Ok(StoreRef::Owned(Box::new(self.store()?)));
        };
        let mut guard = kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.is_none() {
            let store = self.store()?;
            // without the counts searches are only slower: never fatal
            if let Err(e) = store.warm_ranking() {
                tracing::warn!(error = %e, "search ranking not warmed; counts fill as searches run");
            }
            *guard = Some(store);
        }
        Ok(StoreRef::Kept(guard))
    }

    /// Opens the store read-only (works on a Python brainctl brain.db).
    pub fn store_read_only(&self) -> CliResult<Store> {
        Ok(Store::open_read_only(&self.db_path)
            .with_context(|| format!("store {}", self.db_path.display()))?)
    }

    /// A spinner saying `message` on a terminal while the guard lives
    /// (nothing under `--json`, in the MCP server, or when stderr is not a
    /// terminal).
    pub fn spinner(&self, message: impl Into<String>) -> crate::progress::Spinner {
        crate::progress::Spinner::start(self.json, message)
    }

    /// A chain handle for `-u` / `--commitment` (validated here, so a bad
    /// URL is bad input before any network I/O).
    pub fn chain(&self) -> CliResult<node::chain::Chain> {
        let endpoint =
            node::chain::Endpoint::parse(&self.url).map_err(crate::failure::Failure::bad_input)?;
        let commitment = node::chain::parse_commitment(self.commitment.as_str())
            .map_err(crate::failure::Failure::bad_input)?;
        // the spend policy's cap on priority fees holds for every
        // transaction of the wallet, below --priority-fee-cap
        let mut priority = self.priority;
        if let Some(cap) = self
            .spend_policy()?
            .and_then(|p| p.priority_fee_max_lamports)
        {
            priority.max_lamports = priority.max_lamports.min(cap);
        }
        // escrow buys are verified from the program's calls in the buy itself
        Ok(
            node::chain::Chain::new(endpoint, commitment, &[node::escrow::PROGRAM_ID])
                .with_priority(priority),
        )
    }

    /// `~/.brainctl/<rel>`; without a home directory, bad input naming
    /// `flag`, the flag that sets the path instead.
    pub fn brainctl_path(&self, rel: &str, flag: &str) -> CliResult<PathBuf> {
        match &self.home {
            Some(h) => Ok(h.join(".brainctl").join(rel)),
            None => Err(crate::failure::Failure::bad_input(anyhow::anyhow!(
                "no HOME directory; pass {flag}"
            ))),
        }
    }

    /// The value the last [`Context::emit`] captured, if capturing.
    pub fn take_captured(&self) -> Option<serde_json::Value> {
        self.captured.as_ref().and_then(|c| c.borrow_mut().take())
    }

    /// Runs an async on-chain step to completion.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(f)
    }

    /// Loads the wallet (permission-checked).
    pub fn wallet(&self) -> CliResult<Wallet> {
        Ok(Wallet::load(&self.wallet_path)?)
    }

    /// The spend policy buys of this wallet run under: the file beside the
    /// wallet, tightened by [`Context::spend_limits`]. `None`: no file and
    /// no limits (a person at a terminal; nothing is limited).
    pub fn spend_policy(&self) -> CliResult<Option<node::spend::SpendPolicy>> {
        let path = node::spend::policy_path(&self.wallet_path);
        let file =
            node::spend::SpendPolicy::load(&path).map_err(crate::failure::Failure::bad_input)?;
        Ok(match (file, &self.spend_limits) {
            (Some(f), Some(l)) => Some(f.tightened(l)),
            (f, l) => f.or_else(|| l.clone()),
        })
    }

    /// Runs `send`, a marketplace action (`action` on `subject`) that costs
    /// this wallet what one memo does plus `extra` lamports, inside the
    /// spend policy: the cost is reserved first (over the 24 h budget:
    /// refused, nothing sent) and marked paid once `send` succeeds. One that
    /// fails stays counted for the window (it may have landed). Without a
    /// policy, `send` just runs.
    pub fn spend_on_op<T>(
        &self,
        chain: &node::chain::Chain,
        (action, subject): (&str, &str),
        extra: u64,
        send: impl FnOnce() -> CliResult<T>,
    ) -> CliResult<T> {
        let Some(policy) = self.spend_policy()? else {
            return send();
        };
        let lamports = self
            .block_on(node::market::tx::op_cost(chain))?
            .saturating_add(extra);
        let mut ledger = self.spend_ledger()?;
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let id = ledger.reserve_op(
            &policy,
            &node::spend::OpSpend {
                action,
                subject,
                lamports,
            },
            now,
        )?;
        let out = send()?;
        ledger.settle(
            id,
            &node::spend::Outcome::Paid {
                signature: String::new(),
                lamports: None,
            },
        )?;
        Ok(out)
    }

    /// The spend ledger the fees of refunds, fraud proofs and escrow
    /// closes are recorded in: the wallet's, where a spend policy governs
    /// it (`None`: nothing is budgeted, nothing recorded).
    pub fn fee_ledger(&self) -> CliResult<Option<node::spend::SpendLedger>> {
        match self.spend_policy()? {
            Some(_) => Ok(Some(self.spend_ledger()?)),
            None => Ok(None),
        }
    }

    /// Records the fee transaction `signature` paid for `action` on
    /// `subject` (money coming back: never refused) in [`Context::fee_ledger`];
    /// a failure to record is a warning, never the command's failure (the
    /// transaction landed).
    pub fn record_fee(
        &self,
        chain: &node::chain::Chain,
        (action, subject): (&str, &str),
        signature: &str,
    ) {
        let recorded = (|| -> CliResult<()> {
            let Some(mut ledger) = self.fee_ledger()? else {
                return Ok(());
            };
            let sig: node::chain::Signature = signature
                .parse()
                .map_err(|_| anyhow::anyhow!("not a signature: {signature}"))?;
            let lamports = self.block_on(chain.fee_paid(&sig)).unwrap_or(5_000);
            let now = time::OffsetDateTime::now_utc().unix_timestamp();
            ledger.record_fee((action, subject), signature, lamports, now)?;
            Ok(())
        })();
        if let Err(e) = recorded {
            tracing::warn!(%signature, error = %e, "the spend ledger did not record a fee");
        }
    }

    /// The wallet's pending escrow buys (created beside it, 0600).
    pub fn pending_escrows(&self) -> CliResult<node::market::pending::PendingEscrows> {
        let path = node::market::pending::pending_path(&self.wallet_path);
        Ok(node::market::pending::PendingEscrows::open(&path)
            .with_context(|| format!("pending escrows {}", path.display()))?)
    }

    /// The wallet's spend ledger (created beside it, 0600).
    pub fn spend_ledger(&self) -> CliResult<node::spend::SpendLedger> {
        let path = node::spend::ledger_path(&self.wallet_path);
        Ok(node::spend::SpendLedger::open(&path)
            .with_context(|| format!("spend ledger {}", path.display()))?)
    }

    /// Prints `value` as JSON (with `--json`) or the human text.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if let Some(cell) = &self.captured {
            *cell.borrow_mut() = Some(serde_json::to_value(value).expect("output serializes"));
            return;
        }
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(value).expect("output serializes")
            );
        } else {
            let text = human();
            if !text.is_empty() {
                println!("{}", crate::terminal::safe(&text));
            }
        }
    }
}
