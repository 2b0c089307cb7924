//! RPC access: one [`Chain`] handle over the nonblocking solana RPC client
//! with retries (backoff on transport errors and 5xx; 429 is retried by the
//! client itself), a send loop that refreshes expired blockhashes *without
//! ever double-sending* (it re-sends only once the old blockhash can no
//! longer land), full-history signature paging, and jsonParsed fetches.

use super::parsed_tx::ParsedTx;
use super::retry::with_retry;
use super::{ChainError, ClusterKind, Endpoint};
use serde_json::{json, Value};
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_rpc_client::rpc_client::GetConfirmedSignaturesForAddress2Config;
use solana_rpc_client_api::request::RpcRequest;
use solana_rpc_client_api::response::RpcConfirmedTransactionStatusWithSignature;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signature::{Keypair, Signature};
use solana_sdk::signer::Signer;
use solana_sdk::transaction::Transaction;
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::OnceCell;

/// How a send treats the node's preflight simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preflight {
    /// Simulated first; refused when it would fail.
    Simulate,
    /// Not simulated; a failure on chain is an error.
    Skip,
    /// Not simulated; a failure on chain is returned as landed (tests).
    SkipAndAcceptFailure,
    /// Never simulated, not even for its compute-unit limit (this one is
    /// used): the instructions carry a secret no RPC may see before the
    /// transaction is signed and sent (a sealed escrow's reveal).
    Secret {
        /// The compute-unit limit.
        cu_limit: u32,
    },
}

/// Called with each transaction signed for a send, before it is sent:
/// its signature, the last block height its blockhash is valid at, and
/// its wire bytes. An error stops the send (nothing is sent). For senders
/// whose repeat the chain would not refuse: they keep what they are about
/// to send durably first, and after a crash finish it with
/// [`Chain::finish_recorded`] instead of signing anew.
pub type RecordSend<'a> = &'a (dyn Fn(&Signature, u64, &[u8]) -> Result<(), ChainError> + Sync);

/// Where a signed transaction stands ([`Chain::landing_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandingOf {
    /// It landed (succeeded or failed) in this slot.
    Landed {
        /// Its slot.
        slot: u64,
    },
    /// Not seen yet; its blockhash is still valid.
    InFlight,
    /// Its blockhash expired and it is nowhere: it never will land.
    Never,
}

/// A transaction that landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Its signature.
    pub signature: Signature,
    /// The slot it landed in.
    pub slot: u64,
}

/// One entry of an address's history.
pub type SigInfo = RpcConfirmedTransactionStatusWithSignature;

/// A handle on one cluster.
pub struct Chain {
    rpc: RpcClient,
    endpoint: Endpoint,
    commitment: CommitmentConfig,
    kind: OnceCell<ClusterKind>,
    genesis: OnceCell<[u8; 32]>,
    landing_budget: Option<Duration>,
    /// Programs whose calls (and logs) decoded transactions keep.
    watched: Vec<String>,
    /// The sends awaiting their commitment, read together.
    landing: super::landing::LandingWatch,
    /// Rent-exempt minimums by data size, with when each was read.
    rents: std::sync::Mutex<std::collections::HashMap<usize, (u64, std::time::Instant)>>,
    /// How transactions' compute-unit prices are chosen.
    priority: super::priority::PriorityPolicy,
    /// Compute units a transaction shape simulated at.
    units_by_shape: std::sync::Mutex<std::collections::HashMap<Shape, u64>>,
    /// Recent fees per set of written accounts, with when each was read.
    recent_fees: std::sync::Mutex<std::collections::HashMap<Vec<Pubkey>, RecentFees>>,
    /// Held while a budget's missing simulation or fee reading is made,
    /// so sends in flight together make it once.
    budget_gate: tokio::sync::Mutex<()>,
    /// Lookup tables every message is compiled against (v0 when any;
    /// [`Chain::set_lookup_tables`]).
    tables: std::sync::RwLock<std::sync::Arc<[super::lookup::AddressLookupTableAccount]>>,
    /// More RPC endpoints a secret-carrying send also goes through
    /// ([`Chain::with_secret_relays`]), so one endpoint that withholds it
    /// cannot keep it from landing.
    relays: Vec<RpcClient>,
}

type Shape = Vec<(Pubkey, Vec<Pubkey>, usize)>;
type RecentFees = (std::time::Instant, Vec<(u64, u64)>);

/// How long recent prioritization fees are reused (a few slots).
const RECENT_FEES_TTL: Duration = Duration::from_secs(2);

/// What a compute budget came to: the limit and the price it set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Compute-unit limit.
    pub limit: u32,
    /// Micro-lamports per compute unit.
    pub price: u64,
}

/// How long a rent-exempt minimum is reused before it is read again (it
/// changes only with a feature activation; a release should not pay an
/// RPC round trip for it).
const RENT_TTL: Duration = Duration::from_secs(600);

/// Blocks past its validity a transaction seen below our commitment is
/// still awaited before it counts as expired.
const STUCK_MARGIN_BLOCKS: u64 = 150;

