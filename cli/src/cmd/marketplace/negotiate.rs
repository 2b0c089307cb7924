//! Negotiation: the buyer's `offer` and `withdraw`, the seller's
//! `counter`, `accept` and `reject` (the seller's records of its decisions
//! live in the listen state, which `listen` reads to bind buyers).

use super::super::storage::{source, uploader};
use super::buy::buyer_and_listing;
use super::{negotiate_failure, seller_state, CliResult, Context, Failure};
use crate::args::{AnswerArgs, CounterArgs, OfferArgs, SellerState, Terms, WithdrawArgs};
use node::listen::ListenDb;
use node::market::negotiate::OfferTerms;
use serde_json::json;

/// The terms the flags propose, with the lamports they fix.
fn offer_terms(t: &Terms) -> CliResult<OfferTerms<'_>> {
    Ok(OfferTerms {
        price_usd: t.price_usd,
        price_lamports: node::market::list::usd_to_lamports(t.price_usd, t.sol_usd)
            .map_err(Failure::bad_input)?,
        message: &t.message,
        ttl_hours: t.ttl_hours,
    })
}

/// `marketplace offer`: the buyer proposes a price.
pub(super) fn offer(a: OfferArgs, ctx: &Context) -> CliResult<()> {
    let OfferArgs {
        listing,
        terms,
        storage,
    } = a;
    let (wallet, chain, l) = buyer_and_listing(ctx, &storage, &listing)?;
    let terms = offer_terms(&terms)?;
    let lamports = terms.price_lamports;
    let up = uploader(ctx, &storage)?;
    let (item, offer_id, sent) = ctx.spend_on_op(&chain, ("offer", &l.listing_id), 0, || {
        ctx.block_on(node::market::negotiate::make_offer(
            &chain, &wallet, &up, &l, &terms,
        ))
        .map_err(negotiate_failure)
    })?;
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
        listing,
        terms,
        storage,
        seller,
    } = a;
    let terms = offer_terms(&terms)?;
    let lamports = terms.price_lamports;
    if let Some(listing) = listing {
        return buyer_counter(ctx, &offer, &listing, &terms, &storage);
    }
    let mut s = seller_offer(ctx, &offer, &storage, &seller)?;
    let up = uploader(ctx, &storage)?;
    let answer = ctx.spend_on_op(&s.chain, ("counter", &s.offer.offer_id), 0, || {
        ctx.block_on(node::market::negotiate::counter_offer(
            &s.chain, &s.wallet, &up, &mut s.db, &s.offer, &offer, &terms,
        ))
        .map_err(negotiate_failure)
    })?;
    let item = answer.counter_item_id.clone().unwrap_or_default();
    let v = json!({"ok": true, "counter_item_id": item, "offer_id": answer.offer_id, "price_lamports": lamports, "signature": answer.signature});
    ctx.emit(&v, || {
        format!(
            "countered {} at {lamports} lamports\n  counter item {item}\n  tx           {}",
            answer.offer_id, answer.signature
        )
    });
    Ok(())
}

/// `marketplace counter --listing`: the buyer counters the seller's terms
/// on its own offer.
fn buyer_counter(
    ctx: &Context,
    offer: &str,
    listing: &str,
    terms: &node::market::negotiate::OfferTerms<'_>,
    storage: &crate::args::StorageOpts,
) -> CliResult<()> {
    let (wallet, chain, l) = buyer_and_listing(ctx, storage, listing)?;
    let o = ctx
        .block_on(node::market::negotiate::fetch_offer(
            &source(ctx, storage)?,
            offer,
            false,
        ))
        .map_err(negotiate_failure)?;
    let up = uploader(ctx, storage)?;
    let (item, sent) = ctx.spend_on_op(&chain, ("counter", &o.offer_id), 0, || {
        ctx.block_on(node::market::negotiate::counter_as_buyer(
            &chain, &wallet, &up, &l, &o, terms,
        ))
        .map_err(negotiate_failure)
    })?;
    let lamports = terms.price_lamports;
    let v = json!({"ok": true, "counter_item_id": item, "offer_id": o.offer_id, "price_lamports": lamports, "signature": sent.signature.to_string()});
    ctx.emit(&v, || {
        format!(
            "countered the seller on {} at {lamports} lamports\n  counter item {item}\n  tx           {}",
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
    let src = source(ctx, &storage)?;
    let l = ctx
        .block_on(node::market::buy::fetch_listing(&src, &listing))
        .map_err(Failure::bad_input)?;
    let o = ctx
        .block_on(node::market::negotiate::fetch_offer(&src, &offer, false))
        .map_err(negotiate_failure)?;
    let sent = ctx.spend_on_op(&chain, ("withdraw", &o.offer_id), 0, || {
        ctx.block_on(node::market::negotiate::withdraw(&chain, &wallet, &l, &o))
            .map_err(negotiate_failure)
    })?;
    let v = json!({"ok": true, "offer_id": o.offer_id, "signature": sent.signature.to_string()});
    ctx.emit(&v, || {
        format!("withdrew {} ({})", o.offer_id, sent.signature)
    });
    Ok(())
}

/// `marketplace accept`.
pub(super) fn accept(a: AnswerArgs, ctx: &Context) -> CliResult<()> {
    decide(ctx, &a, true)
}

/// `marketplace reject`.
pub(super) fn reject(a: AnswerArgs, ctx: &Context) -> CliResult<()> {
    decide(ctx, &a, false)
}

/// What a seller's answer to an offer needs.
struct SellerOffer {
    wallet: node::wallet::Wallet,
    chain: node::chain::Chain,
    db: ListenDb,
    offer: node::market::manifest::Offer,
}

/// Loads the seller's wallet, chain and state, and the offer (by item id).
fn seller_offer(
    ctx: &Context,
    offer: &str,
    storage: &crate::args::StorageOpts,
    seller: &SellerState,
) -> CliResult<SellerOffer> {
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let (db, _) = seller_state(ctx, seller)?;
    let offer = ctx
        .block_on(node::market::negotiate::fetch_offer(
            &source(ctx, storage)?,
            offer,
            false,
        ))
        .map_err(negotiate_failure)?;
    Ok(SellerOffer {
        wallet,
        chain,
        db,
        offer,
    })
}

/// Seller: accept (at the countered price if countered) or reject an offer
/// (the rules are `node::market::negotiate::answer_offer`'s).
fn decide(ctx: &Context, args: &AnswerArgs, accept: bool) -> CliResult<()> {
    let mut s = seller_offer(ctx, &args.offer, &args.storage, &args.seller)?;
    let src = source(ctx, &args.storage)?;
    let action = if accept { "accept" } else { "reject" };
    let a = ctx.spend_on_op(&s.chain, (action, &s.offer.offer_id), 0, || {
        ctx.block_on(node::market::negotiate::answer_offer(
            &s.chain,
            &src,
            &s.wallet,
            &mut s.db,
            &s.offer,
            &args.offer,
            accept,
            args.expect_lamports,
        ))
        .map_err(negotiate_failure)
    })?;
    let v = json!({"ok": true, "offer_id": a.offer_id, "state": a.state, "price_lamports": a.price_lamports, "signature": a.signature});
    ctx.emit(&v, || {
        format!(
            "{} {} (price {} lamports for {})\n  tx {}",
            a.state, a.offer_id, a.price_lamports, s.offer.from_pubkey, a.signature
        )
    });
    Ok(())
}
