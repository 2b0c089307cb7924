//! `brainctl marketplace list|buy|listen`.

use super::files::read_capped;
use super::storage::{source, uploader};
use crate::args::{MarketCmd, SellerState, Terms};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::{anyhow, Context as _};
use node::keys::KeyDir;
use node::listen::ListenDb;
use node::market::list::{list_bundle, ListOptions};
use node::market::negotiate::OfferTerms;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

fn home_path(rel: &str) -> CliResult<PathBuf> {
    Ok(
        PathBuf::from(std::env::var_os("HOME").context("no HOME directory")?)
            .join(".brainctl")
            .join(rel),
    )
}

fn seller_db_path(s: &SellerState) -> CliResult<PathBuf> {
    match &s.state {
        Some(p) => Ok(p.clone()),
        None => home_path("listen.db"),
    }
}

fn seller_keys(s: &SellerState) -> CliResult<KeyDir> {
    Ok(KeyDir::new(match &s.keys_dir {
        Some(d) => d.clone(),
        None => home_path("keys")?,
    }))
}

/// The seller's state for a command: opened beside a running daemon (no
/// lock; SQLite WAL with short transactions keeps both consistent).
fn seller_state(s: &SellerState) -> CliResult<(ListenDb, KeyDir)> {
    Ok((ListenDb::open(&seller_db_path(s)?)?, seller_keys(s)?))
}

