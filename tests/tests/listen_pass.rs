//! The daemon's pass on a real validator: buyers pay concurrently, one
//! underpays; one pass releases every valid buy exactly once and rejects
//! the hostile one; a second pass finds nothing to do.

use e2e::{fixed_price, runtime, validator, TestCatalog};
use node::arweave::{FsStore, Uploader};
use node::chain::instructions::default_registry;
use node::chain::{Keypair, Signer};
use node::listen::pass::{run_once, PassReport};
use node::listen::release::release_mint;
use node::listen::ListenDb;
use node::market::tx::buy_instructions;
use node::market::MemoOp;
use node::wallet::Wallet;

const LISTING: &str = "20261123-aaaaaaaaaaaa";
const PRICE: u64 = 100_000_000;

#[test]
fn one_pass_releases_each_valid_buy_once() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let dir = tempfile::tempdir().unwrap();
    let seller = Wallet::generate();
    let seller_kp = seller.solana_keypair();
    v.fund(&seller_kp.pubkey(), 5);
    let catalog = TestCatalog::new(vec![fixed_price(LISTING, &seller_kp.pubkey(), PRICE)]);
    let buyers: Vec<(Wallet, Keypair)> = (0..6)
        .map(|_| {
            let w = Wallet::generate();
            let k = w.solana_keypair();
            v.fund(&k.pubkey(), 1);
            (w, k)
        })
        .collect();
    // all buyers pay at once; the last one underpays
    let sends = buyers.iter().enumerate().map(|(i, (w, k))| {
        let amount = if i == 5 { PRICE / 2 } else { PRICE };
        let ixs = buy_instructions(
            &k.pubkey(),
            &seller_kp.pubkey(),
            amount,
            LISTING,
            &w.x25519_address(),
            &default_registry(),
            None,
        );
        let chain = &chain;
        async move { chain.send(&ixs, &[k]).await }
    });
    let sent = rt.block_on(futures_util::future::join_all(sends));
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");

    let uploader = Uploader::Fs(FsStore::new(dir.path().join("items")));
    let mut db = ListenDb::open(&dir.path().join("listen.db")).unwrap();
    let first = rt
        .block_on(run_once(
            &chain,
            &mut db,
            &seller,
            &uploader,
            &catalog,
            &seller_kp.pubkey(),
        ))
        .unwrap();
    assert_eq!(
        first,
        PassReport {
            seen: 6,
            verified: 5,
            rejected: 1,
            released: 5,
            failed: 0,
            discovery_error: None,
        }
    );
    let second = rt
        .block_on(run_once(
            &chain,
            &mut db,
            &seller,
            &uploader,
            &catalog,
            &seller_kp.pubkey(),
        ))
        .unwrap();
    assert_eq!(second, PassReport::default(), "nothing to do twice");

    // one release memo per valid buy, naming the buy's own mint
    let history = rt
        .block_on(chain.signatures_for(&seller_kp.pubkey(), None))
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
                &seller,
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
        db.counts().unwrap(),
        vec![("rejected".into(), 1), ("released".into(), 5)]
    );
}
