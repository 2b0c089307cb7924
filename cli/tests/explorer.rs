//! The web explorer in a real browser: a negotiated trade through the
//! binaries on a validator (list, offer, counter, accept, buy, released by
//! the live `marketplace listen` service) while `brainctl-indexer run`
//! follows the chain; then headless Chromium loads the explorer's pages
//! and the test reads their DOM (the listing, its timeline rows, the
//! seller's figures and chart) and saves screenshots as artifacts.

mod util;

use serde_json::Value;
use std::time::{Duration, Instant};
use util::services::{get, services};

/// The elements of `dom` carrying `attr="value"` (a plain count; the
/// markup is ours and regular).
fn count(dom: &str, needle: &str) -> usize {
    dom.matches(needle).count()
}

/// The text inside the element with `id`.
fn text_of(dom: &str, id: &str) -> String {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let open = dom[start..].find('>').unwrap() + start + 1;
    let close = dom[open..].find('<').unwrap() + open;
    dom[open..close].trim().to_string()
}

#[test]
fn the_explorer_shows_a_negotiated_trade_in_a_browser() {
    let browser = e2e::browser::Chromium::find();
    let v = e2e::validator();
    let rpc = v.rpc_url.as_str();
    let (seller, buyer, work, items) = util::funded_pair(rpc);
    seller.ok(&[
        "memory",
        "add",
        "Ship small diffs; review within a day",
        "-c",
        "lesson",
        "-t",
        "review,process",
    ]);
    seller.ok(&[
        "memory",
        "add",
        "Staging mirrors production data shapes",
        "-c",
        "ops",
    ]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let listed = seller.ok_on(
        rpc,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "2",
            "--sol-usd",
            "100",
            "--description",
            "Two hard-won engineering lessons",
            "--storage-dir",
            &items,
            "--json",
        ],
    );
    let listing_id = listed["listing"]["listing_id"]
        .as_str()
        .unwrap()
        .to_string();
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let seller_pk = seller.ok(&["wallet", "address"]).stdout.trim().to_string();
    let (mut daemon, indexer, base) = services(&seller, rpc, &items, work.path());

    // the negotiation and the buy, through the binaries
    let offer = buyer.ok_on(
        rpc,
        &[
            "marketplace",
            "offer",
            &manifest,
            "--price-usd",
            "1",
            "--sol-usd",
            "100",
            "--storage-dir",
            &items,
            "--json",
        ],
    );
    let offer_item = offer["offer_item_id"].as_str().unwrap().to_string();
    seller.ok_on(
        rpc,
        &[
            "marketplace",
            "counter",
            &offer_item,
            "--price-usd",
            "1.5",
            "--sol-usd",
            "100",
            "--storage-dir",
            &items,
            "--json",
        ],
    );
    seller.ok_on(
        rpc,
        &[
            "marketplace",
            "accept",
            &offer_item,
            "--storage-dir",
            &items,
            "--json",
        ],
    );
    let bought = buyer.ok_on(
        rpc,
        &[
            "marketplace",
            "buy",
            &manifest,
            "--offer",
            &offer_item,
            "--storage-dir",
            &items,
            "--timeout",
            "120",
            "--json",
        ],
    );
    assert!(daemon.alive(), "listen: {}", daemon.tail());
    let buy_sig = bought["buy_signature"].as_str().unwrap().to_string();

    // the indexer has folded the release
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rep = get(&format!("{base}/sellers/{seller_pk}"));
        if rep.as_ref().is_some_and(|r| r["releases"] == 1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "indexer never folded the release: {rep:?}\n{}",
            indexer.tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    // the listings page
    let home = browser.dom(&format!("{base}/?status=all"));
    assert_eq!(
        count(&home, &format!("data-listing=\"{listing_id}\"")),
        1,
        "{home}"
    );
    assert!(home.contains(&format!("href=\"/l/{listing_id}\"")));
    assert!(home.contains("0.0200 SOL"), "the listed price");

    // the listing page: facts, preview, every step of the trade in order
    let page = browser.dom(&format!("{base}/l/{listing_id}"));
    assert!(
        text_of(&page, "price").starts_with("0.0200 SOL"),
        "{}",
        text_of(&page, "price")
    );
    assert!(page.contains("Two hard-won engineering lessons"));
    assert!(text_of(&page, "sales").starts_with('1'));
    let events: Vec<&str> = page
        .match_indices("data-event=\"")
        .map(|(i, m)| {
            let rest = &page[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(
        events,
        ["listed", "offer", "counter", "accepted", "buy", "release"],
        "{page}"
    );
    assert!(page.contains(&buy_sig), "the buy links to its transaction");
    assert!(
        page.contains("0.0150 SOL"),
        "the counter price in the history"
    );

    // the seller page: the API's figures and one bar per release
    let api: Value = get(&format!("{base}/sellers/{seller_pk}")).unwrap();
    let sp = browser.dom(&format!("{base}/s/{seller_pk}"));
    assert_eq!(text_of(&sp, "rep-sales"), api["sales"].to_string());
    assert_eq!(text_of(&sp, "rep-releases"), "1");
    assert_eq!(text_of(&sp, "rep-unreleased"), "0");
    assert_eq!(count(&sp, "<rect class=\"bar\""), 1, "{sp}");

    // bad input is a page, not a crash
    assert!(browser
        .dom(&format!("{base}/l/20260101-000000000000"))
        .contains("No listing"));
    assert!(browser
        .dom(&format!("{base}/?max_price_usd=-1"))
        .contains("Bad filter"));

    // screenshots as artifacts
    let out = e2e::browser::artifacts_dir().join("explorer");
    for (name, url) in [
        ("listings.png", format!("{base}/?status=all")),
        ("listing.png", format!("{base}/l/{listing_id}")),
        ("seller.png", format!("{base}/s/{seller_pk}")),
    ] {
        browser.screenshot(&url, &out.join(name), 1200, 1000);
    }
    eprintln!("screenshots in {}", out.display());
    drop(indexer);
    drop(daemon);
}
