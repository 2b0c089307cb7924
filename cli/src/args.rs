//! Command-line flags (clap derive). Parsing only: no I/O happens here.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const EXIT_CODES: &str = "\
Exit codes:
  0  success (verify: the bundle is valid)
  1  failure: verification failed (tampered or bad signature), a refusal
     (secrets found, wallet exists), or an operation error
  2  bad input: unreadable or malformed file, invalid arguments

Environment:
  BRAINCTL_DB, BRAIN_DB    memory store path (default ~/.brainctl/brain.db)
  BRAINCTL_WALLET_PATH     wallet path (default ~/.brainctl/wallet.json, or the
                           Solana CLI config's keypair when brainctl has none)
  BRAINCTL_RPC_URL         cluster for on-chain commands (default: the Solana CLI
                           config's json_rpc_url, else mainnet-beta)
  BRAINCTL_COMMITMENT      commitment (default: the Solana CLI config's, else finalized)

Solana CLI config (~/.config/solana/cli/config.yml, `solana config set`): when
present, its json_rpc_url, commitment and keypair_path are the defaults, below
the flags and their BRAINCTL_* variables, as in solana, anchor and spl-token.
  BRAINCTL_PROTOCOL_FEE_DISABLE=1, BRAINCTL_OP_FEE_LAMPORTS, BRAINCTL_TREASURY_PUBKEY
                           protocol fee settings (fees apply on mainnet-beta only)
  BRAINCTL_PRIORITY_FEE_PERCENTILE
                           the percentile of recent fees a transaction's price takes (default 75)
  RUST_LOG                 log filter for -v output (e.g. brainctl=debug)";

/// brainctl: keep, sign, verify and trade agent memories.
#[derive(Debug, Parser)]
#[command(name = "brainctl", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    /// Memory store (SQLite). A Python brainctl brain.db works read-only for export.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "PATH"
    )]
    pub db: Option<PathBuf>,
    /// Wallet keystore (Solana CLI JSON array of 64 bytes). Default:
    /// $BRAINCTL_WALLET_PATH, else ~/.brainctl/wallet.json if it exists, else
    /// the Solana CLI config's keypair_path if that exists, else
    /// ~/.brainctl/wallet.json (where `wallet new` creates one).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "PATH",
        env = "BRAINCTL_WALLET_PATH"
    )]
    pub keystore: Option<PathBuf>,
    /// Cluster: mainnet-beta, devnet, testnet, localhost, or an RPC URL (like the Solana CLI's -u).
    /// Default: $BRAINCTL_RPC_URL, else the Solana CLI config's json_rpc_url
    /// (~/.config/solana/cli/config.yml), else mainnet-beta.
    #[arg(
        short = 'u',
        long = "url",
        visible_alias = "rpc-url",
        global = true,
        help_heading = "Global options",
        value_name = "URL_OR_MONIKER",
        env = "BRAINCTL_RPC_URL"
    )]
    pub url: Option<String>,
    /// Commitment for reads and confirmations (localnet may use confirmed).
    /// Default: $BRAINCTL_COMMITMENT, else the Solana CLI config's, else finalized.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        env = "BRAINCTL_COMMITMENT",
        value_enum
    )]
    pub commitment: Option<Commitment>,
    /// Compute-unit price of every transaction sent (micro-lamports per
    /// unit) instead of the estimate from the cluster's recent fees for the
    /// accounts it writes (their 75th percentile); still capped by
    /// --priority-fee-cap.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "MICRO_LAMPORTS",
        env = "BRAINCTL_PRIORITY_FEE"
    )]
    pub priority_fee: Option<u64>,
    /// The most priority fee one transaction may pay, in lamports
    /// (default 10,000: two signatures' worth); the price is lowered to fit.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "LAMPORTS",
        env = "BRAINCTL_PRIORITY_FEE_CAP_LAMPORTS"
    )]
    pub priority_fee_cap: Option<u64>,
    /// The agent this is for, as the reference's `-a`: `memory add`
    /// attributes new memories to it and `memory list`/`search` show only
    /// its memories. Default: $AGENT_ID; without either, memories are added
    /// as `default` and every agent's are listed.
    #[arg(
        short = 'a',
        long,
        global = true,
        help_heading = "Global options",
        value_name = "AGENT_ID",
        env = "AGENT_ID"
    )]
    pub agent: Option<String>,
    /// Print machine-readable JSON on stdout (errors too: {"ok":false,"error":...}).
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, help_heading = "Global options", action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, show and import the wallet that signs your bundles.
    #[command(subcommand)]
    Wallet(WalletCmd),
    /// Add, list, search, retire and promote memories.
    #[command(subcommand)]
    Memory(MemoryCmd),
    /// Export memories as an Ed25519-signed bundle.
    #[command(after_help = "Examples:
  brainctl export --sign -o lessons.signed.json --category lesson
  brainctl export --sign --ids 1,2,3 -o picked.signed.json
  brainctl export --sign --pin-onchain -u devnet -o pinned.signed.json
  brainctl export --sign --mint --recipient <PUBKEY> -u devnet -o minted.signed.json
  brainctl --db ~/agentmemory/db/brain.db export --sign -o all.signed.json   # Python brainctl store, read-only")]
    Export(ExportArgs),
    /// Verify a signed bundle (exit 0 valid, 1 tampered, 2 malformed).
    #[command(after_help = "Examples:
  brainctl verify lessons.signed.json
  brainctl verify --json lessons.signed.json | jq .bundle_hash
  brainctl verify --check-onchain -u devnet pinned.signed.json")]
    Verify(VerifyArgs),
    /// Import a signed bundle (verified first), or another memory system's
    /// export (mem0, json), into a quarantine scope.
    #[command(after_help = "Examples:
  brainctl import lessons.signed.json                 # into scope imported:<hash prefix>
  brainctl import lessons.signed.json --scope team
  brainctl import mem0 mem0-export.json --dry-run     # another memory system's export
  brainctl import json memories.jsonl                 # into scope imported:json
Rows that look like prompt injection are marked `suspicious`; review them, then
  brainctl quarantine promote imported:<prefix> --to global")]
    Import(ImportArgs),
    /// Signed bundles you hold: decrypt one you minted, pin one on chain.
    #[command(
        subcommand,
        after_help = "Examples:
  brainctl bundle decrypt <MINT> --ciphertext-uri ar://<id> -o bundle.json   # a bundle you minted, offline key
  brainctl -u devnet bundle pin lessons.signed.json                         # pin an existing signed bundle"
    )]
    Bundle(BundleCmd),
    /// Review memories from other agents (bought or imported): list the
    /// quarantine scopes, promote a scope into your own memory (flagged rows
    /// only when named one by one), or purge it.
    #[command(
        subcommand,
        after_help = "Examples:
  brainctl quarantine list                            # scopes, rows, rows flagged suspicious
  brainctl quarantine show imported:<id>              # its rows, flags included
  brainctl quarantine promote imported:<id> --to global          # unflagged rows
  brainctl quarantine promote imported:<id> --to global --id 42  # a flagged row, by name
  brainctl quarantine purge imported:<id> --yes       # rows, search entries, import record"
    )]
    Quarantine(QuarantineCmd),
    /// Sell and buy bundles: list, buy, and the seller's `listen` daemon.
    #[command(
        subcommand,
        after_help = "A fixed-price trade (both sides sharing a storage dir or bundler/gateway):
  seller$ brainctl marketplace list lessons.signed.json --price-usd 5 --sol-usd 150
  buyer$  brainctl marketplace buy <LISTING MANIFEST ID>
  seller$ brainctl marketplace listen          # verifies each buy, releases exactly once"
    )]
    Marketplace(MarketCmd),
    /// Put and get signed ANS-104 data items (debugging the storage layer).
    #[command(
        subcommand,
        after_help = "Examples:
  brainctl storage put notes.txt --tag Content-Type=text/plain     # into ~/.brainctl/items
  brainctl storage get <id> -o notes.txt
  brainctl storage put blob.bin --storage bundler --bundler-url https://node1.irys.xyz"
    )]
    Storage(StorageCmd),
    /// The escrow program's config: show it, or set it once as its upgrade authority.
    #[command(
        subcommand,
        after_help = "Examples:
  brainctl -u localhost escrow show
  brainctl -u localhost escrow configure --treasury <PUBKEY> --fee-bps 100 \\
      --slash-bps 5000 --release-window-secs 120 --dispute-window-secs 60 \\
      --min-stake-lamports 10000000
