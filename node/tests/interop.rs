//! Every artifact the reference (Python brainctl 2.8.0) produced, checked
//! byte for byte: bundles, manifests, wallets, the mint blob and the sealed
//! envelope. Fixtures live in `tests/fixtures/interop` (copied from
//! `shared/interop`) so a plain clone runs these.

use node::bundle::{
    self, canonical, manifest_hash, verify_file_text, verify_manifest, verify_text, Bundle, Filter,
    SignedBundle, Verdict,
};
use node::crypto::sha256;
use node::seal;
use node::wallet::{ed25519_pub_to_x25519, Wallet};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/interop")
        .join(name)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn expected() -> Value {
    serde_json::from_slice(&fixture("expected.json")).unwrap()
}

/// Loads a fixture wallet the way a user would: from a 0600 copy.
fn wallet(name: &str) -> Wallet {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, fixture(name)).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    Wallet::load(&p).unwrap()
}

#[test]
fn wallets_load_and_match_expected_pubkeys() {
    let e = expected();
    assert_eq!(wallet("wallet-seller.json").address(), e["seller_pubkey"]);
    assert_eq!(wallet("wallet-buyer.json").address(), e["buyer_pubkey"]);
}

#[test]
fn group_readable_wallet_is_refused_with_chmod_hint() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.json");
    std::fs::write(&p, fixture("wallet-seller.json")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = Wallet::load(&p).unwrap_err().to_string();
    assert!(err.contains("chmod 600"), "{err}");
    assert!(
        !err.contains("121, 181"),
        "error must not leak key bytes: {err}"
    );
}

#[test]
fn buyer_x25519_matches_libsodium() {
    let e = expected();
    let buyer = wallet("wallet-buyer.json");
    let want = e["sealed_envelope"]["buyer_x25519_pubkey_b58"]
        .as_str()
        .unwrap();
    assert_eq!(bs58::encode(buyer.x25519_public()).into_string(), want);
    assert_eq!(
        ed25519_pub_to_x25519(&buyer.pubkey()).unwrap(),
        buyer.x25519_public()
    );
}

#[test]
fn every_bundle_fixture_gives_its_expected_verdict_and_hash() {
    let e = expected();
    for (name, want) in e["bundles"].as_object().unwrap() {
        let text = fixture(&format!("{name}.signed.json"));
        let (report, verified) = verify_text(&text);
        // the one-pass path (`brainctl verify`) says exactly the same
        let fast = verify_file_text(&text);
        assert_eq!(
            (serde_json::to_value(&fast).unwrap(), fast.verdict),
            (serde_json::to_value(&report).unwrap(), report.verdict),
            "{name}: fast path"
        );
        let exit = want["verify_exit"].as_u64().unwrap() as u8;
        assert_eq!(
            report.verdict.exit_code(),
            exit,
            "{name}: {:?}",
            report.error
        );
        assert_eq!(verified.is_some(), exit == 0, "{name}");
        if let Some(h) = want.get("bundle_hash_hex") {
            assert_eq!(report.bundle_hash.as_deref(), h.as_str(), "{name}");
            let outer: Value = serde_json::from_slice(&text).unwrap();
            let canon = canonical(&outer["bundle"]);
            assert_eq!(
                hex::encode(sha256(&canon)),
                want["canonical_sha256"].as_str().unwrap(),
                "{name}"
            );
            assert_eq!(
                report.memories_count as u64,
                want["memories"].as_u64().unwrap(),
                "{name}"
            );
        }
        if exit != 0 {
            assert!(report.error.is_some(), "{name} must say why");
        }
    }
}

/// Rebuilds each valid bundle from typed rows, signs it with the fixture
/// wallet, and gets the reference's exact signature and file bytes.
#[test]
fn our_signing_reproduces_the_reference_bytes() {
    let seller = wallet("wallet-seller.json");
    for name in ["all", "scoped", "empty"] {
        let text = fixture(&format!("{name}.signed.json"));
        let outer: Value = serde_json::from_slice(&text).unwrap();
        let (_, verified) = verify_text(&text);
        let v = verified.unwrap();
        let f = &outer["bundle"]["filter_used"];
        let s = |k: &str| f[k].as_str().map(String::from);
        let typed = Bundle {
            version: 1,
            generated_at: outer["bundle"]["generated_at"].as_str().unwrap().into(),
            filter_used: Filter {
                agent_id: s("agent_id"),
                category: s("category"),
                scope: s("scope"),
                created_after: s("created_after"),
                created_before: s("created_before"),
                ids: f["ids"]
                    .as_array()
                    .map(|a| a.iter().map(|x| x.as_i64().unwrap()).collect()),
            },
            memories: v.memories().unwrap(),
        };
        assert_eq!(
            typed.canonical_bytes(),
            canonical(&outer["bundle"]),
            "{name}: typed canonical bytes"
        );
        let signed = SignedBundle::sign(typed, &seller, outer["signed_at"].as_str().unwrap());
        assert_eq!(
            signed.signature_b58,
            outer["signature_b58"].as_str().unwrap(),
            "{name}: signature"
        );
        let ours = signed.to_file_text();
        let theirs = String::from_utf8(text.clone()).unwrap();
        assert_eq!(ours, theirs.trim_end_matches('\n'), "{name}: file bytes");
    }
}

