//! The settlement daemon as a service (the loop `brainctl marketplace
//! listen` runs; the CLI only wires it, as mini-redis's `server::run`):
//! each round reloads the seller's catalog from the state database (so a
//! listing made while the daemon runs is sold from the next round on),
//! runs one [`pass`](super::pass::run_pass) per payment address, then
//! waits for the next tick, a websocket wake-up, or the shutdown future,
//! recording the pass's releases as they land meanwhile (a round never
//! waits for its releases to confirm before the next buys are read). A
//! round woken by a notification reads only the history after the last
//! read; the first round, a tick, and at least one round an interval read
//! the whole not-yet-final tail again.
//!
//! What ends it: the shutdown future (at once: a pass cut short is the
//! same as a crash, which the state machine survives by design) or the
//! state database failing. Chain, gateway and per-buy problems never do.
//!
//! It never holds a write transaction across a network call, so the
//! seller's own commands write to the same database while it runs.

use super::catalog::DbCatalog;
use super::pass::{run_once, run_pass, HistoryCursor, PassReport, Reading, Releases};
use crate::arweave::Uploader;
use crate::chain::{Chain, Pubkey, Signer};
use crate::keys::KeyDir;
use crate::mint::bundle_mint::TokenStandard;
use crate::seller::{ListenDb, StateError};
use crate::wallet::Wallet;
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long one send of the daemon's may wait to land before the buy is
/// retried next round (see [`Chain::with_landing_budget`]): releases are
/// idempotent, so a stuck one must not hold up the round.
pub const LANDING_BUDGET: Duration = Duration::from_secs(45);

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Where the listings' blob keys are.
    pub keys: KeyDir,
    /// The protocol fee in force (treasury, fee_bps), `None` off mainnet.
    pub fee: Option<(String, u64)>,
    /// The token standard of new releases' per-buy mints.
    pub standard: TokenStandard,
    /// The receipt new releases carry.
    pub receipt: crate::mint::receipt::ReceiptMode,
    /// The hourly budget of buys paying under a release's cost.
    pub below_cost: Option<super::pass::BelowCost>,
    /// Time between rounds when nothing wakes it.
    pub interval: Duration,
    /// One round, then return.
    pub once: bool,
    /// Subscribe to the payment addresses' logs for wake-ups.
    pub wake_ups: bool,
    /// Keep a release lookup table (`--lookup-table`: v0 releases, one
    /// more a transaction; its rent is the seller's: [`super::tables`]).
    pub lookup_table: bool,
}

/// What one round reports per payment address.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoundReport {
    /// The address passed over.
    pub payment_address: String,
    /// The pass's counts.
    pub pass: PassReport,
}

