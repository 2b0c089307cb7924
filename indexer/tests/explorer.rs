//! The web explorer over HTTP (the real router on 127.0.0.1) on states a
//! live chain rarely has in one place: 60 listings (paging and filters), a
//! private listing with an offer and a buy (never shown), an escrow
//! listing with a deposit (its escrow section), and hostile inputs.

use indexer::api::AppState;
use indexer::engine::Indexer;
use indexer::fold::FoldConfig;
use indexer::http;
use indexer::store::SqliteStore;
use indexer::synth::{wallet, LogBuilder};
use node::chain::Signer;
use std::sync::Arc;

struct Served {
    base: String,
    rt: tokio::runtime::Runtime,
}

impl Served {
    fn get(&self, path: &str) -> (u16, String) {
        let url = format!("{}{path}", self.base);
        self.rt.block_on(async {
            let r = reqwest::get(&url).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
    }
}

fn serve(b: LogBuilder) -> Served {
    let records = b.finish();
    let ix = Indexer::open(
        Box::new(SqliteStore::in_memory().unwrap()),
        FoldConfig::default(),
    )
    .unwrap();
    let last = records.last().unwrap().tx.slot;
    ix.ingest(records, last, &[]).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    rt.spawn(http::serve(
        listener,
        AppState::new(Arc::new(ix), "localnet"),
        std::future::pending(),
    ));
    Served { base, rt }
}

fn rows(page: &str) -> usize {
    page.matches("<tr class=\"listing\"").count()
}

#[test]
fn pages_filters_privacy_and_escrow() {
    let mut b = LogBuilder::new();
    let (seller, other, buyer) = (wallet(1, 1), wallet(1, 2), wallet(2, 1));
    for n in 0..59 {
        b.list(if n % 2 == 0 { &seller } else { &other }, n, "auction");
    }
    // private: an offer and a buy nobody anonymous may see
    let private = b.list(&seller, 100, "private");
    let offer = b.offer(&buyer, &private, 1_000);
    let buy = b.buy(&buyer, &private, private.price_lamports.unwrap());
    // escrow: a deposit into the listing's account
    let escrowed = b.list_escrow(&seller, 101, node::escrow::PROGRAM_ID);
    let account =
        node::escrow::listing_address(&seller.solana_keypair().pubkey(), &escrowed.listing_id);
    let (escrow, who) = ([9u8; 32], buyer.solana_keypair().pubkey());
    b.escrow_event(
        &buyer,
        node::escrow::EscrowEvent::Deposited {
            listing: account,
            escrow: node::chain::Pubkey::new_from_array(escrow),
            buyer: who,
            amount: 7_000,
            mint: node::chain::Pubkey::default(),
            deposited_at: 0,
        },
    );
    let s = serve(b);

    // paging: 61 listings, 50 a page, the next link continues after the last
    let (code, first) = s.get("/?status=all");
    assert_eq!(code, 200);
    assert_eq!(rows(&first), 50);
    let next = first
        .split("class=\"next\" href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a next link")
        .replace("&amp;", "&");
    let (_, second) = s.get(&next);
    assert_eq!(rows(&second), 11, "{next}");
    assert!(second.contains("first page"));
    // filters: one seller's listings only
    let seller_pk = seller.address();
    let (_, mine) = s.get(&format!("/?status=all&seller_pubkey={seller_pk}"));
    assert_eq!(rows(&mine), 32, "30 auction + private + escrow");
    assert!(!mine.contains(&other.address()));

    // the private listing: listed, nothing else; the offer and buy never appear
    let (code, p) = s.get(&format!("/l/{}", private.listing_id));
    assert_eq!(code, 200);
    assert_eq!(p.matches("data-event=").count(), 1, "{p}");
    assert!(!p.contains(&offer) && !p.contains(&buy) && !p.contains(&buyer.address()));
    assert!(p.contains("private listing"));

    // the escrow listing: its deposit, held
    let (_, e) = s.get(&format!("/l/{}", escrowed.listing_id));
    assert!(e.contains("through the escrow program"));
    assert!(
        e.contains("<tr class=\"escrow\" data-status=\"deposited\""),
        "{e}"
    );
    assert!(e.contains("0.0000 SOL"), "7,000 lamports held: {e}");
    // a direct-payment listing has no escrow section
    let (_, direct) = s.get(&format!("/l/{}", private.listing_id));
    assert!(!direct.contains("id=\"escrow\""));

    // hostile input: pages, never a crash, markup escaped
    for (path, code) in [
        ("/l/<img src=x onerror=alert(1)>", 404),
        ("/l/20260101-000000000000", 404),
        ("/s/not-a-key", 400),
        ("/?max_price_usd=abc", 400),
        ("/?status=nope", 400),
        ("/?cursor=<img src=x>", 200),
        (&format!("/s/{}", wallet(7, 7).address()), 404),
    ] {
        let (got, body) = s.get(path);
        assert_eq!(got, code, "{path}: {body}");
        assert!(body.starts_with("<!DOCTYPE html>"), "{path}");
        assert!(!body.contains("<img src=x"), "{path}: unescaped");
    }
}

/// A deposit event of `buyer` into `listing`'s escrow-program account,
/// held in escrow account `escrow`; returns the deposit's signature.
fn deposit(
    b: &mut LogBuilder,
    listing: &node::market::manifest::Listing,
    buyer: &node::wallet::Wallet,
    escrow: [u8; 32],
    lamports: u64,
) -> String {
    let seller = listing.seller_pubkey.parse().unwrap();
    let account = node::escrow::listing_address(&seller, &listing.listing_id);
    b.escrow_event(
        buyer,
        node::escrow::EscrowEvent::Deposited {
            listing: account,
            escrow: node::chain::Pubkey::new_from_array(escrow),
            buyer: buyer.solana_keypair().pubkey(),
            amount: lamports,
            mint: node::chain::Pubkey::default(),
            deposited_at: 0,
        },
    )
}

/// The review's finding: a private listing's trades leaked through the
/// seller page (chart bars name buy signatures), the `/sellers` figures
/// (counts and volume) and the escrow section / `/escrows`. Every view
/// now asks `views::may_see_trade`: the public listing's trades show, the
/// private listing's show nowhere to an anonymous reader.
#[test]
fn a_private_listings_trades_show_in_no_figure_chart_or_escrow() {
    let mut b = LogBuilder::new();
    let (seller, pub_buyer, priv_buyer) = (wallet(1, 3), wallet(2, 3), wallet(2, 4));
    let public = b.list(&seller, 200, "auction");
    let pub_buy = b.buy(&pub_buyer, &public, public.price_lamports.unwrap());
    b.release(&seller, &public, &pub_buyer, &pub_buy);
    // the private listing: two buys, one released
    let private = b.list(&seller, 201, "private");
    let priv_paid = private.price_lamports.unwrap();
    let priv_buy = b.buy(&priv_buyer, &private, priv_paid);
    b.release(&seller, &private, &priv_buyer, &priv_buy);
    let priv_buy2 = b.buy(&priv_buyer, &private, priv_paid);
    // escrow listings: a public and a private one, a deposit into each
    let pub_escrow = b.list_settled(&seller, 202, "auction", Some(node::escrow::PROGRAM_ID));
    let priv_escrow = b.list_settled(&seller, 203, "private", Some(node::escrow::PROGRAM_ID));
    let (pub_acct, priv_acct) = ([5u8; 32], [6u8; 32]);
    let pub_dep = deposit(&mut b, &pub_escrow, &pub_buyer, pub_acct, 7_000_000);
    let priv_dep = deposit(&mut b, &priv_escrow, &priv_buyer, priv_acct, 987_654_321);
    let s = serve(b);
    let b58 = |k: [u8; 32]| bs58::encode(k).into_string();

    let secrets = [
        priv_buy.clone(),
        priv_buy2.clone(),
        priv_dep.clone(),
        b58(priv_acct),
        priv_buyer.address(),
    ];
    let leaks = |what: &str, body: &str| {
        for x in &secrets {
            assert!(!body.contains(x.as_str()), "{what} shows {x}: {body}");
        }
        assert!(!body.contains("0.9877 SOL"), "{what}: the deposit: {body}");
        assert!(!body.contains("987654321"), "{what}: the deposit: {body}");
    };

    // the seller page: the public buy's bar, nothing of the private ones
    let (code, page) = s.get(&format!("/s/{}", seller.address()));
    assert_eq!(code, 200);
    assert!(
        page.contains(&pub_buy),
        "the public buy's chart bar: {page}"
    );
    assert_eq!(page.matches("<rect").count(), 1, "{page}");
    assert!(page.contains(r#"<dd id="rep-sales">1</dd>"#), "{page}");
    leaks("the seller page", &page);

    // /sellers: one sale, the public one's volume
    let (code, rep) = s.get(&format!("/sellers/{}", seller.address()));
    assert_eq!(code, 200);
    let rep: serde_json::Value = serde_json::from_str(&rep).unwrap();
    assert_eq!(rep["sales"], 1, "{rep}");
    assert_eq!(rep["releases"], 1, "{rep}");
    assert_eq!(rep["unreleased_paid_buys"], 0, "{rep}");
    assert_eq!(
        rep["volume_lamports"],
        public.price_lamports.unwrap(),
        "{rep}"
    );
    leaks("/sellers", &rep.to_string());

    // the listings: the private listing is public, its sales are not
    let (_, api) = s.get(&format!("/listings/{}", private.listing_id));
    let api: serde_json::Value = serde_json::from_str(&api).unwrap();
    assert_eq!(api["listing"]["sales"], 0, "{api}");
    let (_, api) = s.get(&format!("/listings/{}", public.listing_id));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&api).unwrap()["listing"]["sales"],
        1
    );

    // the escrow sections: the public deposit, not the private one
    let (_, e) = s.get(&format!("/l/{}", pub_escrow.listing_id));
    assert!(e.contains(&pub_dep[..8]) && e.contains("0.0070 SOL"), "{e}");
    let (code, e) = s.get(&format!("/l/{}", priv_escrow.listing_id));
    assert_eq!(code, 200);
    assert!(!e.contains("<tr class=\"escrow\""), "{e}");
    leaks("the private escrow listing's page", &e);
    let (code, _) = s.get(&format!("/escrows/{}", b58(pub_acct)));
    assert_eq!(code, 200);
    let (code, e) = s.get(&format!("/escrows/{}", b58(priv_acct)));
    assert_eq!(code, 404, "{e}");
    leaks("/escrows", &e.replace(&b58(priv_acct), ""));
}
