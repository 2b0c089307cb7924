//! Negotiation: the buyer's `offer` and `withdraw`, the seller's
//! `counter`, `accept` and `reject` (the seller's records of its decisions
//! live in the listen state, which `listen` reads to bind buyers).

use super::super::storage::{source, uploader};
use super::buy::buyer_and_listing;
use super::{negotiate_failure, seller_state, CliResult, Context, Failure};
use crate::args::{
    AcceptArgs, CounterArgs, OfferArgs, RejectArgs, SellerState, Terms, WithdrawArgs,
};
use anyhow::anyhow;
use node::listen::ListenDb;
use node::market::negotiate::OfferTerms;
use serde_json::json;

/// `marketplace offer`: the buyer proposes a price.
pub(super) fn offer(a: OfferArgs, ctx: &Context) -> CliResult<()> {
    let OfferArgs {
        listing,
        terms:
            Terms {
                price_usd,
                sol_usd,
                message,
                ttl_hours,
            },
        storage,
    } = a;
    let (wallet, chain, l) = buyer_and_listing(ctx, &storage, &listing)?;
    let lamports =
        node::market::list::usd_to_lamports(price_usd, sol_usd).map_err(Failure::bad_input)?;
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
    Ok(())
}

/// `marketplace counter`: the seller answers an offer with another price.
pub(super) fn counter(a: CounterArgs, ctx: &Context) -> CliResult<()> {
    let CounterArgs {
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
    } = a;
    let SellerOffer {
        wallet,
        chain,
        mut db,
        offer: o,
        listing: rec,
    } = seller_offer(ctx, &offer, &storage, &seller)?;
    let lamports =
        node::market::list::usd_to_lamports(price_usd, sol_usd).map_err(Failure::bad_input)?;
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
    let expires = time::OffsetDateTime::now_utc().unix_timestamp() + (ttl_hours * 3600.0) as i64;
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
    Ok(())
}

/// `marketplace withdraw`: the buyer takes an offer back.
pub(super) fn withdraw(a: WithdrawArgs, ctx: &Context) -> CliResult<()> {
    let WithdrawArgs {
        offer,
        listing,
        storage,
    } = a;
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
    Ok(())
}

/// `marketplace accept`.
pub(super) fn accept(a: AcceptArgs, ctx: &Context) -> CliResult<()> {
    decide(ctx, &a.offer, &a.storage, &a.seller, true)
}

/// `marketplace reject`.
pub(super) fn reject(a: RejectArgs, ctx: &Context) -> CliResult<()> {
    decide(ctx, &a.offer, &a.storage, &a.seller, false)
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
