//! A cold sync of one watched address's history (an empty database, a
//! `rebuild`, a new `--address`, a lost checkpoint) in bounded chunks,
//! oldest first, its progress kept in the database: memory stays flat in
//! the history's length and a killed or failed sync resumes where it
//! stopped.
//!
//! An address whose history past its checkpoint fills a whole page of
//! `getSignaturesForAddress` (1,000 signatures) is synced this way:
//! 1. the history is listed page by page, newest first, down to the
//!    checkpoint; each page is kept in the database as it is listed
//!    (`sync:<address>:page:<n>`) with the cursor (`sync:<address>`), so a
//!    kill while listing resumes the listing;
//! 2. each poll then fetches and stores one page's transactions, the
//!    oldest page first, and drops the page in the same step as it records
//!    the progress; a page killed half-stored is fetched again, its stored
//!    records skipped;
//! 3. once every page is stored the checkpoint moves to the newest final
//!    signature the sync began at, and the normal poll takes over.
//!
//! Only final signatures are synced this way (the newest ones, above the
//! finalized slot when the sync began, are the normal poll's). Progress
//! (records stored, of listed, per second, ETA) is logged after each page.
//!
//! Owns the sync's cursor and pages. Never judges a record, never moves a
//! checkpoint past what it stored.

use super::{bad_key, blocking, IngestError, PollReport, RpcSource};
use crate::engine::Indexer;
use node::chain::{Pubkey, SigInfo, Signature};
use std::str::FromStr;
use std::sync::Arc;

/// Signatures in one page of an address's history, and the most a cold
/// sync fetches and stores at a time.
pub const PAGE: usize = 1_000;

/// A cold sync's place, kept in the database under [`state_key`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Backlog {
    /// The newest final signature when the sync began, and its slot: the
    /// checkpoint once every page is stored.
    pub head: Option<(String, u64)>,
    /// The listing's cursor: the oldest signature listed so far.
    pub before: Option<String>,
    /// Pages listed (page 0 is the newest).
    pub pages: u64,
    /// Whether the listing reached the checkpoint (or the history's start).
    pub listed: bool,
    /// Pages stored so far, from the oldest.
    pub stored_pages: u64,
    /// Signatures listed in all.
    pub signatures: u64,
    /// Signatures of stored pages.
    pub done: u64,
    /// When the sync began (unix ms), for its rate.
    pub began_ms: i64,
}

impl Backlog {
    /// Pages still to store.
    pub fn pages_left(&self) -> u64 {
        self.pages.saturating_sub(self.stored_pages)
    }
}

/// The key of `address`'s sync state.
pub fn state_key(address: &str) -> String {
    format!("sync:{address}")
}

