//! The flood test (`brainctl-indexer-bench flood`): honest clients browse
//! and read listings while attackers hint old transactions (each older
//! than everything folded, so each would once have cost a whole refold)
//! and flood `/auth/challenge`. Reports the honest clients' latency
//! without the flood and during it, and what the attackers got.
//!
//! Bounded in count (requests per honest client, attacks per attacker)
//! and time (attackers stop when the honest clients are done, or at the
//! deadline). Everything runs on 127.0.0.1 in this process: the server
//! with the limits `run` uses, a synthetic log, and the hinted records
//! served from memory in place of the chain.

use super::{get_json, listings_log, percentile, LoadError, LocalServer};
use crate::api::{self, AppState};
use crate::auth;
use crate::engine::Indexer;
use crate::fold::FoldConfig;
use crate::ingest::{HintSource, IngestError};
use crate::record::TxRecord;
use crate::store::SqliteStore;
use futures_util::future::BoxFuture;
use node::chain::Signature;
use node::market::MemoOp;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Latency of the honest requests in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// Honest requests completed (all 200).
    pub requests: usize,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// Result of a flood run.
#[derive(Debug, Clone, Serialize)]
pub struct FloodReport {
    /// Listings indexed.
    pub listings: usize,
    /// Honest clients (browse + detail).
    pub honest_clients: usize,
    /// Attacking clients (half hint old transactions, half flood challenges).
    pub attackers: usize,
    /// Honest latency with no attack.
    pub quiet: Phase,
    /// Honest latency during the attack.
    pub flood: Phase,
    /// Hints sent, by status code.
    pub hints: HashMap<u16, u64>,
    /// Challenge requests sent, by status code.
    pub challenges: HashMap<u16, u64>,
    /// Whole-log refolds the hints caused.
    pub refolds: u64,
    /// Old transactions hinted that ended in the state.
    pub late_folded: usize,
}

/// Serves withheld records as if from the chain.
struct MemorySource {
    by_signature: HashMap<String, TxRecord>,
    final_slot: u64,
}

impl HintSource for MemorySource {
    fn record<'a>(
        &'a self,
        _ix: &'a Arc<Indexer>,
        signature: Signature,
    ) -> BoxFuture<'a, Result<Option<TxRecord>, IngestError>> {
        let r = self.by_signature.get(&signature.to_string()).cloned();
        Box::pin(async move { Ok(r) })
    }

    fn final_slot(&self) -> BoxFuture<'_, Result<u64, IngestError>> {
        let s = self.final_slot;
        Box::pin(async move { Ok(s) })
    }
}

/// One hint an attacker replays: the `POST /listings` body.
struct Hint {
    session: String,
    body: Value,
}

/// Every `every`-th listing record is withheld from the initial ingest
/// (so it is older than what is folded) and hinted by its seller.
fn withheld_hints(ix: &Indexer, late: &[TxRecord]) -> Result<Vec<Hint>, LoadError> {
    let mut sessions: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for r in late {
        let seller = r.tx.signers[0].clone();
        let session = match sessions.get(&seller) {
            Some(s) => s.clone(),
            None => {
                let s = sign_in(ix, &seller)?;
                sessions.insert(seller.clone(), s.clone());
                s
            }
        };
        let Some(Ok(MemoOp::List {
            listing_arweave_id, ..
        })) = r.tx.memos.first().map(|m| MemoOp::parse(m))
        else {
            continue;
        };
        let manifest = r.manifests[&listing_arweave_id].clone();
        out.push(Hint {
            session,
            body: json!({
                "manifest": manifest,
                "listing_arweave_id": listing_arweave_id,
                "list_tx_signature": r.tx.signature,
            }),
        });
    }
    Ok(out)
}

/// A session for the synthetic seller `address` (made in-process: the
/// sign-in endpoints are what the challenge flood hits).
fn sign_in(ix: &Indexer, address: &str) -> Result<String, LoadError> {
    let wallet = (0..50)
        .map(|n| crate::synth::wallet(1, n))
        .find(|w| w.address() == address)
        .ok_or_else(|| LoadError::Request(format!("no synthetic wallet {address}")))?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let bad = |e: auth::AuthError| LoadError::Request(e.to_string());
    let c = auth::challenge(&mut **ix.store(), address, "bench", now).map_err(bad)?;
    let sig = bs58::encode(wallet.sign(c.message_to_sign.as_bytes())).into_string();
    let issued = auth::verify(&mut **ix.store(), address, &c.nonce, &sig, now).map_err(bad)?;
    Ok(issued.session_token)
}

