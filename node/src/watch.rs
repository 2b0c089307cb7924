//! The buyer's service: `marketplace watch` finishes every pending escrow
//! buy of a wallet ([`crate::market::pending`]) without the user's
//! action, across restarts: each pass looks at each escrow once and acts
//! ([`crate::market::buy::advance_sealed`]): a reveal is opened with the
//! blob kept from before the payment and imported, or, when it lies,
//! proven on chain inside the dispute window; a deposit the seller left
//! past its window, declined or expired is refunded with what it is owed,
//! and so is a reveal on a listing another buyer convicted. A deposit
//! recorded when signed is confirmed landed first (one whose blockhash
//! expired without it is closed: no deposit), and an imported buy's
//! escrow is closed once the seller is paid (claimed for it, where the
//! seller has not) so its rent comes back. A failed step (RPC down, a
//! proof not landed) stays pending and is tried again next pass; a row
//! that no longer reads is reported each pass and skipped, never stopping
//! the others.
//!
//! The loop runs until its shutdown future completes; durable state is
//! the pending store's rows (one statement per change) and the chain, so
//! a kill at any instant resumes: an import is idempotent (same bundle,
//! same scope), a dispute or refund already landed finds the escrow
//! closed. Never sells, never pays (but network fees, which it records in
//! the wallet's spend ledger where it keeps one: never refused, as they
//! bring money back).

use crate::chain::{Chain, LandingOf};
use crate::market::buy::{
    advance_sealed, close_imported, BuyError, ClosingStep, ImportTarget, SealedStep,
};
use crate::market::pending::{PendingBuy, PendingError, PendingEscrows, State, Target};
use crate::spend::SpendLedger;
use crate::wallet::Wallet;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// What one look at one pending buy did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// The buy (its deposit's signature).
    pub buy_signature: String,
    /// The listing.
    pub listing_id: String,
    /// Where it stands now.
    pub state: State,
    /// The outcome's signature, what was imported, or the error met.
    pub detail: String,
    /// The transaction this look sent and the wallet paid the fee of (a
    /// fraud proof, a refund, an escrow's close), and what it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<(&'static str, String)>,
}

/// Errors that stop the service (a step's own errors never do).
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The pending store.
    #[error(transparent)]
    Pending(#[from] PendingError),
}

impl Outcome {
    /// What a look at `p` left it at.
    fn of(p: &PendingBuy, state: State, detail: String) -> Outcome {
        Outcome {
            buy_signature: p.buy_signature.clone(),
            listing_id: p.listing.listing_id.clone(),
            state,
            detail,
            sent: None,
        }
    }

    /// This outcome, with the transaction it sent (`kind`, `signature`).
    fn sending(mut self, kind: &'static str, signature: &str) -> Outcome {
        self.sent = Some((kind, signature.to_string()));
        self
    }
}

/// One pass over every pending buy of `store`; returns what each did.
/// The fee of each transaction a look sent is recorded in `ledger` (where
/// the wallet keeps one: its 24 h budget counts it; never refused).
pub async fn pass(
    chain: &Chain,
    buyer: &Wallet,
    store: &PendingEscrows,
    mut ledger: Option<&mut SpendLedger>,
    now: impl Fn() -> i64,
) -> Result<Vec<Outcome>, WatchError> {
    let mut out = Vec::new();
    for row in store.pending()? {
        let p = match row {
            Ok(p) => p,
            Err(e) => {
                let why = e.to_string();
                tracing::warn!(error = %why, "a pending escrow row does not read: skipped");
                let buy_signature = match &e {
                    PendingError::BadManifest { buy_signature, .. } => buy_signature.clone(),
                    _ => String::new(),
                };
                out.push(Outcome {
                    buy_signature,
                    listing_id: String::new(),
                    state: State::Pending,
                    detail: why,
                    sent: None,
                });
                continue;
            }
        };
        let looked = match p.state {
            State::Imported => close(chain, buyer, store, &p, &now).await?,
            _ => advance(chain, buyer, store, &p, &now).await?,
        };
        if let (Some(ledger), Some(o)) = (ledger.as_deref_mut(), looked.as_ref()) {
            record_fee(chain, ledger, o, now()).await;
        }
        out.extend(looked);
    }
    Ok(out)
}

/// The network fee of a signature's lowest base fee, where its own fee does
/// not read.
const BASE_FEE_LAMPORTS: u64 = 5_000;

/// Records the fee of the transaction `o` sent in `ledger` (a failure to
/// record is logged: the refund or proof landed whatever the ledger says).
async fn record_fee(chain: &Chain, ledger: &mut SpendLedger, o: &Outcome, now: i64) {
    let Some((kind, signature)) = &o.sent else {
        return;
    };
    let fee = match signature.parse::<crate::chain::Signature>() {
        Ok(sig) => chain.fee_paid(&sig).await,
        Err(_) => None,
    };
    let lamports = fee.unwrap_or(BASE_FEE_LAMPORTS);
    if let Err(e) = ledger.record_fee((kind, &o.listing_id), signature, lamports, now) {
        tracing::warn!(%signature, error = %e, "the spend ledger did not record a fee");
    }
}