`configure` runs once per cluster, with the wallet that deployed the program
(its upgrade authority); repeating it with the same settings changes nothing.
localnet/up does it for the local validator."
    )]
    Escrow(EscrowCmd),
    /// SPL tokens listings settle in: balances, and the localnet's test dollar.
    #[command(
        subcommand,
        after_help = "Examples:
  brainctl -u localhost token balance --mint 4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU
  brainctl -u localhost token mint-test-dollars --to <PUBKEY> --usd 20   # as the localnet's mint authority
localnet/up loads the test dollar (6 decimals, at devnet USDC's address) into the
validator's genesis, with its own wallet as the mint authority; localnet/usdc
funds an address from it."
    )]
    Token(TokenCmd),
    /// Serve this node to an AI agent as MCP tools over stdio.
    #[command(
        after_help = "An MCP client starts it; for example (Claude Desktop, Cursor, ...):
  {\"mcpServers\": {\"brainctl\": {\"command\": \"brainctl\",
     \"args\": [\"-u\", \"devnet\", \"mcp\", \"--indexer\", \"https://indexer.example\"]}}}

Buys spend the wallet's SOL, so the server refuses to start without a spend
policy: write ~/.brainctl/spend-policy.json (chmod 600), e.g.
  {\"max_per_buy_lamports\": 50000000, \"budget_24h_lamports\": 200000000}
or pass --budget-24h-lamports / --max-per-buy-lamports (flags only tighten
the file). Every buy is reserved in ~/.brainctl/spend.db before it is sent,
so restarting the server never resets the budget."
    )]
    Mcp(McpArgs),
    /// Check this set-up: the RPC and its cluster, the wallet and its
    /// balance, the memory store, the storage, the escrow program and the
    /// indexer, each failure with what to do (exit 1 if any failed).
    #[command(after_help = "Examples:
  brainctl -u devnet doctor
  brainctl -u localhost --commitment confirmed doctor --storage gateway --gateway-url http://127.0.0.1:1984
  brainctl --json doctor | jq '.checks[] | select(.status != \"ok\")'")]
    Doctor(DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "Examples:
  brainctl completions bash > ~/.local/share/bash-completion/completions/brainctl
  brainctl completions zsh > \"${fpath[1]}/_brainctl\"
  brainctl completions fish > ~/.config/fish/completions/brainctl.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one per command into a directory.
    #[command(after_help = "Examples:
  brainctl man | man -l -
  brainctl man --out-dir ~/.local/share/man/man1   # brainctl.1, brainctl-marketplace-buy.1, ...")]
    Man {
        /// Write brainctl.1 and a page per subcommand here instead.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<std::path::PathBuf>,
    },
}

/// `brainctl mcp`
#[derive(Debug, Args, Clone)]
pub struct McpArgs {
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub seller: SellerState,
    #[command(flatten)]
    pub indexer: IndexerOpts,
    /// Import purchases into this Python brainctl 2.8 brain.db (the agent's
    /// own store) instead of ours, in scope imported:<listing id>.
    #[arg(long, value_name = "PATH")]
    pub into_brainctl_db: Option<PathBuf>,
    /// Most one buy may cost, all in (tightens the policy file).
    #[arg(long, value_name = "LAMPORTS")]
    pub max_per_buy_lamports: Option<u64>,
    /// Most all buys of any 24 hours may cost (tightens the policy file).
    #[arg(long, value_name = "LAMPORTS")]
    pub budget_24h_lamports: Option<u64>,
    /// Buy only from this seller (repeatable; tightens the policy file).
    #[arg(long = "allow-seller", value_name = "PUBKEY")]
    pub allow_sellers: Vec<String>,
    /// Start without any spend limit (buys are still recorded).
    #[arg(long)]
    pub unlimited_spending: bool,
    /// Seconds a buy waits for the seller's release before returning
    /// (the payment stands; `market_fetch` finishes it).
    #[arg(long, default_value_t = 120)]
    pub buy_timeout: u64,
    /// Serve over streamable HTTP at `/mcp` (and an open `GET /health`)
    /// instead of stdio, on ADDR (host:port) or BRAINCTL_HTTP_HOST /
    /// BRAINCTL_HTTP_PORT (127.0.0.1:8080). Needs BRAINCTL_HTTP_TOKEN (32+
    /// characters; clients send `Authorization: Bearer <token>`) and an
    /// allowlist (BRAINCTL_HTTP_ALLOWED_TOOLS and/or BRAINCTL_TOOL_GROUPS).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub http: Option<String>,
    /// Over HTTP, charge for tool calls with x402 (its MCP binding): a JSON
    /// price list, e.g. {"mint": "<mint>", "tools": {"memory_search":
    /// "10000"}} (prices in the mint's base units; optional "pay_to",
    /// "network", "max_timeout_seconds"). A priced tool called without
    /// payment answers the requirements; a paid call runs once. Tools not
    /// listed stay free. Payments are recorded in paid-calls.db beside the
    /// wallet, which pays their network fees.
    #[arg(long, env = "BRAINCTL_HTTP_TOOL_PRICES", value_name = "FILE")]
    pub tool_prices: Option<PathBuf>,
    /// Also serve the priced tools, and only those, to anyone at
    /// `/paid/mcp`, without the bearer token (each call pays for itself
    /// with x402); the token still guards `/mcp`, whose free tools may
    /// spend this node's wallet.
    #[arg(long, requires = "tool_prices")]
    pub public_paid: bool,
}

impl McpArgs {
    /// How the server's buys receive their bundles.
    pub fn receive(&self) -> ReceiveOpts {
        ReceiveOpts {
            timeout: self.buy_timeout,
            into_brainctl_db: self.into_brainctl_db.clone(),
            storage: self.storage.clone(),
            indexer: self.indexer.clone(),
        }
    }
}

