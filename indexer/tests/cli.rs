//! The operator binary on recorded logs: a synthetic log → `replay-log`,
//! and `state-hash` / `export-log` on a database, all agreeing on one hash.

use indexer::engine::Indexer;
use indexer::fold::FoldConfig;
use indexer::store::SqliteStore;
use serde_json::Value;
use std::process::Command;

fn run(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn logs_databases_and_hashes_agree() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("trades.jsonl");
    let log_s = log.to_str().unwrap();
    let made = indexer::synth::trades(20, 3);
    assert_eq!(made.len(), 120);
    indexer::logfile::write(std::fs::File::create(&log).unwrap(), &made).unwrap();
    let replayed = run(&["--json", "replay-log", log_s, "--batch", "7"]);
    assert_eq!(replayed["memos"], 120);

    // the same records ingested into a database by the library
    let db = dir.path().join("indexer.db");
    let records = indexer::logfile::read(std::fs::File::open(&log).unwrap()).unwrap();
    let ix = Indexer::open(
        Box::new(SqliteStore::open(&db).unwrap()),
        FoldConfig::default(),
    )
    .unwrap();
    ix.ingest(records, 1_000, &[]).unwrap();
    drop(ix);
    let db_s = db.to_str().unwrap();
    let hashed = run(&["--json", "state-hash", "--db", db_s]);
    assert_eq!(hashed["state_hash"], replayed["state_hash"]);
    assert_eq!(
        (hashed["listings"].as_u64(), hashed["settlements"].as_u64()),
        (Some(20), Some(20))
    );

    let exported = dir.path().join("exported.jsonl");
    run(&[
        "--json",
        "export-log",
        "--db",
        db_s,
        exported.to_str().unwrap(),
    ]);
    let again = run(&["--json", "replay-log", exported.to_str().unwrap()]);
    assert_eq!(again["state_hash"], replayed["state_hash"]);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"tx\": 1}\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["replay-log", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("log file line 1"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["run", "--rpc", "not a url", "--fs-store", "/tmp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rpc not a url"));
}

/// A mistyped `--db` is refused (exit 2, naming the path and how to make
/// one), never created and hashed as if it were an empty market.
#[test]
fn a_missing_database_is_refused_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("indxer.db");
    let typo_s = typo.to_str().unwrap();
    for args in [
        vec!["state-hash", "--db", typo_s],
        vec!["export-log", "--db", typo_s, "out.jsonl"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
            .args(&args)
            .current_dir(dir.path())
            .env("RUST_LOG", "warn")
            .env_remove("BRAINCTL_INDEXER_PG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no indexer database at") && stderr.contains("indxer.db"),
            "{stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!typo.exists(), "{args:?} created the database");
    }
}
