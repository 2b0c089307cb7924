//! Import: verify a signed bundle, scan for prompt injection, and insert
//! its rows into a quarantine scope with provenance, exactly once.
//!
//! Owns the import policy (verify first, nothing written on failure,
//! default scope `imported:<hash prefix>`). SQL stays in `store`.

use crate::bundle::{verify_text, MemoryRow, VerifyReport};
use crate::scan::injection;
use crate::store::{ImportOutcome, ImportRow, Store, StoreError};
use serde::Serialize;

/// Import errors.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The bundle did not verify; nothing was written.
    #[error("bundle did not verify, nothing imported: {}", .0.error.as_deref().unwrap_or("invalid"))]
    Invalid(Box<VerifyReport>),
    /// A verified bundle whose rows are not memory rows.
    #[error("bundle rows are not memory rows, nothing imported: {0}")]
    Malformed(String),
    /// Writing failed (the transaction rolled back).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A row flagged by the injection scan.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SuspiciousRow {
    /// Its id in the bundle.
    pub origin_id: Option<i64>,
    /// Its new id here.
    pub id: Option<i64>,
    /// Pattern names matched.
    pub patterns: Vec<&'static str>,
}

/// What an import did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// The bundle's (recomputed) hash.
    pub bundle_hash: String,
    /// The signer.
    pub signer: String,
    /// Store outcome (scope, inserted ids, or already imported).
    #[serde(flatten)]
    pub outcome: ImportOutcome,
    /// Rows flagged for review.
    pub suspicious: Vec<SuspiciousRow>,
}

/// Default quarantine scope for a bundle.
pub fn default_scope(bundle_hash_hex: &str) -> String {
    format!(
        "imported:{}",
        &bundle_hash_hex[..12.min(bundle_hash_hex.len())]
    )
}

/// Verifies `text` as a signed bundle and imports it into `scope`
/// (default [`default_scope`]). `source` is recorded (e.g. the listing id).
pub fn import_signed(
    store: &mut Store,
    text: &[u8],
    scope: Option<&str>,
    source: Option<&str>,
) -> Result<ImportReport, ImportError> {
    let (report, verified) = verify_text(text);
    let Some(v) = verified else {
        return Err(ImportError::Invalid(Box::new(report)));
    };
    let memories = v.memories().map_err(ImportError::Malformed)?;
    import_rows(
        store,
        hex::encode(v.bundle_hash),
        v.signer,
        &memories,
        scope,
        source,
    )
}

/// Verifies `text` as a signed bundle and writes its memories into the
/// Python brainctl `brain.db` at `path` (see [`crate::brainctl_db`]), in
/// `scope` (default [`default_scope`]). Nothing is written unless the
/// bundle verifies.
pub fn import_signed_into_brain_db(
    path: &std::path::Path,
    text: &[u8],
    scope: Option<&str>,
) -> Result<crate::brainctl_db::BrainDbReport, BrainDbImportError> {
    let (report, verified) = verify_text(text);
    let Some(v) = verified else {
        return Err(ImportError::Invalid(Box::new(report)).into());
    };
    let memories = v.memories().map_err(ImportError::Malformed)?;
    let scope = scope.map_or_else(
        || default_scope(&hex::encode(v.bundle_hash)),
        str::to_string,
    );
    Ok(crate::brainctl_db::import_into(path, &memories, &scope)?)
}

/// Why an import into a brain.db wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum BrainDbImportError {
    /// The bundle (verification, shape).
    #[error(transparent)]
    Bundle(#[from] ImportError),
    /// The database.
    #[error(transparent)]
    Db(#[from] crate::brainctl_db::BrainDbError),
}

/// The memories of a decrypted *inner* bundle bought on the marketplace:
/// its bytes must hash to `expected_hash_hex` (the hash the seller signed
/// in the listing) and be in canonical form.
fn inner_memories(inner: &[u8], expected_hash_hex: &str) -> Result<Vec<MemoryRow>, ImportError> {
    let got = hex::encode(crate::crypto::sha256(inner));
    if got != expected_hash_hex {
        return Err(ImportError::Malformed(format!(
            "bundle hash {got} is not the listed {expected_hash_hex}"
        )));
    }
    let value: serde_json::Value = serde_json::from_slice(inner)
        .map_err(|e| ImportError::Malformed(format!("not JSON: {e}")))?;
    if crate::bundle::canonical(&value) != inner {
        return Err(ImportError::Malformed(
            "bundle bytes are not in canonical form".into(),
        ));
    }
    match value.get("memories") {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(MemoryRow::from_value)
            .collect::<Result<_, _>>()
            .map_err(ImportError::Malformed),
        _ => Err(ImportError::Malformed("`memories` is not an array".into())),
    }
}

/// Imports a decrypted *inner* bundle bought on the marketplace (checked
/// by `inner_memories`'s rules). `signer` is the seller.
pub fn import_inner(
    store: &mut Store,
    inner: &[u8],
    expected_hash_hex: &str,
    signer: &str,
    scope: Option<&str>,
    source: Option<&str>,
) -> Result<ImportReport, ImportError> {
    let memories = inner_memories(inner, expected_hash_hex)?;
    import_rows(
        store,
        expected_hash_hex.to_string(),
        signer.to_string(),
        &memories,
        scope,
        source,
    )
}

/// Writes a decrypted *inner* bundle (checked as by [`import_inner`]) into
/// the Python brainctl `brain.db` at `path`, in `scope`.
pub fn import_inner_into_brain_db(
    path: &std::path::Path,
    inner: &[u8],
    expected_hash_hex: &str,
    scope: &str,
) -> Result<crate::brainctl_db::BrainDbReport, BrainDbImportError> {
    let memories = inner_memories(inner, expected_hash_hex)?;
    Ok(crate::brainctl_db::import_into(path, &memories, scope)?)
}

fn import_rows(
    store: &mut Store,
    hash_hex: String,
    signer: String,
    memories: &[MemoryRow],
    scope: Option<&str>,
    source: Option<&str>,
) -> Result<ImportReport, ImportError> {
    let scope = scope.map_or_else(|| default_scope(&hash_hex), str::to_string);
    let scan = |row: &MemoryRow| -> Vec<&'static str> {
        ["content", "tags"]
            .iter()
            .filter_map(|c| row.get(c).as_text())
            .flat_map(injection::scan)
            .collect()
    };
    let rows: Vec<ImportRow> = memories
        .iter()
        .map(|row| {
            let hits = scan(row);
            ImportRow {
                row: row.clone(),
                suspicious: (!hits.is_empty())
                    .then(|| serde_json::to_string(&hits).expect("strings serialize")),
            }
        })
        .collect();
    let outcome = store.import_rows(&hash_hex, &signer, &scope, source, &rows)?;
    // the new ids follow the rows inserted, in order (held ones skipped)
    let mut new_ids = outcome.ids.iter().copied();
    let row_ids: Vec<Option<i64>> = rows
        .iter()
        .map(|r| match r.row.id() {
            Some(o) if outcome.already_held.contains(&o) => None,
            _ if outcome.inserted => new_ids.next(),
            _ => None,
        })
        .collect();
    let suspicious = rows
        .iter()
        .zip(row_ids)
        .filter(|(r, _)| r.suspicious.is_some())
        .map(|(r, id)| SuspiciousRow {
            origin_id: r.row.id(),
            id,
            patterns: scan(&r.row),
        })
        .collect();
    Ok(ImportReport {
        bundle_hash: hash_hex,
        signer,
        outcome,
        suspicious,
    })
}
