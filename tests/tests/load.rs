//! Load: 100 buyers pay concurrently; the daemon releases every buy exactly
//! once, loses none, and a further pass does nothing. Prints throughput.

use e2e::{runtime, validator, Buyer, Shop};
use node::chain::Signer;
use std::time::Instant;

const LISTING: &str = "20261123-cccccccccccc";
const PRICE: u64 = 10_000_000;
const BUYERS: usize = 100;

#[test]
fn hundred_concurrent_buyers_all_released_once() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let shop = Shop::open(v, 10);
    let mut shop = {
        let listing = shop.at_price(LISTING, PRICE);
        shop.selling(vec![listing])
    };
    let buyers: Vec<Buyer> = (0..BUYERS).map(|_| Buyer::unfunded()).collect();
    let keys: Vec<_> = buyers.iter().map(|b| b.key.pubkey()).collect();
    rt.block_on(futures_util::future::join_all(
        keys.iter().map(|pk| chain.airdrop(pk, 100_000_000)),
    ))
    .into_iter()
    .for_each(|r| {
        r.expect("airdrop");
    });
    let sends = buyers.iter().map(|b| {
        let ixs = b.buy(&shop, LISTING, PRICE);
        let chain = &chain;
        async move { chain.send(&ixs, &[&b.key]).await }
    });
    let sent = rt.block_on(futures_util::future::join_all(sends));
    assert!(sent.iter().all(Result::is_ok), "every buy lands");

    let t = Instant::now();
    let mut released = 0;
    for _ in 0..5 {
        let r = shop.pass(&rt, &chain);
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
        shop.db.counts().unwrap(),
        vec![("released".into(), BUYERS as i64)]
    );
    let again = shop.pass(&rt, &chain);
    assert_eq!(again.released + again.seen, 0, "none twice");
    // each buyer's release names a distinct mint
    let mut mints: Vec<String> = sent
        .iter()
        .map(|s| {
            shop.db
                .get(&s.as_ref().unwrap().signature.to_string())
                .unwrap()
                .mint_address
                .unwrap()
        })
        .collect();
    mints.sort();
    mints.dedup();
    assert_eq!(mints.len(), BUYERS);
}