pub fn run(cmd: MarketCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        MarketCmd::List {
            bundle,
            price_usd,
            sol_usd,
            duration_hours,
            visibility,
            payment_address,
            description,
            escrow,
            stake_lamports,
            storage,
            seller,
        } => {
            let text = read_capped(&bundle)?;
            let wallet = ctx.wallet()?;
            let chain = ctx.chain()?;
            let (mut db, keys) = seller_state(&seller)?;
            let up = uploader(&storage)?;
            let opts = ListOptions {
                price_usd,
                sol_usd,
                duration_hours,
                visibility,
                payment_address,
                description,
                escrow_stake: escrow.then_some(stake_lamports),
            };
            let rec = ctx
                .block_on(list_bundle(
                    &chain, &wallet, &up, &keys, &mut db, &text, &opts,
                ))
                .map_err(|e| match e {
                    node::market::list::ListError::Input(_)
                    | node::market::list::ListError::Bundle(_)
                    | node::market::list::ListError::Escrow(
                        node::market::escrow_trade::EscrowReadError::Plan(_),
                    ) => Failure::bad_input(e),
                    other => other.into(),
                })?;
            let v = json!({"ok": true, "listing": rec});
            ctx.emit(&v, || {
                format!(
                    "listed {} at {} lamports ({price_usd} USD at {sol_usd} USD/SOL)\n  manifest     {}   <- buyers run: brainctl marketplace buy {}\n  bundle hash  {}\n  list tx      {}",
                    rec.listing_id, rec.price_lamports, rec.manifest_id, rec.manifest_id, rec.bundle_hash, rec.list_signature
                )
            });
        }
        MarketCmd::Buy {
            listing,
            offer,
            counter,
            escrow,
            timeout,
            into_brainctl_db,
            storage,
        } => {
            let how = match offer {
                Some(o) => Payment::Negotiated { offer: o, counter },
                None if escrow => Payment::Escrow,
                None => Payment::Listed,
            };
            buy_or_fetch(
                ctx,
                &listing,
                how,
                timeout,
                into_brainctl_db.as_deref(),
                &storage,
            )?
        }
        MarketCmd::Offer {
            listing,
            terms:
                Terms {
                    price_usd,
                    sol_usd,
                    message,
                    ttl_hours,
                },
            storage,
        } => {
            let (wallet, chain, l) = buyer_and_listing(ctx, &storage, &listing)?;
            let lamports = node::market::list::usd_to_lamports(price_usd, sol_usd)
                .map_err(Failure::bad_input)?;
            let (item, offer_id, sent) = ctx
                .block_on(node::market::negotiate::make_offer(
                    &chain,
                    &wallet,
                    &uploader(&storage)?,
                    &l,
                    &OfferTerms {
                        price_usd,
                        price_lamports: lamports,
                        message: &message,
                        ttl_hours,
                    },
                ))
                .map_err(negotiate_failure)?;
            let v = json!({"ok": true, "offer_item_id": item, "offer_id": offer_id, "price_lamports": lamports, "signature": sent.signature.to_string()});
            ctx.emit(&v, || {
                format!(
                    "offered {lamports} lamports on {} as {offer_id}
  offer item   {item}   <- the seller runs: brainctl marketplace accept {item}
  tx           {}",
                    l.listing_id, sent.signature
                )
            });
        }
        MarketCmd::Counter {
            offer,
            terms:
                Terms {
                    price_usd,
                    sol_usd,
                    message,
                    ttl_hours,
                },
            storage,
            seller,
        } => {
            let SellerOffer {
                wallet,
                chain,
                mut db,
                offer: o,
                listing: rec,
            } = seller_offer(ctx, &offer, &storage, &seller)?;
            let lamports = node::market::list::usd_to_lamports(price_usd, sol_usd)
                .map_err(Failure::bad_input)?;
            let pay_to = rec
                .payment_address
                .parse()
                .map_err(|_| anyhow!("bad payment address on record"))?;
            let (item, sent) = ctx
                .block_on(node::market::negotiate::make_counter(
                    &chain,
                    &wallet,
                    &uploader(&storage)?,
                    &o,
                    &pay_to,
                    &OfferTerms {
                        price_usd,
                        price_lamports: lamports,
                        message: &message,
                        ttl_hours,
                    },
                ))
                .map_err(negotiate_failure)?;
            let expires =
                time::OffsetDateTime::now_utc().unix_timestamp() + (ttl_hours * 3600.0) as i64;
            db.upsert_offer(
                &o.offer_id,
                &rec.listing_id,
                &o.from_pubkey,
                &offer,
                lamports,
                expires,
                Some(&item),
                "countered",
            )?;
            let v = json!({"ok": true, "counter_item_id": item, "offer_id": o.offer_id, "price_lamports": lamports, "signature": sent.signature.to_string()});
            ctx.emit(&v, || {
                format!(
                    "countered {} at {lamports} lamports
  counter item {item}
  tx           {}",
                    o.offer_id, sent.signature
                )
            });
        }
        MarketCmd::Withdraw {
            offer,
            listing,
            storage,
        } => {
            let wallet = ctx.wallet()?;
            let chain = ctx.chain()?;
            let src = source(&storage)?;
            let l = ctx
                .block_on(node::market::buy::fetch_listing(&src, &listing))
                .map_err(Failure::bad_input)?;
            let o = ctx
                .block_on(node::market::negotiate::fetch_offer(&src, &offer, false))
                .map_err(negotiate_failure)?;
            let sent = ctx
                .block_on(node::market::negotiate::withdraw(&chain, &wallet, &l, &o))
                .map_err(negotiate_failure)?;
            let v = json!({"ok": true, "offer_id": o.offer_id, "signature": sent.signature.to_string()});
            ctx.emit(&v, || {
                format!("withdrew {} ({})", o.offer_id, sent.signature)
            });
        }
        MarketCmd::Accept {
            offer,
            storage,
            seller,
        } => decide(ctx, &offer, &storage, &seller, true)?,
        MarketCmd::Reject {
            offer,
            storage,
            seller,
        } => decide(ctx, &offer, &storage, &seller, false)?,
        MarketCmd::Quote {
            listing,
            offer,
            counter,
            storage,
        } => {
            let how = match offer {
                Some(offer) => Payment::Negotiated { offer, counter },
                None => Payment::Listed,
            };
            quote(ctx, &listing, how, &storage)?
        }
        MarketCmd::Budget { limit } => budget(ctx, limit)?,
        MarketCmd::Fetch {
            listing,
            buy_signature,
            timeout,
            into_brainctl_db,
            storage,
        } => buy_or_fetch(
            ctx,
            &listing,
            Payment::Already(buy_signature),
            timeout,
            into_brainctl_db.as_deref(),
            &storage,
        )?,
        MarketCmd::Refund { listing, storage } => {
            let (wallet, chain, l) = buyer_and_listing(ctx, &storage, &listing)?;
            let sig = ctx
                .block_on(node::market::buy::refund_escrow(&chain, &wallet, &l))
                .map_err(buy_failure)?;
            let v = json!({"ok": true, "listing_id": l.listing_id, "signature": sig});
            ctx.emit(&v, || {
                format!(
                    "refunded your escrow deposit on {} and slashed the seller's stake\n  tx           {sig}",
                    l.listing_id
                )
            });
        }
        MarketCmd::Cancel { listing_id, seller } => {
            let wallet = ctx.wallet()?;
            let chain = ctx.chain()?;
            let (mut db, _) = seller_state(&seller)?;
            let sent = ctx
                .block_on(node::market::list::cancel_listing(
                    &chain,
                    &wallet,
                    &mut db,
                    &listing_id,
                ))
                .map_err(|e| match e {
                    node::market::list::ListError::Input(_)
                    | node::market::list::ListError::Escrow(
                        node::market::escrow_trade::EscrowReadError::Plan(_),
                    ) => Failure::bad_input(e),
                    other => other.into(),
                })?;
            let v = json!({"ok": true, "listing_id": listing_id, "signature": sent.signature.to_string(), "slot": sent.slot});
            ctx.emit(&v, || {
                format!(
                    "cancelled {listing_id} at slot {} ({})",
                    sent.slot, sent.signature
                )
            });
        }
        MarketCmd::Browse {
            indexer,
            max_price_usd,
            category,
            seller,
            status,
            limit,
            cursor,
        } => super::browse::browse(
            ctx,
            &indexer,
            max_price_usd,
            category,
            seller,
            status,
            limit,
            cursor,
        )?,
        MarketCmd::Show {
            listing_id,
            indexer,
        } => super::browse::show(ctx, &indexer, &listing_id)?,
        MarketCmd::Status { listing_id, seller } => {
            let chain = ctx.chain()?;
            let (db, _) = seller_state(&seller)?;
            let mut rows = Vec::new();
            for l in db
                .listings()?
                .into_iter()
                .filter(|l| listing_id.as_deref().is_none_or(|id| id == l.listing_id))
            {
                let pay_to = l
                    .payment_address
                    .parse()
                    .map_err(|_| anyhow!("bad payment address on record"))?;
                let chain_memos = ctx.block_on(node::market::status::listing_memos(
                    &chain,
                    &pay_to,
                    &l.listing_id,
                ))?;
                let offers: Vec<_> = db.offers_of(&l.listing_id)?.into_iter().map(|o| json!({"offer_id": o.offer_id, "buyer": o.buyer, "state": o.state, "price_lamports": o.price_lamports})).collect();
                rows.push(json!({
                    "listing_id": l.listing_id, "manifest_id": l.manifest_id, "price_lamports": l.price_lamports,
                    "expires_at": l.expires_at, "cancelled_at_slot": l.cancelled_at_slot,
                    "chain": chain_memos, "buys": db.buy_counts(&l.listing_id)?, "offers": offers,
                    "buy_details": db.buys_of(&l.listing_id)?.iter().map(buy_detail).collect::<Vec<_>>(),
                }));
            }
            if rows.is_empty() && listing_id.is_some() {
                return Err(Failure::bad_input(anyhow!(
                    "{} is not one of this wallet's listings",
                    listing_id.unwrap_or_default()
                )));
            }
            // purchases: imports whose scope is a listing's quarantine
            let purchases: Vec<_> = ctx
                .store()?
                .imports()?
                .into_iter()
                .filter(|i| {
                    i.scope.starts_with("imported:")
                        && i.source
                            .as_deref()
                            .is_some_and(|src| i.scope.ends_with(src))
                })
                .collect();
            ctx.emit(
                &json!({"ok": true, "listings": rows, "purchases": purchases}),
                || {
                    let bought = purchases
                        .iter()
                        .map(|p| {
                            format!(
                                "bought {} ({} memories from {}) into {}",
                                p.source.as_deref().unwrap_or("?"),
                                p.memories_count,
                                p.signer,
                                p.scope
                            )
                        })
                        .collect::<Vec<_>>();
                    if rows.is_empty() {
                        return std::iter::once("no listings of yours".to_string())
                            .chain(bought)
                            .collect::<Vec<_>>()
                            .join("\n");
                    }
                    rows.iter()
                        .map(|r| {
                            format!(
                                "{}  {} lamports{}\n  on chain: {}\n  buys: {}   offers: {}",
                                r["listing_id"].as_str().unwrap_or(""),
                                r["price_lamports"],
                                if r["cancelled_at_slot"].is_null() {
                                    String::new()
                                } else {
                                    format!("  CANCELLED at slot {}", r["cancelled_at_slot"])
                                },
                                r["chain"],
                                r["buys"],
                                r["offers"].as_array().map_or(0, Vec::len)
                            )
                        })
                        .chain(bought)
                        .collect::<Vec<_>>()
                        .join("\n")
                },
            );
        }
        MarketCmd::Listen {
            once,
            interval,
            token_standard,
            storage,
            seller,
        } => {
            let wallet = ctx.wallet()?;
            // a release stuck below our commitment (a fork, a restart) is
            // retried next round instead of holding up every other buy
            let chain = ctx
                .chain()?
                .with_landing_budget(node::listen::daemon::LANDING_BUDGET);
            let db_path = seller_db_path(&seller)?;
            let mut db = ListenDb::open_daemon(&db_path)?;
            let keys = seller_keys(&seller)?;
            let up = uploader(&storage)?;
            let policy = node::chain::FeePolicy::from_env(ctx.block_on(chain.cluster_kind())?)?;
            let config = node::listen::daemon::DaemonConfig {
                keys,
                fee: policy.enabled.then(|| {
                    (
                        policy.treasury.to_string(),
                        node::market::manifest::DEFAULT_FEE_BPS,
                    )
                }),
                standard: node::mint::bundle_mint::TokenStandard::from_flag(&token_standard),
                interval: Duration::from_secs(interval.max(1)),
                once,
                wake_ups: true,
            };
            let json = ctx.json;
            let report = |db: &ListenDb, r: &node::listen::daemon::RoundReport| {
                let counts = db.counts().unwrap_or_default();
                let rss = rss_mib();
                let p = &r.pass;
                tracing::info!(address = %r.payment_address, pass = ?p, ?counts, ?rss, "pass");
                if json {
                    println!(
                        "{}",
                        json!({"pass": p, "payment_address": r.payment_address, "counts": counts, "rss_mib": rss})
                    );
                } else if p.seen + p.released + p.failed > 0 || once {
                    println!(
                        "listen: {} new buys, {} verified, {} rejected, {} released, {} retrying; totals {:?}; rss {} MiB",
                        p.seen, p.verified, p.rejected, p.released, p.failed, counts,
                        rss.map_or("?".into(), |m| format!("{m:.1}"))
                    );
                }
            };
            ctx.block_on(node::listen::daemon::run(
                &chain,
                &mut db,
                &wallet,
                &up,
                &config,
                shutdown_signal(),
                report,
            ))?;
            if !once {
                eprintln!("listen: stopping (state is durable; restart resumes)");
            }
        }
    }
    Ok(0)
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
/// (a bad or unreadable manifest is bad input).
fn buyer_and_listing(
    ctx: &Context,
    storage: &crate::args::StorageOpts,
    listing: &str,
) -> CliResult<(
    node::wallet::Wallet,
    node::chain::Chain,
    node::market::manifest::Listing,
)> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let l = ctx
        .block_on(node::market::buy::fetch_listing(&source(storage)?, listing))
        .map_err(Failure::bad_input)?;
    Ok((wallet, chain, l))
}

