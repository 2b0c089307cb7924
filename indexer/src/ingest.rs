//! Ingest from RPC: the history of each watched address
//! (`getSignaturesForAddress`, paged to the checkpoint), each transaction
//! (`getTransaction` jsonParsed), its index in the block (`getBlock`,
//! signatures only) and the manifests its memos name (from the gateway,
//! each proven to be its ANS-104 item before it is cached),
//! batched and concurrent under a request-rate limit; the node's client
//! retries transport errors with backoff.
//!
//! Commitment: history is read at `confirmed`; records at or below the
//! finalized slot are final, newer ones provisional and re-checked on the
//! next poll: one that no longer appears has vanished and is removed.
//! Checkpoints only ever move to final signatures.
//!
//! Owns turning chain data into [`TxRecord`]s; it never judges them.

use crate::engine::{Applied, Indexer};
use crate::record::TxRecord;
use crate::store::StoreError;
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use node::arweave::{Source, StorageError};
use node::chain::retry::with_retry;
use node::chain::{Chain, ParsedTx, Pubkey, Signature};
use node::market::MemoOp;
use serde_json::{json, Value};
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client_api::request::RpcRequest;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

mod cold_sync;
pub use cold_sync::{Backlog, PAGE as SYNC_PAGE};

/// Largest manifest body fetched.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;

/// Ingest errors.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// RPC.
    #[error(transparent)]
    Chain(#[from] node::chain::ChainError),
    /// Storage.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The gateway failed for another reason than "not found".
    #[error("manifest {id}: {source}")]
    Gateway {
        /// Item.
        id: String,
        /// Why.
        source: StorageError,
    },
    /// A blocking store task panicked or was cancelled.
    #[error("indexer store task: {0}")]
    Task(String),
    /// A hinted transaction references no watched address: polling never
    /// lists it, so folding it would make the state differ from a rebuild.
    #[error("transaction {0} references none of the addresses this indexer watches (the registry, the escrow program); send marketplace actions with the registry reference, as brainctl does")]
    Unwatched(String),
    /// A hinted release names a buy not indexed yet (an x402 payment,
    /// which only its release leads to): the next poll folds both.
    #[error("release {0} settles a buy this indexer has not folded yet; the next poll folds both (retry in a few seconds)")]
    NamedBuyPending(String),
}

/// The RPC request budget (`--rps`), in two lanes: polls and hints
/// queue for it in turn; a transaction the chain's push notifications
/// named ([`Lane::First`]) has a lane of its own beside that queue (the
/// same rate, a quarter of it as a burst), so a fetch the API is waiting
/// on never waits behind a poll's backlog. A first-lane request also
/// takes a cell from the queue's budget when one is free, so over time
/// the two stay near the one rate; at worst, while both are saturated,
/// the node sees up to twice it for a moment.
pub struct RateLimit {
    queue: Option<governor::DefaultDirectRateLimiter>,
    first: Option<governor::DefaultDirectRateLimiter>,
}

/// Which lane of the [`RateLimit`] a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// In turn with every poll and hint.
    Queue,
    /// Beside the queue: a notified transaction the API is waiting on.
    First,
}

impl RateLimit {
    /// A limit of `per_second` requests (0 = none).
    pub fn new(per_second: u32) -> RateLimit {
        use governor::{Quota, RateLimiter};
        let Some(rate) = std::num::NonZeroU32::new(per_second) else {
            return RateLimit {
                queue: None,
                first: None,
            };
        };
        let burst = std::num::NonZeroU32::new(per_second / 4).unwrap_or(std::num::NonZeroU32::MIN);
        RateLimit {
            // strictly spaced, as a public RPC provider counts
            queue: Some(RateLimiter::direct(
                Quota::per_second(rate).allow_burst(std::num::NonZeroU32::MIN),
            )),
            first: Some(RateLimiter::direct(
                Quota::per_second(rate).allow_burst(burst),
            )),
        }
    }

    /// Waits for the next request slot in `lane`.
    pub async fn wait_in(&self, lane: Lane) {
        match lane {
            Lane::Queue => {
                if let Some(q) = &self.queue {
                    q.until_ready().await;
                }
            }
            Lane::First => {
                if let Some(f) = &self.first {
                    f.until_ready().await;
                }
                if let Some(q) = &self.queue {
                    // paid from the queue's budget when it has a cell free
                    let _ = q.check();
                }
            }
        }
    }

