//! Export: select rows, refuse secrets, build and sign the bundle.
//!
//! Owns the order of the export pipeline: rows are read and laid out as the
//! file's text on one core while the other encodes them canonically,
//! hashes and scans them, a batch at a time; then the digest is signed.
//! Reads the store read-only; writing the file is the caller's.

use crate::bundle::{Bundle, CanonicalWriter, FileTextWriter, Filter, MemoryRow, SignedBundle};
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
    /// The file to write: `signed.to_file_text()`, laid out while the rows
    /// were read.
    pub file_text: String,
}

/// Memories with sensitive content among `bundle`'s rows.
pub fn find_sensitive(bundle: &Bundle) -> Vec<SensitiveMemory> {
    bundle.memories.iter().filter_map(sensitive_in).collect()
}

/// The kinds of secret or personal data in `row`'s content and tags.
fn sensitive_in(row: &MemoryRow) -> Option<SensitiveMemory> {
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
}

/// Rows handed from the reading core to the encoding core at a time
/// (~75 KiB of canonical bytes for typical memories).
const BATCH_ROWS: usize = 128;

/// What the encoding core returns: the digest of the canonical bytes, the
/// rows (for the signed bundle) and the scan's findings.
struct Encoded {
    digest: [u8; 32],
    rows: Vec<MemoryRow>,
    sensitive: Vec<SensitiveMemory>,
}

/// Encodes each batch canonically, hashes it and scans its rows, as the
/// batches arrive; the canonical bytes are never held whole.
fn encode_hash_scan(
    batches: std::sync::mpsc::Receiver<Vec<MemoryRow>>,
    filter: &Filter,
    generated_at: &str,
    version: i64,
) -> Encoded {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut buf = Vec::with_capacity(256 << 10);
    let mut w = CanonicalWriter::open(&mut buf, filter, generated_at);
    let (mut rows, mut sensitive) = (Vec::new(), Vec::new());
    for batch in batches {
        for row in &batch {
            w.row(&mut buf, row);
            sensitive.extend(sensitive_in(row));
        }
        hasher.update(&buf);
        buf.clear();
        rows.extend(batch);
    }
    w.close(&mut buf, version);
    hasher.update(&buf);
    Encoded {
        digest: hasher.finalize().into(),
        rows,
        sensitive,
    }
}

