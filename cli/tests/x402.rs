//! x402 buyers (issue 31): a seller's `marketplace listen --x402` sells a
//! test-dollar listing's key to the Python `x402` SDK's SVM client (a
//! buyer with nothing else: no SOL, no brainctl), on the localnet, with
//! devnet's CAIP-2 id advertised (the only ids the SDK takes). The client
//! opens the sealed key with the X25519 form of its own key; the blob it
//! decrypts to is the bundle the listing signed. Refusals for the wrong
//! amount, the wrong mint and a transaction spending the node's fee payer
//! send nothing; a replayed payment is the same buy, never a second one.

mod util;

use node::chain::{test_dollar, Keypair, Pubkey, Signer};
use serde_json::Value;
use std::process::{Command, Stdio};
use util::services::{log, Running};
use util::Env;

const DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

fn onchain(e: &Env, args: &[&str]) -> Value {
    let v = e2e::validator();
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    let r = e.run(&full);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
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
    let out = Command::new(e2e::x402::python())
        .arg(script)
        .args(["--url", base, "--listing", listing, "--rpc", &v.rpc_url])
        .arg("--secret")
        .arg(secret)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "buy.py {extra:?}: {}\n{}\nlisten's log ends:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        daemon.tail()
    );
    serde_json::from_slice(&out.stdout).unwrap()
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
    let seller = Env::new();
    seller.ok(&["wallet", "new"]);
    onchain(&seller, &["wallet", "airdrop", "2", "--json"]);
    seller.ok(&["memory", "add", "Paid by an x402 client", "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let listed = onchain(
        &seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "2",
            "--sol-usd",
            "150",
            "--mint",
            &dollar,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let listing = &listed["listing"];
    let (listing_id, bundle_hash) = (
        listing["listing_id"].as_str().unwrap(),
        listing["bundle_hash"].as_str().unwrap(),
    );
    let seller_pk: Pubkey = listing["payment_address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // the buyer: a keypair file and test dollars, no SOL at all
    let buyer = Keypair::new();
    let secret = shared.path().join("buyer.json");
    std::fs::write(
        &secret,
        serde_json::to_string(&buyer.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    v.fund_dollars(&buyer.pubkey(), 10);

    let work = shared.path();
    let mut daemon = Running(
        seller
            .cmd()
            .args(["-u", &v.rpc_url, "--commitment", "confirmed"])
            .args([
                "marketplace",
                "listen",
                "--interval",
                "1",
                "--storage-dir",
                &dir,
                "--x402",
                "127.0.0.1:0",
                "--x402-network",
                DEVNET,
            ])
            .env(
                "RUST_LOG",
                "warn,node::x402=debug,node::listen=info,tower_http=debug",
            )
            .stdout(Stdio::null())
            .stderr(log(&work.join("listen.log")))
            .spawn()
            .unwrap(),
        work.join("listen.log"),
    );
    let base = format!("http://{}", e2e::logged_listen_address(&daemon.1));

    // unpaid: the requirements, the buy memo bound to the buyer's X25519 key
    let bare = client(&daemon, (&base, listing_id), &secret, &["--mode", "bare"]);
    assert_eq!(bare["status"], 402, "{bare}");
    let req = &bare["required"]["accepts"][0];
    let x25519 = Pubkey::new_from_array(
        node::wallet::ed25519_pub_to_x25519(&buyer.pubkey().to_bytes()).unwrap(),
    )
    .to_string();
    assert_eq!(req["scheme"], "exact");
    assert_eq!(req["network"], DEVNET);
    assert_eq!(req["amount"], "2000000");
    assert_eq!(req["asset"], dollar.as_str());
    assert_eq!(req["payTo"], seller_pk.to_string());
    assert_eq!(req["extra"]["feePayer"], seller_pk.to_string());
    // the compact x402 buy memo (the full one exceeds the client's
    // compute budget); the key is sealed to the X25519 form of the buyer's key
    assert_eq!(req["extra"]["memo"], format!("x402:buy:{listing_id}"));

    // refusals: the SDK pays what it is told; our check holds the listing's terms
    let finalized = v
        .chain()
        .at_commitment(node::chain::parse_commitment("finalized").unwrap());
    for _ in 0..120 {
        if rt
            .block_on(node::chain::token::read_mint(&finalized, &other))
            .is_ok()
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
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

    // paid: the SDK's own httpx client pays the 402 by itself
    let seller_lamports = rt.block_on(chain.balance(&seller_pk)).unwrap();
    let paid = client(&daemon, (&base, listing_id), &secret, &[]);
    assert_eq!(paid["status"], 200, "{paid}");
    assert_eq!(paid["settle"]["success"], true);
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

    // a replayed payment is the same transaction: the same buy, once
    let header = {
        let manual = client(&daemon, (&base, listing_id), &secret, &["--mode", "manual"]);
        assert_eq!(manual["status"], 200, "{manual}");
        manual["sent"]["PAYMENT-SIGNATURE"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        units(&buyer.pubkey()),
        6_000_000,
        "a second purchase, paid once"
    );
    let http = reqwest::Client::new();
    let url = format!("{base}/x402/listings/{listing_id}?buyer={}", buyer.pubkey());
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
        units(&buyer.pubkey()),
        6_000_000,
        "a replay pays nothing more"
    );

    // a transaction moving the fee payer's own tokens is refused, unsent
    v.fund_dollars(&seller_pk, 1);
    let hostile =
        e2e::x402::payment_spending_fee_payer(&seller_pk, &buyer, &test_dollar::mint(), req);
    let (status, body) = replay(&hostile);
    assert_eq!(status, 402, "{body}");
    assert_eq!(
        body["error"],
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
    );
    assert_eq!(
        units(&seller_pk),
        5_000_000,
        "the seller's tokens did not move"
    );

    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());

    // where the protocol fee applies, x402 (one recipient) would underpay
    // it on every buy: the endpoint refuses to start, naming why
    let treasury = Keypair::new().pubkey().to_string();
    let fees = [
        ("BRAINCTL_PROTOCOL_FEE_FORCE", "1"),
        ("BRAINCTL_TREASURY_PUBKEY", treasury.as_str()),
    ];
    let feed = seller.with_vars(&fees);
    let refused = feed.run(&[
        "-u",
        &v.rpc_url,
        "--commitment",
        "confirmed",
        "--json",
        "marketplace",
        "listen",
        "--x402",
        "127.0.0.1:0",
        "--storage-dir",
        &dir,
    ]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stdout
            .contains("x402's exact scheme pays the seller alone"),
        "{}",
        refused.stdout
    );
}
