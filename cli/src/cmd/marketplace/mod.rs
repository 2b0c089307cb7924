//! `brainctl marketplace ...`: one file per family of subcommands (as
//! ripgrep and mini-redis lay out theirs), each a thin wiring of flags to
//! `node::market` / `node::listen` and of their errors to exit codes.
//!
//! - `sell`: `list`, `cancel`
//! - `negotiate`: `offer`, `counter`, `accept`, `reject`, `withdraw`
//! - `buy`: `buy`, `fetch`, `quote`, `budget`, `refund`
//! - `status`: the seller's view
//! - `listen`: the settlement daemon
//! - `browse` / `show` live in `cmd::browse` (the indexer's views)

mod buy;
mod listen;
mod named;
mod negotiate;
mod sell;
mod status;
mod watch;

pub(crate) use listen::stop_signals;

use crate::args::{MarketCmd, SellerState};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use node::keys::KeyDir;
use node::listen::ListenDb;
use std::path::PathBuf;

/// The seller's listen state database (`--state`, default ~/.brainctl/listen.db).
fn seller_db_path(ctx: &Context, s: &SellerState) -> CliResult<PathBuf> {
    match &s.state {
        Some(p) => Ok(p.clone()),
        None => ctx.brainctl_path("listen.db", "--state PATH"),
    }
}

/// Where the seller's bundle keys are (`--keys-dir`, default ~/.brainctl/keys).
fn seller_keys(ctx: &Context, s: &SellerState) -> CliResult<KeyDir> {
    Ok(KeyDir::new(match &s.keys_dir {
        Some(d) => d.clone(),
        None => ctx.brainctl_path("keys", "--keys-dir DIR")?,
    }))
}

/// The seller's state for a command: opened beside a running daemon (no
/// lock; SQLite WAL with short transactions keeps both consistent).
fn seller_state(ctx: &Context, s: &SellerState) -> CliResult<(ListenDb, KeyDir)> {
    Ok((
        ListenDb::open(&seller_db_path(ctx, s)?)?,
        seller_keys(ctx, s)?,
    ))
}

/// Runs one `marketplace` subcommand.
pub fn run(cmd: MarketCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        MarketCmd::List(a) => sell::list(a, ctx)?,
        MarketCmd::Cancel(a) => sell::cancel(a, ctx)?,
        MarketCmd::Offer(a) => negotiate::offer(a, ctx)?,
        MarketCmd::Counter(a) => negotiate::counter(a, ctx)?,
        MarketCmd::Withdraw(a) => negotiate::withdraw(a, ctx)?,
        MarketCmd::Accept(a) => negotiate::accept(a, ctx)?,
        MarketCmd::Reject(a) => negotiate::reject(a, ctx)?,
        MarketCmd::Buy(a) => buy::buy(a, ctx)?,
        MarketCmd::Fetch(a) => buy::fetch(a, ctx)?,
        MarketCmd::Quote(a) => buy::quote(a, ctx)?,
        MarketCmd::Budget(a) => buy::budget(a, ctx)?,
        MarketCmd::Refund(a) => buy::refund(a, ctx)?,
        MarketCmd::Dispute(a) => buy::dispute(a, ctx)?,
        MarketCmd::Watch(a) => watch::watch(a, ctx)?,
        MarketCmd::Browse(a) => super::browse::browse(
            ctx,
            &a.indexer,
            a.max_price_usd,
            a.category,
            a.seller,
            a.status.as_str().to_string(),
            a.limit,
            a.cursor,
        )?,
        MarketCmd::Show(a) => {
            let id = named::listing_id(ctx, &a.storage, &a.listing_id)?;
            super::browse::show(ctx, &a.indexer, &id, a.include_messages)?
        }
        MarketCmd::Status(a) => status::status(a, ctx)?,
        MarketCmd::Listen(a) => listen::listen(a, ctx)?,
    }
    Ok(0)
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
