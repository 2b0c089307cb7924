//! `brainctl-indexer`: the operator binary. `run` ingests and serves;
//! `rebuild` re-reads the whole chain history into an empty log;
//! `state-hash`, `export-log` and `replay-log` work on stored or recorded
//! logs. Errors go to stderr with what to do about them; `--json` prints
//! machine-readable results.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indexer::api::{self, AppState};
use indexer::engine::Indexer;
use indexer::fold::{FoldConfig, DEFAULT_RELEASE_GRACE_SECS};
use indexer::ingest::RpcSource;
use indexer::record::TxRecord;
use indexer::store::{LogStore, SqliteStore};
use node::arweave::{FsStore, Source};
use node::chain::{Chain, ClusterKind, Endpoint, FeePolicy, Pubkey};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "brainctl-indexer",
    version,
    about = "Rebuilds brainctl marketplace state from chain memos and serves it over HTTP",
    long_about = "Rebuilds every listing, offer and settlement of the brainctl marketplace \
from chain memos alone and serves them over HTTP (the REST surface of PROTOCOL.md §9).\n\n\
It holds no keys and never signs: POST endpoints are hints it verifies on chain, and \
/settle returns an unsigned transaction for the buyer to sign.\n\n\
Quick start on localnet:\n  brainctl-indexer run --rpc http://127.0.0.1:8899 \
--gateway http://127.0.0.1:1984 --db indexer.db --listen 127.0.0.1:8080"
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
    /// Ingest continuously and serve the HTTP API until SIGINT/SIGTERM.
    Run(RunArgs),
    /// An API server beside the writer: answers from the state tables
    /// another process (`run`) keeps (the same SQLite file, the Postgres
    /// database, or a hot standby of it with --read-pg), folding nothing.
    /// Hints and /settle are off; sign-in works and sessions are shared
    /// with every process on the same database.
    Serve(ServeArgs),
    /// Re-read the whole chain history into an empty log and print its state hash.
    Rebuild(RebuildArgs),
    /// Print the hash of the canonical state: folded from the stored log
    /// (SQLite), or of the state tables the writer keeps (PostgreSQL).
    StateHash(DbArg),
    /// Write the stored log as JSONL (one transaction record per line).
    ExportLog {
        #[command(flatten)]
        db: DbArg,
        /// Output file.
        file: PathBuf,
    },
    /// Fold a recorded JSONL log in memory; print its state hash and speed.
    ReplayLog {
        /// The log (from `export-log`).
        file: PathBuf,
        /// Records per ingest batch (the hash does not depend on it).
        #[arg(long, default_value_t = 1_000)]
        batch: usize,
        /// Seconds before a paid buy without release counts as unreleased.
        #[arg(long, default_value_t = DEFAULT_RELEASE_GRACE_SECS)]
        release_grace_secs: i64,
    },
}

#[derive(Args)]
struct DbArg {
    /// The indexer database (SQLite, WAL): the embedded default.
    #[arg(long, env = "BRAINCTL_INDEXER_DB", default_value = "indexer.db")]
    db: PathBuf,
    /// A PostgreSQL database instead (libpq URL, e.g.
    /// postgres://indexer@db-host/brainctl): one `run` writes, any number
    /// of `serve` replicas read and share sign-in sessions.
    #[arg(long, env = "BRAINCTL_INDEXER_PG", value_name = "URL")]
    pg: Option<String>,
}

impl DbArg {
    /// Where the log is, for messages (a Postgres URL without its password).
    fn describe(&self) -> String {
        match &self.pg {
            Some(url) => redact(url),
            None => self.db.display().to_string(),
        }
    }
}

