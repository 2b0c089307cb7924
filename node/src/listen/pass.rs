//! One pass of the listen daemon over a seller's payment address:
//! 1. discover: backfill `getSignaturesForAddress(payment address)` down
//!    to the checkpoint (paged to the end, no fixed window); every
//!    transaction whose memos carry a `buy` of one of our listings is
//!    recorded `seen` (a failed one too: it is judged from the transaction
//!    itself, never from the list), the page and the checkpoint in one
//!    commit; the checkpoint moves to the newest signature at a finalized
//!    slot only;
//! 2. every due `seen` buy (this pass's and any earlier pass's or crash's)
//!    is fetched and verified or rejected with its reason, a chunk at a
//!    time with several fetches in flight (a backlog longer than a chunk
//!    gives each chunk its oldest half and its newest half, and the history
//!    after the last read is read again between chunks, so a buy paid
//!    behind a flood of junk is judged within a chunk);
//! 3. after each chunk, every due `verified` buy gets its envelope, every
//!    due `envelope_uploaded` buy its release (so junk buys queued behind
//!    an honest one never delay its release by more than a chunk). The
//!    releases stay in flight in [`Releases`] past the pass when the daemon
//!    runs it ([`run_pass`]); [`run_once`] waits for them.
//!
//! Nothing a stranger puts on chain ends a pass: a memo field or a
//! transaction in any shape is at worst no buy or a rejected one. A
//! transient problem with one buy (not yet visible at the commitment, an
//! RPC or gateway error, a release that did not land) is recorded on that
//! buy with capped backoff ([`ListenDb::note_retry`]) while the others go
//! on; a failed history read is reported and retried next pass. Only the
//! state database failing ends a pass early.
//!
//! Each step is durable before the next, so killing the process anywhere
//! and re-running the pass neither skips nor repeats a release.

use super::release::{
    land_release, land_shared_release, prepare_envelope, releases_per_transaction, shared_receipt,
    Goods, ReleaseError,
};
use crate::arweave::Uploader;
use crate::chain::memo_field::memos_lenient;
use crate::chain::{Chain, ChainError, Pubkey, Signature, Signer};
use crate::memo::MemoOp;
use crate::mint::receipt::Receipt;
use crate::seller::{now_ms, BuyRow, BuyState, ListenDb, StateError};
use crate::settle::{
    verify_buy, verify_escrow_buy, ListingTerms, NegotiatedTerms, Rejection, VerifiedBuy,
};
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
    /// The offers (or counters) the seller accepted for this buyer on this
    /// listing, expired ones included: [`verify_buy`] decides which bind.
    fn negotiated(&self, listing_id: &str, buyer: &str) -> Vec<NegotiatedTerms>;
    /// The release budget for buys that pay less than a release costs
    /// (`None`: none; every verified buy is released).
    fn below_cost(&self) -> Option<BelowCost> {
        None
    }
    /// Our escrow listings paid at `payment_address` (cancelled and
    /// expired ones included: a deposit the program took is released).
    fn escrow_listings(&self, _payment_address: &str) -> Vec<String> {
        Vec::new()
    }
}

/// Buys paying under `floor_lamports` (a release's cost: a free or
/// below-cost listing, where every junk `buy` would cost the seller a
/// mint) are released at most `per_hour` an hour, oldest first; the rest
/// wait verified, never rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BelowCost {
    /// One release's cost ([`crate::mint::release_cost`]).
    pub floor_lamports: u64,
    /// Most such buys sent on towards their release in any hour.
    pub per_hour: u64,
}

/// Release transactions in flight at once.
pub const RELEASE_CONCURRENCY: usize = 256;

/// Buys verified (transactions fetched) at once.
pub const VERIFY_CONCURRENCY: usize = 64;

/// Envelopes sealed and uploaded at once.
pub const UPLOAD_CONCURRENCY: usize = 32;

/// `seen` buys verified before the verified ones go on to their release.
pub const VERIFY_CHUNK: usize = 64;

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
    /// Sealed escrows claimed this pass (paid once their dispute window
    /// passed).
    #[serde(default)]
    pub claimed: usize,
    /// Below-cost buys left verified this pass: the hour's budget for
    /// them was spent ([`BelowCost`]).
    pub deferred: usize,
    /// Steps that failed this pass (each recorded on its buy, retried
    /// after its backoff).
    pub failed: usize,
    /// Why reading the address's history failed, if it did (the pass
    /// still resumed every due buy; the next pass reads it again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_error: Option<String>,
}

impl PassReport {
    /// Adds the outcomes of releases that landed between passes.
    pub fn absorb(&mut self, landed: PassReport) {
        self.released += landed.released;
        self.rejected += landed.rejected;
        self.failed += landed.failed;
    }
}

