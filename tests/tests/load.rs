//! Load: 100 buyers pay concurrently; the daemon releases every buy exactly
//! once, loses none, and a further pass does nothing. Prints throughput.

use e2e::{fixed_price, runtime, validator, TestCatalog};
use node::arweave::{FsStore, Uploader};
use node::chain::instructions::default_registry;
use node::chain::Signer;
use node::listen::pass::run_once;
use node::listen::ListenDb;
use node::market::tx::buy_instructions;
use node::wallet::Wallet;
use std::time::Instant;

const LISTING: &str = "20261123-cccccccccccc";
const PRICE: u64 = 10_000_000;
const BUYERS: usize = 100;

#[test]
fn hundred_concurrent_buyers_all_released_once() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let dir = tempfile::tempdir().unwrap();
    let seller = Wallet::generate();
    let seller_pk = seller.solana_keypair().pubkey();
    v.fund(&seller_pk, 10);
    let buyers: Vec<Wallet> = (0..BUYERS).map(|_| Wallet::generate()).collect();
    let kps: Vec<_> = buyers.iter().map(Wallet::solana_keypair).collect();
    let pks: Vec<_> = kps.iter().map(|k| k.pubkey()).collect();
    rt.block_on(futures_util::future::join_all(
        pks.iter().map(|pk| chain.airdrop(pk, 100_000_000)),
    ))
    .into_iter()
    .for_each(|r| {
        r.expect("airdrop");
    });
    let reg = default_registry();
    let sends = buyers.iter().zip(&kps).map(|(w, k)| {
        let ixs = buy_instructions(
            &k.pubkey(),
            &seller_pk,
            PRICE,
            LISTING,
            &w.x25519_address(),
            &reg,
            None,
        );
        let chain = &chain;
        async move { chain.send(&ixs, &[k]).await }
    });
    let sent = rt.block_on(futures_util::future::join_all(sends));
    assert!(sent.iter().all(Result::is_ok), "every buy lands");

    let uploader = Uploader::Fs(FsStore::new(dir.path().join("items")));
    let mut db = ListenDb::open(&dir.path().join("listen.db")).unwrap();
    let shop = TestCatalog::new(vec![fixed_price(LISTING, &seller_pk, PRICE)]);
    let t = Instant::now();
    let mut released = 0;
    for _ in 0..5 {
        let r = rt
            .block_on(run_once(
                &chain, &mut db, &seller, &uploader, &shop, &seller_pk,
            ))
            .unwrap();
        assert_eq!(r.rejected, 0);
        released += r.released;
        if released == BUYERS {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "load: {BUYERS} releases in {secs:.1} s ({:.1} releases/s)",
        BUYERS as f64 / secs
    );
    assert_eq!(released, BUYERS, "none lost");
    assert_eq!(
        db.counts().unwrap(),
        vec![("released".into(), BUYERS as i64)]
    );
    let again = rt
        .block_on(run_once(
            &chain, &mut db, &seller, &uploader, &shop, &seller_pk,
        ))
        .unwrap();
    assert_eq!(again.released + again.seen, 0, "none twice");
    // each buyer's release names a distinct mint
    let mut mints: Vec<String> = sent
        .iter()
        .map(|s| {
            db.get(&s.as_ref().unwrap().signature.to_string())
                .unwrap()
                .mint_address
                .unwrap()
        })
        .collect();
    mints.sort();
    mints.dedup();
    assert_eq!(mints.len(), BUYERS);
}
