//! HTTP storage: an Irys-compatible bundler (`POST {url}/tx/solana` with the
//! signed item as octet-stream; price from `GET {url}/price/solana/{bytes}`)
//! and downloads from any gateway (`GET {url}/{id}`), capped in size and
//! time. A gateway is never trusted: callers check what comes back.

use super::item::DataItem;
use super::StorageError;
use futures_util::StreamExt;
use std::time::Duration;

/// Default request timeout.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// An HTTP client with the default timeout.
pub(super) fn client() -> Result<reqwest::Client, StorageError> {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| StorageError::Http(format!("client: {e}")))
}

fn status_error(what: &str, status: reqwest::StatusCode, body: &str) -> StorageError {
    let body: String = body.chars().take(200).collect();
    match status.as_u16() {
        402 => StorageError::PaymentRequired(format!(
            "{what}: the bundler needs funding for this upload ({body})"
        )),
        413 => StorageError::TooLarge(format!("{what}: the bundler refused the size ({body})")),
        404 => StorageError::NotFound(what.into()),
        s => StorageError::Http(format!("{what}: HTTP {s} {body}")),
    }
}

/// Sends `req`, returning the body text of a 2xx answer or a typed error.
async fn send_for_text(
    what: &str,
    url: &str,
    req: reqwest::RequestBuilder,
) -> Result<String, StorageError> {
    let http =
        |e: reqwest::Error| StorageError::Http(format!("{}: {}", shown(url), e.without_url()));
    let resp = req.send().await.map_err(http)?;
    let status = resp.status();
    let text = resp.text().await.map_err(http)?;
    if !status.is_success() {
        return Err(status_error(what, status, &text));
    }
    Ok(text)
}

/// A bundler endpoint.
#[derive(Debug, Clone)]
pub struct Bundler {
    url: String,
}

impl Bundler {
    /// A bundler at `url` (e.g. `https://node1.irys.xyz`).
    pub fn new(url: &str) -> Bundler {
        Bundler {
            url: url.trim_end_matches('/').to_string(),
        }
    }

    /// The price in lamports of uploading `bytes` bytes.
    pub async fn price(&self, bytes: usize) -> Result<u64, StorageError> {
        let url = format!("{}/price/solana/{bytes}", self.url);
        let text = send_for_text("price", &url, client()?.get(&url)).await?;
        text.trim().parse().map_err(|_| {
            StorageError::Http(format!(
                "{}: price is not an integer: {}",
                shown(&url),
                text.trim()
            ))
        })
    }

    /// Uploads a signed item; returns its id (checked against the item's own).
    pub async fn put(&self, item: &DataItem) -> Result<String, StorageError> {
        let url = format!("{}/tx/solana", self.url);
        let req = client()?
            .post(&url)
            .header("Content-Type", "application/octet-stream")
            .body(item.to_bytes());
        let text = send_for_text("upload", &url, req).await?;
        let id = item.id();
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            if let Some(got) = v.get("id").and_then(|x| x.as_str()) {
                if got != id {
                    return Err(StorageError::IdMismatch {
                        want: id,
                        got: got.into(),
                    });
                }
            }
        }
        Ok(id)
    }
}

/// Downloads `{gateway}/{id}`, refusing bodies over `max_bytes`.
pub async fn download(gateway: &str, id: &str, max_bytes: usize) -> Result<Vec<u8>, StorageError> {
    let url = format!("{}/{id}", gateway.trim_end_matches('/'));
    let req = client()?.get(&url);
    body_capped(&url, req, max_bytes).await
}

/// `url` as an error may show it: without credentials or a query (either
/// may carry an API key).
pub fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "<the storage URL>".into(),
    }
}

/// Sends `req` to `url` and reads a 2xx body of at most `max_bytes`.
pub(super) async fn body_capped(
    url: &str,
    req: reqwest::RequestBuilder,
    max_bytes: usize,
) -> Result<Vec<u8>, StorageError> {
    let resp = req
        .send()
        .await
        .map_err(|e| StorageError::Http(format!("{}: {}", shown(url), e.without_url())))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(status_error(&shown(url), status, ""));
    }
    if resp
        .content_length()
        .is_some_and(|n| n as usize > max_bytes)
    {
        return Err(StorageError::TooLarge(format!(
            "{}: over {max_bytes} bytes",
            shown(url)
        )));
    }
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| StorageError::Http(format!("{}: {}", shown(url), e.without_url())))?;
        if out.len() + chunk.len() > max_bytes {
            return Err(StorageError::TooLarge(format!(
                "{}: over {max_bytes} bytes",
                shown(url)
            )));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Downloads and checks the body's SHA-256 equals `expected`.
pub async fn download_expecting_sha256(
    gateway: &str,
    id: &str,
    max_bytes: usize,
    expected: &[u8; 32],
) -> Result<Vec<u8>, StorageError> {
    let body = download(gateway, id, max_bytes).await?;
    let got = crate::crypto::sha256(&body);
    if &got != expected {
        return Err(StorageError::HashMismatch {
            id: id.into(),
            want: hex::encode(expected),
            got: hex::encode(got),
        });
    }
    Ok(body)
}