/// Refusals before any money moves are the user's to fix (exit 2).
fn buy_failure(e: node::market::buy::BuyError) -> Failure {
    use node::market::buy::BuyError;
    use node::market::escrow_trade::EscrowReadError;
    match e {
        BuyError::Listing(_) | BuyError::Escrow(EscrowReadError::Plan(_)) => Failure::bad_input(e),
        other => other.into(),
    }
}

fn negotiate_failure(e: node::market::negotiate::NegotiateError) -> Failure {
    match e {
        node::market::negotiate::NegotiateError::Refused(_)
        | node::market::negotiate::NegotiateError::Manifest(_) => Failure::bad_input(e),
        other => other.into(),
    }
}

/// What a seller's decision on an offer needs.
struct SellerOffer {
    wallet: node::wallet::Wallet,
    chain: node::chain::Chain,
    db: ListenDb,
    offer: node::market::manifest::Offer,
    listing: node::listen::ListingRecord,
}

/// Loads the seller's wallet, chain and state, and the offer (by item id)
/// with the seller's own listing it is for.
fn seller_offer(
    ctx: &Context,
    offer: &str,
    storage: &crate::args::StorageOpts,
    seller: &SellerState,
) -> CliResult<SellerOffer> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let (db, _) = seller_state(seller)?;
    let o = ctx
        .block_on(node::market::negotiate::fetch_offer(
            &source(storage)?,
            offer,
            false,
        ))
        .map_err(negotiate_failure)?;
    let listing = our_listing(&db, &o)?;
    Ok(SellerOffer {
        wallet,
        chain,
        db,
        offer: o,
        listing,
    })
}

