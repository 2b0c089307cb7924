//! `brainctl mcp`: this node as Model Context Protocol tools over stdio,
//! or over streamable HTTP with `--http` (served by [`super::mcp_http`]).
//!
//! Owns the tool catalogue (names, argument schemas, descriptions that
//! teach an agent the workflow) and the mapping of each tool call onto the
//! very command the CLI runs, executed with its JSON output captured: the
//! same checks, the same typed refusals, the same spend policy (enforced in
//! `node::market::buy::execute`, never here and never by the agent).
//!
//! Never: writes anything to stdout but the protocol (commands run with
//! their output captured; logs go to stderr), lets a tool change the spend
//! policy, or starts without one unless the operator says so.

use crate::args::{Command, ExportArgs, MarketCmd, McpArgs, MemoryCmd, MemoryFilter, Terms};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use node::x402::paid_calls::{CallRefusal, PaidCalls, PAYMENT_META, PAYMENT_RESPONSE_META};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// What every tool call's command runs with (the server's flags).
struct Settings {
    home: Option<PathBuf>,
    db_path: PathBuf,
    wallet_path: PathBuf,
    agent: Option<String>,
    url: String,
    commitment: crate::args::Commitment,
    priority: node::chain::priority::PriorityPolicy,
    limits: node::spend::SpendPolicy,
    args: McpArgs,
    /// One store for every memory tool call (warm ranking, no reopen).
    store: crate::context::KeptStore,
}

impl Settings {
    /// A context whose `emit` captures instead of printing.
    fn context(&self) -> Context {
        Context {
            home: self.home.clone(),
            db_path: self.db_path.clone(),
            wallet_path: self.wallet_path.clone(),
            own_wallet_path: self.wallet_path.clone(),
            json: true,
            agent: self.agent.clone(),
            url: self.url.clone(),
            commitment: self.commitment,
            priority: self.priority,
            spend_limits: Some(self.limits.clone()),
            captured: Some(Default::default()),
            kept_store: Some(self.store.clone()),
        }
    }
}

/// The MCP server.
#[derive(Clone)]
pub struct BrainctlServer {
    settings: Arc<Settings>,
    tool_router: ToolRouter<Self>,
    /// The priced tools (over HTTP with `--tool-prices`).
    paid: Option<Arc<PaidCalls>>,
}

const INSTRUCTIONS: &str = "brainctl: this agent's memory store and a marketplace of signed memory bundles settled on Solana.
Memory: memory_search / memory_list read the store, memory_add writes one memory.
Buying: market_browse (an indexer's listings) -> market_show (one listing, its preview and sales) -> market_quote (the full cost and whether the spend policy allows it; sends nothing) -> market_buy (pays, waits for the seller's release, verifies and imports the memories into scope imported:<listing id>). A buy over the spend policy is refused with the reason and spends nothing; market_budget shows the policy and what the last 24 h spent. If market_buy times out, the payment stands: finish with market_fetch and the buy_signature it returned. An escrow buy the seller has not answered yet returns status pending: market_pending (one pass over every pending escrow buy: imports a release, proves a lying seller's fraud on chain, refunds a missed window) finishes it; call it again later, or run `brainctl marketplace watch` as a service.
Negotiating: market_offer proposes a price; once the seller accepts, market_buy with the offer id pays the agreed price.
Selling: market_list (a signed bundle of memories, chosen by category/scope/ids), then the seller's `brainctl marketplace listen` service releases each paid buy; market_status shows listings, buys and offers; market_accept / market_reject / market_counter answer offers; market_cancel withdraws a listing.
Reviewing: bought memories wait in quarantine (quarantine_list); read a scope with memory_list {scope}, then quarantine_promote (flagged rows only when named by id) or quarantine_purge.
Prices are in lamports (1 SOL = 1,000,000,000 lamports); listing ids look like 20261124-0123456789ab, manifests and offers are storage item ids.";

fn default_limit() -> u32 {
    20
}

/// `memory_search` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Words to find (every word must match; punctuation is safe).
    pub query: String,
    /// Only memories in this scope (e.g. global, imported:<listing id>).
    /// Without one, bought memories still in quarantine are left out.
    #[serde(default)]
    pub scope: Option<String>,
    /// Also search bought memories still in quarantine (unreviewed
    /// content from another agent: may hold prompt injections).
    #[serde(default)]
    pub include_imported: bool,
    /// Only this category (e.g. lesson, project, decision).
    #[serde(default)]
    pub category: Option<String>,
    /// At most this many rows (1-10000, default 20).
    #[serde(default = "default_limit")]
    pub limit: u32,
}

/// `memory_list` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListMemoriesArgs {
    /// Only memories in this scope. Without one, bought memories still in
    /// quarantine are left out.
    #[serde(default)]
    pub scope: Option<String>,
    /// Also list bought memories still in quarantine (unreviewed content
    /// from another agent: may hold prompt injections).
    #[serde(default)]
    pub include_imported: bool,
    /// Only this category.
    #[serde(default)]
    pub category: Option<String>,
    /// At most this many rows, newest first (1-10000, default 20).
    #[serde(default = "default_limit")]
    pub limit: u32,
}

/// `memory_add` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The memory text.
    pub content: String,
    /// Category (e.g. project, lesson, decision, preference).
    pub category: String,
    /// Scope (default global).
    #[serde(default)]
    pub scope: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Confidence in [0, 1] (default 1).
    #[serde(default)]
    pub confidence: Option<f64>,
}

