//! Benchmark (not a test): buy → release through `brainctl marketplace
//! listen` exactly as sellers run it (the real binary, as a service, its
//! websocket wake-ups and polling), on a local validator:
//! - N sequential buys: slots and ms from the buy's confirmation to the
//!   release recorded in the seller's state;
//! - M concurrent buys (M buyers paying at once): the same, and releases
//!   per second over the burst;
//! - with `--rate R [--seconds S]` (default 5): buyers paying at R a second
//!   for S seconds, each on its own: whether every release still comes
//!   within a few slots, and the rate releases come at (from the first
//!   to the last);
//! - the daemon's RSS (current and peak, from /proc);
//! - with `--hostile`: all of it again while a second thread sends the
//!   hostile generator's transactions at the same listing, to show attacks
//!   cost honest buyers nothing measurable;
//! - with `--junk N`: N junk buys (1 lamport each, a `buy` memo of the
//!   listing; about a cent of fees per hundred) land first, then 5 honest
//!   buyers pay at once: the honest releases' slots after their buys.
//!
//! - what a release costs the seller, from its balance over the
//!   sequential buys after the first (`seller_lamports_per_release`), in
//!   the receipt mode of `--receipt` (`listen`'s flag; default `listing`).
//!
//! `cargo run -p e2e --bin trade-bench -- [--sequential N]
//! [--concurrent M] [--rate R [--seconds S]] [--hostile] [--junk N]
//! [--receipt MODE] [--brainctl PATH]` (defaults 20, 100; the
//! brainctl binary next to this one unless `--brainctl`/`BRAINCTL_BIN`;
//! `localnet/bench` builds both).
//! Prints one JSON line per phase.

use e2e::hostile::{self, Rng, Shape, Target};
use node::chain::instructions::default_registry;
use node::chain::{Chain, Keypair, Signature, Signer};
use node::listen::{BuyState, ListenDb};

use node::market::tx::buy_instructions;
use node::wallet::Wallet;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    sequential: usize,
    concurrent: usize,
    hostile: bool,
    junk: usize,
    rate: usize,
    seconds: usize,
    receipt: String,
    brainctl: PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        sequential: 20,
        concurrent: 100,
        hostile: false,
        junk: 0,
        rate: 0,
        seconds: 5,
        receipt: "listing".into(),
        brainctl: std::env::var_os("BRAINCTL_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::current_exe()
                    .expect("current exe")
                    .with_file_name("brainctl")
            }),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = |what: &str| -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{what} takes a number"))
        };
        match flag.as_str() {
            "--sequential" => a.sequential = num("--sequential"),
            "--concurrent" => a.concurrent = num("--concurrent"),
            "--hostile" => a.hostile = true,
            "--junk" => a.junk = num("--junk"),
            "--rate" => a.rate = num("--rate"),
            "--seconds" => a.seconds = num("--seconds").max(1),
            "--brainctl" => a.brainctl = it.next().expect("--brainctl takes a path").into(),
            "--receipt" => a.receipt = it.next().expect("--receipt takes listing|per-buy|none"),
            other => panic!("unknown argument {other} (see the module doc)"),
        }
    }
    assert!(
        a.brainctl.exists(),
        "{} not found: `cargo build --release -p brainctl-cli` first, or pass --brainctl",
        a.brainctl.display()
    );
    a
}

use e2e::{cpu_seconds, percentile};

fn proc_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

use e2e::cli_seller::{fund_all, Seller};

/// CPU seconds the daemon and the validator had used when a phase began.
#[derive(Clone, Copy)]
struct CpuAt {
    daemon: (u32, f64),
    validator: (u32, f64),
}

impl CpuAt {
    fn now(daemon: u32) -> Self {
        let validator = e2e::validator().pid;
        CpuAt {
            daemon: (daemon, cpu_seconds(daemon)),
            validator: (validator, cpu_seconds(validator)),
        }
    }

    /// ms of `pid`'s CPU per release since the phase began.
    fn ms_per((pid, before): (u32, f64), releases: usize) -> f64 {
        ((cpu_seconds(pid) - before) * 1e3 / releases.max(1) as f64 * 10.0).round() / 10.0
    }
}

/// One buy: its signature, its slot, when its buyer saw it confirmed.
type Buy = (String, u64, Instant);