    /// Waits for the next request slot in the queue.
    pub async fn wait(&self) {
        self.wait_in(Lane::Queue).await
    }
}

/// How long a transaction whose manifest the gateway does not serve yet
/// is held back (re-fetched every poll) before it is folded without it.
pub const DEFAULT_MANIFEST_GRACE: Duration = Duration::from_secs(600);
/// Most transactions held back at once (beyond, they fold at once).
pub const MAX_HELD: usize = 10_000;
/// The meta key of the held-back transactions (JSON: signature → first seen, unix s).
pub const HELD_KEY: &str = "held_for_manifests";

/// How to read the chain.
pub struct RpcSource {
    chain: Chain,
    gateway: Source,
    addresses: Vec<Pubkey>,
    concurrency: usize,
    limit: RateLimit,
    manifest_grace: Duration,
    /// When the chain's clock was last read (unix ms).
    clock_read_ms: std::sync::atomic::AtomicI64,
    /// How far polls have fetched (for a progress display).
    progress: FetchProgress,
}

/// Transactions polls have asked for and fetched so far (a rebuild's
/// progress: `fetched` of `wanted`).
#[derive(Debug, Default)]
pub struct FetchProgress {
    wanted: std::sync::atomic::AtomicUsize,
    fetched: std::sync::atomic::AtomicUsize,
}

impl FetchProgress {
    /// `(fetched, wanted)` so far.
    pub fn get(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.fetched.load(Relaxed), self.wanted.load(Relaxed))
    }
}

/// How often a poll reads the chain's clock.
pub const CLOCK_EVERY: Duration = Duration::from_secs(5);

/// What one poll did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollReport {
    /// Signatures listed across addresses.
    pub listed: usize,
    /// Transactions fetched.
    pub fetched: usize,
    /// The finalized slot.
    pub final_slot: u64,
    /// What the engine did.
    pub applied: Applied,
    /// Pages of a cold sync still to store (0: caught up; more: poll
    /// again at once).
    pub backlog_pages: u64,
}

/// The manifest ids a transaction's memos name. The `release` memo beside
/// a sealed escrow's reveal names the escrow account, not an envelope:
/// the key is on chain, so there is nothing to fetch (and nothing to wait
/// for).
fn manifest_ids(tx: &ParsedTx) -> Vec<String> {
    let revealed: Vec<String> = node::escrow::events_in(tx)
        .into_iter()
        .filter_map(|e| match e {
            node::escrow::EscrowEvent::Revealed { escrow } => Some(escrow.to_string()),
            _ => None,
        })
        .collect();
    tx.memos
        .iter()
        .filter_map(|m| match MemoOp::parse(m).ok()? {
            MemoOp::List {
                listing_arweave_id: id,
                ..
            }
            | MemoOp::Offer {
                offer_arweave_id: id,
                ..
            }
            | MemoOp::Counter {
                counter_arweave_id: id,
                ..
            } => Some(id),
            MemoOp::Release {
                envelope_arweave_id: id,
                ..
            } => (!revealed.contains(&id)).then_some(id),
            _ => None,
        })
        .collect()
}

/// Whether a manifest `record`'s memos name is not in it (the gateway did
/// not serve it yet): such a record waits for the polls, which hold it
/// back for the gateway's grace instead of refusing its memo for good.
pub fn lacks_manifests(record: &TxRecord) -> bool {
    manifest_ids(&record.tx)
        .iter()
        .any(|id| !record.manifests.contains_key(id))
}

/// The meta key under which a transaction whose JSON did not decode is
/// recorded with its reason.
pub fn bad_key(signature: &str) -> String {
    format!("undecodable_tx:{signature}")
}