/// The seller's record of the listing an offer is for.
fn our_listing(
    db: &ListenDb,
    o: &node::market::manifest::Offer,
) -> CliResult<node::listen::ListingRecord> {
    let id = o.listing_id.clone().unwrap_or_default();
    db.listings()?
        .into_iter()
        .find(|l| l.listing_id == id)
        .ok_or_else(|| {
            Failure::bad_input(anyhow!(
                "offer {} is for {id}, which is not one of this wallet's listings",
                o.offer_id
            ))
        })
}

/// Seller: accept (at the countered price if countered) or reject an offer.
fn decide(
    ctx: &Context,
    offer: &str,
    storage: &crate::args::StorageOpts,
    seller: &SellerState,
    accept: bool,
) -> CliResult<()> {
    let SellerOffer {
        wallet,
        chain,
        mut db,
        offer: o,
        listing: rec,
    } = seller_offer(ctx, offer, storage, seller)?;
    let recorded = db.offer(&o.offer_id)?;
    if let Some(r) = recorded
        .as_ref()
        .filter(|r| r.state == "accepted" || r.state == "rejected")
    {
        return Err(Failure::bad_input(anyhow!(
            "offer {} was already {}",
            o.offer_id,
            r.state
        )));
    }
    let (price, expires, counter) = match recorded {
        Some(r) => (r.price_lamports, r.expires_at, r.counter_manifest_id),
        None => (
            o.price_lamports.ok_or_else(|| {
                Failure::bad_input(anyhow!(
                    "the offer carries no price_lamports; counter it instead"
                ))
            })?,
            o.expires_at,
            None,
        ),
    };
    let pay_to: node::chain::Pubkey = rec
        .payment_address
        .parse()
        .map_err(|_| anyhow!("bad payment address on record"))?;
    if accept {
        if let Some(slot) = ctx
            .block_on(node::market::negotiate::find_withdraw(&chain, &pay_to, &o))
            .map_err(negotiate_failure)?
        {
            return Err(Failure::bad_input(anyhow!(
                "the buyer withdrew {} at slot {slot}; it can't be accepted",
                o.offer_id
            )));
        }
    }
    let op = if accept {
        node::market::MemoOp::Accept {
            offer_id: o.offer_id.clone(),
        }
    } else {
        node::market::MemoOp::Reject {
            offer_id: o.offer_id.clone(),
        }
    };
    let sent = ctx.block_on(node::market::tx::post_memo(&chain, &wallet, &op, &pay_to))?;
    let state = if accept { "accepted" } else { "rejected" };
    db.upsert_offer(
        &o.offer_id,
        &rec.listing_id,
        &o.from_pubkey,
        offer,
        price,
        expires,
        counter.as_deref(),
        state,
    )?;
    let v = json!({"ok": true, "offer_id": o.offer_id, "state": state, "price_lamports": price, "signature": sent.signature.to_string()});
    ctx.emit(&v, || {
        format!(
            "{state} {} (price {price} lamports for {})\n  tx {}",
            o.offer_id, o.from_pubkey, sent.signature
        )
    });
    Ok(())
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
) -> CliResult<node::market::buy::BuyPlan> {
    use node::market::buy::{plan_buy, Terms};
    match how {
        Payment::Already(_) => unreachable!("a finished payment is not planned"),
        Payment::Escrow if l.escrow_program.is_none() => Err(Failure::bad_input(
            node::market::escrow_trade::EscrowPlanError::NotEscrow(l.listing_id.clone()),
        )),
        Payment::Escrow | Payment::Listed => ctx
            .block_on(plan_buy(chain, wallet, l, Terms::Listed))
            .map_err(buy_failure),
        Payment::Negotiated { offer, counter } => {
            let o = ctx
                .block_on(node::market::negotiate::fetch_offer(src, offer, false))
                .map_err(negotiate_failure)?;
            // the buyer's client finds the seller's counter itself: with an
            // accept, its terms are the ones that bind
            let counter = match counter {
                Some(id) => Some(id.clone()),
                None => ctx
                    .block_on(node::market::negotiate::find_counter(chain, l, &o.offer_id))
                    .map_err(negotiate_failure)?,
            };
            let c = match &counter {
                Some(id) => Some(
                    ctx.block_on(node::market::negotiate::fetch_offer(src, id, true))
                        .map_err(negotiate_failure)?,
                ),
                None => None,
            };
            ctx.block_on(plan_buy(
                chain,
                wallet,
                l,
                Terms::Negotiated {
                    offer: &o,
                    counter: c.as_ref(),
                },
            ))
            .map_err(buy_failure)
        }
    }
}

