//! `marketplace listen`: wires the settlement daemon
//! (`node::listen::daemon::run`) to the flags, the signals and the output;
//! the loop itself lives in the library.

use super::super::storage::uploader;
use super::{seller_db_path, seller_keys, CliResult, Context};
use crate::args::ListenArgs;
use node::listen::ListenDb;
use serde_json::json;
use std::time::Duration;

/// `marketplace listen`: the seller's settlement daemon.
pub(super) fn listen(a: ListenArgs, ctx: &Context) -> CliResult<()> {
    let ListenArgs {
        once,
        interval,
        receipt,
        token_standard,
        below_cost_per_hour,
        lookup_table,
        x402,
        x402_network,
        x402_public_url,
        x402_cors_origin,
        x402_shop_rpc,
        x402_shop_script,
        reveal_rpc,
        storage,
        seller,
    } = a;
    // before anything starts: a signal from here on stops the daemon, and
    // ends the process within the grace whatever is in flight
    let signals = stop_signals()?;
    let wallet = ctx.wallet()?;
    // a release stuck below our commitment (a fork, a restart) is
    // retried next round instead of holding up every other buy
    let relays = reveal_rpc
        .iter()
        .map(|u| node::chain::Endpoint::parse(u))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| crate::failure::Failure::bad_input(anyhow::anyhow!("--reveal-rpc: {e}")))?;
    let chain = ctx
        .chain()?
        .with_landing_budget(node::listen::daemon::LANDING_BUDGET)
        .with_secret_relays(&relays);
    let db_path = seller_db_path(ctx, &seller)?;
    let mut db = ListenDb::open_daemon(&db_path)?;
    let keys = seller_keys(ctx, &seller)?;
    let up = uploader(ctx, &storage)?;
    let kind = ctx.block_on(chain.cluster_kind())?;
    node::listen::daemon::check_commitment(kind, chain.commitment())
        .map_err(crate::failure::Failure::bad_input)?;
    let policy = node::chain::FeePolicy::from_env(kind)?;
    let x402 = match x402 {
        None => None,
        // x402's `exact` scheme pays one recipient, the seller: where the
        // protocol fee applies, the buy's release pays the treasury its
        // share (docs/token-settlement.md)
        Some(addr) => Some(x402_endpoint(
            ctx,
            &db_path,
            &storage,
            &addr,
            X402Flags {
                network: x402_network,
                public_url: x402_public_url,
                cors_origins: x402_cors_origin,
                shop_rpc: x402_shop_rpc,
                shop_script: x402_shop_script,
            },
        )?),
    };
    let config = node::listen::daemon::DaemonConfig {
        keys,
        fee: policy.settle_terms(),
        standard: token_standard.into(),
        receipt: receipt.into(),
        below_cost: Some(node::listen::pass::BelowCost {
            floor_lamports: ctx.block_on(node::mint::receipt::release_cost(
                &chain,
                receipt.into(),
                token_standard.into(),
            ))?,
            per_hour: below_cost_per_hour,
        }),
        interval: Duration::from_secs(interval.max(1)),
        once,
        wake_ups: true,
        lookup_table,
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
                "listen: {} new buys, {} verified, {} rejected, {} released, {} retrying, {} below cost waiting; totals {:?}; rss {} MiB",
                p.seen, p.verified, p.rejected, p.released, p.failed, p.deferred, counts,
                rss.map_or("?".into(), |m| format!("{m:.1}"))
            );
        }
    };
    // one stop for the daemon and the endpoint: a signal, or the daemon ending
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let stop = std::sync::Arc::new(stop);
    let on = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    ctx.block_on(async {
        let signal_stop = stop.clone();
        let signalled = signals.signalled();
        tokio::spawn(async move {
            signalled.await;
            let _ = signal_stop.send(true);
        });
        let endpoint = async {
            match x402 {
                Some((listener, state)) => {
                    // registered with this runtime (each block_on has its own)
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    node::x402::endpoint::serve(listener, state, on(stopped.clone())).await
                }
                None => Ok(()),
            }
        };
        let daemon = async {
            let r = node::listen::daemon::run(
                &chain,
                &mut db,
                &wallet,
                &up,
                &config,
                on(stopped.clone()),
                report,
            )
            .await;
            let _ = stop.send(true);
            r
        };
        let (served, ran) = tokio::join!(endpoint, daemon);
        served.map_err(|e| anyhow::anyhow!("the x402 endpoint: {e}"))?;
        ran.map_err(anyhow::Error::from)
    })?;
    if !once {
        eprintln!("listen: stopping (state is durable; restart resumes)");
    }
    Ok(())
}

