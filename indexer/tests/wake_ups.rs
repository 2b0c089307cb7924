//! `brainctl-indexer run`'s push notifications (on by default), and what
//! happens when they stop: with the websocket behind a proxy the test
//! cuts, a memo posted while the subscription is down is still served (the
//! gap is read as soon as a subscription is live again), long before the
//! poll interval; one posted while it is up is served in about the time
//! it takes to read it.

use node::chain::Signer;
use node::market::tx::post_memo;
use node::market::MemoOp;
use node::wallet::Wallet;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A TCP proxy to the validator's websocket that the test can cut (every
/// live connection dropped, new ones refused) and restore.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    _rt: tokio::runtime::Runtime,
}

impl Proxy {
    fn to(target: &str) -> Proxy {
        let rt = e2e::multi_thread_runtime();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let live: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (target, up2, live2) = (target.to_string(), up.clone(), live.clone());
        rt.spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                let conn = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                live2.lock().unwrap().push(conn);
            }
        });
        Proxy {
            port,
            up,
            live,
            _rt: rt,
        }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for conn in self.live.lock().unwrap().drain(..) {
            conn.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn get(url: &str) -> Option<Value> {
    let rt = e2e::runtime();
    rt.block_on(async { reqwest::get(url).await.ok()?.json::<Value>().await.ok() })
}

/// Waits until the indexer has folded `n` transactions; how long it took.
fn served(base: &str, n: u64, within: Duration) -> Result<Duration, Value> {
    let started = Instant::now();
    loop {
        let h = get(&format!("{base}/health")).unwrap_or(Value::Null);
        if h["transactions"].as_u64() >= Some(n) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > within {
            return Err(h);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_for_line(log: &std::path::Path, needle: &str, count: usize, within: Duration) {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.matches(needle).count() >= count {
            return;
        }
        assert!(
            started.elapsed() < within,
            "`{needle}` ({count}x) not logged within {within:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_dropped_subscription_loses_nothing_and_its_gap_is_read_when_it_returns() {
    let v = e2e::validator();
    let ws_target = v
        .ws_url
        .trim_start_matches("ws://")
        .trim_end_matches('/')
        .to_string();
    let proxy = Proxy::to(&ws_target);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("indexer.log");
    // polls a minute apart: only the notifications and the gap read can
    // serve anything within the test's waits
    let child = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args(["run", "--rpc", &v.rpc_url])
        .args(["--ws", &format!("ws://127.0.0.1:{}", proxy.port)])
        .arg("--fs-store")
        .arg(dir.path().join("items"))
        .arg("--db")
        .arg(dir.path().join("indexer.db"))
        .args(["--listen", "127.0.0.1:0", "--interval-ms", "60000"])
        .env("RUST_LOG", "warn,indexer=info,brainctl_indexer=info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _guard = e2e::KillOnDrop(child);
    let base = format!("http://{}", e2e::logged_listen_address(&log));
    served(&base, 0, Duration::from_secs(30)).expect("the indexer serves");
    wait_for_line(&log, "chain notifications live", 1, Duration::from_secs(30));

    let mallory = Wallet::generate();
    v.fund(&mallory.solana_keypair().pubkey(), 1);
    let rt = e2e::runtime();
    let forged_cancel = |n: u32| {
        let op = MemoOp::Cancel {
            listing_id: format!("20261126-00000000{n:04}"),
        };
        rt.block_on(post_memo(
            &v.chain(),
            &mallory,
            &op,
            &mallory.solana_keypair().pubkey(),
        ))
        .unwrap();
    };

    // subscribed: served as notified
    forged_cancel(1);
    let took = served(&base, 1, Duration::from_secs(10))
        .unwrap_or_else(|h| panic!("not served while subscribed: {h}"));
    eprintln!("served {took:?} after confirmation while subscribed");

    // the subscription dropped: nothing notified, nothing polled
    proxy.cut();
    wait_for_line(&log, "chain notifications", 2, Duration::from_secs(30));
    forged_cancel(2);
    std::thread::sleep(Duration::from_secs(3));
    let h = get(&format!("{base}/health")).unwrap();
    assert_eq!(
        h["transactions"], 1,
        "folded with no subscription and no poll due: {h}"
    );

    // back: the gap is read as soon as a subscription is live again
    proxy.restore();
    let took = served(&base, 2, Duration::from_secs(40))
        .unwrap_or_else(|h| panic!("the gap was not read: {h}"));
    eprintln!("the gap read {took:?} after the websocket came back");
    wait_for_line(&log, "chain notifications live", 2, Duration::from_secs(5));
}