#[derive(Args)]
struct SourceArgs {
    /// Solana JSON-RPC URL (or localnet/devnet/mainnet-beta).
    #[arg(
        long,
        env = "BRAINCTL_INDEXER_RPC",
        default_value = "http://127.0.0.1:8899"
    )]
    rpc: String,
    /// Websocket URL for the chain's push notifications (`logsSubscribe`;
    /// default: the RPC URL's, port + 1, as the Solana CLI derives it).
    #[arg(long, env = "BRAINCTL_INDEXER_WS")]
    ws: Option<String>,
    /// Arweave gateway serving manifests by item id.
    #[arg(long, env = "BRAINCTL_GATEWAY_URL", conflicts_with = "fs_store")]
    gateway: Option<String>,
    /// A local content-addressed item directory instead of a gateway.
    #[arg(long, env = "BRAINCTL_FS_STORE")]
    fs_store: Option<PathBuf>,
    /// Extra seller payment addresses to watch (the registry is always watched).
    #[arg(long = "address", value_name = "PUBKEY")]
    addresses: Vec<String>,
    /// Discovery registry address (default: the protocol's).
    #[arg(long, env = "BRAINCTL_REGISTRY")]
    registry: Option<String>,
    /// Concurrent transaction fetches.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// RPC requests per second (0 = unlimited). Polls and hints queue for
    /// it; the fetches of transactions the chain notifies go beside that
    /// queue at the same rate, so a busy poll never delays them.
    #[arg(long, default_value_t = 40)]
    rps: u32,
    /// Seconds before a paid buy without release counts as unreleased.
    #[arg(long, default_value_t = DEFAULT_RELEASE_GRACE_SECS)]
    release_grace_secs: i64,
    /// Seconds a transaction whose manifest the gateway does not serve yet
    /// is held back and re-fetched before it is folded without it.
    #[arg(long, default_value_t = indexer::ingest::DEFAULT_MANIFEST_GRACE.as_secs())]
    manifest_grace_secs: u64,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    src: SourceArgs,
    /// Address the HTTP API listens on.
    #[arg(
        long,
        env = "BRAINCTL_INDEXER_LISTEN",
        default_value = "127.0.0.1:8080"
    )]
    listen: String,
    /// Milliseconds between polls.
    #[arg(long, default_value_t = 1_000)]
    interval_ms: u64,
    /// Poll only every --interval-ms. By default the indexer also
    /// subscribes to the chain's push notifications (`logsSubscribe` on the
    /// websocket, see --ws) and folds each notified transaction at once,
    /// reading the history whenever a subscription becomes live (the gap a
    /// dropped one leaves); the interval stays the safety net.
    #[arg(long)]
    no_wake_ups: bool,
    /// Push notifications on (the default; kept for scripts that pass it).
    #[arg(long, hide = true, conflicts_with = "no_wake_ups")]
    wake_ups: bool,
    /// Name shown in sign-in messages: the host name clients reach this
    /// indexer at (default: `brainctl-indexer-<id>`, generated once per
    /// database, so no two deployments' messages read alike).
    #[arg(long)]
    domain: Option<String>,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Rate limits (requests per minute; 0 turns one off). Reads are never
/// limited; over a limit a client gets 429 with Retry-After.
#[derive(Args)]
struct LimitArgs {
    /// Sign-in requests (`/auth/challenge`, `/auth/verify`) per client IP per minute.
    #[arg(long, default_value_t = 60)]
    sign_in_per_min: u32,
    /// Writes (hints, `/settle`) per client IP per minute.
    #[arg(long, default_value_t = 600)]
    writes_per_ip_per_min: u32,
    /// Writes per signed-in session per minute.
    #[arg(long, default_value_t = 120)]
    writes_per_session_per_min: u32,
    /// Behind reverse proxies: the header they write the client's address
    /// into (e.g. X-Forwarded-For), so per-IP limits count each client,
    /// not the proxy. Off by default: the socket's peer is the client.
    /// Only set it when every request passes through your proxies.
    #[arg(long, value_name = "HEADER")]
    client_ip_header: Option<String>,
    /// With --client-ip-header: how many proxies you run in front of the
    /// indexer (each appends to the header); the client is that many
    /// entries from the right, anything left of it is never trusted.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        requires = "client_ip_header"
    )]
    trusted_proxy_hops: usize,
}

