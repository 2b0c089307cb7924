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

/// The terms the flags propose on a listing settling in `currency`, with
/// the price they fix in it: lamports at `--sol-usd`, or the token's base
/// units (a dollar stablecoin 1:1, another token at `--token-usd`).
fn offer_terms<'a>(
    ctx: &Context,
    chain: &node::chain::Chain,
    t: &'a Terms,
    currency: &node::settle::Currency,
) -> CliResult<OfferTerms<'a>> {
    let sol_usd = match (currency, t.sol_usd) {
        (node::settle::Currency::Sol, None) => {
            return Err(Failure::bad_input(anyhow::anyhow!(
                "--sol-usd is required: the listing settles in SOL, and the rate fixes the lamports the terms sign"
            )))
        }
        (_, rate) => rate.unwrap_or(f64::NAN),
    };
    let price_units = ctx
        .block_on(node::market::list::price_in(
            chain,
            t.price_usd,
            sol_usd,
            t.token_usd,
            currency,
        ))
        .map_err(Failure::bad_input)?;
    Ok(OfferTerms {
        price_usd: t.price_usd,
        price_units,
        currency: currency.clone(),
        message: &t.message,
        ttl_hours: t.ttl_hours,
    })
}

/// The JSON of a price fixed in `currency`: `price_lamports` for SOL;
/// `price_units` and the mint for a token.
fn price_json(units: u64, currency: &node::settle::Currency) -> serde_json::Value {
    match currency {
        node::settle::Currency::Sol => json!({"price_lamports": units}),
        node::settle::Currency::Token { mint } => json!({"price_units": units, "mint": mint}),
    }
}

/// A price fixed in `currency`, for people.
fn price_text(units: u64, currency: &node::settle::Currency) -> String {
    match currency {
        node::settle::Currency::Sol => format!("{units} lamports"),
        node::settle::Currency::Token { mint } => format!("{units} base units of {mint}"),
    }
}

/// `fields` with `extra`'s fields added.
fn with(mut fields: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    if let (Some(f), serde_json::Value::Object(e)) = (fields.as_object_mut(), extra) {
        f.extend(e);
    }
    fields
}

/// `marketplace offer`: the buyer proposes a price.
pub(super) fn offer(a: OfferArgs, ctx: &Context) -> CliResult<()> {
    let OfferArgs {
        listing,
        terms,
        storage,
        indexer,
    } = a;
    let (wallet, chain, l) = buyer_and_listing(ctx, &storage, &indexer, &listing)?;
    let terms = offer_terms(ctx, &chain, &terms, &l.currency())?;
    let price = price_text(terms.price_units, &terms.currency);
    let up = uploader(ctx, &storage)?;
    let (item, offer_id, sent) = ctx.spend_on_op(&chain, ("offer", &l.listing_id), 0, || {
        ctx.block_on(node::market::negotiate::make_offer(
            &chain, &wallet, &up, &l, &terms,
        ))
        .map_err(negotiate_failure)
    })?;
    let v = with(
        json!({"ok": true, "offer_item_id": item, "offer_id": offer_id, "signature": sent.signature.to_string()}),
        price_json(terms.price_units, &terms.currency),
    );
    ctx.emit(&v, || {
        format!(
            "offered {price} on {} as {offer_id}
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
        indexer,
        seller,
    } = a;
    if let Some(listing) = listing {
        return buyer_counter(ctx, &offer, &listing, &terms, (&storage, &indexer));
    }
    let mut s = seller_offer(ctx, &offer, &storage, &seller)?;
    let currency = node::market::negotiate::our_listing(&s.db, &s.offer)
        .map_err(negotiate_failure)?
        .currency;
    let terms = offer_terms(ctx, &s.chain, &terms, &currency)?;
    let up = uploader(ctx, &storage)?;
    let answer = ctx.spend_on_op(&s.chain, ("counter", &s.offer.offer_id), 0, || {
        ctx.block_on(node::market::negotiate::counter_offer(
            &s.chain, &s.wallet, &up, &mut s.db, &s.offer, &offer, &terms,
        ))
        .map_err(negotiate_failure)
    })?;
    let item = answer.counter_item_id.clone().unwrap_or_default();
    let v = with(
        json!({"ok": true, "counter_item_id": item, "offer_id": answer.offer_id, "signature": answer.signature}),
        price_json(terms.price_units, &terms.currency),
    );
    ctx.emit(&v, || {
        format!(
            "countered {} at {}\n  counter item {item}\n  tx           {}",
            answer.offer_id,
            price_text(terms.price_units, &terms.currency),
            answer.signature
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
    terms: &Terms,
    (storage, indexer): (&crate::args::StorageOpts, &crate::args::IndexerOpts),
) -> CliResult<()> {
    let (wallet, chain, l) = buyer_and_listing(ctx, storage, indexer, listing)?;
    let terms = &offer_terms(ctx, &chain, terms, &l.currency())?;
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
    let v = with(
        json!({"ok": true, "counter_item_id": item, "offer_id": o.offer_id, "signature": sent.signature.to_string()}),
        price_json(terms.price_units, &terms.currency),
    );
    ctx.emit(&v, || {
        format!(
            "countered the seller on {} at {}\n  counter item {item}\n  tx           {}",
            o.offer_id,
            price_text(terms.price_units, &terms.currency),
            sent.signature
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
        indexer,
    } = a;
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let src = source(ctx, &storage)?;
    let l = super::named::listing(ctx, &src, &indexer, &listing)?;
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