/// Builds, scans and signs an export, and lays out its file.
///
/// This thread reads the rows and writes the file's text; a second one
/// encodes, hashes and scans them a batch behind. Nothing is signed when
/// the scan finds secrets and `allow_sensitive` is off.
pub fn export_signed(
    store: &Store,
    wallet: &Wallet,
    opts: &ExportOptions,
) -> Result<Export, ExportError> {
    const VERSION: i64 = 1;
    let filter = &opts.filter;
    let generated_at = opts
        .generated_at
        .clone()
        .unwrap_or_else(crate::clock::now_iso);
    let (mut text, encoded) = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<MemoryRow>>(32);
        let encoder = scope.spawn(|| encode_hash_scan(rx, filter, &generated_at, VERSION));
        let mut text = Vec::with_capacity(1 << 20);
        let mut w = FileTextWriter::open_file(&mut text, VERSION, filter, &generated_at);
        let mut batch = Vec::with_capacity(BATCH_ROWS);
        let read = store.for_each_export_row(filter, |row| {
            w.row(&mut text, &row);
            batch.push(row);
            if batch.len() == BATCH_ROWS {
                // the encoder only stops by panicking, which join reports
                let _ = tx.send(std::mem::replace(
                    &mut batch,
                    Vec::with_capacity(BATCH_ROWS),
                ));
            }
        });
        if !batch.is_empty() {
            let _ = tx.send(batch);
        }
        drop(tx);
        let encoded = encoder.join().expect("the encoder does not panic");
        w.close(&mut text);
        read.map(|_| (text, encoded))
    })?;
    if !encoded.sensitive.is_empty() && !opts.allow_sensitive {
        return Err(ExportError::Sensitive(encoded.sensitive));
    }
    let signed_at = opts.signed_at.clone().unwrap_or_else(crate::clock::now_iso);
    let bundle = Bundle {
        version: VERSION,
        generated_at,
        filter_used: filter.clone(),
        memories: encoded.rows,
    };
    let signed = SignedBundle::sign_digest(bundle, encoded.digest, wallet, &signed_at);
    FileTextWriter::finish(
        &mut text,
        &signed.bundle_hash_hex,
        &signed.signature_b58,
        &signed.signer_pubkey_b58,
        &signed.signed_at,
    );
    let file_text = String::from_utf8(text).expect("ensure_ascii output is ASCII");
    Ok(Export {
        signed,
        sensitive: encoded.sensitive,
        file_text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewMemory;
    use proptest::prelude::*;

    fn options(filter: Filter, allow_sensitive: bool) -> ExportOptions {
        ExportOptions {
            filter,
            allow_sensitive,
            generated_at: Some("2026-11-01T00:00:00+00:00".into()),
            signed_at: Some("2026-11-01T00:00:01+00:00".into()),
        }
    }

    /// A store of `contents` (category cycling through two values).
    fn store_of(dir: &std::path::Path, contents: &[(String, f64)]) -> Store {
        let mut s = Store::open(&dir.join("b.db")).unwrap();
        for (i, (content, confidence)) in contents.iter().enumerate() {
            s.add_memory(&NewMemory {
                content: content.clone(),
                category: ["lesson", "project"][i % 2].into(),
                scope: "global".into(),
                confidence: *confidence,
                tags: vec![format!("t{i}"), "ünï \"q\"".into()],
                memory_type: "semantic".into(),
                agent_id: "default".into(),
            })
            .unwrap();
        }
        s
    }

    /// The streamed export equals the whole-bundle path: same rows, same
    /// hash (of `canonical_bytes`), same file text, and it verifies.
    fn assert_same_as_whole(store: &Store, filter: Filter) {
        let wallet = Wallet::from_seed(&[9u8; 32]);
        let export = export_signed(store, &wallet, &options(filter.clone(), true)).unwrap();
        let whole = Bundle {
            version: 1,
            generated_at: "2026-11-01T00:00:00+00:00".into(),
            filter_used: filter.clone(),
            memories: store.export_rows(&filter).unwrap(),
        };
        assert_eq!(export.signed.bundle, whole);
        let signed = SignedBundle::sign(whole, &wallet, "2026-11-01T00:00:01+00:00");
        assert_eq!(export.signed.bundle_hash_hex, signed.bundle_hash_hex);
        assert_eq!(export.file_text, signed.to_file_text());
        assert!(crate::bundle::verify_file_text(export.file_text.as_bytes()).ok);
    }

    #[test]
    fn batch_boundaries_and_empty_exports() {
        for n in [
            0,
            1,
            BATCH_ROWS - 1,
            BATCH_ROWS,
            BATCH_ROWS + 1,
            3 * BATCH_ROWS + 5,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let rows: Vec<(String, f64)> = (0..n)
                .map(|i| (format!("memory {i}\n\t\"x\""), 0.5))
                .collect();
            let s = store_of(dir.path(), &rows);
            assert_same_as_whole(&s, Filter::default());
            assert_same_as_whole(
                &s,
                Filter {
                    category: Some("project".into()),
                    ..Default::default()
                },
            );
            assert_same_as_whole(
                &s,
                Filter {
                    ids: Some(vec![]),
                    ..Default::default()
                },
            );
        }
    }

    #[test]
    fn secrets_refuse_the_export_and_name_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows: Vec<(String, f64)> = (0..300).map(|i| (format!("note {i}"), 0.5)).collect();
        rows[200].0 = "key AKIAIOSFODNN7EXAMPLE here".into();
        let s = store_of(dir.path(), &rows);
        let wallet = Wallet::from_seed(&[9u8; 32]);
        match export_signed(&s, &wallet, &options(Filter::default(), false)) {
            Err(ExportError::Sensitive(list)) => {
                assert_eq!(list.iter().map(|m| m.id).collect::<Vec<_>>(), vec![201]);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let allowed = export_signed(&s, &wallet, &options(Filter::default(), true)).unwrap();
        assert_eq!(allowed.sensitive.len(), 1);
        assert_eq!(allowed.signed.bundle.memories.len(), 300);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn streamed_export_equals_the_whole_bundle(
            rows in proptest::collection::vec(("\\PC{0,80}", -1.0e20f64..1.0e20), 0..300),
            ids in proptest::option::of(proptest::collection::vec(1i64..320, 0..40)),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let s = store_of(dir.path(), &rows);
            assert_same_as_whole(&s, Filter { ids, ..Default::default() });
        }
    }
}
