//! `brainctl-indexer-bench`: the indexer's development tools, kept out of
//! the operator binary: `synth-log` writes a synthetic log of negotiated
//! trades; `replay`, `api`, `explorer` and `flood` are the benchmarks of
//! `localnet/bench` (the loops users run: the fold, the HTTP API, the
//! explorer's pages, honest clients under a flood). Built only with the
//! `dev-tools` feature:
//! `cargo build --release -p brainctl-indexer --features dev-tools`.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indexer::api;
use indexer::fold::FoldConfig;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "brainctl-indexer-bench",
    version,
    about = "The indexer's benchmarks and synthetic logs (development tools; not for operators)"
)]
struct Cli {
    /// Print results as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a synthetic log of complete negotiated trades (for tests and benchmarks).
    SynthLog {
        /// Output file.
        file: PathBuf,
        /// Trades (6 memos each).
        #[arg(long, default_value_t = 1_667)]
        trades: u64,
        /// Distinct sellers.
        #[arg(long, default_value_t = 40)]
        sellers: u64,
    },
    /// Replay a synthetic log of N trades (6 memos each) in memory.
    Replay {
        /// Trades.
        #[arg(long, default_value_t = 1_667)]
        trades: u64,
        /// Records per ingest batch.
        #[arg(long, default_value_t = 1_000)]
        batch: usize,
    },
    /// GET /listings from many concurrent clients on 127.0.0.1.
    Api {
        /// Listings indexed.
        #[arg(long, default_value_t = 10_000)]
        listings: usize,
        /// Concurrent clients.
        #[arg(long, default_value_t = 100)]
        clients: usize,
        /// Requests per client.
        #[arg(long, default_value_t = 50)]
        requests: usize,
    },
    /// The web explorer's pages (listings, listing, seller) for a market
    /// of N traded listings, one request at a time: p50/p99 per page.
    Explorer {
        /// Listings, each a complete negotiated trade.
        #[arg(long, default_value_t = 10_000)]
        listings: u64,
        /// Requests per page kind.
        #[arg(long, default_value_t = 200)]
        requests: usize,
    },
    /// The indexer at a market's scale: a generated log of N records
    /// (trades with the hostile shapes) written into PostgreSQL, folded
    /// into the state tables by the writer's catch-up loop (cold rate,
    /// peak memory, a new memo alone and behind junk, a record before the
    /// head, the state hash) and, with a hot standby, an API server
    /// reading it (visibility after commit, 100 concurrent clients).
    #[command(alias = "tables")]
    Scale {
        /// PostgreSQL URL of an empty database (the bench writes its log).
        #[arg(long, env = "BRAINCTL_BENCH_PG")]
        pg: String,
        /// A hot standby of it: also measure an API server reading there.
        #[arg(long, env = "BRAINCTL_BENCH_PG_STANDBY")]
        standby: Option<String>,
        /// Records in the generated log.
        #[arg(long, default_value_t = 100_000)]
        records: usize,
        /// New memos measured.
        #[arg(long, default_value_t = 20)]
        samples: usize,
    },
    /// Honest browse/detail clients alone, then beside attackers hinting
    /// old transactions and flooding /auth/challenge; p50/p99 of both.
    Flood {
        /// Listings indexed.
        #[arg(long, default_value_t = 10_000)]
        listings: usize,
        /// Honest clients.
        #[arg(long, default_value_t = 100)]
        honest: usize,
        /// Attackers (half hint old transactions, half flood challenges).
        #[arg(long, default_value_t = 100)]
        attackers: usize,
        /// Requests per honest client.
        #[arg(long, default_value_t = 40)]
        requests: usize,
        /// Most requests per attacker.
        #[arg(long, default_value_t = 400)]
        attacks: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 120)]
        deadline_secs: u64,
        /// Serve without rate limits (what the hints alone cost).
        #[arg(long)]
        no_limits: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cli: Cli) -> Result<()> {
    let json = cli.json;
    match cli.cmd {
        Cmd::SynthLog {
            file,
            trades,
            sellers,
        } => {
            let records = indexer::synth::trades(trades, sellers);
            write_log(&file, &records)?;
            print(
                json,
                json!({"records": records.len(), "file": file}),
                &format!(
                    "wrote {} records ({trades} trades) to {}",
                    records.len(),
                    file.display()
                ),
            );
            Ok(())
        }
        Cmd::Replay { trades, batch } => {
            let records = indexer::synth::trades(trades, 40);
            let r = indexer::loadtest::replay(&records, batch, FoldConfig::default());
            print(json, serde_json::to_value(&r)?, &r.summary());
            Ok(())
        }
        Cmd::Api {
            listings,
            clients,
            requests,
        } => {
            let r = indexer::loadtest::api_load(listings, clients, requests).await?;
            print(json, serde_json::to_value(&r)?, &format!(
                "GET /listings ({} listings, {} clients, {} requests): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {:.0} req/s",
                r.listings, r.clients, r.requests, r.p50_ms, r.p99_ms, r.max_ms, r.requests_per_second
            ));
            Ok(())
        }
        Cmd::Explorer { listings, requests } => {
            let r = indexer::loadtest::explorer::explorer(listings, requests).await?;
            let lines: Vec<String> = r
                .pages
                .iter()
                .map(|p| {
                    format!(
                        "  {:<40} p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms",
                        p.page, p.p50_ms, p.p99_ms, p.max_ms
                    )
                })
                .collect();
            print(
                json,
                serde_json::to_value(&r)?,
                &format!(
                    "explorer pages ({} traded listings, {} requests each):\n{}",
                    r.listings,
                    requests,
                    lines.join("\n")
                ),
            );
            Ok(())
        }
        Cmd::Scale {
            pg,
            standby,
            records,
            samples,
        } => {
            let r = tokio::task::spawn_blocking(move || {
                indexer::loadtest::tables::tables(&pg, standby.as_deref(), records, samples)
            })
            .await??;
            print(json, serde_json::to_value(&r)?, &r.summary());
            Ok(())
        }
        Cmd::Flood {
            listings,
            honest,
            attackers,
            requests,
            attacks,
            deadline_secs,
            no_limits,
        } => {
            let r = indexer::loadtest::flood::flood(
                listings,
                honest,
                attackers,
                requests,
                attacks,
                Duration::from_secs(deadline_secs),
                match no_limits {
                    true => api::RateLimits::off(),
                    false => api::RateLimits::default(),
                },
            )
            .await?;
            print(json, serde_json::to_value(&r)?, &format!(
                "honest browse+detail ({} listings, {} honest + {} attackers): quiet p50 {:.2} ms p99 {:.2} ms; flood p50 {:.2} ms p99 {:.2} ms (max {:.2} ms); hints {:?}, challenges {:?}, refolds {}, late hints folded {}",
                r.listings, r.honest_clients, r.attackers, r.quiet.p50_ms, r.quiet.p99_ms,
                r.flood.p50_ms, r.flood.p99_ms, r.flood.max_ms, r.hints, r.challenges, r.refolds, r.late_folded
            ));
            Ok(())
        }
    }
}

fn print(json: bool, value: serde_json::Value, human: &str) {
    if json {
        println!("{value}");
    } else {
        println!("{human}");
    }
}

fn write_log(file: &std::path::Path, records: &[indexer::record::TxRecord]) -> Result<()> {
    let f = std::fs::File::create(file).with_context(|| format!("create {}", file.display()))?;
    indexer::logfile::write(f, records)?;
    Ok(())
}