/// The terms an offer or counter proposes.
#[derive(Debug, Args, Clone)]
pub struct Terms {
    /// Proposed price in USD (0 to 10000).
    #[arg(long)]
    pub price_usd: f64,
    /// SOL/USD rate that fixes the proposed lamports in the signed manifest
    /// (required on a listing that settles in SOL).
    #[arg(long)]
    pub sol_usd: Option<f64>,
    /// On a listing that settles in a token that is not a dollar
    /// stablecoin: USD per whole token, fixing the proposed base units.
    #[arg(long)]
    pub token_usd: Option<f64>,
    /// A note to the other side (max 280 characters).
    #[arg(long, default_value = "")]
    pub message: String,
    /// Lifetime in hours (max 24).
    #[arg(long, default_value_t = 24.0)]
    pub ttl_hours: f64,
}

/// Where the seller's listen state lives.
#[derive(Debug, Args, Clone)]
pub struct SellerState {
    /// Listen state database (listings and buys).
    #[arg(long, env = "BRAINCTL_LISTEN_DB", value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Where bundle keys are kept.
    #[arg(long, env = "BRAINCTL_KEYS_DIR", value_name = "DIR")]
    pub keys_dir: Option<PathBuf>,
}

/// Where the marketplace indexer is.
#[derive(Debug, Args, Clone)]
pub struct IndexerOpts {
    /// Base URL of a marketplace indexer (the reference's `BRNCTL_MARKETPLACE_API`).
    #[arg(
        id = "indexer_url",
        long = "indexer",
        env = "BRNCTL_MARKETPLACE_API",
        default_value = "http://127.0.0.1:8080"
    )]
    pub url: String,
}

/// `brainctl marketplace ...`
#[derive(Debug, Subcommand)]
pub enum MarketCmd {
    /// List a signed bundle at a fixed price (encrypts, stores, posts the list memo).
    List(ListArgs),
    /// Buyer: offer a price on a listing (listing id or manifest id); prints the offer's item id.
    Offer(OfferArgs),
    /// Seller: counter an offer (offer item id) with another price.
    Counter(CounterArgs),
    /// Seller: accept an offer (at its counter's price if countered).
    Accept(AnswerArgs),
    /// Seller: reject an offer.
    Reject(AnswerArgs),
    /// Buyer: withdraw your offer (the seller can no longer accept it).
    Withdraw(WithdrawArgs),
    /// Buy a listing (its listing id or manifest id): pay, wait for the release, import.
    Buy(BuyArgs),
    /// What a buy would cost, and whether the spend policy allows it now.
    ///
    /// Price, protocol fee, escrow rent and network fee: the exact amount
    /// the balance would lose. Sends nothing, records nothing. Agents:
    /// call this before `buy`.
    Quote(QuoteArgs),
    /// This wallet's spend policy, the last 24 h of spending, the newest spends.
    ///
    /// The policy is spend-policy.json beside the wallet (0600:
    /// max_per_buy_lamports, budget_24h_lamports, sellers). Every buy of a
    /// wallet with a policy is checked and reserved in spend.db first.
    Budget(BudgetArgs),
    /// Finish an interrupted buy: wait for its release, decrypt, import.
    Fetch(FetchArgs),
    /// Buyer: take back an escrow deposit the seller never revealed the key
    /// for (after the program's release window, with a share of the
    /// seller's stake), one the seller declined (in full), or a settled
    /// escrow's rent.
    Refund(RefundArgs),
    /// Buyer: prove, inside the dispute window, that the key the seller
    /// revealed does not open the committed blob to the committed bundle;
    /// the program alone decides, refunds the deposit and pays a share of
    /// the seller's stake. `buy` names the lying chunk when it finds one.
    Dispute(RefundArgs),
    /// Buyer's service: finish every pending escrow buy of this wallet
    /// without your action, across restarts.
    ///
    /// An escrow `buy` the seller has not answered when it returns is kept
    /// pending (pending-escrows.db beside the wallet, with the blob checked
    /// before paying). Each pass looks at each pending escrow once: a
    /// revealed key is opened against the kept blob and imported, or, when
    /// it lies, the fraud proof is sent inside the dispute window (deposit
    /// and a share of the seller's stake back); a deposit left past the
    /// seller's window, declined or expired is refunded. A failed step is
    /// tried again next pass. Run it as a service (SIGTERM stops it at
    /// once, nothing lost), or with --until-done from a script.
    ///
    ///   brainctl marketplace watch --json
    Watch(WatchArgs),
    /// Cancel one of your listings (buys after the cancel are rejected, never
    /// released). An escrow listing is closed in the program in the same
    /// transaction (stake and rent back); refused while it holds deposits.
    Cancel(CancelArgs),
    /// Browse live listings on a marketplace indexer (`brainctl-indexer run`).
    Browse(BrowseArgs),
    /// Show one listing from an indexer: manifest, status, sales, and the
    /// offers you may see.
    Show(ShowArgs),
    /// Your listings: what the chain says (offers, buys, releases, cancels) and
    /// what your daemon recorded (buy states, offer decisions). With
    /// `--json`, every buy's state, rejection reason and retry bookkeeping.
    Status(StatusArgs),
    /// The seller's settlement daemon: verify buys, release keys exactly once.
    ///
    /// Run it as a service (systemd, a terminal, the background): it sells
    /// every listing in the seller state, including ones listed after it
    /// started, wakes on the payment addresses' logs and polls every
    /// `--interval`. Your other `marketplace` commands work while it runs;
    /// only a second `listen` on the same state is refused. Nothing a
    /// stranger puts on chain stops it: a bad buy is rejected with its
    /// reason, a transient problem (RPC, gateway, not yet visible) is
    /// retried on that buy with backoff; see each buy in
    /// `marketplace status --json` (`buy_details`). SIGINT/SIGTERM stop it
    /// at once; its state is durable, a restart resumes every unfinished buy.
    Listen(ListenArgs),
}

