//! Wake-ups for the listen daemon (and the indexer's writer): `logsSubscribe`
//! (mentions of the watched addresses) over the cluster's websocket. Each notification
//! nudges the daemon to run a pass now instead of at its next polling tick;
//! the pass itself still reads everything from RPC, so a missed or spurious
//! notification never changes what is released. If the websocket fails,
//! the daemon keeps polling.

use crate::chain::Pubkey;
use futures_util::StreamExt;
use solana_commitment_config::CommitmentConfig;
use solana_pubsub_client::nonblocking::pubsub_client::PubsubClient;
use solana_rpc_client_api::config::{RpcTransactionLogsConfig, RpcTransactionLogsFilter};
use tokio::sync::mpsc::Sender;

/// Subscribes to logs mentioning each address and sends `()` on `nudge`
/// for every notification. Returns when the connection ends or fails.
pub async fn wake_on_logs(
    ws_url: &str,
    addresses: &[Pubkey],
    commitment: CommitmentConfig,
    nudge: Sender<()>,
) -> Result<(), String> {
    notify_on_logs(
        ws_url,
        addresses,
        commitment,
        // subscribed: a pass now covers whatever landed before
        || {
            let _ = nudge.try_send(());
        },
        |sig| {
            tracing::debug!(%sig, "notified");
            !(nudge.try_send(()).is_err() && nudge.is_closed())
        },
    )
    .await
}

/// Subscribes to logs mentioning each address, calls `subscribed` once
/// every subscription is live (what landed before is the caller's to read:
/// the gap a lost subscription leaves), then `on` with each notified
/// transaction's signature until it returns false. Returns when the
/// connection ends or fails.
pub async fn notify_on_logs(
    ws_url: &str,
    addresses: &[Pubkey],
    commitment: CommitmentConfig,
    subscribed: impl FnOnce(),
    mut on: impl FnMut(String) -> bool,
) -> Result<(), String> {
    let client = PubsubClient::new(ws_url)
        .await
        .map_err(|e| format!("websocket {}: {e}", crate::chain::retry::origin(ws_url)))?;
    let mut streams = Vec::new();
    for addr in addresses {
        let (stream, _unsubscribe) = client
            .logs_subscribe(
                RpcTransactionLogsFilter::Mentions(vec![addr.to_string()]),
                RpcTransactionLogsConfig {
                    commitment: Some(commitment),
                },
            )
            .await
            .map_err(|e| format!("logsSubscribe {addr}: {e}"))?;
        streams.push(stream);
    }
    subscribed();
    let mut all = futures_util::stream::select_all(streams);
    while let Some(n) = all.next().await {
        if !on(n.value.signature) {
            break;
        }
    }
    Ok(())
}
