//! Round trip with the reference implementation (Python brainctl 2.8.0):
//! bytes we sign verify in it. Runs where its venv exists
//! (`localnet/install` creates it at ~/.cache/brainctl/ref-venv, or set
//! BRAINCTL_REF_VENV); under CI=true a missing venv is a failure.

mod util;

use e2e::ref_python;
use util::Env;

#[test]
fn reference_verifies_what_we_sign() {
    let Some(py) = ref_python() else { return };
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    e.ok(&[
        "memory",
        "add",
        "ünïcode 😀 \"q\" \\ \u{7f} \u{1}",
        "-c",
        "lesson",
        "-t",
        "x,y",
        "--confidence",
        "0.1",
    ]);
    e.ok(&[
        "memory",
        "add",
        "plain",
        "-c",
        "project",
        "--confidence",
        "1e-7",
    ]);
    let ours = e
        .ok(&["export", "--sign", "-o", "ours.signed.json", "--json"])
        .json();
    let script = r#"
import json, sys
from agentmemory import signing
signed = json.load(open(sys.argv[1]))
print(json.dumps(signing.verify_bundle(signed)))
"#;
    let out = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(e.path("ours.signed.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(theirs["ok"], true, "{theirs}");
    assert_eq!(theirs["bundle_hash"], ours["bundle_hash"]);
    assert_eq!(theirs["memories_count"], 2);
}

/// Every memo we post, formatted by our grammar, reads the same in the
/// reference's own parser (`agentmemory.marketplace.parse_memo`).
#[test]
fn reference_parser_reads_our_memos() {
    use node::market::MemoOp;
    let Some(py) = ref_python() else { return };
    let pk = "9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj".to_string();
    let id43 = "A".repeat(43);
    let offer = "offer-20261123-a1b2c3d4e5f6".to_string();
    let listing = "20261123-0123456789ab".to_string();
    let ops = [
        MemoOp::List {
            listing_arweave_id: id43.clone(),
            bundle_hash: "ab".repeat(32),
        },
        MemoOp::Offer {
            listing_id: listing.clone(),
            offer_arweave_id: id43.clone(),
            buyer_pubkey: pk.clone(),
        },
        MemoOp::Counter {
            offer_id: offer.clone(),
            counter_arweave_id: id43.clone(),
            counterer_pubkey: pk.clone(),
        },
        MemoOp::Accept {
            offer_id: offer.clone(),
        },
        MemoOp::Reject {
            offer_id: offer.clone(),
        },
        MemoOp::Withdraw { offer_id: offer },
        MemoOp::Buy {
            listing_id: listing.clone(),
            buyer_x25519: pk.clone(),
        },
        MemoOp::Release {
            listing_id: listing.clone(),
            envelope_arweave_id: id43,
            minted_token_address: pk,
        },
        MemoOp::Cancel {
            listing_id: listing,
        },
    ];
    let memos: Vec<String> = ops.iter().map(ToString::to_string).collect();
    let script = r#"
import json, sys
from agentmemory.marketplace import parse_memo
print(json.dumps([parse_memo(m) for m in json.loads(sys.stdin.read())]))
"#;
    let mut child = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&memos).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (op, parsed) in ops.iter().zip(theirs) {
        assert_eq!(parsed, op.to_reference_json(), "{op}");
    }
}
