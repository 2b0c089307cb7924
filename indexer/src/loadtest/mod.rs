//! The indexer's benchmarks (`brainctl-indexer-bench ...`, a development binary): replay speed
//! of a synthetic log, and a bounded local load test of the HTTP API
//! (many concurrent clients against 127.0.0.1, latency percentiles).
//!
//! Owns measuring only; it builds its own in-memory indexer and never
//! touches a chain or an operator's database.

pub mod explorer;
pub mod flood;
pub mod scale;
pub mod tables;

use crate::api::AppState;
use crate::engine::Indexer;
use crate::fold::FoldConfig;
use crate::http;
use crate::record::TxRecord;
use crate::store::SqliteStore;
use crate::synth::{wallet, LogBuilder};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Result of a replay run.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// Records folded.
    pub records: usize,
    /// Memos among them.
    pub memos: usize,
    /// Manifest checks (parse + signature), on all cores.
    pub verify_seconds: f64,
    /// The sequential fold.
    pub fold_seconds: f64,
    /// Verify + fold.
    pub seconds: f64,
    /// Memos per second of verify + fold.
    pub memos_per_second: f64,
    /// The same records through the engine (SQLite log in memory, batches
    /// of `batch`): memos per second.
    pub ingest_memos_per_second: f64,
    /// The resulting state hash (equal on both paths, or this panics).
    pub state_hash: String,
}

impl ReplayReport {
    /// The report for a person: the hash, then the speeds.
    pub fn summary(&self) -> String {
        format!(
            "{}\n{} records, {} memos: verify {:.3} s + fold {:.3} s = {:.0} memos/s; \
             through the engine (SQLite log) {:.0} memos/s",
            self.state_hash,
            self.records,
            self.memos,
            self.verify_seconds,
            self.fold_seconds,
            self.memos_per_second,
            self.ingest_memos_per_second
        )
    }
}

/// Replays `records`: verify every manifest and fold (the replay path),
/// then the same through the engine in batches of `batch` (the ingest path).
pub fn replay(records: &[TxRecord], batch: usize, cfg: FoldConfig) -> ReplayReport {
    let memos: usize = records.iter().map(|r| r.tx.memos.len()).sum();
    let started = Instant::now();
    let mut book = crate::book::ManifestBook::new();
    book.add_records(records);
    let verified = Instant::now();
    let state = crate::fold::State::fold(records, &book, &cfg);
    let folded = Instant::now();
    let seconds = (folded - started).as_secs_f64();
    let state_hash = state.hash();

    let ix = Indexer::open(
        Box::new(SqliteStore::in_memory().expect("in-memory SQLite")),
        cfg,
    )
    .expect("empty log folds");
    let final_slot = records.iter().map(|r| r.tx.slot).max().unwrap_or(0);
    let ingest_started = Instant::now();
    for chunk in records.chunks(batch.max(1)) {
        ix.ingest(chunk.to_vec(), final_slot, &[])
            .expect("in-memory ingest");
    }
    let ingest_seconds = ingest_started.elapsed().as_secs_f64();
    assert_eq!(ix.state().hash(), state_hash, "ingest and replay agree");
    ReplayReport {
        records: records.len(),
        memos,
        verify_seconds: (verified - started).as_secs_f64(),
        fold_seconds: (folded - verified).as_secs_f64(),
        seconds,
        memos_per_second: memos as f64 / seconds.max(1e-9),
        ingest_memos_per_second: memos as f64 / ingest_seconds.max(1e-9),
        state_hash,
    }
}

/// Result of an API load run.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// Listings indexed.
    pub listings: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// Requests completed (all 200).
    pub requests: usize,
    /// Median latency.
    pub p50_ms: f64,
    /// 99th percentile latency.
    pub p99_ms: f64,
    /// Slowest request.
    pub max_ms: f64,
    /// Requests per second over the run.
    pub requests_per_second: f64,
}

