//! The buyer's commands: `buy` (plan, pay under the spend policy, wait
//! for the release, import), `fetch` (finish a paid buy), `quote`,
//! `budget` and `refund` (an escrow deposit never released).

use super::super::storage::source;
use super::{buy_failure, negotiate_failure, CliResult, Context, Failure};
use crate::args::{BudgetArgs, BuyArgs, FetchArgs, QuoteArgs, ReceiveOpts, RefundArgs};
use node::market::escrow_trade::Unproven;
use serde_json::json;
use std::time::Duration;

/// `marketplace buy`: pay for a listing, wait for its release, import.
pub(super) fn buy(a: BuyArgs, ctx: &Context) -> CliResult<()> {
    let BuyArgs {
        listing,
        offer,
        counter,
        escrow,
        allow_unproven_blob,
        receive,
    } = a;
    let how = match offer {
        Some(o) => Payment::Negotiated { offer: o, counter },
        None if escrow => Payment::Escrow,
        None => Payment::Listed,
    };
    buy_or_fetch(ctx, &listing, how, unproven(allow_unproven_blob), &receive)
}

/// `marketplace fetch`: finish a paid buy.
pub(super) fn fetch(a: FetchArgs, ctx: &Context) -> CliResult<()> {
    buy_or_fetch(
        ctx,
        &a.listing,
        Payment::Already(a.buy_signature),
        Unproven::Refuse,
        &a.receive,
    )
}

/// What `--allow-unproven-blob` asks.
fn unproven(allow: bool) -> Unproven {
    match allow {
        true => Unproven::Allow,
        false => Unproven::Refuse,
    }
}

/// `marketplace quote`: what a buy would cost, and the spend policy's verdict.
pub(super) fn quote(a: QuoteArgs, ctx: &Context) -> CliResult<()> {
    let QuoteArgs {
        listing,
        offer,
        counter,
        allow_unproven_blob,
        storage,
        indexer,
    } = a;
    let how = match offer {
        Some(offer) => Payment::Negotiated { offer, counter },
        None => Payment::Listed,
    };
    let allow = unproven(allow_unproven_blob);
    quote_payment(ctx, &listing, how, allow, &storage, &indexer)?;
    Ok(())
}

/// `marketplace refund`: close this wallet's escrow and take what it holds.
pub(super) fn refund(a: RefundArgs, ctx: &Context) -> CliResult<()> {
    let (wallet, chain, l) = buyer_and_listing(ctx, &a.storage, &a.indexer, &a.listing)?;
    let sig = ctx
        .block_on(node::market::buy::refund_escrow(&chain, &wallet, &l))
        .map_err(buy_failure)?;
    ctx.record_fee(&chain, ("refund", &l.listing_id), &sig);
    let v = json!({"ok": true, "listing_id": l.listing_id, "signature": sig});
    ctx.emit(&v, || {
        format!(
            "closed your escrow on {} and took back what it held (with a share of the seller's stake when the key never came)\n  tx           {sig}",
            l.listing_id
        )
    });
    Ok(())
}

/// `marketplace dispute`: send the fraud proof of a misdelivery.
pub(super) fn dispute(a: RefundArgs, ctx: &Context) -> CliResult<()> {
    let (wallet, chain, l) = buyer_and_listing(ctx, &a.storage, &a.indexer, &a.listing)?;
    let src = source(ctx, &a.storage)?;
    let sig = ctx
        .block_on(node::market::buy::dispute_escrow(&chain, &src, &wallet, &l))
        .map_err(buy_failure)?;
    ctx.record_fee(&chain, ("dispute", &l.listing_id), &sig);
    let v = json!({"ok": true, "listing_id": l.listing_id, "signature": sig});
    ctx.emit(&v, || {
        format!(
            "fraud proven on {}: your deposit is back with a share of the seller's stake\n  tx           {sig}",
            l.listing_id
        )
    });
    Ok(())
}