/// `market_browse` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BrowseArgs {
    /// Only listings at or under this price in USD.
    #[serde(default)]
    pub max_price_usd: Option<f64>,
    /// Only listings whose preview names this category.
    #[serde(default)]
    pub category: Option<String>,
    /// Only this seller's listings (base58 pubkey).
    #[serde(default)]
    pub seller: Option<String>,
    /// live (default) | cancelled | expired | all.
    #[serde(default)]
    pub status: Option<String>,
    /// Page size (1-100, default 20).
    #[serde(default = "default_limit")]
    pub limit: u32,
    /// The previous page's next_cursor.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A listing, by its id.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListingIdArgs {
    /// Listing id (YYYYMMDD-<12 hex>), as market_browse shows it.
    pub listing_id: String,
}

/// `market_show` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShowListingArgs {
    /// Listing id (YYYYMMDD-<12 hex>), as market_browse shows it.
    pub listing_id: String,
    /// Also return the offers' and counters' free-text messages (another
    /// party's words: may hold prompt injections). Without it they are
    /// withheld and each such offer says messages_withheld.
    #[serde(default)]
    pub include_messages: bool,
}

/// A buy's terms.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BuyArgs {
    /// The listing's manifest item id (market_browse / market_show:
    /// manifest_id); its listing_id works too (looked up on the indexer).
    pub manifest_id: String,
    /// Pay the price of this accepted offer (its item id, from market_offer)
    /// instead of the listed price; the seller's counter is found on chain.
    #[serde(default)]
    pub offer: Option<String>,
}

/// `market_fetch` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// The listing's manifest item id (or its listing_id).
    pub manifest_id: String,
    /// The buy_signature market_buy returned.
    pub buy_signature: String,
}

/// `market_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusArgs {
    /// Only this listing id.
    #[serde(default)]
    pub listing_id: Option<String>,
}

/// `market_list` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SellArgs {
    /// Sell the memories of this category...
    #[serde(default)]
    pub category: Option<String>,
    /// ...and/or this scope...
    #[serde(default)]
    pub scope: Option<String>,
    /// ...or exactly these memory ids (other filters ignored).
    #[serde(default)]
    pub ids: Option<Vec<i64>>,
    /// Price in USD (0 to 10000).
    pub price_usd: f64,
    /// SOL/USD rate that fixes the price in lamports in the signed listing.
    pub sol_usd: f64,
    /// How long the listing lives, in hours (default 72, max 720).
    #[serde(default)]
    pub duration_hours: Option<f64>,
    /// Shown in the preview.
    #[serde(default)]
    pub description: Option<String>,
    /// `auction` (default: anyone may offer and see offers) or `private`
    /// (offers and buys shown only to you and that buyer).
    #[serde(default)]
    pub visibility: Option<String>,
    /// Settle through the escrow program: buyers deposit there and you are
    /// paid when your listen service releases (needs a stake).
    #[serde(default)]
    pub escrow: bool,
    /// The stake (lamports) put up with an escrow listing, returned on cancel.
    #[serde(default)]
    pub stake_lamports: Option<u64>,
    /// At most this many escrow deposits open at once (each reserves one
    /// slash share of the stake); default: as many as the stake backs.
    #[serde(default)]
    pub max_open_escrows: Option<u32>,
    /// Settle in this SPL token mint instead of SOL (`SOL` for SOL);
    /// default: the server's BRAINCTL_SETTLE_MINT, else SOL.
    #[serde(default)]
    pub mint: Option<String>,
    /// USD per whole token of `mint` (not needed for dollar stablecoins).
    #[serde(default)]
    pub token_usd: Option<f64>,
}

/// `bundle_export` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BundleExportArgs {
    /// The file's name (letters, digits, - and _): it is written to
    /// exports/<name>.signed.json beside the wallet.
    pub name: String,
    /// Export the memories of this category...
    #[serde(default)]
    pub category: Option<String>,
    /// ...and/or this scope...
    #[serde(default)]
    pub scope: Option<String>,
    /// ...or exactly these memory ids (other filters ignored).
    #[serde(default)]
    pub ids: Option<Vec<i64>>,
}

/// `bundle_verify` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BundleVerifyArgs {
    /// The signed bundle file (e.g. the path bundle_export returned).
    pub path: PathBuf,
}

/// `quarantine_promote` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PromoteArgs {
    /// The quarantine scope (imported:..., from quarantine_list).
    pub scope: String,
    /// Where the rows go (default global).
    #[serde(default)]
    pub to: Option<String>,
    /// Exactly these memory ids (flagged ones included, after you read
    /// them); without, every unflagged row moves and flagged ones stay.
    #[serde(default)]
    pub ids: Vec<i64>,
}

/// `quarantine_purge` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PurgeArgs {
    /// The quarantine scope (imported:...).
    pub scope: String,
    /// Must be true: the scope's memories are deleted for good.
    pub confirm: bool,
}

/// `market_withdraw` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WithdrawToolArgs {
    /// Your offer's item id (from market_offer: offer_item_id).
    pub offer: String,
    /// The listing's manifest item id (or its listing_id).
    pub manifest_id: String,
}

/// Price terms of an offer or counter.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OfferArgs {
    /// For market_offer: the listing's manifest item id. For
    /// market_counter: the offer's item id.
    pub target: String,
    /// Proposed price in USD (0 to 10000).
    pub price_usd: f64,
    /// SOL/USD rate that fixes the proposed lamports (required when the
    /// listing settles in SOL).
    #[serde(default)]
    pub sol_usd: Option<f64>,
    /// When the listing settles in a token that is not a dollar
    /// stablecoin: USD per whole token, fixing the proposed base units.
    #[serde(default)]
    pub token_usd: Option<f64>,
    /// A note to the other side (max 280 characters).
    #[serde(default)]
    pub message: String,
    /// Lifetime in hours (default 24, max 24).
    #[serde(default)]
    pub ttl_hours: Option<f64>,
    /// market_counter by the buyer: the listing's manifest item id (you
    /// counter the seller's terms on your own offer); sellers leave it out.
    #[serde(default)]
    pub listing: Option<String>,
}

