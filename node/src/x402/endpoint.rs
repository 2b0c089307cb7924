//! The x402 endpoint as one HTTP service: the payment routes
//! ([`super::serve`]) and the shop page's ([`super::shop`]) under one
//! CORS policy, served until a shutdown future completes.
//!
//! Owns the routing table and the origin policy. Never answers a request
//! itself: each route's handler lives with the module that owns it.

use super::serve::{key, payment, X402State};
use axum::http::HeaderValue;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The endpoint's routes, with CORS for the seller's origins.
pub fn router(state: Arc<X402State>) -> axum::Router {
    let cors = cors(&state.config.cors_origins);
    super::shop::routes()
        .route("/x402/listings/{listing_id}", axum::routing::get(key))
        .route("/x402/payments/{signature}", axum::routing::get(payment))
        .with_state(state)
        .layer(cors)
}

/// What a web page may do with the endpoint: preflights answered for
/// `origins` (empty: any), the headers an x402 client sends allowed
/// (`PAYMENT-SIGNATURE`, v1's `X-PAYMENT`, and the
/// `Access-Control-Expose-Headers` `@x402/fetch` sets), and the answers'
/// x402 headers readable by the page (`PAYMENT-REQUIRED`,
/// `PAYMENT-RESPONSE`, `X-PAYMENT-RESPONSE`). No credentials: the
/// endpoint sells for a payment, never for a cookie.
fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use axum::http::{header, HeaderName, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let allow = if origins.is_empty() {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o.trim_end_matches('/')).ok()),
        )
    };
    let name = HeaderName::from_static;
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::OPTIONS])
        .allow_headers([
            name("payment-signature"),
            name("x-payment"),
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            header::CONTENT_TYPE,
        ])
        .expose_headers([
            name("payment-required"),
            name("payment-response"),
            name("x-payment-response"),
        ])
        .max_age(Duration::from_secs(600))
}

/// Serves the endpoint on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<X402State>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(listen = %listener.local_addr()?, "x402 endpoint serving");
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

#[cfg(test)]
mod tests {
    use super::super::serve::X402Config;
    use super::*;
    use crate::arweave::Source;
    use crate::chain::Chain;
    use crate::seller::ListenDb;
    use crate::wallet::Wallet;

    /// The endpoint, serving on a free port, for a seller with no
    /// listings (no RPC is reached: nothing here pays).
    async fn serving(cors_origins: Vec<String>) -> (String, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("listen.db");
        ListenDb::open(&db_path).unwrap();
        let chain = Chain::new(
            crate::chain::Endpoint::parse("http://127.0.0.1:9").unwrap(),
            crate::chain::parse_commitment("confirmed").unwrap(),
            &[],
        );
        let state = X402State::new(
            chain,
            Arc::new(Wallet::generate()),
            db_path,
            Source::Fs(crate::arweave::FsStore::new(dir.path().join("items"))),
            X402Config {
                cors_origins,
                ..X402Config::new("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".into())
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, state, std::future::pending()));
        (base, dir)
    }

    fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// A page's preflight for the headers `@x402/fetch` sends is answered
    /// (any origin by default), and an answer's x402 headers are exposed
    /// to the page; with the seller's origins set, another origin's page
    /// is not let in.
    #[tokio::test]
    async fn pages_preflight_and_read_the_x402_headers() {
        let (base, _dir) = serving(vec![]).await;
        let http = reqwest::Client::new();
        let url = format!("{base}/x402/listings/20261207-0123456789ab");
        let preflight = http
            .request(reqwest::Method::OPTIONS, &url)
            .header("origin", "https://anyone.example")
            .header("access-control-request-method", "GET")
            .header(
                "access-control-request-headers",
                "payment-signature,access-control-expose-headers",
            )
            .send()
            .await
            .unwrap();
        assert!(preflight.status().is_success(), "{}", preflight.status());
        assert_eq!(header(&preflight, "access-control-allow-origin"), "*");
        let allowed = header(&preflight, "access-control-allow-headers").to_ascii_lowercase();
        for h in [
            "payment-signature",
            "x-payment",
            "access-control-expose-headers",
        ] {
            assert!(allowed.contains(h), "{h} in {allowed}");
        }
        let got = http
            .get(&url)
            .header("origin", "https://anyone.example")
            .send()
            .await
            .unwrap();
        assert_eq!(got.status(), 404, "no such listing here");
        assert_eq!(header(&got, "access-control-allow-origin"), "*");
        let exposed = header(&got, "access-control-expose-headers").to_ascii_lowercase();
        for h in ["payment-required", "payment-response", "x-payment-response"] {
            assert!(exposed.contains(h), "{h} in {exposed}");
        }

        let (base, _dir) = serving(vec!["https://shop.example".into()]).await;
        let url = format!("{base}/x402/listings/20261207-0123456789ab");
        let ours = http
            .get(&url)
            .header("origin", "https://shop.example")
            .send()
            .await
            .unwrap();
        assert_eq!(
            header(&ours, "access-control-allow-origin"),
            "https://shop.example"
        );
        let theirs = http
            .get(&url)
            .header("origin", "https://elsewhere.example")
            .send()
            .await
            .unwrap();
        assert_eq!(header(&theirs, "access-control-allow-origin"), "");
    }
}