/// `marketplace quote`: what a buy would cost and whether the spend policy
/// allows it now; sends nothing, records nothing.
fn quote(
    ctx: &Context,
    listing: &str,
    how: Payment,
    storage: &crate::args::StorageOpts,
) -> CliResult<()> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let src = source(storage)?;
    let l = ctx
        .block_on(node::market::buy::fetch_listing(&src, listing))
        .map_err(Failure::bad_input)?;
    let plan = plan_payment(ctx, &chain, &wallet, &src, &l, &how)?;
    let q = &plan.quote;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let (policy, verdict) = match ctx.spend_policy()? {
        None => (None, Ok(None)),
        Some(p) => {
            let spend = node::spend::Spend {
                listing_id: &q.listing_id,
                seller: &q.seller,
                lamports: q.total_lamports,
            };
            let verdict = match ctx.spend_ledger()?.check(&p, &spend, now) {
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
        let head = format!(
            "{} ({}, {}): price {} + protocol fee {} + escrow rent {} + network fee {} = {} lamports",
            q.listing_id,
            q.settles,
            q.terms,
            q.price_lamports,
            q.protocol_fee_lamports,
            q.escrow_rent_lamports,
            q.network_fee_lamports,
            q.total_lamports
        );
        match &verdict {
            Ok(None) => format!("{head}
  no spend policy for this wallet"),
            Ok(Some(s)) => format!(
                "{head}
  allowed by the spend policy ({} spent in the last 24 h{})",
                s.spent_24h_lamports,
                s.remaining_24h_lamports
                    .map_or(String::new(), |r| format!(", {r} left"))
            ),
            Err(r) => format!("{head}
  REFUSED by the spend policy: {r}"),
        }
    });
    Ok(())
}

/// `marketplace budget`: this wallet's spend policy, what the last 24 h
/// spent, and the newest ledger rows.
fn budget(ctx: &Context, limit: usize) -> CliResult<()> {
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
                "spend policy: per buy {}, 24 h budget {}, sellers {}",
                p.max_per_buy_lamports
                    .map_or("unlimited".into(), |m| format!("{m} lamports")),
                p.budget_24h_lamports
                    .map_or("unlimited".into(), |m| format!("{m} lamports")),
                p.sellers.as_ref().map_or("any".into(), |s| s.join(", "))
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
  #{} {} {} lamports {} {}",
                r.id,
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
    timeout: u64,
    into_brainctl_db: Option<&std::path::Path>,
    storage: &crate::args::StorageOpts,
) -> CliResult<()> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let src = source(storage)?;
    let mut store;
    let target = match into_brainctl_db {
        Some(path) => node::market::buy::ImportTarget::BrainctlDb(path),
        None => {
            store = ctx.store()?;
            node::market::buy::ImportTarget::Store(&mut store)
        }
    };
    let l = ctx
        .block_on(node::market::buy::fetch_listing(&src, listing))
        .map_err(Failure::bad_input)?;
    let sig = match how {
        Payment::Already(sig) => sig,
        how => {
            let plan = plan_payment(ctx, &chain, &wallet, &src, &l, &how)?;
            let q = &plan.quote;
            if !ctx.json {
                eprintln!(
                    "buying {} ({}: {} lamports {}, {} in all with fees{})",
                    l.listing_id,
                    q.terms,
                    q.price_lamports,
                    if q.settles == "escrow" {
                        "held by the escrow program until the seller releases".to_string()
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
            let sig = ctx
                .block_on(node::market::buy::execute(&chain, &wallet, &plan, guard))
                .map_err(buy_failure)?;
            if !ctx.json {
                eprintln!("paid: {sig}");
            }
            sig
        }
    };
    if !ctx.json {
        eprintln!("waiting for the seller's release (up to {timeout} s)...");
    }
    let wait = Duration::from_secs(timeout);
    let spinner = (!ctx.json && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message(format!(
            "waiting for the seller's release of {}",
            l.listing_id
        ));
        pb
    });
    let report = ctx.block_on(node::market::buy::fetch_and_import(
        &chain,
        &wallet,
        &src,
        &l,
        &sig,
        target,
        wait,
        |elapsed| {
            if let Some(pb) = &spinner {
                pb.set_message(format!(
                    "waiting for the seller's release ({}s of {timeout}s)",
                    elapsed.as_secs()
                ));
                pb.tick();
            }
        },
    ));
    if let Some(pb) = &spinner {
        pb.finish_and_clear();
    }
    let report = report?;
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

/// One buy as `status --json` shows it: its state, the typed rejection
/// reason, and the retry bookkeeping of an unfinished one.
fn buy_detail(b: &node::listen::BuyRow) -> serde_json::Value {
    json!({
        "signature": b.signature, "state": b.state, "slot": b.slot, "buyer": b.buyer,
        "reason": b.reason.as_deref().and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok()),
        "attempts": b.attempts, "last_error": b.last_error,
        "envelope_id": b.envelope_id, "mint": b.mint_address, "release_signature": b.release_sig,
    })
}

/// This process's resident memory (Linux `/proc`; `None` elsewhere).
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// Completes on SIGINT or SIGTERM (the daemon stops; its state is durable).
pub(super) async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
