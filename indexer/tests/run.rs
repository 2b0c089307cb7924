//! `brainctl-indexer run` as an operator runs it, against a real validator:
//! it serves, ingests a marketplace memo posted after start (a forged
//! cancel, refused with its reason), refuses a `rebuild --force` beside
//! it untouched, and stops cleanly on SIGTERM leaving a database whose
//! `state-hash` equals what it served; the RPC's URL and API key reach no
//! answer and no log line.

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

/// `brainctl-indexer run` against `rpc` on a free port, its database and
/// items in `dir`, logging at `level` to `stderr`: the process and its base URL.
fn run(
    rpc: &str,
    dir: &std::path::Path,
    level: &str,
    stderr: Stdio,
) -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["run", "--rpc", rpc, "--fs-store"])
        .arg(dir.join("items"))
        .arg("--db")
        .arg(dir.join("indexer.db"))
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--interval-ms",
            "200",
        ])
        .env("RUST_LOG", level)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    (child, format!("http://127.0.0.1:{port}"))
}

#[test]
fn run_serves_ingests_and_stops_on_sigterm() {
    let v = e2e::validator();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("indexer.db");
    let (mut child, base) = run(&v.rpc_url, dir.path(), "warn", Stdio::piped());
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

    // a `rebuild --force` beside the live writer is refused before it
    // touches anything: the log and the state are what they were
    let rebuilt = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["rebuild", "--force", "--rpc", &v.rpc_url, "--fs-store"])
        .arg(dir.path().join("items"))
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(!rebuilt.status.success(), "a rebuild beside a live writer");
    let said = String::from_utf8_lossy(&rebuilt.stderr);
    assert!(said.contains("another writer"), "{said}");
    std::thread::sleep(Duration::from_millis(600));
    let after = get(&format!("{base}/state")).unwrap();
    assert_eq!(after["state_hash"], served["state_hash"], "{after}");
    assert!(
        get(&format!("{base}/health")).unwrap()["transactions"].as_u64() >= Some(1),
        "the log kept"
    );

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

/// The RPC URL, API key included, reaches no answer and no log line: a
/// start against an RPC answering 502 fails without it; running, with the
/// RPC answering 502, polls fail and `/settle` answers 503, neither naming
/// it; the whole log holds no key.
#[test]
fn the_rpc_url_and_its_key_reach_no_answer_and_no_log() {
    use e2e::proxy::{Fault, FaultProxy};
    const KEY: &str = "SECRET-KEY-0123456789";
    let v = e2e::validator();
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&v.rpc_url);
    let rpc = format!("{}/?api-key={KEY}", proxy.url);
    let run = |log: &std::path::Path| {
        run(
            &rpc,
            dir.path(),
            "info",
            std::fs::File::create(log).unwrap().into(),
        )
    };

    proxy.set(Fault::Status(502));
    let refused_log = dir.path().join("refused.log");
    let (mut refused, _) = run(&refused_log);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = refused.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "a start on a 502 RPC never ended"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!status.success(), "no start without the RPC");
    let said = std::fs::read_to_string(&refused_log).unwrap();
    assert!(said.contains("502"), "the refusal says why: {said}");
    assert!(!said.contains(KEY), "the key in the refusal: {said}");

    proxy.set(Fault::None);
    let log = dir.path().join("run.log");
    let (mut child, base) = run(&log);
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(&format!("{base}/health")).is_none() {
        assert!(Instant::now() < deadline, "indexer did not serve");
        std::thread::sleep(Duration::from_millis(100));
    }
    proxy.set(Fault::Status(502));
    std::thread::sleep(Duration::from_secs(2));
    let rt = e2e::runtime();
    let api = e2e::indexer_api::Api {
        base: base.clone(),
        http: reqwest::Client::new(),
    };
    let who = Wallet::generate();
    let token = rt.block_on(api.sign_in(&who));
    let (code, body) = rt.block_on(api.post(
        "/listings/20261123-000000000abc/settle",
        serde_json::json!({"buyer_x25519_pubkey": who.address()}),
        Some(&token),
    ));
    assert_eq!(code, 503, "{body}");
    assert!(body.to_string().contains("502"), "it says why: {body}");
    assert!(
        !body.to_string().contains(KEY),
        "the key in an answer: {body}"
    );
    for path in ["/health", "/metrics", "/state"] {
        let text = rt.block_on(async {
            reqwest::get(format!("{base}{path}"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        });
        assert!(!text.contains(KEY), "the key in {path}: {text}");
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("502"),
        "the failed polls are logged: {logged}"
    );
    assert!(!logged.contains(KEY), "the key in the log: {logged}");
}
