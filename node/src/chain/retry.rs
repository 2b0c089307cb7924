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
                tracing::warn!(%what, attempt, error = %e, "transient RPC error, retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(4));
            }
            Err(e) => {
                return Err(ChainError::Rpc {
                    what: what.to_string(),
                    source: Box::new(e),
                })
            }
        }
    }
    unreachable!("the last attempt returns")
}
