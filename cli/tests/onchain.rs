//! The `brainctl` binary against a real solana-test-validator (started by
//! the e2e harness on free ports): balances, airdrops, pins and the
//! on-chain verify.

mod util;

use util::Env;

fn onchain(e: &Env, args: &[&str]) -> util::Run {
    let v = e2e::validator();
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    e.run(&full)
}

fn ok(e: &Env, args: &[&str]) -> serde_json::Value {
    let r = onchain(e, args);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
}

#[test]
fn airdrop_then_balance() {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    assert_eq!(ok(&e, &["wallet", "balance", "--json"])["lamports"], 0);
    let drop = ok(&e, &["wallet", "airdrop", "2", "--json"]);
    assert_eq!(drop["balance_lamports"], 2_000_000_000u64);
    assert_eq!(
        ok(&e, &["wallet", "balance", "--json"])["lamports"],
        2_000_000_000u64
    );
    let bad = onchain(&e, &["wallet", "airdrop", "-1"]);
    assert_eq!(bad.code, 2);
}

#[test]
fn pin_then_check_onchain() {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    ok(&e, &["wallet", "airdrop", "1", "--json"]);
    e.ok(&[
        "memory",
        "add",
        "Deploys go through staging first",
        "-c",
        "project",
    ]);
    let ex = ok(
        &e,
        &[
            "export",
            "--sign",
            "--pin-onchain",
            "-o",
            "p.signed.json",
            "--json",
        ],
    );
    assert_eq!(ex["pinned_onchain"], true);
    let sig = ex["pin"]["signature"].as_str().unwrap().to_string();
    let receipt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(e.path("p.signed.json.pin.json")).unwrap())
            .unwrap();
    assert_eq!(receipt["signature"], sig.as_str());
    assert_eq!(
        receipt["memo"],
        format!(
            "brainctl/v1:{}:{}",
            ex["bundle_hash"].as_str().unwrap(),
            ex["signer_pubkey"].as_str().unwrap()
        )
    );

    let v = ok(
        &e,
        &["verify", "--check-onchain", "p.signed.json", "--json"],
    );
    assert_eq!(v["onchain"]["pinned"], true);
    assert_eq!(v["onchain"]["pin"]["signature"], sig.as_str());

    // a bundle signed but never pinned: exit 2 with the reason
    let ex2 = ok(
        &e,
        &["export", "--sign", "-o", "unpinned.signed.json", "--json"],
    );
    assert_eq!(ex2["pinned_onchain"], false);
    let r = onchain(&e, &["verify", "--check-onchain", "unpinned.signed.json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not pinned"), "{}", r.stderr);
}

#[test]
fn bad_cluster_is_bad_input() {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    let r = e.run(&["-u", "mainnet-bet", "wallet", "balance"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("localhost"), "{}", r.stderr);
}