/// `marketplace budget`.
/// With `--set-*`, first writes those limits into the policy file (0600;
/// the other limits kept): the operator's way to configure it, never a tool's.
pub(super) fn budget(a: BudgetArgs, ctx: &Context) -> CliResult<()> {
    let setting = a.set_max_per_buy_lamports.is_some()
        || a.set_budget_24h_lamports.is_some()
        || a.set_priority_fee_max_lamports.is_some()
        || !a.set_sellers.is_empty();
    if setting {
        for s in &a.set_sellers {
            if node::crypto::b58_array::<32>(s).is_none() {
                return Err(Failure::bad_input(anyhow::anyhow!(
                    "--set-seller {s} is not a base58 public key"
                )));
            }
        }
        let path = node::spend::policy_path(&ctx.wallet_path);
        let mut policy = node::spend::SpendPolicy::load(&path)
            .map_err(Failure::bad_input)?
            .unwrap_or_default();
        if let Some(m) = a.set_max_per_buy_lamports {
            policy.max_per_buy_lamports = Some(m);
        }
        if let Some(b) = a.set_budget_24h_lamports {
            policy.budget_24h_lamports = Some(b);
        }
        if let Some(cap) = a.set_priority_fee_max_lamports {
            policy.priority_fee_max_lamports = Some(cap);
        }
        if !a.set_sellers.is_empty() {
            policy.sellers = Some(a.set_sellers.clone());
        }
        policy.write(&path)?;
    }
    show_budget(ctx, a.limit)
}

/// `buy` (pay, then receive) or `fetch` (receive for an earlier payment):
/// wait for the release, decrypt, check the hash, import.
/// How `buy_or_fetch` pays.
enum Payment {
    /// The list price.
    Listed,
    /// An accepted offer's price (or its counter's).
    Negotiated {
        offer: String,
        counter: Option<String>,
    },
    /// Into the escrow program (`--escrow`: the listing must say escrow).
    Escrow,
    /// Already paid (`fetch`).
    Already(String),
}

/// The wallet, the chain and the verified listing manifest `listing`
/// names (a listing id or a manifest id; a bad or unreadable manifest is
/// bad input).
pub(super) fn buyer_and_listing(
    ctx: &Context,
    storage: &crate::args::StorageOpts,
    indexer: &crate::args::IndexerOpts,
    listing: &str,
) -> CliResult<(
    node::wallet::Wallet,
    node::chain::Chain,
    node::market::manifest::Listing,
)> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let l = super::named::listing(ctx, &source(ctx, storage)?, indexer, listing)?;
    Ok((wallet, chain, l))
}

/// Checks and prices a buy of `l` the way `how` pays it (finding the
/// seller's counter to an accepted offer), sending nothing.
fn plan_payment(
    ctx: &Context,
    chain: &node::chain::Chain,
    wallet: &node::wallet::Wallet,
    src: &node::arweave::Source,
    l: &node::market::manifest::Listing,
    how: &Payment,
    unproven: Unproven,
) -> CliResult<node::market::buy::BuyPlan> {
    use node::market::buy::{plan_buy_with, Terms};
    // a refusal of the listing itself (cancelled, expired, not accepted) is
    // a refusal (exit 1); an escrow plan the flags got wrong is bad input
    let refused = |e: node::market::buy::BuyError| match l.escrow_program {
        Some(_) => buy_failure(e),
        None => Failure::from(e),
    };
    match how {
        Payment::Already(_) => unreachable!("a finished payment is not planned"),
        Payment::Escrow if l.escrow_program.is_none() => Err(Failure::bad_input(
            node::market::escrow_trade::EscrowPlanError::NotEscrow(l.listing_id.clone()),
        )),
        Payment::Escrow | Payment::Listed => ctx
            .block_on(plan_buy_with(
                chain,
                src,
                wallet,
                l,
                Terms::Listed,
                unproven,
            ))
            .map_err(refused),
        Payment::Negotiated { offer, counter } => {
            let o = ctx
                .block_on(node::market::negotiate::fetch_offer(src, offer, false))
                .map_err(negotiate_failure)?;
            // the buyer's client reads what the seller's accept bound
            // itself (a counter by either party); a `--counter` naming
            // another one is refused, never paid
            let bound = ctx
                .block_on(node::market::negotiate::find_counter(chain, l, &o))
                .map_err(negotiate_failure)?;
            let bound_item = bound.counter.map(|c| c.item);
            let counter = match counter {
                Some(id) if bound.accepted && bound_item.as_ref() != Some(id) => {
                    return Err(Failure::bad_input(anyhow::anyhow!(
                        "the seller's accept of {} bound {}, not counter {id}; buy with --offer alone",
                        o.offer_id,
                        bound_item.as_deref().map_or("the offer's own terms".to_string(), |b| format!("counter {b}")),
                    )))
                }
                Some(id) => Some(id.clone()),
                None => bound_item,
            };
            let c = match &counter {
                Some(id) => Some(
                    ctx.block_on(node::market::negotiate::fetch_offer(src, id, true))
                        .map_err(negotiate_failure)?,
                ),
                None => None,
            };
            ctx.block_on(plan_buy_with(
                chain,
                src,
                wallet,
                l,
                Terms::Negotiated {
                    offer: &o,
                    counter: c.as_ref(),
                },
                unproven,
            ))
            .map_err(refused)
        }
    }
}