impl Chain {
    /// A handle with a 30 s request timeout, keeping the calls of the
    /// `watched` programs in the transactions it decodes (see
    /// [`Chain::watching`]). Asked of every caller, so none forgets a
    /// program whose calls it needs (the escrow's deposits: a chain that
    /// does not watch it sees no deposit, and rejects every escrow buy).
    pub fn new(endpoint: Endpoint, commitment: CommitmentConfig, watched: &[&str]) -> Chain {
        let rpc = RpcClient::new_with_timeout_and_commitment(
            endpoint.rpc_url.clone(),
            Duration::from_secs(30),
            commitment,
        );
        Chain {
            rpc,
            endpoint,
            commitment,
            kind: OnceCell::new(),
            genesis: OnceCell::new(),
            landing_budget: None,
            watched: watched.iter().map(|p| p.to_string()).collect(),
            landing: Default::default(),
            rents: Default::default(),
            priority: Default::default(),
            units_by_shape: Default::default(),
            recent_fees: Default::default(),
            budget_gate: Default::default(),
            tables: std::sync::RwLock::new(std::sync::Arc::new([])),
            relays: Vec::new(),
        }
    }

    /// This handle, sending every secret-carrying transaction
    /// ([`Chain::send_secret_once`], and its resends by
    /// [`Chain::finish_recorded`]) through `relays` as well as its own
    /// endpoint: a reveal withheld by one RPC still lands through another
    /// (each learns `s` only from a transaction signed for good). Reads
    /// stay on the handle's own endpoint.
    pub fn with_secret_relays(mut self, relays: &[Endpoint]) -> Chain {
        self.relays = relays
            .iter()
            .map(|e| {
                RpcClient::new_with_timeout_and_commitment(
                    e.rpc_url.clone(),
                    Duration::from_secs(30),
                    self.commitment,
                )
            })
            .collect();
        self
    }

    /// Sends the signed `tx` through every relay (no preflight, no retries
    /// by the node); returns how many took it. A relay's error is logged by
    /// its position only (its URL may carry an API key).
    async fn relay(
        &self,
        tx: &impl solana_rpc_client::rpc_client::SerializableTransaction,
    ) -> usize {
        let config = solana_rpc_client_api::config::RpcSendTransactionConfig {
            skip_preflight: true,
            max_retries: Some(0),
            ..Default::default()
        };
        let mut took = 0;
        for (i, relay) in self.relays.iter().enumerate() {
            match relay.send_transaction_with_config(tx, config).await {
                Ok(_) => took += 1,
                Err(e) => {
                    tracing::warn!(relay = i + 1, error = %super::retry::described(&e), "a secret relay did not take the send")
                }
            }
        }
        took
    }

    /// Compiles every transaction this handle sends from now on as a v0
    /// message against `tables` (legacy again when empty): each account a
    /// table holds is named by one byte ([`super::lookup`]).
    pub fn set_lookup_tables(&self, tables: Vec<super::lookup::AddressLookupTableAccount>) {
        *self.tables.write().unwrap_or_else(|p| p.into_inner()) = tables.into();
    }

    /// The lookup tables messages are compiled against.
    pub fn lookup_tables(&self) -> std::sync::Arc<[super::lookup::AddressLookupTableAccount]> {
        self.tables
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether `ixs` (signed by `signers`, `payer` paying) fit one packet
    /// as this handle compiles them.
    pub fn fits(&self, ixs: &[Instruction], payer: &Pubkey, signers: usize) -> bool {
        super::lookup::fits(ixs, payer, signers, &self.lookup_tables())
    }

    /// `ixs` signed by `signers` (the first pays) as this handle compiles
    /// them: legacy without lookup tables, v0 against them.
    fn signed(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        blockhash: solana_sdk::hash::Hash,
    ) -> Result<solana_sdk::transaction::VersionedTransaction, ChainError> {
        let payer = signers
            .first()
            .ok_or_else(|| ChainError::Config("a transaction needs a fee payer".into()))?
            .pubkey();
        let tables = self.lookup_tables();
        if tables.is_empty() {
            return Ok(
                Transaction::new_signed_with_payer(ixs, Some(&payer), signers, blockhash).into(),
            );
        }
        let message = super::lookup::message(ixs, &payer, &tables, blockhash)?;
        // each signer once, as a legacy transaction takes them
        let mut unique: Vec<&Keypair> = Vec::with_capacity(signers.len());
        for k in signers {
            if !unique.iter().any(|u| u.pubkey() == k.pubkey()) {
                unique.push(k);
            }
        }
        solana_sdk::transaction::VersionedTransaction::try_new(message, unique.as_slice())
            .map_err(|e| ChainError::Config(format!("a transaction does not sign: {e}")))
    }

    /// This handle, pricing its transactions' compute by `policy`
    /// ([`super::priority`]).
    pub fn with_priority(mut self, policy: super::priority::PriorityPolicy) -> Chain {
        self.priority = policy;
        self
    }

    /// How this handle prices compute.
    pub fn priority(&self) -> &super::priority::PriorityPolicy {
        &self.priority
    }

    /// The recent `(slot, micro-lamports)` prioritization fees of
    /// transactions writing `accounts` (read again after a couple of
    /// seconds).
    pub async fn recent_fees(&self, accounts: &[Pubkey]) -> Result<Vec<(u64, u64)>, ChainError> {
        let key = accounts.to_vec();
        let cached = || {
            self.recent_fees
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&key)
                .filter(|(at, _)| at.elapsed() < RECENT_FEES_TTL)
                .map(|(_, fees)| fees.clone())
        };
        if let Some(fees) = cached() {
            return Ok(fees);
        }
        let _gate = self.budget_gate.lock().await;
        if let Some(fees) = cached() {
            return Ok(fees);
        }
        let fees: Vec<(u64, u64)> = with_retry("getRecentPrioritizationFees", || {
            self.rpc.get_recent_prioritization_fees(accounts)
        })
        .await?
        .into_iter()
        .map(|f| (f.slot, f.prioritization_fee))
        .collect();
        let mut cache = self.recent_fees.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() > 256 {
            cache.clear();
        }
        cache.insert(key, (std::time::Instant::now(), fees.clone()));
        Ok(fees)
    }