/// `brainctl marketplace list`
#[derive(Debug, Args, Clone)]
pub struct ListArgs {
    /// The signed bundle (signed by this wallet).
    pub bundle: PathBuf,
    /// Price in USD (0 to 10000).
    #[arg(long)]
    pub price_usd: f64,
    /// SOL/USD rate that fixes the price in lamports in the signed listing
    /// (with --mint: what the price is worth against a release's cost, also
    /// with --usd-at-settle). Not with --usd-at-settle in SOL, whose price
    /// comes from the oracle.
    #[arg(long, required_unless_present = "usd_at_settle")]
    pub sol_usd: Option<f64>,
    /// Price in USD at settle time: each buy pays SOL (or the --mint token,
    /// one that is not a dollar: the feed then prices one whole token) at
    /// the Pyth price in this PriceUpdateV2 account, converted by the escrow
    /// program's `quote_usd` inside the buy (so `listen` and the indexer
    /// check it from the chain), instead of a price fixed now. It must be
    /// Pyth's push-oracle account of the feed (buyers refuse any other:
    /// anyone can post an old update into an account of their own). The localnet
    /// loads a SOL/USD account at 7UVimffxr9ow1uXYxsr4LHAcV58mLzhmwaeKvJ1pjLiE
    /// (Pyth's SOL/USD feed account address), published when it started.
    #[arg(long, value_name = "PRICE_ACCOUNT", conflicts_with = "escrow")]
    pub usd_at_settle: Option<String>,
    /// With --usd-at-settle: the Pyth feed id (64 hex) the account must
    /// carry (default SOL/USD's).
    #[arg(long, value_name = "HEX", requires = "usd_at_settle")]
    pub price_feed: Option<String>,
    /// With --usd-at-settle: the oldest price a buy may use, in seconds
    /// (default: the sponsored feeds' 60 s heartbeat and the time a price
    /// takes to land; buyers' clients take at most 90 s on public clusters).
    #[arg(long, default_value_t = 90)]
    pub price_max_age_secs: u32,
    /// With --usd-at-settle: the widest confidence interval a buy may use,
    /// in basis points of the price (buyers' clients take at most 200).
    #[arg(long, default_value_t = 100)]
    pub price_max_conf_bps: u16,
    /// With --usd-at-settle: how far below its own quote a buy's payment
    /// still counts, in basis points (the buyer converts just before its
    /// slot, the program at it; at most 500).
    #[arg(long, default_value_t = 100)]
    pub price_tolerance_bps: u16,
    /// Settle in this SPL Token or Token-2022 mint instead of SOL: buyers
    /// pay its base units by checked transfers to your token account. Its
    /// program and decimals are read from the chain; mints whose transfers
    /// deliver less than they say (transfer fees, hooks) are refused.
    /// Default: $BRAINCTL_SETTLE_MINT (the deployment's default currency);
    /// `SOL` settles in SOL whatever that says.
    #[arg(long, env = "BRAINCTL_SETTLE_MINT", value_name = "MINT|SOL")]
    pub mint: Option<String>,
    /// USD per whole token of --mint, fixing its price in the signed
    /// listing; not needed for a dollar stablecoin (USDC, USDT, and the
    /// localnet's test USDC), which settles 1:1.
    #[arg(long, value_name = "RATE")]
    pub token_usd: Option<f64>,
    /// How long the listing lives, in hours (max 720).
    #[arg(long, default_value_t = 72.0)]
    pub duration_hours: f64,
    /// Who sees its offers and settlements.
    #[arg(long, value_enum, default_value_t = Visibility::Auction)]
    pub visibility: Visibility,
    /// Where buyers pay (default: this wallet).
    #[arg(long)]
    pub payment_address: Option<String>,
    /// Shown in the preview.
    #[arg(long, default_value = "")]
    pub description: String,
    /// Settle through the escrow program: buyers deposit there and
    /// `listen` is paid out of the escrow when it releases; a buyer
    /// whose release never comes takes a refund and a share of your
    /// stake. Needs the program deployed on the cluster.
    #[arg(long)]
    pub escrow: bool,
    /// Stake (lamports) put up with an escrow listing, returned on cancel.
    /// Each open escrow reserves one slash share of it (the program's
    /// slash share of its stake floor), so the stake also bounds how many
    /// buyers can have a deposit open at once.
    #[arg(long, requires = "escrow", default_value_t = 0)]
    pub stake_lamports: u64,
    /// With --escrow: at most N escrows open at once (deposited and not
    /// yet claimed, declined or refunded). While you are offline, at most N
    /// slash shares of your stake can be lost to missed reveals. Default:
    /// as many as the stake backs.
    #[arg(long, requires = "escrow", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_open_escrows: Option<u32>,
    /// List even at a price under what each release costs you (its
    /// signature and receipt; refused otherwise): every buy, junk ones
    /// included, then costs you more than it pays, so `listen` releases at
    /// most --below-cost-per-hour of them an hour.
    #[arg(long)]
    pub below_cost: bool,
    /// The receipt your releases of it give (run `listen --receipt` the
    /// same): `listing` (default) makes the listing's own receipt mint now
    /// (about 5.8M lamports of rent, once), so each release costs about
    /// 10,000 lamports; `per-buy` and `none` make nothing now (a release
    /// then costs about 5.8M lamports, or 5,000). Escrow listings: per buy.
    #[arg(long, value_enum, default_value_t = ReceiptFlag::Listing)]
    pub receipt: ReceiptFlag,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub seller: SellerState,
}

/// `brainctl marketplace offer`
#[derive(Debug, Args, Clone)]
pub struct OfferArgs {
    /// The listing: its listing id (YYYYMMDD-<12 hex>, looked up on --indexer) or its manifest's item id (from `list`).
    #[arg(allow_hyphen_values = true)]
    pub listing: String,
    #[command(flatten)]
    pub terms: Terms,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
}

/// `brainctl marketplace counter`
#[derive(Debug, Args, Clone)]
pub struct CounterArgs {
    /// The offer's item id.
    #[arg(allow_hyphen_values = true)]
    pub offer: String,
    /// The buyer counters its own offer: the listing (its listing id or
    /// its manifest's item id; the seller counters without it).
    #[arg(long, allow_hyphen_values = true)]
    pub listing: Option<String>,
    #[command(flatten)]
    pub terms: Terms,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
    #[command(flatten)]
    pub seller: SellerState,
}

/// `brainctl marketplace accept` and `reject`: the seller's answer to an offer.
#[derive(Debug, Args, Clone)]
pub struct AnswerArgs {
    /// The offer's item id.
    #[arg(allow_hyphen_values = true)]
    pub offer: String,
    /// Accept only if the price it binds (the offer's, or your counter's)
    /// is exactly this many lamports; otherwise nothing is posted.
    #[arg(long, value_name = "LAMPORTS")]
    pub expect_lamports: Option<u64>,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub seller: SellerState,
}

/// `brainctl marketplace withdraw`
#[derive(Debug, Args, Clone)]
pub struct WithdrawArgs {
    /// The offer's item id.
    #[arg(allow_hyphen_values = true)]
    pub offer: String,
    /// The listing: its listing id (YYYYMMDD-<12 hex>, looked up on --indexer) or its manifest's item id (from `list`).
    #[arg(long, allow_hyphen_values = true)]
    pub listing: String,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
}

/// `brainctl marketplace buy`
#[derive(Debug, Args, Clone)]
pub struct BuyArgs {
    /// The listing: its listing id (YYYYMMDD-<12 hex>, looked up on --indexer) or its manifest's item id (from `list`).
    #[arg(allow_hyphen_values = true)]
    pub listing: String,
    /// Pay the price of this accepted offer (its item id) instead of the list price.
    #[arg(long, allow_hyphen_values = true)]
    pub offer: Option<String>,
    /// ...or of the seller's counter to it (counter item id).
    #[arg(long, requires = "offer", allow_hyphen_values = true)]
    pub counter: Option<String>,
    /// Require escrow settlement: deposit into the escrow program
    /// (refused if the listing settles by direct payment). Listings
    /// that say escrow are always paid into escrow.
    #[arg(long, conflicts_with = "offer")]
    pub escrow: bool,
    /// Pay an escrow listing whose blob cannot prove on chain what its
    /// manifest promises (a format 1 blob: the bundle hash; format 2 under
    /// a stated memory count: the count), accepting that its seller could
    /// be paid for another plaintext. Refused by default and under any
    /// spend policy; `show` and `quote` say what each listing proves.
    #[arg(long)]
    pub allow_unproven_blob: bool,
    #[command(flatten)]
    pub receive: ReceiveOpts,
}

