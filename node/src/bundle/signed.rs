//! Signed bundles: the outer file the reference writes, signing, and
//! verification that never trusts the claimed hash.
//!
//! Owns the outer format of PROTOCOL.md §2 and the verify verdicts
//! (valid / tampered / malformed). It never reads the store or the disk.

use super::canonical::{canonical, python_pretty};
use super::model::{Bundle, MemoryRow};
use crate::crypto::{sha256, verify_ed25519};
use crate::wallet::Wallet;
use serde::Serialize;
use serde_json::{Map, Value};

/// Outer format version.
pub const SIGNED_VERSION: i64 = 1;

/// A signed bundle as written to `*.signed.json`.
#[derive(Debug, Clone)]
pub struct SignedBundle {
    /// The whole outer object, in the reference's key order.
    pub outer: Value,
}

impl SignedBundle {
    /// Signs `bundle` with `wallet`; `signed_at` is ISO 8601.
    pub fn sign(bundle: &Bundle, wallet: &Wallet, signed_at: &str) -> SignedBundle {
        let digest = sha256(&bundle.canonical_bytes());
        Self::from_parts(bundle.to_value(), &digest, wallet, signed_at)
    }

    /// Wraps an already-canonicalized inner bundle whose SHA-256 is `digest`.
    pub fn from_parts(
        inner: Value,
        digest: &[u8; 32],
        wallet: &Wallet,
        signed_at: &str,
    ) -> SignedBundle {
        let sig = wallet.sign(digest);
        let mut m = Map::new();
        m.insert("version".into(), Value::from(SIGNED_VERSION));
        m.insert("bundle".into(), inner);
        m.insert("bundle_hash_hex".into(), Value::String(hex::encode(digest)));
        m.insert(
            "signature_b58".into(),
            Value::String(bs58::encode(sig).into_string()),
        );
        m.insert("signer_pubkey_b58".into(), Value::String(wallet.address()));
        m.insert("signed_at".into(), Value::String(signed_at.to_string()));
        SignedBundle {
            outer: Value::Object(m),
        }
    }

    /// The file text, laid out as the reference's `json.dumps(indent=2)`.
    pub fn to_file_text(&self) -> String {
        python_pretty(&self.outer)
    }

    /// The claimed hash (hex), as written in the file.
    pub fn bundle_hash_hex(&self) -> Option<&str> {
        self.outer.get("bundle_hash_hex").and_then(Value::as_str)
    }
}

/// How a verification ended; maps onto the CLI's exit codes 0/1/2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Hash recomputed and signature valid.
    Valid,
    /// The bytes were edited or the signature does not match.
    Tampered,
    /// Not a signed bundle at all (unparsable, missing fields, bad types).
    Malformed,
}

impl Verdict {
    /// CLI exit code: 0 valid, 1 tampered, 2 malformed.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Valid => 0,
            Verdict::Tampered => 1,
            Verdict::Malformed => 2,
        }
    }
}

/// The result of [`verify_text`], shaped like the reference's verify dict.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// True only for [`Verdict::Valid`].
    pub ok: bool,
    /// The verdict.
    #[serde(skip)]
    pub verdict: Verdict,
    /// The recomputed hash (never the claimed one), when computable.
    pub bundle_hash: Option<String>,
    /// The claimed signer.
    pub signer_pubkey: Option<String>,
    /// Number of memories in the bundle.
    pub memories_count: usize,
    /// The claimed signing time.
    pub signed_at: Option<String>,
    /// Why it is not valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl VerifyReport {
    fn fail(verdict: Verdict, error: impl Into<String>) -> Self {
        VerifyReport {
            ok: false,
            verdict,
            bundle_hash: None,
            signer_pubkey: None,
            memories_count: 0,
            signed_at: None,
            error: Some(error.into()),
        }
    }
}

/// A verified bundle, ready to import.
#[derive(Debug, Clone)]
pub struct VerifiedBundle {
    /// Recomputed SHA-256 of the canonical inner bundle.
    pub bundle_hash: [u8; 32],
    /// The signer's base58 pubkey.
    pub signer: String,
    /// The rows.
    pub memories: Vec<MemoryRow>,
    /// The inner bundle as parsed.
    pub inner: Value,
}

/// Verifies a signed bundle file's text. Never panics on any input.
pub fn verify_text(text: &[u8]) -> (VerifyReport, Option<VerifiedBundle>) {
    let outer: Value = match serde_json::from_slice(text) {
        Ok(v) => v,
        Err(e) => {
            return (
                VerifyReport::fail(Verdict::Malformed, format!("not valid JSON: {e}")),
                None,
            )
        }
    };
    verify_value(&outer)
}

/// Verifies a parsed signed bundle.
pub fn verify_value(outer: &Value) -> (VerifyReport, Option<VerifiedBundle>) {
    let Some(obj) = outer.as_object() else {
        return (
            VerifyReport::fail(Verdict::Malformed, "signed bundle is not a JSON object"),
            None,
        );
    };
    let field = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let mut report = VerifyReport {
        ok: false,
        verdict: Verdict::Malformed,
        bundle_hash: None,
        signer_pubkey: field("signer_pubkey_b58"),
        memories_count: 0,
        signed_at: field("signed_at"),
        error: None,
    };
    match obj.get("version") {
        Some(v) if v.as_i64() == Some(SIGNED_VERSION) => {}
        other => {
            report.error = Some(format!(
                "unsupported bundle version: {}",
                other.unwrap_or(&Value::Null)
            ));
            return (report, None);
        }
    }
    let (Some(inner), Some(sig_b58), Some(pub_b58)) = (
        obj.get("bundle").filter(|b| b.is_object()),
        field("signature_b58"),
        field("signer_pubkey_b58"),
    ) else {
        report.error =
            Some("malformed signed bundle: missing bundle/signature_b58/signer_pubkey_b58".into());
        return (report, None);
    };
    let memories = match inner.get("memories") {
        Some(Value::Array(items)) => items,
        _ => {
            report.error = Some("malformed bundle: `memories` is not an array".into());
            return (report, None);
        }
    };
    report.memories_count = memories.len();
    let digest = sha256(&canonical(inner));
    let actual_hex = hex::encode(digest);
    report.bundle_hash = Some(actual_hex.clone());
    report.verdict = Verdict::Tampered;
    if let Some(claimed) = obj.get("bundle_hash_hex").and_then(Value::as_str) {
        if claimed != actual_hex {
            report.error = Some(format!(
                "bundle tampered: hash mismatch (claimed={}..., actual={}...)",
                claimed.get(..16).unwrap_or(claimed),
                &actual_hex[..16]
            ));
            return (report, None);
        }
    }
    if let Err(e) = verify_ed25519(&pub_b58, &sig_b58, &digest) {
        report.error = Some(e.to_string());
        return (report, None);
    }
    let rows: Result<Vec<MemoryRow>, String> = memories.iter().map(MemoryRow::from_value).collect();
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            report.verdict = Verdict::Malformed;
            report.error = Some(format!("malformed bundle: {e}"));
            return (report, None);
        }
    };
    report.ok = true;
    report.verdict = Verdict::Valid;
    let verified = VerifiedBundle {
        bundle_hash: digest,
        signer: pub_b58,
        memories: rows,
        inner: inner.clone(),
    };
    (report, Some(verified))
}
