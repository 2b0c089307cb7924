//! Hostile buys on a real validator, each seen by the daemon's pass on the
//! payment address, rejected with its reason, and never released.

use e2e::{runtime, validator, Buyer, Shop};
use node::chain::instructions::{default_registry, discovery, memo, transfer};
use node::chain::{Keypair, Pubkey, Signer};
use node::listen::ListingTerms;
use node::market::MemoOp;

const LIVE: &str = "20261123-111111111111";
const CANCELLED: &str = "20261123-222222222222";
const EXPIRED: &str = "20261123-333333333333";
const PRICE: u64 = 50_000_000;

/// Appends `address` read-only to an instruction so the transaction shows
/// up in that address's history without paying it.
fn reference(
    mut ix: solana_sdk::instruction::Instruction,
    address: &Pubkey,
) -> solana_sdk::instruction::Instruction {
    ix.accounts
        .push(solana_sdk::instruction::AccountMeta::new_readonly(
            *address, false,
        ));
    ix
}

#[test]
fn every_hostile_buy_is_rejected_with_its_reason() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let shop = Shop::open(v, 1);
    let mut shop = {
        let live = shop.at_price(LIVE, PRICE);
        let cancelled = ListingTerms {
            cancelled_at_slot: Some(0),
            ..shop.at_price(CANCELLED, PRICE)
        };
        let expired = ListingTerms {
            expires_at: 1,
            ..shop.at_price(EXPIRED, PRICE)
        };
        shop.selling(vec![live, cancelled, expired])
    };
    let seller_pk = shop.seller_pk;
    let buyer = Buyer::funded(v, 2);
    let bk = &buyer.key;
    let mallory = v.funded_keypair(1);
    let x = buyer.wallet.x25519_address();
    let reg = default_registry();
    let buy = |listing: &str, amount: u64| buyer.buy(&shop, listing, amount);
    let buy_memo = |listing: &str| {
        MemoOp::Buy {
            listing_id: listing.into(),
            buyer_x25519: x.clone(),
        }
        .to_string()
    };
    let send = |ixs: Vec<solana_sdk::instruction::Instruction>, signers: &[&Keypair]| {
        rt.block_on(chain.send(&ixs, signers))
            .unwrap()
            .signature
            .to_string()
    };

    let mut expect: Vec<(String, &str)> = Vec::new();
    expect.push((send(buy(LIVE, PRICE - 1), &[bk]), "underpaid"));
    // pays Mallory; references the seller read-only so the daemon sees it
    let wrong = vec![
        reference(discovery(&reg, 200_000), &seller_pk),
        transfer(&bk.pubkey(), &mallory.pubkey(), PRICE),
        memo(&buy_memo(LIVE), &bk.pubkey()),
    ];
    expect.push((send(wrong, &[bk]), "underpaid"));
    // a failed transaction carrying a full payment and the buy memo
    let failing = vec![
        discovery(&reg, 200_000),
        transfer(&bk.pubkey(), &seller_pk, PRICE),
        memo(&buy_memo(LIVE), &bk.pubkey()),
        transfer(&bk.pubkey(), &mallory.pubkey(), 1_000_000_000_000),
    ];
    let failed = rt
        .block_on(chain.send_skip_preflight(&failing, &[bk]))
        .unwrap()
        .signature
        .to_string();
    expect.push((failed, "tx_failed"));
    // Mallory pays the fee and co-signs; the buyer's payment is real
    let mut cosigned = buy(LIVE, PRICE);
    cosigned.push(memo("co-signed", &mallory.pubkey()));
    expect.push((send(cosigned, &[&mallory, bk]), "extra_signers"));
    expect.push((send(buy(CANCELLED, PRICE), &[bk]), "listing_cancelled"));
    expect.push((send(buy(EXPIRED, PRICE), &[bk]), "listing_expired"));
    // claims a negotiated (lower) price that no accepted offer backs
    expect.push((send(buy(LIVE, PRICE / 2), &[bk]), "underpaid"));
    // replays the buy memo with no payment, referencing the seller
    let replay = vec![
        reference(discovery(&reg, 200_000), &seller_pk),
        memo(&buy_memo(LIVE), &bk.pubkey()),
    ];
    expect.push((send(replay, &[bk]), "underpaid"));

    let report = shop.pass(&rt, &chain);
    assert_eq!(
        (
            report.seen,
            report.rejected,
            report.verified,
            report.released
        ),
        (expect.len(), expect.len(), 0, 0),
        "{report:?}"
    );
    for (sig, reason) in &expect {
        let row = shop.db.get(sig).unwrap();
        assert_eq!(row.state, "rejected", "{reason}");
        let why: serde_json::Value = serde_json::from_str(row.reason.as_deref().unwrap()).unwrap();
        assert_eq!(why["reason"], *reason, "{sig}");
    }
}

/// The transaction that stopped `listen` and froze the indexer (issue 14):
/// failed, referencing the seller's payment address and the registry,
/// carrying a `buy` memo and a memo the RPC returns undecoded (its data is
/// not UTF-8, which is also why it failed). It decodes with an anomaly, is
/// rejected as failed, and the honest buy after it is released.
#[test]
fn the_transaction_that_stopped_listen_is_rejected_and_honest_buys_go_on() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let shop = Shop::open(v, 1);
    let mut shop = {
        let live = shop.at_price(LIVE, PRICE);
        shop.selling(vec![live])
    };
    let seller_pk = shop.seller_pk;
    let mallory = Buyer::funded(v, 1);
    let mk = &mallory.key;
    let buyer = Buyer::funded(v, 1);
    let reg = default_registry();
    let buy_memo = MemoOp::Buy {
        listing_id: LIVE.into(),
        buyer_x25519: mallory.wallet.x25519_address(),
    }
    .to_string();
    let mut not_utf8 = memo("x", &mk.pubkey());
    not_utf8.data = vec![0xff, 0xfe, 0xfd];
    let attack = vec![
        reference(discovery(&reg, 200_000), &seller_pk),
        memo(&buy_memo, &mk.pubkey()),
        not_utf8,
    ];
    let attack_sig = rt
        .block_on(chain.send_skip_preflight(&attack, &[mk]))
        .unwrap()
        .signature;
    let honest = buyer.buy(&shop, LIVE, PRICE);
    let honest_sig = rt
        .block_on(chain.send(&honest, &[&buyer.key]))
        .unwrap()
        .signature;

    // as the RPC returns it: failed, the buy memo read, the other noted
    let parsed = rt
        .block_on(chain.transaction(&attack_sig))
        .unwrap()
        .unwrap();
    assert!(!parsed.succeeded);
    assert_eq!(parsed.memos, vec![buy_memo.clone()]);
    assert_eq!(parsed.anomalies.len(), 1, "{:?}", parsed.anomalies);
    assert!(
        parsed.anomalies[0].contains("memo"),
        "{:?}",
        parsed.anomalies
    );

    let report = shop.pass(&rt, &chain);
    assert_eq!(
        (report.seen, report.rejected, report.released, report.failed),
        (2, 1, 1, 0),
        "{report:?}"
    );
    let attack_row = shop.db.get(&attack_sig.to_string()).unwrap();
    assert_eq!(attack_row.state, "rejected");
    assert!(attack_row.reason.unwrap().contains("tx_failed"));
    assert_eq!(
        shop.db.get(&honest_sig.to_string()).unwrap().state,
        "released"
    );
}