/// The `--x402-*` flags.
struct X402Flags {
    network: Option<String>,
    public_url: Option<String>,
    cors_origins: Vec<String>,
    shop_rpc: Option<String>,
    shop_script: Option<std::path::PathBuf>,
}

/// The x402 endpoint's listener and state (bound before the daemon starts:
/// a taken address fails the command at once; non-blocking, for the
/// runtime that serves it).
fn x402_endpoint(
    ctx: &Context,
    db_path: &std::path::Path,
    storage: &crate::args::StorageOpts,
    addr: &str,
    flags: X402Flags,
) -> CliResult<(
    std::net::TcpListener,
    std::sync::Arc<node::x402::serve::X402State>,
)> {
    let X402Flags {
        network,
        public_url,
        cors_origins,
        shop_rpc,
        shop_script,
    } = flags;
    // handles of its own (the daemon's are borrowed by its loop); a send
    // that cannot land in the budget gives up (the payment may still land:
    // `listen` releases it, and a retry with it answers the release)
    let (chain, wallet) = (
        ctx.chain()?
            .with_landing_budget(node::listen::daemon::LANDING_BUDGET),
        ctx.wallet()?,
    );
    let cluster = ctx
        .block_on(node::x402::wire::cluster_network(&chain))
        .map_err(|e| {
            anyhow::anyhow!("reading the cluster's genesis hash for --x402-network: {e}")
        })?;
    let network = match network {
        Some(n) => {
            node::x402::wire::check_network(&n, &cluster).map_err(|e| {
                crate::failure::Failure::bad_input(anyhow::anyhow!("--x402-network: {e}"))
            })?;
            n
        }
        None => cluster,
    };
    for o in &cors_origins {
        let origin = o.trim_end_matches('/');
        let scheme_host = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        if scheme_host.is_none_or(|h| h.is_empty() || h.contains('/')) {
            return Err(crate::failure::Failure::bad_input(anyhow::anyhow!(
                "--x402-cors-origin {o}: an origin is a scheme and a host, e.g. https://shop.example (no path)"
            )));
        }
    }
    if let Some(url) = &shop_rpc {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(crate::failure::Failure::bad_input(anyhow::anyhow!(
                "--x402-shop-rpc {url}: an http(s):// URL a browser can reach"
            )));
        }
    }
    let shop = node::x402::shop::ShopConfig {
        rpc_url: shop_rpc.or_else(|| node::x402::wire::public_rpc(&network).map(str::to_string)),
        script: shop_script.or_else(|| {
            ctx.home
                .as_ref()
                .map(|h| h.join(".cache/brainctl/shop/app.js"))
        }),
    };
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| crate::failure::Failure::bad_input(anyhow::anyhow!("--x402 {addr}: {e}")))?;
    let source = super::super::storage::source(ctx, storage)?;
    let state = node::x402::serve::X402State::new(
        chain,
        std::sync::Arc::new(wallet),
        db_path.to_path_buf(),
        source,
        node::x402::serve::X402Config {
            public_url,
            cors_origins,
            shop,
            ..node::x402::serve::X402Config::new(network)
        },
    );
    Ok((listener, state))
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

/// The stop handler every service of the CLI installs before it starts
/// (`listen`, `mcp`): the first SIGINT or SIGTERM stops it, and the process
/// ends within the grace whatever is in flight (see [`node::stop`]).
pub(crate) fn stop_signals() -> CliResult<node::stop::Stop> {
    node::stop::Stop::install().map_err(|e| match e {
        node::stop::StopError::BadGrace(_) => crate::failure::Failure::bad_input(e),
        e => e.into(),
    })
}
