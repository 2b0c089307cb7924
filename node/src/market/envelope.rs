//! The release envelope (PROTOCOL.md §7, extension and fix): a manifest
//! signed by the seller that binds the sealed bundle key to one listing,
//! one buyer, one buy transaction, one bundle hash and the minted token.
//! The sealed key is under two names: `sealed_key_b64` (ours) and
//! `envelope_b64` (what the reference's buyer reads). Readers also accept
//! the reference's envelopes (its unsigned JSON with `envelope_b64`, or
//! just the base64 sealed key); their only proof is that the key then decrypts a blob to the
//! listing's bundle hash, which the buyer always checks.

use crate::bundle::{sign_manifest, verify_manifest_by, ManifestError};
use crate::seal::{open_sealed_key, seal_to, BlobKey, SealError, SEALED_KEY_LEN};
use crate::wallet::Wallet;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

/// Schema of envelopes.
pub const ENVELOPE_SCHEMA: &str = "brainctl-marketplace/v1/envelope";

/// What the buyer expects an envelope to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The listing bought.
    pub listing_id: &'a str,
    /// The seller (who must have signed).
    pub seller: &'a str,
    /// The buyer (us).
    pub buyer: &'a str,
    /// Our buy transaction.
    pub buy_signature: &'a str,
    /// The listing's bundle hash.
    pub bundle_hash: &'a str,
}

/// Envelope errors.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    /// Not JSON of the envelope schema nor a bare sealed key.
    #[error("not an envelope: {0}")]
    Malformed(&'static str),
    /// A binding field differs from what the buyer expects.
    #[error("envelope field `{field}` is {got:?}, expected {want:?}")]
    Mismatch {
        /// Field.
        field: &'static str,
        /// Expected.
        want: String,
        /// Found.
        got: String,
    },
    /// Signature.
    #[error("envelope signature: {0}")]
    Signature(#[from] ManifestError),
    /// Sealing.
    #[error(transparent)]
    Seal(#[from] SealError),
}

/// Builds and signs an envelope sealing `key` to `buyer_x25519`.
#[allow(clippy::too_many_arguments)]
pub fn seal_envelope(
    seller: &Wallet,
    listing_id: &str,
    buyer: &str,
    buyer_x25519: &[u8; 32],
    buy_signature: &str,
    bundle_hash: &str,
    minted_token: &str,
    key: &[u8; 32],
) -> Result<Value, EnvelopeError> {
    let sealed = seal_to(buyer_x25519, key)?;
    let mut m = json!({
        "schema": ENVELOPE_SCHEMA,
        "listing_id": listing_id,
        "buyer_pubkey": buyer,
        "buy_signature": buy_signature,
        "bundle_hash": bundle_hash,
        "sealed_key_b64": STANDARD.encode(&sealed),
        // the same sealed key under the name the reference's buyer reads
        // (`marketplace_buy.fetch_and_decrypt_envelope`)
        "envelope_b64": STANDARD.encode(sealed),
        "minted_token": minted_token,
    });
    sign_manifest(&mut m, seller)?;
    Ok(m)
}

/// Opens an envelope body (signed manifest or bare base64 sealed key) with
/// the buyer's wallet, checking every binding of a signed one.
/// Returns the key and whether it came from a signed envelope.
pub fn open_envelope(
    body: &[u8],
    buyer: &Wallet,
    want: &Expected<'_>,
) -> Result<(BlobKey, bool), EnvelopeError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| EnvelopeError::Malformed("not UTF-8"))?
        .trim();
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if v.get("schema").and_then(Value::as_str) != Some(ENVELOPE_SCHEMA) {
            return Err(EnvelopeError::Malformed("JSON without the envelope schema"));
        }
        if v.get("signature_b58").is_none() {
            return open_reference_envelope(&v, buyer, want);
        }
        verify_manifest_by(&v, want.seller)?;
        bound_to(
            &v,
            &[
                ("listing_id", want.listing_id),
                ("buyer_pubkey", want.buyer),
                ("buy_signature", want.buy_signature),
                ("bundle_hash", want.bundle_hash),
            ],
        )?;
        let sealed_b64 = v
            .get("sealed_key_b64")
            .and_then(Value::as_str)
            .ok_or(EnvelopeError::Malformed("no sealed_key_b64"))?;
        return Ok((open_b64(sealed_b64, buyer)?, true));
    }
    Ok((open_b64(text, buyer)?, false))
}

/// The reference seller's envelope (`marketplace_listen.py`): unsigned
/// JSON naming the listing and the buyer, the sealed key in
/// `envelope_b64`. As unproven as a bare one (only the blob's hash proves
/// the key), but its listing and buyer must be ours.
fn open_reference_envelope(
    v: &Value,
    buyer: &Wallet,
    want: &Expected<'_>,
) -> Result<(BlobKey, bool), EnvelopeError> {
    bound_to(
        v,
        &[
            ("listing_id", want.listing_id),
            ("buyer_pubkey", want.buyer),
        ],
    )?;
    let sealed_b64 =
        v.get("envelope_b64")
            .and_then(Value::as_str)
            .ok_or(EnvelopeError::Malformed(
                "an unsigned envelope without envelope_b64",
            ))?;
    Ok((open_b64(sealed_b64, buyer)?, false))
}

