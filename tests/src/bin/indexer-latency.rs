//! Benchmark (not a test): how soon after its `list` transaction is
//! confirmed (the earlier of a confirmed `logsSubscribe` notification and
//! the sender's status poll seeing it) a new listing is served by `GET /listings/{id}` of
//! `brainctl-indexer run` (the binary, as operators run it, defaults but
//! a free port), on a local validator: with the chain's push
//! notifications (the default, at the default 1 s interval and at 10 s)
//! and polling only (`--no-wake-ups`), in the same run. N listings each,
//! one at a time, a random pause between them (so they do not line up
//! with the poll interval).
//!
//! `cargo run -p e2e --bin indexer-latency -- [--listings N]
//! [--indexer PATH] [--only TEXT]` (default 20; the brainctl-indexer
//! binary next to this one unless `--indexer`; only the phases whose name
//! contains TEXT). Prints one JSON line per phase; with
//! `INDEXER_LATENCY_LOG=PATH` each phase's indexer log (at `RUST_LOG`) is
//! kept at PATH.<the phase's name, dashed>.

use e2e::percentile;
use node::arweave::{FsStore, Uploader};
use node::market::manifest::{build_listing, NewListing, LISTING_SCHEMA};
use node::market::tx::post_memo;
use node::market::MemoOp;
use node::wallet::Wallet;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The indexer process, killed on drop (a panic leaves nothing running).
struct Service(std::process::Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Args {
    listings: usize,
    indexer: PathBuf,
    /// Only the phases whose name contains this.
    only: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        listings: 20,
        indexer: std::env::current_exe()
            .expect("current exe")
            .with_file_name("brainctl-indexer"),
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--listings" => {
                a.listings = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--listings takes a number")
            }
            "--indexer" => a.indexer = it.next().expect("--indexer takes a path").into(),
            "--only" => a.only = Some(it.next().expect("--only takes part of a phase name")),
            other => panic!("unknown argument {other} (see the module doc)"),
        }
    }
    a
}

/// One phase: an indexer (with `extra` flags), `n` listings, the ms from
/// each list confirmation to the API serving it.
fn phase(a: &Args, name: &str, extra: &[&str]) -> serde_json::Value {
    let v = e2e::validator();
    let rt = e2e::multi_thread_runtime();
    let dir = tempfile::tempdir().expect("dir");
    let items = dir.path().join("items");
    // one log per phase: `INDEXER_LATENCY_LOG`.<the phase's name>
    let log = std::env::var_os("INDEXER_LATENCY_LOG")
        .map(|p| {
            let mut p = p;
            let slug: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == ' ')
                .collect();
            p.push(format!(".{}", slug.replace(' ', "-")));
            PathBuf::from(p)
        })
        .unwrap_or_else(|| dir.path().join("indexer.log"));
    let service = Service(
        Command::new(&a.indexer)
            .args(["run", "--rpc", v.rpc_url.as_str(), "--fs-store"])
            .arg(&items)
            .arg("--db")
            .arg(dir.path().join("indexer.db"))
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn,brainctl_indexer=info".into()),
            )
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("brainctl-indexer runs"),
    );
    let base = format!("http://{}", e2e::logged_listen_address(&log));
    let seller = Wallet::generate();
    v.fund(&node::chain::Signer::pubkey(&seller.solana_keypair()), 5);
    // when the chain's push notifications (logsSubscribe at confirmed,
    // as the indexer subscribes) report each of the seller's transactions:
    // a listing's clock starts at the earlier of that and its `send`
    // returning (which learns of confirmation by polling statuses), so an
    // indexer woken by the same notification is not flattered
    let notified: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watcher = {
        let (ws, seen) = (v.ws_url.clone(), notified.clone());
        let who = node::chain::Signer::pubkey(&seller.solana_keypair());
        rt.spawn(async move {
            let _ = node::listen::wake::notify_on_logs(
                &ws,
                &[who],
                solana_commitment_config::CommitmentConfig::confirmed(),
                || {},
                |sig| {
                    seen.lock().expect("lock").insert(sig, Instant::now());
                    true
                },
            )
            .await;
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let uploader = Uploader::Fs(FsStore::new(&items));
    let chain = v.chain();
    let http = reqwest::Client::new();
    let mut ms = Vec::new();
    let mut pause = 0u64;
    for i in 0..a.listings {
        pause = (pause * 7919 + 389 + i as u64) % 1000;
        std::thread::sleep(Duration::from_millis(pause));
        let id = node::market::list::new_listing_id();
        let manifest = build_listing(
            &seller,
            &NewListing {
                listing_id: &id,
                bundle_hash: &"ab".repeat(32),
                payment_address: None,
                price_usd: 1.0,
                price_lamports: 10_000_000,
                duration_hours: 24.0,
                visibility: "auction",
                encrypted_bundle_uri: "ar://blob",
                metadata_uri: "ar://meta",
                preview: json!({}),
                now: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("after 1970")
                    .as_secs() as i64,
                escrow_program: None,
                escrow_terms: None,
                settlement: None,
                usd_at_settle: None,
            },
        )
        .expect("manifest");
        let item = rt
            .block_on(uploader.put_signed(
                &seller,
                serde_json::to_vec(&manifest).expect("json"),
                "application/json",
                LISTING_SCHEMA,
            ))
            .expect("stored");
        let op = MemoOp::List {
            listing_arweave_id: item,
            bundle_hash: "ab".repeat(32),
        };
        let pk = node::chain::Signer::pubkey(&seller.solana_keypair());
        let sent = rt
            .block_on(post_memo(&chain, &seller, &op, &pk))
            .expect("listed");
        let returned = Instant::now();
        loop {
            let got = rt.block_on(http.get(format!("{base}/listings/{id}")).send());
            if got.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(returned.elapsed() < Duration::from_secs(60), "never served");
            std::thread::sleep(Duration::from_millis(5));
        }
        let served = Instant::now();
        // the notification may come a moment after the API served it
        let deadline = Instant::now() + Duration::from_secs(2);
        let confirmed = loop {
            let seen = notified
                .lock()
                .expect("lock")
                .get(&sent.signature.to_string())
                .copied();
            if let Some(at) = seen {
                break at.min(returned);
            }
            if Instant::now() > deadline {
                break returned;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        ms.push(served.saturating_duration_since(confirmed).as_secs_f64() * 1000.0);
    }
    watcher.abort();
    drop(service);
    ms.sort_by(f64::total_cmp);
    json!({
        "phase": name,
        "listings": ms.len(),
        "served_ms_after_confirmation": {
            "p50": percentile(&ms, 0.5).round(),
            "p90": percentile(&ms, 0.9).round(),
            "max": percentile(&ms, 1.0).round(),
        },
    })
}

fn main() {
    let a = args();
    let phases: [(&str, &[&str]); 3] = [
        ("polling only, every 1 s", &["--no-wake-ups"]),
        ("wake-ups, polling every 1 s (default)", &[]),
        ("wake-ups, polling every 10 s", &["--interval-ms", "10000"]),
    ];
    for (name, extra) in phases {
        if a.only.as_deref().is_none_or(|only| name.contains(only)) {
            println!("{}", phase(&a, name, extra));
        }
    }
}
