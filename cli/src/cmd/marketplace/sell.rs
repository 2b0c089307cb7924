//! The seller's listing commands: `list` (encrypt, store, post the
//! listing) and `cancel`. The work is `node::market::list`'s; this maps
//! its errors to exit codes and prints.

use super::super::files::read_capped;
use super::super::storage::uploader;
use super::{seller_state, CliResult, Context, Failure};
use crate::args::{CancelArgs, ListArgs};
use node::market::list::{list_bundle, ListOptions};
use serde_json::json;

/// A listing error as an exit code: bad input (2) or a failure (1).
fn list_failure(e: node::market::list::ListError) -> Failure {
    match e {
        node::market::list::ListError::Input(_)
        | node::market::list::ListError::Bundle(_)
        | node::market::list::ListError::Escrow(
            node::market::escrow_trade::EscrowReadError::Plan(_),
        ) => Failure::bad_input(e),
        other => other.into(),
    }
}

/// `marketplace list`: list a signed bundle at a fixed price.
pub(super) fn list(a: ListArgs, ctx: &Context) -> CliResult<()> {
    let ListArgs {
        bundle,
        price_usd,
        sol_usd,
        duration_hours,
        visibility,
        payment_address,
        description,
        escrow,
        stake_lamports,
        below_cost,
        storage,
        seller,
    } = a;
    let text = read_capped(&bundle)?;
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let (mut db, keys) = seller_state(ctx, &seller)?;
    let up = uploader(ctx, &storage)?;
    let opts = ListOptions {
        price_usd,
        sol_usd,
        duration_hours,
        visibility: visibility.as_str().into(),
        payment_address,
        description,
        escrow_stake: escrow.then_some(stake_lamports),
        below_cost,
    };
    // an escrow listing's stake leaves the wallet with its memo
    let stake = opts.escrow_stake.unwrap_or(0);
    let rec = ctx.spend_on_op(
        &chain,
        ("list", &bundle.display().to_string()),
        stake,
        || {
            ctx.block_on(list_bundle(
                &chain, &wallet, &up, &keys, &mut db, &text, &opts,
            ))
            .map_err(list_failure)
        },
    )?;
    let v = json!({"ok": true, "listing": rec});
    ctx.emit(&v, || {
        format!(
            "listed {} at {} lamports ({price_usd} USD at {sol_usd} USD/SOL)\n  manifest     {}   <- buyers run: brainctl marketplace buy {}\n  bundle hash  {}\n  list tx      {}",
            rec.listing_id, rec.price_lamports, rec.manifest_id, rec.manifest_id, rec.bundle_hash, rec.list_signature
        )
    });
    Ok(())
}

/// `marketplace cancel`: cancel one of this wallet's listings.
pub(super) fn cancel(a: CancelArgs, ctx: &Context) -> CliResult<()> {
    let CancelArgs { listing_id, seller } = a;
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let (mut db, _) = seller_state(ctx, &seller)?;
    let sent = ctx.spend_on_op(&chain, ("cancel", &listing_id), 0, || {
        ctx.block_on(node::market::list::cancel_listing(
            &chain,
            &wallet,
            &mut db,
            &listing_id,
        ))
        .map_err(list_failure)
    })?;
    let v = json!({"ok": true, "listing_id": listing_id, "signature": sent.signature.to_string(), "slot": sent.slot});
    ctx.emit(&v, || {
        format!(
            "cancelled {listing_id} at slot {} ({})",
            sent.slot, sent.signature
        )
    });
    Ok(())
}