/// One look at an imported buy whose escrow still holds its rent: closed
/// once the seller is paid (`None`: not yet, or tried again next pass).
async fn close(
    chain: &Chain,
    buyer: &Wallet,
    store: &PendingEscrows,
    p: &PendingBuy,
    now: &impl Fn() -> i64,
) -> Result<Option<Outcome>, WatchError> {
    let (detail, sent) = match close_imported(chain, buyer, &p.listing).await {
        Ok(ClosingStep::Waiting) => return Ok(None),
        Ok(ClosingStep::Closed { signature }) => (
            format!("imported; escrow closed, its rent back in {signature}"),
            Some(signature),
        ),
        Ok(ClosingStep::Gone) => ("imported; escrow closed".to_string(), None),
        Err(e) => {
            tracing::warn!(buy = %p.buy_signature, error = %e, "closing an imported escrow: tried again next pass");
            return Ok(None);
        }
    };
    store.escrow_closed(&p.buy_signature, &detail, now())?;
    let outcome = Outcome::of(p, State::Imported, detail);
    Ok(Some(match sent {
        Some(signature) => outcome.sending("close", &signature.to_string()),
        None => outcome,
    }))
}

/// One look at a pending buy: a deposit recorded when signed is first
/// confirmed landed (or closed once it never can), then its escrow is
/// advanced (`None`: nothing to do yet).
async fn advance(
    chain: &Chain,
    buyer: &Wallet,
    store: &PendingEscrows,
    p: &PendingBuy,
    now: &impl Fn() -> i64,
) -> Result<Option<Outcome>, WatchError> {
    if !p.landed {
        let Ok(sig) = p.buy_signature.parse::<crate::chain::Signature>() else {
            return Ok(Some(Outcome::of(
                p,
                State::Pending,
                "its signature is not base58: the row was edited; skipped".into(),
            )));
        };
        match chain.landing_of(&sig, p.last_valid_height).await {
            Ok(LandingOf::Landed { .. }) => store.mark_landed(&p.buy_signature, now())?,
            Ok(LandingOf::InFlight) => return Ok(None),
            Ok(LandingOf::Never) => {
                let detail = "no deposit: its blockhash expired without it landing".to_string();
                store.finish(&p.buy_signature, State::Closed, &detail, now())?;
                return Ok(Some(Outcome::of(p, State::Closed, detail)));
            }
            Err(e) => {
                tracing::warn!(buy = %p.buy_signature, error = %e, "whether the deposit landed: asked again next pass");
                return Ok(None);
            }
        }
    }
    let (state, detail, sent) = match step(chain, buyer, p).await {
        Ok(SealedStep::Waiting) => return Ok(None),
        Ok(SealedStep::Imported(report)) => (
            State::Imported,
            serde_json::to_string(&report).unwrap_or_default(),
            None,
        ),
        Ok(SealedStep::Disputed {
            index,
            signature,
            withdrawn: false,
        }) => {
            // a token conviction holds the deposit for this buyer; its
            // withdrawal (a frozen vault waits for the thaw) is tried
            // again next pass
            let why = format!("chunk {index} lied; fraud proven in {signature}; the deposit is withdrawn next pass");
            store.note(&p.buy_signature, &why, now())?;
            return Ok(Some(
                Outcome::of(p, State::Pending, why).sending("dispute", &signature),
            ));
        }
        Ok(SealedStep::Disputed {
            index, signature, ..
        }) => (
            State::Disputed,
            format!("chunk {index} lied; fraud proven in {signature}"),
            Some(("dispute", signature)),
        ),
        Ok(SealedStep::Refunded { signature }) => (
            State::Refunded,
            signature.clone(),
            Some(("refund", signature)),
        ),
        Ok(SealedStep::Closed(why)) => (State::Closed, why, None),
        Err(e) => {
            let why = e.to_string();
            tracing::warn!(buy = %p.buy_signature, error = %why, "pending escrow: tried again next pass");
            store.note(&p.buy_signature, &why, now())?;
            return Ok(Some(Outcome::of(p, State::Pending, why)));
        }
    };
    store.finish(&p.buy_signature, state, &detail, now())?;
    let outcome = Outcome::of(p, state, detail);
    Ok(Some(match sent {
        Some((kind, signature)) => outcome.sending(kind, &signature),
        None => outcome,
    }))
}

/// One look at `p`, importing into its own target.
async fn step(chain: &Chain, buyer: &Wallet, p: &PendingBuy) -> Result<SealedStep, BuyError> {
    match &p.target {
        Target::Store(path) => {
            let mut store = crate::store::Store::open(path)
                .map_err(|e| BuyError::Import(crate::import::ImportError::from(e)))?;
            advance_sealed(
                chain,
                buyer,
                &p.listing,
                &p.blob,
                ImportTarget::Store(&mut store),
            )
            .await
        }
        Target::BrainctlDb(path) => {
            advance_sealed(
                chain,
                buyer,
                &p.listing,
                &p.blob,
                ImportTarget::BrainctlDb(path),
            )
            .await
        }
    }
}

/// The service: a [`pass`] every `every` until `shutdown` completes (a
/// pass in flight is dropped at its next await; see the module doc), each
/// pass's outcomes handed to `report`, the fees paid recorded in `ledger`. Returns after the first pass that
/// leaves nothing pending when `until_done`.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    chain: &Chain,
    buyer: &Wallet,
    pending_path: PathBuf,
    mut ledger: Option<SpendLedger>,
    every: Duration,
    until_done: bool,
    mut report: impl FnMut(&[Outcome]),
    shutdown: impl Future<Output = ()>,
) -> Result<(), WatchError> {
    let store = PendingEscrows::open(&pending_path)?;
    let now = || time::OffsetDateTime::now_utc().unix_timestamp();
    tokio::pin!(shutdown);
    loop {
        let outcomes = tokio::select! {
            r = pass(chain, buyer, &store, ledger.as_mut(), now) => r?,
            _ = &mut shutdown => return Ok(()),
        };
        report(&outcomes);
        // done once nothing readable is left to act on
        if until_done && store.pending()?.iter().all(Result::is_err) {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = &mut shutdown => return Ok(()),
        }
    }
}
