//! `brainctl mcp --http`: the MCP tools over streamable HTTP (MCP
//! 2025-06-18, rmcp's server) with the reference's environment contract:
//! - `BRAINCTL_HTTP_TOKEN` (32+ characters) required; every request to
//!   `/mcp` carries `Authorization: Bearer <token>`, compared in constant
//!   time (SHA-256 digests, no early exit); else 401 with
//!   `WWW-Authenticate: Bearer`;
//! - the endpoint at `/mcp`, an open `GET /health`; with `--public-paid`,
//!   `/paid/mcp` too: the priced tools alone, to anyone without the token
//!   (each call pays for itself), rate limited as `/mcp` is;
//! - request bodies over 1 MiB refused (413); 100 requests a minute per
//!   client (an IPv4 address, an IPv6 /64: one host's whole block;
//!   `BRAINCTL_HTTP_RATE_PER_MIN`, 0 = off), else 429; idle clients'
//!   counters pruned as requests come;
//! - host and port from `--http ADDR` or `BRAINCTL_HTTP_HOST` /
//!   `BRAINCTL_HTTP_PORT` (127.0.0.1:8080: loopback unless asked, as the
//!   free tools spend the node's wallet);
//! - against DNS rebinding (the MCP spec): a server bound to loopback
//!   accepts only loopback `Host` names, others those in
//!   `BRAINCTL_HTTP_ALLOWED_HOSTS` when set; a request carrying an
//!   `Origin` is refused unless it is in `BRAINCTL_HTTP_ALLOWED_ORIGINS`.
//!
//! Every session gets its own server over the one set of settings: the
//! same spend policy and ledger (reserved under SQLite's write lock), so
//! concurrent sessions share one budget. Never logs a tool's arguments or
//! results, nor the token.

use anyhow::{anyhow, Context as _, Result};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

/// Largest request body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Shortest token accepted.
pub const MIN_TOKEN_CHARS: usize = 32;
/// Requests a minute per client IP by default (the reference's).
pub const DEFAULT_RATE_PER_MIN: u32 = 100;

/// The HTTP server's settings, read once at start.
pub struct HttpConfig {
    token_digest: [u8; 32],
    addr: SocketAddr,
    rate_per_min: u32,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Vec<String>,
}

impl HttpConfig {
    /// From `--http ADDR` (empty: the environment's host and port) and the
    /// environment (`env`), refusing a short or missing token.
    pub fn from_env(arg: &str, env: impl Fn(&str) -> Option<String>) -> Result<HttpConfig> {
        let token = env("BRAINCTL_HTTP_TOKEN").unwrap_or_default();
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(anyhow!(
                "BRAINCTL_HTTP_TOKEN must be set to a secret of at least {MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`); clients send it as `Authorization: Bearer <token>`"
            ));
        }
        let addr = if arg.is_empty() {
            let host = env("BRAINCTL_HTTP_HOST").unwrap_or_else(|| "127.0.0.1".into());
            let port = env("BRAINCTL_HTTP_PORT").unwrap_or_else(|| "8080".into());
            let port: u16 = port
                .trim()
                .parse()
                .map_err(|_| anyhow!("BRAINCTL_HTTP_PORT={port} is not a port number"))?;
            let ip: IpAddr = host
                .trim()
                .parse()
                .map_err(|_| anyhow!("BRAINCTL_HTTP_HOST={host} is not an IP address"))?;
            SocketAddr::new(ip, port)
        } else {
            arg.parse()
                .map_err(|_| anyhow!("--http {arg} is not host:port (e.g. 127.0.0.1:8080)"))?
        };
        let rate_per_min = match env("BRAINCTL_HTTP_RATE_PER_MIN") {
            None => DEFAULT_RATE_PER_MIN,
            Some(v) => v.trim().parse().map_err(|_| {
                anyhow!("BRAINCTL_HTTP_RATE_PER_MIN={v} is not a whole number (0 = off)")
            })?,
        };
        let list = |k: &str| -> Vec<String> {
            env(k)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        };
        let hosts = list("BRAINCTL_HTTP_ALLOWED_HOSTS");
        Ok(HttpConfig {
            token_digest: node::crypto::sha256(token.as_bytes()),
            addr,
            rate_per_min,
            allowed_hosts: (!hosts.is_empty()).then_some(hosts),
            allowed_origins: list("BRAINCTL_HTTP_ALLOWED_ORIGINS"),
        })
    }
}

/// What the request middleware checks.
struct Gate {
    token_digest: [u8; 32],
    limiter: Option<DefaultKeyedRateLimiter<IpAddr>>,
    /// Requests seen (every [`PRUNE_EVERY`]th prunes idle clients).
    seen: std::sync::atomic::AtomicU64,
}

/// How often the rate limiter forgets clients whose budget is full again.
const PRUNE_EVERY: u64 = 1_024;