/// The key of `address`'s listed page `n`.
fn page_key(address: &str, n: u64) -> String {
    format!("sync:{address}:page:{n}")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What the first page of an address's history says.
pub enum FirstPage {
    /// Less than a page: the normal poll takes these.
    Short(Vec<SigInfo>),
    /// A cold sync is under way (begun now or before), where it stands.
    Backlog(Backlog),
}

impl RpcSource {
    /// `address`'s sync state (`None`: none under way).
    async fn backlog(
        &self,
        ix: &Arc<Indexer>,
        address: &str,
    ) -> Result<Option<Backlog>, IngestError> {
        let key = state_key(address);
        let raw = blocking(ix, move |ix| Ok(ix.store().meta(&key)?)).await?;
        Ok(raw
            .filter(|r| !r.is_empty())
            .and_then(|r| serde_json::from_str(&r).ok()))
    }

    /// Whether `address` is cold-synced, beginning a sync when its history
    /// past `until` fills a page: else its short history, for the normal
    /// poll.
    pub(super) async fn first_page(
        &self,
        ix: &Arc<Indexer>,
        address: &Pubkey,
        until: Option<&Signature>,
        final_slot: u64,
    ) -> Result<FirstPage, IngestError> {
        let key = address.to_string();
        if let Some(backlog) = self.backlog(ix, &key).await? {
            return Ok(FirstPage::Backlog(backlog));
        }
        self.limit.wait().await;
        let page = self.chain.signatures_page(address, None, until).await?;
        if page.len() < PAGE {
            return Ok(FirstPage::Short(page));
        }
        // a whole page: the history may be long; list it down to the
        // checkpoint, page by page, and store it oldest first
        let head = page
            .iter()
            .find(|h| h.slot <= final_slot)
            .map(|h| (h.signature.clone(), h.slot));
        let before = page.last().map(|h| h.signature.clone());
        let kept: Vec<String> = page
            .iter()
            .filter(|h| h.slot <= final_slot)
            .map(|h| h.signature.clone())
            .collect();
        let backlog = Backlog {
            head,
            before,
            pages: 1,
            listed: false,
            stored_pages: 0,
            signatures: kept.len() as u64,
            done: 0,
            began_ms: now_ms(),
        };
        tracing::info!(address = %key, "cold sync: the history past the checkpoint fills a page; listing it, then storing it a page at a time, oldest first");
        self.save_page(ix, &key, 0, kept, &backlog).await?;
        Ok(FirstPage::Backlog(backlog))
    }

    /// Keeps listed page `n` of `address` and the sync's state, in one step.
    async fn save_page(
        &self,
        ix: &Arc<Indexer>,
        address: &str,
        n: u64,
        signatures: Vec<String>,
        backlog: &Backlog,
    ) -> Result<(), IngestError> {
        let (page, state) = (page_key(address, n), state_key(address));
        let body = serde_json::to_string(&signatures).expect("signatures serialize");
        let at = serde_json::to_string(backlog).expect("the backlog serializes");
        blocking(ix, move |ix| {
            let mut store = ix.store();
            store.set_meta(&page, &body)?;
            store.set_meta(&state, &at)?;
            Ok(())
        })
        .await
    }

    /// One step of `address`'s cold sync standing at `backlog`: the rest
    /// of its listing (each page kept as it comes), then its oldest page
    /// not stored yet fetched and stored, with the progress; the checkpoint
    /// moved once the last is.
    pub(super) async fn sync_step(
        &self,
        ix: &Arc<Indexer>,
        address: &Pubkey,
        mut backlog: Backlog,
        until: Option<Signature>,
        final_slot: u64,
    ) -> Result<PollReport, IngestError> {
        let key = address.to_string();
        while !backlog.listed {
            let before = backlog
                .before
                .as_deref()
                .and_then(|s| Signature::from_str(s).ok());
            self.limit.wait().await;
            let page = self
                .chain
                .signatures_page(address, before.as_ref(), until.as_ref())
                .await?;
            backlog.listed = page.len() < PAGE;
            if let Some(last) = page.last() {
                backlog.before = Some(last.signature.clone());
            }
            let sigs: Vec<String> = page.into_iter().map(|h| h.signature).collect();
            backlog.signatures += sigs.len() as u64;
            let n = backlog.pages;
            backlog.pages += 1;
            self.save_page(ix, &key, n, sigs, &backlog).await?;
            if backlog.pages.is_multiple_of(20) || backlog.listed {
                tracing::info!(address = %key, pages = backlog.pages, signatures = backlog.signatures, listed = backlog.listed, "cold sync: listing the history");
            }
        }
        // the oldest page not stored yet
        let n = backlog.pages - 1 - backlog.stored_pages;
        let page = page_key(&key, n);
        let listed: Vec<String> = blocking(ix, move |ix| {
            Ok(ix
                .store()
                .meta(&page)?
                .and_then(|b| serde_json::from_str(&b).ok())
                .unwrap_or_default())
        })
        .await?;
        let count = listed.len() as u64;
        let wanted: Vec<Signature> = blocking(ix, move |ix| {
            let store = ix.store();
            let mut wanted = Vec::new();
            for sig in &listed {
                if !store.has(sig)? && store.meta(&bad_key(sig))?.is_none() {
                    if let Ok(s) = Signature::from_str(sig) {
                        wanted.push(s);
                    }
                }
            }
            wanted.sort();
            wanted.dedup();
            Ok(wanted)
        })
        .await?;
        let mut records = self.records(ix, &wanted).await?;
        let mut held = self.held(ix).await?;
        let held_before = held.clone();
        self.hold_back(&mut records, &mut held);
        let fetched = records.len();
        backlog.stored_pages += 1;
        backlog.done += count;
        let finished = backlog.stored_pages == backlog.pages;
        let state = state_key(&key);
        let page = page_key(&key, n);
        let at = serde_json::to_string(&backlog).expect("the backlog serializes");
        let head = backlog.head.clone();
        let address_key = key.clone();
        let applied = blocking(ix, move |ix| {
            let applied = ix.ingest(records, final_slot, &[])?;
            let mut store = ix.store();
            if held != held_before {
                store.set_meta(
                    super::HELD_KEY,
                    &serde_json::to_string(&held).expect("map serializes"),
                )?;
            }
            store.set_meta(&page, "")?;
            if finished {
                if let Some((sig, slot)) = &head {
                    store.set_checkpoint(&address_key, sig, *slot)?;
                }
                store.set_meta(&state, "")?;
            } else {
                store.set_meta(&state, &at)?;
            }
            Ok(applied)
        })
        .await?;
        let secs = ((now_ms() - backlog.began_ms).max(1) as f64) / 1000.0;
        let rate = backlog.done as f64 / secs;
        let left = backlog.signatures.saturating_sub(backlog.done);
        tracing::info!(
            address = %key,
            done = backlog.done,
            listed = backlog.signatures,
            pages_left = backlog.pages_left(),
            signatures_per_second = rate as u64,
            eta_secs = (left as f64 / rate.max(1e-9)) as u64,
            "cold sync: a page stored"
        );
        if finished {
            tracing::info!(address = %key, signatures = backlog.signatures, secs = secs as u64, "cold sync: done; the checkpoint moved to where it began");
        }
        Ok(PollReport {
            listed: count as usize,
            fetched,
            final_slot,
            applied,
            backlog_pages: backlog.pages_left(),
        })
    }
}