/// How a buyer receives a bundle (`buy`, `fetch`): how long to wait for
/// the release, where to import, where the bundle is fetched.
#[derive(Debug, Args, Clone)]
pub struct ReceiveOpts {
    /// Seconds to wait for the seller's release.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Import into this Python brainctl 2.8 brain.db (the agent's own
    /// store, its BRAINCTL_DB) instead of ours, in scope imported:<listing id>.
    #[arg(long, value_name = "PATH")]
    pub into_brainctl_db: Option<PathBuf>,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
}

/// `brainctl marketplace quote`
#[derive(Debug, Args, Clone)]
pub struct QuoteArgs {
    /// The listing: its listing id (YYYYMMDD-<12 hex>, looked up on --indexer) or its manifest's item id (from `list`).
    #[arg(allow_hyphen_values = true)]
    pub listing: String,
    /// Quote the price of this accepted offer (its item id).
    #[arg(long, allow_hyphen_values = true)]
    pub offer: Option<String>,
    /// ...or of the seller's counter to it (found on chain when omitted).
    #[arg(long, requires = "offer", allow_hyphen_values = true)]
    pub counter: Option<String>,
    /// Quote an escrow listing whose blob cannot prove on chain what its
    /// manifest promises (a format 1 blob: the bundle hash; format 2 under
    /// a stated memory count: the count), accepting that its seller could
    /// be paid for another plaintext. Refused by default and under any
    /// spend policy; `show` and `quote` say what each listing proves.
    #[arg(long)]
    pub allow_unproven_blob: bool,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
}

/// `brainctl marketplace budget`
#[derive(Debug, Args, Clone)]
pub struct BudgetArgs {
    /// How many ledger rows to show.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Set the per-buy maximum (lamports, all in) in the policy file.
    #[arg(long, value_name = "LAMPORTS")]
    pub set_max_per_buy_lamports: Option<u64>,
    /// Set the rolling 24 h budget (lamports) in the policy file.
    #[arg(long, value_name = "LAMPORTS")]
    pub set_budget_24h_lamports: Option<u64>,
    /// Set the most priority fee one transaction may pay (lamports) in the
    /// policy file (every transaction of this wallet, below --priority-fee-cap).
    #[arg(long, value_name = "LAMPORTS")]
    pub set_priority_fee_max_lamports: Option<u64>,
    /// Allow buying from this seller only (repeatable; replaces the list).
    #[arg(long = "set-seller", value_name = "PUBKEY")]
    pub set_sellers: Vec<String>,
}

/// `brainctl marketplace fetch`
#[derive(Debug, Args, Clone)]
pub struct FetchArgs {
    /// The listing: its listing id (YYYYMMDD-<12 hex>, looked up on --indexer) or its manifest's item id (from `list`).
    #[arg(allow_hyphen_values = true)]
    pub listing: String,
    /// The buy transaction's signature (printed by `buy`).
    #[arg(long)]
    pub buy_signature: String,
    #[command(flatten)]
    pub receive: ReceiveOpts,
}

/// `brainctl marketplace refund`
#[derive(Debug, Args, Clone)]
pub struct RefundArgs {
    /// The listing: its listing id (YYYYMMDD-<12 hex>, looked up on --indexer) or its manifest's item id (from `list`).
    #[arg(allow_hyphen_values = true)]
    pub listing: String,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
}

/// `brainctl marketplace watch`
#[derive(Debug, Args, Clone)]
pub struct WatchArgs {
    /// Seconds between passes.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub every: u64,
    /// Exit once nothing is pending (after at least one pass).
    #[arg(long)]
    pub until_done: bool,
    /// One pass, then exit with what it did (`{outcomes: [...]}`).
    #[arg(long, conflicts_with = "until_done")]
    pub once: bool,
    /// List the pending (and newest finished) escrow buys and exit.
    #[arg(long)]
    pub list: bool,
}

/// `brainctl marketplace cancel`
#[derive(Debug, Args, Clone)]
pub struct CancelArgs {
    /// Your listing: its listing id or its manifest's item id.
    #[arg(allow_hyphen_values = true)]
    pub listing_id: String,
    #[command(flatten)]
    pub seller: SellerState,
}

/// `brainctl marketplace browse`
#[derive(Debug, Args, Clone)]
pub struct BrowseArgs {
    #[command(flatten)]
    pub indexer: IndexerOpts,
    /// Only listings at or under this price in USD.
    #[arg(long)]
    pub max_price_usd: Option<f64>,
    /// Only listings whose preview names this category.
    #[arg(long)]
    pub category: Option<String>,
    /// Only this seller's listings.
    #[arg(long)]
    pub seller: Option<String>,
    /// Which listings.
    #[arg(long, value_enum, default_value_t = ListingStatus::Live)]
    pub status: ListingStatus,
    /// Page size (1-100).
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    /// Continue after this listing id (the previous page's `next_cursor`).
    #[arg(long)]
    pub cursor: Option<String>,
}

/// `brainctl marketplace show`
#[derive(Debug, Args, Clone)]
pub struct ShowArgs {
    /// The listing: its listing id (YYYYMMDD-<12 hex>) or its manifest's
    /// item id (fetched from --storage to read its listing id).
    #[arg(allow_hyphen_values = true)]
    pub listing_id: String,
    /// Also show the free-text messages of offers and counters (another
    /// party's words: may hold prompt injections). Without it they are
    /// withheld and each offer says `messages_withheld`.
    #[arg(long)]
    pub include_messages: bool,
    #[command(flatten)]
    pub indexer: IndexerOpts,
    #[command(flatten)]
    pub storage: StorageOpts,
}

/// `brainctl marketplace status`
#[derive(Debug, Args, Clone)]
pub struct StatusArgs {
    /// Only this listing (its listing id or its manifest's item id).
    #[arg(allow_hyphen_values = true)]
    pub listing_id: Option<String>,
    #[command(flatten)]
    pub seller: SellerState,
}