/// An offer, by its item id.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OfferIdArgs {
    /// The offer's item id (market_status lists them under each listing).
    pub offer: String,
}

/// `market_accept` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AcceptArgs {
    /// The offer's item id (market_status lists them under each listing).
    pub offer: String,
    /// The lamports the accept binds, confirmed: the offer's price, or your
    /// counter's (market_status shows it); any other value posts nothing.
    pub price_lamports: u64,
}

fn filter(
    scope: Option<String>,
    include_imported: bool,
    category: Option<String>,
    limit: u32,
) -> Result<MemoryFilter, Failure> {
    if !(1..=10_000).contains(&limit) {
        return Err(Failure::bad_input(anyhow!(
            "limit must be in 1..=10000, got {limit}"
        )));
    }
    Ok(MemoryFilter {
        category,
        scope,
        memory_type: None,
        include_retired: false,
        include_imported,
        limit,
    })
}

/// A tool's result from a command's captured output or its failure: the
/// failure keeps the CLI's message, exit code and (for a spend refusal)
/// the typed refusal.
fn tool_result(outcome: CliResult<u8>, captured: Option<Value>) -> CallToolResult {
    match outcome {
        Ok(0) => CallToolResult::structured(captured.unwrap_or_else(|| json!({"ok": true}))),
        Ok(code) => CallToolResult::structured_error(
            captured.unwrap_or_else(|| json!({"ok": false, "exit_code": code})),
        ),
        Err(f) => {
            // a buy's refusal, or an action's (its cost reserved by the CLI)
            let spend = f
                .error
                .downcast_ref::<node::market::buy::BuyError>()
                .and_then(|e| match e {
                    node::market::buy::BuyError::Spend(s) => Some(s),
                    _ => None,
                })
                .or_else(|| f.error.downcast_ref::<node::spend::SpendError>());
            let refusal = match spend {
                Some(node::spend::SpendError::Refused(r)) => serde_json::to_value(r).ok(),
                _ => None,
            };
            CallToolResult::structured_error(json!({
                "ok": false,
                "error": f.to_string(),
                "kind": if f.code == crate::failure::EXIT_BAD_INPUT { "bad_input" } else { "refused_or_failed" },
                "spend_refusal": refusal,
            }))
        }
    }
}

impl BrainctlServer {
    /// Runs `make`'s command on the blocking pool with captured output.
    async fn run(
        &self,
        make: impl FnOnce(&McpArgs) -> Result<Command, Failure> + Send + 'static,
    ) -> Result<CallToolResult, McpError> {
        let settings = self.settings.clone();
        tokio::task::spawn_blocking(move || {
            let ctx = settings.context();
            let outcome = make(&settings.args).and_then(|c| super::run(c, &ctx));
            tool_result(outcome, ctx.take_captured())
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task: {e}"), None))
    }

    fn market(
        &self,
        make: impl FnOnce(&McpArgs) -> Result<MarketCmd, Failure> + Send + 'static,
    ) -> impl std::future::Future<Output = Result<CallToolResult, McpError>> + '_ {
        self.run(move |a| make(a).map(Command::Marketplace))
    }
}

#[tool_router(router = tool_router)]
impl BrainctlServer {
    /// A server over `settings` exposing the tools in `allowed` (all when
    /// `None`): the others are neither listed nor callable.
    fn new(
        settings: Arc<Settings>,
        allowed: Option<&std::collections::BTreeSet<String>>,
        paid: Option<Arc<PaidCalls>>,
    ) -> Self {
        let mut tool_router = Self::tool_router();
        if let Some(allowed) = allowed {
            for tool in tool_router.list_all() {
                if !allowed.contains(tool.name.as_ref()) {
                    tool_router.remove_route(&tool.name);
                }
            }
        }
        Self {
            settings,
            tool_router,
            paid,
        }
    }

