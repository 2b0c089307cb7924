//! The hostile-chain suite (issue 14): on a real validator, while the real
//! `brainctl marketplace listen` daemon and `brainctl-indexer run` are
//! both live, a seeded generator sends random sequences of honest buys
//! mixed with hostile transactions of every shape (failed, undecodable
//! memos, underpaid, unpaid, paid elsewhere, co-signed, replayed, for a
//! cancelled or an expired listing, forged releases and cancels, noisy, ambiguous).
//! Then: both processes are alive, every honest buy is released exactly
//! once, no hostile one is, and the indexer's state hash equals a
//! `rebuild` from scratch. `HOSTILE_SEED=<n>` replays a run.
//!
//! And RPC faults as weather: the same two services reach the validator
//! through a fault-injecting proxy (refused connections, 429, 5xx,
//! stalls) while buyers pay; they ride it out and release every buy
//! exactly once, with nothing lost.

mod util;

use e2e::hostile::{self, Rng, Shape, Target};
use e2e::TestValidator;
use node::chain::Signer;
use node::wallet::Wallet;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use util::services::{indexer_matches_rebuild, services, Running};
use util::Env;

/// Transactions the generator sends per run.
const SENDS: usize = 36;

fn onchain(v: &TestValidator, e: &Env, args: &[&str]) -> Value {
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    let r = e.run(&full);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
}

/// Waits until every buy in `honest` is released in the seller's state.
fn wait_released(seller: &Env, honest: &BTreeSet<&str>, daemon: &mut Running, why: &str) {
    wait_state(seller, honest, "released", daemon, why)
}

