//! The indexer as a long-lived service, in the library (as mini-redis
//! keeps its server loop): the writer ([`run`]: fold each transaction
//! the chain's push notifications name as it comes, poll whenever a
//! subscription becomes live and every interval as the safety net, and
//! serve the API) until its shutdown future completes. API servers that
//! fold nothing (`serve`) run [`crate::http::serve`] over tables the
//! writer keeps. The binary only parses flags, binds and wires the
//! signals; tests run these very loops in-process on 127.0.0.1:0.

use crate::api::{self, AppState};
use crate::engine::Indexer;
use crate::http;
use crate::ingest::RpcSource;
use crate::statedb::read::Scope;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// Shortest poll interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// Polls `source` into `state.ix` every `interval` and, with `wake_ups`,
/// folds each transaction the chain notifies as mentioning a watched
/// address as it comes (a failed poll is counted and retried, never
/// fatal) and serves the API on
/// `listener`, until `shutdown` completes; then stops polling, lets the
/// server finish its requests, and returns.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    source: Arc<RpcSource>,
    (interval, wake_ups): (Duration, bool),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (ix, metrics) = (state.ix.clone(), state.metrics.clone());
    let server = {
        let mut rx = stop_rx.clone();
        tokio::spawn(http::serve(listener, state, async move {
            let _ = rx.changed().await;
        }))
    };
    // the chain's push notifications: each notified transaction is
    // fetched and folded directly, beside the polls (never queued behind
    // one); a subscription becoming live, or a transaction not readable
    // yet, wakes a poll; polling every interval stays the safety net (a
    // notification dropped costs at most one interval: each poll reads
    // every watched address's whole history since its checkpoint)
    let (nudge_tx, nudges) = tokio::sync::mpsc::channel::<Wake>(256);
    let poll_now = Arc::new(tokio::sync::Notify::new());
    let waker = tokio::spawn(wake_on_chain(
        source.chain().endpoint().ws_url.clone(),
        wake_ups.then(|| source.addresses().to_vec()),
        nudge_tx,
    ));
    let direct = tokio::spawn(fold_as_notified(
        source.clone(),
        ix.clone(),
        nudges,
        poll_now.clone(),
    ));
    let poller = {
        let mut rx = stop_rx;
        let interval = interval.max(MIN_INTERVAL);
        tokio::spawn(async move {
            // the safety net ticks at its own pace, whatever wakes between
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {
                        if poll_once(&source, &ix, &metrics).await.backlog_pages > 0 {
                            // a cold sync: its next page at once
                            poll_now.notify_one();
                        }
                    }
                    _ = poll_now.notified() => {
                        let r = poll_once(&source, &ix, &metrics).await;
                        if r.backlog_pages > 0 {
                            poll_now.notify_one();
                        }
                        tracing::debug!(fetched = r.fetched, "woken by the chain");
                    }
                    _ = rx.changed() => break,
                }
            }
        })
    };
    shutdown.await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    waker.abort();
    direct.abort();
    let _ = poller.await;
    server
        .await
        .map_err(|e| std::io::Error::other(format!("server task: {e}")))?
}

/// Attempts to read a notified transaction before it is left to a poll
/// (the history can lag the notification by a moment).
const DIRECT_ATTEMPTS: usize = 8;
/// The pause between those attempts.
const DIRECT_PAUSE: Duration = Duration::from_millis(40);

/// Folds each notified transaction directly ([`fold_notified`]), a few
/// attempts apart while it is not readable yet, then wakes a poll for
/// what is left; a subscription becoming live wakes a poll at once (the
/// gap before it). Runs until the waker's channel closes.
async fn fold_as_notified(
    source: Arc<RpcSource>,
    ix: Arc<Indexer>,
    mut nudges: tokio::sync::mpsc::Receiver<Wake>,
    poll_now: Arc<tokio::sync::Notify>,
) {
    while let Some(first) = nudges.recv().await {
        let mut waiting = vec![];
        for wake in std::iter::once(first).chain(std::iter::from_fn(|| nudges.try_recv().ok())) {
            match wake {
                Wake::Tx(sig) => {
                    tracing::debug!(%sig, "notified");
                    waiting.push(sig)
                }
                Wake::Subscribed => {
                    tracing::info!("chain notifications live; reading the gap before them");
                    poll_now.notify_one();
                }
            }
        }
        for attempt in 0..DIRECT_ATTEMPTS {
            if waiting.is_empty() {
                break;
            }
            if attempt > 0 {
                tokio::time::sleep(DIRECT_PAUSE).await;
            }
            fold_notified(&source, &ix, &waiting).await;
            if let Ok(left) = unfolded(&ix, waiting.clone()).await {
                waiting = left;
            }
        }
        if !waiting.is_empty() {
            tracing::debug!(left = waiting.len(), "notified transactions left to a poll");
            poll_now.notify_one();
        }
    }
}

/// Longest pause before a lost subscription is made again.
const MAX_RESUBSCRIBE_PAUSE: Duration = Duration::from_secs(30);

/// What wakes the poller.
enum Wake {
    /// A notified transaction.
    Tx(String),
    /// The subscription is live (again): read the gap before it.
    Subscribed,
}