/// The buys the release envelopes of `records` name that neither the
/// state has folded nor `records` holds. An x402 payment references no
/// watched address (the client builds it), so the release that settles
/// it, which does, is how ingest finds it; a rebuild finds it the same way.
fn unfolded_named_buys(ix: &Indexer, records: &[TxRecord]) -> Vec<Signature> {
    let batch: BTreeSet<&str> = records.iter().map(|r| r.tx.signature.as_str()).collect();
    let mut named: Vec<String> = records
        .iter()
        .flat_map(|r| {
            r.tx.memos
                .iter()
                .filter_map(|m| match MemoOp::parse(m).ok()? {
                    MemoOp::Release {
                        envelope_arweave_id: id,
                        ..
                    } => r
                        .manifests
                        .get(&id)?
                        .get("buy_signature")?
                        .as_str()
                        .map(str::to_string),
                    _ => None,
                })
        })
        .filter(|sig| !batch.contains(sig.as_str()))
        .collect();
    named.sort();
    named.dedup();
    // a read that fails leaves them to be fetched: folding is idempotent
    let named = ix.unfolded(&named).unwrap_or(named);
    let mut named: Vec<Signature> = named
        .iter()
        .filter_map(|sig| Signature::from_str(sig).ok())
        .collect();
    named.sort();
    named.dedup();
    named
}

/// Whether `tx` is an x402 payment for a listing (its compact buy memo).
fn is_x402_buy(tx: &ParsedTx) -> bool {
    tx.memos
        .iter()
        .any(|m| node::memo::x402_buy_listing(m).is_some())
}

fn is_marketplace(tx: &ParsedTx) -> bool {
    !tx.calls.is_empty()
        || !tx.inner_calls.is_empty()
        || tx
            .memos
            .iter()
            .any(|m| m.starts_with(node::market::memo::PREFIX))
}

impl RpcSource {
    /// Reads `addresses` through `chain` (its commitment should be
    /// `confirmed`), manifests from `gateway`.
    pub fn new(
        chain: Chain,
        gateway: Source,
        addresses: Vec<Pubkey>,
        concurrency: usize,
        requests_per_second: u32,
    ) -> RpcSource {
        RpcSource {
            // the fold reads the escrow program's deposits and events
            chain: chain.watching(node::escrow::PROGRAM_ID),
            gateway,
            addresses,
            concurrency: concurrency.max(1),
            limit: RateLimit::new(requests_per_second),
            manifest_grace: DEFAULT_MANIFEST_GRACE,
            clock_read_ms: std::sync::atomic::AtomicI64::new(0),
            progress: FetchProgress::default(),
        }
    }

    /// How far this source's polls have fetched.
    pub fn progress(&self) -> &FetchProgress {
        &self.progress
    }

    /// Holds a transaction whose manifest the gateway does not serve yet
    /// for `grace` (gateways lag the chain by minutes) before folding it
    /// without (which refuses its memo for good).
    pub fn with_manifest_grace(mut self, grace: Duration) -> RpcSource {
        self.manifest_grace = grace;
        self
    }

    /// The chain handle.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The storage gateway manifests (and escrow blobs) are read from.
    pub fn gateway(&self) -> &Source {
        &self.gateway
    }

    /// The addresses whose history is polled.
    pub fn addresses(&self) -> &[Pubkey] {
        &self.addresses
    }

    /// The finalized slot.
    pub async fn finalized_slot(&self) -> Result<u64, IngestError> {
        self.finalized_slot_in(Lane::Queue).await
    }

    /// The finalized slot, asked in `lane`.
    pub async fn finalized_slot_in(&self, lane: Lane) -> Result<u64, IngestError> {
        self.limit.wait_in(lane).await;
        Ok(with_retry("getSlot", || {
            self.chain
                .rpc()
                .get_slot_with_commitment(CommitmentConfig::finalized())
        })
        .await?)
    }

