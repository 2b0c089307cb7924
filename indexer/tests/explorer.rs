//! The web explorer over HTTP (the real router on 127.0.0.1) on states a
//! live chain rarely has in one place: 60 listings (paging and filters), a
//! private listing with an offer and a buy (never shown), an escrow
//! listing with a deposit (its escrow section), and hostile inputs.

use indexer::api::{self, AppState};
use indexer::engine::Indexer;
use indexer::fold::FoldConfig;
use indexer::store::SqliteStore;
use indexer::synth::{wallet, LogBuilder};
use node::chain::Signer;
use std::sync::Arc;

fn event_line(name: &str, body: &[u8]) -> String {
    use base64::Engine;
    let mut b = node::escrow::discriminator("event", name).to_vec();
    b.extend_from_slice(body);
    format!(
        "Program data: {}",
        base64::engine::general_purpose::STANDARD.encode(b)
    )
}

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
    rt.spawn(api::serve(
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
    let deposited = event_line(
        "Deposited",
        &[
            &account.to_bytes()[..],
            &escrow[..],
            &who.to_bytes()[..],
            &7_000u64.to_le_bytes(),
        ]
        .concat(),
    );
    let program = node::escrow::PROGRAM_ID;
    b.push(&[&buyer], String::new(), vec![], vec![]).tx.logs = vec![
        format!("Program {program} invoke [1]"),
        deposited,
        format!("Program {program} success"),
    ];
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