/// `brainctl marketplace listen`
#[derive(Debug, Args, Clone)]
pub struct ListenArgs {
    /// One pass, then exit.
    #[arg(long)]
    pub once: bool,
    /// Seconds between passes.
    #[arg(long, default_value_t = 2)]
    pub interval: u64,
    /// The receipt each release gives the buyer beside the key:
    /// `listing` (default: one Light compressed mint per listing, made by
    /// its first release; each release mints the buyer one unit of it and
    /// costs about 10,000 lamports), `per-buy` (a fresh mint per buy,
    /// supply 1, as the reference does: about 5.8M lamports of rent each),
    /// or `none` (the signed `release` memo is the record: 5,000 lamports).
    /// Escrow listings always get a mint per buy.
    #[arg(long, value_enum, default_value_t = ReceiptFlag::Listing)]
    pub receipt: ReceiptFlag,
    /// The token of a mint per buy (`--receipt per-buy`, and escrow
    /// listings'): `light` (compressed, default) or `token2022` (an NFT
    /// wallets show without a compression-aware RPC).
    #[arg(long, value_enum, default_value_t = TokenFlag::Light)]
    pub token_standard: TokenFlag,
    /// Most buys paying less than a release costs you (a free or
    /// below-cost listing: junk buys cost you a mint each) sent on to their
    /// release in any hour; the rest wait, oldest first.
    #[arg(long, default_value_t = 10)]
    pub below_cost_per_hour: u64,
    /// Keep an address lookup table of the accounts every release with
    /// the listing's receipt names (made once, extended as needed; its
    /// rent, about 0.005 SOL, stays yours), so a burst's releases go in v0
    /// transactions that each hold one more (4 instead of 3): worth it
    /// for a seller with many buys at once.
    #[arg(long)]
    pub lookup_table: bool,
    /// Also sell your direct token listings to x402 clients (v2 and v1)
    /// on this address (e.g. 127.0.0.1:8402; port 0 picks a free one,
    /// logged): `GET /x402/listings/<ID>` answers 402 with the price, then
    /// takes the client's payment (this wallet co-signs and pays its fee:
    /// about 10,000 lamports a sale) and answers within 4 s with the key
    /// sealed to the payer once this daemon has released the buy, or 202
    /// with the payment's signature and a `poll` URL
    /// (`/x402/payments/<SIGNATURE>`) that answers the key once released.
    #[arg(long, value_name = "ADDR", conflicts_with = "once")]
    pub x402: Option<String>,
    /// The URL x402 clients reach the endpoint at, as its answers name
    /// it (e.g. https://seller.example; default: http:// and the
    /// request's Host).
    #[arg(long, value_name = "URL", requires = "x402")]
    pub x402_public_url: Option<String>,
    /// The CAIP-2 network id the x402 endpoint advertises (default: the
    /// cluster's own, `solana:<genesis hash prefix>`; x402 clients know
    /// only mainnet's, devnet's and testnet's, so a local validator
    /// advertises devnet's: solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1).
    #[arg(long, value_name = "CAIP2", requires = "x402")]
    pub x402_network: Option<String>,
    /// A web origin whose pages may call the x402 endpoint (CORS;
    /// repeatable, e.g. https://shop.example; default: any origin, as a
    /// public endpoint sells to anyone's page).
    #[arg(long = "x402-cors-origin", value_name = "ORIGIN", requires = "x402")]
    pub x402_cors_origin: Vec<String>,
    /// The public RPC URL the shop page at the x402 endpoint's `/` reads
    /// the chain through and builds its wallet's payment against (default:
    /// the advertised network's public RPC, e.g. https://api.devnet.solana.com;
    /// never `-u`, which may carry your API key). A page cannot pay
    /// without one.
    #[arg(long, value_name = "URL", requires = "x402")]
    pub x402_shop_rpc: Option<String>,
    /// The shop page's built script (default:
    /// ~/.cache/brainctl/shop/app.js, which ./localnet/install builds).
    #[arg(
        long,
        value_name = "PATH",
        requires = "x402",
        env = "BRAINCTL_SHOP_SCRIPT"
    )]
    pub x402_shop_script: Option<std::path::PathBuf>,
    /// Another RPC endpoint each escrow reveal is also sent through
    /// (repeatable; a moniker or an http(s):// URL): a reveal carries the
    /// secret that pays you, so one RPC that takes it and withholds it
    /// (it then knows the buyer's key) cannot keep it from landing in the
    /// window. Reads stay on `-u`.
    #[arg(long = "reveal-rpc", value_name = "URL")]
    pub reveal_rpc: Vec<String>,
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub seller: SellerState,
}

/// Where data items go.
#[derive(Debug, Args, Clone)]
pub struct StorageOpts {
    /// Backend: a local content-addressed directory, an Irys-compatible
    /// bundler, or an Arweave gateway that takes transactions (arlocal on
    /// localnet: `--storage gateway --gateway-url http://127.0.0.1:1984`).
    #[arg(long, env = "BRAINCTL_STORAGE", value_enum, default_value_t = StorageKind::Fs)]
    pub storage: StorageKind,
    /// Directory of the fs backend (default ~/.brainctl/items).
    #[arg(long, env = "BRAINCTL_STORAGE_DIR")]
    pub storage_dir: Option<PathBuf>,
    /// Bundler URL (bundler backend).
    #[arg(long, env = "BRAINCTL_BUNDLER_URL")]
    pub bundler_url: Option<String>,
    /// Gateway to read from (bundler and gateway backends; the gateway
    /// backend also posts there).
    #[arg(
        long,
        env = "BRAINCTL_GATEWAY_URL",
        default_value = "https://arweave.net"
    )]
    pub gateway_url: String,
    /// RSA wallet the gateway backend signs Arweave transactions with
    /// (PKCS#8, created 0600 on first use; default ~/.brainctl/arweave-wallet.pkcs8).
    #[arg(long, env = "BRAINCTL_ARWEAVE_WALLET")]
    pub arweave_wallet: Option<PathBuf>,
}

/// `brainctl storage ...`
#[derive(Debug, Subcommand)]
pub enum StorageCmd {
    /// Sign FILE as a data item with the wallet and store it; prints its id.
    Put {
        /// The file.
        file: PathBuf,
        /// Tags as NAME=VALUE (repeatable).
        #[arg(long = "tag", value_name = "NAME=VALUE")]
        tags: Vec<String>,
        #[command(flatten)]
        opts: StorageOpts,
    },
    /// Fetch an item's data by id (verified for the fs backend).
    Get {
        /// The item id.
        #[arg(allow_hyphen_values = true)]
        id: String,
        /// Write the data here instead of stdout.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// Refuse bodies larger than this many bytes.
        #[arg(long, default_value_t = 16 * 1024 * 1024)]
        max_bytes: usize,
        #[command(flatten)]
        opts: StorageOpts,
    },
}

/// `brainctl doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub storage: StorageOpts,
    #[command(flatten)]
    pub indexer: IndexerOpts,
}

/// `brainctl wallet ...`
#[derive(Debug, Subcommand)]
pub enum WalletCmd {
    /// Create a new wallet (0600 file in a 0700 directory).
    New {
        /// Replace an existing wallet (the old file is kept as <path>.bak-<time>).
        #[arg(long)]
        force: bool,
    },
    /// Show the wallet's address, X25519 key and path.
    Show,
    /// Print only the base58 address.
    Address,
    /// The wallet's SOL balance on the cluster (-u).
    Balance,
    /// Request an airdrop (devnet, testnet, localnet only).
    Airdrop {
        /// Amount in SOL.
        #[arg(default_value_t = 1.0)]
        sol: f64,
    },
    /// Bring a key in: a Solana CLI keystore (JSON array of 64 integers) or
    /// the base58 secret Phantom, Backpack, Solflare and Glow export, from
    /// a file, or `-` for standard input (never an argument: it would land
    /// in your shell history). E.g. `brainctl wallet import - < key.txt`.
    Import {
        /// The file holding the key, or `-` to read it from standard input.
        file: PathBuf,
        /// Replace an existing wallet (the old file is kept as a backup).
        #[arg(long)]
        force: bool,
    },
    /// Show the wallet's secret as the base58 string Phantom, Backpack,
    /// Solflare and Glow import under "import private key". It IS the whole
    /// key (there is no recovery phrase): anyone holding it controls the
    /// wallet. Printed to stdout after a warning on stderr; with `-o` it is
    /// written to a 0600 file instead and left out of the output.
    ExportKey {
        /// Write the secret to this file (mode 0600) instead of printing it.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// Overwrite the `-o` file if it exists.
        #[arg(long, requires = "output")]
        force: bool,
    },
}