/// The client a request is rated as: its IPv4 address, or its IPv6 /64
/// (a host holds a whole /64; rating each address would let it rotate).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// Whether `header` (an `Authorization` value) carries the token.
fn bearer_matches(header: Option<&str>, token_digest: &[u8; 32]) -> bool {
    let given = header.and_then(|h| h.strip_prefix("Bearer ")).unwrap_or("");
    let digest = node::crypto::sha256(given.trim().as_bytes());
    // every byte compared, whatever differs first
    digest
        .iter()
        .zip(token_digest)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// A refusal before the body is read: the connection closes after it
/// (announced, so a client never reuses a connection the server drops for
/// the unread body: without it a burst raced the close).
fn refuse(status: StatusCode, error: &str) -> Response {
    (
        status,
        [
            ("content-type", "application/json"),
            ("connection", "close"),
        ],
        serde_json::json!({ "error": error }).to_string(),
    )
        .into_response()
}

/// Refuses a client over its rate (every [`PRUNE_EVERY`]th request
/// prunes idle clients).
fn over_rate(gate: &Gate, peer: SocketAddr) -> Option<Response> {
    let limiter = gate.limiter.as_ref()?;
    let n = gate.seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if n % PRUNE_EVERY == PRUNE_EVERY - 1 {
        limiter.retain_recent();
        limiter.shrink_to_fit();
    }
    limiter
        .check_key(&client_key(peer.ip()))
        .is_err()
        .then(|| refuse(StatusCode::TOO_MANY_REQUESTS, "rate limit exceeded"))
}

/// Rate limit per client IP, then the token, before any MCP handling.
async fn gate(
    State(gate): State<Arc<Gate>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = over_rate(&gate, peer) {
        return refused;
    }
    let auth = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    if !bearer_matches(auth, &gate.token_digest) {
        let mut r = refuse(StatusCode::UNAUTHORIZED, "unauthorized");
        r.headers_mut().insert(
            "www-authenticate",
            axum::http::HeaderValue::from_static(r#"Bearer realm="brainctl-mcp""#),
        );
        return r;
    }
    next.run(request).await
}

/// Rate limit per client IP before the public (paid) endpoint.
async fn public_gate(
    State(gate): State<Arc<Gate>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    match over_rate(&gate, peer) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

/// Serves `make`'s servers (one per session) at `/mcp` and, where given,
/// `public`'s at `/paid/mcp`, until `shutdown` resolves, then stops
/// accepting, ends every session and returns.
pub async fn serve<S, P>(
    make: impl Fn() -> S + Send + Sync + 'static,
    public: Option<impl Fn() -> P + Send + Sync + 'static>,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()>
where
    S: rmcp::ServerHandler + Send + 'static,
    P: rmcp::ServerHandler + Send + 'static,
{
    let mut mcp = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_allowed_origins(config.allowed_origins.clone())
        .enforce_origin_validation();
    mcp = match (&config.allowed_hosts, config.addr.ip().is_loopback()) {
        (Some(hosts), _) => mcp.with_allowed_hosts(hosts.clone()),
        (None, true) => mcp,
        // reachable from elsewhere: the token guards it; name hosts to narrow
        (None, false) => mcp.disable_allowed_hosts(),
    };
    let cancel = mcp.cancellation_token.clone();
    let gate = Arc::new(Gate {
        token_digest: config.token_digest,
        limiter: NonZeroU32::new(config.rate_per_min)
            .map(|n| RateLimiter::keyed(Quota::per_minute(n))),
        seen: Default::default(),
    });
    let mut app = axum::Router::new()
        .nest_service(
            "/mcp",
            StreamableHttpService::new(
                move || Ok(make()),
                Arc::new(LocalSessionManager::default()),
                mcp.clone(),
            ),
        )
        .layer(axum::middleware::from_fn_with_state(
            gate.clone(),
            self::gate,
        ));
    if let Some(public) = public {
        app = app.merge(
            axum::Router::new()
                .nest_service(
                    "/paid/mcp",
                    StreamableHttpService::new(
                        move || Ok(public()),
                        Arc::new(LocalSessionManager::default()),
                        mcp,
                    ),
                )
                .layer(axum::middleware::from_fn_with_state(gate, public_gate)),
        );
    }
    let app = app.route(
        "/health",
        axum::routing::get(|| async { axum::Json(serde_json::json!({"ok": true})) }),
    );
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("bind {}", config.addr))?;
    let bound = listener.local_addr()?;
    tracing::info!(address = %bound, "brainctl mcp listening: POST http://{bound}/mcp");
    eprintln!("brainctl mcp: listening on http://{bound}/mcp");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        cancel.cancel();
    })
    .await
    .context("serving MCP over HTTP")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_short_or_missing_token_refuses_to_start() {
        assert!(HttpConfig::from_env("", env(&[])).is_err());
        let short = HttpConfig::from_env("", env(&[("BRAINCTL_HTTP_TOKEN", "x")]));
        let e = short.err().unwrap().to_string();
        assert!(e.contains("at least 32") && !e.contains("\"x\""), "{e}");
        let t = "t".repeat(32);
        let c = HttpConfig::from_env("", env(&[("BRAINCTL_HTTP_TOKEN", &t)])).unwrap();
        assert_eq!(
            c.addr.to_string(),
            "127.0.0.1:8080",
            "loopback unless asked"
        );
        assert_eq!(c.rate_per_min, 100);
        let c = HttpConfig::from_env(
            "127.0.0.1:9",
            env(&[
                ("BRAINCTL_HTTP_TOKEN", &t),
                ("BRAINCTL_HTTP_RATE_PER_MIN", "0"),
            ]),
        )
        .unwrap();
        assert_eq!((c.addr.port(), c.rate_per_min), (9, 0));
    }

    /// An IPv6 client is rated by its /64, an IPv4 one (mapped or not) by
    /// its address.
    #[test]
    fn clients_are_rated_by_address_or_v6_block() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(other));
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(client_key(mapped), v4);
        assert_eq!(client_key(v4), v4);
    }

    #[test]
    fn only_the_bearer_token_matches() {
        let d = node::crypto::sha256(b"s3cret-s3cret-s3cret-s3cret-s3cret");
        assert!(bearer_matches(
            Some("Bearer s3cret-s3cret-s3cret-s3cret-s3cret"),
            &d
        ));
        assert!(!bearer_matches(
            Some("Bearer s3cret-s3cret-s3cret-s3cret-s3cre"),
            &d
        ));
        assert!(!bearer_matches(
            Some("s3cret-s3cret-s3cret-s3cret-s3cret"),
            &d
        ));
        assert!(!bearer_matches(None, &d));
    }
}
