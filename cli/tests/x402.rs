//! x402 buyers (issue 31): a seller's `marketplace listen --x402` sells a
//! test-dollar listing's key to the Python `x402` SDK's SVM client (a
//! buyer with nothing else: no SOL, no brainctl), on the localnet, with
//! devnet's CAIP-2 id advertised (the only ids the SDK takes). The client
//! opens the sealed key with the X25519 form of its own key; the blob it
//! decrypts to is the bundle the listing signed. Refusals for the wrong
//! amount, the wrong mint and a transaction spending the node's fee payer
//! send nothing; a replayed payment is the same buy, never a second one.
//! The indexer counts x402 buys (led to them by their releases), as a
//! rebuild from the chain does.

mod util;

use node::chain::{test_dollar, Keypair, Pubkey, Signer};
use serde_json::Value;
use std::process::{Command, Stdio};
use util::services::{log, Running};
use util::Env;

const DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

fn onchain(e: &Env, args: &[&str]) -> Value {
    onchain_on(e2e::validator(), e, args)
}

/// [`onchain`] on validator `v`.
fn onchain_on(v: &e2e::TestValidator, e: &Env, args: &[&str]) -> Value {
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    let r = e.run(&full);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
}

/// Waits (up to 30 s) until `mint` reads at `finalized`, where the SDK
/// reads mints.
fn wait_finalized(mint: &Pubkey) {
    let v = e2e::validator();
    let finalized = v
        .chain()
        .at_commitment(node::chain::parse_commitment("finalized").unwrap());
    for _ in 0..120 {
        if e2e::runtime()
            .block_on(node::chain::token::read_mint(&finalized, mint))
            .is_ok()
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The x402 client script, as the buyer whose keypair file is `secret`,
/// with `extra` arguments (its mode); `daemon`'s log is shown on failure.
fn client(
    daemon: &Running,
    (base, listing): (&str, &str),
    secret: &std::path::Path,
    extra: &[&str],
) -> Value {
    let v = e2e::validator();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/x402/buy.py");
    let mut cmd = Command::new(e2e::x402::python());
    cmd.arg(script)
        .args(["--url", base, "--listing", listing, "--rpc", &v.rpc_url])
        .arg("--secret")
        .arg(secret)
        .args(extra);
    run_json(daemon, &format!("buy.py {extra:?}"), &mut cmd)
}

/// The one JSON object a client script `cmd` (named `what`) prints; its
/// failure shows its output and the end of `daemon`'s log.
fn run_json(daemon: &Running, what: &str, cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}\n{}\nthe service's log ends:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        daemon.tail()
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn an_x402_client_buys_a_token_listing_and_opens_its_key() {
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let dollar = test_dollar::ADDRESS.to_string();
    // another mint, made first: the SDK reads mints at `finalized`
    let other = v.create_mint(6);
    let (seller, listed) =
        x402_seller(&dir, "Paid by an x402 client", &test_dollar::mint().address);
    let (listing_id, bundle_hash, seller_pk) = terms_of(&listed);
    // the buyer: a keypair file and test dollars, no SOL at all
    let buyer = Keypair::new();
    let secret = keypair_file(shared.path(), &buyer);
    v.fund_dollars(&buyer.pubkey(), 10);

    let work = shared.path();
    // the indexer counts x402 buys, which no watched address lists: their
    // releases lead it to them
    let (indexer, indexer_url) = util::services::indexer(&v.rpc_url, &dir, work);
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        work,
        &["--x402", "127.0.0.1:0", "--x402-network", DEVNET],
        "warn,node::x402=debug,node::listen=info,tower_http=debug",
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));

    // unpaid, given only the listing's URL: the requirements (v2 in the
    // header, with the resource's absolute URL; v1's shape in the body)
    let bare = client(&daemon, (&base, listing_id), &secret, &["--mode", "bare"]);
    assert_eq!(bare["status"], 402, "{bare}");
    let req = &bare["required"]["accepts"][0];
    let x25519 = Pubkey::new_from_array(
        node::wallet::ed25519_pub_to_x25519(&buyer.pubkey().to_bytes()).unwrap(),
    )
    .to_string();
    assert_eq!(
        bare["required"]["resource"]["url"],
        format!("{base}/x402/listings/{listing_id}")
    );
    assert_eq!(req["scheme"], "exact");
    assert_eq!(req["network"], DEVNET);
    assert_eq!(req["amount"], "2000000");
    assert_eq!(req["asset"], dollar.as_str());
    assert_eq!(req["payTo"], seller_pk.to_string());
    assert_eq!(req["extra"]["feePayer"], seller_pk.to_string());
    // the compact x402 buy memo (the full one exceeds the client's
    // compute budget); the key is sealed to the X25519 form of the payer's key
    assert_eq!(req["extra"]["memo"], format!("x402:buy:{listing_id}"));
    let v1 = &bare["body"];
    assert_eq!(v1["x402Version"], 1, "{v1}");
    assert_eq!(
        (
            &v1["accepts"][0]["network"],
            &v1["accepts"][0]["maxAmountRequired"]
        ),
        (
            &serde_json::json!("solana-devnet"),
            &serde_json::json!("2000000")
        )
    );
    assert_eq!(
        v1["accepts"][0]["resource"],
        format!("{base}/x402/listings/{listing_id}")
    );

    // refusals: the SDK pays what it is told; our check holds the listing's terms
    wait_finalized(&other);
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(
            &chain,
            owner,
            &test_dollar::mint(),
        ))
        .unwrap()
    };
    for (tamper, extra) in [
        ("amount", vec![]),
        ("mint", vec!["--other-mint".to_string(), other.to_string()]),
    ] {
        let mut args = vec!["--mode", "manual", "--tamper", tamper];
        args.extend(extra.iter().map(String::as_str));
        let r = client(&daemon, (&base, listing_id), &secret, &args);
        assert_eq!(r["status"], 402, "{tamper}: {r}");
        assert!(
            r["body"]["error"]
                .as_str()
                .unwrap()
                .contains("other requirements"),
            "{tamper}: {r}"
        );
    }
    assert_eq!(units(&buyer.pubkey()), 10_000_000, "nothing was sent");

    // paid: the SDK's own httpx client pays the 402 by itself, with its
    // default 5 s timeout (the node answers within 4 s: the release, or
    // 202 with a poll URL that answers it)
    let seller_lamports = rt.block_on(chain.balance(&seller_pk)).unwrap();
    let paid = client(&daemon, (&base, listing_id), &secret, &[]);
    assert_eq!(paid["status"], 200, "{paid}");
    assert!(
        paid["first_status"] == 200 || paid["first_status"] == 202,
        "{paid}"
    );
    assert_eq!(paid["settle"]["success"], true, "{paid}");
    assert_eq!(paid["settle"]["payer"], buyer.pubkey().to_string());
    assert_eq!(paid["settle"]["network"], DEVNET);
    let body = &paid["body"];
    let buy_sig = body["buy_signature"].as_str().unwrap();
    assert_eq!(paid["settle"]["transaction"], buy_sig);
    assert_eq!(body["bundle_hash"], bundle_hash);
    let recorded = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db"))
        .unwrap()
        .get(buy_sig)
        .unwrap();
    assert_eq!(
        (recorded.buyer, recorded.buyer_x25519),
        (Some(buyer.pubkey().to_string()), Some(x25519.clone())),
        "listen sealed to the X25519 form of the payer's own key"
    );
    assert_eq!(units(&buyer.pubkey()), 8_000_000);
    assert_eq!(units(&seller_pk), 2_000_000);
    assert_eq!(
        rt.block_on(chain.balance(&buyer.pubkey())).unwrap(),
        0,
        "the buyer needs no SOL: the seller's node pays the fee"
    );
    // the key the client opened decrypts the blob to the listed bundle
    let key: [u8; 32] = hex::decode(paid["key_hex"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let source = node::arweave::Source::Fs(node::arweave::FsStore::new(&dir));
    let blob_id = body["encrypted_bundle_uri"]
        .as_str()
        .unwrap()
        .trim_start_matches("ar://");
    let blob = rt.block_on(source.fetch(blob_id, 16 << 20)).unwrap();
    let plain = node::seal::decrypt_blob(&key, &blob).unwrap();
    assert_eq!(
        hex::encode(node::crypto::sha256(&plain)),
        bundle_hash,
        "the signed bundle's hash"
    );
    assert!(String::from_utf8_lossy(&plain).contains("Paid by an x402 client"));
    // what the purchase cost the seller in SOL: the payment's fee and the release
    let fee = rt
        .block_on(chain.transaction_json(&buy_sig.parse().unwrap()))
        .unwrap()
        .unwrap()["meta"]["fee"]
        .as_u64()
        .unwrap();
    let spent = seller_lamports - rt.block_on(chain.balance(&seller_pk)).unwrap();
    eprintln!("x402 purchase: payment fee {fee} lamports, the seller's SOL spent in all {spent} lamports (payment fee and release)");
    assert!(
        (10_000..=10_100).contains(&fee),
        "two signatures and a 20,000-unit priority fee at 1 micro-lamport: {fee}"
    );
    assert!(spent >= fee, "{spent}");

    // the same payer paying again (a new transaction: the client did not
    // keep its answer) is answered with its first buy, paying nothing more
    let again = client(&daemon, (&base, listing_id), &secret, &["--mode", "manual"]);
    assert_eq!(again["status"], 200, "{again}");
    assert_eq!(again["body"]["buy_signature"], buy_sig, "{again}");
    assert_eq!(units(&buyer.pubkey()), 8_000_000, "asked again, paid once");

    // a replayed payment is the same transaction: the same buy, once
    let second = Keypair::new();
    v.fund_dollars(&second.pubkey(), 10);
    let second_secret = keypair_file(work, &second);
    let header = {
        let manual = client(
            &daemon,
            (&base, listing_id),
            &second_secret,
            &["--mode", "manual"],
        );
        assert_eq!(manual["status"], 200, "{manual}");
        manual["sent"]["PAYMENT-SIGNATURE"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        units(&second.pubkey()),
        8_000_000,
        "a second purchase, paid once"
    );
    let http = reqwest::Client::new();
    let url = format!(
        "{base}/x402/listings/{listing_id}?buyer={}",
        second.pubkey()
    );
    let replay = |h: &str| {
        rt.block_on(async {
            let r = http
                .get(&url)
                .header("PAYMENT-SIGNATURE", h)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        })
    };
    let (first, again) = (replay(&header), replay(&header));
    assert_eq!((first.0, again.0), (200, 200), "{first:?} {again:?}");
    assert_eq!(first.1["buy_signature"], again.1["buy_signature"]);
    assert_eq!(
        units(&second.pubkey()),
        8_000_000,
        "a replay pays nothing more"
    );
    // the payment's own URL answers its release too
    let polled: Value = rt.block_on(async {
        http.get(format!(
            "{base}/x402/payments/{}",
            first.1["buy_signature"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
    });
    assert_eq!(
        (&polled["status"], &polled["release_signature"]),
        (
            &serde_json::json!("released"),
            &first.1["release_signature"]
        ),
        "{polled}"
    );
    // a `?buyer=` naming someone else than the payer is refused
    let (status, body) = rt.block_on(async {
        let r = http
            .get(format!(
                "{base}/x402/listings/{listing_id}?buyer={}",
                Keypair::new().pubkey()
            ))
            .header("PAYMENT-SIGNATURE", &header)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    assert_eq!(status, 402, "{body}");
    assert_eq!(
        body["error"],
        "invalid_exact_svm_payload_transaction_signature"
    );

    // a v1 client (the SDK's v1 scheme) pays the body's v1 requirements
    let third = Keypair::new();
    v.fund_dollars(&third.pubkey(), 10);
    let third_secret = keypair_file(work, &third);
    let old = client(
        &daemon,
        (&base, listing_id),
        &third_secret,
        &["--mode", "v1"],
    );
    assert_eq!(old["status"], 200, "{old}");
    assert_eq!(old["settle"]["network"], "solana-devnet", "{old}");
    assert!(old["sent"]["X-PAYMENT"].is_string(), "{old}");
    assert!(old["key_hex"].is_string(), "{old}");
    assert_eq!(units(&third.pubkey()), 8_000_000, "a third purchase");

    let shown = util::services::listing_with_releases(&indexer_url, listing_id, 3);
    assert_eq!(
        (&shown["listing"]["sales"], &shown["listing"]["releases"]),
        (&serde_json::json!(3), &serde_json::json!(3)),
        "the indexer counts the three x402 purchases: {shown}\n{}",
        indexer.tail()
    );
    util::services::indexer_matches_rebuild(
        &v.rpc_url,
        &indexer_url,
        &dir,
        work,
        "a rebuild finds the x402 buys through their releases",
    );

    // a transaction moving the fee payer's own tokens is refused, unsent
    v.fund_dollars(&seller_pk, 1);
    let hostile =
        e2e::x402::payment_spending_fee_payer(&seller_pk, &second, &test_dollar::mint(), req);
    let (status, body) = replay(&hostile);
    assert_eq!(status, 402, "{body}");
    assert_eq!(
        body["error"],
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
    );
    assert_eq!(
        units(&seller_pk),
        7_000_000,
        "the seller's tokens did not move"
    );

    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// Where the protocol fee applies (forced on here, as on mainnet), x402
/// pays the seller the whole price (`exact` pays one recipient) and the
/// seller's release pays the treasury its share in the same transaction:
/// `listen --x402` starts, the buyer gets the key, the treasury holds the
/// share, and the indexer (under the same fee) counts the sale, as a
/// rebuild does.
#[test]
fn where_the_fee_applies_an_x402_sales_release_pays_the_treasury() {
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let work = shared.path();
    let treasury = Keypair::new().pubkey();
    let treasury_s = treasury.to_string();
    let fees = [
        ("BRAINCTL_PROTOCOL_FEE_FORCE", "1"),
        ("BRAINCTL_TREASURY_PUBKEY", treasury_s.as_str()),
    ];
    let (seller, listed) = x402_seller(
        &dir,
        "Sold where the fee applies",
        &test_dollar::mint().address,
    );
    let seller = seller.with_vars(&fees);
    let (listing_id, _, seller_pk) = terms_of(&listed);
    let buyer = Keypair::new();
    let secret = keypair_file(work, &buyer);
    v.fund_dollars(&buyer.pubkey(), 10);
    let (indexer, indexer_url) = util::services::indexer_with(&v.rpc_url, &dir, work, &fees);
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        work,
        &["--x402", "127.0.0.1:0", "--x402-network", DEVNET],
        "warn,node::x402=debug,node::listen=info",
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(
            &chain,
            owner,
            &test_dollar::mint(),
        ))
        .unwrap()
    };
    let paid = client(&daemon, (&base, listing_id), &secret, &[]);
    assert_eq!(paid["status"], 200, "{paid}");
    assert!(paid["key_hex"].is_string(), "{paid}");
    let buy_sig = paid["body"]["buy_signature"].as_str().unwrap();
    let release_sig = paid["body"]["release_signature"].as_str().unwrap();
    let (seller_share, fee) =
        node::chain::fees::split_with_fee(2_000_000, node::chain::fees::SETTLE_FEE_BPS);
    assert_eq!(fee, 50_000, "2.5% of two dollars");
    assert_eq!(
        units(&buyer.pubkey()),
        8_000_000,
        "the buyer paid the price once"
    );
    assert_eq!(units(&treasury), fee, "the treasury holds its share");
    assert_eq!(units(&seller_pk), seller_share, "the seller keeps the rest");
    // the share moved in the release itself, beside its memo
    let release = rt
        .block_on(chain.transaction(&release_sig.parse().unwrap()))
        .unwrap()
        .unwrap();
    assert!(
        release.memos.iter().any(|m| m.contains(":release:")),
        "{release:?}"
    );
    assert_eq!(
        node::settle::Currency::Token {
            mint: test_dollar::ADDRESS.to_string()
        }
        .paid(&release, &seller_pk.to_string(), &treasury_s),
        fee,
        "the release pays the treasury"
    );
    let recorded = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db"))
        .unwrap()
        .get(buy_sig)
        .unwrap();
    assert_eq!(recorded.fee_at_release, fee);
    let shown = util::services::listing_with_releases(&indexer_url, listing_id, 1);
    assert_eq!(
        (&shown["listing"]["sales"], &shown["listing"]["releases"]),
        (&serde_json::json!(1), &serde_json::json!(1)),
        "the indexer counts the sale, its fee paid at release: {shown}\n{}",
        indexer.tail()
    );
    util::services::indexer_matches_rebuild_with(
        &v.rpc_url,
        &indexer_url,
        &dir,
        work,
        "a rebuild under the same fee counts it too",
        &fees,
    );
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// A seller with a wallet, SOL and a listing of one memory (`text`) for
/// two dollars in `mint` (worth a dollar a token), stored in `dir`: its
/// home, and `list`'s answer.
fn x402_seller(dir: &str, text: &str, mint: &Pubkey) -> (Env, Value) {
    x402_seller_on(e2e::validator(), dir, text, mint)
}

/// [`x402_seller`] on validator `v`.
fn x402_seller_on(v: &e2e::TestValidator, dir: &str, text: &str, mint: &Pubkey) -> (Env, Value) {
    let mint = mint.to_string();
    let seller = Env::new();
    seller.ok(&["wallet", "new"]);
    onchain_on(v, &seller, &["wallet", "airdrop", "2", "--json"]);
    seller.ok(&["memory", "add", text, "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let mut args = vec![
        "marketplace",
        "list",
        "b.signed.json",
        "--price-usd",
        "2",
        "--sol-usd",
        "150",
        "--mint",
        &mint,
        "--storage-dir",
        dir,
        "--json",
    ];
    // a dollar stablecoin settles 1:1; another mint is given its rate
    if !node::chain::token::is_dollar(&mint.parse().unwrap()) {
        args.extend(["--token-usd", "1"]);
    }
    let listed = onchain_on(v, &seller, &args);
    (seller, listed)
}

/// What `list`'s answer `listed` says of its listing: its id, its bundle
/// hash and its seller (the payment address).
fn terms_of(listed: &Value) -> (&str, &str, Pubkey) {
    let listing = &listed["listing"];
    (
        listing["listing_id"].as_str().unwrap(),
        listing["bundle_hash"].as_str().unwrap(),
        listing["payment_address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
    )
}

/// The key an x402 answer `body` sealed to `buyer` opens the blob (in the
/// items dir `dir`) to the listed bundle `bundle_hash`.
fn assert_opens(dir: &str, buyer: &Keypair, body: &Value, bundle_hash: &str) {
    use base64::Engine as _;
    let source = node::arweave::Source::Fs(node::arweave::FsStore::new(dir));
    let wallet = node::wallet::Wallet::from_keypair_bytes(&buyer.to_bytes()).unwrap();
    let sealed = base64::engine::general_purpose::STANDARD
        .decode(body["envelope"]["sealed_key_b64"].as_str().unwrap())
        .unwrap();
    let key = node::seal::open_sealed_key(&wallet.x25519_secret(), &sealed).unwrap();
    let blob_id = body["encrypted_bundle_uri"]
        .as_str()
        .unwrap()
        .trim_start_matches("ar://");
    let blob = e2e::runtime()
        .block_on(source.fetch(blob_id, 16 << 20))
        .unwrap();
    let plain = node::seal::decrypt_blob(&key, &blob).unwrap();
    assert_eq!(hex::encode(node::crypto::sha256(&plain)), bundle_hash);
}

/// A keypair file for `who` in `dir` (solana-keygen's JSON array).
fn keypair_file(dir: &std::path::Path, who: &Keypair) -> std::path::PathBuf {
    let path = dir.join(format!("{}.json", who.pubkey()));
    std::fs::write(
        &path,
        serde_json::to_string(&who.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    path
}

/// One GET of `url`, with `payment` as its `PAYMENT-SIGNATURE`: the
/// status, the `PAYMENT-REQUIRED` header decoded, and the body.
fn get(url: &str, payment: Option<&str>) -> (u16, Value, Value) {
    use base64::Engine as _;
    e2e::runtime().block_on(async {
        let mut r = reqwest::Client::new().get(url);
        if let Some(p) = payment {
            r = r.header("PAYMENT-SIGNATURE", p);
        }
        let r = r.send().await.unwrap();
        let required = r
            .headers()
            .get("PAYMENT-REQUIRED")
            .and_then(|h| base64::engine::general_purpose::STANDARD.decode(h).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        let status = r.status().as_u16();
        (status, required, r.json().await.unwrap_or(Value::Null))
    })
}

/// Hostile x402 payers while the real `listen` runs, its RPC behind a
/// fault proxy: one source account spent by five payments at once lands
/// one and sends no other; a payer whose source is emptied between the
/// node's check and the landing (sends held 6 s by the proxy) costs the
/// node a failed payment's fee twice, then its next payment is refused
/// unsent (its budget, 2 an hour), while its honest neighbour still pays;
/// an honest buyer on that slow chain gets 202 within its client's
/// default timeout (the Python SDK's httpx client, 5 s) and its key by
/// polling; payments the simulation refuses, a dozen from one payer and a
/// crowd of strangers' at once, are never sent (the fee payer spends
/// nothing) and the payer is refused unsimulated past its budget, with an
/// honest buyer served after; a flood of unpaid requests costs no RPC call
/// each and is rate limited per client.
#[test]
fn hostile_x402_payers_pay_for_their_own_failures_and_honest_buyers_are_served() {
    use e2e::proxy::{Fault, FaultProxy};
    use std::time::{Duration, Instant};
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let dollar = test_dollar::mint();
    let (seller, listed) = x402_seller(
        &dir,
        "Sold to honest x402 buyers only",
        &test_dollar::mint().address,
    );
    let (listing_id, _, seller_pk) = terms_of(&listed);
    let listing_id = listing_id.to_string();
    let proxy = FaultProxy::start(&v.rpc_url);
    let mut daemon = util::services::listen(
        &seller,
        &proxy.url,
        &dir,
        shared.path(),
        &["--x402", "127.0.0.1:0", "--x402-network", DEVNET],
        "warn,node::x402=info,node::listen=info",
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));
    let url = format!("{base}/x402/listings/{listing_id}");
    let (status, required, _) = get(&url, None);
    assert_eq!(status, 402);
    let req = required["accepts"][0].clone();
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(&chain, owner, &dollar))
            .unwrap()
    };
    let blockhash = || rt.block_on(chain.rpc().get_latest_blockhash()).unwrap();
    let pay = |payer: &Keypair, cu_price: u64| {
        e2e::x402::payment(&seller_pk, payer, &dollar, &req, cu_price, blockhash())
    };

    // 1. one source account, five payments of it at once
    let mallory = Keypair::new();
    v.fund_dollars(&mallory.pubkey(), 2);
    let payments: Vec<String> = (1..=5).map(|p| pay(&mallory, p)).collect();
    let answers: Vec<(u16, Value)> = std::thread::scope(|s| {
        let joins: Vec<_> = payments
            .iter()
            .map(|h| {
                s.spawn(|| {
                    let (status, _, body) = get(&url, Some(h));
                    (status, body)
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    // one is sent; the others wait for it (429) or, the payer having paid
    // for the listing, are answered with that payment, never sent
    assert!(
        answers.iter().all(|(s, _)| [200, 202, 429].contains(s)),
        "{answers:?}"
    );
    let named = |answers: &[(u16, Value)]| -> std::collections::BTreeSet<String> {
        answers
            .iter()
            .filter(|(s, _)| [200, 202].contains(s))
            .filter_map(|(_, b)| b["buy_signature"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(named(&answers).len(), 1, "one payment taken: {answers:?}");
    // asked again once the first is answered: each is that payment
    std::thread::sleep(Duration::from_secs(3));
    let again: Vec<(u16, Value)> = payments
        .iter()
        .map(|h| {
            let (status, _, body) = get(&url, Some(h));
            (status, body)
        })
        .collect();
    assert!(
        again.iter().all(|(s, _)| [200, 202].contains(s)),
        "{again:?}"
    );
    assert_eq!(named(&again), named(&answers), "{again:?}");
    let mallory_source = node::chain::token::associated_account(&mallory.pubkey(), &dollar);
    let history = rt
        .block_on(chain.signatures_for(&mallory_source, None))
        .unwrap();
    assert_eq!(
        history.len(),
        2,
        "its funding and one payment landed, nothing else: {history:?}"
    );
    assert!(history.iter().all(|h| h.err.is_none()), "{history:?}");
    assert_eq!(units(&mallory.pubkey()), 0);

    // 2. a payer who empties its source after the node's check: each
    // payment lands failed, at the node's cost, until its budget is spent
    proxy.set(Fault::StallSends(Duration::from_secs(6)));
    let eve = Keypair::new();
    let funder = v.funded_keypair(1);
    let sink = Keypair::new().pubkey();
    let mut failed_fees = 0;
    for round in 0..2 {
        v.fund_dollars(&eve.pubkey(), 2);
        let h = pay(&eve, 10 + round);
        let (status, body) = std::thread::scope(|s| {
            let answer = s.spawn(|| get(&url, Some(&h)));
            std::thread::sleep(Duration::from_millis(1_500));
            let drain = node::chain::token::transfer_to(&eve.pubkey(), &sink, &dollar, 2_000_000);
            let create =
                node::chain::token::create_associated_account(&funder.pubkey(), &sink, &dollar);
            rt.block_on(chain.send(&[create, drain], &[&funder, &eve]))
                .expect("the payer empties its source");
            let (status, _, body) = answer.join().unwrap();
            (status, body)
        });
        assert_eq!(status, 202, "answered pending within 4 s: {body}");
        let poll = body["poll"].as_str().unwrap().to_string();
        let deadline = Instant::now() + Duration::from_secs(60);
        let failed = loop {
            let (status, _, polled) = get(&poll, None);
            if status == 402 {
                break polled;
            }
            assert!(Instant::now() < deadline, "never failed: {status} {polled}");
            std::thread::sleep(Duration::from_millis(500));
        };
        assert_eq!(
            (&failed["status"], &failed["reason"]),
            (
                &serde_json::json!("failed"),
                &serde_json::json!("transaction_failed")
            ),
            "{failed}"
        );
        let sig = body["buy_signature"].as_str().unwrap().parse().unwrap();
        // the endpoint may see the failure at `processed` before a read at
        // `confirmed` answers: poll until the transaction is there
        let deadline = Instant::now() + Duration::from_secs(30);
        let landed = loop {
            if let Some(tx) = rt.block_on(chain.transaction_json(&sig)).unwrap() {
                break tx;
            }
            assert!(Instant::now() < deadline, "{sig} never readable");
            std::thread::sleep(Duration::from_millis(250));
        };
        assert!(!landed["meta"]["err"].is_null(), "it landed failed");
        failed_fees += landed["meta"]["fee"].as_u64().unwrap();
    }
    v.fund_dollars(&eve.pubkey(), 2);
    let (status, _, body) = get(&url, Some(&pay(&eve, 20)));
    assert_eq!(status, 429, "the payer's budget is spent: {body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("failed on chain 2 times"),
        "{body}"
    );
    assert_eq!(units(&eve.pubkey()), 2_000_000, "refused unsent");
    eprintln!("x402 hostile payers: the node paid {failed_fees} lamports for 2 failed payments, then refused the payer");
    assert!(failed_fees <= 2 * 10_100, "{failed_fees}");

    // 3. an honest buyer on the same slow chain, with the SDK's client and
    // its default timeout: 202 at once, its key by polling
    let honest = Keypair::new();
    v.fund_dollars(&honest.pubkey(), 2);
    let secret = keypair_file(shared.path(), &honest);
    let bought = client(&daemon, (&base, &listing_id), &secret, &[]);
    assert_eq!(
        (&bought["first_status"], &bought["status"]),
        (&serde_json::json!(202), &serde_json::json!(200)),
        "{bought}"
    );
    assert!(bought["key_hex"].is_string(), "{bought}");
    assert_eq!(units(&honest.pubkey()), 0);
    proxy.set(Fault::None);

    // 4. payments the simulation refuses (each source a dollar short):
    // one payer's dozen, then a crowd of strangers' at once. None is sent,
    // so none costs the fee payer a lamport; the payer is refused without
    // a simulation past its budget (10 an hour); an honest buyer after
    // the flood is served
    let seller_lamports = rt.block_on(chain.balance(&seller_pk)).unwrap();
    let simulated_before = proxy.simulated().len();
    let trudy = Keypair::new();
    v.fund_dollars(&trudy.pubkey(), 1);
    let refused: Vec<(u16, Value)> = (0..12)
        .map(|i| {
            let (status, _, body) = get(&url, Some(&pay(&trudy, 100 + i)));
            (status, body)
        })
        .collect();
    let simulated_one = proxy.simulated().len() - simulated_before;
    assert!(
        refused[..10]
            .iter()
            .all(|(s, b)| *s == 402 && b["reason"] == "transaction_simulation_failed"),
        "{refused:?}"
    );
    assert!(
        refused[10..].iter().all(|(s, b)| *s == 429
            && b["error"]
                .as_str()
                .unwrap_or_default()
                .contains("refused by the simulation 10 times")),
        "{refused:?}"
    );
    assert_eq!(simulated_one, 10, "the last two were not simulated");
    let crowd: Vec<Keypair> = (0..16).map(|_| Keypair::new()).collect();
    for k in &crowd {
        v.fund_dollars(&k.pubkey(), 1);
    }
    let crowd_payments: Vec<String> = crowd.iter().map(|k| pay(k, 200)).collect();
    let crowd_statuses: Vec<u16> = std::thread::scope(|s| {
        let joins: Vec<_> = crowd_payments
            .iter()
            .map(|h| s.spawn(|| get(&url, Some(h)).0))
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert!(
        crowd_statuses.iter().all(|s| [402, 429, 503].contains(s)),
        "{crowd_statuses:?}"
    );
    let simulated_all = proxy.simulated().len() - simulated_before;
    let honest = Keypair::new();
    v.fund_dollars(&honest.pubkey(), 2);
    assert_eq!(
        rt.block_on(chain.balance(&seller_pk)).unwrap(),
        seller_lamports,
        "no refused payment cost the fee payer anything"
    );
    let (status, _, body) = get(&url, Some(&pay(&honest, 300)));
    assert!([200, 202].contains(&status), "{status}: {body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    if status == 202 {
        loop {
            let (polled, _, released) = get(body["poll"].as_str().unwrap(), None);
            if polled == 200 {
                assert_eq!(released["status"], "released", "{released}");
                break;
            }
            assert!(Instant::now() < deadline, "never released: {released}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    assert_eq!(units(&honest.pubkey()), 0);
    eprintln!(
        "x402 hostile payers: {} refused payments of one payer cost {simulated_one} simulations and 0 lamports; {} strangers' at once {} more simulations ({crowd_statuses:?}), 0 lamports; an honest buyer served after",
        refused.len(),
        crowd.len(),
        simulated_all - simulated_one
    );

    // 5. a flood of unpaid requests: no RPC call each, rate limited
    let (seen_before, _) = proxy.stats();
    let statuses: Vec<u16> = (0..300).map(|_| get(&url, None).0).collect();
    let (seen_after, _) = proxy.stats();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert!(
        statuses.iter().all(|s| [402, 429].contains(s)),
        "{statuses:?}"
    );
    assert!(limited > 0, "rate limited per client");
    assert!(
        seen_after - seen_before < 100,
        "300 unpaid requests read the chain {} times (listen's own reads included)",
        seen_after - seen_before
    );
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// A Token-2022 listing bought end to end by the official TypeScript
/// client (`@x402/fetch` with `@x402/svm`), the Python SDK and Faremeter's
/// client (`@faremeter/fetch` with `@faremeter/payment-solana`), each
/// given only the listing's URL with its default timeouts: each opens
/// the key sealed to its payer, which decrypts the blob to the listed
/// bundle; the seller is paid three times in the mint.
#[test]
fn the_typescript_python_and_faremeter_clients_buy_a_token_2022_listing() {
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let authority = e2e::test_dollar_authority();
    v.fund(&authority.pubkey(), 1);
    let mint = v.create_token_2022_mint(&Keypair::new(), &authority, false);
    wait_finalized(&mint.address);
    let (seller, listed) = x402_seller(&dir, "Paid in a Token-2022 mint", &mint.address);
    let (listing_id, bundle_hash, seller_pk) = terms_of(&listed);
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        shared.path(),
        &["--x402", "127.0.0.1:0", "--x402-network", DEVNET],
        "warn,node::x402=info,node::listen=info",
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(&chain, owner, &mint))
            .unwrap()
    };
    let opens = |buyer: &Keypair, body: &Value| assert_opens(&dir, buyer, body, bundle_hash);

    // the TypeScript client
    let ts_buyer = Keypair::new();
    v.mint_tokens(&mint, &ts_buyer.pubkey(), 5_000_000);
    let ts = run_json(
        &daemon,
        "buy.mjs",
        e2e::x402::ts_client(shared.path())
            .args(["--url", &base, "--listing", listing_id, "--rpc", &v.rpc_url])
            .arg("--secret")
            .arg(keypair_file(shared.path(), &ts_buyer)),
    );
    assert_eq!(ts["status"], 200, "{ts}");
    assert_eq!(ts["settle"]["success"], true, "{ts}");
    assert_eq!(ts["settle"]["payer"], ts_buyer.pubkey().to_string(), "{ts}");
    opens(&ts_buyer, &ts["body"]);
    assert_eq!(units(&ts_buyer.pubkey()), 3_000_000);

    // the Python SDK
    let py_buyer = Keypair::new();
    v.mint_tokens(&mint, &py_buyer.pubkey(), 5_000_000);
    let secret = keypair_file(shared.path(), &py_buyer);
    let py = client(&daemon, (&base, listing_id), &secret, &[]);
    assert_eq!(py["status"], 200, "{py}");
    assert!(py["key_hex"].is_string(), "{py}");
    opens(&py_buyer, &py["body"]);
    assert_eq!(units(&py_buyer.pubkey()), 3_000_000);

    // Faremeter's client: a 50,000-unit compute limit, token accounts
    // derived from the requirements' extra.tokenProgram
    let fm_buyer = Keypair::new();
    v.mint_tokens(&mint, &fm_buyer.pubkey(), 5_000_000);
    let mint_s = mint.address.to_string();
    let fm = run_json(
        &daemon,
        "faremeter.mjs",
        e2e::x402::faremeter_client(shared.path())
            .args(["--url", &base, "--listing", listing_id, "--rpc", &v.rpc_url])
            .args(["--mint", &mint_s, "--secret"])
            .arg(keypair_file(shared.path(), &fm_buyer)),
    );
    assert_eq!(fm["status"], 200, "{fm}\n{}", daemon.tail());
    opens(&fm_buyer, &fm["body"]);
    assert_eq!(units(&fm_buyer.pubkey()), 3_000_000);
    assert_eq!(
        units(&seller_pk),
        6_000_000,
        "paid three times, in the mint"
    );

    // the seller's account now requires a memo before each incoming
    // transfer, which an x402 payment carries after it: no longer offered
    let wallet = node::wallet::Wallet::load(&seller.path(".brainctl/wallet.json")).unwrap();
    v.require_transfer_memos(&wallet.solana_keypair(), &mint, &wallet.solana_keypair());
    std::thread::sleep(node::x402::reads::MINT_TTL);
    let (status, _, body) = get(&format!("{base}/x402/listings/{listing_id}"), None);
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("requires a memo"),
        "{body}"
    );
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// Paid tool calls (x402's MCP binding) over `brainctl mcp --http` with a
/// price list: the Python SDK's SVM client pays for `memory_search` over
/// the MCP SDK's streamable HTTP transport. Unpaid, the call answers the
/// requirements; paid, it runs and answers its settlement; the same
/// payment again is refused (the call ran once, and was paid once); a
/// payment of one unit less, or in another mint, is refused unsent; a free
/// tool stays free. The node records each payment in its ledger. The
/// official Python MCP client pays a call; a stranger without the
/// operator's token reaches the priced tool alone at `/paid/mcp`.
#[test]
fn a_priced_tool_call_runs_once_per_x402_payment() {
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let dollar = test_dollar::mint();
    // another mint, made first: the SDK reads mints at `finalized`
    let other = v.create_mint(6);
    let node_home = Env::new();
    node_home.ok(&["wallet", "new"]);
    onchain(&node_home, &["wallet", "airdrop", "1", "--json"]);
    node_home.ok(&[
        "memory",
        "add",
        "Paid answers come from here",
        "-c",
        "lesson",
    ]);
    let node_pk: Pubkey = node::wallet::Wallet::load(&node_home.path(".brainctl/wallet.json"))
        .unwrap()
        .solana_keypair()
        .pubkey();
    let work = tempfile::tempdir().unwrap();
    let prices = work.path().join("prices.json");
    std::fs::write(
        &prices,
        serde_json::json!({
            "mint": dollar.address.to_string(),
            "tools": {"memory_search": "10000"},
            "network": DEVNET,
        })
        .to_string(),
    )
    .unwrap();
    let buyer = Keypair::new();
    let secret = work.path().join("buyer.json");
    std::fs::write(
        &secret,
        serde_json::to_string(&buyer.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    v.fund_dollars(&buyer.pubkey(), 1);
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(&chain, owner, &dollar))
            .unwrap()
    };

    // a price for a tool the allowlist does not expose: refused at start
    let hidden = node_home
        .cmd()
        .args([
            "-u",
            &v.rpc_url,
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--unlimited-spending",
        ])
        .arg("--tool-prices")
        .arg(&prices)
        .env("BRAINCTL_HTTP_TOKEN", TOKEN)
        .env("BRAINCTL_HTTP_ALLOWED_TOOLS", "memory_list")
        .output()
        .unwrap();
    assert!(!hidden.status.success());
    assert!(
        String::from_utf8_lossy(&hidden.stderr)
            .contains("prices memory_search but the allowlist does not expose it"),
        "{}",
        String::from_utf8_lossy(&hidden.stderr)
    );

    let log_path = work.path().join("mcp.log");
    let mut server = Running(
        node_home
            .cmd()
            .args(["-u", &v.rpc_url, "--commitment", "confirmed"])
            .args(["mcp", "--http", "127.0.0.1:0", "--unlimited-spending"])
            .args(["--public-paid", "--tool-prices"])
            .arg(&prices)
            .env("BRAINCTL_HTTP_TOKEN", TOKEN)
            .env("BRAINCTL_TOOL_GROUPS", "memory")
            .env("RUST_LOG", "warn,node::x402=debug,brainctl=info")
            .stdout(Stdio::null())
            .stderr(log(&log_path))
            .spawn()
            .unwrap(),
        log_path.clone(),
    );
    let url = format!("{}/mcp", util::mcp::http_base(&log_path));
    // the server made the payee's token account before it listened (the
    // SDK never creates it)
    let payee_account = node::chain::token::associated_account(&node_pk, &dollar);
    assert!(rt.block_on(chain.balance(&payee_account)).unwrap() > 0);
    wait_finalized(&other);
    let client = |extra: &[&str]| -> Value {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/x402/mcp_call.py");
        run_json(
            &server,
            "mcp_call.py",
            Command::new(e2e::x402::python())
                .arg(script)
                .args(["--url", &url, "--token", TOKEN, "--rpc", &v.rpc_url])
                .arg("--secret")
                .arg(&secret)
                .args([
                    "--tool",
                    "memory_search",
                    "--args",
                    r#"{"query": "paid answers"}"#,
                ])
                .args(["--free-tool", "memory_list", "--free-args", "{}"])
                .args(extra),
        )
    };
    let r = client(&["--other-mint", &other.to_string()]);

    // listed: the priced tool says what a call costs; the free one does not
    let listed = r["tools"]["memory_search"].as_str().unwrap();
    assert!(
        listed.contains(&format!("PAID: 10000 base units of {}", dollar.address)),
        "{listed}"
    );
    assert!(!r["tools"]["memory_list"].as_str().unwrap().contains("PAID"));

    // unpaid: the requirements, in the list's token, to the node
    let unpaid = &r["unpaid"];
    assert_eq!(unpaid["is_error"], true, "{unpaid}");
    let req = &unpaid["structured"]["accepts"][0];
    assert_eq!(unpaid["structured"]["x402Version"], 2);
    assert_eq!(
        unpaid["structured"]["resource"]["url"],
        "mcp://tool/memory_search"
    );
    assert_eq!(
        (&req["scheme"], &req["network"], &req["amount"]),
        (
            &serde_json::json!("exact"),
            &serde_json::json!(DEVNET),
            &serde_json::json!("10000")
        )
    );
    assert_eq!(req["asset"], dollar.address.to_string());
    assert_eq!(req["payTo"], node_pk.to_string());
    assert_eq!(req["extra"]["feePayer"], node_pk.to_string());

    // paid: the search ran, and the answer carries the settlement
    let paid = &r["paid"];
    assert_eq!(paid["is_error"], false, "{paid}\n{}", server.tail());
    assert!(
        paid["text"]
            .as_str()
            .unwrap()
            .contains("Paid answers come from here"),
        "{paid}"
    );
    let settle = &paid["meta"]["x402/payment-response"];
    assert_eq!(settle["success"], true, "{paid}");
    assert_eq!(settle["payer"], buyer.pubkey().to_string());
    assert_eq!(settle["network"], DEVNET);
    let signature = settle["transaction"].as_str().unwrap();

    // the same payment again: refused, nothing runs, nothing is paid
    let replayed = &r["replayed"];
    assert_eq!(replayed["is_error"], true, "{replayed}");
    assert_eq!(
        replayed["structured"]["error"], "duplicate_settlement",
        "{replayed}"
    );
    assert!(!replayed["text"].as_str().unwrap().contains("Paid answers"));
    for (name, reason) in [
        ("tampered", "invalid_exact_svm_payload_amount_mismatch"),
        ("wrong_mint", "invalid_exact_svm_payload_mint_mismatch"),
    ] {
        assert_eq!(r[name]["is_error"], true, "{name}: {}", r[name]);
        assert_eq!(
            r[name]["structured"]["error"], reason,
            "{name}: {}",
            r[name]
        );
    }
    let free = &r["free"];
    assert_eq!(free["is_error"], false, "{free}");
    assert!(
        free["meta"].is_null(),
        "a free tool carries no settlement: {free}"
    );

    // paid once: the buyer's dollars moved once, to the node
    assert_eq!(units(&buyer.pubkey()), 990_000);
    assert_eq!(units(&node_pk), 10_000);
    assert_eq!(
        rt.block_on(chain.balance(&buyer.pubkey())).unwrap(),
        0,
        "the payer needs no SOL: the node pays the fee"
    );
    let ledger = node::x402::call_ledger::CallLedger::open(
        &node_home
            .path(".brainctl")
            .join(node::x402::call_ledger::LEDGER_FILE),
    )
    .unwrap()
    .all()
    .unwrap();
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(
        (
            ledger[0].signature.as_str(),
            ledger[0].tool.as_str(),
            ledger[0].units,
            ledger[0].state.as_str()
        ),
        (signature, "memory_search", 10_000, "served")
    );
    assert_eq!(ledger[0].payer, buyer.pubkey().to_string());

    // a payment the ledger does not know that is on chain already (a lost
    // ledger; or another sale's payment copied from the chain) pays for
    // nothing more
    let ledger_path = node_home
        .path(".brainctl")
        .join(node::x402::call_ledger::LEDGER_FILE);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", ledger_path.display()));
    }
    let meta = r["payment_meta"].to_string();
    let again = client(&["--replay-meta", &meta]);
    let replayed = &again["replayed"];
    assert_eq!(replayed["is_error"], true, "{replayed}");
    assert_eq!(
        replayed["structured"]["error"], "duplicate_settlement",
        "{replayed}"
    );
    assert!(!replayed["text"].as_str().unwrap().contains("Paid answers"));
    assert_eq!(units(&buyer.pubkey()), 990_000, "paid once");

    // the official x402 MCP client (x402MCPClient, auto-payment): a call
    // it pays for runs and is settled; one whose arguments do not read is
    // paid for by the client's payload but never settled: nothing moves
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/x402/mcp_official.py");
    let official = run_json(
        &server,
        "mcp_official.py",
        Command::new(e2e::x402::python())
            .arg(script)
            .args(["--url", &url, "--token", TOKEN, "--rpc", &v.rpc_url])
            .arg("--secret")
            .arg(&secret)
            .args(["--tool", "memory_search"])
            .args(["--args", r#"{"query": "paid answers"}"#])
            .args(["--bad-args", r#"{"query": 5}"#]),
    );
    let paid = &official["paid"];
    assert_eq!(paid["is_error"], false, "{official}\n{}", server.tail());
    assert_eq!(paid["payment_made"], true, "{official}");
    assert_eq!(paid["payment_response"]["success"], true, "{official}");
    assert!(
        paid["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Paid answers come from here"),
        "{official}"
    );
    assert!(
        official["bad"]["is_error"] == true || official["bad"]["raised"].is_string(),
        "bad arguments answer an error: {official}"
    );
    assert_eq!(
        units(&buyer.pubkey()),
        980_000,
        "the official client's call paid once, its bad call nothing: {official}"
    );

    // a stranger, without the operator's token: `/mcp` answers 401, the
    // public `/paid/mcp` lists the priced tool alone, refuses a free one
    // and serves the priced one for its payment
    let base = util::mcp::http_base(&log_path);
    let status = rt.block_on(async {
        reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(status, 401, "the token still guards /mcp");
    let public = run_json(
        &server,
        "mcp_official.py at /paid/mcp",
        Command::new(e2e::x402::python())
            .arg(script)
            .args(["--url", &format!("{base}/paid/mcp"), "--rpc", &v.rpc_url])
            .arg("--secret")
            .arg(&secret)
            .args(["--tool", "memory_search"])
            .args(["--args", r#"{"query": "paid answers"}"#])
            .args(["--free-tool", "memory_list"]),
    );
    assert_eq!(
        public["tools"],
        serde_json::json!(["memory_search"]),
        "{public}"
    );
    assert!(
        public["free"]["is_error"] == true || public["free"]["raised"].is_string(),
        "a free tool is not served publicly: {public}"
    );
    assert!(
        !public["free"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Paid answers"),
        "{public}"
    );
    assert_eq!(
        public["paid"]["is_error"],
        false,
        "{public}\n{}",
        server.tail()
    );
    assert_eq!(public["paid"]["payment_made"], true, "{public}");
    assert_eq!(units(&buyer.pubkey()), 970_000, "{public}");
    assert!(server.alive(), "the server died:\n{}", server.tail());
    assert!(server.stop().success());
}

/// The MCP server's bearer token in these tests.
const TOKEN: &str = "a-test-token-of-forty-characters-0123456";

/// The official TypeScript client, which does not follow `poll`, asking
/// again after a 202 as such a client does (each time it builds and signs
/// a new payment), on a young localnet (its finalized blockhash may still
/// be genesis's: a payment on it lands seconds late) with the seller's
/// sends held 6 s besides, so the first answer is certainly 202: it ends
/// with the key, and the buyer paid once. The seller's node answered the
/// retries with the first payment and sent no other.
#[test]
fn a_client_that_asks_again_after_a_202_gets_the_key_and_pays_once() {
    use e2e::proxy::{Fault, FaultProxy};
    let v = e2e::start(&[e2e::light_args(), e2e::test_dollar_args()].concat());
    let rt = e2e::runtime();
    let chain = v.chain();
    let dollar = test_dollar::mint();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let (seller, listed) = x402_seller_on(&v, &dir, "Bought once, asked twice", &dollar.address);
    let (listing_id, bundle_hash, seller_pk) = terms_of(&listed);
    let proxy = FaultProxy::start(&v.rpc_url);
    proxy.set(Fault::StallSends(std::time::Duration::from_secs(6)));
    let mut daemon = util::services::listen(
        &seller,
        &proxy.url,
        &dir,
        shared.path(),
        &["--x402", "127.0.0.1:0", "--x402-network", DEVNET],
        "warn,node::x402=info,node::listen=info",
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(&chain, owner, &dollar))
            .unwrap()
    };
    let buyer = Keypair::new();
    v.fund_dollars(&buyer.pubkey(), 5);
    let (buyer_before, seller_before) = (units(&buyer.pubkey()), units(&seller_pk));
    let ts = run_json(
        &daemon,
        "buy.mjs --retry",
        e2e::x402::ts_client(shared.path())
            .args(["--url", &base, "--listing", listing_id, "--rpc", &v.rpc_url])
            .arg("--secret")
            .arg(keypair_file(shared.path(), &buyer))
            .arg("--retry"),
    );
    assert_eq!(ts["first_status"], 202, "the slow path: {ts}");
    assert_eq!(ts["status"], 200, "{ts}\n{}", daemon.tail());
    assert!(ts["statuses"].as_array().unwrap().len() >= 2, "{ts}");
    assert_eq!(
        ts["settle"]["transaction"], ts["first_settle"]["transaction"],
        "every answer names the first payment: {ts}"
    );
    assert_opens(&dir, &buyer, &ts["body"], bundle_hash);
    // at least one retry signed another transaction (a newer blockhash),
    // which the node answered with the first and never sent
    let log = std::fs::read_to_string(&daemon.1).unwrap_or_default();
    assert!(
        log.contains("this payer already paid"),
        "no retry carried a new payment: {ts}\n{}",
        daemon.tail()
    );
    let price = 2 * test_dollar::UNITS_PER_DOLLAR;
    assert_eq!(units(&buyer.pubkey()), buyer_before - price, "paid once");
    assert_eq!(units(&seller_pk), seller_before + price, "paid once");
    let db = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    assert_eq!(
        db.buys_by(listing_id, &buyer.pubkey().to_string())
            .unwrap()
            .len(),
        1,
        "one buy on chain"
    );
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// A person at the seller's shop page: headless Chromium with a test
/// wallet registered through Wallet Standard (it signs like Phantom,
/// without Lighthouse, and never hands out its secret). The catalog lists
/// the listing with its price and preview; the page pays through
/// `@x402/fetch` with the key sealed to a key it made for the purchase
/// (the payment's full buy memo names it, at the compute limit that memo
/// needs), opens the release itself, checks the bundle against the
/// seller's list memo on chain and saves it. Pressing Buy again after a
/// reload is answered with the first payment: the money moved once. A
/// blob not listed here is not served.
#[test]
fn a_person_buys_from_the_shop_page_with_a_browser_wallet() {
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let text = "Bought from a shop page with a browser wallet";
    let (seller, listed) = x402_seller(&dir, text, &test_dollar::mint().address);
    let (listing_id, bundle_hash, seller_pk) = terms_of(&listed);
    let buyer = Keypair::new();
    v.fund_dollars(&buyer.pubkey(), 10);
    let script = e2e::x402::shop_script().display().to_string();
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        shared.path(),
        &[
            "--x402",
            "127.0.0.1:0",
            "--x402-network",
            DEVNET,
            "--x402-shop-rpc",
            &v.rpc_url,
            "--x402-shop-script",
            &script,
        ],
        "warn,node::x402=info,node::listen=info",
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(
            &chain,
            owner,
            &test_dollar::mint(),
        ))
        .unwrap()
    };
    let seller_units = units(&seller_pk);

    // the catalog the page renders
    let (status, _, catalog) = get(&format!("{base}/x402/listings"), None);
    assert_eq!(status, 200, "{catalog}");
    assert_eq!(catalog["rpc"], v.rpc_url.as_str());
    assert_eq!(catalog["network"], DEVNET);
    let entry = catalog["listings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["listing_id"] == listing_id)
        .unwrap_or_else(|| panic!("{listing_id} not in the catalog: {catalog}"));
    assert_eq!(entry["amount"], "2000000", "{entry}");
    assert_eq!(entry["decimals"], 6, "{entry}");
    assert_eq!(entry["bundle_hash"], bundle_hash, "{entry}");
    assert_eq!(entry["preview"]["memories_count"], 1, "{entry}");
    let (status, _, body) = get(&format!("{base}/x402/blobs/{}", "A".repeat(43)), None);
    assert_eq!(status, 404, "{body}");

    // the person: Buy, then (after a reload) Buy again
    let shop = run_json(
        &daemon,
        "shop.mjs",
        e2e::x402::shop_client(shared.path())
            .args(["--url", &base, "--listing", listing_id, "--again", "--out"])
            .arg(shared.path())
            .arg("--secret")
            .arg(keypair_file(shared.path(), &buyer)),
    );
    let first = &shop["attempts"][0];
    assert_eq!(first["state"], "verified", "{shop}\n{}", daemon.tail());
    assert_eq!(first["bundle_hash"], bundle_hash, "{shop}");
    // the file the page saved is the listed bundle
    let saved = std::fs::read(first["file"].as_str().unwrap()).unwrap();
    assert_eq!(hex::encode(node::crypto::sha256(&saved)), bundle_hash);
    let bundle: Value = serde_json::from_slice(&saved).unwrap();
    assert_eq!(bundle["memories"][0]["content"], text, "{bundle}");
    // what the wallet signed: the exact scheme's layout, the seller's node
    // as fee payer, a compute limit above the client's default 20,000
    let signed = &first["signed"];
    assert_eq!(signed.as_array().unwrap().len(), 1, "{shop}");
    assert_eq!(
        signed[0]["programs"],
        serde_json::json!([COMPUTE_BUDGET, COMPUTE_BUDGET, TOKEN_PROGRAM, MEMO]),
        "{shop}"
    );
    assert_eq!(signed[0]["feePayer"], seller_pk.to_string(), "{shop}");
    assert!(
        signed[0]["computeUnitLimit"].as_u64().unwrap() > 20_000,
        "{shop}"
    );
    // on chain: the full buy memo, naming the page's key (not the payer's
    // own X25519 form, whose secret the wallet keeps)
    let signature: node::chain::Signature =
        first["buy_signature"].as_str().unwrap().parse().unwrap();
    let tx = rt.block_on(chain.transaction(&signature)).unwrap().unwrap();
    let own = Pubkey::new_from_array(
        node::wallet::ed25519_pub_to_x25519(&buyer.pubkey().to_bytes()).unwrap(),
    )
    .to_string();
    let prefix = format!("brainctl-marketplace/v1:buy:{listing_id}:");
    let named = tx
        .memos
        .iter()
        .find_map(|m| m.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no full buy memo: {:?}", tx.memos));
    assert!(node::memo::is_pubkey(named) && named != own, "{named}");
    // the second press: answered with the first payment
    let second = &shop["attempts"][1];
    assert_eq!(second["state"], "verified", "{shop}");
    assert_eq!(second["buy_signature"], first["buy_signature"], "{shop}");
    assert_eq!(units(&buyer.pubkey()), 8_000_000, "paid once");
    assert_eq!(units(&seller_pk), seller_units + 2_000_000, "paid once");
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// The compute-budget program.
const COMPUTE_BUDGET: &str = "ComputeBudget111111111111111111111111111111";
/// SPL Token.
const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// SPL Memo.
const MEMO: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
