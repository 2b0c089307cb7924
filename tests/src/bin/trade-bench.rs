//! Benchmark (not a test): buy → release latency on a local validator with
//! the listen loop as `brainctl marketplace listen` runs it (a pass on each
//! `logsSubscribe` wake-up, polling as the fallback), then the process's
//! resident memory at steady state.
//!
//! `cargo run -p e2e --bin trade-bench [-- N]` (N sequential buys, default 20).

use e2e::{fixed_price, validator, TestCatalog};
use node::arweave::{FsStore, Uploader};
use node::chain::instructions::default_registry;
use node::chain::{Signature, Signer};
use node::listen::pass::run_once;
use node::listen::ListenDb;
use node::market::tx::buy_instructions;
use node::wallet::Wallet;
use std::str::FromStr;
use std::time::{Duration, Instant};

const LISTING: &str = "20261123-bbbbbbbbbbbb";
const PRICE: u64 = 10_000_000;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let v = validator();
    let rt = e2e::multi_thread_runtime();
    let chain = v.chain();
    let dir = tempfile::tempdir().unwrap();
    let seller = Wallet::generate();
    let seller_pk = seller.solana_keypair().pubkey();
    v.fund(&seller_pk, 10);
    let buyer = Wallet::generate();
    let buyer_kp = buyer.solana_keypair();
    v.fund(&buyer_kp.pubkey(), 10);

    // the daemon: a pass per wake-up (or every 2 s), as `listen` does
    let (nudge_tx, mut nudge_rx) = tokio::sync::mpsc::channel(64);
    let ws = v.ws_url.clone();
    rt.spawn(async move {
        let _ = node::listen::wake::wake_on_logs(
            &ws,
            &[seller_pk],
            solana_commitment_config::CommitmentConfig::confirmed(),
            nudge_tx,
        )
        .await;
    });
    let db_path = dir.path().join("listen.db");
    let items = dir.path().join("items");
    let daemon_seller = Wallet::from_keypair_bytes(&seller.solana_keypair().to_bytes()).unwrap();
    // buys to watch in, (buy, release signature, when recorded) out
    let (watch_tx, watch_rx) = std::sync::mpsc::channel::<String>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(String, String, Instant)>();
    let daemon = std::thread::spawn(move || {
        let drt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let chain = e2e::validator().chain();
        let mut db = ListenDb::open(&db_path).unwrap();
        let up = Uploader::Fs(FsStore::new(items));
        let shop = TestCatalog::new(vec![fixed_price(LISTING, &seller_pk, PRICE)]);
        let mut pending: Vec<String> = Vec::new();
        loop {
            drt.block_on(run_once(
                &chain,
                &mut db,
                &daemon_seller,
                &up,
                &shop,
                &seller_pk,
            ))
            .unwrap();
            pending.extend(watch_rx.try_iter());
            pending.retain(|sig| match db.get(sig).ok().and_then(|r| r.release_sig) {
                Some(rel) => {
                    let _ = done_tx.send((sig.clone(), rel, Instant::now()));
                    false
                }
                None => true,
            });
            let woke = drt.block_on(async {
                tokio::time::timeout(Duration::from_secs(2), nudge_rx.recv()).await
            });
            if matches!(woke, Ok(None)) {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_secs(1));

    let (mut slots, mut millis) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let ixs = buy_instructions(
            &buyer_kp.pubkey(),
            &seller_pk,
            PRICE,
            LISTING,
            &buyer.x25519_address(),
            &default_registry(),
            None,
        );
        let sent = rt.block_on(chain.send(&ixs, &[&buyer_kp])).unwrap();
        let confirmed = Instant::now();
        let sig = sent.signature.to_string();
        watch_tx.send(sig.clone()).unwrap();
        let (got, release, at) = done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("released within 60 s");
        assert_eq!(got, sig);
        let ms = (at - confirmed).as_secs_f64() * 1e3;
        let tx = rt
            .block_on(chain.transaction(&Signature::from_str(&release).unwrap()))
            .unwrap()
            .expect("release landed");
        slots.push((tx.slot - sent.slot) as f64);
        millis.push(ms);
    }
    let rss = rss_kib();
    slots.sort_by(f64::total_cmp);
    millis.sort_by(f64::total_cmp);
    println!(
        "{{\"buys\": {n}, \"release_slots_after_buy_p50\": {}, \"p90\": {}, \"max\": {}, \
         \"release_ms_after_confirmation_p50\": {:.0}, \"p90\": {:.0}, \"max\": {:.0}, \
         \"daemon_process_rss_mib\": {:.1}}}",
        percentile(&slots, 0.5),
        percentile(&slots, 0.9),
        slots[slots.len() - 1],
        percentile(&millis, 0.5),
        percentile(&millis, 0.9),
        millis[millis.len() - 1],
        rss as f64 / 1024.0
    );
    drop(daemon);
    std::process::exit(0);
}