/// `brainctl bundle`.
#[derive(Debug, Subcommand)]
pub enum BundleCmd {
    /// Decrypt a bundle you minted (as the reference): fetch its ciphertext,
    /// read its AES key from the keys dir (by the ciphertext's id, or by
    /// the mint as the reference names key files), decrypt.
    Decrypt {
        /// The mint address from `export --mint` (or the ciphertext's id).
        mint: String,
        /// The encrypted bundle's `ar://<id>` (the mint's metadata names it).
        #[arg(long)]
        ciphertext_uri: String,
        /// Write the decrypted bundle JSON here (0600) instead of stdout.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// Where the keys are (default ~/.brainctl/keys).
        #[arg(long)]
        keys_dir: Option<PathBuf>,
        #[command(flatten)]
        storage: StorageOpts,
    },
    /// Pin an existing signed bundle on chain (the memo `export
    /// --pin-onchain` posts), signed by this wallet, which must be the
    /// bundle's signer; an existing pin is reported, not posted again.
    Pin {
        /// The signed bundle file.
        file: PathBuf,
    },
}

/// `brainctl quarantine`.
#[derive(Debug, Subcommand)]
pub enum QuarantineCmd {
    /// The quarantine scopes: rows, rows flagged suspicious, where they came from.
    List,
    /// One quarantine scope's rows (flags and provenance included).
    Show {
        /// The scope (imported:...).
        scope: String,
    },
    /// Move a scope's rows into your own memory. Rows the import scan
    /// flagged (e.g. prompt injection) stay unless named with --id.
    Promote {
        /// The scope (imported:...).
        scope: String,
        /// Where they go.
        #[arg(long, default_value = "global")]
        to: String,
        /// Promote exactly these rows (repeatable; flagged ones included).
        #[arg(long = "id")]
        ids: Vec<i64>,
    },
    /// Delete a scope: its rows, their search entries and its import record.
    Purge {
        /// The scope (imported:...).
        scope: String,
        /// Confirm the deletion (required).
        #[arg(long)]
        yes: bool,
    },
}

/// Filters shared by `memory list` and `memory search`.
#[derive(Debug, Args, Clone)]
pub struct MemoryFilter {
    /// Only this category.
    #[arg(short = 'c', long)]
    pub category: Option<String>,
    /// Only this scope.
    #[arg(short = 's', long)]
    pub scope: Option<String>,
    /// Only this memory type.
    #[arg(long = "type")]
    pub memory_type: Option<String>,
    /// Include retired memories.
    #[arg(long)]
    pub include_retired: bool,
    /// Include imported memories still in quarantine (scopes imported:…)
    /// when no --scope is named; `--scope imported:<id>` shows one import.
    #[arg(long)]
    pub include_imported: bool,
    /// At most this many rows.
    #[arg(short = 'n', visible_short_alias = 'l', long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
}

/// `brainctl memory ...`
#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// Add a memory.
    #[command(
        after_help = "Example:\n  brainctl memory add \"Deploys go through staging first\" -c project -t ops,deploy"
    )]
    Add {
        /// The memory text.
        content: String,
        /// Category (e.g. project, lesson, decision, preference).
        #[arg(short = 'c', long)]
        category: String,
        /// Scope.
        #[arg(short = 's', long, default_value = "global")]
        scope: String,
        /// Confidence in [0, 1].
        #[arg(long, default_value_t = 1.0)]
        confidence: f64,
        /// Comma-separated tags.
        #[arg(short = 't', long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Memory type.
        #[arg(long = "type", value_enum, default_value_t = MemoryType::Episodic)]
        memory_type: MemoryType,
    },
    /// List memories, newest first.
    List(MemoryFilter),
    /// Full-text search (every word must match; any punctuation is safe).
    Search {
        /// Words to find.
        query: String,
        #[command(flatten)]
        filter: MemoryFilter,
    },
    /// Retire a memory (kept, but no longer listed or exported).
    Retire {
        /// Memory id.
        id: i64,
    },
    /// Move reviewed memories out of a quarantine scope.
    Promote {
        /// The scope to move from (e.g. imported:20261101-0123456789ab).
        #[arg(long)]
        scope: String,
        /// The scope to move to.
        #[arg(long)]
        to: String,
    },
}

/// `brainctl export`
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Sign the bundle with the wallet (required: unsigned export does not exist).
    #[arg(long)]
    pub sign: bool,
    /// Only this agent's memories.
    #[arg(long)]
    pub filter_agent: Option<String>,
    /// Only this category.
    #[arg(long)]
    pub category: Option<String>,
    /// Only this scope.
    #[arg(long)]
    pub scope: Option<String>,
    /// Created at or after (ISO 8601, compared as text like the reference).
    #[arg(long)]
    pub created_after: Option<String>,
    /// Created at or before.
    #[arg(long)]
    pub created_before: Option<String>,
    /// Exactly these ids (comma-separated; includes retired rows; other filters ignored).
    #[arg(long, value_delimiter = ',')]
    pub ids: Option<Vec<i64>>,
    /// Output file (default ./bundle-<hash prefix>.signed.json; `-` for stdout).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Replace the output file if it exists (refused otherwise).
    #[arg(long)]
    pub force: bool,
    /// Sign even though secrets or personal data were found.
    #[arg(long)]
    pub allow_sensitive: bool,
    /// Also post the pin memo `brainctl/v1:<hash>:<signer>` on chain (-u);
    /// the receipt is saved beside the bundle as <file>.pin.json.
    #[arg(long)]
    pub pin_onchain: bool,
    /// Also encrypt the bundle (AES-256-GCM), upload blob and token metadata,
    /// keep the key in --keys-dir, and mint one token to --recipient (-u).
    #[arg(long)]
    pub mint: bool,
    /// Who receives the token (default: the wallet itself).
    #[arg(long, value_name = "PUBKEY", requires = "mint")]
    pub recipient: Option<String>,
    /// Token standard: `light` (a Light Protocol compressed token; the
    /// cluster needs the Light programs, as localnet has) or `token2022` (a
    /// Token-2022 NFT carrying the `ar://` metadata URI, for wallets that
    /// don't read compressed state).
    #[arg(long, value_enum, default_value_t = TokenFlag::Light, requires = "mint")]
    pub token_standard: TokenFlag,
    /// Where bundle keys are kept (0600 files, never overwritten).
    #[arg(long, env = "BRAINCTL_KEYS_DIR", value_name = "DIR")]
    pub keys_dir: Option<PathBuf>,
    #[command(flatten)]
    pub storage: StorageOpts,
}

/// `brainctl verify`
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The signed bundle file.
    pub file: PathBuf,
    /// Also require a pin on chain (-u): a successful transaction signed by
    /// the bundle's signer whose memo equals the pin string (exit 2 if none).
    #[arg(long)]
    pub check_onchain: bool,
}

