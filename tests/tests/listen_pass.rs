//! The daemon's pass on a real validator: buyers pay concurrently, one
//! underpays; one pass releases every valid buy exactly once and rejects
//! the hostile one; a second pass finds nothing to do.

use e2e::{runtime, validator, Buyer, Shop};
use node::listen::pass::PassReport;
use node::listen::release::release_mint;
use node::market::MemoOp;

const LISTING: &str = "20261123-aaaaaaaaaaaa";
const PRICE: u64 = 100_000_000;

#[test]
fn one_pass_releases_each_valid_buy_once() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let shop = Shop::open(v, 5);
    let mut shop = {
        let listing = shop.at_price(LISTING, PRICE);
        shop.selling(vec![listing])
    };
    let buyers: Vec<Buyer> = (0..6).map(|_| Buyer::funded(v, 1)).collect();
    // all buyers pay at once; the last one underpays
    let sends = buyers.iter().enumerate().map(|(i, b)| {
        let amount = if i == 5 { PRICE / 2 } else { PRICE };
        let ixs = b.buy(&shop, LISTING, amount);
        let chain = &chain;
        async move { chain.send(&ixs, &[&b.key]).await }
    });
    let sent = rt.block_on(futures_util::future::join_all(sends));
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");

    assert_eq!(
        shop.pass(&rt, &chain),
        PassReport {
            seen: 6,
            verified: 5,
            rejected: 1,
            released: 5,
            claimed: 0,
            deferred: 0,
            failed: 0,
            discovery_error: None,
        }
    );
    assert_eq!(
        shop.pass(&rt, &chain),
        PassReport::default(),
        "nothing to do twice"
    );

    // one release memo per valid buy, naming the buy's own mint
    let history = rt
        .block_on(chain.signatures_for(&shop.seller_pk, None))
        .unwrap();
    let mut release_mints: Vec<String> = history
        .iter()
        .filter_map(|s| {
            rt.block_on(chain.transaction(&s.signature.parse().unwrap()))
                .unwrap()
        })
        .flat_map(|t| t.memos)
        .filter_map(|m| match MemoOp::parse(&m) {
            Ok(MemoOp::Release {
                minted_token_address,
                ..
            }) => Some(minted_token_address),
            _ => None,
        })
        .collect();
    release_mints.sort();
    let mut expected: Vec<String> = sent[..5]
        .iter()
        .map(|s| {
            release_mint(
                &shop.seller,
                &s.as_ref().unwrap().signature.to_string(),
                node::mint::bundle_mint::TokenStandard::LightCompressed,
            )
            .unwrap()
            .0
            .to_string()
        })
        .collect();
    expected.sort();
    assert_eq!(release_mints, expected);
    // each released token is tied to the listing's metadata URI by its mint
    for mint in &release_mints {
        let state = rt
            .block_on(node::mint::token2022::read_mint(
                &chain,
                &mint.parse().unwrap(),
            ))
            .unwrap();
        assert_eq!(
            (state.uri.as_str(), state.supply, state.mint_authority),
            ("ar://meta", 1, None)
        );
    }
    assert_eq!(
        shop.db.counts().unwrap(),
        vec![("rejected".into(), 1), ("released".into(), 5)]
    );
}

/// A shop selling [`LISTING`] at [`PRICE`], and a proxy in front of the
/// validator that the lying-node tests make lie.
fn shop_behind_proxy(v: &e2e::TestValidator) -> (e2e::proxy::FaultProxy, Shop) {
    let shop = Shop::open(v, 5);
    let listing = shop.at_price(LISTING, PRICE);
    (
        e2e::proxy::FaultProxy::start(&v.rpc_url),
        shop.selling(vec![listing]),
    )
}

