//! `marketplace watch`: the buyer's service over its pending escrow buys
//! (`node::watch`), wired to the process's stop signals.

use super::{CliResult, Context};
use crate::args::WatchArgs;
use serde_json::json;
use std::time::Duration;

/// Runs the service (or lists the pending buys with `--list`).
pub(super) fn watch(a: WatchArgs, ctx: &Context) -> CliResult<()> {
    if a.list {
        let rows = ctx
            .pending_escrows()?
            .recent(50)
            .map_err(anyhow::Error::from)?;
        let shown: Vec<_> = rows
            .iter()
            .map(|row| match row {
                Ok(p) => {
                    json!({"buy_signature": p.buy_signature, "listing_id": p.listing.listing_id,
                    "escrow": p.escrow, "state": p.state, "detail": p.detail,
                    "landed": p.landed, "escrow_open": p.escrow_open})
                }
                Err(e) => json!({"unreadable": e.to_string()}),
            })
            .collect();
        let v = json!({"ok": true, "buys": shown});
        ctx.emit(&v, || {
            if rows.is_empty() {
                return "no escrow buys recorded for this wallet".to_string();
            }
            rows.iter()
                .map(|row| match row {
                    Ok(p) => format!(
                        "{:<9} {}  {}  {}",
                        serde_json::to_value(p.state)
                            .ok()
                            .and_then(|s| s.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        p.listing.listing_id,
                        p.buy_signature,
                        crate::terminal::safe(&p.detail)
                    ),
                    Err(e) => format!("unreadable {}", crate::terminal::safe(&e.to_string())),
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
        return Ok(());
    }
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let path = node::market::pending::pending_path(&ctx.wallet_path);
    if a.once {
        let store = ctx.pending_escrows()?;
        let now = || time::OffsetDateTime::now_utc().unix_timestamp();
        let outcomes = ctx
            .block_on(node::watch::pass(
                &chain,
                &wallet,
                &store,
                ctx.fee_ledger()?.as_mut(),
                now,
            ))
            .map_err(anyhow::Error::from)?;
        let still = store.open_count().map_err(anyhow::Error::from)?;
        let v = json!({"ok": true, "outcomes": outcomes, "still_pending": still});
        ctx.emit(&v, || {
            let mut out: Vec<String> = outcomes
                .iter()
                .map(|o| {
                    format!(
                        "{:?} {} (buy {}): {}",
                        o.state, o.listing_id, o.buy_signature, o.detail
                    )
                })
                .collect();
            out.push(format!("{still} escrow buys still pending"));
            out.join("\n")
        });
        return Ok(());
    }
    let signals = super::listen::stop_signals()?;
    let json = ctx.json;
    let report = |outcomes: &[node::watch::Outcome]| {
        for o in outcomes {
            if json {
                println!("{}", json!({"ok": true, "outcome": o}));
            } else {
                let line = format!(
                    "{:?} {} (buy {}): {}",
                    o.state, o.listing_id, o.buy_signature, o.detail
                );
                eprintln!("{}", crate::terminal::safe(&line));
            }
        }
    };
    ctx.block_on(node::watch::run(
        &chain,
        &wallet,
        path,
        ctx.fee_ledger()?,
        Duration::from_secs(a.every),
        a.until_done,
        report,
        signals.signalled(),
    ))
    .map_err(anyhow::Error::from)?;
    Ok(())
}