    /// Every tool name this server has.
    fn tool_names() -> std::collections::BTreeSet<String> {
        Self::tool_router()
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Full-text search of this agent's memories.
    #[tool(
        description = "Full-text search of this agent's memories (every word must match). Returns {memories: [{id, content, category, scope, tags, ...}]}. Bought memories live in scope imported:<listing id> until promoted and are left out unless that scope is named or include_imported is true.",
        annotations(read_only_hint = true)
    )]
    async fn memory_search(
        &self,
        Parameters(a): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |_| {
            Ok(Command::Memory(MemoryCmd::Search {
                query: a.query,
                filter: filter(a.scope, a.include_imported, a.category, a.limit)?,
            }))
        })
        .await
    }

    /// Exports a signed bundle.
    #[tool(
        description = "Export memories (by category, scope or ids) as an Ed25519-signed bundle, byte-compatible with the Python brainctl, to exports/<name>.signed.json beside the wallet; secrets and personal data are refused. Returns {output, bundle_hash, memories_count, signer_pubkey}."
    )]
    async fn bundle_export(
        &self,
        Parameters(a): Parameters<BundleExportArgs>,
    ) -> Result<CallToolResult, McpError> {
        let wallet_path = self.settings.wallet_path.clone();
        self.run(move |s| {
            let out = export_path(&wallet_path, &a.name)?;
            if let Some(dir) = out.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
            }
            Ok(Command::Export(signed_export(
                s,
                (a.category, a.scope, a.ids),
                out,
            )))
        })
        .await
    }

    /// Verifies a signed bundle.
    #[tool(
        description = "Verify a signed bundle file: its Ed25519 signature over the canonical bytes, its hash and its rows. Returns {ok, bundle_hash, signer_pubkey, memories_count, ...}; a tampered or malformed file is an error with the reason.",
        annotations(read_only_hint = true)
    )]
    async fn bundle_verify(
        &self,
        Parameters(a): Parameters<BundleVerifyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |_| {
            Ok(Command::Verify(crate::args::VerifyArgs {
                file: a.path,
                check_onchain: false,
            }))
        })
        .await
    }

    /// The quarantine scopes.
    #[tool(
        description = "Memories from other agents (bought or imported) wait in quarantine scopes imported:<...>, out of memory_search and memory_list. Returns {scopes: [{scope, memories, suspicious, signer, source, imported_at}]}; read a scope with memory_list {scope} before promoting it.",
        annotations(read_only_hint = true)
    )]
    async fn quarantine_list(&self) -> Result<CallToolResult, McpError> {
        self.run(|_| Ok(Command::Quarantine(crate::args::QuarantineCmd::List)))
            .await
    }

    /// Promotes a quarantine scope's rows.
    #[tool(
        description = "Move a quarantine scope's memories into your own memory (to, default global). Rows the import scan flagged (e.g. prompt injection) stay unless named in ids one by one. Returns {moved, held_suspicious}."
    )]
    async fn quarantine_promote(
        &self,
        Parameters(a): Parameters<PromoteArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |_| {
            Ok(Command::Quarantine(crate::args::QuarantineCmd::Promote {
                scope: a.scope,
                to: a.to.unwrap_or_else(|| "global".into()),
                ids: a.ids,
            }))
        })
        .await
    }

    /// Purges a quarantine scope.
    #[tool(
        description = "Delete a quarantine scope: its memories, their search entries and its import record (confirm must be true). Returns {purged: {memories, search_entries, imports}}.",
        annotations(destructive_hint = true)
    )]
    async fn quarantine_purge(
        &self,
        Parameters(a): Parameters<PurgeArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |_| {
            Ok(Command::Quarantine(crate::args::QuarantineCmd::Purge {
                scope: a.scope,
                yes: a.confirm,
            }))
        })
        .await
    }

    /// Newest memories first.
    #[tool(
        description = "List this agent's memories, newest first, optionally by scope or category. Returns {memories: [...]}.",
        annotations(read_only_hint = true)
    )]
    async fn memory_list(
        &self,
        Parameters(a): Parameters<ListMemoriesArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |_| {
            Ok(Command::Memory(MemoryCmd::List(filter(
                a.scope,
                a.include_imported,
                a.category,
                a.limit,
            )?)))
        })
        .await
    }

    /// Adds a memory.
    #[tool(
        description = "Add one memory to this agent's store. Returns {id}. Secrets and personal data are refused at export time, not here: keep them out of memories you may sell."
    )]
    async fn memory_add(
        &self,
        Parameters(a): Parameters<AddArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |_| {
            Ok(Command::Memory(MemoryCmd::Add {
                content: a.content,
                category: a.category,
                scope: a.scope.unwrap_or_else(|| "global".into()),
                confidence: a.confidence.unwrap_or(1.0),
                tags: a.tags,
                memory_type: crate::args::MemoryType::Episodic,
            }))
        })
        .await
    }

    /// Listings from the indexer.
    #[tool(
        description = "Browse the marketplace's listings from its indexer (a convenience view; market_buy re-checks everything on chain). Returns {listings: [{listing_id, manifest_id, price_lamports, price_usd, seller, preview, ...}], next_cursor}.",
        annotations(read_only_hint = true)
    )]
    async fn market_browse(
        &self,
        Parameters(a): Parameters<BrowseArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Browse(crate::args::BrowseArgs {
                indexer: s.indexer.clone(),
                max_price_usd: a.max_price_usd,
                category: a.category,
                seller: a.seller,
                status: match a.status.as_deref() {
                    None => crate::args::ListingStatus::Live,
                    Some(st) => <crate::args::ListingStatus as clap::ValueEnum>::from_str(st, true)
                        .map_err(|_| {
                            Failure::bad_input(anyhow!(
                                "status must be live, cancelled, expired or all, not {st:?}"
                            ))
                        })?,
                },
                limit: a.limit,
                cursor: a.cursor,
            }))
        })
        .await
    }

    /// One listing from the indexer.
    #[tool(
        description = "One listing from the indexer: its signed manifest (price, preview, expiry), status, sales and the offers you may see (their free-text messages withheld unless include_messages). Use its manifest_id for market_quote / market_buy.",
        annotations(read_only_hint = true)
    )]
    async fn market_show(
        &self,
        Parameters(a): Parameters<ShowListingArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Show(crate::args::ShowArgs {
                listing_id: a.listing_id,
                include_messages: a.include_messages,
                indexer: s.indexer.clone(),
                storage: s.storage.clone(),
            }))
        })
        .await
    }

    /// What a buy would cost.
    #[tool(
        description = "Dry run of market_buy: checks the listing on chain (live, not cancelled, escrow account, accepted offer) and returns {quote: {price_lamports, protocol_fee_lamports, escrow_rent_lamports, network_fee_lamports, total_lamports, ...}, allowed, refusal, standing}. Sends and records nothing.",
        annotations(read_only_hint = true)
    )]
    async fn market_quote(
        &self,
        Parameters(a): Parameters<BuyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Quote(crate::args::QuoteArgs {
                listing: a.manifest_id,
                offer: a.offer,
                counter: None,
                // an agent never pays for a blob that cannot prove its promise
                allow_unproven_blob: false,
                storage: s.storage.clone(),
                indexer: s.indexer.clone(),
            }))
        })
        .await
    }

    /// Buys a listing under the spend policy.
    #[tool(
        description = "Buy a listing: the full cost is checked against the spend policy and reserved (over policy: refused with spend_refusal, nothing sent), paid in one transaction, then the seller's release is awaited and the bundle verified against the signed listing and imported. Returns {buy_signature, import}. On timeout the payment stands: call market_fetch with the buy_signature.",
        annotations(destructive_hint = false, idempotent_hint = false)
    )]
    async fn market_buy(
        &self,
        Parameters(a): Parameters<BuyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Buy(crate::args::BuyArgs {
                listing: a.manifest_id,
                offer: a.offer,
                counter: None,
                escrow: false,
                allow_unproven_blob: false,
                receive: s.receive(),
            }))
        })
        .await
    }

    /// Finishes an interrupted buy.
    #[tool(
        description = "Finish a paid buy whose release had not arrived: waits for it, verifies and imports. Spends nothing. Returns {buy_signature, import}."
    )]
    async fn market_fetch(
        &self,
        Parameters(a): Parameters<FetchArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Fetch(crate::args::FetchArgs {
                listing: a.manifest_id,
                buy_signature: a.buy_signature,
                receive: s.receive(),
            }))
        })
        .await
    }

    /// One pass over this wallet's pending escrow buys.
    #[tool(
        description = "Finish your pending escrow buys (those market_buy returned as pending): one look at each escrow. A revealed key is opened against the blob checked before paying and imported; a key that does not open the committed blob is proven on chain (deposit and a share of the seller's stake back); a deposit the seller left past its window, declined or expired is refunded. Spends only network fees. Returns {outcomes: [{buy_signature, listing_id, state, detail}], still_pending}."
    )]
    async fn market_pending(&self) -> Result<CallToolResult, McpError> {
        self.market(|_| {
            Ok(MarketCmd::Watch(crate::args::WatchArgs {
                every: 5,
                until_done: false,
                once: true,
                list: false,
            }))
        })
        .await
    }

    /// The spend policy and ledger.
    #[tool(
        description = "This wallet's spend policy (per-buy maximum, 24 h budget, seller allowlist), what was spent or reserved in the last 24 h, what is left, and the newest spends. The policy is set by the operator, not by tools.",
        annotations(read_only_hint = true)
    )]
    async fn market_budget(&self) -> Result<CallToolResult, McpError> {
        // read-only: the policy is the operator's, never set through a tool
        self.market(|_| {
            Ok(MarketCmd::Budget(crate::args::BudgetArgs {
                limit: 20,
                set_max_per_buy_lamports: None,
                set_budget_24h_lamports: None,
                set_priority_fee_max_lamports: None,
                set_sellers: Vec::new(),
            }))
        })
        .await
    }

    /// The seller's view.
    #[tool(
        description = "Your listings as a seller: what the chain says (offers, buys, releases, cancels), each buy's state and reason, offer decisions; and your purchases. Returns {listings, purchases}.",
        annotations(read_only_hint = true)
    )]
    async fn market_status(
        &self,
        Parameters(a): Parameters<StatusArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Status(crate::args::StatusArgs {
                listing_id: a.listing_id,
                seller: s.seller.clone(),
            }))
        })
        .await
    }

    /// Lists memories for sale.
    #[tool(
        description = "Sell memories: exports the chosen memories as a signed bundle (refused if it holds secrets or personal data), encrypts and stores it, and posts the listing on chain. Returns {listing: {listing_id, manifest_id, price_lamports, ...}}. The seller's `brainctl marketplace listen` service must run to release buys."
    )]
    async fn market_list(
        &self,
        Parameters(a): Parameters<SellArgs>,
    ) -> Result<CallToolResult, McpError> {
        let settings = self.settings.clone();
        let bundle = sale_bundle_path(&settings.wallet_path);
        let (export_to, listed_from) = (bundle.clone(), bundle.clone());
        let exported = self
            .run(move |s| {
                Ok(Command::Export(signed_export(
                    s,
                    (a.category, a.scope, a.ids),
                    export_to,
                )))
            })
            .await?;
        if exported.is_error == Some(true) {
            return Ok(exported);
        }
        let (price_usd, sol_usd) = (a.price_usd, a.sol_usd);
        let result = self
            .market(move |s| {
                Ok(MarketCmd::List(crate::args::ListArgs {
                    bundle: bundle.clone(),
                    price_usd,
                    sol_usd: Some(sol_usd),
                    usd_at_settle: None,
                    price_feed: None,
                    price_max_age_secs: 90,
                    price_max_conf_bps: 100,
                    price_tolerance_bps: 100,
                    duration_hours: a.duration_hours.unwrap_or(72.0),
                    visibility: match a.visibility.as_deref() {
                        None | Some("auction") => crate::args::Visibility::Auction,
                        Some("private") => crate::args::Visibility::Private,
                        Some(v) => {
                            return Err(Failure::bad_input(anyhow!(
                                "visibility must be auction or private, not {v:?}"
                            )))
                        }
                    },
                    payment_address: None,
                    description: a.description.unwrap_or_default(),
                    escrow: a.escrow,
                    stake_lamports: a.stake_lamports.unwrap_or(0),
                    max_open_escrows: a.max_open_escrows,
                    below_cost: false,
                    receipt: crate::args::ReceiptFlag::Listing,
                    mint: a
                        .mint
                        .clone()
                        .or_else(|| std::env::var(node::market::list::SETTLE_MINT_ENV).ok()),
                    token_usd: a.token_usd,
                    storage: s.storage.clone(),
                    seller: s.seller.clone(),
                }))
            })
            .await;
        let _ = std::fs::remove_file(&listed_from);
        result
    }

    /// Offers a price on a listing.
    #[tool(
        description = "Buyer: offer a price on a listing (target = the listing's manifest item id). Returns {offer_item_id, offer_id, price_lamports} (on a listing that settles in a token: price_units and mint). When the seller accepts, call market_buy with offer = offer_item_id."
    )]
    async fn market_offer(
        &self,
        Parameters(a): Parameters<OfferArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Offer(crate::args::OfferArgs {
                listing: a.target.clone(),
                terms: terms(a),
                storage: s.storage.clone(),
                indexer: s.indexer.clone(),
            }))
        })
        .await
    }

    /// Seller: counters an offer.
    #[tool(
        description = "Counter an offer (target = the offer's item id) with another price: the seller on an offer to its listing, or the buyer on its own offer (then listing = the listing's manifest item id). If the seller accepts, the newest counter binds. Returns {counter_item_id}."
    )]
    async fn market_counter(
        &self,
        Parameters(a): Parameters<OfferArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Counter(crate::args::CounterArgs {
                offer: a.target.clone(),
                listing: a.listing.clone(),
                terms: terms(a),
                storage: s.storage.clone(),
                indexer: s.indexer.clone(),
                seller: s.seller.clone(),
            }))
        })
        .await
    }

    /// Seller: accepts an offer.
    #[tool(
        description = "Seller: accept an offer (at its counter's price if you countered), confirming the lamports it binds: price_lamports must equal the offer's (or your counter's) price_lamports as market_status shows it, else nothing is posted. Posts the accept on chain. Returns {offer_id, state, price_lamports}."
    )]
    async fn market_accept(
        &self,
        Parameters(a): Parameters<AcceptArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Accept(crate::args::AnswerArgs {
                offer: a.offer,
                expect_lamports: Some(a.price_lamports),
                storage: s.storage.clone(),
                seller: s.seller.clone(),
            }))
        })
        .await
    }

    /// Seller: rejects an offer.
    #[tool(description = "Seller: reject an offer. Posts the reject on chain.")]
    async fn market_reject(
        &self,
        Parameters(a): Parameters<OfferIdArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Reject(crate::args::AnswerArgs {
                offer: a.offer,
                expect_lamports: None,
                storage: s.storage.clone(),
                seller: s.seller.clone(),
            }))
        })
        .await
    }

    /// Buyer: withdraws an offer.
    #[tool(
        description = "Buyer: withdraw your offer on a listing (offer = its item id, manifest_id = the listing's); posts the withdraw on chain, after which the seller cannot accept it. Costs a network fee inside your spend policy."
    )]
    async fn market_withdraw(
        &self,
        Parameters(a): Parameters<WithdrawToolArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Withdraw(crate::args::WithdrawArgs {
                offer: a.offer,
                listing: a.manifest_id,
                storage: s.storage.clone(),
                indexer: s.indexer.clone(),
            }))
        })
        .await
    }

    /// Buyer: closes its escrow and takes back what it holds.
    #[tool(
        description = "Buyer: close your escrow on a listing (manifest_id = the listing's) and take back what it holds: the deposit and a share of the seller's stake when the seller never revealed the key inside the release window, the whole deposit when the seller declined it, the rent once the seller was paid. Returns the refund transaction."
    )]
    async fn market_refund(
        &self,
        Parameters(a): Parameters<BuyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Refund(crate::args::RefundArgs {
                listing: a.manifest_id,
                storage: s.storage.clone(),
                indexer: s.indexer.clone(),
            }))
        })
        .await
    }

    /// Buyer: proves a misdelivery.
    #[tool(
        description = "Buyer: prove that the key the seller revealed does not open the committed blob to the committed bundle (manifest_id = the listing's), inside the dispute window. The escrow program decides alone: the deposit comes back with a share of the seller's stake. market_buy names the lying chunk when it finds one."
    )]
    async fn market_dispute(
        &self,
        Parameters(a): Parameters<BuyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Dispute(crate::args::RefundArgs {
                listing: a.manifest_id,
                storage: s.storage.clone(),
                indexer: s.indexer.clone(),
            }))
        })
        .await
    }

    /// Seller: cancels a listing.
    #[tool(
        description = "Seller: cancel one of your listings (listing id). Buys after the cancel are refused by your listen service."
    )]
    async fn market_cancel(
        &self,
        Parameters(a): Parameters<ListingIdArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.market(move |s| {
            Ok(MarketCmd::Cancel(crate::args::CancelArgs {
                listing_id: a.listing_id,
                seller: s.seller.clone(),
            }))
        })
        .await
    }
}

