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

/// `e` as a log line may carry it: a transport error by its kind and HTTP
/// status, never its URL (an RPC URL may hold an API key); an RPC's own
/// answer as it gave it.
pub fn described(e: &ClientError) -> String {
    match e.kind() {
        ErrorKind::Reqwest(r) => match r.status() {
            Some(status) => format!("HTTP {status}"),
            None if r.is_timeout() => "timed out".into(),
            None if r.is_connect() => "could not connect".into(),
            None => "the request failed".into(),
        },
        ErrorKind::Io(io) => format!("I/O error: {}", io.kind()),
        other => other.to_string(),
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
