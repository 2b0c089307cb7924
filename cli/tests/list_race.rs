//! A listing is in the seller's catalog before its `list` memo is sent:
//! a buyer who pays the moment the memo is visible (here at `confirmed`,
//! while the seller's `list` still waits for `finalized`) is released by
//! the seller's running `listen` service, and a crash of `list` between
//! landing and recording could strand nobody. (Before, the listing was
//! recorded only once `list` returned: such a buy was never recorded and
//! the checkpoint moved past it.)

mod util;

use std::process::Stdio;
use std::time::{Duration, Instant};
use util::services::{get, services};

#[test]
fn a_buy_paid_before_the_sellers_list_returns_is_released() {
    let v = e2e::validator();
    let rpc = v.rpc_url.as_str();
    let (seller, buyer, work, items) = util::funded_pair(rpc);
    seller.ok(&[
        "memory",
        "add",
        "Race: list, then buy at once",
        "-c",
        "race",
    ]);
    seller.ok(&["export", "--sign", "-o", "race.signed.json"]);
    let (daemon, _indexer, base) = services(&seller, rpc, &items, work.path());

    // the seller's `list` waits for `finalized` (seconds on a local validator)
    let mut list = seller
        .cmd()
        .args(["-u", rpc, "--commitment", "finalized"])
        .args([
            "marketplace",
            "list",
            "race.signed.json",
            "--price-usd",
            "1",
            "--sol-usd",
            "100",
            "--storage-dir",
            &items,
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the listing is in the seller's state, and its memo visible at
    // `confirmed` (the indexer shows it), while `list` still waits
    let deadline = Instant::now() + Duration::from_secs(60);
    let manifest = loop {
        let still_listing = list.try_wait().unwrap().is_none();
        let st = seller.ok_on(rpc, &["marketplace", "status", "--json"]);
        if let Some(l) = st["listings"].as_array().and_then(|a| a.first()) {
            assert!(
                still_listing,
                "the listing reached the seller's state only once `list` had returned: {st}"
            );
            let id = l["listing_id"].as_str().unwrap();
            if get(&format!("{base}/listings/{id}")).is_some_and(|v| v.get("listing").is_some()) {
                break l["manifest_id"].as_str().unwrap().to_string();
            }
        }
        assert!(Instant::now() < deadline, "no listing: {st}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let bought = buyer.ok_on(
        rpc,
        &[
            "marketplace",
            "buy",
            &manifest,
            "--storage-dir",
            &items,
            "--timeout",
            "90",
            "--json",
        ],
    );
    assert_eq!(
        bought["import"]["ids"].as_array().map(Vec::len),
        Some(1),
        "{bought}\nlisten: {}",
        daemon.tail()
    );
    let out = list.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let st = seller.ok_on(rpc, &["marketplace", "status", "--json"]);
    assert_eq!(
        st["listings"][0]["listing_id"], listed["listing"]["listing_id"],
        "{st}"
    );
    assert!(
        listed["listing"]["list_signature"]
            .as_str()
            .is_some_and(|s| s.len() > 80),
        "the list transaction is recorded once it lands: {listed}"
    );
}
