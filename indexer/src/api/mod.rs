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

pub mod error;
pub mod limits;
pub mod metrics;
mod settle;

use crate::auth;
use crate::engine::Indexer;
use crate::fold::{ListingState, State};
use crate::ingest::{HintSource, RpcSource};
use crate::views::{self, ListingFilter};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State as AxState};
use axum::http::{header, HeaderMap};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::{Json, Router};
pub use error::ApiError;
pub use limits::{Limiter, Rate, RateLimits};
pub use metrics::Metrics;
use node::chain::Pubkey;
use node::market::{is_listing_id, is_offer_id, is_pubkey, MemoOp};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::str::FromStr;
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
    /// Name shown in sign-in messages.
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
    /// clock, fresh metrics, the default registry and default limits;
    /// set the public fields for more, or [`AppState::with_chain`].
    pub fn new(ix: Arc<Indexer>, cluster: &str) -> AppState {
        AppState {
            ix,
            source: None,
            hints: None,
            cluster: cluster.to_string(),
            domain: "brainctl-indexer".into(),
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

/// The router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics_text))
        .route("/state", get(state_hash))
        .route("/auth/challenge", post(challenge))
        .route("/auth/verify", post(verify))
        .route("/listings", get(browse).post(post_listing))
        .route("/listings/{id}", get(show_listing))
        .route("/listings/{id}/cancel", post(post_cancel))
        .route(
            "/listings/{id}/offers",
            get(listing_offers).post(post_offer),
        )
        .route("/listings/{id}/settle", post(settle::settle))
        .route("/offers/{id}", get(show_offer))
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
        .route("/offers/{id}/counter", post(post_counter))
        .route("/settlements/{id}", get(settlement))
        .route("/sellers/{pubkey}", get(seller))
        .route("/escrows/{pubkey}", get(show_escrow))
        .merge(crate::explorer::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            state.limiter.clone(),
            limits::limit,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

async fn count(AxState(st): AxState<AppState>, req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    Metrics::add(&st.metrics.http_requests, 1);
    if res.status().as_u16() >= 400 {
        Metrics::add(&st.metrics.http_errors, 1);
    }
    res
}

fn check_cluster(st: &AppState, q: &HashMap<String, String>) -> Res<()> {
    match q.get("cluster").map(String::as_str) {
        None => Ok(()),
        Some(c) if c == st.cluster || (c == "localhost" && st.cluster == "localnet") => Ok(()),
        Some(c) => Err(ApiError::bad(format!(
            "`cluster` is {c:?}; this indexer serves {:?}",
            st.cluster
        ))),
    }
}

fn listing_id(id: &str) -> Res<()> {
    is_listing_id(id)
        .then_some(())
        .ok_or_else(|| ApiError::bad("listing id must be YYYYMMDD-<12 hex>"))
}

/// The listing `id` in `s`, or 404.
fn known_listing<'a>(s: &'a State, id: &str) -> Res<&'a ListingState> {
    s.listings
        .get(id)
        .ok_or_else(|| ApiError::not_found(format!("no listing {id} on chain")))
}

fn offer_id(id: &str) -> Res<()> {
    is_offer_id(id)
        .then_some(())
        .ok_or_else(|| ApiError::bad("offer id must be offer-YYYYMMDD-<12 hex>"))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// Runs store or fold work on the blocking pool, never on the async
/// workers (a slow disk or a refold must not stall other requests).
async fn blocking<T: Send + 'static>(
    st: &AppState,
    f: impl FnOnce(&Indexer) -> Res<T> + Send + 'static,
) -> Res<T> {
    let ix = st.ix.clone();
    tokio::task::spawn_blocking(move || f(&ix))
        .await
        .map_err(|e| {
            ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("request task failed: {e}"),
            )
        })?
}

/// The signed-in wallet, if a valid session token was sent.
async fn viewer(st: &AppState, headers: &HeaderMap) -> Res<Option<String>> {
    let Some(token) = bearer(headers).map(str::to_string) else {
        return Ok(None);
    };
    let now = (st.clock)();
    blocking(st, move |ix| {
        Ok(Some(auth::session(&**ix.store(), &token, now)?))
    })
    .await
}

/// The signed-in wallet; 401 without one.
async fn signed_in(st: &AppState, headers: &HeaderMap) -> Res<String> {
    viewer(st, headers).await?.ok_or_else(|| {
        ApiError::unauthorized("sign in first: POST /auth/challenge, then /auth/verify")
    })
}