/// `marketplace quote`: what a buy would cost and whether the spend policy
/// allows it now; sends nothing, records nothing.
fn quote_payment(
    ctx: &Context,
    listing: &str,
    how: Payment,
    unproven: Unproven,
    storage: &crate::args::StorageOpts,
    indexer: &crate::args::IndexerOpts,
) -> CliResult<()> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let src = source(ctx, storage)?;
    let l = super::named::listing(ctx, &src, indexer, listing)?;
    let plan = plan_payment(ctx, &chain, &wallet, &src, &l, &how, unproven)?;
    let q = &plan.quote;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let (policy, verdict) = match ctx.spend_policy()? {
        None => (None, Ok(None)),
        Some(p) => {
            let verdict = match ctx.spend_ledger()?.check(&p, &q.spend(), now) {
                Ok(standing) => Ok(Some(standing)),
                Err(node::spend::SpendError::Refused(r)) => Err(r),
                Err(e) => return Err(e.into()),
            };
            (Some(p), verdict)
        }
    };
    let allowed = verdict.is_ok();
    let v = json!({
        "ok": true, "quote": q, "allowed": allowed, "policy": policy,
        "standing": verdict.as_ref().ok(), "refusal": verdict.as_ref().err(),
        "refusal_text": verdict.as_ref().err().map(ToString::to_string),
    });
    ctx.emit(&v, || {
        let head = q.summary();
        match &verdict {
            Ok(None) => format!(
                "{head}
  no spend policy for this wallet"
            ),
            Ok(Some(s)) => format!(
                "{head}
  allowed by the spend policy ({} spent in the last 24 h{})",
                s.spent_24h_lamports,
                s.remaining_24h_lamports
                    .map_or(String::new(), |r| format!(", {r} left"))
            ),
            Err(r) => format!(
                "{head}
  REFUSED by the spend policy: {r}"
            ),
        }
    });
    Ok(())
}

/// `marketplace budget`: this wallet's spend policy, what the last 24 h
/// spent, and the newest ledger rows.
fn show_budget(ctx: &Context, limit: usize) -> CliResult<()> {
    let policy = ctx.spend_policy()?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let ledger = ctx.spend_ledger()?;
    let standing = ledger.standing(&policy.clone().unwrap_or_default(), now)?;
    let rows = ledger.recent(limit)?;
    let v = json!({"ok": true, "policy": policy, "policy_file": node::spend::policy_path(&ctx.wallet_path),
        "standing": standing, "spends": rows});
    ctx.emit(&v, || {
        let mut out = match &policy {
            None => format!(
                "no spend policy ({} does not exist): buys are recorded, not limited",
                node::spend::policy_path(&ctx.wallet_path).display()
            ),
            Some(p) => format!(
                "spend policy: per buy {}, 24 h budget {}, sellers {}, priority fee at most {} a transaction",
                p.max_per_buy_lamports
                    .map_or("unlimited".into(), |m| format!("{m} lamports")),
                p.budget_24h_lamports
                    .map_or("unlimited".into(), |m| format!("{m} lamports")),
                p.sellers.as_ref().map_or("any".into(), |s| s.join(", ")),
                p.priority_fee_max_lamports
                    .map_or("--priority-fee-cap".into(), |m| format!("{m} lamports"))
            ),
        };
        out.push_str(&format!(
            "
  spent or reserved in the last 24 h: {} lamports{}",
            standing.spent_24h_lamports,
            standing
                .remaining_24h_lamports
                .map_or(String::new(), |r| format!(" ({r} left)"))
        ));
        for r in &rows {
            out.push_str(&format!(
                "
  #{} {} {} {} lamports {} {}",
                r.id,
                r.kind,
                r.listing_id,
                r.lamports,
                r.state,
                r.signature.as_deref().unwrap_or("")
            ));
        }
        out
    });
    Ok(())
}

