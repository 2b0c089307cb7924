//! The sealed-escrow trade through the binaries on a real validator with
//! the SBF build of `programs/escrow` deployed (built by
//! `localnet/install-sbf`, loaded at genesis as an upgradeable program):
//! `list --escrow` commits K, the blob root and the seller's X25519 key →
//! `buy` checks the blob and deposits binding B → the `listen` service
//! reveals s (the buyer opens k = s − b and imports) and claims the payment
//! after the dispute window; a stranger's bare deposit (no memo, no payment
//! address) is found in the program's state and revealed too; a deposit
//! binding a wrong B is declined and refunded in full, no slash; a deposit
//! never revealed is refunded with the slash after the window (the MCP
//! tool `market_refund`); `cancel` retires the listing in the program and
//! a deposit after it fails. Balances to the lamport where the program
//! moves them.
//!
//! It runs on the localnet's one validator (agave 4.2.2, which loads the
//! escrow program's SBPF v3 build beside the Light programs' v0 builds),
//! started with the Light programs and the escrow program as `localnet/up`
//! starts it. A missing validator or `.so` fails the test, naming the
//! install step: it never passes by skipping.

mod util;

use node::chain::{Keypair, Pubkey, Signer};
use node::escrow::{self, EscrowAccount, EscrowStatus, ListingAccount};
use serde_json::Value;
use std::time::{Duration, Instant};
use util::escrow::{
    address, buyer_buys, buyer_buys_with, buying, buying_with, configured, escrow_seller,
    list_as_cheater, ok, Sealed, CHEAT_PRICE, LISTING_STAKE, STAKE,
};
use util::Env;

/// The program's shortest release window.
const WINDOW: i64 = 120;
const DISPUTE: i64 = 10;

fn onchain(v: &e2e::TestValidator, e: &Env, args: &[&str]) -> util::Run {
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    e.run(&full)
}

