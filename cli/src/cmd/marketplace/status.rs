//! `marketplace status`: the seller's listings as the chain and the
//! daemon's state see them (per-buy states and reasons), and purchases.

use super::{seller_state, CliResult, Context, Failure};
use crate::args::StatusArgs;
use anyhow::anyhow;
use serde_json::json;

/// `marketplace status`.
pub(super) fn status(a: StatusArgs, ctx: &Context) -> CliResult<()> {
    let StatusArgs { listing_id, seller } = a;
    let chain = ctx.chain()?;
    let (db, _) = seller_state(ctx, &seller)?;
    let listing_id = match listing_id {
        Some(named) => Some(super::named::own_listing_id(&db, &named)?),
        None => None,
    };
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
