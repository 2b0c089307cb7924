//! One pass of the listen daemon over a seller's payment address:
//! 1. backfill `getSignaturesForAddress(payment address)` down to the
//!    checkpoint (paged to the end, no fixed window);
//! 2. every transaction whose memos carry a `buy` of one of our listings is
//!    recorded (`seen`), fetched, and verified or rejected with its reason;
//! 3. every unfinished buy (this pass's and any earlier crash's) is pushed
//!    through envelope upload and release;
//! 4. the checkpoint moves to the newest signature at a finalized slot only.
//!
//! Buys are recorded and verified in slot order; envelopes are uploaded one
//! by one; release transactions go out up to [`RELEASE_CONCURRENCY`] at
//! once (each mints its own seed-derived token, so they are independent).
//! Each step is durable before the next, so killing the process anywhere
//! and re-running the pass neither skips nor repeats a release.

use super::release::{land_release, upload_envelope, Goods, ReleaseError};
use super::state::{ListenDb, StateError};
use super::verify::{verify_buy, verify_escrow_buy, ListingTerms, NegotiatedTerms};
use crate::arweave::Uploader;
use crate::chain::memo_field::parse_memo_field;
use crate::chain::{Chain, ChainError, Pubkey, Signature, Signer};
use crate::market::MemoOp;
use crate::wallet::Wallet;
use futures_util::StreamExt;
use serde::Serialize;
use solana_commitment_config::CommitmentConfig;
use std::str::FromStr;

/// What the seller sells: terms and goods per listing id.
pub trait Catalog {
    /// Terms of one of our listings (`None`: not ours).
    fn terms(&self, listing_id: &str) -> Option<ListingTerms>;
    /// What that listing sells.
    fn goods(&self, listing_id: &str) -> Option<Goods<'_>>;
    /// An accepted offer for this buyer, if the seller accepted one.
    fn negotiated(&self, listing_id: &str, buyer: &str) -> Option<NegotiatedTerms>;
}

/// Release transactions in flight at once.
pub const RELEASE_CONCURRENCY: usize = 8;

/// Counts of one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PassReport {
    /// New buy transactions recorded.
    pub seen: usize,
    /// Verified this pass.
    pub verified: usize,
    /// Rejected this pass.
    pub rejected: usize,
    /// Released this pass.
    pub released: usize,
    /// Releases that failed (retried next pass).
    pub failed: usize,
}