/// Each of `buyers` pays the listed price, all at once (`rate` `None`)
/// or the i-th at i / `rate` seconds (each on its own, never waiting for
/// the ones before), while the seller's state is watched from the first
/// payment on (so a step is timed when it happens, not when the last
/// buyer is done); returns each buy and its outcome, in confirmation order.
fn pay(
    rt: &tokio::runtime::Runtime,
    chain: &Chain,
    db: &Path,
    buyers: &[Wallet],
    target: &Target,
    rate: Option<f64>,
) -> (Vec<Buy>, Vec<Waited>) {
    let (confirmed, arrivals) = std::sync::mpsc::channel::<Buy>();
    let start = tokio::time::Instant::now();
    let sends = buyers.iter().enumerate().map(|(i, w)| {
        let at = start + rate.map_or(Duration::ZERO, |r| Duration::from_secs_f64(i as f64 / r));
        let k = w.solana_keypair();
        let ixs = buy_instructions(
            &k.pubkey(),
            &target.pay_to,
            target.price,
            &target.listing_id,
            &w.x25519_address(),
            &target.registry,
            None,
        );
        let confirmed = confirmed.clone();
        async move {
            tokio::time::sleep_until(at).await;
            let sent = chain.send(&ixs, &[&k]).await.expect("buy");
            let _ = confirmed.send((sent.signature.to_string(), sent.slot, Instant::now()));
        }
    });
    let sends: Vec<_> = sends.collect();
    drop(confirmed);
    std::thread::scope(|s| {
        s.spawn(|| rt.block_on(futures_util::future::join_all(sends)));
        wait_releases(rt, chain, db, buyers.len(), || {
            let mut got = Vec::new();
            loop {
                match arrivals.try_recv() {
                    Ok(buy) => got.push(buy),
                    Err(std::sync::mpsc::TryRecvError::Empty) => return (got, true),
                    // every payment is done (or one panicked)
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => return (got, false),
                }
            }
        })
    })
}

/// Events a second from the first of `at` to the last (0 for fewer than
/// two).
fn per_second(mut at: Vec<Instant>) -> f64 {
    at.sort();
    match (at.first(), at.last()) {
        (Some(first), Some(last)) if at.len() > 1 => {
            (at.len() - 1) as f64 / (*last - *first).as_secs_f64().max(1e-9)
        }
        _ => 0.0,
    }
}

/// Releases a second from the first release recorded to the last: the
/// daemon's own rate, whatever the buys' landing took.
fn daemon_rate(buys: &[Buy], results: &[Waited]) -> f64 {
    per_second(
        buys.iter()
            .zip(results)
            .map(|((_, _, confirmed), (ms, _, _))| *confirmed + Duration::from_secs_f64(ms / 1e3))
            .collect(),
    )
}

/// When the seller's state first showed a buy in each step, from the
/// buy's confirmation (ms): seen, verified, envelope stored, released.
type Stages = [f64; 4];

/// One buy's outcome: ms from `confirmed` to recorded, slots from buy to
/// release, and when each step was first seen.
type Waited = (f64, f64, Stages);