    /// The compute units transactions shaped as `ixs` take: simulated
    /// once per shape (at the most units a transaction may ask), reused
    /// after; `None` when the simulation failed (a transaction that would
    /// fail: its send decides).
    async fn units_of(
        &self,
        ixs: &[Instruction],
        payer: &Pubkey,
    ) -> Result<Option<u64>, ChainError> {
        use solana_rpc_client_api::config::RpcSimulateTransactionConfig;
        let shape = super::priority::shape(ixs);
        let cached = || {
            self.units_by_shape
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&shape)
                .copied()
        };
        if let Some(units) = cached() {
            return Ok(Some(units));
        }
        let _gate = self.budget_gate.lock().await;
        if let Some(units) = cached() {
            return Ok(Some(units));
        }
        let probe = super::priority::with_budget(ixs, super::priority::MAX_CU_LIMIT, 0);
        let message = super::lookup::message(
            &probe,
            payer,
            &self.lookup_tables(),
            solana_sdk::hash::Hash::default(),
        )?;
        let tx = solana_sdk::transaction::VersionedTransaction {
            signatures: vec![
                solana_sdk::signature::Signature::default();
                usize::from(message.header().num_required_signatures)
            ],
            message,
        };
        let sim = with_retry("simulateTransaction", || {
            self.rpc.simulate_transaction_with_config(
                &tx,
                RpcSimulateTransactionConfig {
                    sig_verify: false,
                    replace_recent_blockhash: true,
                    commitment: Some(CommitmentConfig::confirmed()),
                    ..Default::default()
                },
            )
        })
        .await?
        .value;
        match (sim.err, sim.units_consumed) {
            (None, Some(units)) => {
                self.units_by_shape
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(shape, units);
                Ok(Some(units))
            }
            (err, _) => {
                tracing::debug!(
                    ?err,
                    "a transaction's simulation failed; its limit is the default"
                );
                Ok(None)
            }
        }
    }

    /// The compute budget of `ixs` (signed by `signers` with `payer`
    /// paying) under this handle's policy: the simulated limit with its
    /// margin, the price from the recent fees of what it writes, capped.
    /// A price that would push the transaction past a packet is left out.
    pub async fn budget_for(
        &self,
        ixs: &[Instruction],
        payer: &Pubkey,
        signers: usize,
    ) -> Result<(Vec<Instruction>, Budget), ChainError> {
        use super::priority::{limit_for, FALLBACK_CU_LIMIT};
        let limit = match self.units_of(ixs, payer).await? {
            Some(units) => limit_for(units),
            // no simulation: the limit the caller set, if higher
            None => super::priority::limit_set(ixs)
                .map_or(FALLBACK_CU_LIMIT, |l| l.max(FALLBACK_CU_LIMIT)),
        };
        self.budget_with_limit(ixs, payer, signers, limit).await
    }

    /// [`Chain::budget_for`] with the compute-unit limit given (nothing
    /// simulated).
    async fn budget_with_limit(
        &self,
        ixs: &[Instruction],
        payer: &Pubkey,
        signers: usize,
        limit: u32,
    ) -> Result<(Vec<Instruction>, Budget), ChainError> {
        use super::priority::{with_budget, written, FALLBACK_CU_LIMIT};
        let price = match self.priority.fixed_micro_lamports {
            Some(_) => self.priority.price(&[], limit),
            None => {
                let recent = self.recent_fees(&written(ixs)).await?;
                self.priority.price(&recent, limit)
            }
        };
        let budgeted = with_budget(ixs, limit, price);
        if !self.fits(&with_budget(ixs, limit, 0), payer, signers) {
            tracing::warn!("no room in the packet for a compute budget; sent as built");
            return Ok((
                ixs.to_vec(),
                Budget {
                    limit: FALLBACK_CU_LIMIT,
                    price: 0,
                },
            ));
        }
        if price > 0 && !self.fits(&budgeted, payer, signers) {
            tracing::warn!(
                price,
                "no room in the packet for a compute-unit price; sent without one"
            );
            return Ok((with_budget(ixs, limit, 0), Budget { limit, price: 0 }));
        }
        Ok((budgeted, Budget { limit, price }))
    }

    /// This handle, keeping the top-level calls of `program_id` (and the
    /// logs of transactions it ran in) in every transaction it decodes
    /// ([`ParsedTx::calls`]): what a program's module reads its own
    /// instructions from (e.g. `escrow::deposits_in`).
    pub fn watching(mut self, program_id: &str) -> Chain {
        if !self.watched.iter().any(|p| p == program_id) {
            self.watched.push(program_id.to_string());
        }
        self
    }

    /// A handle on the same node and programs reading at `commitment`
    /// (e.g. a seller's `cancel` looked up at `confirmed` by a buyer whose
    /// handle waits for `finalized`).
    pub fn at_commitment(&self, commitment: CommitmentConfig) -> Chain {
        let mut other = Chain::new(self.endpoint.clone(), commitment, &[]);
        other.watched = self.watched.clone();
        other.landing_budget = self.landing_budget;
        other.priority = self.priority;
        if let Some(kind) = self.kind.get() {
            let _ = other.kind.set(*kind);
        }
        if let Some(genesis) = self.genesis.get() {
            let _ = other.genesis.set(*genesis);
        }
        other
    }

    /// This handle, waiting at most `budget` for each sent transaction to
    /// land before returning [`ChainError::NotLandedYet`]. Only for callers
    /// whose sends are idempotent on retry (the listen daemon's releases:
    /// each has a derived mint that cannot be created twice), so one
    /// stuck transaction never holds up the others; without a budget a
    /// send waits until the blockhash has provably expired.
    pub fn with_landing_budget(mut self, budget: Duration) -> Chain {
        self.landing_budget = Some(budget);
        self
    }

    /// Whether decoded transactions keep `program_id`'s calls.
    pub fn watches(&self, program_id: &str) -> bool {
        self.watched.iter().any(|p| p == program_id)
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The commitment used for reads and confirmations.
    pub fn commitment(&self) -> CommitmentConfig {
        self.commitment
    }

    /// The underlying client (for calls this wrapper does not cover).
    pub fn rpc(&self) -> &RpcClient {
        &self.rpc
    }

    /// The cluster's kind, from its genesis hash (cached).
    pub async fn cluster_kind(&self) -> Result<ClusterKind, ChainError> {
        self.kind
            .get_or_try_init(|| async {
                let h = solana_sdk::hash::Hash::new_from_array(self.genesis_hash().await?);
                Ok(ClusterKind::from_genesis_hash(&h.to_string()))
            })
            .await
            .copied()
    }

    /// The cluster's genesis hash (cached): what names a cluster (a sealed
    /// escrow's k is bound to it).
    pub async fn genesis_hash(&self) -> Result<[u8; 32], ChainError> {
        self.genesis
            .get_or_try_init(|| async {
                let h = with_retry("getGenesisHash", || self.rpc.get_genesis_hash()).await?;
                Ok(h.to_bytes())
            })
            .await
            .copied()
    }

    /// The cluster's clock: the block time of its newest slot at our
    /// commitment (what `listen` and the indexer judge expiry by), never
    /// this machine's.
    pub async fn cluster_time(&self) -> Result<i64, ChainError> {
        let slot = with_retry("getSlot", || {
            self.rpc.get_slot_with_commitment(self.commitment)
        })
        .await?;
        with_retry("getBlockTime", || self.rpc.get_block_time(slot)).await
    }

    /// `getHealth`.
    pub async fn health(&self) -> Result<(), ChainError> {
        with_retry("getHealth", || self.rpc.get_health()).await
    }

    /// Balance in lamports.
    pub async fn balance(&self, who: &Pubkey) -> Result<u64, ChainError> {
        with_retry("getBalance", || self.rpc.get_balance(who)).await
    }

    /// What `ixs`, paid and signed by `payer`, would take from the payer's
    /// balance: the transaction simulated at `confirmed` (fee included),
    /// the payer's lamports after it compared with now. A transaction the
    /// simulation refuses is [`ChainError::Config`] with the reason.
    pub async fn simulated_cost(
        &self,
        ixs: &[Instruction],
        payer: &Keypair,
    ) -> Result<u64, ChainError> {
        use solana_rpc_client_api::config::{
            RpcSimulateTransactionAccountsConfig, RpcSimulateTransactionConfig, UiAccountEncoding,
        };
        let me = payer.pubkey();
        let (blockhash, _) = with_retry("getLatestBlockhash", || {
            self.rpc
                .get_latest_blockhash_with_commitment(CommitmentConfig::confirmed())
        })
        .await?;
        let tx = Transaction::new_signed_with_payer(ixs, Some(&me), &[payer], blockhash);
        let config = RpcSimulateTransactionConfig {
            sig_verify: false,
            replace_recent_blockhash: true,
            commitment: Some(CommitmentConfig::confirmed()),
            accounts: Some(RpcSimulateTransactionAccountsConfig {
                encoding: Some(UiAccountEncoding::Base64),
                addresses: vec![me.to_string()],
            }),
            ..Default::default()
        };
        let before = with_retry("getBalance", || {
            self.rpc
                .get_balance_with_commitment(&me, CommitmentConfig::confirmed())
        })
        .await?
        .value;
        let sim = with_retry("simulateTransaction", || {
            self.rpc
                .simulate_transaction_with_config(&tx, config.clone())
        })
        .await?
        .value;
        if let Some(err) = sim.err {
            return Err(ChainError::Config(format!(
                "the simulation refused the transaction: {err}"
            )));
        }
        let after = sim
            .accounts
            .and_then(|a| a.into_iter().next().flatten())
            .map_or(0, |a| a.lamports);
        Ok(before.saturating_sub(after))
    }

    /// Requests an airdrop and waits until it is confirmed at our commitment.
    pub async fn airdrop(&self, to: &Pubkey, lamports: u64) -> Result<Signature, ChainError> {
        if self.cluster_kind().await? == ClusterKind::MainnetBeta {
            return Err(ChainError::Config(
                "airdrops do not exist on mainnet-beta".into(),
            ));
        }
        let sig = with_retry("requestAirdrop", || self.rpc.request_airdrop(to, lamports)).await?;
        self.wait_for(&sig, u64::MAX).await?;
        Ok(sig)
    }

    /// Signs with `signers` (the first pays), sends with preflight, and
    /// waits for our commitment. If the blockhash expires before the
    /// transaction lands, it is rebuilt with a fresh one (up to 3 times);
    /// a transaction is never re-sent while its predecessor could still land.
    pub async fn send(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<Sent, ChainError> {
        self.send_inner(ixs, signers, Preflight::Simulate, 3, None)
            .await
    }

    /// Like [`Chain::send`] but without the node simulating the
    /// transaction first (its preflight runs it once more on the node's
    /// cores): a transaction that would fail lands failed, costing its
    /// fee, and is reported as [`ChainError::TxFailed`] with the chain's
    /// error, as a refused preflight would be. For a sender whose
    /// transactions rarely fail and whose volume is the node's load (the
    /// listen daemon's releases).
    pub async fn send_unsimulated(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<Sent, ChainError> {
        self.send_inner(ixs, signers, Preflight::Skip, 3, None)
            .await
    }

    /// [`Chain::send_unsimulated`], each signed transaction handed to
    /// `record` before it is sent.
    pub async fn send_unsimulated_recorded(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        record: RecordSend<'_>,
    ) -> Result<Sent, ChainError> {
        self.send_inner(ixs, signers, Preflight::Skip, 3, Some(record))
            .await
    }

    /// [`Chain::send`] (preflight, rebuilt up to 3 times), each signed
    /// transaction handed to `record` before it is sent: a caller that
    /// must never lose track of a payment keeps it before it can land.
    pub async fn send_recorded(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        record: RecordSend<'_>,
    ) -> Result<Sent, ChainError> {
        self.send_inner(ixs, signers, Preflight::Simulate, 3, Some(record))
            .await
    }

    /// Where a transaction signed with a blockhash valid until
    /// `last_valid` stands: landed (failed or not), still able to land,
    /// or never to land (its blockhash expired without it, asked of the
    /// whole history and of `getTransaction`).
    pub async fn landing_of(
        &self,
        sig: &Signature,
        last_valid: u64,
    ) -> Result<LandingOf, ChainError> {
        let (status, height) = self.landing.read(&self.rpc, sig).await?;
        if let Some(status) = status {
            return Ok(LandingOf::Landed { slot: status.slot });
        }
        if height <= last_valid {
            return Ok(LandingOf::InFlight);
        }
        Ok(match self.landed_after_all(sig, true).await? {
            Some(slot) => LandingOf::Landed { slot },
            None => LandingOf::Never,
        })
    }

    /// Finishes a transaction kept by a [`RecordSend`] before a crash:
    /// `Some` once it landed (sent again, the very same bytes, while its
    /// blockhash is valid: a copy is the same signature and lands once);
    /// `None` when it failed on chain or can no longer land (its blockhash
    /// expired without it, asked of the whole history), so a new one may
    /// be signed.
    pub async fn finish_recorded(
        &self,
        sig: &Signature,
        last_valid: u64,
        wire: &[u8],
    ) -> Result<Option<Sent>, ChainError> {
        let height = self.landing.read(&self.rpc, sig).await?.1;
        if height <= last_valid {
            let tx: solana_sdk::transaction::VersionedTransaction = bincode::deserialize(wire)
                .map_err(|e| {
                    ChainError::Config(format!("a recorded transaction does not decode: {e}"))
                })?;
            if tx.signatures.first() != Some(sig) {
                return Err(ChainError::Config(format!(
                    "the recorded transaction is not {sig}"
                )));
            }
            let config = solana_rpc_client_api::config::RpcSendTransactionConfig {
                skip_preflight: true,
                max_retries: Some(0),
                ..Default::default()
            };
            // refused (e.g. already processed): its status decides below
            if let Err(e) = self.rpc.send_transaction_with_config(&tx, config).await {
                tracing::debug!(%sig, error = %e, "a recorded transaction was not sent again");
            }
            self.relay(&tx).await;
        }
        let landed = match self.wait_for_landing(sig, last_valid, false).await {
            Ok(Some(slot)) => Some(slot),
            Ok(None) => match self.landed_after_all(sig, false).await {
                Err(ChainError::TxFailed { error, .. }) => {
                    tracing::warn!(%sig, %error, "a recorded transaction failed on chain");
                    None
                }
                other => other?,
            },
            Err(ChainError::TxFailed { error, .. }) => {
                tracing::warn!(%sig, %error, "a recorded transaction failed on chain");
                None
            }
            Err(e) => return Err(e),
        };
        Ok(landed.map(|slot| Sent {
            signature: *sig,
            slot,
        }))
    }

    /// Sends a transaction someone else built and signed with us (an x402
    /// payment the node co-signed as fee payer): simulated first with
    /// every signature checked (a refusal is [`ChainError::Config`] with
    /// the reason, nothing sent, no fee paid), sent without a second
    /// preflight, and waited for at our commitment (until its blockhash
    /// must have expired: 150 blocks past the current height). Sending the
    /// same transaction again is harmless: it is the same signature.
    pub async fn send_cosigned(
        &self,
        tx: &solana_sdk::transaction::VersionedTransaction,
    ) -> Result<Sent, ChainError> {
        use solana_rpc_client_api::config::{
            RpcSendTransactionConfig, RpcSimulateTransactionConfig,
        };
        let sig = tx.signatures[0];
        let sim = with_retry("simulateTransaction", || {
            self.rpc.simulate_transaction_with_config(
                tx,
                RpcSimulateTransactionConfig {
                    sig_verify: true,
                    commitment: Some(CommitmentConfig::confirmed()),
                    ..Default::default()
                },
            )
        })
        .await?
        .value;
        if let Some(err) = sim.err {
            // a transaction that already landed simulates as a duplicate
            if self.status_landed(&sig).await? {
                return self.landed(&sig).await;
            }
            return Err(ChainError::Config(format!(
                "the simulation refused the transaction: {err}"
            )));
        }
        let height = with_retry("getBlockHeight", || self.rpc.get_block_height()).await?;
        with_retry("sendTransaction", || {
            self.rpc.send_transaction_with_config(
                tx,
                RpcSendTransactionConfig {
                    skip_preflight: true,
                    ..Default::default()
                },
            )
        })
        .await?;
        let slot = self.wait_for(&sig, height.saturating_add(150)).await?;
        Ok(Sent {
            signature: sig,
            slot,
        })
    }

    /// Whether `sig` has landed (at any commitment, failed or not).
    pub async fn status_landed(&self, sig: &Signature) -> Result<bool, ChainError> {
        // with history: a retry after the status cache has moved on
        let statuses = with_retry("getSignatureStatuses", || {
            self.rpc
                .get_signature_statuses_with_history(std::slice::from_ref(sig))
        })
        .await?
        .value;
        Ok(statuses.first().is_some_and(Option::is_some))
    }

    /// A landed `sig` as sent (waited for at our commitment).
    async fn landed(&self, sig: &Signature) -> Result<Sent, ChainError> {
        let height = with_retry("getBlockHeight", || self.rpc.get_block_height()).await?;
        let slot = self.wait_for(sig, height.saturating_add(150)).await?;
        Ok(Sent {
            signature: *sig,
            slot,
        })
    }

    /// Like [`Chain::send`] but with one blockhash only: a transaction
    /// that has not landed when its blockhash expires is
    /// [`ChainError::Expired`], never rebuilt. For what must land before a
    /// deadline (a sealed escrow's reveal): the caller checks the deadline
    /// again before trying anew.
    pub async fn send_once(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<Sent, ChainError> {
        self.send_inner(ixs, signers, Preflight::Simulate, 1, None)
            .await
    }

    /// Sends `ixs` carrying a secret (a sealed escrow's reveal `s`) that
    /// no RPC may see unless it is signed and sent for good: never
    /// simulated (the compute-unit limit is `cu_limit`, the price from the
    /// recent fees), no preflight, one blockhash only (one that expires
    /// unlanded is [`ChainError::Expired`], never rebuilt), the signed
    /// transaction handed to `record` before it is sent.
    pub async fn send_secret_once(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        cu_limit: u32,
        record: RecordSend<'_>,
    ) -> Result<Sent, ChainError> {
        self.send_inner(
            ixs,
            signers,
            Preflight::Secret { cu_limit },
            1,
            Some(record),
        )
        .await
    }

    /// Like [`Chain::send`] but skips preflight, so a transaction that
    /// fails on chain still lands (with `meta.err`). Returns the failure as
    /// `Ok` with the slot, for tests of hostile transactions.
    pub async fn send_skip_preflight(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<Sent, ChainError> {
        self.send_inner(ixs, signers, Preflight::SkipAndAcceptFailure, 3, None)
            .await
    }

    async fn send_inner(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        preflight: Preflight,
        attempts: usize,
        record: Option<RecordSend<'_>>,
    ) -> Result<Sent, ChainError> {
        let skip_preflight = preflight != Preflight::Simulate;
        let accept_failed = preflight == Preflight::SkipAndAcceptFailure;
        let secret_limit = match preflight {
            Preflight::Secret { cu_limit } => Some(cu_limit),
            _ => None,
        };
        let send_started = std::time::Instant::now();
        let payer = signers
            .first()
            .ok_or_else(|| ChainError::Config("a transaction needs a fee payer".into()))?;
        // every transaction of ours carries its compute budget; a hostile
        // test transaction is sent exactly as built
        let budgeted;
        let ixs = match (accept_failed, secret_limit) {
            (true, _) => ixs,
            (false, Some(limit)) => {
                budgeted = self
                    .budget_with_limit(ixs, &payer.pubkey(), signers.len(), limit)
                    .await?
                    .0;
                &budgeted[..]
            }
            (false, None) => {
                budgeted = self
                    .budget_for(ixs, &payer.pubkey(), signers.len())
                    .await?
                    .0;
                &budgeted[..]
            }
        };
        for _ in 0..attempts {
            let (blockhash, last_valid) = with_retry("getLatestBlockhash", || {
                self.rpc
                    .get_latest_blockhash_with_commitment(CommitmentConfig::confirmed())
            })
            .await?;
            let tx = self.signed(ixs, signers, blockhash)?;
            let config = solana_rpc_client_api::config::RpcSendTransactionConfig {
                skip_preflight,
                preflight_commitment: Some(CommitmentConfig::confirmed().commitment),
                max_retries: Some(0),
                ..Default::default()
            };
            if let Some(record) = record {
                let wire = bincode::serialize(&tx).map_err(|e| {
                    ChainError::Config(format!("a transaction does not encode: {e}"))
                })?;
                record(&tx.signatures[0], last_valid, &wire)?;
            }
            let sent = with_retry("sendTransaction", || {
                self.rpc.send_transaction_with_config(&tx, config)
            })
            .await;
            // a secret goes through every relay too; the endpoint's own
            // refusal fails the send only when no relay took it
            let sig = if secret_limit.is_some() && !self.relays.is_empty() {
                let took = self.relay(&tx).await;
                match sent {
                    Ok(sig) => sig,
                    Err(e) if took == 0 => return Err(e),
                    Err(_) => {
                        tracing::warn!(took, "the endpoint refused a secret send; relays took it");
                        tx.signatures[0]
                    }
                }
            } else {
                sent?
            };
            tracing::debug!(%sig, last_valid, ms = send_started.elapsed().as_millis() as u64, "sent; awaiting our commitment");
            let waited = self
                .wait_for_landing(&sig, last_valid, accept_failed)
                .await
                .inspect_err(|e| {
                    // out of compute units: the shape's simulation is stale
                    if matches!(e, ChainError::TxFailed { error, .. } if error.contains("ComputationalBudgetExceeded") || error.contains("exceeded CUs"))
                    {
                        self.units_by_shape
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&super::priority::shape(ixs));
                    }
                })?;
            let landed = match waited {
                Some(slot) => Some(slot),
                // a status query that wrongly said "not found" must not
                // make us pay twice: ask the history and the ledger again
                None => self.landed_after_all(&sig, accept_failed).await?,
            };
            match landed {
                Some(slot) => {
                    return Ok(Sent {
                        signature: sig,
                        slot,
                    })
                }
                None => tracing::info!(%sig, "blockhash expired before landing; rebuilding"),
            }
        }
        Err(ChainError::Expired)
    }

    /// Before a send is rebuilt: whether `sig` landed after all, by a
    /// status query over the whole history and by `getTransaction` at
    /// `confirmed` (two more answers that must both say "never landed").
    async fn landed_after_all(
        &self,
        sig: &Signature,
        accept_failed: bool,
    ) -> Result<Option<u64>, ChainError> {
        let failed = |error: String| ChainError::TxFailed {
            signature: sig.to_string(),
            error,
        };
        let sigs = [*sig];
        let st = with_retry("getSignatureStatuses", || {
            self.rpc.get_signature_statuses_with_history(&sigs)
        })
        .await?;
        if let Some(Some(status)) = st.value.first() {
            tracing::warn!(%sig, slot = status.slot, "a send thought expired is on chain after all; not sending again");
            return match &status.status {
                Err(e) if !accept_failed => Err(failed(e.to_string())),
                _ => Ok(Some(status.slot)),
            };
        }
        let Some(v) = self
            .transaction_json_at(sig, CommitmentConfig::confirmed())
            .await?
        else {
            return Ok(None);
        };
        let Some(slot) = v.get("slot").and_then(Value::as_u64) else {
            return Ok(None);
        };
        tracing::warn!(%sig, slot, "a send thought expired is on chain after all; not sending again");
        match v.pointer("/meta/err") {
            Some(e) if !e.is_null() && !accept_failed => Err(failed(e.to_string())),
            _ => Ok(Some(slot)),
        }
    }

    /// Waits until `sig` reaches our commitment. `Ok(None)` once its
    /// blockhash is past `last_valid` without it landing.
    async fn wait_for_landing(
        &self,
        sig: &Signature,
        last_valid: u64,
        accept_failed: bool,
    ) -> Result<Option<u64>, ChainError> {
        let started = tokio::time::Instant::now();
        // read together with every other send of this handle in flight
        let _awaited = self.landing.watch(*sig);
        loop {
            let (status, height) = self.landing.read(&self.rpc, sig).await?;
            // seen but not at our commitment (e.g. on a fork a validator
            // restart abandoned) may stay so forever: give it a second
            // validity window, then treat it as expired (a rebuilt send of
            // a release cannot land twice: its derived mint can't be re-created)
            let margin = match status {
                Some(status) => {
                    if let Err(e) = &status.status {
                        if !accept_failed {
                            return Err(ChainError::TxFailed {
                                signature: sig.to_string(),
                                error: e.to_string(),
                            });
                        }
                    }
                    if status.satisfies_commitment(self.commitment) {
                        return Ok(Some(status.slot));
                    }
                    STUCK_MARGIN_BLOCKS
                }
                None => 0,
            };
            if height > last_valid.saturating_add(margin) {
                return Ok(None);
            }
            if let Some(budget) = self.landing_budget {
                if started.elapsed() > budget {
                    return Err(ChainError::NotLandedYet {
                        signature: sig.to_string(),
                        seconds: budget.as_secs(),
                    });
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// The lamports an account of `bytes` data needs to be rent-exempt
    /// (read again after [`RENT_TTL`]).
    pub async fn rent_exemption(&self, bytes: usize) -> Result<u64, ChainError> {
        let cached = self
            .rents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&bytes)
            .filter(|(_, at)| at.elapsed() < RENT_TTL)
            .map(|(lamports, _)| *lamports);
        if let Some(lamports) = cached {
            return Ok(lamports);
        }
        let lamports = with_retry("getMinimumBalanceForRentExemption", || {
            self.rpc.get_minimum_balance_for_rent_exemption(bytes)
        })
        .await?;
        self.rents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(bytes, (lamports, std::time::Instant::now()));
        Ok(lamports)
    }

    /// Waits for a signature we did not build (airdrops).
    async fn wait_for(&self, sig: &Signature, last_valid: u64) -> Result<u64, ChainError> {
        self.wait_for_landing(sig, last_valid, false)
            .await?
            .ok_or(ChainError::Expired)
    }

    /// An address's history newer than `until` (all of it when `None`),
    /// newest first, paging with `before` until the end: no fixed window.
    pub async fn signatures_for(
        &self,
        address: &Pubkey,
        until: Option<&Signature>,
    ) -> Result<Vec<SigInfo>, ChainError> {
        self.signatures_at_most(address, until, usize::MAX).await
    }

    /// One page (at most 1,000 entries, newest first) of `address`'s
    /// history before `before` (`None`: from the newest) and after
    /// `until`.
    pub async fn signatures_page(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        until: Option<&Signature>,
    ) -> Result<Vec<SigInfo>, ChainError> {
        let cfg = || GetConfirmedSignaturesForAddress2Config {
            before: before.copied(),
            until: until.copied(),
            limit: Some(1000),
            commitment: Some(self.commitment),
        };
        with_retry("getSignaturesForAddress", || {
            self.rpc
                .get_signatures_for_address_with_config(address, cfg())
        })
        .await
    }

    /// [`Chain::signatures_for`], at most the newest `max` entries (whole
    /// pages of 1,000): for a lookup in a history anyone can lengthen.
    pub async fn signatures_at_most(
        &self,
        address: &Pubkey,
        until: Option<&Signature>,
        max: usize,
    ) -> Result<Vec<SigInfo>, ChainError> {
        let mut out: Vec<SigInfo> = Vec::new();
        let mut before: Option<Signature> = None;
        loop {
            let cfg = || GetConfirmedSignaturesForAddress2Config {
                before,
                until: until.copied(),
                limit: Some(1000),
                commitment: Some(self.commitment),
            };
            let page = with_retry("getSignaturesForAddress", || {
                self.rpc
                    .get_signatures_for_address_with_config(address, cfg())
            })
            .await?;
            let Some(last) = page.last() else { break };
            before = Some(Signature::from_str(&last.signature).map_err(|_| {
                ChainError::Config(format!("RPC returned a bad signature {}", last.signature))
            })?);
            let full = page.len() == 1000;
            out.extend(page);
            if !full || out.len() >= max {
                break;
            }
        }
        Ok(out)
    }

    /// `getTransaction` in jsonParsed encoding; `None` if the node has none.
    pub async fn transaction_json(&self, sig: &Signature) -> Result<Option<Value>, ChainError> {
        self.transaction_json_at(sig, self.commitment).await
    }

    /// The fee transaction `sig` paid (priority included), if it reads.
    pub async fn fee_paid(&self, sig: &Signature) -> Option<u64> {
        self.transaction_json(sig)
            .await
            .ok()
            .flatten()
            .and_then(|t| t.pointer("/meta/fee").and_then(Value::as_u64))
    }

    /// [`Chain::transaction_json`] at `commitment`.
    async fn transaction_json_at(
        &self,
        sig: &Signature,
        commitment: CommitmentConfig,
    ) -> Result<Option<Value>, ChainError> {
        let params = json!([sig.to_string(), {
            "encoding": "jsonParsed",
            "commitment": commitment.commitment,
            "maxSupportedTransactionVersion": 0
        }]);
        let v: Value = with_retry("getTransaction", || {
            self.rpc.send(RpcRequest::GetTransaction, params.clone())
        })
        .await?;
        Ok((!v.is_null()).then_some(v))
    }

    /// A transaction, decoded ([`ParsedTx`]); an answer about another
    /// transaction than `sig` is an error, never a verdict on `sig`.
    pub async fn transaction(&self, sig: &Signature) -> Result<Option<ParsedTx>, ChainError> {
        Ok(self.transaction_with_accounts(sig).await?.map(|(tx, _)| tx))
    }

    /// [`Chain::transaction`] with every account the transaction
    /// references (its message's keys and those loaded from lookup
    /// tables): what `getSignaturesForAddress` lists it under.
    pub async fn transaction_with_accounts(
        &self,
        sig: &Signature,
    ) -> Result<Option<(ParsedTx, Vec<String>)>, ChainError> {
        let Some(v) = self.transaction_json(sig).await? else {
            return Ok(None);
        };
        let tx = ParsedTx::from_json_watching(&v, &self.watched)?;
        if tx.signature != sig.to_string() {
            return Err(ChainError::WrongTransaction {
                asked: sig.to_string(),
                got: tx.signature,
            });
        }
        let keys = v.pointer("/transaction/message/accountKeys");
        let loaded =
            ["writable", "readonly"].map(|k| v.pointer(&format!("/meta/loadedAddresses/{k}")));
        let mut accounts: Vec<String> = keys
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|k| k.get("pubkey").and_then(Value::as_str))
            .map(String::from)
            .collect();
        for list in loaded.into_iter().flatten().filter_map(Value::as_array) {
            accounts.extend(list.iter().filter_map(Value::as_str).map(String::from));
        }
        Ok(Some((tx, accounts)))
    }
}