/// Keeps a `logsSubscribe` on the watched addresses (confirmed), nudging
/// the poller on each notification and each time the subscription is
/// live (a poll then reads whatever landed while it was not: the gap a
/// dropped subscription leaves), and subscribes again (pausing 1 s
/// doubling to 30 s) whenever the websocket ends or fails.
async fn wake_on_chain(
    ws_url: String,
    addresses: Option<Vec<node::chain::Pubkey>>,
    nudge: tokio::sync::mpsc::Sender<Wake>,
) {
    // off: hold the sender (the poller's select stays armed) and wait
    let Some(addresses) = addresses else {
        return std::future::pending().await;
    };
    let mut pause = Duration::from_secs(1);
    loop {
        let since = Instant::now();
        // confirmed: the polls it wakes read the history at `confirmed`
        let ended = node::listen::wake::notify_on_logs(
            &ws_url,
            &addresses,
            solana_commitment_config::CommitmentConfig::confirmed(),
            || {
                let _ = nudge.try_send(Wake::Subscribed);
            },
            |sig| !(nudge.try_send(Wake::Tx(sig)).is_err() && nudge.is_closed()),
        )
        .await;
        if nudge.is_closed() {
            return;
        }
        match ended {
            Ok(()) => {
                tracing::warn!("chain notifications ended; subscribing again (polling meanwhile)")
            }
            Err(e) => {
                tracing::warn!(error = %e, "no chain notifications; polling only until they come back")
            }
        }
        // a subscription that lived a while starts the pause over
        if since.elapsed() > MAX_RESUBSCRIBE_PAUSE {
            pause = Duration::from_secs(1);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_RESUBSCRIBE_PAUSE);
    }
}

/// Most notified transactions folded directly per wake-up (the rest wait
/// for the polls).
const DIRECT_FOLDS: usize = 16;

/// Which of `signatures` are not folded yet, read on the blocking pool.
async fn unfolded(ix: &Arc<Indexer>, signatures: Vec<String>) -> Result<Vec<String>, ()> {
    let ix = ix.clone();
    match tokio::task::spawn_blocking(move || ix.unfolded(&signatures)).await {
        Ok(Ok(left)) => Ok(left),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not read which transactions are folded");
            Err(())
        }
        Err(_) => Err(()),
    }
}

/// Fetches and folds each of `signatures` the state has not folded yet,
/// the way a hinted transaction is (`Indexer::ingest_hinted`): the record
/// read at `confirmed` with its block position and manifests, its
/// requests in the RPC budget's first lane ([`crate::ingest::Lane`]:
/// never behind a poll's backlog). A transaction not visible yet, or one
/// that fails to fetch, is left to the polls: nothing is lost, the
/// history is the record.
async fn fold_notified(source: &RpcSource, ix: &Arc<Indexer>, signatures: &[String]) {
    let Ok(left) = unfolded(ix, signatures.to_vec()).await else {
        return;
    };
    let todo: Vec<node::chain::Signature> = left
        .iter()
        .filter_map(|sig| sig.parse().ok())
        .take(DIRECT_FOLDS)
        .collect();
    if todo.is_empty() {
        return;
    }
    let Ok(final_slot) = source.finalized_slot_in(crate::ingest::Lane::First).await else {
        return;
    };
    for sig in todo {
        let started = Instant::now();
        match source.notified_record(ix, sig).await {
            Ok(Some(record)) if !crate::ingest::lacks_manifests(&record) => {
                let fetched_ms = started.elapsed().as_millis() as u64;
                let ix = ix.clone();
                let folded =
                    tokio::task::spawn_blocking(move || ix.ingest_hinted(record, final_slot)).await;
                match folded {
                    Ok(Err(e)) => {
                        tracing::debug!(error = %e, %sig, "a notified transaction did not fold; the polls will")
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, %sig, "the fold task of a notified transaction failed; the polls will")
                    }
                    Ok(Ok(_)) => tracing::debug!(
                        %sig,
                        fetched_ms,
                        folded_ms = started.elapsed().as_millis() as u64,
                        "folded a notified transaction"
                    ),
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, %sig, "a notified transaction is not readable yet; the polls will")
            }
        }
    }
}

/// One poll; what it did (nothing, on a failure).
async fn poll_once(
    source: &RpcSource,
    ix: &Arc<Indexer>,
    metrics: &api::Metrics,
) -> crate::ingest::PollReport {
    let started = Instant::now();
    match source.poll(ix).await {
        Ok(r) => {
            metrics.record_poll(&r);
            if r.fetched > 0 || r.applied.removed > 0 {
                let ix2 = ix.clone();
                let totals = tokio::task::spawn_blocking(move || ix2.read(&Scope::Head))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map(|s| s.totals())
                    .unwrap_or_default();
                tracing::info!(
                    fetched = r.fetched,
                    removed = r.applied.removed,
                    final_slot = r.final_slot,
                    listings = totals.listings,
                    offers = totals.offers,
                    settlements = totals.settlements,
                    ms = started.elapsed().as_millis() as u64,
                    "ingested"
                );
            }
            r
        }
        Err(e) => {
            metrics.record_poll_error();
            tracing::warn!(error = %e, "poll failed; retrying next interval");
            Default::default()
        }
    }
}
