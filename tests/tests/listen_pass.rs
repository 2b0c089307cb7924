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
