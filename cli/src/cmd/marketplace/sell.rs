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
        mint,
        token_usd,
        duration_hours,
        visibility,
        payment_address,
        description,
        escrow,
        stake_lamports,
        max_open_escrows,
        below_cost,
        receipt,
        storage,
        seller,
        usd_at_settle,
        price_feed,
        price_max_age_secs,
        price_max_conf_bps,
        price_tolerance_bps,
    } = a;
    let settle_in = settle_in(mint.as_deref(), token_usd)?;
    let usd_at_settle = match usd_at_settle {
        None => None,
        Some(account) => {
            let feed_id = match price_feed {
                None => node::market::usd_price::SOL_USD_FEED,
                Some(h) => node::market::usd_price::parse_feed_id(&h).ok_or_else(|| {
                    Failure::bad_input(anyhow::anyhow!(
                        "--price-feed {h}: not 32 bytes of hex (a Pyth feed id)"
                    ))
                })?,
            };
            Some(node::market::manifest::UsdAtSettle {
                price_account: account,
                feed_id,
                max_age_secs: price_max_age_secs,
                max_conf_bps: price_max_conf_bps,
                tolerance_bps: price_tolerance_bps,
                // with --mint, filled in from the mint on chain
                token: None,
            })
        }
    };
    let text = read_capped(&bundle)?;
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let (mut db, keys) = seller_state(ctx, &seller)?;
    let up = uploader(ctx, &storage)?;
    let opts = ListOptions {
        price_usd,
        // the oracle prices a listing at settle time
        sol_usd: sol_usd.unwrap_or(f64::NAN),
        duration_hours,
        visibility: visibility.as_str().into(),
        payment_address,
        description,
        escrow_stake: escrow.then_some(stake_lamports),
        escrow_max_open: max_open_escrows.unwrap_or(u32::MAX),
        below_cost,
        receipt: receipt.into(),
        settle_in,
        usd_at_settle,
    };
    // an escrow listing's stake leaves the wallet with its memo, and a
    // listing's own receipt mint is made before it
    let stake = opts.escrow_stake.unwrap_or(0);
    let mint = ctx
        .block_on(node::mint::receipt::listing_setup_cost(
            &chain,
            opts.receipt,
            opts.escrow_stake.is_some(),
        ))
        .map_err(anyhow::Error::from)?;
    let rec = ctx.spend_on_op(
        &chain,
        ("list", &bundle.display().to_string()),
        stake.saturating_add(mint),
        || {
            let _listing = ctx.spinner(format!(
                "encrypting and uploading {} bytes of bundle and its manifest, then listing on chain",
                text.len()
            ));
            ctx.block_on(list_bundle(
                &chain, &wallet, &up, &keys, &mut db, &text, &opts,
            ))
            .map_err(list_failure)
        },
    )?;
    // how many deposits the stake backs at once: each reserves one slash
    // share (the settings' share of the floor), capped by the listing's
    let backs = match opts.escrow_stake {
        Some(stake) => {
            let settings = ctx
                .block_on(node::market::escrow_trade::read_settings(&chain))
                .map_err(anyhow::Error::from)?;
            let share = node::market::escrow_trade::deposit_share(&settings);
            let n = stake.checked_div(share).unwrap_or(u64::MAX);
            Some((n.min(u64::from(opts.escrow_max_open)), share))
        }
        None => None,
    };
    let v = json!({"ok": true, "listing": rec,
        "escrow_backs": backs.map(|(n, share)| json!({"open_escrows": n, "share_lamports": share}))});
    let price = match &rec.currency {
        node::settle::Currency::Sol if rec.usd.is_some() => format!(
            "{price_usd} USD in SOL at settle time ({} lamports at the oracle's price now)",
            rec.price_lamports
        ),
        node::settle::Currency::Sol => {
            format!(
                "{} lamports ({price_usd} USD at {} USD/SOL)",
                rec.price_lamports,
                sol_usd.unwrap_or_default()
            )
        }
        node::settle::Currency::Token { mint } => {
            format!(
                "{} base units of {mint} ({price_usd} USD)",
                rec.price_lamports
            )
        }
    };
    ctx.emit(&v, || {
        let mut out = format!(
            "listed {} at {price}\n  manifest     {}   <- buyers run: brainctl marketplace buy {}\n  bundle hash  {}\n  list tx      {}",
            rec.listing_id, rec.manifest_id, rec.manifest_id, rec.bundle_hash, rec.list_signature
        );
        if let Some((n, share)) = backs {
            out.push_str(&format!(
                "\n  escrow       the stake backs {n} deposits open at once (each reserves {share} lamports: what a buyer takes if you miss its window); keep `brainctl marketplace listen` running"
            ));
        }
        out
    });
    Ok(())
}

/// The token `--mint` names (`SOL` or nothing: SOL).
fn settle_in(
    mint: Option<&str>,
    token_usd: Option<f64>,
) -> CliResult<Option<node::market::list::SettleIn>> {
    let mint = match mint.map(str::trim) {
        None | Some("") => None,
        Some(m) if m.eq_ignore_ascii_case("sol") => None,
        Some(m) => Some(m.parse::<node::chain::Pubkey>().map_err(|_| {
            Failure::bad_input(anyhow::anyhow!(
                "--mint (or BRAINCTL_SETTLE_MINT): `{m}` is not a base58 mint address (or SOL)"
            ))
        })?),
    };
    match (mint, token_usd) {
        (None, Some(_)) => Err(Failure::bad_input(anyhow::anyhow!(
            "--token-usd prices a token listing: pass --mint too"
        ))),
        (None, None) => Ok(None),
        (Some(mint), token_usd) => Ok(Some(node::market::list::SettleIn { mint, token_usd })),
    }
}

/// `marketplace cancel`: cancel one of this wallet's listings.
pub(super) fn cancel(a: CancelArgs, ctx: &Context) -> CliResult<()> {
    let CancelArgs { listing_id, seller } = a;
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let (mut db, _) = seller_state(ctx, &seller)?;
    let listing_id = super::named::own_listing_id(&db, &listing_id)?;
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
