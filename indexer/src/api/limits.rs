//! Rate limits on the requests that cost the indexer work or storage: a
//! tower middleware (axum's `from_fn_with_state`) in front of the router.
//!
//! - sign-in (`/auth/challenge`, `/auth/verify`): per client IP;
//! - every other write (the hints: `POST /listings`, `/offers/...`,
//!   `/settle`, ...): per client IP and, when a session token is sent,
//!   per session, so one wallet cannot spend another's allowance.
//!
//! Reads are never limited here (they are served from the folded state
//! and cost microseconds). Over a limit: `429 rate_limited` with
//! `Retry-After`. Keys are kept in bounded memory (idle ones are dropped
//! once many are held). The client's IP is the socket's peer, or behind
//! reverse proxies the one the operator's trusted header names
//! ([`super::client_ip`]).
//!
//! Owns admission only; it never reads the state or the store.

use super::client_ip::ClientIp;
use super::ApiError;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Requests per minute and burst, per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Sustained requests per minute.
    pub per_minute: u32,
    /// Requests allowed at once.
    pub burst: u32,
}

/// The limits in force (`0` per minute: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Sign-in requests per client IP.
    pub sign_in_per_ip: Rate,
    /// Writes (hints, settle) per client IP.
    pub writes_per_ip: Rate,
    /// Writes per session token.
    pub writes_per_session: Rate,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits::per_minute(60, 600, 120)
    }
}

impl RateLimits {
    /// Limits from per-minute allowances (`0`: unlimited); each burst is
    /// a third of its minute (at least 1).
    pub fn per_minute(sign_in_per_ip: u32, writes_per_ip: u32, writes_per_session: u32) -> Self {
        let rate = |per_minute: u32| Rate {
            per_minute,
            burst: (per_minute / 3).max(1),
        };
        RateLimits {
            sign_in_per_ip: rate(sign_in_per_ip),
            writes_per_ip: rate(writes_per_ip),
            writes_per_session: rate(writes_per_session),
        }
    }

    /// No limits (benchmarks of the server alone).
    pub fn off() -> RateLimits {
        let off = Rate {
            per_minute: 0,
            burst: 0,
        };
        RateLimits {
            sign_in_per_ip: off,
            writes_per_ip: off,
            writes_per_session: off,
        }
    }
}

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

/// Keys held before idle ones are dropped.
const MAX_KEYS: usize = 100_000;

/// One keyed limit (`None`: unlimited).
struct Limit<K: Hash + Eq + Clone>(Option<Keyed<K>>);

impl<K: Hash + Eq + Clone> Limit<K> {
    fn new(rate: Rate) -> Self {
        Limit(NonZeroU32::new(rate.per_minute).map(|per_minute| {
            let burst = NonZeroU32::new(rate.burst).unwrap_or(NonZeroU32::MIN);
            RateLimiter::keyed(Quota::per_minute(per_minute).allow_burst(burst))
        }))
    }

    /// `Err(wait)` when `key` is over its limit.
    fn check(&self, key: &K) -> Result<(), Duration> {
        let Some(l) = &self.0 else { return Ok(()) };
        l.check_key(key)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    fn trim(&self) {
        if let Some(l) = &self.0 {
            if l.len() > MAX_KEYS {
                l.retain_recent();
                l.shrink_to_fit();
            }
        }
    }
}

/// The limiters (shared by every connection).
pub struct Limiter {
    client_ip: ClientIp,
    sign_in_per_ip: Limit<IpAddr>,
    writes_per_ip: Limit<IpAddr>,
    writes_per_session: Limit<String>,
    checked: AtomicU64,
    refused: AtomicU64,
}

impl Limiter {
    /// Limiters for `limits`, keyed by the socket's peer IP.
    pub fn new(limits: RateLimits) -> Arc<Limiter> {
        Limiter::with_client_ip(limits, ClientIp::socket())
    }

    /// Limiters for `limits`, keyed by the IP `client_ip` finds.
    pub fn with_client_ip(limits: RateLimits, client_ip: ClientIp) -> Arc<Limiter> {
        Arc::new(Limiter {
            client_ip,
            sign_in_per_ip: Limit::new(limits.sign_in_per_ip),
            writes_per_ip: Limit::new(limits.writes_per_ip),
            writes_per_session: Limit::new(limits.writes_per_session),
            checked: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// Requests refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Admits or refuses one request.
    fn admit(&self, ip: IpAddr, path: &str, session: Option<&str>) -> Result<(), Duration> {
        if self
            .checked
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(4096)
        {
            self.sign_in_per_ip.trim();
            self.writes_per_ip.trim();
            self.writes_per_session.trim();
        }
        if path.starts_with("/auth/") {
            return self.sign_in_per_ip.check(&ip);
        }
        self.writes_per_ip.check(&ip)?;
        match session {
            Some(token) => self.writes_per_session.check(&token.to_string()),
            None => Ok(()),
        }
    }
}

/// The middleware: writes (every non-GET request) pass the limits.
pub async fn limit(State(limiter): State<Arc<Limiter>>, req: Request, next: Next) -> Response {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return next.run(req).await;
    }
    // without connection info (a router driven in-process) all share one key
    let socket = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
    let ip = limiter.client_ip.of(req.headers(), socket);
    let session = super::request::bearer(req.headers());
    match limiter.admit(ip, req.uri().path(), session) {
        Ok(()) => next.run(req).await,
        Err(wait) => {
            limiter.refused.fetch_add(1, Ordering::Relaxed);
            let secs = wait.as_secs() + 1;
            let mut res = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many requests from this client; retry in {secs} s"),
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
            res
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_admitted_then_refused_per_key() {
        let l = Limiter::new(RateLimits {
            sign_in_per_ip: Rate {
                per_minute: 1,
                burst: 3,
            },
            ..RateLimits::default()
        });
        let (a, b) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        for _ in 0..3 {
            assert!(l.admit(a, "/auth/challenge", None).is_ok());
        }
        let wait = l.admit(a, "/auth/challenge", None).unwrap_err();
        assert!(wait > Duration::from_secs(50), "{wait:?}");
        assert!(
            l.admit(b, "/auth/challenge", None).is_ok(),
            "other IPs unaffected"
        );
    }

    #[test]
    fn sessions_have_their_own_allowance() {
        let l = Limiter::new(RateLimits {
            writes_per_session: Rate {
                per_minute: 1,
                burst: 2,
            },
            ..RateLimits::default()
        });
        let ip = IpAddr::from([127, 0, 0, 1]);
        assert!(l.admit(ip, "/listings", Some("s1")).is_ok());
        assert!(l.admit(ip, "/listings", Some("s1")).is_ok());
        assert!(l.admit(ip, "/listings", Some("s1")).is_err());
        assert!(l.admit(ip, "/listings", Some("s2")).is_ok());
    }

    #[test]
    fn off_admits_everything() {
        let l = Limiter::new(RateLimits::off());
        let ip = IpAddr::from([127, 0, 0, 1]);
        for _ in 0..10_000 {
            assert!(l.admit(ip, "/auth/challenge", None).is_ok());
        }
    }
}
