//! `bench explorer`: how long the web explorer's pages take to render and
//! serve for a market of N listings, each a complete negotiated trade
//! (list, offer, counter, accept, buy, release): the first listings page, a
//! deep page, a filtered page, listing pages and seller pages, fetched one
//! at a time from a real server on 127.0.0.1 (a person browsing), with
//! p50/p99/max per page kind.

use super::{indexer_of, percentile, LoadError, LocalServer};
use crate::api::AppState;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The URL of a page kind's i-th request.
type UrlOf<'a> = Box<dyn Fn(usize) -> String + 'a>;

/// Timings of one page kind.
#[derive(Debug, Clone, Serialize)]
pub struct PageTimes {
    /// Which page.
    pub page: &'static str,
    /// Requests made (all 200, all HTML).
    pub requests: usize,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// Result of an explorer run.
#[derive(Debug, Clone, Serialize)]
pub struct ExplorerReport {
    /// Listings indexed (each a full trade).
    pub listings: usize,
    /// Per page kind.
    pub pages: Vec<PageTimes>,
}

async fn get_html(http: &reqwest::Client, url: &str) -> Result<Duration, LoadError> {
    let t = Instant::now();
    let res = http
        .get(url)
        .send()
        .await
        .map_err(|e| LoadError::Request(e.to_string()))?;
    let status = res.status();
    let body = res
        .text()
        .await
        .map_err(|e| LoadError::Request(e.to_string()))?;
    let took = t.elapsed();
    if !status.is_success() || !body.starts_with("<!DOCTYPE html>") {
        return Err(LoadError::Request(format!("{url}: {status}")));
    }
    Ok(took)
}

/// Serves an indexer of `trades` traded listings (40 sellers) and GETs
/// each page kind `requests` times.
pub async fn explorer(trades: u64, requests: usize) -> Result<ExplorerReport, LoadError> {
    let ix = indexer_of(crate::synth::trades(trades, 40))?;
    let state = ix.state();
    let ids: Vec<String> = state.listings.keys().cloned().collect();
    let sellers: Vec<String> = {
        let mut s: Vec<String> = state.listings.values().map(|l| l.seller.clone()).collect();
        s.sort();
        s.dedup();
        s
    };
    let deep = ids[ids.len() * 9 / 10].clone();
    drop(state);
    let server = LocalServer::start(AppState::new(Arc::new(ix), "localnet"), 1).await?;
    let base = server.base.clone();
    let kinds: [(&'static str, UrlOf); 5] = [
        ("listings, first page", Box::new(|_| format!("{base}/"))),
        (
            "listings, a page 90% in",
            Box::new(|_| format!("{base}/?status=all&cursor={deep}")),
        ),
        (
            "listings, filtered by seller and price",
            Box::new(|i| {
                format!(
                    "{base}/?status=all&max_price_usd=100&seller_pubkey={}",
                    sellers[i % sellers.len()]
                )
            }),
        ),
        (
            "listing page (timeline)",
            Box::new(|i| format!("{base}/l/{}", ids[(i * 7919) % ids.len()])),
        ),
        (
            "seller page (reputation + chart)",
            Box::new(|i| format!("{base}/s/{}", sellers[i % sellers.len()])),
        ),
    ];
    let mut pages = Vec::new();
    for (page, url) in &kinds {
        get_html(&server.http, &url(0)).await?; // warm
        let mut times = Vec::with_capacity(requests);
        for i in 0..requests {
            times.push(get_html(&server.http, &url(i)).await?);
        }
        times.sort();
        pages.push(PageTimes {
            page,
            requests,
            p50_ms: percentile(&times, 0.50),
            p99_ms: percentile(&times, 0.99),
            max_ms: times.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        });
    }
    server.stop().await;
    Ok(ExplorerReport {
        listings: trades as usize,
        pages,
    })
}
