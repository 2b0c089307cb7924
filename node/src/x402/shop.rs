//! The seller's shop page, served by the x402 endpoint: a person with a
//! browser wallet buys a listing's key from `/`.
//!
//! - `GET /`: the page ([`INDEX_HTML`]), which loads `GET /shop/app.js`
//!   (the page's script, bundled for the browser from npm at pinned
//!   versions by the localnet's install; its path is the seller's
//!   [`ShopConfig::script`]).
//! - `GET /x402/listings`: what the endpoint sells now (each live listing
//!   x402 can pay: its price, mint, preview from its manifest, the list
//!   transaction that anchors its bundle hash on chain), the network and
//!   the public RPC the page reads the chain through.
//! - `GET /x402/blobs/{blob_id}`: a listed blob's encrypted bytes (only
//!   the blobs of listings sold here: never an open proxy to storage).
//!
//! The page pays at `/x402/listings/{id}?buyer_x25519_pubkey=K` with
//! `@x402/fetch`, K a key it made for the purchase (a browser wallet
//! never hands out its secret key), opens the sealed key itself, decrypts
//! the blob and checks its hash against the seller's list memo on chain
//! before offering the bundle as a file: it trusts neither this server
//! nor the storage for the bytes.
//!
//! Owns the page's routes. Never sells anything itself (the payment
//! route does), never serves a file outside the seller's listings, and
//! never tells a page the seller's own RPC URL (it may carry an API key).

pub use super::serve::ShopConfig;
use super::serve::{admit_request, listings, sellable, X402State};
use crate::chain::Signer;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The page (its script comes from `/shop/app.js`).
pub const INDEX_HTML: &str = include_str!("shop/index.html");

/// How long the catalog may spend reading previews and mints.
const CATALOG_BUDGET: Duration = Duration::from_secs(2);

/// The page's routes.
pub fn routes() -> axum::Router<Arc<X402State>> {
    axum::Router::new()
        .route("/", axum::routing::get(index))
        .route("/shop/app.js", axum::routing::get(script))
        .route("/x402/listings", axum::routing::get(catalog))
        .route("/x402/blobs/{blob_id}", axum::routing::get(blob))
}

/// Headers every page answer carries: a policy that runs the page's own
/// script only, lets it reach the chain's RPC and nothing framed.
fn page_headers(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; script-src 'self'; connect-src *; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
}

async fn index() -> Response {
    let mut r = (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
        .into_response();
    page_headers(&mut r);
    r
}

async fn script(State(st): State<Arc<X402State>>) -> Response {
    let missing = || {
        (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/javascript")],
            "document.body.dataset.state='unbuilt';document.getElementById('status').textContent='The shop page is not built on this node: run ./localnet/install (its step building the shop page), or pass --x402-shop-script.';",
        )
            .into_response()
    };
    let Some(path) = st.config.shop.script.clone() else {
        return missing();
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => {
            let mut r = (
                [(
                    header::CONTENT_TYPE,
                    "application/javascript; charset=utf-8",
                )],
                bytes,
            )
                .into_response();
            page_headers(&mut r);
            r
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "the shop page's script is not readable");
            missing()
        }
    }
}

/// `GET /x402/listings`: the live listings x402 sells here.
async fn catalog(
    State(st): State<Arc<X402State>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
) -> Response {
    let _permit = match admit_request(&st, peer) {
        Ok(p) => p,
        Err(p) => return p.into_response(),
    };
    let base = super::serve::base_url(&st, &headers);
    let all = match listings(&st).await {
        Ok(all) => all,
        Err(p) => return p.into_response(),
    };
    let now = match st.reads.now(&st.chain).await {
        Ok(now) => now,
        Err(e) => {
            tracing::warn!(error = %e, "x402 shop: the cluster's clock not read");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(json!({"error": "the chain is not reachable now; retry shortly"})),
            )
                .into_response();
        }
    };
    let seller = st.seller.solana_keypair().pubkey();
    let max_timeout = st.config.max_timeout_secs;
    let offered: Vec<_> = all
        .iter()
        .filter_map(|l| Some((l, sellable(l, &seller, now, max_timeout).ok()?)))
        .collect();
    let entries = offered.iter().map(|(l, mint)| {
        let st = st.clone();
        let base = base.clone();
        async move {
            let read = async {
                let mint = st.reads.mint(&st.chain, mint).await.ok()?;
                let manifest = st
                    .item_json(&st.previews, &l.manifest_id, CATALOG_BUDGET)
                    .await;
                Some((mint, manifest))
            };
            let (mint, manifest) = tokio::time::timeout(CATALOG_BUDGET, read).await.ok()??;
            Some(json!({
                "listing_id": l.listing_id,
                "url": format!("{base}/x402/listings/{}", l.listing_id),
                "amount": l.price_lamports.to_string(),
                "asset": mint.address.to_string(),
                "decimals": mint.decimals,
                "token_program": mint.program.to_string(),
                "expires_at": l.expires_at,
                "bundle_hash": l.bundle_hash,
                "manifest_id": l.manifest_id,
                "list_signature": l.list_signature,
                "seller": l.payment_address,
                "blob": format!("{base}/x402/blobs/{}", l.blob_id),
                "preview": manifest.as_ref().map(|m| m["preview"].clone()).unwrap_or(Value::Null),
            }))
        }
    });
    let listed: Vec<Value> = futures_util::future::join_all(entries)
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut r = axum::Json(json!({
        "network": st.config.network,
        "rpc": st.config.shop.rpc_url,
        "seller": seller.to_string(),
        "listings": listed,
    }))
    .into_response();
    r.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-store"));
    r
}

/// `GET /x402/blobs/{blob_id}`: the encrypted blob of a listing sold
/// here (the page checks what it decrypts to against the chain).
async fn blob(
    State(st): State<Arc<X402State>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(blob_id): Path<String>,
) -> Response {
    let _permit = match admit_request(&st, peer) {
        Ok(p) => p,
        Err(p) => return p.into_response(),
    };
    let known = match listings(&st).await {
        Ok(all) => all.iter().any(|l| l.blob_id == blob_id),
        Err(p) => return p.into_response(),
    };
    if !known {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": format!("{blob_id} is not the blob of a listing sold here"), "field": "blob_id"})),
        )
            .into_response();
    }
    let max = crate::seal::MAX_BLOB_BYTES + crate::seal::NONCE_LEN + crate::seal::TAG_LEN;
    match tokio::time::timeout(CATALOG_BUDGET * 5, st.source.fetch(&blob_id, max)).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e)) => {
            tracing::warn!(%blob_id, error = %e, "x402 shop: a listed blob not read from storage");
            (
                StatusCode::BAD_GATEWAY,
                axum::Json(
                    json!({"error": "the blob is not readable from storage now; retry shortly"}),
                ),
            )
                .into_response()
        }
        Err(_) => (
            StatusCode::GATEWAY_TIMEOUT,
            axum::Json(json!({"error": "storage did not answer in time; retry shortly"})),
        )
            .into_response(),
    }
}
