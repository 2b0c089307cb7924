//! Export: select rows, refuse secrets, build and sign the bundle.
//!
//! Owns the order of the export pipeline (read → scan → canonicalize →
//! hash → sign). Reads the store read-only; writing the file is the
//! caller's.

use crate::bundle::{Bundle, Filter, SignedBundle};
use crate::scan::sensitive::{self, SensitiveKind};
use crate::store::{Store, StoreError};
use crate::wallet::Wallet;
use serde::Serialize;

/// Export errors.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Secrets or PII found; nothing was signed.
    #[error("refusing to sign: {} memories contain secrets or personal data ({}); remove or retire them, narrow the filters, or pass --allow-sensitive", .0.len(), summarize(.0))]
    Sensitive(Vec<SensitiveMemory>),
}

/// A memory with sensitive findings.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SensitiveMemory {
    /// Row id.
    pub id: i64,
    /// Kinds found (deduplicated).
    pub kinds: Vec<SensitiveKind>,
}

fn summarize(list: &[SensitiveMemory]) -> String {
    list.iter()
        .take(10)
        .map(|m| {
            let kinds: Vec<String> = m
                .kinds
                .iter()
                .map(|k| {
                    serde_json::to_value(k)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                })
                .collect();
            format!("#{}: {}", m.id, kinds.join("+"))
        })
        .collect::<Vec<_>>()
        .join(", ")
        + if list.len() > 10 { ", ..." } else { "" }
}

/// Options of one export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Row selection.
    pub filter: Filter,
    /// Sign even if secrets/PII are found.
    pub allow_sensitive: bool,
    /// `generated_at`; now when `None`.
    pub generated_at: Option<String>,
    /// `signed_at`; now when `None`.
    pub signed_at: Option<String>,
}

/// A signed export.
#[derive(Debug, Clone)]
pub struct Export {
    /// The signed bundle (the bundle is inside).
    pub signed: SignedBundle,
    /// Memories that had findings (only non-empty with `allow_sensitive`).
    pub sensitive: Vec<SensitiveMemory>,
}

/// Memories with sensitive content among `bundle`'s rows.
pub fn find_sensitive(bundle: &Bundle) -> Vec<SensitiveMemory> {
    bundle
        .memories
        .iter()
        .filter_map(|row| {
            let mut kinds: Vec<SensitiveKind> = ["content", "tags"]
                .iter()
                .filter_map(|c| row.get(c).as_text())
                .flat_map(|t| sensitive::scan(t).into_iter().map(|f| f.kind))
                .collect();
            kinds.sort();
            kinds.dedup();
            (!kinds.is_empty()).then(|| SensitiveMemory {
                id: row.id().unwrap_or(-1),
                kinds,
            })
        })
        .collect()
}

/// Builds, scans and signs an export.
pub fn export_signed(
    store: &Store,
    wallet: &Wallet,
    opts: &ExportOptions,
) -> Result<Export, ExportError> {
    let memories = store.export_rows(&opts.filter)?;
    let bundle = Bundle {
        version: 1,
        generated_at: opts
            .generated_at
            .clone()
            .unwrap_or_else(crate::clock::now_iso),
        filter_used: opts.filter.clone(),
        memories,
    };
    // the scan and the canonical bytes' hash read the same rows: one on
    // each core (a refused export only wastes the hash)
    let (sensitive, digest) = std::thread::scope(|scope| {
        let scan = scope.spawn(|| find_sensitive(&bundle));
        let digest = crate::crypto::sha256(&bundle.canonical_bytes());
        (scan.join().expect("the scan does not panic"), digest)
    });
    if !sensitive.is_empty() && !opts.allow_sensitive {
        return Err(ExportError::Sensitive(sensitive));
    }
    let signed_at = opts.signed_at.clone().unwrap_or_else(crate::clock::now_iso);
    let signed = SignedBundle::sign_digest(bundle, digest, wallet, &signed_at);
    Ok(Export { signed, sensitive })
}
