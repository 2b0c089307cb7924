//! The HTTP API (PROTOCOL.md §9, plus `/health`, `/metrics` and
//! `/sellers/{pubkey}`), shaped so the reference Python client works
//! against it unchanged. Reads serve a snapshot of the folded state;
//! POSTs are hints: the referenced transaction is fetched from the chain,
//! checked (memo present, signed by the session's wallet, succeeded) and
//! folded like any other before anything is shown. CORS is off (no
//! cross-origin headers); bodies are capped at 64 KiB, pages at 100.
//!
//! Owns routing, input validation and status codes; the rules live in
//! `fold`, `views` and `auth`.
//!
//! # Layout (one file per resource)
//! - `listings`, `offers`, `settlements` (+ sellers, escrows), `settle`
//!   (the unsigned buy transaction), `session` (sign-in), `status`
//!   (health, state hash, metrics)
//! - `request`: what every handler checks (cluster, ids, session, hints)
//! - `error`, `limits` (rate limits), `client_ip` (whose limit a request
//!   counts against), `metrics` (counters)

pub mod client_ip;
pub mod error;
pub mod limits;
mod listings;
pub mod metrics;
mod offers;
mod request;
mod session;
mod settle;
mod settlements;
mod status;

use crate::engine::Indexer;
use crate::ingest::{HintSource, RpcSource};
use axum::routing::{get, post};
use axum::Router;
pub use client_ip::ClientIp;
pub use error::ApiError;
pub use limits::{Limiter, Rate, RateLimits};
pub(crate) use listings::parse_filter;
pub use metrics::Metrics;
use node::chain::Pubkey;
use node::market::MemoOp;
use offers::offer_action_route;
use std::sync::Arc;

/// Largest request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Largest page.
pub const MAX_PAGE: usize = 100;

/// Seconds since the epoch (injectable for tests of expiry).
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| time::OffsetDateTime::now_utc().unix_timestamp())
}

/// Everything a handler may use.
#[derive(Clone)]
pub struct AppState {
    /// Log + state.
    pub ix: Arc<Indexer>,
    /// Chain access for `/settle` (`None`: read-only replica).
    pub source: Option<Arc<RpcSource>>,
    /// Where hinted transactions are fetched (`None`: hints are off).
    pub hints: Option<Arc<dyn HintSource>>,
    /// The cluster served (`localnet`, `devnet`, `mainnet-beta`).
    pub cluster: String,
    /// Name shown in sign-in messages (unique per deployment:
    /// [`crate::auth::deployment_domain`]).
    pub domain: String,
    /// Wall clock for auth expiry.
    pub clock: Clock,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Discovery registry referenced by built transactions.
    pub registry: Pubkey,
    /// Rate limits on sign-in and writes.
    pub limiter: Arc<Limiter>,
}

impl AppState {
    /// A read-only replica of `ix` serving `cluster`, with the system
    /// clock, fresh metrics, the default registry, default limits and the
    /// store's own sign-in domain; set the public fields for more, or
    /// [`AppState::with_chain`].
    pub fn new(ix: Arc<Indexer>, cluster: &str) -> AppState {
        let domain = crate::auth::deployment_domain(&mut **ix.store(), None).unwrap_or_else(|e| {
            // still unique to this process; sessions do not depend on it
            tracing::warn!(error = %e, "sign-in domain not stored; using a per-process one");
            crate::auth::generated_domain()
        });
        AppState {
            ix,
            source: None,
            hints: None,
            cluster: cluster.to_string(),
            domain,
            clock: system_clock(),
            metrics: Arc::new(Metrics::default()),
            registry: node::chain::instructions::default_registry(),
            limiter: Limiter::new(RateLimits::default()),
        }
    }

    /// This state with chain access: hints and `/settle` on.
    pub fn with_chain(self, source: Arc<RpcSource>) -> AppState {
        AppState {
            hints: Some(source.clone()),
            source: Some(source),
            ..self
        }
    }
}

type Res<T> = Result<T, ApiError>;

/// The API's routes, without the layers every page shares (composed
/// with the explorer's in [`crate::http::router`]).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/health", get(status::health))
        .route("/metrics", get(status::metrics_text))
        .route("/state", get(status::state_hash))
        .route("/auth/challenge", post(session::challenge))
        .route("/auth/verify", post(session::verify))
        .route(
            "/listings",
            get(listings::browse).post(listings::post_listing),
        )
        .route("/listings/{id}", get(listings::show_listing))
        .route("/listings/{id}/cancel", post(listings::post_cancel))
        .route(
            "/listings/{id}/offers",
            get(listings::listing_offers).post(offers::post_offer),
        )
        .route("/listings/{id}/settle", post(settle::settle))
        .route("/offers/{id}", get(offers::show_offer))
        .route(
            "/offers/{id}/accept",
            offer_action_route(
                |op, id| matches!(op, MemoOp::Accept { offer_id } if offer_id == id),
            ),
        )
        .route(
            "/offers/{id}/reject",
            offer_action_route(
                |op, id| matches!(op, MemoOp::Reject { offer_id } if offer_id == id),
            ),
        )
        .route(
            "/offers/{id}/withdraw",
            offer_action_route(
                |op, id| matches!(op, MemoOp::Withdraw { offer_id } if offer_id == id),
            ),
        )
        .route("/offers/{id}/counter", post(offers::post_counter))
        .route("/settlements/{id}", get(settlements::settlement))
        .route("/sellers/{pubkey}", get(settlements::seller))
        .route("/escrows/{pubkey}", get(settlements::show_escrow))
}
