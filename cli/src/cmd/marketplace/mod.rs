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
mod negotiate;
mod sell;
mod status;

pub(crate) use listen::shutdown_signal;

use crate::args::{MarketCmd, SellerState};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::Context as _;
use node::keys::KeyDir;
use node::listen::ListenDb;
use std::path::PathBuf;

fn home_path(rel: &str) -> CliResult<PathBuf> {
    Ok(
        PathBuf::from(std::env::var_os("HOME").context("no HOME directory")?)
            .join(".brainctl")
            .join(rel),
    )
}

/// The seller's listen state database (`--state`, default ~/.brainctl/listen.db).
fn seller_db_path(s: &SellerState) -> CliResult<PathBuf> {
    match &s.state {
        Some(p) => Ok(p.clone()),
        None => home_path("listen.db"),
    }
}

/// Where the seller's bundle keys are (`--keys-dir`, default ~/.brainctl/keys).
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
        MarketCmd::Show(a) => super::browse::show(ctx, &a.indexer, &a.listing_id)?,
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