fn pubkey_of(v: &e2e::TestValidator, e: &Env) -> Pubkey {
    ok(v, e, &["wallet", "address", "--json"])["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

fn read<T>(
    v: &e2e::TestValidator,
    at: &Pubkey,
    decode: fn(&Pubkey, &[u8]) -> Result<T, node::escrow::AccountError>,
) -> Option<T> {
    let chain = v.chain();
    let a = e2e::runtime()
        .block_on(
            chain
                .rpc()
                .get_account_with_commitment(at, chain.commitment()),
        )
        .unwrap()
        .value?;
    Some(decode(&a.owner, &a.data).unwrap())
}

fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_escrow_trade_runs_through_the_binaries_on_the_deployed_program() {
    // the program's upgrade authority: a brainctl wallet, as localnet/up has it
    let admin = Env::new();
    admin.ok(&["wallet", "new"]);
    let admin_pk = address(&admin);
    // the localnet's programs, the escrow program's upgrade authority being
    // `admin`; releases mint Token-2022 NFTs here (the demo mints Light
    // compressed tokens on the same validator)
    let args = [e2e::light_args(), e2e::escrow_args(&admin_pk)].concat();
    let v = e2e::start(&args);
    let rt = e2e::runtime();
    let chain = v.chain();
    let treasury = Keypair::new();
    v.fund(&admin_pk, 2);
    v.fund(&treasury.pubkey(), 1);

    // deployed, not configured; `escrow configure` by a stranger is refused
    let shown = ok(&v, &admin, &["escrow", "show", "--json"]);
    assert_eq!(
        (&shown["deployed"], &shown["config"]),
        (&Value::Bool(true), &Value::Null)
    );
    let treasury_s = treasury.pubkey().to_string();
    let (window_s, dispute_s, stake_s) =
        (WINDOW.to_string(), DISPUTE.to_string(), STAKE.to_string());
    let configure: Vec<&str> = vec![
        "escrow",
        "configure",
        "--treasury",
        &treasury_s,
        "--fee-bps",
        "100",
        "--slash-bps",
        "5000",
        "--release-window-secs",
        &window_s,
        "--dispute-window-secs",
        &dispute_s,
        "--min-stake-lamports",
        &stake_s,
        "--json",
    ];
    let stranger = Env::new();
    stranger.ok(&["wallet", "new"]);
    ok(&v, &stranger, &["wallet", "airdrop", "1", "--json"]);
    let refused = onchain(&v, &stranger, &configure);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    let why = refused.json()["error"].as_str().unwrap().to_string();
    assert!(
        why.contains(&format!(
            "not the escrow program's upgrade authority ({admin_pk})"
        )),
        "{why}"
    );
    // the authority configures it once; the same again sends nothing;
    // other settings are refused with the field that differs
    let done = ok(&v, &admin, &configure);
    assert_eq!(done["result"]["outcome"], "initialized", "{done}");
    let again = ok(&v, &admin, &configure);
    assert_eq!(again["result"]["outcome"], "already_configured", "{again}");
    let mut other = configure.clone();
    other[5] = "200";
    let differs = onchain(&v, &admin, &other);
    assert_eq!(differs.code, 2, "{}", differs.stdout);
    let why = differs.json()["error"].as_str().unwrap().to_string();
    assert!(why.contains("fee_bps = 100 (asked: 200)"), "{why}");
    let shown = ok(&v, &admin, &["escrow", "show", "--json"]);
    assert_eq!(shown["config"]["treasury"], treasury_s.as_str());
    assert_eq!(shown["config"]["admin"], admin_pk.to_string());
    assert_eq!(shown["config"]["release_window_secs"], WINDOW);
    assert_eq!(shown["config"]["dispute_window_secs"], DISPUTE);
    assert_eq!(shown["config"]["min_stake_lamports"], STAKE);

    // the seller lists through the program
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let (seller, listed) = escrow_seller(&v, &dir, "Escrow lesson");
    let listing = &listed["listing"];
    let (id, manifest) = (
        listing["listing_id"].as_str().unwrap().to_string(),
        listing["manifest_id"].as_str().unwrap().to_string(),
    );
    let price = listing["price_lamports"].as_u64().unwrap();
    let seller_pk = pubkey_of(&v, &seller);
    let account = escrow::listing_address(&seller_pk, &id);
    let held = read(&v, &account, ListingAccount::decode).expect("listing account");
    let src = node::arweave::Source::Fs(node::arweave::FsStore::new(&dir));
    let signed = rt
        .block_on(node::market::buy::fetch_listing(&src, &manifest))
        .unwrap();
    let terms = node::market::escrow_trade::manifest_terms(&signed).unwrap();
    assert_eq!(
        (held.terms, held.stake),
        (terms, LISTING_STAKE),
        "the program holds what the manifest signs"
    );
    assert_eq!(terms.price_lamports, price);

    // the daemon, as sellers run it (with its x402 endpoint)
    let daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        work.path(),
        &[
            "--token-standard",
            "token2022",
            "--x402",
            "127.0.0.1:0",
            "--x402-network",
            "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
        ],
        "warn,node::x402=info",
    );
    let balance = |k: &Pubkey| rt.block_on(chain.balance(k)).unwrap();
    // x402 never offers an escrow listing: a direct payment for it would
    // never be released
    let x402 = format!(
        "http://{}/x402/listings/{id}",
        e2e::logged_listen_address(&daemon.1)
    );
    let (status, body) = rt.block_on(async {
        let r = reqwest::get(&x402).await.unwrap();
        (
            r.status().as_u16(),
            r.json::<serde_json::Value>().await.unwrap(),
        )
    });
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("escrow program")
            && body["error"].as_str().unwrap().contains("marketplace buy"),
        "{body}"
    );

    // an honest buyer: deposit, released, imported
    let (buyer, bought) = buyer_buys(&v, &manifest, &dir, 120);
    let log = || std::fs::read_to_string(work.path().join("listen.log")).unwrap_or_default();
    assert_eq!(
        bought.code,
        0,
        "{}\n{}\nlisten: {}",
        bought.stdout,
        bought.stderr,
        log()
    );
    let buyer_pk = pubkey_of(&v, &buyer);
    let e = read(
        &v,
        &escrow::escrow_address(&account, &buyer_pk),
        EscrowAccount::decode,
    )
    .unwrap();
    assert!(
        matches!(e.status, EscrowStatus::Revealed | EscrowStatus::Claimed),
        "{e:?}"
    );
    let found = buyer
        .ok(&["memory", "search", "Escrow", "--include-imported", "--json"])
        .json();
    assert!(
        found.to_string().contains("Escrow lesson"),
        "imported: {found}"
    );
    // an honest seller: there is nothing to dispute
    let nothing = onchain(
        &v,
        &buyer,
        &[
            "marketplace",
            "dispute",
            &manifest,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    assert_ne!(nothing.code, 0, "{}", nothing.stdout);
    assert!(
        nothing.stdout.contains("no misdelivery to prove"),
        "{}",
        nothing.stdout
    );

    // a stranger's bare deposit: no memo, no payment address; revealed all the same
    let stranger = node::wallet::Wallet::generate();
    let stranger_pk: Pubkey = stranger.address().parse().unwrap();
    v.fund(&stranger_pk, 1);
    let blind = node::market::escrow_trade::blind_point_for(
        &stranger.x25519_secret(),
        &held,
        &account,
        &stranger_pk,
    )
    .unwrap();
    let bare = escrow::deposit(
        &account,
        &stranger_pk,
        &terms,
        &blind,
        &stranger.x25519_public(),
    );
    rt.block_on(chain.send(&[bare], &[&stranger.solana_keypair()]))
        .unwrap();
    let at = escrow::escrow_address(&account, &stranger_pk);
    wait_for("the bare deposit's reveal", 90, || {
        read(&v, &at, EscrowAccount::decode).is_some_and(|e| e.status != EscrowStatus::Deposited)
    });
    let k = node::market::escrow_trade::buyer_blinding(
        &stranger.x25519_secret(),
        &terms.seller_x25519,
        &account,
        &stranger_pk,
    )
    .unwrap();
    let revealed = read(&v, &at, EscrowAccount::decode).unwrap().revealed;
    escrow::math::client::open(&revealed, &k, &terms.key_point)
        .expect("the reveal opens k for this buyer");

    // a deposit binding a B that is not its blinding: declined, returned in full
    let griefer = v.funded_keypair(1);
    let wrong = escrow::math::client::point_of(&[7; 32]);
    let grief = escrow::deposit(&account, &griefer.pubkey(), &terms, &wrong, &[9; 32]);
    rt.block_on(chain.send(&[grief], &[&griefer])).unwrap();
    let grief_at = escrow::escrow_address(&account, &griefer.pubkey());
    wait_for("the wrong blinding declined", 90, || {
        read(&v, &grief_at, EscrowAccount::decode)
            .is_some_and(|e| e.status == EscrowStatus::Declined)
    });
    let g0 = balance(&griefer.pubkey());
    let escrow_rent = rt
        .block_on(chain.rent_exemption(node::escrow::ESCROW_ACCOUNT_SPACE))
        .unwrap();
    rt.block_on(chain.send(&[escrow::refund(&account, &griefer.pubkey())], &[&griefer]))
        .unwrap();
    assert_eq!(
        balance(&griefer.pubkey()),
        g0 + price + escrow_rent - 5_000,
        "the whole deposit and the rent back, less the network fee"
    );
    assert_eq!(
        read(&v, &account, ListingAccount::decode).unwrap().stake,
        LISTING_STAKE,
        "no slash"
    );

    // after the dispute window the daemon claims both: the treasury holds
    // exactly two fees (the seller's own balance also pays mint rent and
    // transaction fees)
    let fee = price.div_ceil(100);
    let treasury_funded = 1_000_000_000;
    wait_for("the daemon claiming both payments", 60, || {
        balance(&treasury.pubkey()) == treasury_funded + 2 * fee
    });
    wait_for("both escrows claimed", 30, || {
        [escrow::escrow_address(&account, &buyer_pk), at]
            .iter()
            .all(|a| {
                read(&v, a, EscrowAccount::decode)
                    .is_some_and(|e| e.status == EscrowStatus::Claimed)
            })
    });
    // the buyer closes its claimed escrow for the rent
    let closed = ok(
        &v,
        &buyer,
        &[
            "marketplace",
            "refund",
            &manifest,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    assert_eq!(closed["listing_id"], id.as_str());
    assert!(read(
        &v,
        &escrow::escrow_address(&account, &buyer_pk),
        EscrowAccount::decode
    )
    .is_none());

    // the daemon stops; a buyer never revealed to takes a refund + the
    // slash: by hand (the MCP tool), or by its own `watch` service
    drop(daemon);
    let unanswered = || {
        let (who, unreleased) = buyer_buys(&v, &manifest, &dir, 3);
        assert_eq!(unreleased.code, 0, "{}", unreleased.stderr);
        assert_eq!(
            unreleased.json()["status"],
            "pending",
            "no reveal without the daemon"
        );
        who
    };
    let (late, watcher) = (unanswered(), unanswered());
    let late_pk = pubkey_of(&v, &late);
    let early = onchain(
        &v,
        &late,
        &["marketplace", "refund", &manifest, "--storage-dir", &dir],
    );
    assert_ne!(early.code, 0, "refused inside the window: {}", early.stderr);
    // the window and the program's grace by the chain's clock (on a
    // loaded machine it lags the wall's)
    let deposited = read(
        &v,
        &escrow::escrow_address(&account, &late_pk),
        EscrowAccount::decode,
    )
    .expect("the late buyer's escrow")
    .deposited_at;
    v.wait_block_time(deposited + WINDOW + escrow::REVEAL_GRACE_SECS + 1);
    let before = balance(&late_pk);
    // the agent's way: the MCP tool market_refund, through the official SDK
    let py = e2e::mcp_python();
    let server: Vec<String> = [
        "-u",
        v.rpc_url.as_str(),
        "--commitment",
        "confirmed",
        "mcp",
        "--storage-dir",
        &dir,
        "--budget-24h-lamports",
        "1000000000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let refund = || {
        let s = util::mcp::session(
            &py,
            late.dir.path(),
            &server,
            serde_json::json!([["call", "market_refund", {"manifest_id": manifest}]]),
        );
        s["steps"][0].clone()
    };
    let mut refunded = refund();
    for _ in 0..10 {
        if refunded["is_error"] == false {
            break;
        }
        std::thread::sleep(Duration::from_secs(2)); // the chain's clock lags
        refunded = refund();
    }
    assert_eq!(refunded["is_error"], false, "{refunded}");
    // under a spend policy the refund's fee is counted (never refused)
    let refund_sig = refunded["result"]["signature"].as_str().unwrap();
    let fees = node::spend::SpendLedger::open(&node::spend::ledger_path(
        &late.path(".brainctl/wallet.json"),
    ))
    .unwrap()
    .recent(10)
    .unwrap();
    assert!(
        fees.iter().any(|r| r.kind == "refund"
            && r.signature.as_deref() == Some(refund_sig)
            && r.lamports >= 5_000),
        "{fees:?}"
    );
    // its pending buy ends there: the agent's market_pending finds the
    // escrow closed by hand
    let pending = util::mcp::session(
        &py,
        late.dir.path(),
        &server,
        serde_json::json!([["call", "market_pending", {}]]),
    );
    let result = &pending["steps"][0]["result"];
    assert_eq!(result["outcomes"][0]["state"], "closed", "{pending}");
    assert_eq!(result["still_pending"], 0, "{pending}");
    // the share its deposit reserved: half the floor
    let slash = STAKE / 2;
    assert!(
        balance(&late_pk) + 10_000 >= before + price + slash,
        "price back plus the share its deposit reserved"
    );
    // the other unanswered buyer does nothing by hand: its `watch`
    // service refunds the missed window with the same share
    let watcher_pk = pubkey_of(&v, &watcher);
    let watcher_before = balance(&watcher_pk);
    let watched = onchain(
        &v,
        &watcher,
        &[
            "marketplace",
            "watch",
            "--until-done",
            "--every",
            "1",
            "--json",
        ],
    );
    assert_eq!(watched.code, 0, "{}", watched.stderr);
    assert!(
        watched
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|o| o["outcome"]["state"] == "refunded"),
        "{}",
        watched.stdout
    );
    assert!(
        balance(&watcher_pk) + 10_000 >= watcher_before + price + slash,
        "the watch service's refund: price back plus the share"
    );
    let onchain = read(&v, &account, ListingAccount::decode).unwrap();
    assert_eq!(
        (onchain.stake, onchain.reserved, onchain.open_escrows),
        (LISTING_STAKE - 2 * slash, 0, 0)
    );

    // cancel retires the listing in the program (stake back, the id kept
    // for good); a deposit after it fails
    let cancelled = ok(&v, &seller, &["marketplace", "cancel", &id, "--json"]);
    assert_eq!(cancelled["listing_id"], id.as_str());
    let retired = read(&v, &account, ListingAccount::decode).expect("kept as a tombstone");
    assert_eq!(
        (retired.status, retired.stake),
        (node::escrow::ListingStatus::Retired, 0)
    );
    let after = v.funded_keypair(1);
    let deposit = escrow::deposit(&account, &after.pubkey(), &terms, &blind, &[8; 32]);
    assert!(rt.block_on(chain.send(&[deposit], &[&after])).is_err());
}

/// How the cheating seller lies.
#[derive(Clone, Copy, PartialEq)]
enum Lie {
    /// A listing made before midstate commitments (a v1 blob, no
    /// `blob_format`): chunk 0's ciphertext altered, the root recomputed.
    OldListingChunk,
    /// A blob sealed consistently (every chunk opens to its hashes and
    /// states) of another plaintext than the bundle `bundle_hash` names.
    AnotherBundle,
    /// The promised bundle, its blob and manifest stating 2 memories more
    /// than it holds (the last chunk's tally lies).
    MemoryCount,
}

/// A listing made before midstate commitments still trades as before:
/// its lying chunk is proven by the buyer's own client (a chunk proof).
#[test]
fn an_old_listings_lying_chunk_is_proven_by_the_buyers_own_client() {
    cheating_seller(Lie::OldListingChunk);
}

/// Issue 45 through the binaries: a seller whose blob opens, chunk by
/// chunk, to its own commitments but is not the bundle the signed
/// manifest's `bundle_hash` names is convicted by the step proof the
/// buyer's client builds and sends without the user's action.
#[test]
fn a_seller_who_seals_another_bundle_is_convicted_by_the_buyers_own_client() {
    cheating_seller(Lie::AnotherBundle);
}

/// Issue 45 through the binaries: a seller whose manifest and blob state
/// more memories than the bundle holds is convicted by the step proof the
/// buyer's client builds and sends without the user's action.
#[test]
fn a_seller_who_overstates_the_memory_count_is_convicted_by_the_buyers_own_client() {
    cheating_seller(Lie::MemoryCount);
}

/// A cheating seller (its own tooling, through the node's library: our CLI
/// lists honestly) commits to a blob that `lie` makes dishonest, and
/// reveals a correct key. The buyer's `buy` proves the lie itself: the
/// program alone returns the deposit and a share of the stake, convicts
/// the listing, and the seller can never claim; a patient buyer's
/// `marketplace watch` does the same later from the blob it kept.
fn cheating_seller(lie: Lie) {
    use node::arweave::{FsStore, Uploader};
    use node::escrow::math::blob::{seal, seal_v1, Blob};
    const PRICE: u64 = CHEAT_PRICE;
    let (v, treasury) = configured(&[], 300);
    let (rt, chain) = (e2e::runtime(), v.chain());

    // the cheating seller's listing: the blob's chunk 0 altered, the root
    // recomputed over it (so the buyer's check before paying passes)
    let seller = node::wallet::Wallet::generate();
    let seller_pk: Pubkey = seller.address().parse().unwrap();
    v.fund(&seller_pk, 5);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let uploader = Uploader::Fs(FsStore::new(&dir));
    let id = node::market::list::new_listing_id();
    let plain: Vec<u8> = if lie == Lie::MemoryCount {
        // three memories, as the canonical bundle spells them
        let rows: Vec<String> = (0..3)
            .map(|i| {
                format!(
                    r#"{{"agent_id":"a","content":"{}","id":{i}}}"#,
                    "m".repeat(600)
                )
            })
            .collect();
        format!(r#"{{"memories":[{}],"version":1}}"#, rows.join(",")).into_bytes()
    } else {
        (0..2_000u32).map(|i| (i % 251) as u8).collect()
    };
    let bundle_hash = hex::encode(escrow::math::sha256(&[&plain]));
    let k = escrow::listing_scalar(&seller, &id);
    let (sealed, lying_index) = match lie {
        Lie::OldListingChunk => (seal_v1(&k, &plain).unwrap(), 0),
        Lie::AnotherBundle => {
            let mut shipped = plain.clone();
            shipped[1_000] ^= 0x55;
            // sealed honestly, so the last chunk's step ends at another hash
            (seal(&k, &shipped).unwrap(), (plain.len() as u32 - 1) / 256)
        }
        Lie::MemoryCount => {
            let last = (plain.len() as u32 - 1) / 256;
            let sealed = escrow_math::forgery::overstate_memories(&k, &plain, last, 2, false);
            (sealed, last)
        }
    };
    let mut bytes = sealed.bytes;
    if lie == Lie::OldListingChunk {
        let at = Blob::parse(&bytes).unwrap().cipher_offset();
        bytes[at + 3] ^= 0x20;
    }
    let lying_root = Blob::parse(&bytes).unwrap().root();
    // the preview states what the blob states (3 + 2 for the count lie):
    // the buyer's check before paying passes
    let stated = Blob::parse(&bytes).unwrap().stated_memories();
    assert_eq!(stated.is_some_and(|n| n == 5), lie == Lie::MemoryCount);
    let format = if lie == Lie::OldListingChunk {
        node::escrow::math::blob::Format::V1
    } else {
        node::escrow::math::blob::Format::V3
    };
    let (manifest, blob_id) = list_as_cheater(
        &v,
        &uploader,
        &seller,
        &id,
        Sealed {
            bytes,
            plain_len: sealed.plain_len,
            root: lying_root,
            key_point: escrow::math::client::point_of(&k),
            format,
        },
        &bundle_hash,
        stated.map_or(1, u64::from),
    );
    let account = escrow::listing_address(&seller_pk, &id);
    let balance = |k: &Pubkey| rt.block_on(chain.balance(k)).unwrap();
    let rent = rt
        .block_on(chain.rent_exemption(escrow::ESCROW_ACCOUNT_SPACE))
        .unwrap();
    // the seller reveals its key to a buyer's escrow (the lying blob's key)
    let reveal_to =
        |buyer_pk: &Pubkey| util::escrow::reveal_by_hand(&v, &seller, &account, buyer_pk, &k);

    // a buyer whose `buy` returns before the seller answers: the buy is
    // kept pending with the blob it checked, not failed
    // a blob that cannot prove its promise is paid for only by name
    let unproven: &[&str] = match lie {
        Lie::OldListingChunk => &["--allow-unproven-blob"],
        _ => &[],
    };
    let (patient, pending) = buyer_buys_with(&v, &manifest, &dir, 1, unproven);
    assert_eq!(pending.code, 0, "{}", pending.stderr);
    assert_eq!(pending.json()["status"], "pending", "{}", pending.stdout);
    let patient_pk = pubkey_of(&v, &patient);
    let listed = onchain(&v, &patient, &["marketplace", "watch", "--list", "--json"]);
    assert_eq!(
        listed.json()["buys"][0]["state"],
        "pending",
        "{}",
        listed.stdout
    );
    let patient_before = balance(&patient_pk);

    // another buyer buys through the CLI and waits; the seller reveals
    let (buyer, buying) = buying_with(&v, &manifest, &dir, 90, unproven);
    let buyer_pk = pubkey_of(&v, &buyer);
    let at = escrow::escrow_address(&account, &buyer_pk);
    wait_for("the buyer's deposit", 60, || {
        read(&v, &at, EscrowAccount::decode).is_some()
    });
    let before = balance(&buyer_pk);
    reveal_to(&patient_pk);
    reveal_to(&buyer_pk);
    // the buyer's own `buy` finds the lie (chunk 0's hash; the last
    // chunk's step) and sends the fraud proof itself: deposit, rent and
    // half the stake back, nobody disputing by hand
    let out = buying.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "nothing imported: {stdout}");
    assert!(
        stdout.contains(&format!("chunk {lying_index} of the blob does not open"))
            && stdout.contains("the fraud proof was sent and held"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let network_fee = before + PRICE + rent + STAKE / 2 - balance(&buyer_pk);
    assert!(
        network_fee <= 10_000,
        "deposit, rent and the stake share back, less the fee: {network_fee}"
    );
    // the buyer's set-up, as `doctor` sees it on this cluster
    if lie == Lie::AnotherBundle {
        let doctor = onchain(
            &v,
            &buyer,
            &["doctor", "--json", "--indexer", "http://127.0.0.1:9"],
        );
        assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
        let checks = doctor.json()["checks"].clone();
        let status = |name: &str| {
            checks
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["check"] == name)
                .map(|c| c["status"].clone())
        };
        for ok in ["rpc", "wallet", "balance", "store", "escrow"] {
            assert_eq!(status(ok), Some(serde_json::json!("ok")), "{ok}: {checks}");
        }
        assert_eq!(
            status("indexer"),
            Some(serde_json::json!("warn")),
            "{checks}"
        );
    }
    // a dispute by hand afterwards has nothing left to prove
    let again = onchain(
        &v,
        &buyer,
        &[
            "marketplace",
            "dispute",
            &manifest,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    assert_ne!(again.code, 0, "{}", again.stdout);
    assert!(
        read(&v, &at, EscrowAccount::decode).is_none(),
        "the escrow closed to the buyer"
    );

    // the patient buyer's service, with the gateway no longer serving the
    // blob: it opens the reveal against the blob it kept, finds the lie
    // and proves it, without the user's action
    let blob_file = std::path::Path::new(&dir).join(&blob_id);
    std::fs::remove_file(&blob_file).unwrap();
    let watched = onchain(
        &v,
        &patient,
        &[
            "marketplace",
            "watch",
            "--until-done",
            "--every",
            "1",
            "--json",
        ],
    );
    assert_eq!(watched.code, 0, "{}", watched.stderr);
    let outcome: serde_json::Value = watched
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|o| o["outcome"]["state"] != "pending")
        .unwrap_or_else(|| panic!("no outcome: {}", watched.stdout));
    assert_eq!(outcome["outcome"]["state"], "disputed", "{outcome}");
    assert!(
        outcome["outcome"]["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("chunk {lying_index} lied")),
        "{outcome}"
    );
    let network_fee = patient_before + PRICE + rent + STAKE / 2 - balance(&patient_pk);
    assert!(
        network_fee <= 10_000,
        "made whole, less the fee: {network_fee}"
    );
    let listed = onchain(&v, &patient, &["marketplace", "watch", "--list", "--json"]);
    assert_eq!(
        listed.json()["buys"][0]["state"],
        "disputed",
        "{}",
        listed.stdout
    );

    let convicted = read(&v, &account, ListingAccount::decode).unwrap();
    assert_eq!(
        (convicted.status, convicted.stake, convicted.open_escrows),
        (node::escrow::ListingStatus::Convicted, 0, 0),
        "each proven lie took its reserved share"
    );
    // nothing is left for the seller to claim
    let claim = escrow::claim(&account, &buyer_pk, &seller_pk, &treasury.pubkey());
    assert!(rt
        .block_on(chain.send(&[claim], &[&seller.solana_keypair()]))
        .is_err());
}

/// Through the binaries: a seller who seals a consistent blob
/// of garbage in a format that cannot prove its promise (format 1: the
/// bundle hash; format 2 under a stated memory count: the count), with an
/// attractive bundle hash and preview, is refused by `quote` and `buy`
/// before the buyer pays a lamport; naming `--allow-unproven-blob` under
/// a spend policy is refused too, and `quote` with the flag says what the
/// blob cannot prove.
#[test]
fn a_seller_who_downgrades_the_blob_format_is_refused_before_the_buyer_pays() {
    use node::arweave::{FsStore, Uploader};
    use node::escrow::math::blob::{seal_v1, seal_v2};
    use util::escrow::{list_downgraded, Seal};
    let (v, _treasury) = configured(&[], 300);
    let chain = v.chain();
    let rt = e2e::runtime();
    let balance = |k: &Pubkey| rt.block_on(chain.balance(k)).unwrap();
    let seller = node::wallet::Wallet::generate();
    v.fund(&seller.address().parse().unwrap(), 5);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let uploader = Uploader::Fs(FsStore::new(&dir));
    // what the listing promises (twelve memories, as the preview says) and
    // what it seals, consistently: garbage
    let promised = hex::encode(escrow::math::sha256(&[b"a bundle of twelve memories"]));
    let garbage = vec![0x41u8; 900];
    for (seal, format) in [(seal_v1 as Seal, 1u8), (seal_v2 as Seal, 2u8)] {
        let (id, manifest) = list_downgraded(&v, &uploader, &seller, seal, &garbage, &promised, 12);
        let buyer = Env::new();
        buyer.ok(&["wallet", "new"]);
        ok(&v, &buyer, &["wallet", "airdrop", "2", "--json"]);
        let buyer_pk = pubkey_of(&v, &buyer);
        let before = balance(&buyer_pk);
        let said = |r: &util::Run| format!("{}{}", r.stdout, r.stderr);
        let quote = onchain(
            &v,
            &buyer,
            &[
                "marketplace",
                "quote",
                &manifest,
                "--storage-dir",
                &dir,
                "--json",
            ],
        );
        assert_ne!(quote.code, 0, "{}", said(&quote));
        assert!(
            said(&quote).contains(&format!("blob is format {format}"))
                && said(&quote).contains("--allow-unproven-blob"),
            "{}",
            said(&quote)
        );
        let args = util::escrow::buy_args(&v, &manifest, &dir, 5, &[]);
        let bought = buyer.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_ne!(bought.code, 0, "{}", said(&bought));
        assert!(
            said(&bought).contains("--allow-unproven-blob"),
            "{}",
            said(&bought)
        );
        // the person's flag shows what the blob cannot prove
        let named = onchain(
            &v,
            &buyer,
            &[
                "marketplace",
                "quote",
                &manifest,
                "--storage-dir",
                &dir,
                "--allow-unproven-blob",
                "--json",
            ],
        );
        assert_eq!(named.code, 0, "{}", said(&named));
        let proof = named.json()["quote"]["escrow_proof"].clone();
        assert_eq!(proof["blob_format"], format, "{proof}");
        assert_eq!(proof["proves_bundle_hash"], format >= 2, "{proof}");
        assert_eq!(proof["proves_memory_count"], false, "{proof}");
        assert_eq!(
            named.json()["allowed"],
            true,
            "no spend policy: {}",
            named.stdout
        );
        // under a spend policy (an agent's), never, even named
        buyer.ok(&[
            "marketplace",
            "budget",
            "--set-max-per-buy-lamports",
            "5000000000",
        ]);
        let args = util::escrow::buy_args(&v, &manifest, &dir, 5, &["--allow-unproven-blob"]);
        let policed = buyer.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_ne!(policed.code, 0, "{}", said(&policed));
        assert!(
            said(&policed).contains("a spend policy never allows such a buy"),
            "{}",
            said(&policed)
        );
        // not a lamport paid, no escrow made
        assert_eq!(balance(&buyer_pk), before);
        let account = escrow::listing_address(&seller.address().parse().unwrap(), &id);
        assert!(read(
            &v,
            &escrow::escrow_address(&account, &buyer_pk),
            EscrowAccount::decode
        )
        .is_none());
    }
}

/// Through the binaries: a `buy` killed
/// right after its deposit landed (before it could record anything after
/// the send) left a pending row recorded when the deposit was signed;
/// the seller's `listen`, its key file lost, still reveals (a reveal needs
/// none); `watch` skips a row the user's edit made unreadable, confirms
/// the deposit landed, imports, and once the dispute window passed claims
/// for the seller and closes the escrow, its rent back to the buyer.
#[test]
fn a_buy_killed_after_its_deposit_landed_is_finished_by_watch_and_its_rent_comes_back() {
    let (v, _treasury) = configured(&[], DISPUTE as u64);
    let chain = v.chain();
    let rt = e2e::runtime();
    let balance = |k: &Pubkey| rt.block_on(chain.balance(k)).unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let (seller, listed) = escrow_seller(&v, &dir, "Kill-safe escrow lesson");
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let id = listed["listing"]["listing_id"]
        .as_str()
        .unwrap()
        .to_string();
    let seller_pk = pubkey_of(&v, &seller);
    let account = escrow::listing_address(&seller_pk, &id);
    // the seller's key files are gone
    std::fs::remove_dir_all(seller.path(".brainctl/keys")).unwrap();

    let buyer = Env::new();
    buyer.ok(&["wallet", "new"]);
    ok(&v, &buyer, &["wallet", "airdrop", "2", "--json"]);
    let buyer_pk = pubkey_of(&v, &buyer);
    let at = escrow::escrow_address(&account, &buyer_pk);
    let start = balance(&buyer_pk);
    let died = buyer
        .cmd()
        .args(util::escrow::buy_args(&v, &manifest, &dir, 60, &[]))
        .env("BRAINCTL_FAULT_ABORT_AFTER", "buy_landed")
        .output()
        .unwrap();
    assert!(!died.status.success(), "the buy died after landing");
    let deposit = read(&v, &at, EscrowAccount::decode).expect("the deposit landed");
    assert_eq!(deposit.status, EscrowStatus::Deposited);
    let kept = onchain(&v, &buyer, &["marketplace", "watch", "--list", "--json"]);
    let row = kept.json()["buys"][0].clone();
    assert_eq!(
        (row["state"].clone(), row["landed"].clone()),
        ("pending".into(), false.into()),
        "{row}"
    );
    // the user's edit leaves a second row unreadable
    let db = rusqlite::Connection::open(buyer.path(".brainctl/pending-escrows.db")).unwrap();
    db.execute(
        "INSERT INTO pending SELECT 'edited', listing_id, escrow, '{\"not\": \"a manifest\"}', blob,
             target, state, detail, created_at, updated_at, landed, last_valid_height, escrow_open
         FROM pending",
        [],
    )
    .unwrap();
    drop(db);

    // the seller answers without its key file
    wait_for("the reveal", 120, || {
        let out = seller
            .cmd()
            .args(["-u", &v.rpc_url, "--commitment", "confirmed"])
            .args([
                "marketplace",
                "listen",
                "--once",
                "--storage-dir",
                &dir,
                "--json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        read(&v, &at, EscrowAccount::decode).is_some_and(|e| e.status == EscrowStatus::Revealed)
    });
    let watched = onchain(
        &v,
        &buyer,
        &[
            "marketplace",
            "watch",
            "--until-done",
            "--every",
            "1",
            "--json",
        ],
    );
    assert_eq!(watched.code, 0, "{}{}", watched.stdout, watched.stderr);
    let outcomes: Vec<Value> = watched
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|o| o["outcome"].clone())
        .collect();
    let detail = |o: &Value| o["detail"].as_str().unwrap_or("").to_string();
    assert!(
        outcomes
            .iter()
            .any(|o| o["buy_signature"] == "edited" && detail(o).contains("does not read")),
        "the edited row is reported: {outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| o["state"] == "imported" && !detail(o).contains("escrow closed")),
        "imported: {outcomes:?}"
    );
    assert!(
        outcomes.iter().any(|o| o["state"] == "imported" && detail(o).contains("escrow closed, its rent back")),
        "its escrow closed: {outcomes:?}"
    );
    let listed = onchain(&v, &buyer, &["marketplace", "watch", "--list", "--json"]);
    let mine = listed.json()["buys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| {
            b["buy_signature"] != Value::Null
                && b["escrow_open"] == false
                && b["state"] == "imported"
        })
        .cloned();
    assert!(mine.is_some(), "{}", listed.stdout);
    // the escrow is gone: the buyer paid the price and fees, its rent back
    assert!(
        read(&v, &at, EscrowAccount::decode).is_none(),
        "the escrow closed"
    );
    let spent = start - balance(&buyer_pk);
    assert!(
        spent >= deposit.amount && spent <= deposit.amount + 30_000,
        "the price and at most a few fees, no rent left behind: {spent}"
    );
    let memories = buyer
        .ok(&[
            "memory",
            "search",
            "Kill-safe",
            "--include-imported",
            "--json",
        ])
        .json();
    assert!(
        memories.to_string().contains("Kill-safe escrow lesson"),
        "{memories}"
    );
}

/// Through the binaries: once one buyer convicts a listing,
/// another buyer whose client was offline through its whole dispute
/// window is still refunded its deposit, rent and share by `watch` (it
/// used to try a dispute after the window and give up).
#[test]
fn a_late_buyer_of_a_convicted_listing_is_refunded_with_its_share() {
    use node::arweave::{FsStore, Uploader};
    let (v, _treasury) = configured(&[], DISPUTE as u64);
    let (rt, chain) = (e2e::runtime(), v.chain());
    let balance = |k: &Pubkey| rt.block_on(chain.balance(k)).unwrap();
    let seller = node::wallet::Wallet::generate();
    let seller_pk: Pubkey = seller.address().parse().unwrap();
    v.fund(&seller_pk, 5);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let uploader = Uploader::Fs(FsStore::new(&dir));
    let id = node::market::list::new_listing_id();
    let plain: Vec<u8> = (0..2_000u32).map(|i| (i % 251) as u8).collect();
    let bundle_hash = hex::encode(escrow::math::sha256(&[&plain]));
    let k = escrow::listing_scalar(&seller, &id);
    let mut shipped = plain.clone();
    shipped[1_000] ^= 0x55;
    let (sealed, stated) = Sealed::v3(&k, &shipped);
    let (manifest, _) = list_as_cheater(&v, &uploader, &seller, &id, sealed, &bundle_hash, stated);
    let account = escrow::listing_address(&seller_pk, &id);
    let reveal_to =
        |buyer_pk: &Pubkey| util::escrow::reveal_by_hand(&v, &seller, &account, buyer_pk, &k);
    // two buyers deposit and go away (their buys kept pending)
    let (first, pending) = buyer_buys(&v, &manifest, &dir, 1);
    assert_eq!(pending.json()["status"], "pending", "{}", pending.stdout);
    let (late, pending) = buyer_buys(&v, &manifest, &dir, 1);
    assert_eq!(pending.json()["status"], "pending", "{}", pending.stdout);
    let (first_pk, late_pk) = (pubkey_of(&v, &first), pubkey_of(&v, &late));
    // the first is revealed to and convicts the listing at once
    reveal_to(&first_pk);
    let convicting = onchain(&v, &first, &["marketplace", "watch", "--once", "--json"]);
    assert_eq!(convicting.code, 0, "{}", convicting.stderr);
    assert_eq!(
        read(&v, &account, ListingAccount::decode).unwrap().status,
        node::escrow::ListingStatus::Convicted,
        "{}",
        convicting.stdout
    );
    // the late buyer's reveal; its client is offline past its dispute window
    reveal_to(&late_pk);
    let late_before = balance(&late_pk);
    let rent = rt
        .block_on(chain.rent_exemption(escrow::ESCROW_ACCOUNT_SPACE))
        .unwrap();
    // past the window by the cluster's clock (it lags the wall clock on a
    // loaded machine): until then the client still tries its own proof
    let at = escrow::escrow_address(&account, &late_pk);
    let revealed_at = read(&v, &at, EscrowAccount::decode).unwrap().revealed_at;
    wait_for("the dispute window's end", 120, || {
        rt.block_on(chain.cluster_time()).unwrap() > revealed_at + DISPUTE + 1
    });
    let watched = onchain(&v, &late, &["marketplace", "watch", "--once", "--json"]);
    assert_eq!(watched.code, 0, "{}", watched.stderr);
    assert_eq!(
        watched.json()["outcomes"][0]["state"],
        "refunded",
        "{}",
        watched.stdout
    );
    let back = balance(&late_pk) - late_before;
    assert!(
        back + 10_000 >= CHEAT_PRICE + rent + STAKE / 2 && back <= CHEAT_PRICE + rent + STAKE / 2,
        "deposit, rent and the share back, less the fee: {back}"
    );
}

/// Through the binaries: the seller's RPC withholds the reveal
/// (it answers the send and forwards nothing), so the reveal's `s` is
/// known to it and the reveal never lands; `listen`'s next pass, inside
/// the last 75 s before the answer deadline where a first reveal would be
/// declined, sends the reveal again and it lands: never declined once
/// sent. No transaction the seller's node asked the RPC to simulate
/// carried `s`.
#[test]
fn a_reveal_an_rpc_withholds_is_sent_again_and_never_declined() {
    use e2e::proxy::{Fault, FaultProxy};
    let (v, _treasury) = configured(&[], 300);
    let proxy = FaultProxy::start(&v.rpc_url);
    let chain = v.chain();
    let rt = e2e::runtime();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let (seller, listed) = escrow_seller(&v, &dir, "Withheld reveal lesson");
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let id = listed["listing"]["listing_id"]
        .as_str()
        .unwrap()
        .to_string();
    let account = escrow::listing_address(&pubkey_of(&v, &seller), &id);
    let (buyer, pending) = buyer_buys(&v, &manifest, &dir, 1);
    assert_eq!(pending.json()["status"], "pending", "{}", pending.stdout);
    let at = escrow::escrow_address(&account, &pubkey_of(&v, &buyer));
    let deposited_at = read(&v, &at, EscrowAccount::decode).unwrap().deposited_at;
    let listen_with = |extra: &[&str]| {
        seller
            .cmd()
            .args(["-u", &proxy.url, "--commitment", "confirmed"])
            .args([
                "marketplace",
                "listen",
                "--once",
                "--storage-dir",
                &dir,
                "--json",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let listen = || listen_with(&[]);
    proxy.set(Fault::DropSends);
    let first = listen();
    let status = |v: &e2e::TestValidator| read(v, &at, EscrowAccount::decode).unwrap().status;
    assert_eq!(
        status(&v),
        EscrowStatus::Deposited,
        "the reveal was withheld: {}",
        String::from_utf8_lossy(&first.stderr)
    );
    // inside the margin where a first reveal is declined
    let deadline = deposited_at + WINDOW + 90;
    wait_for("the decline margin", 200, || {
        rt.block_on(chain.cluster_time()).unwrap() + 75 >= deadline + 5
    });
    proxy.set(Fault::None);
    let mut again = listen();
    for _ in 0..5 {
        if status(&v) != EscrowStatus::Deposited {
            break;
        }
        again = listen();
    }
    let e = read(&v, &at, EscrowAccount::decode).unwrap();
    assert_eq!(
        e.status,
        EscrowStatus::Revealed,
        "sent again, never declined: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    let simulated = proxy.simulated();
    assert!(
        !simulated.is_empty(),
        "the node simulates its other transactions"
    );
    for wire in &simulated {
        assert!(
            !wire.windows(32).any(|w| w == e.revealed),
            "a simulation carried s"
        );
    }
    let opened = onchain(&v, &buyer, &["marketplace", "watch", "--once", "--json"]);
    assert_eq!(
        opened.json()["outcomes"][0]["state"],
        "imported",
        "{}",
        opened.stdout
    );

    // with a second endpoint (`--reveal-rpc`), the same withholding RPC
    // cannot hold a reveal back: it lands on the first pass
    let (second, pending) = buyer_buys(&v, &manifest, &dir, 1);
    assert_eq!(pending.json()["status"], "pending", "{}", pending.stdout);
    let at = escrow::escrow_address(&account, &pubkey_of(&v, &second));
    proxy.set(Fault::DropSends);
    let relayed = listen_with(&["--reveal-rpc", &v.rpc_url]);
    proxy.set(Fault::None);
    assert_eq!(
        read(&v, &at, EscrowAccount::decode).unwrap().status,
        EscrowStatus::Revealed,
        "relayed past the withholding RPC: {}",
        String::from_utf8_lossy(&relayed.stderr)
    );
    let opened = onchain(&v, &second, &["marketplace", "watch", "--once", "--json"]);
    assert_eq!(
        opened.json()["outcomes"][0]["state"],
        "imported",
        "{}",
        opened.stdout
    );
}

/// `listen` killed after each step of a sealed-escrow release (the
/// deposit recorded, then the reveal landed before the receipt is minted)
/// resumes without a second reveal or mint: the program state and the
/// reveal's memo in the escrow's history are the record, and k is derived
/// again from the wallet.
#[test]
fn a_sealed_release_killed_at_every_step_reveals_and_mints_once() {
    let (v, _treasury) = configured(&e2e::light_args(), 300);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let (seller, listed) = escrow_seller(&v, &dir, "Crash-safe escrow lesson");
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let id = listed["listing"]["listing_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (buyer, buying) = buying(&v, &manifest, &dir, 120);
    let listen = |fault: Option<&str>| {
        let mut c = seller.cmd();
        c.args(["-u", &v.rpc_url, "--commitment", "confirmed"])
            .args([
                "marketplace",
                "listen",
                "--once",
                "--storage-dir",
                &dir,
                "--json",
            ]);
        if let Some(f) = fault {
            c.env("BRAINCTL_FAULT_ABORT_AFTER", f);
        }
        c.output().unwrap()
    };
    // the first pass that finds the deposit dies once it is recorded
    let mut died = false;
    for _ in 0..120 {
        if !listen(Some("envelope_uploaded")).status.success() {
            died = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(died, "listen found the deposit and died after recording it");
    // then dies right after the reveal landed, before the receipt
    let out = listen(Some("release_sent"));
    assert!(
        !out.status.success(),
        "died after the reveal: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // a clean pass records the landed reveal and mints the receipt once
    // (one that meets the chain still catching up, e.g. the reveal not yet
    // in the escrow's history, leaves the buy to the next pass, as the
    // daemon's next round would)
    let mut passes = Vec::new();
    for _ in 0..10 {
        let out = listen(None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pass: Value = serde_json::from_slice(&out.stdout).unwrap();
        let released = pass["counts"] == serde_json::json!([["released", 1]]);
        passes.push(format!("{pass}\n{}", String::from_utf8_lossy(&out.stderr)));
        if released {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        passes
            .last()
            .unwrap()
            .contains(r#""counts":[["released",1]]"#),
        "{passes:#?}"
    );
    let done = buying.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "buyer: {}",
        String::from_utf8_lossy(&done.stdout)
    );

    // exactly one reveal on chain for the escrow (the program refuses a
    // second; its transaction carries our one release memo)
    let (rt, chain) = (e2e::runtime(), v.chain());
    let seller_pk = pubkey_of(&v, &seller);
    let buyer_pk = pubkey_of(&v, &buyer);
    let at = escrow::escrow_address(&escrow::listing_address(&seller_pk, &id), &buyer_pk);
    let releases = rt
        .block_on(chain.signatures_for(&at, None))
        .unwrap()
        .iter()
        .filter_map(|s| {
            rt.block_on(chain.transaction(&s.signature.parse().unwrap()))
                .unwrap()
        })
        .filter(|t| {
            t.succeeded
                && t.memos.iter().any(|m| {
                    matches!(
                        node::market::MemoOp::parse(m),
                        Ok(node::market::MemoOp::Release { .. })
                    )
                })
        })
        .count();
    assert_eq!(
        releases, 1,
        "exactly one reveal (with its release memo) landed"
    );
    let e = read(&v, &at, EscrowAccount::decode).unwrap();
    assert_eq!(e.status, EscrowStatus::Revealed);
    // the buyer imported what it paid for
    let found = buyer
        .ok(&[
            "memory",
            "search",
            "Crash-safe",
            "--include-imported",
            "--json",
        ])
        .json();
    assert!(
        found.to_string().contains("Crash-safe escrow lesson"),
        "{found}"
    );
}

/// An escrow listing in the localnet's test dollar, through the binaries
/// and the indexer: `list --escrow --mint` opens `list_sealed_token`;
/// `buy` deposits the price into the escrow's vault (nothing but the fee
/// and rents in SOL); the `listen` service reveals and, after the
/// dispute window, claims the vault to the seller's and the treasury's
/// token accounts; the buyer closes the vault and the escrow for their
/// rent; a second buyer deposits through the indexer's `/settle`; the
/// indexer counts both and a rebuild agrees.
#[test]
fn an_escrow_listing_in_test_dollars_pays_the_seller_from_the_vault() {
    use node::chain::test_dollar;
    let (v, treasury) = util::escrow::configured(&e2e::test_dollar_args(), DISPUTE as u64);
    let rt = e2e::runtime();
    let chain = v.chain();
    let dollar = test_dollar::mint();
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(&chain, owner, &dollar))
            .unwrap()
    };
    // the treasury's account of the dollar takes the fee
    v.fund_dollars(&treasury.pubkey(), 1);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let seller = Env::new();
    seller.ok(&["wallet", "new"]);
    ok(&v, &seller, &["wallet", "airdrop", "5", "--json"]);
    seller.ok(&["memory", "add", "Escrowed in dollars", "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let (stake, mint_s) = (STAKE.to_string(), test_dollar::ADDRESS.to_string());
    let listed = ok(
        &v,
        &seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "2",
            "--sol-usd",
            "100",
            "--mint",
            &mint_s,
            "--escrow",
            "--stake-lamports",
            &stake,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let listing = &listed["listing"];
    let (id, manifest) = (
        listing["listing_id"].as_str().unwrap().to_string(),
        listing["manifest_id"].as_str().unwrap().to_string(),
    );
    // the stake at the floor backs two deposits at a time: each reserves
    // half the floor
    assert_eq!(
        listed["escrow_backs"],
        serde_json::json!({"open_escrows": 2, "share_lamports": STAKE / 2}),
        "{listed}"
    );
    let price = 2 * test_dollar::UNITS_PER_DOLLAR;
    let seller_pk = pubkey_of(&v, &seller);
    let account = escrow::listing_address(&seller_pk, &id);
    let held = read(&v, &account, ListingAccount::decode).expect("listing account");
    assert_eq!(
        (held.mint, held.terms.price_lamports, held.stake),
        (Some(test_dollar::ADDRESS), price, STAKE),
        "the program holds the listing in dollars"
    );

    let (indexer, base) = util::services::indexer(&v.rpc_url, &dir, work.path());
    let daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        work.path(),
        &["--token-standard", "token2022"],
        "warn",
    );
    let log = || std::fs::read_to_string(work.path().join("listen.log")).unwrap_or_default();

    // a buyer with dollars: deposit into the vault, revealed, imported
    let buyer = Env::new();
    buyer.ok(&["wallet", "new"]);
    ok(&v, &buyer, &["wallet", "airdrop", "1", "--json"]);
    let buyer_pk = pubkey_of(&v, &buyer);
    v.fund_dollars(&buyer_pk, 10);
    let quoted = ok(
        &v,
        &buyer,
        &[
            "marketplace",
            "quote",
            &manifest,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let quote = &quoted["quote"];
    assert_eq!(
        (&quote["settles"], &quote["token"]["price_units"]),
        (&Value::from("escrow"), &Value::from(price)),
        "{quote}"
    );
    assert!(
        quote["escrow_rent_lamports"].as_u64().unwrap() > 0,
        "the escrow's and the vault's rent: {quote}"
    );
    let bought = onchain(
        &v,
        &buyer,
        &[
            "marketplace",
            "buy",
            &manifest,
            "--storage-dir",
            &dir,
            "--timeout",
            "120",
            "--json",
        ],
    );
    assert_eq!(
        bought.code,
        0,
        "{}\n{}\nlisten: {}",
        bought.stdout,
        bought.stderr,
        log()
    );
    assert_eq!(units(&buyer_pk), 10 * test_dollar::UNITS_PER_DOLLAR - price);
    let found = buyer
        .ok(&[
            "memory",
            "search",
            "dollars",
            "--include-imported",
            "--json",
        ])
        .json();
    assert!(
        found.to_string().contains("Escrowed in dollars"),
        "imported: {found}"
    );

    // a second buyer deposits through the indexer's /settle
    let second = node::wallet::Wallet::from_seed(&[0x5D; 32]);
    let second_kp = second.solana_keypair();
    let second_pk = second_kp.pubkey();
    v.fund(&second_pk, 1);
    v.fund_dollars(&second_pk, 3);
    let blind = node::market::escrow_trade::blind_point_for(
        &second.x25519_secret(),
        &held,
        &account,
        &second_pk,
    )
    .unwrap();
    let (code, settle) = util::services::settle(
        &base,
        &second,
        &id,
        serde_json::json!({"buyer_x25519_pubkey": second.x25519_address(),
            "blind_point": hex::encode(blind), "cluster": "localnet", "currency": mint_s}),
    );
    assert_eq!(
        (code, &settle["price_units"], &settle["currency"]),
        (200, &Value::from(price), &Value::from(mint_s.as_str())),
        "{settle}"
    );
    util::services::sign_and_send(&v, &settle, &second_kp);
    assert_eq!(units(&second_pk), 3 * test_dollar::UNITS_PER_DOLLAR - price);
    let second_at = escrow::escrow_address(&account, &second_pk);
    wait_for("the /settle deposit's reveal", 90, || {
        read(&v, &second_at, EscrowAccount::decode)
            .is_some_and(|e| e.status != EscrowStatus::Deposited)
    });

    // after the dispute window the daemon claims both vaults: to the
    // seller less the 1% fee, the fee to the treasury's account
    let fee = price.div_ceil(100);
    wait_for("the daemon claiming both vaults", 90, || {
        units(&seller_pk) == 2 * (price - fee)
    });
    assert_eq!(
        units(&treasury.pubkey()),
        test_dollar::UNITS_PER_DOLLAR + 2 * fee
    );
    let vault = escrow::vault_address(&account, &buyer_pk, &dollar);
    // the vault (the escrow's associated account) is empty
    assert_eq!(units(&escrow::escrow_address(&account, &buyer_pk)), 0);
    // the buyer closes its claimed escrow and the vault for their rent
    let before = rt.block_on(chain.balance(&buyer_pk)).unwrap();
    ok(
        &v,
        &buyer,
        &[
            "marketplace",
            "refund",
            &manifest,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    assert!(rt.block_on(chain.balance(&buyer_pk)).unwrap() > before);
    let gone = |k: &Pubkey| {
        rt.block_on(
            chain
                .rpc()
                .get_account_with_commitment(k, chain.commitment()),
        )
        .unwrap()
        .value
        .is_none()
    };
    assert!(gone(&vault) && gone(&escrow::escrow_address(&account, &buyer_pk)));
    assert_eq!(units(&buyer_pk), 10 * test_dollar::UNITS_PER_DOLLAR - price);

    // the indexer counts both buys, released by the program's reveals
    let shown = util::services::listing_with_releases(&base, &id, 2);
    assert_eq!(shown["listing"]["releases"], 2, "{shown}");
    drop(daemon);
    util::services::indexer_matches_rebuild(
        &v.rpc_url,
        &base,
        &dir,
        work.path(),
        "an escrow listing in dollars",
    );
    drop(indexer);
}

/// Through the binaries, in a token: a seller lying in test dollars
/// (another bundle sealed under the promised hash) is revealed to; the
/// buyer's `marketplace watch` proves the lie: `dispute_token` convicts
/// without a token moving (a freeze of the vault could only delay what
/// follows), and the same pass withdraws the deposit from the vault with
/// the stake share. The buyer's dollars come back to the unit, the
/// listing is convicted, and the indexer reads the escrow as disputed
/// after the withdrawal. A seller who lists in a mint whose freeze
/// authority it holds is refused before the buyer pays, naming it.
#[test]
fn a_lying_seller_in_dollars_is_convicted_without_a_token_moving_and_a_freezing_one_is_refused() {
    use node::arweave::{FsStore, Uploader};
    use node::chain::test_dollar;
    use util::escrow::list_as_cheater_in;
    let (v, treasury) = configured(&e2e::test_dollar_args(), DISPUTE as u64);
    let (rt, chain) = (e2e::runtime(), v.chain());
    let dollar = test_dollar::mint();
    v.fund_dollars(&treasury.pubkey(), 1);
    let units = |owner: &Pubkey, mint: &node::chain::token::TokenMint| {
        rt.block_on(node::chain::token::balance(&chain, owner, mint))
            .unwrap()
    };
    let seller = node::wallet::Wallet::generate();
    let seller_pk: Pubkey = seller.address().parse().unwrap();
    v.fund(&seller_pk, 5);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let uploader = Uploader::Fs(FsStore::new(&dir));
    let plain: Vec<u8> = (0..2_000u32).map(|i| (i % 251) as u8).collect();
    let bundle_hash = hex::encode(escrow::math::sha256(&[&plain]));
    let mut shipped = plain.clone();
    shipped[1_000] ^= 0x55;
    let lie = |id: &str| {
        let k = escrow::listing_scalar(&seller, id);
        let (commits, stated) = Sealed::v3(&k, &shipped);
        (k, commits, stated)
    };
    let buyer_with_dollars = || {
        let buyer = Env::new();
        buyer.ok(&["wallet", "new"]);
        ok(&v, &buyer, &["wallet", "airdrop", "2", "--json"]);
        let pk = pubkey_of(&v, &buyer);
        (buyer, pk)
    };

    // a mint whose freeze authority is the seller's: refused before paying
    let freezing = node::chain::token::TokenMint {
        address: v.create_mint_with(6, Some(&seller_pk)),
        program: dollar.program,
        decimals: 6,
    };
    let frozen_id = node::market::list::new_listing_id();
    let (_, commits, stated) = lie(&frozen_id);
    let (frozen_manifest, _) = list_as_cheater_in(
        &v,
        &uploader,
        &seller,
        &frozen_id,
        commits,
        &bundle_hash,
        stated,
        Some(&freezing),
    );
    let (wary, wary_pk) = buyer_with_dollars();
    v.mint_tokens(&freezing, &wary_pk, 100 * CHEAT_PRICE);
    let args = util::escrow::buy_args(&v, &frozen_manifest, &dir, 1, &[]);
    let refused = wary.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        said.contains("freeze authority") && said.contains(&seller_pk.to_string()),
        "the refusal names the freeze authority: {said}"
    );
    assert_eq!(
        units(&wary_pk, &freezing),
        100 * CHEAT_PRICE,
        "nothing paid"
    );
    let frozen_account = escrow::listing_address(&seller_pk, &frozen_id);
    assert!(
        read(
            &v,
            &escrow::escrow_address(&frozen_account, &wary_pk),
            EscrowAccount::decode
        )
        .is_none(),
        "no deposit"
    );

    // the lying listing in test dollars
    let id = node::market::list::new_listing_id();
    let (k, commits, stated) = lie(&id);
    let (manifest, _) = list_as_cheater_in(
        &v,
        &uploader,
        &seller,
        &id,
        commits,
        &bundle_hash,
        stated,
        Some(&dollar),
    );
    let account = escrow::listing_address(&seller_pk, &id);
    let (indexer, base) = util::services::indexer(&v.rpc_url, &dir, work.path());
    let (buyer, buyer_pk) = buyer_with_dollars();
    v.fund_dollars(&buyer_pk, 100);
    let funds = units(&buyer_pk, &dollar);
    let args = util::escrow::buy_args(&v, &manifest, &dir, 1, &[]);
    let pending = buyer.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(pending.code, 0, "{}{}", pending.stdout, pending.stderr);
    assert_eq!(pending.json()["status"], "pending", "{}", pending.stdout);
    assert_eq!(
        units(&buyer_pk, &dollar),
        funds - CHEAT_PRICE,
        "in the vault"
    );
    let at = escrow::escrow_address(&account, &buyer_pk);
    util::escrow::reveal_by_hand(&v, &seller, &account, &buyer_pk, &k);
    let lamports_before = rt.block_on(chain.balance(&buyer_pk)).unwrap();

    let watched = onchain(&v, &buyer, &["marketplace", "watch", "--once", "--json"]);
    assert_eq!(watched.code, 0, "{}", watched.stderr);
    let outcome = &watched.json()["outcomes"][0];
    assert_eq!(outcome["state"], "disputed", "{}", watched.stdout);
    assert_eq!(units(&buyer_pk, &dollar), funds, "every unit back");
    let back = rt.block_on(chain.balance(&buyer_pk)).unwrap() - lamports_before;
    assert!(
        back + 20_000 >= STAKE / 2,
        "the stake share (and the escrow's rent), less the fees: {back}"
    );
    assert!(read(&v, &at, EscrowAccount::decode).is_none(), "closed");
    assert_eq!(
        read(&v, &account, ListingAccount::decode).unwrap().status,
        node::escrow::ListingStatus::Convicted
    );
    // the indexer folds the conviction and the withdrawal as one dispute
    let url = format!("{base}/escrows/{at}");
    wait_for("the indexer's dispute", 60, || {
        util::services::get(&url).is_some_and(|j| j["escrow"]["status"] == "disputed")
    });
    let seen = util::services::get(&url).unwrap();
    assert!(
        seen["escrow"]["fraud_chunk"].is_number(),
        "the lying chunk kept: {seen}"
    );
    drop(indexer);
}