impl LimitArgs {
    fn limiter(&self) -> Result<Arc<api::Limiter>> {
        let limits = api::RateLimits::per_minute(
            self.sign_in_per_min,
            self.writes_per_ip_per_min,
            self.writes_per_session_per_min,
        );
        let client_ip = match &self.client_ip_header {
            Some(h) => api::ClientIp::header(h, self.trusted_proxy_hops)?,
            None => api::ClientIp::socket(),
        };
        Ok(api::Limiter::with_client_ip(limits, client_ip))
    }
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    db: DbArg,
    /// Address the HTTP API listens on.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: String,
    /// Name shown in sign-in messages (default: the one the writer's
    /// database holds, the same on every replica of it).
    #[arg(long)]
    domain: Option<String>,
    /// Ignored (kept for scripts): a server reads the state tables the
    /// writer keeps and never refolds.
    #[arg(long, default_value_t = 2_000, hide = true)]
    refold_ms: u64,
    /// With --pg: read the state from this database instead, a hot
    /// standby of it (streaming replication); sign-in sessions are still
    /// written to --pg. Each answer names the log position it reflects
    /// (header x-indexer-position).
    #[arg(long, requires = "pg", value_name = "URL")]
    read_pg: Option<String>,
    /// With --pg: connections reading the state (concurrent answers).
    #[arg(long, default_value_t = 8)]
    readers: usize,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Args)]
