//! `brainctl-indexer run` as an operator runs it, against a real validator:
//! it serves, ingests a marketplace memo posted after start (a forged
//! cancel, refused with its reason), and stops cleanly on SIGTERM leaving a
//! database whose `state-hash` equals what it served.

use node::chain::Signer;
use node::market::tx::post_memo;
use node::market::MemoOp;
use node::wallet::Wallet;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn get(url: &str) -> Option<Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async { reqwest::get(url).await.ok()?.json::<Value>().await.ok() })
}

#[test]
fn run_serves_ingests_and_stops_on_sigterm() {
    let v = e2e::validator();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("indexer.db");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["run", "--rpc", &v.rpc_url, "--fs-store"])
        .arg(dir.path().join("items"))
        .arg("--db")
        .arg(&db)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--interval-ms",
            "200",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = loop {
        if let Some(h) = get(&format!("{base}/health")) {
            break h;
        }
        assert!(Instant::now() < deadline, "indexer did not serve");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(health["cluster"], "localnet");

    let mallory = Wallet::generate();
    v.fund(&mallory.solana_keypair().pubkey(), 1);
    let rt = e2e::runtime();
    let op = MemoOp::Cancel {
        listing_id: "20261123-000000000abc".into(),
    };
    rt.block_on(post_memo(
        &v.chain(),
        &mallory,
        &op,
        &mallory.solana_keypair().pubkey(),
    ))
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let h = get(&format!("{base}/health")).unwrap();
        if h["transactions"].as_u64() >= Some(1) {
            break;
        }
        assert!(Instant::now() < deadline, "memo not ingested: {h}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let metrics = {
        let rt = e2e::runtime();
        rt.block_on(async {
            reqwest::get(format!("{base}/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    assert!(
        metrics.contains("brainctl_indexer_rejected_memos 1"),
        "{metrics}"
    );
    let served = get(&format!("{base}/state")).unwrap();

    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no clean stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");

    let out = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["--json", "state-hash", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stored: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stored["state_hash"], served["state_hash"]);
    assert_eq!(stored["rejected"], 1);
}