/// Waits until every buy in `sigs` is in state `want` in the seller's state.
fn wait_state(seller: &Env, sigs: &BTreeSet<&str>, want: &str, daemon: &mut Running, why: &str) {
    let state = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let done = sigs
            .iter()
            .filter(|s| state.get(s).is_ok_and(|r| r.state == want))
            .count();
        if done == sigs.len() {
            return;
        }
        assert!(daemon.alive(), "{why}: listen exited");
        assert!(
            Instant::now() < deadline,
            "{why}: {done} of {} buys {want}; listen's log ends:\n{}",
            sigs.len(),
            daemon.tail()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A `release` memo the seller signed.
#[derive(Debug)]
struct Release {
    /// The transaction carrying it.
    tx: String,
    /// The envelope it publishes (one per buy).
    envelope: String,
    /// The receipt it names.
    mint: String,
}

/// The release memos signed by `seller` in `pay_to`'s history.
fn releases_on_chain(
    v: &TestValidator,
    pay_to: &node::chain::Pubkey,
    seller: &node::chain::Pubkey,
) -> Vec<Release> {
    let (rt, chain) = (e2e::runtime(), v.chain());
    rt.block_on(node::market::status::memo_ops(&chain, pay_to))
        .unwrap()
        .into_iter()
        .filter_map(|(tx, op)| match op {
            node::market::MemoOp::Release {
                envelope_arweave_id,
                minted_token_address,
                ..
            } => Some(Release {
                tx,
                envelope: envelope_arweave_id,
                mint: minted_token_address,
            }),
            _ => None,
        })
        .filter(|r| {
            rt.block_on(chain.transaction(&r.tx.parse().unwrap()))
                .unwrap()
                .is_some_and(|t| t.signed_by(&seller.to_string()))
        })
        .collect()
}

/// Exactly once on chain: one release memo for each buy in `honest`, no
/// two publishing the same envelope, and each buy's recorded release
/// (transaction, envelope, receipt) among them. Several memos may share
/// a transaction: `listen` releases buys of one listing together.
fn assert_released_once(releases: &[Release], seller: &Env, honest: &BTreeSet<&str>, why: &str) {
    assert_eq!(releases.len(), honest.len(), "{why}: {releases:?}");
    let envelopes: BTreeSet<&str> = releases.iter().map(|r| r.envelope.as_str()).collect();
    assert_eq!(
        envelopes.len(),
        honest.len(),
        "{why}: one envelope a release: {releases:?}"
    );
    let state = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    for sig in honest {
        let row = state.get(sig).unwrap();
        assert!(
            releases
                .iter()
                .any(|r| Some(&r.tx) == row.release_sig.as_ref()
                    && Some(&r.envelope) == row.envelope_id.as_ref()
                    && Some(&r.mint) == row.mint_address.as_ref()),
            "{why}: {sig} released by {:?} with {:?} and {:?}: {releases:?}",
            row.release_sig,
            row.envelope_id,
            row.mint_address
        );
    }
}

/// A seller's listings: one live, one cancelled before any buy, one
/// that expired before any buy.
struct Listings {
    live: Value,
    cancelled: String,
    expired: String,
    /// Expires while the buys arrive: (listing id, expires_at).
    expiring: (String, i64),
}

fn target_of(v: &TestValidator, seller: &Env, l: &Listings) -> Target {
    let listing = &l.live["listing"];
    Target {
        listing_id: listing["listing_id"].as_str().unwrap().into(),
        pay_to: listing["payment_address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
        price: listing["price_lamports"].as_u64().unwrap(),
        seller: onchain(v, seller, &["wallet", "address", "--json"])["address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
        registry: node::chain::instructions::default_registry(),
        cancelled_listing: Some(l.cancelled.clone()),
        expired_listing: Some(l.expired.clone()),
        expiring_listing: Some(l.expiring.0.clone()),
    }
}

/// A seller with a live listing, a cancelled one and one that lived
/// 3.6 s (returned once the chain's clock is past its expiry).
fn seller_with_listings(v: &TestValidator, dir: &str) -> (Env, Listings) {
    let seller = Env::new();
    seller.ok(&["wallet", "new"]);
    onchain(v, &seller, &["wallet", "airdrop", "5", "--json"]);
    let list = |i: usize, text: &str, hours: &str| {
        seller.ok(&["memory", "add", text, "-c", "lesson"]);
        let out = format!("b{i}.signed.json");
        seller.ok(&["export", "--sign", "-o", &out]);
        onchain(
            v,
            &seller,
            &[
                "marketplace",
                "list",
                &out,
                "--price-usd",
                "1",
                "--sol-usd",
                "100",
                "--duration-hours",
                hours,
                "--storage-dir",
                dir,
                "--json",
            ],
        )
    };
    let mut listed: Vec<Value> = [
        ("Live lesson", "72"),
        ("Cancelled lesson", "72"),
        ("Expiring lesson", "0.001"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (text, hours))| list(i, text, hours))
    .collect();
    let id = |l: &Value| l["listing"]["listing_id"].as_str().unwrap().to_string();
    let expires_at = |l: &Value| {
        l["listing"]["expires_at"]
            .as_i64()
            .expect("list --json gives expires_at")
    };
    let (cancelled, expired) = (id(&listed[1]), id(&listed[2]));
    onchain(v, &seller, &["marketplace", "cancel", &cancelled, "--json"]);
    v.wait_block_time(expires_at(&listed[2]) + 1);
    // 18 s: it expires while the buys of the run arrive
    let boundary = list(3, "Boundary lesson", "0.005");
    let live = listed.swap_remove(0);
    (
        seller,
        Listings {
            live,
            cancelled,
            expired,
            expiring: (id(&boundary), expires_at(&boundary)),
        },
    )
}

#[test]
fn honest_buys_are_released_exactly_once_among_hostile_ones() {
    let v = e2e::validator();
    let (mut rng, seed) = Rng::from_env();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let (seller, listings) = seller_with_listings(v, &dir);
    let target = target_of(v, &seller, &listings);

    // the two services, as users run them
    let (mut daemon, mut indexer, base) = services(&seller, &v.rpc_url, &dir, shared.path());

    // wallets: honest buyers and strangers
    let buyers: Vec<Wallet> = (0..4).map(|_| Wallet::generate()).collect();
    let strangers: Vec<Wallet> = (0..3).map(|_| Wallet::generate()).collect();
    for w in buyers.iter().chain(&strangers) {
        v.fund(&w.solana_keypair().pubkey(), 1);
    }
    let rt = e2e::runtime();
    let chain = v.chain();
    let mut sent: Vec<hostile::SentTx> = Vec::new();
    // every shape at least once, in a random order, then random ones
    // (about one in three honest)
    let mut shapes: Vec<Shape> = Shape::HONEST
        .iter()
        .chain(&Shape::HOSTILE)
        .chain(&Shape::TIMED)
        .copied()
        .collect();
    for i in (1..shapes.len()).rev() {
        shapes.swap(i, rng.below(i as u64 + 1) as usize);
    }
    while shapes.len() < SENDS {
        shapes.push(if rng.below(3) == 0 {
            Shape::HONEST[rng.below(Shape::HONEST.len() as u64) as usize]
        } else if rng.below(4) == 0 {
            Shape::NearExpiry
        } else {
            Shape::HOSTILE[rng.below(Shape::HOSTILE.len() as u64) as usize]
        });
    }
    for shape in shapes {
        let pool = if shape.honest() || shape == Shape::NearExpiry {
            &buyers
        } else {
            &strangers
        };
        let actor = &pool[rng.below(pool.len() as u64) as usize];
        let other = &buyers[rng.below(buyers.len() as u64) as usize];
        let s = rt
            .block_on(hostile::send(&chain, shape, &target, actor, other))
            .unwrap_or_else(|e| panic!("seed {seed}: sending {shape:?}: {e}"));
        sent.push(s);
    }
    // a buy of the expiring listing is owed a release iff it landed
    // before the expiry by the chain's clock (its block time)
    let (expiring_id, expiry) = &listings.expiring;
    let mut in_time: BTreeSet<&str> = BTreeSet::new();
    let mut too_late: BTreeSet<&str> = BTreeSet::new();
    for s in sent.iter().filter(|s| s.shape == Shape::NearExpiry) {
        let sig = s.signature.parse().unwrap();
        let tx = rt.block_on(chain.transaction(&sig)).unwrap().unwrap();
        let block_time = tx.block_time.expect("a confirmed block has a time");
        if block_time < *expiry {
            in_time.insert(&s.signature);
        } else {
            too_late.insert(&s.signature);
        }
    }
    eprintln!(
        "seed {seed}: {} buys of {expiring_id} before its expiry, {} after",
        in_time.len(),
        too_late.len()
    );
    let honest: BTreeSet<&str> = sent
        .iter()
        .filter(|s| s.shape.honest())
        .map(|s| s.signature.as_str())
        .chain(in_time.iter().copied())
        .collect();

    // every honest buy released; no hostile one
    let why = format!("seed {seed}");
    wait_released(&seller, &honest, &mut daemon, &why);
    // buys of a closed listing are refused (each with its reason, below)
    let closed: BTreeSet<&str> = sent
        .iter()
        .filter(|s| matches!(s.shape, Shape::CancelledListing | Shape::ExpiredListing))
        .map(|s| s.signature.as_str())
        .chain(too_late.iter().copied())
        .collect();
    wait_state(&seller, &closed, "rejected", &mut daemon, &why);
    assert!(
        daemon.alive() && indexer.alive(),
        "seed {seed}: a service died"
    );
    let state = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    let mut by_shape: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &sent {
        let row = state.get(&s.signature);
        let st = row
            .as_ref()
            .map_or("unrecorded".to_string(), |r| r.state.to_string());
        by_shape
            .entry(format!("{:?}", s.shape))
            .or_default()
            .push(st.clone());
        if !honest.contains(s.signature.as_str()) {
            assert_ne!(st, "released", "seed {seed}: {:?} was released", s.shape);
        }
        // a closed listing is refused for being closed, with that reason
        let expected = match s.shape {
            Shape::CancelledListing => Some("listing_cancelled"),
            Shape::ExpiredListing => Some("listing_expired"),
            Shape::NearExpiry if too_late.contains(s.signature.as_str()) => Some("listing_expired"),
            _ => None,
        };
        if let Some(expected) = expected {
            let reason: Value = row
                .as_ref()
                .ok()
                .and_then(|r| r.reason.as_deref())
                .and_then(|r| serde_json::from_str::<Value>(r).ok())
                .unwrap_or_default();
            assert_eq!(
                reason["reason"], expected,
                "seed {seed}: {:?} {}",
                s.shape, s.signature
            );
        }
    }
    eprintln!("seed {seed}: {by_shape:?}");

    // exactly once on chain, naming the receipt recorded for each buy (a
    // unit of the listing's mint: `listen`'s default receipt)
    let releases = releases_on_chain(v, &target.pay_to, &target.seller);
    assert_released_once(&releases, &seller, &honest, &why);

    // the indexer kept up, and its state is what a rebuild from scratch gives
    std::thread::sleep(Duration::from_secs(2));
    indexer_matches_rebuild(&v.rpc_url, &base, &dir, shared.path(), &why);
    assert!(
        daemon.alive() && indexer.alive(),
        "seed {seed}: a service died"
    );
    assert!(daemon.stop().success());
    assert!(indexer.stop().success());
}

/// A listing that settles in the test dollar, among hostile token
/// transactions of every shape the generator has (underpaid, a unit, the
/// wrong mint, another owner's token account, an unchecked transfer, SOL
/// to the token listing and the token to a SOL listing), while the real
/// `listen` daemon and indexer run: every honest buy is released exactly
/// once, every hostile one is rejected as underpaid, both services stay
/// up, and the indexer ends where a rebuild from scratch does.
#[test]
fn token_buys_are_released_exactly_once_among_hostile_ones() {
    use e2e::hostile::{TokenShape, TokenTarget};
    let v = e2e::validator();
    let (mut rng, seed) = Rng::from_env();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let seller = Env::new();
    seller.ok(&["wallet", "new"]);
    onchain(v, &seller, &["wallet", "airdrop", "5", "--json"]);
    let dollar = node::chain::test_dollar::mint();
    let list = |i: usize, extra: &[&str]| {
        seller.ok(&[
            "memory",
            "add",
            &format!("Token lesson {i}"),
            "-c",
            "lesson",
        ]);
        let out = format!("t{i}.signed.json");
        seller.ok(&["export", "--sign", "-o", &out]);
        let mut args = vec![
            "marketplace",
            "list",
            &out,
            "--price-usd",
            "1",
            "--sol-usd",
            "100",
            "--storage-dir",
            &dir,
            "--json",
        ];
        args.extend_from_slice(extra);
        onchain(v, &seller, &args)
    };
    let dollar_address = dollar.address.to_string();
    let token_listing = list(0, &["--mint", &dollar_address]);
    let sol_listing = list(1, &[]);
    let other_address = v.create_mint(6);
    let other_mint = node::chain::token::TokenMint {
        address: other_address,
        ..dollar
    };
    let id = |l: &Value| l["listing"]["listing_id"].as_str().unwrap().to_string();
    let target = TokenTarget {
        listing_id: id(&token_listing),
        pay_to: token_listing["listing"]["payment_address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
        price: token_listing["listing"]["price_lamports"].as_u64().unwrap(),
        mint: dollar,
        other_mint,
        sol_listing: id(&sol_listing),
        sol_price: sol_listing["listing"]["price_lamports"].as_u64().unwrap(),
        registry: node::chain::instructions::default_registry(),
    };
    assert_eq!(target.price, 1_000_000, "1 USD in the test dollar");

    let (mut daemon, mut indexer, base) = services(&seller, &v.rpc_url, &dir, shared.path());
    let buyers: Vec<Wallet> = (0..3).map(|_| Wallet::generate()).collect();
    let strangers: Vec<Wallet> = (0..3).map(|_| Wallet::generate()).collect();
    for w in buyers.iter().chain(&strangers) {
        let pk = w.solana_keypair().pubkey();
        v.fund(&pk, 1);
        v.fund_dollars(&pk, 50);
        v.mint_tokens(&other_mint, &pk, 50_000_000);
    }
    let (rt, chain) = (e2e::runtime(), v.chain());
    let mut shapes: Vec<TokenShape> = TokenShape::HONEST
        .iter()
        .chain(&TokenShape::HOSTILE)
        .copied()
        .collect();
    for i in (1..shapes.len()).rev() {
        shapes.swap(i, rng.below(i as u64 + 1) as usize);
    }
    while shapes.len() < 16 {
        shapes.push(if rng.below(3) == 0 {
            TokenShape::Honest
        } else {
            TokenShape::HOSTILE[rng.below(TokenShape::HOSTILE.len() as u64) as usize]
        });
    }
    let mut sent: Vec<(TokenShape, String)> = Vec::new();
    for shape in shapes {
        let pool = if shape == TokenShape::Honest {
            &buyers
        } else {
            &strangers
        };
        let actor = &pool[rng.below(pool.len() as u64) as usize];
        let other = &buyers[rng.below(buyers.len() as u64) as usize];
        let ixs = hostile::build_token(shape, &target, actor, other);
        let sig = rt
            .block_on(chain.send(&ixs, &[&actor.solana_keypair()]))
            .unwrap_or_else(|e| panic!("seed {seed}: sending {shape:?}: {e}"))
            .signature
            .to_string();
        sent.push((shape, sig));
    }
    let why = format!("seed {seed}");
    let honest: BTreeSet<&str> = sent
        .iter()
        .filter(|(s, _)| *s == TokenShape::Honest)
        .map(|(_, sig)| sig.as_str())
        .collect();
    let hostile_sigs: BTreeSet<&str> = sent
        .iter()
        .filter(|(s, _)| *s != TokenShape::Honest)
        .map(|(_, sig)| sig.as_str())
        .collect();
    wait_released(&seller, &honest, &mut daemon, &why);
    wait_state(&seller, &hostile_sigs, "rejected", &mut daemon, &why);
    let state = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    for (shape, sig) in &sent {
        let Some(expected) = shape.reason() else {
            continue;
        };
        let reason: Value = state
            .get(sig)
            .ok()
            .and_then(|r| r.reason)
            .and_then(|r| serde_json::from_str::<Value>(&r).ok())
            .unwrap_or_default();
        assert_eq!(reason["reason"], expected, "seed {seed}: {shape:?} {sig}");
    }
    let releases = releases_on_chain(v, &target.pay_to, &target.pay_to);
    assert_released_once(&releases, &seller, &honest, &why);
    std::thread::sleep(Duration::from_secs(2));
    indexer_matches_rebuild(&v.rpc_url, &base, &dir, shared.path(), &why);
    let shown = util::services::get(&format!("{base}/listings/{}", target.listing_id)).unwrap();
    assert_eq!(
        (
            shown["listing"]["sales"].as_u64(),
            shown["listing"]["releases"].as_u64()
        ),
        (Some(honest.len() as u64), Some(honest.len() as u64)),
        "seed {seed}: {shown}"
    );
    assert!(
        daemon.alive() && indexer.alive(),
        "seed {seed}: a service died"
    );
    assert!(daemon.stop().success());
    assert!(indexer.stop().success());
}

/// RPC faults are weather: both services read the chain through a proxy
/// that refuses connections, answers 429 and 5xx, and stalls, in turn,
/// while buyers pay (straight to the validator). Every buy is released
/// exactly once, both services stay up, the indexer ends where a rebuild
/// from scratch does.
#[test]
fn rpc_faults_are_weather() {
    use e2e::proxy::{Fault, FaultProxy};
    // its own validator: the indexer's view is this test's chain alone
    let own = e2e::start(&e2e::light_args());
    let v = &own;
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let (seller, listings) = seller_with_listings(v, &dir);
    let target = target_of(v, &seller, &listings);
    let proxy = FaultProxy::start(&v.rpc_url);
    let (mut daemon, mut indexer, base) = services(&seller, &proxy.url, &dir, shared.path());
    let buyers: Vec<Wallet> = (0..3).map(|_| Wallet::generate()).collect();
    for w in &buyers {
        v.fund(&w.solana_keypair().pubkey(), 1);
    }
    let (rt, chain) = (e2e::runtime(), v.chain());
    let schedule = [
        Fault::None,
        Fault::Refuse,
        Fault::Status(503),
        Fault::Status(429),
        Fault::Stall(Duration::from_secs(3)),
        Fault::Status(500),
        Fault::Refuse,
        Fault::Status(502),
    ];
    let mut sigs = Vec::new();
    for (i, fault) in schedule.iter().enumerate() {
        proxy.set(*fault);
        let buyer = &buyers[i % buyers.len()];
        let sent = rt
            .block_on(hostile::send(&chain, Shape::Honest, &target, buyer, buyer))
            .unwrap();
        sigs.push(sent.signature);
        std::thread::sleep(Duration::from_secs(3));
        assert!(daemon.alive(), "listen exited under {fault:?}");
        assert!(indexer.alive(), "the indexer exited under {fault:?}");
    }
    proxy.set(Fault::None);
    let (requests, faulted) = proxy.stats();
    assert!(
        faulted > 0 && requests > faulted,
        "faults were injected: {requests}/{faulted}"
    );
    let honest: BTreeSet<&str> = sigs.iter().map(String::as_str).collect();
    wait_released(&seller, &honest, &mut daemon, "after the faults");
    let releases = releases_on_chain(v, &target.pay_to, &target.seller);
    assert_released_once(&releases, &seller, &honest, "after the faults");
    std::thread::sleep(Duration::from_secs(2));
    indexer_matches_rebuild(&v.rpc_url, &base, &dir, shared.path(), "after the faults");
    assert!(daemon.stop().success());
    assert!(indexer.stop().success());
}

/// A validator restart mid-run (killed, started again on its ledger):
/// both services ride it out; buys before and after are each released
/// exactly once and the indexer ends where a rebuild does.
#[test]
fn a_validator_restart_mid_run_loses_nothing() {
    let mut own = e2e::start(&e2e::light_args());
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let (seller, listings) = seller_with_listings(&own, &dir);
    let target = target_of(&own, &seller, &listings);
    let (mut daemon, mut indexer, base) = services(&seller, &own.rpc_url, &dir, shared.path());
    let buyers: Vec<Wallet> = (0..2).map(|_| Wallet::generate()).collect();
    // the second buyer buys only after the restart: funded after it too
    // (a lone validator killed mid-run can restart without its newest
    // slots, and a buyer's funding lost that way is not what this tests)
    own.fund(&buyers[0].solana_keypair().pubkey(), 1);
    let rt = e2e::runtime();
    let buy = |v: &TestValidator, w: &Wallet| {
        rt.block_on(hostile::send(&v.chain(), Shape::Honest, &target, w, w))
            .unwrap()
            .signature
    };
    let mut sigs = vec![buy(&own, &buyers[0])];
    own.restart();
    assert!(
        daemon.alive() && indexer.alive(),
        "a service died with the validator"
    );
    own.fund(&buyers[1].solana_keypair().pubkey(), 1);
    sigs.push(buy(&own, &buyers[1]));
    sigs.push(buy(&own, &buyers[0]));
    let honest: BTreeSet<&str> = sigs.iter().map(String::as_str).collect();
    wait_released(&seller, &honest, &mut daemon, "after the restart");
    let releases = releases_on_chain(&own, &target.pay_to, &target.seller);
    assert_released_once(&releases, &seller, &honest, "after the restart");
    std::thread::sleep(Duration::from_secs(2));
    indexer_matches_rebuild(
        &own.rpc_url,
        &base,
        &dir,
        shared.path(),
        "after the restart",
    );
    assert!(daemon.stop().success());
    assert!(indexer.stop().success());
}