#[test]
fn malformed_inputs_never_panic_and_say_why() {
    for input in [&b""[..], b"{", b"[]", b"null", b"{\"version\":2}", b"{\"version\":1,\"bundle\":{}}",
        b"{\"version\":1,\"bundle\":{\"memories\":[1]},\"signature_b58\":\"x\",\"signer_pubkey_b58\":\"y\"}"] {
        let (report, verified) = verify_text(input);
        assert!(verified.is_none());
        assert!(report.error.is_some());
        assert_ne!(report.verdict, Verdict::Valid);
    }
    let (r, _) = verify_text(&fixture("malformed.signed.json"));
    assert_eq!(r.verdict, Verdict::Malformed);
    assert!(r.error.unwrap().contains("not valid JSON"));
}

#[test]
fn mint_blob_decrypts_to_the_bundle() {
    let e = expected();
    let key = seal::key_from_hex(std::str::from_utf8(&fixture("all.bundle.key")).unwrap()).unwrap();
    let plain = seal::decrypt_blob(&key, &fixture("all.bundle.enc")).unwrap();
    assert_eq!(
        hex::encode(sha256(&plain)),
        e["mint_blob"]["plaintext_sha256"].as_str().unwrap()
    );
    // and a blob we make decrypts with the same layout
    let ours = seal::encrypt_blob(&key, &plain).unwrap();
    assert_eq!(ours.len(), fixture("all.bundle.enc").len());
    assert_eq!(*seal::decrypt_blob(&key, &ours).unwrap(), *plain);
}

#[test]
fn sealed_envelope_opens_with_buyer_wallet() {
    use base64::Engine;
    let sealed = base64::engine::general_purpose::STANDARD
        .decode(
            String::from_utf8(fixture("envelope.sealed.b64"))
                .unwrap()
                .trim(),
        )
        .unwrap();
    assert_eq!(sealed.len(), seal::SEALED_KEY_LEN);
    let buyer = wallet("wallet-buyer.json");
    let key = seal::open_sealed_key(&buyer.x25519_secret(), &sealed).unwrap();
    assert_eq!(
        hex::encode(*key),
        String::from_utf8(fixture("all.bundle.key")).unwrap().trim()
    );
    let seller = wallet("wallet-seller.json");
    assert!(seal::open_sealed_key(&seller.x25519_secret(), &sealed).is_err());
}

#[test]
fn manifests_hash_and_verify_and_re_sign_identically() {
    let e = expected();
    for (name, field, signer_file) in [
        ("listing", "seller_pubkey", "wallet-seller.json"),
        ("offer", "buyer_pubkey", "wallet-buyer.json"),
        ("counter", "from_pubkey", "wallet-seller.json"),
    ] {
        let m: Value = serde_json::from_slice(&fixture(&format!("{name}.manifest.json"))).unwrap();
        let want = e["manifests"][name]["hash_hex"].as_str().unwrap();
        assert_eq!(hex::encode(manifest_hash(&m).unwrap()), want, "{name}");
        assert_eq!(
            hex::encode(verify_manifest(&m, field).unwrap()),
            want,
            "{name}"
        );
        let mut resigned = m.clone();
        bundle::sign_manifest(&mut resigned, &wallet(signer_file)).unwrap();
        assert_eq!(resigned["signature_b58"], m["signature_b58"], "{name}");
        // a one-character edit breaks it
        let mut edited = m.clone();
        edited["created_at"] = Value::String("2026-11-01T12:00:01+00:00".into());
        assert!(verify_manifest(&edited, field).is_err(), "{name}");
    }
}

#[test]
fn memos_parse_to_the_reference_fields() {
    use node::market::{MemoError, MemoOp};
    let text = String::from_utf8(fixture("memos.jsonl")).unwrap();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let memo = rec["memo"].as_str().unwrap();
        match (&rec["parsed"], MemoOp::parse(memo)) {
            (Value::Null, Err(MemoError::NotMarketplace)) => {}
            (want, Ok(op)) => {
                assert_eq!(&op.to_reference_json(), want, "{memo}");
                assert_eq!(op.to_string(), memo, "formatting is byte-identical");
            }
            (want, got) => panic!("{memo}: want {want}, got {got:?}"),
        }
        n += 1;
    }
    assert_eq!(n, 10);
}

/// A bundle the reference signed from `floats.brain.db`, whose floats
/// include values two 17-digit strings are equally near (-1149636667324797.25
/// prints as ...797.2 in Python: ties go to even). Ours verifies it, and
/// exporting the same database gives the very same file, byte for byte.
#[test]
fn floats_print_as_the_reference_signed_them() {
    let text = fixture("floats.signed.json");
    let report = verify_file_text(&text);
    assert!(report.ok, "{report:?}");
    assert!(verify_text(&text).0.ok);
    let theirs = String::from_utf8(text).unwrap();
    assert!(
        theirs.contains("-1149636667324797.2,"),
        "the tie is in the fixture"
    );
    let store = node::store::Store::open_read_only(&fixture_path("floats.brain.db")).unwrap();
    let export = node::export::export_signed(
        &store,
        &Wallet::from_seed(&std::array::from_fn(|i| i as u8)),
        &node::export::ExportOptions {
            filter: Filter::default(),
            allow_sensitive: false,
            generated_at: Some("2026-11-01T00:00:00+00:00".into()),
            signed_at: Some("2026-11-01T00:00:01+00:00".into()),
        },
    )
    .unwrap();
    assert_eq!(export.file_text, theirs.trim_end_matches('\n'));
}