async fn health(AxState(st): AxState<AppState>) -> Json<Value> {
    let s = st.ix.state();
    Json(json!({
        "ok": true,
        "cluster": st.cluster,
        "last_slot": s.last.map(|p| p.0),
        "block_time": s.now,
        "transactions": s.transactions,
        "listings": s.listings.len(),
        "offers": s.offers.len(),
        "settlements": s.settlements.len(),
    }))
}

/// The canonical state hash (computed once per fold, then cached).
async fn state_hash(AxState(st): AxState<AppState>) -> Res<Json<Value>> {
    blocking(&st, |ix| {
        let (s, hash) = ix.state_hash();
        Ok(Json(
            json!({"state_hash": hash, "transactions": s.transactions}),
        ))
    })
    .await
}

async fn metrics_text(AxState(st): AxState<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        st.metrics.render(&st.ix.state(), st.ix.config()),
    )
}

#[derive(Deserialize)]
struct ChallengeBody {
    pubkey: String,
}

async fn challenge(
    AxState(st): AxState<AppState>,
    Json(b): Json<ChallengeBody>,
) -> Res<Json<auth::Challenge>> {
    let (domain, now) = (st.domain.clone(), (st.clock)());
    blocking(&st, move |ix| {
        Ok(Json(auth::challenge(
            &mut **ix.store(),
            &b.pubkey,
            &domain,
            now,
        )?))
    })
    .await
}

#[derive(Deserialize)]
struct VerifyBody {
    pubkey: String,
    nonce: String,
    signature_b58: String,
}

async fn verify(
    AxState(st): AxState<AppState>,
    Json(b): Json<VerifyBody>,
) -> Res<Json<auth::Issued>> {
    let now = (st.clock)();
    blocking(&st, move |ix| {
        let issued = auth::verify(
            &mut **ix.store(),
            &b.pubkey,
            &b.nonce,
            &b.signature_b58,
            now,
        )?;
        Ok(Json(issued))
    })
    .await
}

/// The browse filters of a query (shared with the explorer).
pub(crate) fn parse_filter(q: &HashMap<String, String>) -> Res<ListingFilter> {
    let limit = match q.get("limit") {
        None => 20,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| ApiError::bad(format!("`limit` must be 1..={MAX_PAGE}")))?,
    };
    let max_price_usd = q
        .get("max_price_usd")
        .map(|p| {
            p.parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| ApiError::bad("`max_price_usd` must be a non-negative number"))
        })
        .transpose()?;
    let short = |k: &str, max: usize| -> Res<Option<String>> {
        match q.get(k) {
            Some(v) if v.len() > max => Err(ApiError::bad(format!("`{k}` is over {max} bytes"))),
            v => Ok(v.cloned()),
        }
    };
    let f = ListingFilter {
        max_price_usd,
        category: short("category", 64)?,
        visibility: short("visibility", 16)?,
        seller: short("seller_pubkey", 44)?,
        status: short("status", 16)?,
        after: short("cursor", 21)?,
        limit,
    };
    if let Some(v) = &f.visibility {
        if v != "auction" && v != "private" {
            return Err(ApiError::bad("`visibility` must be auction or private"));
        }
    }
    if let Some(s) = &f.status {
        if !["live", "cancelled", "expired", "all"].contains(&s.as_str()) {
            return Err(ApiError::bad(
                "`status` must be live, cancelled, expired or all",
            ));
        }
    }
    if f.seller.as_deref().is_some_and(|s| !is_pubkey(s)) {
        return Err(ApiError::bad("`seller_pubkey` is not a base58 32-byte key"));
    }
    Ok(f)
}

async fn browse(
    AxState(st): AxState<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    check_cluster(&st, &q)?;
    let f = parse_filter(&q)?;
    let s = st.ix.state();
    Ok(Json(views::listings(&s, &f)).into_response())
}

async fn show_listing(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    check_cluster(&st, &q)?;
    listing_id(&id)?;
    let who = viewer(&st, &headers).await?;
    let s = st.ix.state();
    let l = known_listing(&s, &id)?;
    Ok(Json(json!({
        "listing": views::listing(&s, l),
        "offers": views::offers_of(&s, &id, who.as_deref()),
    })))
}

async fn listing_offers(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    check_cluster(&st, &q)?;
    listing_id(&id)?;
    let who = viewer(&st, &headers).await?;
    let s = st.ix.state();
    known_listing(&s, &id)?;
    Ok(Json(
        json!({"offers": views::offers_of(&s, &id, who.as_deref())}),
    ))
}

async fn show_offer(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    check_cluster(&st, &q)?;
    offer_id(&id)?;
    let who = viewer(&st, &headers).await?;
    let s = st.ix.state();
    // a hidden offer is indistinguishable from a missing one
    match s.offers.get(&id) {
        Some(o) if views::may_see_offer(&s, o, who.as_deref()) => {
            Ok(Json(json!({"offer": views::offer(o, s.now)})))
        }
        _ => Err(ApiError::not_found(format!("no offer {id} visible to you"))),
    }
}