/// Honest clients: each alternates a page of `/listings` (walking the
/// cursor) and one listing's detail, `per_client` requests in all.
async fn honest(
    http: &reqwest::Client,
    base: &str,
    clients: usize,
    per_client: usize,
    ids: Arc<Vec<String>>,
) -> Result<Phase, LoadError> {
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (http, base, ids) = (http.clone(), base.to_string(), ids.clone());
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(per_client);
                let mut cursor: Option<String> = None;
                for i in 0..per_client {
                    let url = match (i % 2, &cursor) {
                        (0, Some(after)) => format!("{base}/listings?limit=20&cursor={after}"),
                        (0, None) => format!("{base}/listings?limit=20"),
                        _ => format!("{base}/listings/{}", ids[(c * 31 + i) % ids.len()]),
                    };
                    let (body, took): (Value, _) = get_json(&http, &url).await?;
                    times.push(took);
                    if i % 2 == 0 {
                        cursor = body["next_cursor"].as_str().map(str::to_string);
                    }
                }
                Ok::<_, LoadError>(times)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(clients * per_client);
    for t in tasks {
        all.extend(t.await.map_err(|e| LoadError::Request(e.to_string()))??);
    }
    all.sort();
    Ok(Phase {
        requests: all.len(),
        p50_ms: percentile(&all, 0.50),
        p99_ms: percentile(&all, 0.99),
        max_ms: all.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
    })
}

/// Counts of status codes, shared by attackers.
#[derive(Default)]
struct Codes(std::sync::Mutex<HashMap<u16, u64>>);

impl Codes {
    fn add(&self, code: u16) {
        *self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(code)
            .or_default() += 1;
    }
    fn take(&self) -> HashMap<u16, u64> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Runs the flood test: `listings` listings (plus 1 in 50 withheld and
/// hinted late), `honest_clients` honest clients of `per_client`
/// requests, first alone then beside `attackers` attackers (each at most
/// `per_attacker` requests, all stopped at `deadline`), behind `limits`.
pub async fn flood(
    listings: usize,
    honest_clients: usize,
    attackers: usize,
    per_client: usize,
    per_attacker: usize,
    deadline: Duration,
    limits: api::RateLimits,
) -> Result<FloodReport, LoadError> {
    let records = listings_log(listings);
    let (mut late, mut early) = (Vec::new(), Vec::new());
    for (i, r) in records.iter().enumerate() {
        match i % 50 == 7 {
            true => late.push(r.clone()),
            false => early.push(r.clone()),
        }
    }
    let store = SqliteStore::in_memory().map_err(|e| LoadError::Request(e.to_string()))?;
    let ix = Arc::new(
        Indexer::open(Box::new(store), FoldConfig::default())
            .map_err(|e| LoadError::Request(e.to_string()))?,
    );
    let final_slot = records.last().map_or(0, |r| r.tx.slot);
    ix.ingest(early, final_slot, &[])
        .map_err(|e| LoadError::Request(e.to_string()))?;
    let hints = Arc::new(withheld_hints(&ix, &late)?);
    let ids: Arc<Vec<String>> = Arc::new(ix.state().listings.keys().cloned().collect());
    let state = AppState {
        hints: Some(Arc::new(MemorySource {
            by_signature: late
                .iter()
                .map(|r| (r.tx.signature.clone(), r.clone()))
                .collect(),
            final_slot,
        })),
        limiter: api::Limiter::new(limits),
        ..AppState::new(ix.clone(), "localnet")
    };
    let server = LocalServer::start(state, honest_clients + attackers).await?;
    let (http, base) = (server.http.clone(), server.base.clone());

    let quiet = honest(&http, &base, honest_clients, per_client, ids.clone()).await?;

    let refolds_before = ix.refolds();
    let stop = Arc::new(AtomicBool::new(false));
    let (hint_codes, challenge_codes) = (Arc::new(Codes::default()), Arc::new(Codes::default()));
    let attack: Vec<_> = (0..attackers)
        .map(|a| {
            let (http, base, stop) = (http.clone(), base.clone(), stop.clone());
            let (hints, hint_codes, challenge_codes) =
                (hints.clone(), hint_codes.clone(), challenge_codes.clone());
            tokio::spawn(async move {
                for i in 0..per_attacker {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let res = if a % 2 == 0 && !hints.is_empty() {
                        let h = &hints[(a / 2 * 7 + i) % hints.len()];
                        http.post(format!("{base}/listings"))
                            .bearer_auth(&h.session)
                            .json(&h.body)
                            .send()
                            .await
                            .map(|r| (true, r.status().as_u16()))
                    } else {
                        let who = crate::synth::wallet(9, (a * per_attacker + i) as u64);
                        http.post(format!("{base}/auth/challenge"))
                            .json(&json!({"pubkey": who.address()}))
                            .send()
                            .await
                            .map(|r| (false, r.status().as_u16()))
                    };
                    match res {
                        Ok((true, code)) => hint_codes.add(code),
                        Ok((false, code)) => challenge_codes.add(code),
                        Err(_) => challenge_codes.add(0),
                    }
                }
            })
        })
        .collect();
    let flood = tokio::time::timeout(
        deadline,
        honest(&http, &base, honest_clients, per_client, ids),
    )
    .await
    .map_err(|_| LoadError::Request(format!("honest clients not done within {deadline:?}")))??;
    stop.store(true, Ordering::Relaxed);
    for a in attack {
        let _ = a.await;
    }
    server.stop().await;
    let s = ix.state();
    Ok(FloodReport {
        listings,
        honest_clients,
        attackers,
        quiet,
        flood,
        hints: hint_codes.take(),
        challenges: challenge_codes.take(),
        refolds: ix.refolds() - refolds_before,
        late_folded: late.iter().filter(|r| s.has_folded(r.signature())).count(),
    })
}