/// Load-test failures.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Could not bind or serve.
    #[error("load test server: {0}")]
    Io(#[from] std::io::Error),
    /// A request failed or answered wrongly.
    #[error("load test request: {0}")]
    Request(String),
}

/// A synthetic log of `n` live listings among 50 sellers.
pub fn listings_log(n: usize) -> Vec<TxRecord> {
    let mut b = LogBuilder::new();
    for i in 0..n as u64 {
        b.list(&wallet(1, i % 50), i, "auction");
    }
    b.finish()
}

/// What the load test reads of a page (the rest is skipped, not built).
#[derive(serde::Deserialize)]
struct Page {
    count: usize,
    next_cursor: Option<String>,
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

/// `state` served on a free 127.0.0.1 port in this process, with a
/// client pooling `clients` connections.
pub(crate) struct LocalServer {
    pub(crate) base: String,
    pub(crate) http: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl LocalServer {
    pub(crate) async fn start(state: AppState, clients: usize) -> Result<LocalServer, LoadError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(http::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .map_err(|e| LoadError::Request(e.to_string()))?;
        Ok(LocalServer {
            base,
            http,
            stop,
            task,
        })
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// An in-memory indexer that has ingested `records` (all final).
fn indexer_of(records: Vec<TxRecord>) -> Result<Indexer, LoadError> {
    let err = |e: &dyn std::fmt::Display| LoadError::Request(e.to_string());
    let store = SqliteStore::in_memory().map_err(|e| err(&e))?;
    let ix = Indexer::open(Box::new(store), FoldConfig::default()).map_err(|e| err(&e))?;
    let final_slot = records.last().map_or(0, |r| r.tx.slot);
    ix.ingest(records, final_slot, &[]).map_err(|e| err(&e))?;
    Ok(ix)
}

/// GET `url`, which must answer 2xx with JSON: the body and how long it took.
async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<(T, Duration), LoadError> {
    let t = Instant::now();
    let res = http
        .get(url)
        .send()
        .await
        .map_err(|e| LoadError::Request(e.to_string()))?;
    if !res.status().is_success() {
        return Err(LoadError::Request(format!("{url}: {}", res.status())));
    }
    let body = res
        .json()
        .await
        .map_err(|e| LoadError::Request(e.to_string()))?;
    Ok((body, t.elapsed()))
}

/// Serves an indexer of `listings` listings on 127.0.0.1 and has
/// `clients` concurrent clients each GET `/listings` (walking pages with
/// the cursor) `per_client` times.
pub async fn api_load(
    listings: usize,
    clients: usize,
    per_client: usize,
) -> Result<LoadReport, LoadError> {
    let ix = indexer_of(listings_log(listings))?;
    let server = LocalServer::start(AppState::new(Arc::new(ix), "localnet"), clients).await?;
    let (http, base) = (server.http.clone(), server.base.clone());
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(per_client);
                let mut cursor: Option<String> = None;
                for i in 0..per_client {
                    let url = match (&cursor, (c + i) % 4) {
                        (Some(after), 0) => format!("{base}/listings?limit=50&cursor={after}"),
                        _ => format!("{base}/listings?limit=50"),
                    };
                    let (page, took): (Page, _) = get_json(&http, &url).await?;
                    times.push(took);
                    if page.count != 50 {
                        return Err(LoadError::Request(format!("{url}: short page")));
                    }
                    cursor = page.next_cursor;
                }
                Ok::<_, LoadError>(times)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(clients * per_client);
    for t in tasks {
        all.extend(t.await.map_err(|e| LoadError::Request(e.to_string()))??);
    }
    let wall = started.elapsed().as_secs_f64();
    server.stop().await;
    all.sort();
    Ok(LoadReport {
        listings,
        clients,
        requests: all.len(),
        p50_ms: percentile(&all, 0.50),
        p99_ms: percentile(&all, 0.99),
        max_ms: all.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        requests_per_second: all.len() as f64 / wall.max(1e-9),
    })
}