/// Passes over `shop` (through `chain`) until one releases a buy.
fn pass_until_released(shop: &mut Shop, rt: &tokio::runtime::Runtime, chain: &node::chain::Chain) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let p = shop.pass(rt, chain);
        if p.released == 1 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never released: {p:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// A lying RPC node answers `getTransaction` of an honest buy with another
/// real transaction (here a stranger's 1-lamport buy of the same listing):
/// the pass neither exits nor judges the honest buy by it (the answer is
/// an error, retried later); once the node answers honestly, the buy is
/// released.
#[test]
fn an_rpc_answering_another_transaction_is_never_a_verdict() {
    let v = validator();
    let rt = runtime();
    let (proxy, mut shop) = shop_behind_proxy(v);
    let (honest_chain, lying_chain) = (v.chain(), proxy.chain());
    let (buyer, stranger) = (Buyer::funded(v, 1), Buyer::funded(v, 1));
    let junk = rt
        .block_on(honest_chain.send(&stranger.buy(&shop, LISTING, 1), &[&stranger.key]))
        .unwrap();
    let honest = rt
        .block_on(honest_chain.send(&buyer.buy(&shop, LISTING, PRICE), &[&buyer.key]))
        .unwrap();
    proxy.substitute(Some((
        "getTransaction",
        honest.signature.to_string(),
        junk.signature.to_string(),
    )));
    let lied_to = shop.pass(&rt, &lying_chain);
    assert_eq!((lied_to.seen, lied_to.released), (2, 0), "{lied_to:?}");
    assert_eq!(
        lied_to.rejected, 1,
        "only the junk buy is rejected: {lied_to:?}"
    );
    assert_eq!(lied_to.failed, 1, "the lie is a retry: {lied_to:?}");
    let row = shop.db.get(&honest.signature.to_string()).unwrap();
    assert_eq!(row.state, node::listen::BuyState::Seen);
    assert!(
        row.last_error
            .as_deref()
            .unwrap_or("")
            .contains("answered getTransaction"),
        "{row:?}"
    );
    // an honest node: released once its retry is due
    proxy.substitute(None);
    pass_until_released(&mut shop, &rt, &lying_chain);
}

/// A node that answers `getTransaction` without the block's time: the buy
/// is not rejected (its expiry cannot be judged yet), it is retried; with
/// the time known again it is released.
#[test]
fn a_missing_block_time_is_a_retry_never_a_rejection() {
    let v = validator();
    let rt = runtime();
    let (proxy, mut shop) = shop_behind_proxy(v);
    let chain = proxy.chain();
    let buyer = Buyer::funded(v, 1);
    let paid = rt
        .block_on(
            v.chain()
                .send(&buyer.buy(&shop, LISTING, PRICE), &[&buyer.key]),
        )
        .unwrap();
    proxy.set(e2e::proxy::Fault::NoBlockTime);
    let timeless = shop.pass(&rt, &chain);
    assert_eq!(
        (
            timeless.seen,
            timeless.rejected,
            timeless.failed,
            timeless.released
        ),
        (1, 0, 1, 0),
        "{timeless:?}"
    );
    let row = shop.db.get(&paid.signature.to_string()).unwrap();
    assert_eq!(row.state, node::listen::BuyState::Seen);
    proxy.set(e2e::proxy::Fault::None);
    pass_until_released(&mut shop, &rt, &chain);
}

/// A free listing makes every `buy` memo a release the seller pays for:
/// such buys (paying under a release's cost) share an hourly budget,
/// oldest first, the rest wait verified; a paying buy behind them is
/// released in the same pass.
#[test]
fn buys_under_a_releases_cost_share_an_hourly_budget() {
    const FREE: &str = "20261123-fffffffffff0";
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let shop = Shop::open(v, 5);
    let mut shop = {
        let listings = vec![shop.at_price(FREE, 0), shop.at_price(LISTING, PRICE)];
        shop.selling(listings)
    };
    let cost = rt
        .block_on(node::mint::release_cost(
            &chain,
            node::mint::bundle_mint::TokenStandard::LightCompressed,
        ))
        .unwrap();
    assert!(
        (1_000_000..10_000_000).contains(&cost),
        "a release costs rent for a mint with metadata and fees: {cost}"
    );
    shop.catalog.below_cost = Some(node::listen::pass::BelowCost {
        floor_lamports: cost,
        per_hour: 2,
    });
    let junk: Vec<Buyer> = (0..4).map(|_| Buyer::funded(v, 1)).collect();
    for b in &junk {
        rt.block_on(chain.send(&b.buy(&shop, FREE, 0), &[&b.key]))
            .unwrap();
    }
    let honest = Buyer::funded(v, 1);
    rt.block_on(chain.send(&honest.buy(&shop, LISTING, PRICE), &[&honest.key]))
        .unwrap();
    let first = shop.pass(&rt, &chain);
    assert_eq!(
        (
            first.verified,
            first.released,
            first.deferred,
            first.rejected
        ),
        (5, 3, 2, 0),
        "{first:?}"
    );
    let paid = shop
        .db
        .unfinished()
        .unwrap()
        .into_iter()
        .filter(|r| r.listing_id == LISTING)
        .count();
    assert_eq!(paid, 0, "the paying buy was released");
    let again = shop.pass(&rt, &chain);
    assert_eq!(
        (again.released, again.deferred),
        (0, 2),
        "the hour's budget is spent: {again:?}"
    );
}

/// A burst of buys of one listing whose receipts the chain would not
/// refuse to repeat: their releases share transactions (as many as fit a
/// packet), each buy is released exactly once, and every buyer gets its
/// unit of the listing's mint (or, with no receipt, its memo alone).
fn a_burst_shares_release_transactions(receipt: node::mint::receipt::ReceiptMode, table: bool) {
    use node::mint::receipt::{listing_mint, Receipt, ReceiptMode};
    const BUYS: usize = 7;
    let listing = "20261128-bbbbbbbbbbbb";
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let shop = Shop::open(v, 5).with_receipt(receipt);
    let mut shop = {
        let l = shop.at_price(listing, PRICE);
        shop.selling(vec![l])
    };
    if table {
        // the seller's release lookup table, made (and finalized) before
        // the burst
        let in_use = rt
            .block_on(node::listen::tables::until_in_use(
                &chain,
                &shop.seller,
                &mut shop.db,
                std::time::Duration::from_secs(90),
            ))
            .expect("lookup table");
        assert!(in_use, "the table is in use within 90 s");
        let held = chain.lookup_tables();
        assert_eq!(held.len(), 1);
        assert_eq!(
            shop.db.lookup_table().unwrap(),
            Some(held[0].key.to_string()),
            "kept in the state"
        );
        // kept up again, and read back from the chain: the same table
        for recheck in [false, true] {
            rt.block_on(node::listen::tables::keep_up(
                &chain,
                &shop.seller,
                &mut shop.db,
                recheck,
            ))
            .unwrap();
            assert_eq!(chain.lookup_tables()[0].key, held[0].key);
        }
    }
    let buyers: Vec<Buyer> = (0..BUYS).map(|_| Buyer::funded(v, 1)).collect();
    let sends = buyers.iter().map(|b| {
        let ixs = b.buy(&shop, listing, PRICE);
        let chain = &chain;
        async move { chain.send(&ixs, &[&b.key]).await.map(|s| s.signature) }
    });
    let bought: Vec<String> = rt
        .block_on(futures_util::future::join_all(sends))
        .into_iter()
        .map(|s| s.expect("a buy lands").to_string())
        .collect();
    let report = shop.pass(&rt, &chain);
    assert_eq!((report.released, report.failed), (BUYS, 0), "{report:?}");
    assert_eq!(shop.pass(&rt, &chain), PassReport::default());

    let expected = match receipt {
        ReceiptMode::Listing => Receipt::Listing {
            mint: listing_mint(&shop.seller, listing),
        },
        _ => Receipt::None,
    };
    let per_tx = node::listen::release::releases_per_transaction(
        &shop.seller_pk,
        &expected,
        listing,
        &chain.lookup_tables(),
    );
    assert!(per_tx >= 3, "{per_tx}");
    let legacy =
        node::listen::release::releases_per_transaction(&shop.seller_pk, &expected, listing, &[]);
    if table && receipt == ReceiptMode::Listing {
        assert!(per_tx > legacy, "a table fits more: {per_tx} vs {legacy}");
    }
    eprintln!("{receipt:?}, table {table}: {per_tx} releases a transaction (legacy {legacy})");
    // every buy released once, by as few transactions as fit
    let rows: std::collections::BTreeMap<String, node::listen::BuyRow> = shop
        .db
        .buys_of(listing)
        .unwrap()
        .into_iter()
        .map(|r| (r.signature.clone(), r))
        .collect();
    let mut by_tx: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for buy in &bought {
        let row = &rows[buy];
        by_tx
            .entry(row.release_sig.clone().expect("released"))
            .or_default()
            .push(buy.clone());
    }
    assert_eq!(by_tx.len(), BUYS.div_ceil(per_tx), "{by_tx:?}");
    let mut memos = 0;
    for (release, buys) in &by_tx {
        let sig = release.parse().unwrap();
        let tx = rt
            .block_on(chain.transaction(&sig))
            .unwrap()
            .expect("landed");
        assert!(tx.succeeded);
        let json = rt.block_on(chain.transaction_json(&sig)).unwrap().unwrap();
        let version = if table {
            serde_json::json!(0)
        } else {
            serde_json::json!("legacy")
        };
        assert_eq!(json["version"], version, "{release}");
        for m in &tx.memos {
            if let Ok(MemoOp::Release {
                listing_id,
                minted_token_address,
                ..
            }) = MemoOp::parse(m)
            {
                assert_eq!(listing_id, listing);
                assert_eq!(minted_token_address, expected.address().to_string());
                memos += 1;
            }
        }
        let outputs = rt
            .block_on(node::mint::light::minted_outputs(&chain, &sig))
            .unwrap();
        match receipt {
            ReceiptMode::Listing => {
                let mut owners: Vec<String> = outputs
                    .iter()
                    .map(|o| {
                        assert_eq!((o.mint, o.amount), (expected.address(), 1));
                        o.owner.to_string()
                    })
                    .collect();
                let mut payers: Vec<String> = buys
                    .iter()
                    .map(|b| rows[b].buyer.clone().unwrap())
                    .collect();
                owners.sort();
                payers.sort();
                assert_eq!(
                    owners, payers,
                    "a unit to each buyer the transaction releases"
                );
            }
            _ => assert!(outputs.is_empty(), "{outputs:?}"),
        }
    }
    assert_eq!(memos, BUYS, "one release memo per buy, in all");
}

#[test]
fn a_burst_shares_release_transactions_with_the_listings_receipt() {
    a_burst_shares_release_transactions(node::mint::receipt::ReceiptMode::Listing, false);
}

/// With the seller's release lookup table (`listen --lookup-table`): v0
/// release transactions holding more releases each.
#[test]
fn a_burst_shares_release_transactions_through_a_lookup_table() {
    a_burst_shares_release_transactions(node::mint::receipt::ReceiptMode::Listing, true);
}

#[test]
fn a_burst_shares_release_transactions_with_no_receipt() {
    a_burst_shares_release_transactions(node::mint::receipt::ReceiptMode::None, false);
}