/// Where each address's last history read ended (its newest signature,
/// at the chain handle's commitment): kept by the daemon across rounds.
#[derive(Debug, Default)]
pub struct HistoryCursor(std::collections::HashMap<Pubkey, Signature>);

/// How much of an address's history a pass reads.
pub enum Reading<'c> {
    /// Everything after the durable checkpoint (the newest final
    /// signature): the not-yet-final tail, every time.
    Tail,
    /// The same, noting where it ended in the cursor: the safety net a
    /// daemon runs on its tick (a fork that dropped a block the cursor
    /// stood on is read past, never missed).
    TailInto(&'c mut HistoryCursor),
    /// Only what came after the cursor (the tail when it has none): a
    /// daemon woken by a notification asks the RPC node for the new
    /// entries, not the thousands of a busy tail again.
    Since(&'c mut HistoryCursor),
}

/// Runs one pass for `payment_address` and waits for every release it
/// sent. Only a state-database error ends it early; chain, gateway and
/// per-buy problems are recorded and retried.
pub async fn run_once(
    chain: &Chain,
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    catalog: &dyn Catalog,
    payment_address: &Pubkey,
) -> Result<PassReport, StateError> {
    let mut releases = Releases::default();
    let mut report = run_pass(
        (chain, seller, uploader),
        db,
        catalog,
        (payment_address, Reading::Tail),
        &mut releases,
    )
    .await?;
    releases
        .finish((chain, seller, catalog), db, &mut report)
        .await?;
    Ok(report)
}

/// One pass for `payment_address` that leaves its releases in flight in
/// `releases` (the daemon lands them while it waits, so the next buys are
/// discovered while these confirm: [`Releases::land_one`]).
pub async fn run_pass<'a>(
    (chain, seller, uploader): (&'a Chain, &'a Wallet, &Uploader),
    db: &mut ListenDb,
    catalog: &dyn Catalog,
    (payment_address, mut reading): (&Pubkey, Reading<'_>),
    releases: &mut Releases<'a>,
) -> Result<PassReport, StateError> {
    let mut report = PassReport::default();
    match discover(
        chain,
        db,
        catalog,
        payment_address,
        &mut reading,
        &mut report,
    )
    .await
    {
        Ok(()) => {}
        Err(PassStep::State(e)) => return Err(e),
        Err(PassStep::Chain(e)) => {
            tracing::warn!(address = %payment_address, error = %e, "reading the payment address's history failed; will retry");
            report.discovery_error = Some(e.to_string());
        }
    }
    match discover_deposits(chain, db, seller, catalog, payment_address, &mut report).await {
        Ok(()) => {}
        Err(PassStep::State(e)) => return Err(e),
        Err(PassStep::Chain(e)) => {
            tracing::warn!(address = %payment_address, error = %e, "reading the escrow program's deposits failed; will retry");
            report.discovery_error = Some(e.to_string());
        }
    }
    // verified buys go on to their release a chunk at a time, so a flood
    // of junk `seen` rows never holds up buys verified before it ends; a
    // chunk's releases stay in flight while the next chunk is verified and
    // sealed (each outcome recorded as it lands, between the steps)
    loop {
        let more = alongside(
            verify_due(chain, db, seller, catalog, &mut report),
            releases,
        )
        .await?;
        releases.record(db, &mut report)?;
        alongside(
            upload_due(db, seller, uploader, catalog, &mut report),
            releases,
        )
        .await?;
        releases.record(db, &mut report)?;
        releases.launch(chain, db, seller, catalog)?;
        if !more {
            break;
        }
        // a long backlog: what came meanwhile joins it (only the history
        // after the last read: cheap), so its newest half is judged next
        if let Reading::Since(cursor) | Reading::TailInto(cursor) = &mut reading {
            let mut since = Reading::Since(cursor);
            let found = discover(chain, db, catalog, payment_address, &mut since, &mut report);
            match alongside(found, releases).await {
                Ok(()) | Err(PassStep::Chain(_)) => {}
                Err(PassStep::State(e)) => return Err(e),
            }
        }
    }
    if let Err(e) = alongside(
        claim_due(chain, seller, catalog, payment_address, &mut report),
        releases,
    )
    .await
    {
        tracing::warn!(address = %payment_address, error = %e, "claiming revealed escrows failed; will retry");
    }
    releases.record(db, &mut report)?;
    Ok(report)
}

/// Claims every revealed escrow of our escrow listings paid at
/// `payment_address` whose dispute window has passed (by the chain's
/// clock). The program state is the record: a claim that landed before a
/// crash is simply no longer `Revealed`, and a second one is refused.
async fn claim_due(
    chain: &Chain,
    seller: &Wallet,
    catalog: &dyn Catalog,
    payment_address: &Pubkey,
    report: &mut PassReport,
) -> Result<(), ReleaseError> {
    let listings = catalog.escrow_listings(&payment_address.to_string());
    if listings.is_empty() {
        return Ok(());
    }
    let payer = seller.solana_keypair();
    let me = payer.pubkey();
    let mut settings = None;
    let mut first_error = None;
    for listing_id in listings {
        let account = crate::escrow::listing_address(&me, &listing_id);
        // one listing's RPC error never stops the claims of the others
        let revealed = match super::deposits::held_deposits(
            chain,
            &account,
            crate::escrow::EscrowStatus::Revealed,
        )
        .await
        {
            Ok(revealed) => revealed,
            Err(e) => {
                tracing::warn!(%listing_id, error = %e, "revealed escrows not read; will retry");
                first_error.get_or_insert(e);
                continue;
            }
        };
        if revealed.is_empty() {
            continue;
        }
        // a convicted listing pays nothing: the program refuses its claims
        // (each buyer takes its deposit and share back)
        match crate::market::escrow_trade::read_account(
            chain,
            &account,
            crate::escrow::ListingAccount::decode,
        )
        .await
        {
            Ok(Some(l)) if l.status == crate::escrow::ListingStatus::Convicted => continue,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%listing_id, error = %e, "listing not read; its claims wait");
                continue;
            }
        }
        let s = match &settings {
            Some(s) => s,
            None => settings.insert((
                crate::market::escrow_trade::read_settings(chain).await?,
                chain.cluster_time().await?,
            )),
        };
        let (settings, now) = (&s.0, s.1);
        let due: Vec<_> = revealed
            .into_iter()
            .filter(|h| now >= settings.dispute_closes(h.account.revealed_at))
            .collect();
        if due.is_empty() {
            continue;
        }
        // what this listing's escrows hold, read once for all its claims
        let token = match listing_token(chain, &account).await {
            Ok(token) => token,
            Err(e) => {
                tracing::warn!(%listing_id, error = %e, "claims not built; will retry");
                continue;
            }
        };
        for h in due {
            let ixs = crate::market::escrow_trade::claim_instructions(
                &me,
                &account,
                &h.account.buyer,
                &me,
                &settings.treasury,
                token.as_ref(),
            );
            match chain.send(&ixs, &[&payer]).await {
                Ok(sent) => {
                    tracing::info!(escrow = %h.escrow, signature = %sent.signature, "claimed after the dispute window");
                    report.claimed += 1;
                }
                Err(e) => {
                    tracing::warn!(escrow = %h.escrow, error = %e, "claim failed; will retry")
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// What the escrows of our listing `account` hold: the listing's token
/// (`None`: lamports, or no listing account).
async fn listing_token(
    chain: &Chain,
    account: &Pubkey,
) -> Result<Option<crate::chain::token::TokenMint>, crate::market::escrow_trade::EscrowReadError> {
    use crate::market::escrow_trade::{read_account, vault_mint};
    match read_account(chain, account, crate::escrow::ListingAccount::decode).await? {
        Some(l) => vault_mint(chain, &l).await,
        None => Ok(None),
    }
}

/// A step's failure: the state database (fatal to the pass) or the chain
/// (recorded, retried).
enum PassStep {
    State(StateError),
    Chain(ChainError),
}

impl From<StateError> for PassStep {
    fn from(e: StateError) -> Self {
        PassStep::State(e)
    }
}

impl From<ChainError> for PassStep {
    fn from(e: ChainError) -> Self {
        PassStep::Chain(e)
    }
}

/// The listing a `memo` field buys, if it is one of ours settled by
/// direct payment (escrow listings' buys are found in the program's state
/// by [`discover_deposits`]). Any field, any text: a malformed one is
/// simply no buy.
fn bought_listing(memo_field: Option<&str>, catalog: &dyn Catalog) -> Option<String> {
    let memos = memos_lenient(memo_field?);
    memos.iter().find_map(|m| {
        let listing_id = match MemoOp::parse(m) {
            Ok(MemoOp::Buy { listing_id, .. }) => listing_id,
            _ => crate::memo::x402_buy_listing(m)?.to_string(),
        };
        (catalog.terms(&listing_id).is_some()
            && !catalog.goods(&listing_id).is_some_and(|g| g.escrow))
        .then_some(listing_id)
    })
}

/// Records every deposit the escrow program holds for our escrow listings
/// paid at `payment_address` and not recorded yet, as a `verified` buy
/// ([`ListenDb::record_deposit`]): the program took the listed price and
/// the account names the buyer and the X25519 key to seal to, memo or
/// none. A deposit at an escrow address whose earlier deposits are all
/// answered is a new buy (a repeat buyer, or one declined before). One
/// past its answer deadline can no longer be answered: it is expired
/// instead (its share moves into the escrow for the buyer, and it stops
/// holding the listing open), never recorded again each pass.
async fn discover_deposits(
    chain: &Chain,
    db: &mut ListenDb,
    seller: &Wallet,
    catalog: &dyn Catalog,
    payment_address: &Pubkey,
    report: &mut PassReport,
) -> Result<(), PassStep> {
    let me = seller.solana_keypair().pubkey();
    // the settings and the cluster's clock, read once a pass when a
    // deposit is held
    let mut clock: Option<(crate::escrow::SettingsAccount, i64)> = None;
    let mut first_error: Option<ChainError> = None;
    for listing_id in catalog.escrow_listings(&payment_address.to_string()) {
        let Some(terms) = catalog.terms(&listing_id) else {
            continue;
        };
        let account = crate::escrow::listing_address(&me, &listing_id);
        // one listing's RPC error never stops the discovery of the others'
        // deposits (it is reported once they are all looked at)
        let held = match super::deposits::held_deposits(
            chain,
            &account,
            crate::escrow::EscrowStatus::Deposited,
        )
        .await
        {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(%listing_id, error = %e, "deposits not read; will retry");
                first_error.get_or_insert(e);
                continue;
            }
        };
        if held.is_empty() {
            continue;
        }
        let slot = crate::chain::retry::with_retry("getSlot", || chain.rpc().get_slot()).await?;
        let (settings, now) = match &clock {
            Some(c) => c.clone(),
            None => {
                let settings = crate::market::escrow_trade::read_settings(chain)
                    .await
                    .map_err(|e| PassStep::Chain(ChainError::Config(e.to_string())))?;
                clock
                    .insert((settings, chain.cluster_time().await?))
                    .clone()
            }
        };
        for h in held {
            if now >= settings.answer_deadline(h.account.deposited_at) {
                expire_deposit(chain, seller, &account, &h).await;
                continue;
            }
            let buy = VerifiedBuy {
                fee_at_release: 0,
                signature: h.escrow.to_string(),
                listing_id: listing_id.clone(),
                buyer: h.account.buyer.to_string(),
                buyer_x25519: bs58::encode(h.account.buyer_x25519).into_string(),
                paid_lamports: h.account.amount,
                price_lamports: terms.price_lamports,
                offer_id: None,
                slot,
            };
            if let Some(key) = db.record_deposit(&buy)? {
                tracing::info!(escrow = %h.escrow, %key, listing = %listing_id, buyer = %buy.buyer, "deposit held by the escrow program");
                report.seen += 1;
                report.verified += 1;
            }
        }
    }
    match first_error {
        Some(e) => Err(PassStep::Chain(e)),
        None => Ok(()),
    }
}

/// Expires a deposit left past its answer deadline (the program's
/// `expire`: its share moves into the escrow for the buyer, and it stops
/// holding the listing open, so the listing can be retired). A failure is
/// logged and tried again next pass (the deposit is still held then).
async fn expire_deposit(
    chain: &Chain,
    seller: &Wallet,
    listing: &Pubkey,
    h: &super::deposits::HeldDeposit,
) {
    let payer = seller.solana_keypair();
    let ix = crate::escrow::expire(listing, &h.account.buyer);
    match chain.send(&[ix], &[&payer]).await {
        Ok(sent) => {
            tracing::warn!(escrow = %h.escrow, signature = %sent.signature, "a deposit left past its window, expired: the buyer refunds it with its share")
        }
        Err(e) => {
            tracing::warn!(escrow = %h.escrow, error = %e, "expiring a deposit past its window failed; will retry")
        }
    }
}

/// Backfills the address's history down to its checkpoint and records
/// every buy of ours as `seen` (a failed one is rejected at once: it
/// settles nothing). The checkpoint moves to the newest final signature;
/// everything at or below it is durable in `buys`, so nothing is skipped.
/// With a [`HistoryCursor`] reading `Since`, only the history after the
/// last read is asked for (the whole not-yet-final tail otherwise).
async fn discover(
    chain: &Chain,
    db: &mut ListenDb,
    catalog: &dyn Catalog,
    payment_address: &Pubkey,
    reading: &mut Reading<'_>,
    report: &mut PassReport,
) -> Result<(), PassStep> {
    let addr = payment_address.to_string();
    let finalized = crate::chain::retry::with_retry("getSlot", || {
        chain
            .rpc()
            .get_slot_with_commitment(CommitmentConfig::finalized())
    })
    .await?;
    // a checkpoint that is not a signature (hand-edited state) is ignored:
    // the whole history is read again, and `record_seen` is idempotent
    let checkpoint = db
        .checkpoint(&addr)?
        .and_then(|(s, _)| Signature::from_str(&s).ok());
    let until = match reading {
        Reading::Since(cursor) => cursor.0.get(payment_address).copied().or(checkpoint),
        Reading::Tail | Reading::TailInto(_) => checkpoint,
    };
    let started = std::time::Instant::now();
    let mut history = chain
        .signatures_for(payment_address, until.as_ref())
        .await?;
    tracing::debug!(address = %addr, entries = history.len(), ms = started.elapsed().as_millis() as u64, "history read");
    let newest = history
        .first()
        .and_then(|s| Signature::from_str(&s.signature).ok());
    // oldest first; what this page of history shows, and the checkpoint
    // after it, in one commit (a flood of buy memos costs one sync, not one
    // each)
    history.reverse();
    db.in_one_commit(|db| {
        let mut newest_final: Option<(String, u64)> = None;
        for info in &history {
            if info.slot <= finalized {
                newest_final = Some((info.signature.clone(), info.slot));
            }
            let Some(listing_id) = bought_listing(info.memo.as_deref(), catalog) else {
                continue;
            };
            if db.record_seen(&info.signature, &listing_id, info.slot)? == super::Step::AlreadyDone
            {
                continue;
            }
            crate::fault::maybe_abort("seen");
            tracing::debug!(sig = %info.signature, slot = info.slot, "seen");
            report.seen += 1;
            // a failure the history reports is judged from the transaction
            // itself (verified next), never from this list alone
        }
        if let Some((sig, slot)) = newest_final {
            db.set_checkpoint(&addr, &sig, slot)?;
        }
        Ok(())
    })
    .map_err(PassStep::State)?;
    // the cursor moves only past what is recorded
    if let (Reading::Since(cursor) | Reading::TailInto(cursor), Some(newest)) = (reading, newest) {
        cursor.0.insert(*payment_address, newest);
    }
    Ok(())
}

/// Verifies (or rejects) up to [`VERIFY_CHUNK`] due `seen` buys, oldest
/// first, [`VERIFY_CONCURRENCY`] fetched at once; the verdicts are
/// recorded in order. Not visible yet, or an RPC error, is a retry on that
/// buy, never a verdict. Returns whether more were due than one chunk.
async fn verify_due(
    chain: &Chain,
    db: &mut ListenDb,
    seller: &Wallet,
    catalog: &dyn Catalog,
    report: &mut PassReport,
) -> Result<bool, StateError> {
    let (due, more) = next_chunk(db.due(BuyState::Seen, now_ms())?, VERIFY_CHUNK);
    let started = std::time::Instant::now();
    let verdicts: Vec<_> = futures_util::stream::iter(due.iter())
        .map(|row| verdict_of(chain, seller, catalog, row))
        .buffered(VERIFY_CONCURRENCY)
        .collect()
        .await;
    tracing::debug!(
        buys = due.len(),
        ms = started.elapsed().as_millis() as u64,
        "verified a chunk"
    );
    // the chunk's verdicts in one commit (a crash before it re-verifies them)
    db.in_one_commit(|db| record_verdicts(db, &due, verdicts, report))?;
    Ok(more)
}

/// The next chunk of at most `size` of `due` (oldest first), and whether
/// more are due: half the oldest, half the newest, so a backlog (a flood
/// of junk buys) drains oldest first while a buy that just came is judged
/// within a chunk, not behind the whole backlog.
fn next_chunk<T>(mut due: Vec<T>, size: usize) -> (Vec<T>, bool) {
    if due.len() <= size {
        return (due, false);
    }
    let newest = due.split_off(due.len() - size / 2);
    due.truncate(size - newest.len());
    due.extend(newest);
    (due, true)
}

/// Records each buy's verdict, or its retry.
fn record_verdicts(
    db: &mut ListenDb,
    due: &[BuyRow],
    verdicts: Vec<Result<Result<VerifiedBuy, Rejection>, String>>,
    report: &mut PassReport,
) -> Result<(), StateError> {
    for (row, verdict) in due.iter().zip(verdicts) {
        match verdict {
            Ok(Ok(buy)) => {
                db.mark_verified(&buy)?;
                crate::fault::maybe_abort("verified");
                report.verified += 1;
            }
            Ok(Err(why)) => {
                tracing::info!(signature = %row.signature, reason = %why, "buy rejected");
                db.mark_rejected(&row.signature, &why)?;
                report.rejected += 1;
            }
            Err(e) => retry_later(db, &row.signature, &e, "buy not verified yet", report)?,
        }
    }
    Ok(())
}

/// The verdict on one `seen` buy, or why none can be given yet.
async fn verdict_of(
    chain: &Chain,
    seller: &Wallet,
    catalog: &dyn Catalog,
    row: &BuyRow,
) -> Result<Result<VerifiedBuy, Rejection>, String> {
    let terms = catalog.terms(&row.listing_id).ok_or_else(|| {
        format!(
            "listing {} is not in the catalog (its key is missing?)",
            row.listing_id
        )
    })?;
    let sig = Signature::from_str(&row.signature)
        .map_err(|_| format!("{} is not a signature", row.signature))?;
    let tx = chain
        .transaction(&sig)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "transaction not visible yet at the commitment".to_string())?;
    if !tx.succeeded {
        return Ok(Err(Rejection::TxFailed));
    }
    // a node that has not (yet) got the block's time: ask again later, a
    // paid buy is never rejected for what the RPC does not know
    if tx.block_time.is_none() {
        return Err("the buy's block time is not known to the RPC node yet".into());
    }
    if !catalog.goods(&row.listing_id).is_some_and(|g| g.escrow) {
        let offers = tx
            .fee_payer()
            .map(|b| catalog.negotiated(&row.listing_id, b))
            .unwrap_or_default();
        return Ok(verify_buy(&tx, &terms, &offers));
    }
    let account =
        crate::escrow::listing_address(&seller.solana_keypair().pubkey(), &row.listing_id);
    let escrow = match tx.fee_payer().map(Pubkey::from_str) {
        Some(Ok(buyer)) => read_escrow(chain, &account, &buyer)
            .await
            .map_err(|e| e.to_string())?,
        _ => None,
    };
    // the program holds every deposit to the listed price: offers do not apply
    Ok(verify_escrow_buy(
        &tx,
        &terms,
        &account.to_string(),
        escrow.as_ref(),
    ))
}

/// Uploads the envelope of every due `verified` buy, up to
/// [`UPLOAD_CONCURRENCY`] at once, recording each as it comes back: each
/// is durable before its release.
async fn upload_due(
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    catalog: &dyn Catalog,
    report: &mut PassReport,
) -> Result<(), StateError> {
    // below-cost buys share an hourly budget; the others never wait on it
    let mut below = match catalog.below_cost() {
        Some(b) => {
            let hour_ago = crate::clock::python_isoformat(
                time::OffsetDateTime::now_utc() - time::Duration::hours(1),
            );
            let used = db.below_cost_released_since(b.floor_lamports, &hour_ago)?;
            Some((
                db.below_cost_verified(b.floor_lamports)?,
                b.per_hour.saturating_sub(used),
            ))
        }
        None => None,
    };
    // only a direct buy of a listing in SOL is ever held: an escrow deposit
    // left unanswered past its window is refunded with a share of the
    // stake, and a token's base units are not the floor's lamports
    let holdable = |listing_id: &str| {
        catalog.goods(listing_id).is_some_and(|g| !g.escrow)
            && catalog
                .terms(listing_id)
                .is_some_and(|t| t.currency == crate::settle::Currency::Sol)
    };
    let mut due = Vec::new();
    for row in db.due(BuyState::Verified, now_ms())? {
        if let Some((cheap, left)) = below.as_mut() {
            if cheap.contains(&row.signature) && holdable(&row.listing_id) {
                if *left == 0 {
                    report.deferred += 1;
                    continue;
                }
                *left -= 1;
            }
        }
        due.push(row);
    }
    let started = std::time::Instant::now();
    let prepared: Vec<(String, Result<super::release::Prepared, ReleaseError>)> =
        futures_util::stream::iter(due.iter())
            .map(|row| async move {
                let result = match catalog.goods(&row.listing_id) {
                    Some(goods) => prepare_envelope(seller, uploader, row, &goods).await,
                    None => Err(StateError::Unknown(format!("goods of {}", row.listing_id)).into()),
                };
                (row.signature.clone(), result)
            })
            .buffer_unordered(UPLOAD_CONCURRENCY)
            .collect()
            .await;
    if !prepared.is_empty() {
        tracing::debug!(
            buys = prepared.len(),
            ms = started.elapsed().as_millis() as u64,
            "envelopes stored"
        );
    }
    for (signature, result) in prepared {
        let recorded = result.and_then(|p| {
            db.mark_envelope_uploaded(&signature, &p.envelope_id, &p.mint, p.standard)
                .map_err(ReleaseError::from)
        });
        match recorded {
            Ok(_) => crate::fault::maybe_abort("envelope_uploaded"),
            Err(ReleaseError::State(e @ StateError::Sql(_))) => return Err(e),
            Err(e) => retry_later(
                db,
                &signature,
                &e.to_string(),
                "envelope upload failed",
                report,
            )?,
        }
    }
    Ok(())
}

/// One release's outcome: the buy's signature and the release signature
/// (or why not).
type Outcome = (String, Result<String, ReleaseError>);

/// The releases in flight (at most [`RELEASE_CONCURRENCY`] buys: a buy
/// with a mint of its own alone, those of one listing whose receipts the
/// chain would not refuse to repeat as many a transaction as fit, never
/// one buy in two transactions at once), and the outcomes landed but
/// not yet recorded. A pass launches them; they may land during a later
/// pass or while the daemon waits (each future owns its goods, so it
/// outlives the catalog it was launched from).
#[derive(Default)]
pub struct Releases<'a> {
    /// Where releases the chain would not refuse to repeat are kept
    /// before they are sent (opened beside the state at the first launch).
    journal: Option<std::rc::Rc<super::journal::SendJournal>>,
    /// Each sends one transaction: one buy's release, or several of one
    /// listing's sharing it.
    flying: futures_util::stream::FuturesUnordered<
        futures_util::future::LocalBoxFuture<'a, Vec<Outcome>>,
    >,
    in_flight: std::collections::HashSet<String>,
    landed: Vec<Outcome>,
    /// The last launch left due releases behind (all slots were taken).
    more_due: bool,
}

impl<'a> Releases<'a> {
    /// Sends the release of every due `envelope_uploaded` buy not in
    /// flight yet, up to [`RELEASE_CONCURRENCY`] in flight.
    pub fn launch(
        &mut self,
        chain: &'a Chain,
        db: &ListenDb,
        seller: &'a Wallet,
        catalog: &dyn Catalog,
    ) -> Result<(), StateError> {
        if self.in_flight.len() >= RELEASE_CONCURRENCY {
            self.more_due = true;
            return Ok(());
        }
        self.more_due = false;
        let journal = match &self.journal {
            Some(j) => j.clone(),
            None => self
                .journal
                .insert(std::rc::Rc::new(super::journal::SendJournal::beside(db)?))
                .clone(),
        };
        // releases that may share a transaction, by listing and receipt
        type Group = (Receipt, super::release::OwnedGoods, Vec<BuyRow>);
        let mut shared: std::collections::BTreeMap<(String, String), Group> =
            std::collections::BTreeMap::new();
        for row in db.due(BuyState::EnvelopeUploaded, now_ms())? {
            if self.in_flight.len() >= RELEASE_CONCURRENCY {
                self.more_due = true;
                break;
            }
            if !self.in_flight.insert(row.signature.clone()) {
                continue;
            }
            let goods = catalog.goods(&row.listing_id);
            // a journal that cannot be read now only keeps the buy alone
            // (its own path reads the journal again before sending)
            let receipt = goods.as_ref().and_then(|g| {
                shared_receipt(seller, &journal, &row, g).unwrap_or_else(|e| {
                    tracing::warn!(buy = %row.signature, error = %e, "journal unread; released alone");
                    None
                })
            });
            if let (Some(receipt), Some(g)) = (receipt, &goods) {
                let key = (row.listing_id.clone(), receipt.address().to_string());
                shared
                    .entry(key)
                    .or_insert_with(|| (receipt, g.to_owned_goods(), Vec::new()))
                    .2
                    .push(row);
                continue;
            }
            let goods = goods.map(|g| g.to_owned_goods());
            let span = tracing::debug_span!("release", buy = %row.signature);
            let journal = journal.clone();
            self.flying.push(Box::pin(tracing::Instrument::instrument(
                async move {
                    let result = match goods {
                        Some(goods) => {
                            land_release(chain, seller, &journal, &row, &goods.goods()).await
                        }
                        None => {
                            Err(StateError::Unknown(format!("goods of {}", row.listing_id)).into())
                        }
                    };
                    vec![(row.signature, result)]
                },
                span,
            )));
        }
        let me = seller.solana_keypair().pubkey();
        let tables = chain.lookup_tables();
        for ((listing_id, _), (receipt, goods, rows)) in shared {
            let per_tx = releases_per_transaction(&me, &receipt, &listing_id, &tables);
            for rows in rows.chunks(per_tx) {
                let rows = rows.to_vec();
                let (journal, receipt, goods) = (journal.clone(), receipt.clone(), goods.clone());
                let span =
                    tracing::debug_span!("release", buys = rows.len(), listing = %listing_id);
                self.flying.push(Box::pin(tracing::Instrument::instrument(
                    async move {
                        let result = land_shared_release(
                            chain,
                            seller,
                            &journal,
                            &rows,
                            &goods.goods(),
                            &receipt,
                        )
                        .await;
                        // one transaction's outcome is every buy's it carried
                        let shared = result.map_err(|e| e.to_string());
                        rows.into_iter()
                            .map(|row| {
                                let each = shared.clone().map_err(ReleaseError::Shared);
                                (row.signature, each)
                            })
                            .collect()
                    },
                    span,
                )));
            }
        }
        Ok(())
    }

    /// Records every outcome landed so far.
    pub fn record(&mut self, db: &mut ListenDb, report: &mut PassReport) -> Result<(), StateError> {
        for (signature, result) in std::mem::take(&mut self.landed) {
            self.in_flight.remove(&signature);
            match result {
                Ok(release_sig) => {
                    db.mark_released(&signature, &release_sig)?;
                    report.released += 1;
                }
                Err(ReleaseError::Abandoned(why)) => {
                    tracing::info!(%signature, reason = %why, "nothing to release");
                    db.mark_abandoned(&signature, &why)?;
                    report.rejected += 1;
                }
                Err(e) => retry_later(db, &signature, &e.to_string(), "release failed", report)?,
            }
        }
        Ok(())
    }

    /// Waits for the next release to land and records it (sending more if
    /// the last launch left some behind); pending forever when none is in
    /// flight, so a caller can select on it beside its other wake-ups.
    pub async fn land_one(
        &mut self,
        (chain, seller, catalog): (&'a Chain, &'a Wallet, &dyn Catalog),
        db: &mut ListenDb,
        report: &mut PassReport,
    ) -> Result<(), StateError> {
        match self.flying.next().await {
            Some(outcomes) => self.landed.extend(outcomes),
            None => std::future::pending().await,
        }
        self.record(db, report)?;
        if self.more_due {
            self.launch(chain, db, seller, catalog)?;
        }
        Ok(())
    }

    /// Lands every due release (sending more as others land, while the
    /// last launch left some behind) and waits for all of them, recording
    /// each as it lands.
    pub async fn finish(
        &mut self,
        (chain, seller, catalog): (&'a Chain, &'a Wallet, &dyn Catalog),
        db: &mut ListenDb,
        report: &mut PassReport,
    ) -> Result<(), StateError> {
        self.launch(chain, db, seller, catalog)?;
        while !self.flying.is_empty() {
            self.land_one((chain, seller, catalog), db, report).await?;
        }
        Ok(())
    }
}

/// Runs `step` while driving the releases in flight (their outcomes kept
/// for [`Releases::record`]: `step` holds the state database).
async fn alongside<T>(
    step: impl std::future::Future<Output = T>,
    releases: &mut Releases<'_>,
) -> T {
    tokio::pin!(step);
    loop {
        tokio::select! {
            biased;
            done = &mut step => return done,
            Some(outcomes) = releases.flying.next(), if !releases.flying.is_empty() => {
                releases.landed.extend(outcomes);
            }
        }
    }
}

/// Records a transient failure of one buy's step (retried after its
/// backoff) and counts it in the pass.
fn retry_later(
    db: &mut ListenDb,
    signature: &str,
    error: &str,
    what: &str,
    report: &mut PassReport,
) -> Result<(), StateError> {
    let attempts = db.note_retry(signature, error)?;
    tracing::warn!(%signature, attempts, %error, "{what}; will retry");
    report.failed += 1;
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
        Err(why @ (EscrowReadError::Plan(_) | EscrowReadError::Mint(_))) => {
            tracing::warn!(%address, error = %why, "not an escrow account");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod chunk_tests {
    use super::next_chunk;

    #[test]
    fn a_backlog_is_judged_half_oldest_half_newest() {
        assert_eq!(
            next_chunk((0..5).collect(), 8),
            (vec![0, 1, 2, 3, 4], false)
        );
        assert_eq!(next_chunk((0..8).collect(), 8), ((0..8).collect(), false));
        // 2,000 junk buys then 3 honest ones: the honest ones are in the
        // first chunk, beside the oldest junk
        let (chunk, more) = next_chunk((0..2003).collect::<Vec<u32>>(), 64);
        assert!(more);
        assert_eq!(chunk.len(), 64);
        assert_eq!(&chunk[..32], &(0..32).collect::<Vec<_>>()[..]);
        assert_eq!(&chunk[32..], &(1971..2003).collect::<Vec<_>>()[..]);
        // an odd size keeps its length
        let (chunk, _) = next_chunk((0..10).collect::<Vec<u32>>(), 5);
        assert_eq!(chunk, vec![0, 1, 2, 8, 9]);
    }
}