/// Each of `fields` of `v` is the value the buyer expects.
fn bound_to(v: &Value, fields: &[(&'static str, &str)]) -> Result<(), EnvelopeError> {
    for &(field, expected) in fields {
        let got = v.get(field).and_then(Value::as_str).unwrap_or_default();
        if got != expected {
            return Err(EnvelopeError::Mismatch {
                field,
                want: expected.into(),
                got: got.chars().take(100).collect(),
            });
        }
    }
    Ok(())
}

fn open_b64(b64: &str, buyer: &Wallet) -> Result<BlobKey, EnvelopeError> {
    let sealed = STANDARD
        .decode(b64.trim())
        .map_err(|_| EnvelopeError::Malformed("sealed key is not base64"))?;
    if sealed.len() != SEALED_KEY_LEN {
        return Err(EnvelopeError::Malformed("sealed key is not 80 bytes"));
    }
    Ok(open_sealed_key(&buyer.x25519_secret(), &sealed)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (Wallet, Wallet, Value) {
        let seller = Wallet::from_seed(&[1u8; 32]);
        let buyer = Wallet::from_seed(&[2u8; 32]);
        let env = seal_envelope(
            &seller,
            "20261101-0123456789ab",
            &buyer.address(),
            &buyer.x25519_public(),
            "BUYSIG",
            &"ab".repeat(32),
            "MINT",
            &[9u8; 32],
        )
        .unwrap();
        (seller, buyer, env)
    }

    fn expected<'a>(seller: &'a str, buyer: &'a str, hash: &'a str) -> Expected<'a> {
        Expected {
            listing_id: "20261101-0123456789ab",
            seller,
            buyer,
            buy_signature: "BUYSIG",
            bundle_hash: hash,
        }
    }

    #[test]
    fn buyer_opens_a_signed_envelope() {
        let (seller, buyer, env) = setup();
        let hash = "ab".repeat(32);
        let (s, b) = (seller.address(), buyer.address());
        let (key, signed) =
            open_envelope(env.to_string().as_bytes(), &buyer, &expected(&s, &b, &hash)).unwrap();
        assert_eq!((*key, signed), ([9u8; 32], true));
    }

    #[test]
    fn the_reference_reads_our_envelope_and_we_read_the_references() {
        let (seller, buyer, env) = setup();
        assert_eq!(env["envelope_b64"], env["sealed_key_b64"]);
        let hash = "ab".repeat(32);
        let (s, b) = (seller.address(), buyer.address());
        let want = expected(&s, &b, &hash);
        let reference = json!({
            "schema": ENVELOPE_SCHEMA,
            "listing_id": "20261101-0123456789ab",
            "buyer_pubkey": b,
            "envelope_b64": env["envelope_b64"],
            "created_at": "2026-11-28T00:00:00Z",
        });
        let (key, signed) = open_envelope(reference.to_string().as_bytes(), &buyer, &want).unwrap();
        assert_eq!((*key, signed), ([9u8; 32], false));
        let mut other = reference.clone();
        other["buyer_pubkey"] = Wallet::from_seed(&[4u8; 32]).address().into();
        assert!(matches!(
            open_envelope(other.to_string().as_bytes(), &buyer, &want),
            Err(EnvelopeError::Mismatch {
                field: "buyer_pubkey",
                ..
            })
        ));
    }

    #[test]
    fn every_binding_is_checked() {
        let (seller, buyer, env) = setup();
        let hash = "ab".repeat(32);
        let (s, b) = (seller.address(), buyer.address());
        let want = expected(&s, &b, &hash);
        for (field, bad) in [
            ("listing_id", "20261101-ffffffffffff"),
            ("buy_signature", "OTHER"),
            ("bundle_hash", "00"),
        ] {
            let mut e = env.clone();
            e[field] = bad.into();
            // re-signed by the seller: still refused, the binding is wrong
            crate::bundle::sign_manifest(&mut e, &seller).unwrap();
            assert!(
                matches!(
                    open_envelope(e.to_string().as_bytes(), &buyer, &want),
                    Err(EnvelopeError::Mismatch { .. })
                ),
                "{field}"
            );
        }
        let mut forged = env.clone();
        forged["minted_token"] = "X".into();
        assert!(matches!(
            open_envelope(forged.to_string().as_bytes(), &buyer, &want),
            Err(EnvelopeError::Signature(_))
        ));
        let mallory = Wallet::from_seed(&[3u8; 32]);
        let m = mallory.address();
        assert!(
            open_envelope(env.to_string().as_bytes(), &buyer, &expected(&s, &m, &hash)).is_err(),
            "for another buyer"
        );
        assert!(matches!(
            open_envelope(
                env.to_string().as_bytes(),
                &mallory,
                &expected(&s, &b, &hash)
            ),
            Err(EnvelopeError::Seal(_))
        ));
        assert!(matches!(
            open_envelope(b"{\"schema\":\"x\"}", &buyer, &want),
            Err(EnvelopeError::Malformed(_))
        ));
        assert!(matches!(
            open_envelope(b"not base64!", &buyer, &want),
            Err(EnvelopeError::Malformed(_))
        ));
    }

    #[test]
    fn reference_bare_envelope_is_accepted() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/interop/");
        let body = std::fs::read(format!("{dir}envelope.sealed.b64")).unwrap();
        let keystore = crate::wallet::parse_keystore(
            &std::fs::read(format!("{dir}wallet-buyer.json")).unwrap(),
        )
        .unwrap();
        let buyer = Wallet::from_keypair_bytes(&keystore).unwrap();
        let want = Expected {
            listing_id: "",
            seller: "",
            buyer: "",
            buy_signature: "",
            bundle_hash: "",
        };
        let (key, signed) = open_envelope(&body, &buyer, &want).unwrap();
        assert!(!signed);
        assert_eq!(
            hex::encode(*key),
            std::fs::read_to_string(format!("{dir}all.bundle.key"))
                .unwrap()
                .trim()
        );
    }
}
