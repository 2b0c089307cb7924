//! The shared wait for sent transactions to land: however many sends of
//! one [`Chain`](super::Chain) await their commitment at once, one reading
//! (`getSignatureStatuses`, 256 signatures a call, then `getBlockHeight`)
//! answers all of them for a tick, instead of two requests per send per
//! tick (64 releases in flight were about 430 requests a second to the
//! node, which serves them from the cores that also run the chain).
//!
//! It only reads: what a status means (landed, failed, expired) stays the
//! send loop's to decide (`client.rs`).

use super::retry::with_retry;
use super::ChainError;
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_sdk::signature::Signature;
use solana_transaction_status_client_types::TransactionStatus;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A reading younger than this answers every send it covers.
const TICK: Duration = Duration::from_millis(250);

/// Most signatures one `getSignatureStatuses` takes.
const STATUSES_PER_CALL: usize = 256;

/// The sends awaiting their commitment and the last reading of them.
#[derive(Default)]
pub(crate) struct LandingWatch {
    /// Each awaited signature, with how many waits await it.
    pending: std::sync::Mutex<HashMap<Signature, usize>>,
    last: tokio::sync::Mutex<Reading>,
}

/// One reading: every pending signature's status, then the block height.
#[derive(Default)]
struct Reading {
    at: Option<Instant>,
    statuses: HashMap<Signature, Option<TransactionStatus>>,
    height: u64,
}

/// A signature awaited until this drops.
pub(crate) struct Awaited<'a> {
    watch: &'a LandingWatch,
    signature: Signature,
}

impl Drop for Awaited<'_> {
    fn drop(&mut self) {
        let mut pending = self.watch.pending.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = pending.get_mut(&self.signature) {
            *n -= 1;
            if *n == 0 {
                pending.remove(&self.signature);
            }
        }
    }
}

impl LandingWatch {
    /// Includes `signature` in every reading until the guard drops.
    pub(crate) fn watch(&self, signature: Signature) -> Awaited<'_> {
        *self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(signature)
            .or_default() += 1;
        Awaited {
            watch: self,
            signature,
        }
    }

    /// `signature`'s status (`None`: the node does not know it) and the
    /// confirmed block height read after it: from the last reading when
    /// it is younger than a tick and covers `signature`, else from a new
    /// reading of every awaited signature (one caller reads; the others
    /// wait for it and share its answer).
    pub(crate) async fn read(
        &self,
        rpc: &RpcClient,
        signature: &Signature,
    ) -> Result<(Option<TransactionStatus>, u64), ChainError> {
        let mut last = self.last.lock().await;
        let fresh = last.at.is_some_and(|at| at.elapsed() < TICK);
        if !(fresh && last.statuses.contains_key(signature)) {
            let mut awaited: Vec<Signature> = self
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .keys()
                .copied()
                .collect();
            if !awaited.contains(signature) {
                awaited.push(*signature);
            }
            let mut statuses = HashMap::with_capacity(awaited.len());
            for chunk in awaited.chunks(STATUSES_PER_CALL) {
                let answer =
                    with_retry("getSignatureStatuses", || rpc.get_signature_statuses(chunk))
                        .await?;
                statuses.extend(chunk.iter().copied().zip(answer.value));
            }
            let height = with_retry("getBlockHeight", || {
                rpc.get_block_height_with_commitment(CommitmentConfig::confirmed())
            })
            .await?;
            *last = Reading {
                at: Some(Instant::now()),
                statuses,
                height,
            };
        }
        let status = last.statuses.get(signature).cloned().flatten();
        Ok((status, last.height))
    }
}