/// `brainctl import`
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The signed bundle file, or the provider (`mem0`, `json`) of the
    /// export file that follows.
    pub file: PathBuf,
    /// With a provider: its export file (`.jsonl` for one record a line).
    pub source: Option<PathBuf>,
    /// Scope for the rows (default imported:<bundle hash prefix>, or
    /// imported:<provider>).
    #[arg(long)]
    pub scope: Option<String>,
    /// Provider imports: this category for every row (default: mem0 `user`,
    /// json the record's own).
    #[arg(long, requires = "source")]
    pub category: Option<String>,
    /// Provider imports: read, scan and report, write nothing.
    #[arg(long, requires = "source")]
    pub dry_run: bool,
    /// Provider imports: straight into `global` instead of quarantine (you
    /// trust the file: it skips the review).
    #[arg(long, requires = "source", conflicts_with = "scope")]
    pub no_quarantine: bool,
    /// Write into this Python brainctl 2.8 brain.db instead of our store
    /// (the agent's own: its BRAINCTL_DB). Verified first, one
    /// transaction, as the `marketplace-buyer` agent, idempotent; other
    /// rows are never touched.
    #[arg(long, value_name = "PATH")]
    pub into_brainctl_db: Option<PathBuf>,
}

/// `--storage`: where data items go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageKind {
    /// A local content-addressed directory.
    Fs,
    /// An Irys-compatible bundler (reads from the gateway).
    Bundler,
    /// An Arweave gateway that takes transactions (arlocal on localnet).
    Gateway,
}

/// `--receipt`: what a release gives the buyer beside the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReceiptFlag {
    /// A compressed unit of the listing's own mint.
    Listing,
    /// A fresh mint per buy.
    PerBuy,
    /// No token: the release memo alone.
    None,
}

impl From<ReceiptFlag> for node::mint::receipt::ReceiptMode {
    fn from(f: ReceiptFlag) -> Self {
        match f {
            ReceiptFlag::Listing => node::mint::receipt::ReceiptMode::Listing,
            ReceiptFlag::PerBuy => node::mint::receipt::ReceiptMode::PerBuy,
            ReceiptFlag::None => node::mint::receipt::ReceiptMode::None,
        }
    }
}

/// `--token-standard`: the token a buyer or recipient gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TokenFlag {
    /// A Light Protocol compressed token.
    Light,
    /// A Token-2022 NFT carrying the `ar://` metadata URI.
    Token2022,
}

impl From<TokenFlag> for node::mint::bundle_mint::TokenStandard {
    fn from(f: TokenFlag) -> Self {
        match f {
            TokenFlag::Light => node::mint::bundle_mint::TokenStandard::LightCompressed,
            TokenFlag::Token2022 => node::mint::bundle_mint::TokenStandard::Token2022,
        }
    }
}

/// `--visibility` of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Visibility {
    /// Anyone may see its offers.
    Auction,
    /// Offers and settlements only to the seller and that buyer.
    Private,
}

impl Visibility {
    /// The manifest's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Auction => "auction",
            Visibility::Private => "private",
        }
    }
}

/// `--status` of listings to browse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListingStatus {
    /// Live (not cancelled, not expired).
    Live,
    /// Cancelled by the seller.
    Cancelled,
    /// Past their expiry.
    Expired,
    /// Every listing.
    All,
}

impl ListingStatus {
    /// The indexer's query value.
    pub fn as_str(self) -> &'static str {
        match self {
            ListingStatus::Live => "live",
            ListingStatus::Cancelled => "cancelled",
            ListingStatus::Expired => "expired",
            ListingStatus::All => "all",
        }
    }
}

/// `--commitment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Commitment {
    /// Processed by the node (may be rolled back).
    Processed,
    /// Voted on by a supermajority.
    Confirmed,
    /// Rooted: final.
    Finalized,
}

impl Commitment {
    /// From the name the Solana CLI config uses (its older names too).
    pub fn from_config(name: &str) -> Option<Commitment> {
        match name {
            "processed" | "recent" => Some(Commitment::Processed),
            "confirmed" | "single" | "singleGossip" => Some(Commitment::Confirmed),
            "finalized" | "max" | "root" => Some(Commitment::Finalized),
            _ => None,
        }
    }

    /// Its name (as the RPC spells it).
    pub fn as_str(self) -> &'static str {
        match self {
            Commitment::Processed => "processed",
            Commitment::Confirmed => "confirmed",
            Commitment::Finalized => "finalized",
        }
    }
}

/// `--type` of a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MemoryType {
    /// Something that happened.
    Episodic,
    /// A fact.
    Semantic,
    /// How to do something.
    Procedural,
}

impl MemoryType {
    /// Its name in the store (the reference's column value).
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Episodic => "episodic",
            MemoryType::Semantic => "semantic",
            MemoryType::Procedural => "procedural",
        }
    }
}

/// `brainctl token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCmd {
    /// What a wallet's associated token account of a mint holds.
    Balance {
        /// The mint (default: $BRAINCTL_SETTLE_MINT).
        #[arg(long, env = "BRAINCTL_SETTLE_MINT", value_name = "MINT")]
        mint: String,
        /// Whose balance (default: this wallet).
        #[arg(long, value_name = "PUBKEY")]
        owner: Option<String>,
    },
    /// Mint the localnet's test dollar to an address (this wallet must be
    /// its mint authority: localnet/up's `usdc-authority` wallet).
    MintTestDollars {
        /// Who receives them (their associated account is created if missing).
        #[arg(long, value_name = "PUBKEY")]
        to: String,
        /// How many dollars.
        #[arg(long)]
        usd: f64,
    },
    /// Print the test dollar's mint as a `solana-test-validator --account`
    /// file (what localnet/up loads into the genesis).
    TestDollarGenesis {
        /// The mint authority.
        #[arg(long, value_name = "PUBKEY")]
        authority: String,
    },
    /// Print the localnet's SOL/USD price (a Pyth PriceUpdateV2 account at
    /// Pyth's SOL/USD feed account address, published now) as a
    /// `solana-test-validator --account` file (what localnet/up loads).
    SolUsdGenesis {
        /// USD per SOL.
        #[arg(long, default_value_t = 150.0)]
        usd: f64,
    },
}

/// `brainctl escrow ...`
#[derive(Debug, Subcommand)]
pub enum EscrowCmd {
    /// The program's id, whether it is deployed, and its config.
    Show,
    /// Set the config (`initialize_config`); the wallet must be the upgrade authority.
    Configure(EscrowConfigArgs),
}

/// `brainctl escrow configure`
#[derive(Debug, clap::Args)]
pub struct EscrowConfigArgs {
    /// Where claim fees go (a system account).
    #[arg(long, value_name = "PUBKEY")]
    pub treasury: String,
    /// Claim fee in basis points (at most 1000).
    #[arg(long, default_value_t = 100)]
    pub fee_bps: u16,
    /// Share of a listing's stake a buyer takes when the key never came or
    /// a fraud proof held, in basis points (1 to 10000).
    #[arg(long, default_value_t = 5_000)]
    pub slash_bps: u16,
    /// Seconds a seller has to reveal the key after a deposit before the
    /// buyer may refund (120 s to 30 days).
    #[arg(long, default_value_t = 600)]
    pub release_window_secs: i64,
    /// Seconds a buyer has after the reveal to prove a misdelivery before
    /// the seller may claim the payment: 6 h to 30 days (10 s on the
    /// program's localnet build). The default, a day, lets a buyer whose
    /// client is offline overnight still prove a lie; the seller is paid
    /// that much later.
    #[arg(long, default_value_t = 86_400)]
    pub dispute_window_secs: i64,
    /// Stake a listing must hold at every deposit, in lamports (above 0).
    #[arg(long = "min-stake-lamports", default_value_t = 10_000_000)]
    pub min_stake: u64,
}