/// Runs one pass for `payment_address`.
pub async fn run_once(
    chain: &Chain,
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    catalog: &dyn Catalog,
    payment_address: &Pubkey,
) -> Result<PassReport, ReleaseError> {
    let mut report = PassReport::default();
    let addr = payment_address.to_string();
    let finalized = crate::chain::client::with_retry("getSlot", || {
        chain
            .rpc()
            .get_slot_with_commitment(CommitmentConfig::finalized())
    })
    .await?;
    let until = db.checkpoint(&addr)?.map(|(s, _)| s);
    let until = until
        .as_deref()
        .map(Signature::from_str)
        .transpose()
        .map_err(|_| ChainError::Config("bad checkpoint".into()))?;
    let mut history = chain
        .signatures_for(payment_address, until.as_ref())
        .await?;
    history.reverse(); // oldest first
    let mut newest_final: Option<(String, u64)> = None;
    for info in &history {
        if info.slot <= finalized {
            newest_final = Some((info.signature.clone(), info.slot));
        }
        let listed = info
            .memo
            .as_deref()
            .map(parse_memo_field)
            .and_then(Result::ok)
            .unwrap_or_default();
        let Some(listing_id) = listed.iter().find_map(|m| match MemoOp::parse(m) {
            Ok(MemoOp::Buy { listing_id, .. }) if catalog.terms(&listing_id).is_some() => {
                Some(listing_id)
            }
            _ => None,
        }) else {
            continue;
        };
        if db.record_seen(&info.signature, &listing_id, info.slot)? == super::Step::AlreadyDone {
            continue;
        }
        report.seen += 1;
        let sig = Signature::from_str(&info.signature)
            .map_err(|_| ChainError::Config("bad signature".into()))?;
        let Some(tx) = chain.transaction(&sig).await? else {
            continue;
        };
        let terms = catalog.terms(&listing_id).expect("checked above");
        let offer = tx
            .fee_payer()
            .and_then(|b| catalog.negotiated(&listing_id, b));
        let verdict = if catalog.goods(&listing_id).is_some_and(|g| g.escrow) {
            let account =
                crate::escrow::listing_address(&seller.solana_keypair().pubkey(), &listing_id);
            let escrow = match tx.fee_payer().map(Pubkey::from_str) {
                Some(Ok(buyer)) => read_escrow(chain, &account, &buyer).await?,
                _ => None,
            };
            // the program holds every deposit to the listed price: offers do not apply
            verify_escrow_buy(&tx, &terms, &account.to_string(), escrow.as_ref())
        } else {
            verify_buy(&tx, &terms, offer.as_ref())
        };
        match verdict {
            Ok(buy) => {
                db.mark_verified(&buy)?;
                super::fault::maybe_abort("verified");
                report.verified += 1;
            }
            Err(why) => {
                tracing::info!(signature = %info.signature, reason = %why, "buy rejected");
                db.mark_rejected(&info.signature, &why)?;
                report.rejected += 1;
            }
        }
    }
    // envelopes first, one by one: each is durable before its release
    for row in db
        .unfinished()?
        .into_iter()
        .filter(|r| r.state == "verified")
    {
        if let Err(e) = upload_for(db, seller, uploader, catalog, &row).await {
            tracing::warn!(signature = %row.signature, error = %e, "envelope upload failed; will retry");
            report.failed += 1;
        }
    }
    // then the release transactions, up to RELEASE_CONCURRENCY in flight;
    // each has its own seed-derived mint, so they are independent
    let ready: Vec<_> = db
        .unfinished()?
        .into_iter()
        .filter(|r| r.state == "envelope_uploaded")
        .collect();
    let landed: Vec<(String, Result<String, ReleaseError>)> =
        futures_util::stream::iter(ready.iter())
            .map(|row| async move {
                let result = match catalog.goods(&row.listing_id) {
                    Some(goods) => land_release(chain, seller, row, &goods).await,
                    None => Err(StateError::Unknown(format!("goods of {}", row.listing_id)).into()),
                };
                (row.signature.clone(), result)
            })
            .buffer_unordered(RELEASE_CONCURRENCY)
            .collect()
            .await;
    for (signature, result) in landed {
        match result {
            Ok(release_sig) => {
                db.mark_released(&signature, &release_sig)?;
                report.released += 1;
            }
            Err(e) if e.is_refunded() => {
                tracing::info!(%signature, "the buyer took the escrow back; nothing to release");
                db.mark_abandoned(&signature, &super::verify::Rejection::RefundedBeforeRelease)?;
                report.rejected += 1;
            }
            Err(e) => {
                tracing::warn!(%signature, error = %e, "release failed; will retry");
                report.failed += 1;
            }
        }
    }
    if let Some((sig, slot)) = newest_final {
        db.set_checkpoint(&addr, &sig, slot)?;
    }
    Ok(report)
}

/// Uploads the envelope of a verified buy.
async fn upload_for(
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    catalog: &dyn Catalog,
    row: &super::state::BuyRow,
) -> Result<(), ReleaseError> {
    let goods = catalog
        .goods(&row.listing_id)
        .ok_or_else(|| StateError::Unknown(format!("goods of {}", row.listing_id)))?;
    upload_envelope(db, seller, uploader, &row.signature, &goods).await?;
    super::fault::maybe_abort("envelope_uploaded");
    Ok(())
}

/// The buyer's escrow on our listing account as the chain holds it; an
/// account that does not decode as one is no escrow.
async fn read_escrow(
    chain: &Chain,
    listing_account: &Pubkey,
    buyer: &Pubkey,
) -> Result<Option<crate::escrow::EscrowAccount>, ChainError> {
    use crate::market::escrow_trade::{read_account, EscrowReadError};
    let address = crate::escrow::escrow_address(listing_account, buyer);
    match read_account(chain, &address, crate::escrow::EscrowAccount::decode).await {
        Ok(e) => Ok(e),
        Err(EscrowReadError::Chain(e)) => Err(e),
        Err(EscrowReadError::Plan(why)) => {
            tracing::warn!(%address, error = %why, "not an escrow account");
            Ok(None)
        }
    }
}