/// Waits for each of `expected` buys' release in the seller's state
/// (watching each step as it comes, 20 ms apart), taking the buys as
/// `arrived` hands them over (with whether more may come). A step the
/// daemon reached before its buyer saw the buy confirmed is stamped at
/// the confirmation: these times are never negative.
fn wait_releases(
    rt: &tokio::runtime::Runtime,
    chain: &Chain,
    db: &Path,
    expected: usize,
    mut arrived: impl FnMut() -> (Vec<Buy>, bool),
) -> (Vec<Buy>, Vec<Waited>) {
    let state = ListenDb::open(db).expect("seller state");
    let mut buys: Vec<Buy> = Vec::with_capacity(expected);
    let mut stages: Vec<[Option<Instant>; 4]> = Vec::with_capacity(expected);
    let mut released: Vec<Option<String>> = Vec::with_capacity(expected);
    let wait = Duration::from_secs(300);
    let mut deadline = Instant::now() + wait;
    while buys.len() < expected || released.iter().any(Option::is_none) {
        let (new, more) = arrived();
        if !new.is_empty() {
            deadline = Instant::now() + wait;
        }
        for buy in new {
            buys.push(buy);
            stages.push([None; 4]);
            released.push(None);
        }
        assert!(
            more || buys.len() == expected,
            "only {} of {expected} buys were paid (a payment failed: see above)",
            buys.len()
        );
        assert!(
            Instant::now() < deadline,
            "releases did not come within 300 s of the last buy"
        );
        for (i, (sig, _, _)) in buys.iter().enumerate() {
            if released[i].is_some() {
                continue;
            }
            let Ok(row) = state.get(sig) else { continue };
            let reached = match row.state {
                BuyState::Seen => 1,
                BuyState::Verified => 2,
                BuyState::EnvelopeUploaded => 3,
                BuyState::Released => 4,
                BuyState::Rejected => panic!("buy {sig} rejected: {:?}", row.reason),
            };
            let now = Instant::now();
            for at in &mut stages[i][..reached] {
                at.get_or_insert(now);
            }
            released[i] = row.release_sig;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let results = buys
        .iter()
        .zip(stages.iter().zip(released))
        .map(|((_, slot, confirmed), (at, rel))| {
            let rel = rel.expect("released");
            let tx = rt
                .block_on(chain.transaction(&Signature::from_str(&rel).expect("sig")))
                .expect("rpc")
                .expect("release landed");
            let ms = |t: Option<Instant>| (t.expect("reached") - *confirmed).as_secs_f64() * 1e3;
            (
                ms(at[3]),
                (tx.slot - slot) as f64,
                [ms(at[0]), ms(at[1]), ms(at[2]), ms(at[3])],
            )
        })
        .collect();
    (buys, results)
}

fn summary(
    phase: &str,
    hostile: usize,
    results: &[Waited],
    span: Option<Duration>,
    cpu: CpuAt,
) -> Value {
    let pid = cpu.daemon.0;
    let mut ms: Vec<f64> = results.iter().map(|r| r.0).collect();
    let mut slots: Vec<f64> = results.iter().map(|r| r.1).collect();
    ms.sort_by(f64::total_cmp);
    slots.sort_by(f64::total_cmp);
    // where the time goes: p50 of when each step was first seen
    let stage = |k: usize| {
        let mut v: Vec<f64> = results.iter().map(|r| r.2[k]).collect();
        v.sort_by(f64::total_cmp);
        percentile(&v, 0.5).round()
    };
    json!({
        "phase": phase,
        "buys": results.len(),
        "hostile_txs_alongside": hostile,
        "release_slots_after_buy": {"p50": percentile(&slots, 0.5), "p90": percentile(&slots, 0.9), "max": percentile(&slots, 1.0)},
        "release_ms_after_confirmation": {"p50": percentile(&ms, 0.5).round(), "p90": percentile(&ms, 0.9).round(), "max": percentile(&ms, 1.0).round()},
        "steps_ms_after_confirmation_p50": {"seen": stage(0), "verified": stage(1), "envelope_stored": stage(2), "released": stage(3)},
        "releases_per_second": span.map(|s| (results.len() as f64 / s.as_secs_f64() * 10.0).round() / 10.0),
        "daemon_rss_mib": proc_kib(pid, "VmRSS:") as f64 / 1024.0,
        "daemon_peak_rss_mib": proc_kib(pid, "VmHWM:") as f64 / 1024.0,
        // the daemon's own work per release (its CPU over the phase)
        "daemon_cpu_ms_per_release": CpuAt::ms_per(cpu.daemon, results.len()),
        // the chain's work per trade (the buy and its release, every RPC
        // read of both sides): what bounds releases on a shared machine
        "validator_cpu_ms_per_trade": CpuAt::ms_per(cpu.validator, results.len()),
    })
}

fn main() {
    let a = args();
    let v = e2e::validator();
    let rt = e2e::multi_thread_runtime();
    let chain = v.chain();
    let seller = Seller::new(a.brainctl.clone(), &v.rpc_url);
    let seller_pk = seller.new_wallet();
    v.fund(&seller_pk, 50);
    let listed = seller.list_memory("Benchmarks measure the loop users run", &[]);
    let l = &listed["listing"];
    let target = Target {
        listing_id: l["listing_id"].as_str().expect("id").into(),
        pay_to: l["payment_address"]
            .as_str()
            .expect("pay to")
            .parse()
            .expect("pubkey"),
        price: l["price_lamports"].as_u64().expect("price"),
        seller: seller_pk,
        registry: default_registry(),
        cancelled_listing: None,
        expired_listing: None,
        expiring_listing: None,
    };
    let mut daemon = seller.listen_with(&["--receipt", &a.receipt]);
    let pid = daemon.id();
    std::thread::sleep(Duration::from_secs(2));

    let whale = v.funded_keypair(500);
    let phases: &[bool] = if a.hostile { &[false, true] } else { &[false] };
    for &under_attack in phases {
        let stop = Arc::new(AtomicBool::new(false));
        let hostile_sent = Arc::new(AtomicUsize::new(0));
        let attacker = under_attack.then(|| {
            let strangers: Vec<Wallet> = (0..4).map(|_| Wallet::generate()).collect();
            fund_all(&rt, &chain, &whale, &strangers, 2_000_000_000);
            let (stop, count, t) = (stop.clone(), hostile_sent.clone(), target.clone());
            std::thread::spawn(move || {
                let (mut rng, _) = Rng::from_env();
                let rt = e2e::runtime();
                let chain = e2e::validator().chain();
                while !stop.load(Ordering::SeqCst) {
                    let shape = Shape::HOSTILE[rng.below(Shape::HOSTILE.len() as u64) as usize];
                    let actor = &strangers[rng.below(4) as usize];
                    let other = &strangers[rng.below(4) as usize];
                    if rt
                        .block_on(hostile::send(&chain, shape, &t, actor, other))
                        .is_ok()
                    {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        });
        let label = if under_attack { "+hostile" } else { "" };

        // sequential: one buyer, one buy at a time, each waited for
        let buyer = Wallet::generate();
        fund_all(
            &rt,
            &chain,
            &whale,
            std::slice::from_ref(&buyer),
            5_000_000_000,
        );
        let bk = buyer.solana_keypair();
        let mut results = Vec::new();
        let cpu = CpuAt::now(pid);
        // what the seller's releases cost, from the chain's balances: the
        // payment address is the seller's wallet, so over the buys after
        // the first (whose release may make the listing's receipt mint)
        // it gains the prices less what the releases spent
        let mut balance_after_first = None;
        for i in 0..a.sequential {
            let ixs = buy_instructions(
                &bk.pubkey(),
                &target.pay_to,
                target.price,
                &target.listing_id,
                &buyer.x25519_address(),
                &target.registry,
                None,
            );
            let sent = rt.block_on(chain.send(&ixs, &[&bk])).expect("buy");
            let mut one = Some((sent.signature.to_string(), sent.slot, Instant::now()));
            let (_, waited) = wait_releases(&rt, &chain, &seller.db(), 1, || {
                (one.take().into_iter().collect(), false)
            });
            results.extend(waited);
            if i == 0 {
                balance_after_first =
                    Some(rt.block_on(chain.balance(&seller_pk)).expect("balance"));
            }
        }
        let h = hostile_sent.load(Ordering::SeqCst);
        let mut line = summary(&format!("sequential{label}"), h, &results, None, cpu);
        line["receipt"] = json!(a.receipt);
        if let (Some(first), n @ 2..) = (balance_after_first, a.sequential) {
            let last = rt.block_on(chain.balance(&seller_pk)).expect("balance");
            let paid = match target.pay_to == seller_pk {
                true => (n as u64 - 1) * target.price,
                false => 0,
            };
            let spent = (first + paid).saturating_sub(last);
            line["seller_lamports_per_release"] = json!(spent / (n as u64 - 1));
        }
        println!("{line}");
        if a.concurrent == 0 {
            continue;
        }

        // concurrent: M buyers pay at once
        let buyers: Vec<Wallet> = (0..a.concurrent).map(|_| Wallet::generate()).collect();
        fund_all(&rt, &chain, &whale, &buyers, 100_000_000);
        let cpu = CpuAt::now(pid);
        let start = Instant::now();
        let (buys, results) = pay(&rt, &chain, &seller.db(), &buyers, &target, None);
        let span = start.elapsed();
        let h = hostile_sent.load(Ordering::SeqCst);
        let mut line = summary(&format!("concurrent{label}"), h, &results, Some(span), cpu);
        // from the first release to the last (the figure above runs from
        // the first payment sent, so it includes the burst's own landing)
        line["daemon_releases_per_second"] =
            json!((daemon_rate(&buys, &results) * 10.0).round() / 10.0);
        // the chain's view: the slots the burst's buys landed over, and
        // from the first buy's slot to the last release's
        let buy_slots = buys.iter().map(|b| b.1);
        let first_buy = buy_slots.clone().min().unwrap_or(0);
        let last_buy = buy_slots.max().unwrap_or(0);
        let last_release = buys
            .iter()
            .zip(&results)
            .map(|(b, r)| b.1 + r.1 as u64)
            .max()
            .unwrap_or(0);
        line["buys_landed_over_slots"] = json!(last_buy - first_buy + 1);
        line["slots_first_buy_to_last_release"] = json!(last_release - first_buy);
        println!("{line}");

        // sustained: buyers paying at --rate a second for --seconds: does
        // the daemon keep up (every release within a few slots) and at
        // what rate do releases come
        if a.rate > 0 {
            let n = a.rate * a.seconds;
            let buyers: Vec<Wallet> = (0..n).map(|_| Wallet::generate()).collect();
            fund_all(&rt, &chain, &whale, &buyers, 100_000_000);
            let cpu = CpuAt::now(pid);
            let slot_at = |rt: &tokio::runtime::Runtime| {
                (
                    Instant::now(),
                    rt.block_on(chain.rpc().get_slot()).expect("slot"),
                )
            };
            let (t0, s0) = slot_at(&rt);
            let rate = Some(a.rate as f64);
            let (buys, results) = pay(&rt, &chain, &seller.db(), &buyers, &target, rate);
            let (t1, s1) = slot_at(&rt);
            let steady = daemon_rate(&buys, &results);
            let h = hostile_sent.load(Ordering::SeqCst);
            let mut line = summary(
                &format!("sustained {}/s{label}", a.rate),
                h,
                &results,
                None,
                cpu,
            );
            line["releases_per_second"] = json!((steady * 10.0).round() / 10.0);
            // the rate the buys were confirmed at (what the releases follow)
            let confirmed = per_second(buys.iter().map(|b| b.2).collect());
            line["buys_confirmed_per_second"] = json!((confirmed * 10.0).round() / 10.0);
            // how long the chain's slots were meanwhile (400 ms nominal)
            line["chain_ms_per_slot"] =
                json!(((t1 - t0).as_secs_f64() * 1e3 / (s1 - s0).max(1) as f64).round());
            println!("{line}");
        }
        stop.store(true, Ordering::SeqCst);
        if let Some(t) = attacker {
            let _ = t.join();
        }
        assert!(!daemon.exited(), "listen exited");
    }
    if a.junk > 0 {
        junk_flood(&rt, &chain, &whale, &target, &seller, a.junk, pid);
        assert!(!daemon.exited(), "listen exited");
    }
    let status = daemon.stop();
    assert!(status.success(), "listen stopped with {status:?}");
}

/// `n` junk buys (1 lamport, a `buy` memo naming the listing, each with
/// its own made-up X25519 key) land, then 5 honest buyers pay at once:
/// prints the honest releases' latency.
fn junk_flood(
    rt: &tokio::runtime::Runtime,
    chain: &Chain,
    whale: &Keypair,
    target: &Target,
    seller: &Seller,
    n: usize,
    pid: u32,
) {
    let junkers: Vec<Wallet> = (0..8).map(|_| Wallet::generate()).collect();
    fund_all(rt, chain, whale, &junkers, 1_000_000_000);
    // the daemon paused while the junk lands, so all of it is waiting when
    // the honest buys come (a flood faster than one pass, as an attacker
    // with more bandwidth than the seller's RPC would send)
    let signal = |sig: &str| {
        let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
    };
    signal("-STOP");
    let started = Instant::now();
    for batch in (0..n).collect::<Vec<_>>().chunks(64) {
        let sends = batch.iter().map(|i| {
            let k = junkers[i % junkers.len()].solana_keypair();
            let fake_x25519 = Wallet::generate().x25519_address();
            let ixs = buy_instructions(
                &k.pubkey(),
                &target.pay_to,
                1,
                &target.listing_id,
                &fake_x25519,
                &target.registry,
                None,
            );
            async move { chain.send(&ixs, &[&k]).await.is_ok() }
        });
        rt.block_on(futures_util::future::join_all(sends));
    }
    let landed_in = started.elapsed();
    let buyers: Vec<Wallet> = (0..5).map(|_| Wallet::generate()).collect();
    fund_all(rt, chain, whale, &buyers, 100_000_000);
    signal("-CONT");
    let cpu = CpuAt::now(pid);
    let (_, results) = pay(rt, chain, &seller.db(), &buyers, target, None);
    let mut line = summary(&format!("junk-{n}"), n, &results, None, cpu);
    line["junk_landed_in_s"] = json!((landed_in.as_secs_f64() * 10.0).round() / 10.0);
    println!("{line}");
}