/// The payment addresses to watch: every listing's, or the seller's own
/// when there are none yet.
fn watched(db: &ListenDb, seller: &Pubkey) -> Result<Vec<Pubkey>, StateError> {
    let mut out: Vec<Pubkey> = db
        .listings()?
        .iter()
        .filter_map(|l| match l.payment_address.parse() {
            Ok(p) => Some(p),
            Err(_) => {
                tracing::warn!(listing = %l.listing_id, address = %l.payment_address, "payment address on record is not a pubkey; skipped");
                None
            }
        })
        .collect();
    if out.is_empty() {
        out.push(*seller);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The program accounts of our escrow listings (every deposit writes one).
fn escrow_accounts(db: &ListenDb, seller: &Pubkey) -> Result<Vec<Pubkey>, StateError> {
    Ok(db
        .listings()?
        .iter()
        .filter(|l| l.escrow)
        .map(|l| crate::escrow::listing_address(seller, &l.listing_id))
        .collect())
}

/// The websocket wake-up task over the current address set.
struct Wake {
    addresses: Vec<Pubkey>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Wake {
    /// (Re)subscribes when the address set changed.
    fn follow(&mut self, chain: &Chain, addresses: &[Pubkey], nudge: &mpsc::Sender<()>) {
        if self.addresses == addresses && self.task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        if let Some(old) = self.task.take() {
            old.abort();
        }
        self.addresses = addresses.to_vec();
        let (ws, commitment) = (chain.endpoint().ws_url.clone(), chain.commitment());
        let (watch, nudge) = (self.addresses.clone(), nudge.clone());
        self.task = Some(tokio::spawn(async move {
            if let Err(e) = super::wake::wake_on_logs(&ws, &watch, commitment, nudge).await {
                tracing::warn!(error = %e, "no websocket wake-ups; polling only");
            }
        }));
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// A commitment `listen` refuses to release at on this cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("listen on mainnet-beta releases only buys that are finalized; --commitment {0} could release for a buy a fork then drops (pass --commitment finalized)")]
pub struct UnsafeCommitment(pub String);

/// Whether `commitment` is safe to release at on a cluster of `kind`:
/// below `finalized`, a buy can vanish in a fork after its release (real
/// money on mainnet-beta; test money elsewhere, where faster is allowed).
pub fn check_commitment(
    kind: crate::chain::ClusterKind,
    commitment: solana_commitment_config::CommitmentConfig,
) -> Result<(), UnsafeCommitment> {
    if kind == crate::chain::ClusterKind::MainnetBeta && !commitment.is_finalized() {
        return Err(UnsafeCommitment(
            format!("{:?}", commitment.commitment).to_lowercase(),
        ));
    }
    Ok(())
}

/// Runs the daemon until `shutdown` completes (or after one round with
/// `once`). `on_round` sees every pass's report as it finishes.
pub async fn run(
    chain: &Chain,
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    config: &DaemonConfig,
    shutdown: impl Future<Output = ()>,
    mut on_round: impl FnMut(&ListenDb, &RoundReport),
) -> Result<(), StateError> {
    debug_assert!(
        chain.watches(crate::escrow::PROGRAM_ID),
        "listen verifies escrow buys by their deposit calls: its chain must watch the program"
    );
    tokio::pin!(shutdown);
    let me = seller.solana_keypair().pubkey();
    let (nudge_tx, mut nudges) = mpsc::channel::<()>(64);
    let mut wake = Wake {
        addresses: Vec::new(),
        task: None,
    };
    // releases stay in flight across rounds: the next buys are discovered
    // and verified while earlier releases confirm; what lands between
    // rounds is recorded at once and reported with the next round
    let mut releases = Releases::default();
    let mut landed = PassReport::default();
    // a round woken by a notification reads only the history after the
    // last read; the first round, a tick, and a round an interval after the
    // last whole read read the whole tail (the safety net)
    let mut cursor = HistoryCursor::default();
    let mut woken = false;
    let mut last_tail = std::time::Instant::now();
    // when the release lookup table was last read back from the chain
    let mut table_read: Option<std::time::Instant> = None;
    loop {
        let whole_tail = !woken || last_tail.elapsed() >= config.interval;
        if whole_tail {
            last_tail = std::time::Instant::now();
        }
        let addresses = watched(db, &me)?;
        if config.wake_ups && !config.once {
            // escrow listings' program accounts too: a deposit need not
            // name the payment address
            let mut wake_on = addresses.clone();
            wake_on.extend(escrow_accounts(db, &me)?);
            wake.follow(chain, &wake_on, &nudge_tx);
        }
        let round = async {
            if config.lookup_table {
                let recheck = chain.lookup_tables().is_empty()
                    || table_read.is_none_or(|t| t.elapsed() >= super::tables::RECHECK);
                match super::tables::keep_up(chain, seller, db, recheck).await {
                    Ok(()) if recheck => table_read = Some(std::time::Instant::now()),
                    Ok(()) => {}
                    Err(super::tables::TableError::State(e)) => return Err(e),
                    Err(e) => {
                        tracing::warn!(error = %e, "release lookup table not kept up; releasing without it")
                    }
                }
            }
            let catalog = DbCatalog::load(db, &config.keys, config.fee.clone())?
                .with_standard(config.standard)
                .with_receipt(config.receipt)
                .with_below_cost(config.below_cost);
            for address in &addresses {
                let started = std::time::Instant::now();
                let mut pass = if config.once {
                    run_once(chain, db, seller, uploader, &catalog, address).await?
                } else {
                    let services = (chain, seller, uploader);
                    let reading = match whole_tail {
                        true => Reading::TailInto(&mut cursor),
                        false => Reading::Since(&mut cursor),
                    };
                    run_pass(services, db, &catalog, (address, reading), &mut releases).await?
                };
                pass.absorb(std::mem::take(&mut landed));
                tracing::debug!(%address, ?pass, ms = started.elapsed().as_millis() as u64, "pass done");
                on_round(
                    db,
                    &RoundReport {
                        payment_address: address.to_string(),
                        pass,
                    },
                );
            }
            Ok::<_, StateError>(catalog)
        };
        let catalog = tokio::select! {
            r = round => r?,
            () = &mut shutdown => return Ok(()),
        };
        if config.once {
            return Ok(());
        }
        // the next round comes with the tick or a wake-up; releases land
        // (and are recorded) meanwhile
        let tick = tokio::time::sleep(config.interval);
        tokio::pin!(tick);
        loop {
            tokio::select! {
                () = &mut shutdown => return Ok(()),
                () = &mut tick => {
                    woken = false;
                    break;
                }
                Some(()) = nudges.recv() => {
                    while nudges.try_recv().is_ok() {}
                    woken = true;
                    break;
                }
                r = releases.land_one((chain, seller, &catalog), db, &mut landed) => r?,
            }
        }
    }
}

#[cfg(test)]
mod commitment_tests {
    use super::*;
    use crate::chain::ClusterKind;
    use solana_commitment_config::CommitmentConfig;

    #[test]
    fn mainnet_releases_only_at_finalized() {
        for c in [CommitmentConfig::processed(), CommitmentConfig::confirmed()] {
            let e = check_commitment(ClusterKind::MainnetBeta, c).unwrap_err();
            assert!(e.to_string().contains("--commitment finalized"), "{e}");
            for other in [
                ClusterKind::Devnet,
                ClusterKind::Testnet,
                ClusterKind::Local,
            ] {
                assert_eq!(check_commitment(other, c), Ok(()));
            }
        }
        assert_eq!(
            check_commitment(ClusterKind::MainnetBeta, CommitmentConfig::finalized()),
            Ok(())
        );
    }
}
