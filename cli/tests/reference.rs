//! Round trip with the reference implementation (Python brainctl 2.8.0):
//! bytes we sign verify in it. Runs where its venv exists
//! (`localnet/install` creates it at ~/.cache/brainctl/ref-venv, or set
//! BRAINCTL_REF_VENV); under CI=true a missing venv is a failure.

mod util;

use e2e::{ref_python, RefBrain};
use util::Env;

#[test]
fn reference_verifies_what_we_sign() {
    let py = ref_python();
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
    let py = ref_python();
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

/// Memories land in the agent's own Python brainctl `brain.db` (created by
/// the reference's `init`): the reference's CLI lists exactly them in
/// their scope with their tags, its `validate` passes, a second import adds
/// nothing, and a bundle that does not verify writes nothing.
#[test]
fn import_writes_into_the_references_brain_db() {
    let py = ref_python();
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    e.ok(&[
        "memory",
        "add",
        "the cache key is the bundle hash",
        "-c",
        "lesson",
        "-t",
        "rust,cache",
    ]);
    e.ok(&[
        "memory",
        "add",
        "retry releases with backoff",
        "-c",
        "project",
    ]);
    e.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let brain = RefBrain::init(&e.path("agent"));
    let (db, home) = (&brain.db, &brain.home);
    let reference = |args: &[&str]| brain.json(args);
    let db_arg = db.to_str().unwrap();
    let scope = "imported:20261124-00000000beef";
    let import = |file: &str| {
        e.run(&[
            "--json",
            "import",
            file,
            "--into-brainctl-db",
            db_arg,
            "--scope",
            scope,
        ])
    };
    let first = import("b.signed.json");
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        first.json()["brainctl_db"]["inserted"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let listed = reference(&[
        "--agent",
        "marketplace-buyer",
        "memory",
        "list",
        "--scope",
        scope,
    ]);
    let rows = listed.as_array().expect("a JSON array of rows");
    let mut contents: Vec<&str> = rows
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    contents.sort();
    assert_eq!(
        contents,
        [
            "retry releases with backoff",
            "the cache key is the bundle hash"
        ]
    );
    let cached = rows
        .iter()
        .find(|r| r["content"] == "the cache key is the bundle hash")
        .unwrap();
    assert_eq!(cached["category"], "lesson");
    assert_eq!(cached["scope"], scope);
    // json.dumps's layout, as the reference's own `memory add` writes it
    assert_eq!(cached["tags"], r#"["rust", "cache"]"#);
    assert_eq!(reference(&["validate"])["valid"], true);
    // its full-text search finds them (on a copy: a search updates rows)
    let probe = home.join("probe.db");
    std::fs::copy(db, &probe).unwrap();
    let found = brain.json_on(
        &probe,
        &[
            "--agent",
            "marketplace-buyer",
            "memory",
            "search",
            "backoff",
            "--scope",
            scope,
        ],
    );
    let found: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(found, ["retry releases with backoff"]);

    // a Python process holding the write lock (WAL) is waited for, not
    // failed or corrupted: our import lands once it commits
    e.ok(&[
        "memory",
        "add",
        "written while python held the lock",
        "-c",
        "lesson",
    ]);
    e.ok(&["export", "--sign", "-o", "c.signed.json"]);
    let mut holder = std::process::Command::new(&py)
        .arg("-c")
        .arg(
            "import sqlite3, sys, time\n\
             con = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             con.execute('BEGIN IMMEDIATE')\n\
             print('locked', flush=True)\n\
             time.sleep(1.5)\n\
             con.execute('COMMIT')\n",
        )
        .arg(db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let started = std::time::Instant::now();
    let waited = import("c.signed.json");
    assert_eq!(waited.code, 0, "{}", waited.stderr);
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(500),
        "did not wait for the lock"
    );
    assert!(holder.wait().unwrap().success());
    // c.signed.json holds all three memories: two already there, one new
    assert_eq!(
        waited.json()["brainctl_db"]["inserted"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(waited.json()["brainctl_db"]["already_present"], 2);

    let again = import("c.signed.json");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        again.json()["brainctl_db"]["inserted"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(again.json()["brainctl_db"]["already_present"], 3);

    let text = std::fs::read_to_string(e.path("b.signed.json")).unwrap();
    std::fs::write(
        e.path("tampered.json"),
        text.replacen("backoff", "b4ckoff", 1),
    )
    .unwrap();
    assert_eq!(import("tampered.json").code, 1);
    let listed = reference(&[
        "--agent",
        "marketplace-buyer",
        "memory",
        "list",
        "--scope",
        scope,
    ]);
    assert_eq!(
        listed.as_array().unwrap().len(),
        3,
        "nothing written by a refused import"
    );
}