/// A buyer's settlement on a listing. A private listing's settlements
/// (price, offer, negotiated terms) only to its seller and that buyer,
/// signed in.
async fn settlement(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    check_cluster(&st, &q)?;
    listing_id(&id)?;
    let buyer = q
        .get("buyer")
        .filter(|b| is_pubkey(b))
        .ok_or_else(|| ApiError::bad("`buyer` must be the buyer's base58 pubkey"))?;
    let s = st.ix.state();
    let l = known_listing(&s, &id)?;
    if l.visibility == "private" {
        let who = signed_in(&st, &headers).await?;
        if who != *buyer && who != l.seller {
            return Err(ApiError::forbidden(
                "a private listing's settlements are shown only to its seller and that buyer",
            ));
        }
    }
    Ok(Json(views::settlement_for(&s, &id, buyer, st.ix.config())))
}

async fn seller(
    AxState(st): AxState<AppState>,
    Path(pk): Path<String>,
) -> Res<Json<views::Reputation>> {
    if !is_pubkey(&pk) {
        return Err(ApiError::bad("seller must be a base58 32-byte key"));
    }
    Ok(Json(views::reputation(&st.ix.state(), &pk, st.ix.config())))
}

/// An escrow-program deposit (from the program's events).
async fn show_escrow(AxState(st): AxState<AppState>, Path(pk): Path<String>) -> Res<Json<Value>> {
    if !is_pubkey(&pk) {
        return Err(ApiError::bad("escrow must be a base58 32-byte key"));
    }
    let s = st.ix.state();
    let e = s
        .escrows
        .get(&pk)
        .ok_or_else(|| ApiError::not_found(format!("no escrow {pk} on chain")))?;
    Ok(Json(json!({ "escrow_pubkey": pk, "escrow": e })))
}

/// A hinted transaction: fetch, check, fold; then the fold's verdict.
async fn hint(
    st: &AppState,
    who: &str,
    tx_signature: &str,
    wanted: impl Fn(&MemoOp) -> bool,
    manifest: Option<(&str, &Value)>,
) -> Res<()> {
    let source = st
        .hints
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("this indexer runs without RPC; hints are off"))?;
    let sig = node::chain::Signature::from_str(tx_signature)
        .map_err(|_| ApiError::bad("transaction signature is not base58 64 bytes"))?;
    let s = st.ix.state();
    if !s.has_folded(tx_signature) {
        let Some(rec) = source.record(&st.ix, sig).await? else {
            return Err(ApiError::not_found(
                "no marketplace transaction with that signature at `confirmed` yet; retry shortly",
            ));
        };
        let ops: Vec<MemoOp> = rec
            .tx
            .memos
            .iter()
            .filter_map(|m| MemoOp::parse(m).ok())
            .collect();
        if !ops.iter().any(&wanted) {
            return Err(ApiError::bad(
                "the transaction carries no memo for this action",
            ));
        }
        if !rec.tx.signed_by(who) {
            return Err(ApiError::forbidden(
                "the transaction is not signed by your wallet",
            ));
        }
        // the body a hint carries is never used: only what the gateway
        // serves as that ANS-104 item (id = hash of its signature) enters
        if let Some((id, _)) = manifest {
            if !rec.manifests.contains_key(id) {
                return Err(ApiError::conflict(format!(
                    "the gateway does not serve manifest {id} yet; the indexer reads it from there (retry once it does)"
                )));
            }
        }
        let final_slot = source.final_slot().await?;
        // queued behind other hints: a flood of old transactions costs
        // one refold per turn, on the blocking pool
        blocking(st, move |ix| {
            ix.ingest_hinted(rec, final_slot)?
                .map(|_| ())
                .ok_or_else(|| {
                    ApiError::unavailable("too many hinted transactions are waiting; retry shortly")
                })
        })
        .await?;
    }
    let s = st.ix.state();
    if let Some(rej) = s.rejected.get(tx_signature) {
        let reasons: Vec<&str> = rej.iter().map(|r| r.reason.as_str()).collect();
        return Err(ApiError::conflict(format!(
            "the chain does not accept it: {}",
            reasons.join("; ")
        )));
    }
    Ok(())
}

