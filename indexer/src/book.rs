//! Manifests checked once: each body a memo references is parsed by its
//! schema and its signature verified (by the key the manifest names)
//! before the fold may use it. Verification is the expensive part of a
//! replay, so it runs here, in parallel, ahead of the sequential fold.
//!
//! Owns "is this body a valid signed manifest"; whether it matches its
//! memo (ids, hashes, signer) is the fold's job. Envelopes name no signer
//! field: they are verified here against the sellers of the listing
//! manifests held under the listing id they name, and the fold checks the
//! state's seller is among those (or verifies itself if not).

use crate::record::TxRecord;
use node::bundle::verify_manifest_by;
use node::market::envelope::ENVELOPE_SCHEMA;
use node::market::manifest::{Listing, Offer, COUNTER_SCHEMA, LISTING_SCHEMA, OFFER_SCHEMA};
use serde_json::Value;
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
    /// A signed release envelope, with the sellers (of listings the book
    /// holds under its listing id) whose signature it carries.
    Envelope {
        /// The body.
        body: Arc<Value>,
        /// Candidate signers that verified.
        signed_by: Vec<String>,
    },
    /// Another schema (e.g. the reference's bare envelope), kept as is.
    Other(Arc<Value>),
    /// Refused, with the reason.
    Invalid(String),
}

/// Checked manifests by Arweave item id. Persistent maps: a copy (a
/// refold works on one) costs O(1), whatever the market's size.
#[derive(Debug, Default, Clone)]
pub struct ManifestBook {
    by_id: imbl::HashMap<String, Checked>,
    /// Sellers of the valid listing manifests held, by listing id.
    sellers: imbl::HashMap<String, Vec<String>>,
}

/// Maps `f` over `items` on all cores (scoped threads, order kept).
fn par_map<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().div_ceil(64))
        .max(1);
    let chunk = items.len().div_ceil(threads).max(1);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(f).collect::<Vec<U>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("manifest check does not panic"))
            .collect()
    })
}

/// The signers among `candidates` whose signature the envelope carries.
fn envelope_signers(body: &Value, candidates: &[String]) -> Vec<String> {
    candidates
        .iter()
        .filter(|c| verify_manifest_by(body, c).is_ok())
        .cloned()
        .collect()
}

fn check(v: &Arc<Value>) -> Checked {
    let schema = v.get("schema").and_then(Value::as_str).unwrap_or_default();
    let res = match schema {
        LISTING_SCHEMA => Listing::from_shared(v.clone()).map(|l| Checked::Listing(Arc::new(l))),
        OFFER_SCHEMA => Offer::offer_from_shared(v.clone()).map(|o| Checked::Offer(Arc::new(o))),
        COUNTER_SCHEMA => {
            Offer::counter_from_shared(v.clone()).map(|o| Checked::Counter(Arc::new(o)))
        }
        ENVELOPE_SCHEMA => {
            return Checked::Envelope {
                body: v.clone(),
                signed_by: Vec::new(),
            }
        }
        _ => return Checked::Other(v.clone()),
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
        self.add_bodies(records.iter().flat_map(|r| &r.manifests));
    }

    /// Checks every body (by Arweave id) the book lacks, on all cores.
    pub fn add_bodies<'a>(
        &mut self,
        bodies: impl IntoIterator<Item = (&'a String, &'a Arc<Value>)>,
    ) {
        let mut todo: Vec<(&String, &Arc<Value>)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (id, body) in bodies {
            if !self.by_id.contains_key(id) && queued.insert(id) {
                todo.push((id, body));
            }
        }
        if todo.is_empty() {
            return;
        }
        // One pass on all cores. An envelope is tried against the sellers
        // of every listing body under its listing id, this batch's
        // included before they are verified: `signed_by` only ever holds
        // keys whose signature the envelope carries, and the fold
        // verifies by itself against any other seller, so where a
        // candidate came from never changes a verdict.
        // this batch's listing sellers, beside those already held (no copy
        // of the whole map per batch)
        let mut batch_sellers: imbl::HashMap<String, Vec<String>> = Default::default();
        for (_, body) in &todo {
            if body.get("schema").and_then(Value::as_str) == Some(LISTING_SCHEMA) {
                let field = |f: &str| body.get(f).and_then(Value::as_str).map(str::to_string);
                if let (Some(listing), Some(seller)) = (field("listing_id"), field("seller_pubkey"))
                {
                    let known = batch_sellers.entry(listing).or_default();
                    if !known.contains(&seller) {
                        known.push(seller);
                    }
                }
            }
        }
        let (held, batch) = (&self.sellers, &batch_sellers);
        let checked = par_map(&todo, |(id, body)| {
            let c = match check(body) {
                Checked::Envelope { body, .. } => {
                    let listing = body.get("listing_id").and_then(Value::as_str);
                    let mut of_listing: Vec<String> = Vec::new();
                    for known in [held, batch] {
                        for s in listing.and_then(|l| known.get(l)).into_iter().flatten() {
                            if !of_listing.contains(s) {
                                of_listing.push(s.clone());
                            }
                        }
                    }
                    let signed_by = envelope_signers(&body, &of_listing);
                    Checked::Envelope { body, signed_by }
                }
                other => other,
            };
            ((*id).clone(), c)
        });
        for (id, c) in checked {
            if let Checked::Listing(l) = &c {
                self.sellers
                    .entry(l.listing_id.clone())
                    .or_default()
                    .push(l.seller_pubkey.clone());
            }
            self.by_id.insert(id, c);
        }
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