    /// Index of each signature in the block at `slot`.
    async fn block_positions(
        &self,
        slot: u64,
        lane: Lane,
    ) -> Result<HashMap<String, u32>, IngestError> {
        self.limit.wait_in(lane).await;
        let params = json!([slot, {
            "encoding": "json",
            "transactionDetails": "signatures",
            "rewards": false,
            "commitment": "confirmed",
            "maxSupportedTransactionVersion": 0
        }]);
        let block: Value = with_retry("getBlock", || {
            self.chain.rpc().send(RpcRequest::GetBlock, params.clone())
        })
        .await?;
        Ok(block
            .get("signatures")
            .and_then(Value::as_array)
            .map(|sigs| {
                sigs.iter()
                    .enumerate()
                    .filter_map(|(i, s)| Some((s.as_str()?.to_string(), i as u32)))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// A manifest body: the store's cache, else the gateway's answer
    /// proven to be that ANS-104 item (`Source::fetch_item`: its id is
    /// the hash of its signature, which covers the data). Only a proven
    /// body is cached; `None` (asked again on a later poll, like one the
    /// gateway does not serve yet) when there is no such item, it is not
    /// JSON, or the gateway's answer is not that item (logged as a
    /// gateway fault: a lying or glitching gateway never binds a body to
    /// an id).
    async fn manifest(&self, ix: &Arc<Indexer>, id: &str) -> Result<Option<Value>, IngestError> {
        let key = id.to_string();
        if let Some(v) = blocking(ix, move |ix| Ok(ix.store().manifest(&key)?)).await? {
            return Ok(Some(v));
        }
        match self.gateway.fetch_item(id, MAX_MANIFEST_BYTES).await {
            Ok(item) => {
                let Ok(v) = serde_json::from_slice::<Value>(&item.data) else {
                    return Ok(None);
                };
                let (key, body) = (id.to_string(), v.clone());
                blocking(ix, move |ix| Ok(ix.store().put_manifest(&key, &body)?)).await?;
                Ok(Some(v))
            }
            Err(StorageError::NotFound(_) | StorageError::BadId(_) | StorageError::TooLarge(_)) => {
                Ok(None)
            }
            Err(
                e @ (StorageError::Item(_)
                | StorageError::IdMismatch { .. }
                | StorageError::NotTheItem { .. }
                | StorageError::HashMismatch { .. }),
            ) => {
                tracing::warn!(manifest = %id, error = %e, "gateway fault: its answer is not the item; not cached, asked again next poll");
                Ok(None)
            }
            Err(source) => Err(IngestError::Gateway {
                id: id.into(),
                source,
            }),
        }
    }

    /// Records for `signatures` (skipping ones the node lacks and ones
    /// with neither a marketplace memo nor an escrow program run), with
    /// block positions and manifests.
    pub async fn records(
        &self,
        ix: &Arc<Indexer>,
        signatures: &[Signature],
    ) -> Result<Vec<TxRecord>, IngestError> {
        use std::sync::atomic::Ordering::Relaxed;
        self.progress.wanted.fetch_add(signatures.len(), Relaxed);
        let fetched: Vec<(Signature, Result<Option<ParsedTx>, node::chain::ChainError>)> =
            stream::iter(signatures.iter().copied())
                .map(|sig| async move {
                    self.limit.wait().await;
                    let got = self.chain.transaction(&sig).await;
                    self.progress.fetched.fetch_add(1, Relaxed);
                    (sig, got)
                })
                .buffer_unordered(self.concurrency)
                .collect()
                .await;
        let mut txs = Vec::new();
        for (sig, got) in fetched {
            match got {
                Ok(Some(tx)) if is_marketplace(&tx) => txs.push(tx),
                Ok(_) => {}
                // JSON that is no transaction at all: stored with its
                // reason and never fetched again; the poll goes on
                Err(node::chain::ChainError::Shape(why)) => {
                    tracing::warn!(signature = %sig, error = %why, "transaction JSON does not decode; recorded and skipped");
                    let (key, why) = (bad_key(&sig.to_string()), why.to_string());
                    blocking(ix, move |ix| Ok(ix.store().set_meta(&key, &why)?)).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let mut records = self.assemble(ix, txs, Lane::Queue).await?;
        records.extend(self.named_buys(ix, &records).await?);
        Ok(records)
    }

    /// Records of the x402 buys `records`' releases name that the state
    /// lacks ([`unfolded_named_buys`]); a named transaction that is no
    /// x402 buy is left out (the release's fold judges what it names).
    async fn named_buys(
        &self,
        ix: &Arc<Indexer>,
        records: &[TxRecord],
    ) -> Result<Vec<TxRecord>, IngestError> {
        let named = unfolded_named_buys(ix, records);
        if named.is_empty() {
            return Ok(Vec::new());
        }
        let mut buys = Vec::new();
        for sig in named {
            self.limit.wait().await;
            match self.chain.transaction(&sig).await {
                Ok(Some(tx)) if is_x402_buy(&tx) => buys.push(tx),
                Ok(_) | Err(node::chain::ChainError::Shape(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.assemble(ix, buys, Lane::Queue).await
    }

    /// The record of a hinted `signature`, only if it references an
    /// address this source watches (what polling lists): a hint can never
    /// fold what a rebuild from the chain would not.
    pub async fn hinted_record(
        &self,
        ix: &Arc<Indexer>,
        signature: Signature,
    ) -> Result<Option<TxRecord>, IngestError> {
        self.record_in(ix, signature, Lane::Queue).await
    }

    /// [`RpcSource::hinted_record`] of a transaction the chain's push
    /// notifications named: its requests in the first lane.
    pub async fn notified_record(
        &self,
        ix: &Arc<Indexer>,
        signature: Signature,
    ) -> Result<Option<TxRecord>, IngestError> {
        self.record_in(ix, signature, Lane::First).await
    }

    async fn record_in(
        &self,
        ix: &Arc<Indexer>,
        signature: Signature,
        lane: Lane,
    ) -> Result<Option<TxRecord>, IngestError> {
        self.limit.wait_in(lane).await;
        let Some((tx, accounts)) = self.chain.transaction_with_accounts(&signature).await? else {
            return Ok(None);
        };
        let watched = self
            .addresses
            .iter()
            .any(|a| accounts.iter().any(|k| *k == a.to_string()));
        if !watched {
            return Err(IngestError::Unwatched(signature.to_string()));
        }
        if !is_marketplace(&tx) {
            return Ok(None);
        }
        let records = self.assemble(ix, vec![tx], lane).await?;
        // a release of a buy not folded yet (an x402 payment, which no
        // watched address lists): the polls fold the two together
        if !unfolded_named_buys(ix, &records).is_empty() {
            return Err(IngestError::NamedBuyPending(signature.to_string()));
        }
        Ok(records.into_iter().next())
    }

    /// Records of `txs`: their positions in their blocks and the
    /// manifests their memos name.
    async fn assemble(
        &self,
        ix: &Arc<Indexer>,
        txs: Vec<ParsedTx>,
        lane: Lane,
    ) -> Result<Vec<TxRecord>, IngestError> {
        let slots: BTreeSet<u64> = txs.iter().map(|t| t.slot).collect();
        let positions: HashMap<u64, HashMap<String, u32>> = stream::iter(slots)
            .map(|slot| async move {
                Ok::<_, IngestError>((slot, self.block_positions(slot, lane).await?))
            })
            .buffer_unordered(self.concurrency)
            .try_collect()
            .await?;
        let mut out = Vec::with_capacity(txs.len());
        for tx in txs {
            let index = positions
                .get(&tx.slot)
                .and_then(|p| p.get(&tx.signature))
                .copied()
                .unwrap_or(u32::MAX);
            let mut manifests = BTreeMap::new();
            for id in manifest_ids(&tx) {
                if let Some(body) = self.manifest(ix, &id).await? {
                    manifests.insert(id, Arc::new(body));
                }
            }
            out.push(TxRecord {
                tx,
                index,
                manifests,
            });
        }
        Ok(out)
    }

    /// Moves out of `records` those naming a manifest the gateway does not
    /// serve yet, first seen less than the grace ago, into `held`; forgets
    /// held signatures that were fetched (folded now) or are past the grace
    /// and gone from the node.
    fn hold_back(&self, records: &mut Vec<TxRecord>, held: &mut BTreeMap<String, i64>) {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let grace = self.manifest_grace.as_secs() as i64;
        records.retain(|r| {
            let missing = manifest_ids(&r.tx)
                .iter()
                .any(|id| !r.manifests.contains_key(id));
            let first = held.get(&r.tx.signature).copied();
            let keep_waiting = missing
                && now - first.unwrap_or(now) < grace
                && (first.is_some() || held.len() < MAX_HELD);
            if keep_waiting {
                held.entry(r.tx.signature.clone()).or_insert(now);
                tracing::info!(signature = %r.tx.signature, "manifest not served by the gateway yet; holding the transaction back");
            } else {
                held.remove(&r.tx.signature);
            }
            !keep_waiting
        });
        held.retain(|_, t| now - *t < grace);
    }

    /// Which of `signatures` the node no longer knows at `confirmed`
    /// (dropped with a fork before finality).
    pub async fn vanished(&self, signatures: &[String]) -> Result<Vec<String>, IngestError> {
        let mut gone = Vec::new();
        for chunk in signatures.chunks(256) {
            let sigs: Vec<Signature> = chunk
                .iter()
                .filter_map(|s| Signature::from_str(s).ok())
                .collect();
            self.limit.wait().await;
            let statuses = with_retry("getSignatureStatuses", || {
                self.chain.rpc().get_signature_statuses(&sigs)
            })
            .await?
            .value;
            for (sig, status) in sigs.iter().zip(statuses) {
                if status.is_none() {
                    gone.push(sig.to_string());
                }
            }
        }
        Ok(gone)
    }

    /// One poll: list each address's history past its checkpoint, fetch
    /// what is new, finalize, drop what vanished, move checkpoints.
    /// Store and fold work runs on the blocking pool, never on the async
    /// workers that serve requests.
    pub async fn poll(&self, ix: &Arc<Indexer>) -> Result<PollReport, IngestError> {
        let final_slot = self.finalized_slot().await?;
        // the chain's clock, for views on a quiet market, read at most
        // every CLOCK_EVERY (views advance it by the wall clock between);
        // a node without a block time for its newest slot is no reason to
        // stop polling
        let now_ms = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis(),
        )
        .unwrap_or(i64::MAX);
        let last = self
            .clock_read_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        if now_ms - last >= CLOCK_EVERY.as_millis() as i64 {
            self.clock_read_ms
                .store(now_ms, std::sync::atomic::Ordering::Relaxed);
            self.limit.wait().await;
            match self.chain.cluster_time().await {
                Ok(t) => ix.observe_chain_time(t),
                Err(e) => tracing::debug!(error = %e, "no cluster time this poll"),
            }
        }
        let mut listed: BTreeMap<String, u64> = BTreeMap::new();
        let mut new_checkpoints = Vec::new();
        for address in &self.addresses {
            let key = address.to_string();
            let at = key.clone();
            let until = blocking(ix, move |ix| Ok(ix.store().checkpoint(&at)?))
                .await?
                .and_then(|(s, _)| Signature::from_str(&s).ok());
            // a history past the checkpoint longer than a page is synced
            // a page a poll, oldest first (cold_sync)
            let history = match self
                .first_page(ix, address, until.as_ref(), final_slot)
                .await?
            {
                cold_sync::FirstPage::Short(history) => history,
                cold_sync::FirstPage::Backlog(backlog) => {
                    return self
                        .sync_step(ix, address, backlog, until, final_slot)
                        .await
                }
            };
            if let Some(newest_final) = history.iter().find(|h| h.slot <= final_slot) {
                new_checkpoints.push((key, newest_final.signature.clone(), newest_final.slot));
            }
            for h in history {
                listed.insert(h.signature, h.slot);
            }
        }
        let (wanted, unlisted, listed, mut held) = blocking(ix, move |ix| {
            let store = ix.store();
            let held = held_in(&**store)?;
            let mut wanted = Vec::new();
            for sig in listed.keys().chain(held.keys()) {
                if !store.has(sig)? && store.meta(&bad_key(sig))?.is_none() {
                    if let Ok(s) = Signature::from_str(sig) {
                        wanted.push(s);
                    }
                }
            }
            wanted.sort();
            wanted.dedup();
            let unlisted: Vec<String> = store
                .provisional()?
                .into_iter()
                .filter(|(sig, _)| !listed.contains_key(sig))
                .map(|(sig, _)| sig)
                .collect();
            Ok((wanted, unlisted, listed, held))
        })
        .await?;
        let mut records = self.records(ix, &wanted).await?;
        let held_before = held.clone();
        self.hold_back(&mut records, &mut held);
        let vanished = self.vanished(&unlisted).await?;
        let fetched = records.len();
        let applied = blocking(ix, move |ix| {
            let applied = ix.ingest(records, final_slot, &vanished)?;
            let mut store = ix.store();
            if held != held_before {
                store.set_meta(
                    HELD_KEY,
                    &serde_json::to_string(&held).expect("map serializes"),
                )?;
            }
            for (address, sig, slot) in new_checkpoints {
                store.set_checkpoint(&address, &sig, slot)?;
            }
            Ok(applied)
        })
        .await?;
        Ok(PollReport {
            listed: listed.len(),
            fetched,
            final_slot,
            applied,
            backlog_pages: 0,
        })
    }
}

/// The transactions held back for their manifests, and since when.
fn held_in(store: &dyn crate::store::LogStore) -> Result<BTreeMap<String, i64>, IngestError> {
    Ok(store
        .meta(HELD_KEY)?
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default())
}

impl RpcSource {
    /// [`held_in`] this source's database.
    async fn held(&self, ix: &Arc<Indexer>) -> Result<BTreeMap<String, i64>, IngestError> {
        blocking(ix, |ix| held_in(&**ix.store())).await
    }
}

/// Where hinted transactions are read from: the chain in production
/// ([`RpcSource`]); the load test serves synthetic records from memory.
pub trait HintSource: Send + Sync {
    /// The record of `signature` (`None`: unknown, or no marketplace
    /// transaction), with its manifests as the gateway serves them.
    fn record<'a>(
        &'a self,
        ix: &'a Arc<Indexer>,
        signature: Signature,
    ) -> BoxFuture<'a, Result<Option<TxRecord>, IngestError>>;
    /// The finalized slot.
    fn final_slot(&self) -> BoxFuture<'_, Result<u64, IngestError>>;
}

impl HintSource for RpcSource {
    fn record<'a>(
        &'a self,
        ix: &'a Arc<Indexer>,
        signature: Signature,
    ) -> BoxFuture<'a, Result<Option<TxRecord>, IngestError>> {
        Box::pin(self.hinted_record(ix, signature))
    }

    fn final_slot(&self) -> BoxFuture<'_, Result<u64, IngestError>> {
        Box::pin(self.finalized_slot())
    }
}

/// Runs store and fold work on the blocking pool.
async fn blocking<T: Send + 'static>(
    ix: &Arc<Indexer>,
    f: impl FnOnce(&Indexer) -> Result<T, IngestError> + Send + 'static,
) -> Result<T, IngestError> {
    let ix = ix.clone();
    tokio::task::spawn_blocking(move || f(&ix))
        .await
        .map_err(|e| IngestError::Task(e.to_string()))?
}

#[cfg(test)]
mod rate_limit_tests {
    use super::{Lane, RateLimit};
    use std::time::{Duration, Instant};

    /// A first-lane request is not queued behind the queue's backlog.
    #[tokio::test]
    async fn the_first_lane_passes_a_queued_backlog() {
        // 50 ms apart
        let limit = std::sync::Arc::new(RateLimit::new(20));
        // a poll's backlog: 10 queued requests (~450 ms of budget)
        let backlog = {
            let limit = limit.clone();
            tokio::spawn(async move {
                for _ in 0..10 {
                    limit.wait().await;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(60)).await;
        let started = Instant::now();
        for _ in 0..3 {
            limit.wait_in(Lane::First).await;
        }
        let first = started.elapsed();
        assert!(
            first < Duration::from_millis(40),
            "first lane waited {first:?}"
        );
        backlog.await.unwrap();
        // the queue lane stays spaced at its rate
        let started = Instant::now();
        for _ in 0..4 {
            limit.wait().await;
        }
        assert!(
            started.elapsed() >= Duration::from_millis(140),
            "{:?}",
            started.elapsed()
        );
    }

    /// No limit: no waiting in either lane.
    #[tokio::test]
    async fn zero_is_unlimited() {
        let limit = RateLimit::new(0);
        let started = Instant::now();
        for _ in 0..100 {
            limit.wait().await;
            limit.wait_in(Lane::First).await;
        }
        assert!(started.elapsed() < Duration::from_millis(50));
    }
}