/// A signed export of the memories `(category, scope, ids)` select to
/// `output` (secrets refused, nothing pinned or minted).
fn signed_export(
    s: &McpArgs,
    (category, scope, ids): (Option<String>, Option<String>, Option<Vec<i64>>),
    output: PathBuf,
) -> ExportArgs {
    ExportArgs {
        sign: true,
        filter_agent: None,
        category,
        scope,
        created_after: None,
        created_before: None,
        ids,
        output: Some(output),
        // the tools' own files (one per name, one per sale), replaced each time
        force: true,
        allow_sensitive: false,
        pin_onchain: false,
        mint: false,
        recipient: None,
        token_standard: crate::args::TokenFlag::Light,
        keys_dir: s.seller.keys_dir.clone(),
        storage: s.storage.clone(),
    }
}

/// Where `bundle_export` writes `name`: the wallet's directory's
/// `exports/`, a plain file name only (no path an agent could steer).
fn export_path(wallet_path: &std::path::Path, name: &str) -> Result<PathBuf, Failure> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok {
        return Err(Failure::bad_input(anyhow!(
            "name must be 1-64 letters, digits, - or _ (the file is exports/<name>.signed.json beside the wallet)"
        )));
    }
    Ok(wallet_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .join("exports")
        .join(format!("{name}.signed.json")))
}