#[derive(Deserialize)]
struct PostListing {
    manifest: Value,
    listing_arweave_id: String,
    list_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

/// The signed-in wallet of a write (hint) request whose body names, if
/// anything, this indexer's cluster; 401 / 400 otherwise.
async fn signed_in_on(st: &AppState, headers: &HeaderMap, cluster: &Option<String>) -> Res<String> {
    let who = signed_in(st, headers).await?;
    let mut q = HashMap::new();
    if let Some(c) = cluster {
        q.insert("cluster".to_string(), c.clone());
    }
    check_cluster(st, &q)?;
    Ok(who)
}

async fn post_listing(
    AxState(st): AxState<AppState>,
    headers: HeaderMap,
    Json(b): Json<PostListing>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    let id = b
        .manifest
        .get("listing_id")
        .and_then(Value::as_str)
        .filter(|i| is_listing_id(i))
        .ok_or_else(|| ApiError::bad("manifest.listing_id is missing or malformed"))?
        .to_string();
    let aid = b.listing_arweave_id.clone();
    hint(
        &st,
        &who,
        &b.list_tx_signature,
        |op| matches!(op, MemoOp::List { listing_arweave_id, .. } if *listing_arweave_id == aid),
        Some((&b.listing_arweave_id, &b.manifest)),
    )
    .await?;
    let s = st.ix.state();
    let l = s
        .listings
        .get(&id)
        .ok_or_else(|| ApiError::conflict("the list memo did not create this listing"))?;
    Ok(Json(json!({"ok": true, "listing": views::listing(&s, l)})))
}

#[derive(Deserialize)]
struct CancelBody {
    cancel_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

async fn post_cancel(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<CancelBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    listing_id(&id)?;
    hint(
        &st,
        &who,
        &b.cancel_tx_signature,
        |op| matches!(op, MemoOp::Cancel { listing_id } if *listing_id == id),
        None,
    )
    .await?;
    let s = st.ix.state();
    let l = known_listing(&s, &id)?;
    Ok(Json(json!({"ok": true, "listing": views::listing(&s, l)})))
}

#[derive(Deserialize)]
struct OfferBody {
    manifest: Value,
    offer_arweave_id: String,
    offer_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

async fn post_offer(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<OfferBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    listing_id(&id)?;
    let oid = b
        .manifest
        .get("offer_id")
        .and_then(Value::as_str)
        .filter(|i| is_offer_id(i))
        .ok_or_else(|| ApiError::bad("manifest.offer_id is missing or malformed"))?
        .to_string();
    let aid = b.offer_arweave_id.clone();
    hint(
        &st,
        &who,
        &b.offer_tx_signature,
        |op| matches!(op, MemoOp::Offer { listing_id, offer_arweave_id, .. } if *listing_id == id && *offer_arweave_id == aid),
        Some((&b.offer_arweave_id, &b.manifest)),
    )
    .await?;
    offer_reply(&st, &oid, &who)
}

fn offer_reply(st: &AppState, id: &str, who: &str) -> Res<Json<Value>> {
    let s = st.ix.state();
    let o = s
        .offers
        .get(id)
        .filter(|o| views::may_see_offer(&s, o, Some(who)))
        .ok_or_else(|| ApiError::conflict(format!("offer {id} is not on chain")))?;
    Ok(Json(json!({"ok": true, "offer": views::offer(o, s.now)})))
}

#[derive(Deserialize)]
struct ActionBody {
    tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

async fn offer_action(
    st: AppState,
    id: String,
    headers: HeaderMap,
    b: ActionBody,
    wanted: fn(&MemoOp, &str) -> bool,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    offer_id(&id)?;
    hint(&st, &who, &b.tx_signature, |op| wanted(op, &id), None).await?;
    offer_reply(&st, &id, &who)
}

/// `POST /offers/{id}/<action>`: a hint for the memo `wanted` accepts.
fn offer_action_route(wanted: fn(&MemoOp, &str) -> bool) -> MethodRouter<AppState> {
    post(
        move |AxState(st): AxState<AppState>,
              Path(id): Path<String>,
              headers: HeaderMap,
              Json(b): Json<ActionBody>| async move {
            offer_action(st, id, headers, b, wanted).await
        },
    )
}

#[derive(Deserialize)]
struct CounterBody {
    manifest: Value,
    counter_arweave_id: String,
    counter_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

async fn post_counter(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<CounterBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    offer_id(&id)?;
    let aid = b.counter_arweave_id.clone();
    hint(
        &st,
        &who,
        &b.counter_tx_signature,
        |op| matches!(op, MemoOp::Counter { offer_id, counter_arweave_id, .. } if *offer_id == id && *counter_arweave_id == aid),
        Some((&b.counter_arweave_id, &b.manifest)),
    )
    .await?;
    offer_reply(&st, &id, &who)
}

/// Serves `router(state)` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