struct RebuildArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    src: SourceArgs,
    /// Drop the existing log (sessions are kept) instead of refusing.
    #[arg(long)]
    force: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // the guides' test checks every documented command line parses
    // (cli/tests/docs.rs); nothing runs
    if std::env::var_os("BRAINCTL_PARSE_ONLY").is_some() {
        return ExitCode::SUCCESS;
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // colours only on a terminal: a service's log file stays plain text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<BadInput>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

async fn dispatch(cli: Cli) -> Result<()> {
    let json = cli.json;
    match cli.cmd {
        Cmd::Run(a) => run(a).await,
        Cmd::Serve(a) => serve(a).await,
        Cmd::Rebuild(a) => rebuild(a, json).await,
        Cmd::StateHash(d) => {
            let store = open_store(&d, Create::No)?;
            let ix = match &d.pg {
                // the tables as the writer keeps them (never a second writer)
                Some(_) => {
                    open_tables(store, FoldConfig::default(), &StateAt::reader(&d, None), 1)?
                }
                // the stored log folded here, whatever wrote the file
                None => Indexer::open(store, FoldConfig::default())?,
            };
            let (s, hash) = ix.head_hash()?;
            let t = ix.read(&indexer::statedb::read::Scope::Head)?.totals();
            print(
                json,
                json!({
                    "state_hash": hash,
                    "transactions": s.transactions,
                    "listings": t.listings,
                    "offers": t.offers,
                    "settlements": t.settlements,
                    "rejected": t.rejected,
                }),
                &hash,
            );
            Ok(())
        }
        Cmd::ExportLog { db, file } => {
            let store = open_store(&db, Create::No)?;
            let records = store.records()?;
            write_log(&file, &records)?;
            print(
                json,
                json!({"records": records.len(), "file": file}),
                &format!("wrote {} records to {}", records.len(), file.display()),
            );
            Ok(())
        }
        Cmd::ReplayLog {
            file,
            batch,
            release_grace_secs,
        } => replay_log(&file, batch, release_grace_secs, json),
    }
}

fn print(json: bool, value: serde_json::Value, human: &str) {
    if json {
        println!("{value}");
    } else {
        println!("{human}");
    }
}

/// Writes `records` as a JSONL log to `file`.
fn write_log(file: &Path, records: &[indexer::record::TxRecord]) -> Result<()> {
    let f = std::fs::File::create(file).with_context(|| format!("create {}", file.display()))?;
    indexer::logfile::write(f, records)?;
    Ok(())
}

/// An error in what the operator asked for (exit 2), not in the run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadInput(String);

/// Whether a command may create the SQLite database it is pointed at
/// (`run`, `rebuild`) or reads one that must already exist (`serve`,
/// `state-hash`, `export-log`: a mistyped `--db` would otherwise serve or
/// hash an empty log as if it were the market).
#[derive(Clone, Copy, PartialEq)]
enum Create {
    Yes,
    No,
}

fn open_store(db: &DbArg, create: Create) -> Result<Box<dyn LogStore>> {
    if create == Create::No && db.pg.is_none() && !db.db.exists() {
        return Err(BadInput(format!(
            "no indexer database at {} (a typo? `brainctl-indexer run --db {}` creates one)",
            db.db.display(),
            db.db.display()
        ))
        .into());
    }
    Ok(match &db.pg {
        Some(url) => Box::new(
            indexer::store::PgStore::connect(url)
                .with_context(|| format!("indexer database {}", db.describe()))?,
        ),
        None => Box::new(
            SqliteStore::open(&db.db)
                .with_context(|| format!("indexer database {}", db.describe()))?,
        ),
    })
}

/// Opens the log at `db`, checking it was built for `cluster` (recorded
/// on first use, with the fold rules, for replicas) and folding it.
fn open_indexer(
    db: &DbArg,
    cfg: FoldConfig,
    cluster: Option<&str>,
    create: Create,
) -> Result<Indexer> {
    open_indexer_as(db, cfg, cluster, create, None)
}

/// The state tables of `db` opened as their one writer (refused while
/// another process, a live `run`, holds the writer's lock).
fn writer_of(db: &DbArg) -> Result<Box<dyn indexer::statedb::StateDb>> {
    let at = StateUrl::of(db);
    at.writer()
        .with_context(|| format!("the state tables at {} (writer)", at.describe()))
}

/// [`open_indexer`], the writer's tables already opened (and their lock
/// held) where `writer` is given.
fn open_indexer_as(
    db: &DbArg,
    cfg: FoldConfig,
    cluster: Option<&str>,
    create: Create,
    writer: Option<Box<dyn indexer::statedb::StateDb>>,
) -> Result<Indexer> {
    let mut store = open_store(db, create)?;
    if let Some(c) = cluster {
        match store.meta("cluster")? {
            Some(had) if had != c => bail!(
                "{} indexes {had}, but the RPC serves {c}; use another database for {c}",
                db.describe()
            ),
            Some(_) => {}
            None => store.set_meta("cluster", c)?,
        }
        store.set_meta("fee_treasury", cfg.fee_treasury.as_deref().unwrap_or(""))?;
        store.set_meta("release_grace_secs", &cfg.release_grace_secs.to_string())?;
    }
    // the state lives in the database, beside the log
    open_tables_with(store, cfg, &StateAt::writer(db), 4, writer)
}

/// Where the state tables are, and who opens them.
struct StateAt {
    /// The writer's database (`None`: this process only reads).
    writer: Option<StateUrl>,
    /// The database the readers read (the same, or a hot standby).
    read: StateUrl,
}

/// A state database.
#[derive(Clone)]
enum StateUrl {
    /// PostgreSQL.
    Pg(String),
    /// The SQLite file of the log.
    Sqlite(PathBuf),
}

impl StateAt {
    /// The one writer of `db`'s tables (reading them too).
    fn writer(db: &DbArg) -> StateAt {
        let at = StateUrl::of(db);
        StateAt {
            writer: Some(at.clone()),
            read: at,
        }
    }

    /// A reader of `db`'s tables, or of `read_pg` (a standby) if named.
    fn reader(db: &DbArg, read_pg: Option<&str>) -> StateAt {
        StateAt {
            writer: None,
            read: match read_pg {
                Some(url) => StateUrl::Pg(url.to_string()),
                None => StateUrl::of(db),
            },
        }
    }
}

impl StateUrl {
    fn of(db: &DbArg) -> StateUrl {
        match &db.pg {
            Some(url) => StateUrl::Pg(url.clone()),
            None => StateUrl::Sqlite(db.db.clone()),
        }
    }

    fn describe(&self) -> String {
        match self {
            StateUrl::Pg(url) => redact(url),
            StateUrl::Sqlite(path) => path.display().to_string(),
        }
    }

    fn writer(&self) -> Result<Box<dyn indexer::statedb::StateDb>> {
        use indexer::statedb::{postgres::PgState, sqlite::SqliteState};
        Ok(match self {
            StateUrl::Pg(url) => Box::new(PgState::connect_writer(url)?),
            StateUrl::Sqlite(path) => Box::new(SqliteState::open_writer(path)?),
        })
    }

    fn reader(&self) -> Result<Box<dyn indexer::statedb::StateDb>> {
        use indexer::statedb::{postgres::PgState, sqlite::SqliteState};
        Ok(match self {
            StateUrl::Pg(url) => Box::new(PgState::connect_reader(url)?),
            StateUrl::Sqlite(path) => Box::new(SqliteState::open(path)?),
        })
    }
}

/// Opens over `store` with the state kept as tables `at` (folded there
/// by the writer, if this process is it; read through `readers`
/// connections). A long fold logs its progress.
fn open_tables(
    store: Box<dyn LogStore>,
    cfg: FoldConfig,
    at: &StateAt,
    readers: usize,
) -> Result<Indexer> {
    open_tables_with(store, cfg, at, readers, None)
}

/// [`open_tables`], the writer's tables `held` already opened where given.
fn open_tables_with(
    store: Box<dyn LogStore>,
    cfg: FoldConfig,
    at: &StateAt,
    readers: usize,
    held: Option<Box<dyn indexer::statedb::StateDb>>,
) -> Result<Indexer> {
    let writer = match (held, &at.writer) {
        (Some(held), _) => Some(held),
        (None, Some(w)) => Some(
            w.writer()
                .with_context(|| format!("the state tables at {} (writer)", w.describe()))?,
        ),
        (None, None) => None,
    };
    let readers = (0..readers.max(1))
        .map(|_| {
            at.read
                .reader()
                .with_context(|| format!("read the state tables at {}", at.read.describe()))
        })
        .collect::<Result<Vec<_>>>()?;
    let started = std::time::Instant::now();
    let mut said = started;
    let mut progress = |folded: usize, total: usize| {
        if said.elapsed() >= Duration::from_secs(10) {
            said = std::time::Instant::now();
            let rate = folded as f64 / started.elapsed().as_secs_f64().max(1e-9);
            tracing::info!(
                folded,
                total,
                records_per_second = rate as u64,
                eta_secs = ((total.saturating_sub(folded)) as f64 / rate.max(1.0)) as u64,
                "folding the log into the state tables"
            );
        }
    };
    Ok(Indexer::open_tables(
        store,
        cfg,
        writer,
        readers,
        &mut progress,
    )?)
}

/// A Postgres URL for messages: its host alone, never its credentials.
fn redact(url: &str) -> String {
    match url.split_once('@') {
        Some((_, host)) => format!("postgres (…@{host})"),
        None => "postgres".to_string(),
    }
}

/// The cluster and fold rules a writer recorded in `store`.
fn recorded_rules(store: &dyn LogStore, db: &DbArg) -> Result<(String, FoldConfig)> {
    let missing = || {
        anyhow::anyhow!(
            "{} has no cluster recorded: start the writer (`brainctl-indexer run`) on it first",
            db.describe()
        )
    };
    let cluster = store.meta("cluster")?.ok_or_else(missing)?;
    let grace = store
        .meta("release_grace_secs")?
        .and_then(|g| g.parse().ok())
        .unwrap_or(DEFAULT_RELEASE_GRACE_SECS);
    let treasury = store.meta("fee_treasury")?.filter(|t| !t.is_empty());
    Ok((
        cluster,
        FoldConfig {
            fee_treasury: treasury,
            release_grace_secs: grace,
        },
    ))
}

/// The RPC source, the cluster's name and the fold rules for it.
async fn connect(src: &SourceArgs) -> Result<(RpcSource, String, FoldConfig, Pubkey)> {
    let mut endpoint = Endpoint::parse(&src.rpc)
        .with_context(|| format!("--rpc {}", node::chain::retry::origin(&src.rpc)))?;
    if let Some(ws) = &src.ws {
        if !(ws.starts_with("ws://") || ws.starts_with("wss://")) {
            anyhow::bail!("--ws {ws}: not a websocket URL (ws:// or wss://)");
        }
        endpoint.ws_url = ws.trim_end_matches('/').to_string();
    }
    // the escrow program's deposits (calls) and events (logs) are folded
    let chain = Chain::new(
        endpoint,
        solana_commitment_config::CommitmentConfig::confirmed(),
        &[node::escrow::PROGRAM_ID],
    );
    let kind = chain.cluster_kind().await.with_context(|| {
        format!(
            "reach the RPC at {} (is the validator up?)",
            node::chain::retry::origin(&src.rpc)
        )
    })?;
    let cluster = match kind {
        ClusterKind::Local => "localnet".to_string(),
        k => k.name().to_string(),
    };
    let policy = FeePolicy::from_env(kind)?;
    let cfg = FoldConfig {
        fee_treasury: policy.enabled.then(|| policy.treasury.to_string()),
        release_grace_secs: src.release_grace_secs,
    };
    let registry = match &src.registry {
        Some(r) => Pubkey::from_str(r.trim())
            .map_err(|_| anyhow::anyhow!("--registry {r} is not a base58 pubkey"))?,
        None => node::chain::instructions::default_registry(),
    };
    // The escrow program's history too: its events fold beside the memos.
    let mut addresses = vec![registry, node::escrow::program_id()];
    for a in &src.addresses {
        let pk = Pubkey::from_str(a.trim())
            .map_err(|_| anyhow::anyhow!("--address {a} is not a base58 pubkey"))?;
        if !addresses.contains(&pk) {
            addresses.push(pk);
        }
    }
    let gateway = match (&src.gateway, &src.fs_store) {
        (Some(url), _) => Source::Gateway(url.trim_end_matches('/').to_string()),
        (None, Some(dir)) => Source::Fs(FsStore::new(dir)),
        (None, None) => {
            bail!("no manifest source: pass --gateway URL (an Arweave gateway) or --fs-store DIR")
        }
    };
    let source = RpcSource::new(chain, gateway, addresses, src.concurrency, src.rps)
        .with_manifest_grace(Duration::from_secs(src.manifest_grace_secs));
    Ok((source, cluster, cfg, registry))
}

async fn run(a: RunArgs) -> Result<()> {
    let signals = stop_signals()?;
    let (source, cluster, cfg, registry) = connect(&a.src).await?;
    let ix = Arc::new(open_indexer(&a.db, cfg, Some(&cluster), Create::Yes)?);
    let source = Arc::new(source);
    let listener = tokio::net::TcpListener::bind(&a.listen)
        .await
        .with_context(|| format!("listen on {}", a.listen))?;
    // its own statement: the store's lock ends before AppState::new takes it
    let domain = indexer::auth::deployment_domain(&mut **ix.store(), a.domain.as_deref())?;
    let state = AppState {
        domain,
        registry,
        limiter: a.limits.limiter()?,
        ..AppState::new(ix.clone(), &cluster).with_chain(source.clone())
    };
    tracing::info!(
        listen = %listener.local_addr()?,
        %cluster,
        db = %a.db.describe(),
        "brainctl-indexer serving"
    );
    let interval = Duration::from_millis(a.interval_ms);
    indexer::service::run(
        listener,
        state,
        source,
        (interval, !a.no_wake_ups),
        signals.signalled(),
    )
    .await?;
    Ok(())
}

/// A read replica (see `Cmd::Serve`).
async fn serve(a: ServeArgs) -> Result<()> {
    let signals = stop_signals()?;
    let store = open_store(&a.db, Create::No)?;
    let (cluster, cfg) = recorded_rules(&*store, &a.db)?;
    // stateless: answers read the state tables (on a standby, if named)
    let at = StateAt::reader(&a.db, a.read_pg.as_deref());
    let ix = Arc::new(open_tables(store, cfg, &at, a.readers)?);
    let listener = tokio::net::TcpListener::bind(&a.listen)
        .await
        .with_context(|| format!("listen on {}", a.listen))?;
    let domain = indexer::auth::deployment_domain(&mut **ix.store(), a.domain.as_deref())?;
    let state = AppState {
        domain,
        limiter: a.limits.limiter()?,
        ..AppState::new(ix.clone(), &cluster)
    };
    tracing::info!(listen = %listener.local_addr()?, %cluster, db = %a.db.describe(), "brainctl-indexer serving (reads the state tables)");
    // the state tables are the state: nothing to fold, only answers
    indexer::http::serve(listener, state, signals.signalled()).await?;
    Ok(())
}

/// The stop handler (see [`node::stop`]): installed before the service
/// starts; the first SIGINT or SIGTERM stops it, and the process ends
/// within the grace whatever is in flight.
fn stop_signals() -> Result<node::stop::Stop> {
    node::stop::Stop::install().context("the stop handler")
}

async fn rebuild(a: RebuildArgs, json: bool) -> Result<()> {
    let (source, cluster, cfg, _) = connect(&a.src).await?;
    let writer = {
        // the log opened (a new database made), then the writer's lock
        // before anything in it is cleared: beside a live `run` (which
        // holds the lock) the rebuild is refused, the database unchanged
        let mut store = open_store(&a.db, Create::Yes)?;
        let writer = writer_of(&a.db)?;
        if !store.is_empty()? {
            if !a.force {
                bail!(
                    "{} already holds a log; pass --force to drop it, or give a new --db",
                    a.db.describe()
                );
            }
            store.clear_log()?;
        }
        writer
    };
    let ix = std::sync::Arc::new(open_indexer_as(
        &a.db,
        cfg,
        Some(&cluster),
        Create::Yes,
        Some(writer),
    )?);
    let started = Instant::now();
    // polls until caught up: a long history is synced a page a poll, each
    // page stored with its progress (a killed rebuild resumes with `run`
    // or another rebuild without --force)
    let bar = rebuild_bar(json);
    let mut fetched = 0;
    let report = loop {
        let report = match &bar {
            None => source.poll(&ix).await?,
            Some(bar) => {
                let poll = source.poll(&ix);
                tokio::pin!(poll);
                let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
                loop {
                    tokio::select! {
                        done = &mut poll => break done?,
                        _ = tick.tick() => {
                            let (fetched, wanted) = source.progress().get();
                            bar.set_length(wanted as u64);
                            bar.set_position(fetched as u64);
                        }
                    }
                }
            }
        };
        fetched += report.fetched;
        if report.backlog_pages == 0 {
            break report;
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (s, hash) = ix.head_hash()?;
    let secs = started.elapsed().as_secs_f64();
    print(
        json,
        json!({
            "state_hash": hash,
            "transactions": s.transactions,
            "fetched": fetched,
            "final_slot": report.final_slot,
            "seconds": secs,
        }),
        &format!(
            "{hash}\n({fetched} transactions fetched through final slot {} in {secs:.1} s)",
            report.final_slot
        ),
    );
    Ok(())
}

/// A bar of transactions fetched of those listed (with their rate and an
/// ETA) on a terminal; `None` under --json or when stderr is no terminal.
fn rebuild_bar(json: bool) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} transactions fetched, {per_sec}, ETA {eta} ({elapsed})",
        )
        .expect("the template is valid"),
    );
    Some(bar)
}

fn replay_log(file: &Path, batch: usize, grace: i64, json: bool) -> Result<()> {
    let f = std::fs::File::open(file).with_context(|| format!("open {}", file.display()))?;
    let records: Vec<TxRecord> = indexer::logfile::read(f)?;
    let cfg = FoldConfig {
        release_grace_secs: grace,
        ..FoldConfig::default()
    };
    let r = indexer::loadtest::replay(&records, batch, cfg);
    print(json, serde_json::to_value(&r)?, &r.summary());
    Ok(())
}
