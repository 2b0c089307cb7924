//! The one retry rule of RPC calls: transport errors and 5xx are retried
//! with exponential backoff (250 ms doubling, capped at 4 s, five attempts);
//! anything else is the caller's error at once (429 is retried by the RPC
//! client itself). Owns no connection and sends nothing itself.

use super::ChainError;
use solana_rpc_client_api::client_error::{Error as ClientError, ErrorKind};
use std::future::Future;
use std::time::Duration;

const MAX_ATTEMPTS: u32 = 5;

fn transient(e: &ClientError) -> bool {
    match e.kind() {
        ErrorKind::Io(_) => true,
        ErrorKind::Reqwest(r) => {
            r.is_timeout() || r.is_connect() || r.status().is_some_and(|s| s.is_server_error())
        }
        _ => false,
    }
}

/// `e` as a log line may carry it: a transport error by its kind, HTTP
/// status and the endpoint's origin (scheme, host and port: never its
/// path, query or credentials, which may hold an API key); an RPC's own
/// answer as it gave it.
pub fn described(e: &ClientError) -> String {
    match e.kind() {
        ErrorKind::Reqwest(r) => {
            let at = r
                .url()
                .map(|u| format!(" ({})", u.origin().ascii_serialization()))
                .unwrap_or_default();
            match r.status() {
                Some(status) => format!("HTTP {status}{at}"),
                None if r.is_timeout() => format!("timed out{at}"),
                None if r.is_connect() => format!("could not connect{at}"),
                None => format!("the request failed{at}"),
            }
        }
        ErrorKind::Io(io) => format!("I/O error: {}", io.kind()),
        other => other.to_string(),
    }
}

/// The origin of endpoint `url` (scheme, host and port) as an error may
/// name it: never its path, query or credentials (an RPC URL may hold an
/// API key in any of them). What is no URL at all (a typo) is shown as
/// given, so the user sees what to fix.
pub fn origin(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) if u.origin().is_tuple() => u.origin().ascii_serialization(),
        Ok(_) => "<the RPC URL>".into(),
        Err(_) => url.to_string(),
    }
}

/// Runs `op` with exponential backoff (250 ms doubling, capped at 4 s) on
/// transient errors.
pub async fn with_retry<T, F, Fut>(what: &str, mut op: F) -> Result<T, ChainError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut delay = Duration::from_millis(250);
    for attempt in 1..=MAX_ATTEMPTS {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if transient(&e) && attempt < MAX_ATTEMPTS => {
                tracing::warn!(%what, attempt, error = %described(&e), "transient RPC error, retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(4));
            }
            Err(e) => {
                return Err(ChainError::Rpc {
                    what: what.to_string(),
                    error: Box::new(e),
                })
            }
        }
    }
    unreachable!("the last attempt returns")
}