fn terms(a: OfferArgs) -> Terms {
    Terms {
        price_usd: a.price_usd,
        sol_usd: a.sol_usd,
        token_usd: a.token_usd,
        message: a.message,
        ttl_hours: a.ttl_hours.unwrap_or(24.0),
    }
}

/// Where one `market_list` call writes the bundle it exports (beside the
/// wallet, removed once listed: the listing keeps its own encrypted copy).
/// Each call has its own file: an agent's parallel calls never share one.
fn sale_bundle_path(wallet_path: &std::path::Path) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    wallet_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .join(format!(
            "mcp-sale-{}-{call}.signed.json",
            std::process::id()
        ))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for BrainctlServer {
    /// A tool this server does not expose is no method here (JSON-RPC
    /// -32601, as the reference answers), not a bad argument.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        if !self.tool_router.has_route(&request.name) {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("tool {} is not exposed by this server", request.name),
                None,
            ));
        }
        let paid = self
            .paid
            .as_ref()
            .filter(|p| p.price(&request.name).is_some());
        let Some(paid) = paid else {
            let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
            return self.tool_router.call(call).await;
        };
        let tool = request.name.to_string();
        let payment = context
            .meta
            .get(PAYMENT_META)
            .or_else(|| request.meta.as_ref().and_then(|m| m.get(PAYMENT_META)))
            .cloned();
        let Some(payment) = payment else {
            return Ok(payment_required(paid, &tool, None).into());
        };
        // checked and claimed, nothing sent: the call runs first, and only
        // one that answers without error is paid for (as the reference's
        // payment wrapper settles); one whose arguments do not read, or
        // that answers an error, moves nothing: the same payment may pay
        // for another call
        let verified = match paid.verify(&tool, &payment).await {
            Ok(verified) => verified,
            Err(refusal) => return Ok(payment_required(paid, &tool, Some(refusal)).into()),
        };
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let answered = self.tool_router.call(call).await;
        let failed = match &answered {
            Err(_) => true,
            Ok(rmcp::model::CallToolResponse::Complete(r)) => r.is_error == Some(true),
            Ok(_) => false,
        };
        if failed {
            if let Err(e) = verified.abandon().await {
                tracing::warn!(%tool, error = %e.message, "paid call: releasing an unused payment");
            }
            return answered;
        }
        let settled = match verified.settle().await {
            Ok(settled) => settled,
            // the call answered but its payment did not settle: the answer
            // is withheld
            Err(refusal) => return Ok(payment_required(paid, &tool, Some(refusal)).into()),
        };
        let response = serde_json::to_value(&settled.response).expect("serializes");
        let mut answered = answered?;
        if let Err(e) = settled.served().await {
            tracing::error!(%tool, error = %e.message, "paid call answered but not recorded as served");
        }
        if let rmcp::model::CallToolResponse::Complete(result) = &mut answered {
            result
                .meta
                .get_or_insert_with(Default::default)
                .insert(PAYMENT_RESPONSE_META.into(), response);
        }
        Ok(answered)
    }

    /// The exposed tools; a priced one says so in its description (its
    /// price, the token and how to pay), so an agent knows before calling.
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, McpError> {
        let cache_hints = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let mut tools = self.tool_router.list_all();
        if let Some(paid) = &self.paid {
            for tool in &mut tools {
                if let Some(units) = paid.price(&tool.name) {
                    let said = tool.description.as_deref().unwrap_or_default();
                    tool.description = Some(
                        format!(
                            "{said} PAID: {units} base units of {} a call, with x402 (call it without payment to get the requirements; pay in _meta[\"x402/payment\"]).",
                            paid.mint()
                        )
                        .into(),
                    );
                }
            }
        }
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(rmcp::model::CacheScope::Public),
        })
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("brainctl", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// A priced tool's answer without a payment that pays for it (x402's MCP
/// binding): an error result whose structured content is the payment
/// requirements, `error` saying why (and, for a payment sent that did not
/// settle, its settlement under `x402/payment-response`).
fn payment_required(paid: &PaidCalls, tool: &str, refusal: Option<CallRefusal>) -> CallToolResult {
    let error = refusal
        .as_ref()
        .map_or("Payment required", |r| r.reason.as_str());
    let required = paid
        .payment_required(tool, error)
        .expect("only priced tools ask for payment");
    let mut body = serde_json::to_value(&required).expect("serializes");
    if let Some(r) = refusal {
        body["message"] = json!(r.message);
        if let Some(s) = r.settlement {
            body[PAYMENT_RESPONSE_META] = serde_json::to_value(s).expect("serializes");
        }
    }
    CallToolResult::structured_error(body)
}

/// The spend limits the server's flags add to the policy file; `None`
/// when there are none.
fn flag_limits(a: &McpArgs) -> Option<node::spend::SpendPolicy> {
    let p = node::spend::SpendPolicy {
        max_per_buy_lamports: a.max_per_buy_lamports,
        budget_24h_lamports: a.budget_24h_lamports,
        sellers: (!a.allow_sellers.is_empty()).then(|| a.allow_sellers.clone()),
        tokens: Default::default(),
        priority_fee_max_lamports: None,
    };
    (p != node::spend::SpendPolicy::default()).then_some(p)
}

/// Serves until the client closes stdin or SIGINT/SIGTERM.
pub fn run(args: McpArgs, ctx: &Context) -> CliResult<u8> {
    let limits = flag_limits(&args);
    let probe = Context {
        spend_limits: limits.clone(),
        captured: None,
        home: ctx.home.clone(),
        db_path: ctx.db_path.clone(),
        wallet_path: ctx.wallet_path.clone(),
        own_wallet_path: ctx.own_wallet_path.clone(),
        json: ctx.json,
        agent: ctx.agent.clone(),
        url: ctx.url.clone(),
        commitment: ctx.commitment,
        priority: ctx.priority,
        kept_store: None,
    };
    // the policy is checked once here (a bad file is a start-up error)
    let policy = probe.spend_policy()?;
    let unlimited = policy
        .as_ref()
        .is_none_or(|p| p.max_per_buy_lamports.is_none() && p.budget_24h_lamports.is_none());
    if unlimited && !args.unlimited_spending {
        return Err(Failure::bad_input(anyhow!(
            "no spend limit: write {} (chmod 600), e.g. {{\"max_per_buy_lamports\": 50000000, \"budget_24h_lamports\": 200000000}}, or pass --budget-24h-lamports N; --unlimited-spending starts without one",
            node::spend::policy_path(&ctx.wallet_path).display()
        )));
    }
    ctx.wallet()?; // a missing or unsafe wallet is a start-up error, not a tool error
    let settings = Settings {
        home: ctx.home.clone(),
        db_path: ctx.db_path.clone(),
        wallet_path: ctx.wallet_path.clone(),
        agent: ctx.agent.clone(),
        url: ctx.url.clone(),
        commitment: ctx.commitment,
        priority: ctx.priority,
        limits: limits.unwrap_or_default(),
        args,
        store: Default::default(),
    };
    let env = |k: &str| std::env::var(k).ok();
    let groups = env("BRAINCTL_TOOL_GROUPS");
    let names = BrainctlServer::tool_names();
    let http = settings.args.http.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let settings = Arc::new(settings);
    let prices = match (&settings.args.tool_prices, &http) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(Failure::bad_input(anyhow!(
                "--tool-prices charges callers over HTTP; add --http (over stdio the agent is the operator)"
            )))
        }
        (Some(path), Some(_)) => Some(
            node::x402::prices::PriceList::load(path).map_err(Failure::bad_input)?,
        ),
    };
    if let Some(addr) = http {
        let tools_var = "BRAINCTL_HTTP_ALLOWED_TOOLS";
        let allowed = super::mcp_allow::allowed(tools_var, env(tools_var).as_deref(), groups.as_deref(), &names)
            .map_err(Failure::bad_input)?
            .ok_or_else(|| {
                Failure::bad_input(anyhow!(
                    "over HTTP an allowlist is required: set BRAINCTL_HTTP_ALLOWED_TOOLS (comma-separated tool names) or BRAINCTL_TOOL_GROUPS (memory, market_read, market_trade)"
                ))
            })?;
        let config =
            super::mcp_http::HttpConfig::from_env(&addr, env).map_err(Failure::bad_input)?;
        let paid = match prices {
            None => None,
            Some(list) => Some(Arc::new(rt.block_on(paid_calls(ctx, list, &allowed))?)),
        };
        tracing::info!(policy = ?policy, tools = allowed.len(), priced = paid.is_some(), "brainctl mcp serving over HTTP");
        // the public endpoint's servers expose the priced tools alone
        let public = match (&paid, settings.args.public_paid) {
            (Some(paid), true) => {
                let (settings, paid) = (settings.clone(), paid.clone());
                let priced: std::collections::BTreeSet<String> = paid.priced_tools().collect();
                Some(move || {
                    BrainctlServer::new(settings.clone(), Some(&priced), Some(paid.clone()))
                })
            }
            _ => None,
        };
        let make = move || BrainctlServer::new(settings.clone(), Some(&allowed), paid.clone());
        let signals = super::marketplace::stop_signals()?;
        rt.block_on(super::mcp_http::serve(
            make,
            public,
            config,
            signals.signalled(),
        ))?;
        return Ok(0);
    }
    let tools_var = "BRAINCTL_ALLOWED_TOOLS";
    let allowed = super::mcp_allow::allowed(
        tools_var,
        env(tools_var).as_deref(),
        groups.as_deref(),
        &names,
    )
    .map_err(Failure::bad_input)?;
    tracing::info!(policy = ?policy, "brainctl mcp serving on stdio");
    let signals = super::marketplace::stop_signals()?;
    rt.block_on(async move {
        let service = BrainctlServer::new(settings, allowed.as_ref(), None)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow!("MCP handshake: {e}"))?;
        let cancel = service.cancellation_token();
        tokio::select! {
            r = service.waiting() => { r.map_err(|e| anyhow!("MCP server: {e}"))?; }
            () = signals.signalled() => { cancel.cancel(); }
        }
        Ok::<_, Failure>(())
    })?;
    Ok(0)
}