fn buy_or_fetch(
    ctx: &Context,
    listing: &str,
    how: Payment,
    unproven: Unproven,
    receive: &ReceiveOpts,
) -> CliResult<()> {
    let timeout = receive.timeout;
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let src = source(ctx, &receive.storage)?;
    let mut store;
    let target = match receive.into_brainctl_db.as_deref() {
        Some(path) => node::market::buy::ImportTarget::BrainctlDb(path),
        None => {
            store = ctx.store()?;
            node::market::buy::ImportTarget::Store(&mut store)
        }
    };
    let l = super::named::listing(ctx, &src, &receive.indexer, listing)?;
    // an escrow buy is kept pending (with the blob checked before paying)
    // from the moment its deposit lands until it ends
    let pending = match l.escrow_program {
        Some(_) => Some(std::sync::Mutex::new(ctx.pending_escrows()?)),
        None => None,
    };
    let mut kept_blob: Option<Vec<u8>> = None;
    let sig = match how {
        Payment::Already(sig) => {
            if let Some(p) = &pending {
                let p = p.lock().unwrap_or_else(|e| e.into_inner());
                kept_blob = p.get(&sig).map_err(anyhow::Error::from)?.map(|b| b.blob);
                if kept_blob.is_none() {
                    // a buy this client never recorded (another machine's,
                    // an older brainctl's): kept from now on, with the blob
                    // checked against its commitments
                    let blob = ctx
                        .block_on(node::market::buy::fetch_committed_blob(&src, &l))
                        .map_err(buy_failure)?;
                    let (escrow, target) = pending_row(ctx, &wallet, &l, receive)?;
                    p.record(&sig, &escrow, &l, &blob, &target, unix_now())
                        .map_err(anyhow::Error::from)?;
                    kept_blob = Some(blob);
                }
            }
            sig
        }
        how => {
            let plan = plan_payment(ctx, &chain, &wallet, &src, &l, &how, unproven)?;
            let q = &plan.quote;
            if !ctx.json {
                let price = match &q.token {
                    Some(t) => format!("{} base units of {}", t.price_units, t.mint),
                    None => format!("{} lamports", q.price_lamports),
                };
                eprintln!(
                    "buying {} ({}: {price} {}, {} lamports in all with fees{})",
                    l.listing_id,
                    q.terms,
                    if q.settles == "escrow" {
                        "held by the escrow program: the seller is paid only by revealing your key"
                            .to_string()
                    } else {
                        format!("to {}", l.payment_address)
                    },
                    q.total_lamports,
                    if q.escrow_rent_lamports > 0 {
                        " and the escrow account's rent"
                    } else {
                        ""
                    },
                );
            }
            let policy = ctx.spend_policy()?;
            let mut ledger = match &policy {
                Some(_) => Some(ctx.spend_ledger()?),
                None => None,
            };
            let guard = match (&policy, ledger.as_mut()) {
                (Some(policy), Some(ledger)) => {
                    Some(node::market::buy::SpendGuard { policy, ledger })
                }
                _ => None,
            };
            // an escrow deposit is kept pending from the moment it is
            // signed, before it is sent: a crash or a lost confirmation
            // after it lands leaves a row `watch` finishes
            let signed: std::sync::Mutex<Vec<String>> = Default::default();
            let keep = match (&pending, &plan.checked_blob) {
                (Some(p), Some(blob)) => Some((p, blob, pending_row(ctx, &wallet, &l, receive)?)),
                _ => None,
            };
            let record = |sig: &node::chain::Signature, last_valid: u64, _wire: &[u8]| {
                let Some((p, blob, (escrow, target))) = &keep else {
                    return Ok(());
                };
                p.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .record_signed(
                        &sig.to_string(),
                        escrow,
                        &l,
                        blob,
                        target,
                        last_valid,
                        unix_now(),
                    )
                    .map_err(|e| {
                        node::chain::ChainError::Config(format!("the buy was not sent: {e}"))
                    })?;
                signed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(sig.to_string());
                Ok(())
            };
            let paid = ctx.block_on(node::market::buy::execute_recorded(
                &chain,
                &wallet,
                &plan,
                guard,
                Some(&record),
            ));
            // every other signed attempt was rebuilt because its blockhash
            // expired without it: it never lands
            let attempts = signed.into_inner().unwrap_or_else(|e| e.into_inner());
            if let Some(p) = &pending {
                let p = p.lock().unwrap_or_else(|e| e.into_inner());
                let landed = paid.as_ref().ok();
                for attempt in attempts.iter().filter(|a| Some(*a) != landed) {
                    let never = match &paid {
                        Ok(sig) => Some(format!("never landed: sent again as {sig}")),
                        Err(e) if never_landed(e) => Some(format!("no deposit: {e}")),
                        Err(_) => None,
                    };
                    if let Some(why) = never {
                        p.finish(
                            attempt,
                            node::market::pending::State::Closed,
                            &why,
                            unix_now(),
                        )
                        .map_err(anyhow::Error::from)?;
                    }
                }
                if let Some(sig) = landed {
                    p.mark_landed(sig, unix_now())
                        .map_err(anyhow::Error::from)?;
                }
            }
            let sig = paid.map_err(buy_failure)?;
            if !ctx.json {
                eprintln!("paid: {sig}");
            }
            kept_blob = plan.checked_blob;
            sig
        }
    };
    if !ctx.json {
        eprintln!("waiting for the seller's release (up to {timeout} s)...");
    }
    let wait = Duration::from_secs(timeout);
    let spinner = ctx.spinner(format!(
        "waiting for the seller's release of {}",
        l.listing_id
    ));
    let report = ctx.block_on(node::market::buy::fetch_and_import(
        &chain,
        &wallet,
        &src,
        &l,
        &sig,
        target,
        kept_blob.as_deref(),
        wait,
        |elapsed| {
            spinner.say(format!(
                "waiting for the seller's release ({}s of {timeout}s)",
                elapsed.as_secs()
            ))
        },
    ));
    drop(spinner);
    let report = match (report, &pending) {
        (report, None) => report?,
        (Err(node::market::buy::BuyError::Pending(_)), Some(_)) => {
            let v = json!({"ok": true, "status": "pending", "listing_id": l.listing_id,
                "buy_signature": sig, "resume": "brainctl marketplace watch"});
            ctx.emit(&v, || {
                format!(
                    "no answer from the seller yet: your deposit on {} is held by the escrow program and this buy is kept pending\n  buy          {sig}\n  `brainctl marketplace watch` finishes it: imports the release, proves a lie, or refunds a missed window",
                    l.listing_id
                )
            });
            return Ok(());
        }
        (report, Some(p)) => {
            let p = p.lock().unwrap_or_else(|e| e.into_inner());
            use node::market::buy::BuyError;
            use node::market::escrow_trade::{EscrowPlanError, EscrowReadError};
            use node::market::pending::State;
            let ended = match &report {
                Ok(r) => Some((
                    State::Imported,
                    serde_json::to_string(r).unwrap_or_default(),
                )),
                Err(BuyError::Escrow(EscrowReadError::Plan(EscrowPlanError::Disputed {
                    signature,
                    ..
                }))) => Some((State::Disputed, signature.clone())),
                Err(BuyError::Refunded(signature)) => Some((State::Refunded, signature.clone())),
                Err(BuyError::Closed(why)) => Some((State::Closed, why.clone())),
                Err(_) => None,
            };
            if let Some((state, detail)) = ended {
                p.finish(&sig, state, &detail, unix_now())
                    .map_err(anyhow::Error::from)?;
            }
            report.map_err(buy_failure)?
        }
    };
    let v = json!({"ok": true, "listing_id": l.listing_id, "buy_signature": sig, "import": report});
    ctx.emit(&v, || match &report {
        node::market::buy::Imported::Store(report) => format!(
            "released and imported {} memories into {}\n  bundle hash {} (matches the seller's signed listing)",
            report.outcome.ids.len(),
            report.outcome.scope,
            report.bundle_hash
        ),
        node::market::buy::Imported::BrainctlDb(r) => format!(
            "released; {} memories written into {} (scope {}, agent {}; {} already there)\n  bundle hash {} (matches the seller's signed listing)",
            r.inserted.len(),
            r.path,
            r.scope,
            r.agent,
            r.already_present,
            l.bundle_hash
        ),
    });
    Ok(())
}

