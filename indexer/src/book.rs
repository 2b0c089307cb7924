//! Manifests checked once: each body a memo references is parsed by its
//! schema and its signature verified (by the key the manifest names)
//! before the fold may use it. Verification is the expensive part of a
//! replay, so it runs here, in parallel, ahead of the sequential fold.
//!
//! Owns "is this body a valid signed manifest"; whether it matches its
//! memo (ids, hashes, signer) is the fold's job. Envelopes name no signer
//! field, so they are kept raw and checked by the fold against the seller.

use crate::record::TxRecord;
use node::market::manifest::{Listing, Offer, COUNTER_SCHEMA, LISTING_SCHEMA, OFFER_SCHEMA};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A manifest body after checking.
#[derive(Debug, Clone)]
pub enum Checked {
    /// A valid signed listing.
    Listing(Arc<Listing>),
    /// A valid signed offer.
    Offer(Arc<Offer>),
    /// A valid signed counter.
    Counter(Arc<Offer>),
    /// Another schema (envelopes), kept for the fold to check.
    Other(Arc<Value>),
    /// Refused, with the reason.
    Invalid(String),
}

/// Checked manifests by Arweave item id.
#[derive(Debug, Default, Clone)]
pub struct ManifestBook {
    by_id: HashMap<String, Checked>,
}

fn check(v: &Value) -> Checked {
    let schema = v.get("schema").and_then(Value::as_str).unwrap_or_default();
    let res = match schema {
        LISTING_SCHEMA => Listing::from_value(v.clone()).map(|l| Checked::Listing(Arc::new(l))),
        OFFER_SCHEMA => Offer::offer_from_value(v.clone()).map(|o| Checked::Offer(Arc::new(o))),
        COUNTER_SCHEMA => {
            Offer::counter_from_value(v.clone()).map(|o| Checked::Counter(Arc::new(o)))
        }
        _ => return Checked::Other(Arc::new(v.clone())),
    };
    res.unwrap_or_else(|e| Checked::Invalid(e.to_string()))
}

impl ManifestBook {
    /// An empty book.
    pub fn new() -> ManifestBook {
        ManifestBook::default()
    }

    /// Checks every manifest the records carry that the book lacks, on all
    /// cores.
    pub fn add_records(&mut self, records: &[TxRecord]) {
        let mut todo: Vec<(&String, &Value)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for r in records {
            for (id, body) in &r.manifests {
                if !self.by_id.contains_key(id) && queued.insert(id) {
                    todo.push((id, body));
                }
            }
        }
        if todo.is_empty() {
            return;
        }
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(todo.len().div_ceil(64));
        let chunk = todo.len().div_ceil(threads.max(1));
        let checked: Vec<Vec<(String, Checked)>> = std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|(id, body)| ((*id).clone(), check(body)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        self.by_id.extend(checked.into_iter().flatten());
    }

    /// The checked manifest stored under `id`.
    pub fn get(&self, id: &str) -> Option<&Checked> {
        self.by_id.get(id)
    }

    /// How many manifests are held.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}