/// The priced tools of `list` (each must be exposed), paid for with the
/// node's wallet as fee payer, recorded beside it.
async fn paid_calls(
    ctx: &Context,
    list: node::x402::prices::PriceList,
    exposed: &std::collections::BTreeSet<String>,
) -> Result<PaidCalls, Failure> {
    let hidden: Vec<&str> = list.unexposed(exposed).collect();
    if !hidden.is_empty() {
        return Err(Failure::bad_input(anyhow!(
            "--tool-prices prices {} but the allowlist does not expose {}; add them to BRAINCTL_HTTP_ALLOWED_TOOLS or remove them from the price list",
            hidden.join(", "),
            if hidden.len() == 1 { "it" } else { "them" }
        )));
    }
    let ledger = ctx
        .wallet_path
        .with_file_name(node::x402::call_ledger::LEDGER_FILE);
    let paid = PaidCalls::start(ctx.chain()?, Arc::new(ctx.wallet()?), list, ledger)
        .await
        .map_err(|e| Failure::bad_input(anyhow!("--tool-prices: {e}")))?;
    tracing::info!(network = paid.network(), ledger = %paid.ledger_path().display(), "paid tool calls on");
    Ok(paid)
}

#[cfg(test)]
mod tests {
    /// Every tool sits in exactly one capability group, so a group-based
    /// allowlist can expose any tool and no tool is reachable by accident.
    #[test]
    fn the_groups_cover_every_tool() {
        let grouped: std::collections::BTreeSet<String> = super::super::mcp_allow::GROUPS
            .iter()
            .flat_map(|(_, tools)| tools.iter().map(|t| t.to_string()))
            .collect();
        assert_eq!(grouped, super::BrainctlServer::tool_names());
    }
}