/// The escrow account and import target a pending escrow buy of `l` by
/// this wallet is kept under.
fn pending_row(
    ctx: &Context,
    wallet: &node::wallet::Wallet,
    l: &node::market::manifest::Listing,
    receive: &ReceiveOpts,
) -> CliResult<(String, node::market::pending::Target)> {
    let me = node::chain::Signer::pubkey(&wallet.solana_keypair());
    let seller: node::chain::Pubkey = l.seller_pubkey.parse().map_err(|_| {
        Failure::bad_input(anyhow::anyhow!("the listing's seller_pubkey is not a key"))
    })?;
    let escrow =
        node::escrow::escrow_address(&node::escrow::listing_address(&seller, &l.listing_id), &me);
    let target = match receive.into_brainctl_db.as_deref() {
        Some(path) => node::market::pending::Target::BrainctlDb(path.to_path_buf()),
        None => node::market::pending::Target::Store(ctx.db_path.clone()),
    };
    Ok((escrow.to_string(), target))
}

/// Whether a failed buy provably never landed (refused in preflight, its
/// blockhash expired without it, or landed failed: no deposit either way).
fn never_landed(e: &node::market::buy::BuyError) -> bool {
    match e {
        node::market::buy::BuyError::Chain(c) => {
            matches!(
                c,
                node::chain::ChainError::Expired | node::chain::ChainError::TxFailed { .. }
            ) || c.is_preflight_refusal()
        }
        _ => false,
    }
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}
