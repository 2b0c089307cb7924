//! An API server that folds nothing answers from the state tables what
//! the writer's whole state would: every view (listings and their pages,
//! offers, buys, a buyer's settlement, seller reputation, escrow
//! deposits), for anonymous readers and for each party of private
//! listings, is byte for byte the same over the part of the market
//! [`indexer::statedb::read::scope`] loads as over the whole fold.

use indexer::book::ManifestBook;
use indexer::fold::{FoldConfig, State};
use indexer::record::{sort_chain_order, TxRecord};
use indexer::statedb::around::Anchor;
use indexer::statedb::durable;
use indexer::statedb::postgres::PgState;
use indexer::statedb::read::{scope, Scope};
use indexer::statedb::sqlite::SqliteState;
use indexer::statedb::StateDb;
use indexer::store::{LogStore, SqliteStore};
use indexer::synth::{wallet, LogBuilder, COUNTER_PRICE_LAMPORTS, LIST_PRICE_LAMPORTS};
use indexer::views::{self, ListingFilter};
use node::market::MemoOp;
use serde_json::{json, Value};
use std::sync::Arc;

/// Public and private trades, hostile shapes, escrow buys.
fn market() -> Vec<TxRecord> {
    let mut b = LogBuilder::new();
    for i in 0..6u64 {
        b.trade(i, 3);
        b.hostile_trade(100 + i, 3);
        let seller = wallet(1, i % 3);
        let buyer = wallet(2, 900 + i);
        let private = b.list(&seller, 200 + i, "private");
        let offer = b.offer(&buyer, &private, 30_000_000);
        b.counter(&seller, &offer, COUNTER_PRICE_LAMPORTS);
        b.memo(&seller, MemoOp::Accept { offer_id: offer });
        let buy = b.buy(&buyer, &private, COUNTER_PRICE_LAMPORTS);
        if i % 2 == 0 {
            b.release(&seller, &private, &buyer, &buy);
        }
        let escrowed = b.list_escrow(&seller, 300 + i, node::escrow::PROGRAM_ID);
        b.escrow_buy(&wallet(2, 950 + i), &escrowed);
        b.escrow_reveal(&seller, &escrowed, &wallet(2, 950 + i));
        let plain = b.list(&seller, 400 + i, "auction");
        b.buy(&wallet(2, 970 + i), &plain, LIST_PRICE_LAMPORTS);
        // cancelled by its seller
        let gone = b.list(&seller, 500 + i, "auction");
        b.memo(
            &seller,
            MemoOp::Cancel {
                listing_id: gone.listing_id,
            },
        );
    }
    // a month and more on, every listing so far has expired; new ones live
    b.pass_time(31 * 24 * 3600);
    for i in 0..3u64 {
        b.list(
            &wallet(1, i),
            600 + i,
            if i == 0 { "private" } else { "auction" },
        );
    }
    // the same listing id listed again by another seller: contested
    b.list(&wallet(1, 7), 601, "auction");
    b.finish()
}

fn whole(records: &[TxRecord]) -> State {
    let mut sorted = records.to_vec();
    sort_chain_order(&mut sorted);
    let mut book = ManifestBook::new();
    book.add_records(&sorted);
    State::fold(&sorted, &book, &FoldConfig::default())
}

/// Every view of `s` the scope `sc` answers, as JSON, for `viewer`.
fn views_of(s: &State, sc: &Scope, viewer: Option<&str>) -> Value {
    let cfg = FoldConfig::default();
    match sc {
        Scope::Listing(id) => {
            let Some(l) = s.listings.get(id) else {
                return Value::Null;
            };
            json!({
                "listing": views::listing(s, l, viewer),
                "offers": views::offers_of(s, id, viewer),
                "escrows": views::visible_escrows(s, l, viewer),
                "settlement_for": s.settlements_of(id).map(|(_, b)| views::settlement_for(s, id, &b.buyer, &cfg)).collect::<Vec<_>>(),
            })
        }
        Scope::Offer(id) => match s.offers.get(id) {
            Some(o) if views::may_see_offer(s, o, viewer) => views::offer(o, s.view_now()),
            _ => Value::Null,
        },
        Scope::Settlement(sig) => match s.settlements.get(sig) {
            Some(b) => views::settlement(s, sig, b, &cfg),
            None => Value::Null,
        },
        Scope::Seller(pk) => json!({
            "reputation": views::reputation(s, pk, &cfg, viewer),
            "latencies": views::release_latencies(s, pk, viewer).len(),
        }),
        Scope::Escrow(account) => match s.escrows.get(account) {
            Some(e) => json!({
                "escrow": e,
                "visible": views::may_see_escrow(s, e, viewer),
                "listing": views::escrow_listing(s, e).map(|l| l.listing_id.clone()),
            }),
            None => Value::Null,
        },
        Scope::Page(f) => serde_json::to_value(views::listings(s, f, viewer)).unwrap(),
        Scope::Transactions(sigs) => json!(sigs
            .iter()
            .map(|sig| (
                s.has_folded(sig),
                s.rejected
                    .get(sig)
                    .map(|r| serde_json::to_value(r).unwrap())
            ))
            .collect::<Vec<_>>()),
        Scope::Head => json!([s.now, s.last, s.transactions, s.totals()]),
    }
}

#[test]
fn every_view_over_the_tables_is_the_whole_states() {
    every_view_is_the_whole_states(&mut SqliteState::in_memory().unwrap());
}

/// The same on PostgreSQL, whose reads are one statement each in its own
/// dialect.
#[test]
fn every_view_over_the_postgres_tables_is_the_whole_states() {
    let pg = e2e::postgres::start();
    every_view_is_the_whole_states(&mut PgState::connect(&pg.url).unwrap());
}

/// Folds the market into `db` and compares every view of every scope read
/// from it with the view of the whole state.
fn every_view_is_the_whole_states(db: &mut dyn StateDb) {
    let records = market();
    let s = whole(&records);
    let mut log = SqliteStore::in_memory().unwrap();
    log.put_records(&records, u64::MAX).unwrap();
    durable::catch_up(&log, db, &FoldConfig::default(), 9, &mut |_, _| {}).unwrap();
    let mut scopes = vec![Scope::Head, Scope::Listing("no-such-listing".into())];
    scopes.extend(s.listings.keys().map(|id| Scope::Listing(id.clone())));
    scopes.extend(s.offers.keys().map(|id| Scope::Offer(id.clone())));
    scopes.extend(
        s.settlements
            .keys()
            .map(|sig| Scope::Settlement(sig.clone())),
    );
    scopes.extend(s.escrows.keys().map(|a| Scope::Escrow(a.clone())));
    let sellers: std::collections::BTreeSet<String> =
        s.listings.values().map(|l| l.seller.clone()).collect();
    scopes.extend(sellers.iter().map(|pk| Scope::Seller(pk.clone())));
    let sigs: Vec<String> = records.iter().map(|r| r.tx.signature.clone()).collect();
    scopes.extend(sigs.chunks(7).map(|c| Scope::Transactions(c.to_vec())));
    // every status is held by some listing, so a page the database
    // sieves wrongly differs from the whole state's
    let now = s.view_now();
    for status in ["live", "cancelled", "expired", "contested"] {
        let n = s
            .listings
            .values()
            .filter(|l| l.status(now) == status)
            .count();
        assert!(n > 0, "no {status} listing in the market");
    }
    let statuses = [
        None,
        Some("all"),
        Some("live"),
        Some("cancelled"),
        Some("expired"),
        Some("contested"),
        Some("sold"),
    ];
    for status in statuses {
        for limit in [1, 4, 1_000] {
            let mut f = ListingFilter {
                status: status.map(str::to_string),
                limit,
                ..ListingFilter::default()
            };
            scopes.push(Scope::Page(f.clone()));
            f.visibility = Some("private".into());
            scopes.push(Scope::Page(f.clone()));
            f.category = Some("lesson".into());
            scopes.push(Scope::Page(f.clone()));
            f.visibility = None;
            f.category = Some("no-such-category".into());
            scopes.push(Scope::Page(f.clone()));
            f.category = None;
            f.seller = sellers.iter().next().cloned();
            for price in [1.0, 10.0] {
                f.max_price_usd = Some(price);
                scopes.push(Scope::Page(f.clone()));
            }
            f.after = s.listings.keys().nth(5).cloned();
            scopes.push(Scope::Page(f));
        }
    }
    let buyers: Vec<String> = s
        .settlements
        .values()
        .map(|b| b.buyer.clone())
        .take(3)
        .collect();
    let mut viewers: Vec<Option<&str>> = vec![None];
    viewers.extend(sellers.iter().map(|v| Some(v.as_str())));
    viewers.extend(buyers.iter().map(|v| Some(v.as_str())));
    let mut compared = 0;
    for sc in &scopes {
        let part = scope(db, sc).unwrap();
        for viewer in &viewers {
            let want = views_of(&s, sc, *viewer);
            let got = views_of(&part, sc, *viewer);
            assert_eq!(got, want, "{sc:?} as {viewer:?}");
            compared += 1;
        }
        // a scope holds its part, not the market
        if matches!(sc, Scope::Listing(_) | Scope::Offer(_)) {
            assert!(part.listings.len() <= 1 && part.settlements.len() < s.settlements.len());
        }
    }
    assert!(compared > 500, "{compared}");
    assert!(s.listings.values().any(|l| l.visibility == "private"));
    assert_eq!(db.around(&Anchor::nothing()).unwrap().totals, s.totals());
}

/// On PostgreSQL an API server keeps the state a page or a listing read
/// for the commit it was read at: asked again, it answers from the same
/// state; one commit later, from the new one (the last record, which
/// contests a live listing, moves it off the default page).
#[test]
fn kept_answers_never_outlive_their_commit() {
    let pg = e2e::postgres::start();
    let records = market();
    let (before, last) = records.split_at(records.len() - 1);
    let log = SqliteStore::in_memory().unwrap();
    let ix = indexer::engine::Indexer::open_tables(
        Box::new(log),
        FoldConfig::default(),
        Some(Box::new(PgState::connect(&pg.url).unwrap())),
        vec![Box::new(PgState::connect_reader(&pg.url).unwrap())],
        &mut |_, _| {},
    )
    .unwrap();
    ix.ingest(before.to_vec(), u64::MAX, &[]).unwrap();
    let page = Scope::Page(ListingFilter {
        limit: 1_000,
        ..Default::default()
    });
    let Scope::Page(f) = &page else {
        unreachable!()
    };
    let all = whole(&records);
    let contested = all.listings.values().find(|l| !l.contested_by.is_empty());
    let listing = Scope::Listing(contested.unwrap().listing_id.clone());
    let first = ix.read(&page).unwrap();
    assert!(Arc::ptr_eq(&first, &ix.read(&page).unwrap()), "kept");
    let one = ix.read(&listing).unwrap();
    assert!(Arc::ptr_eq(&one, &ix.read(&listing).unwrap()), "kept");
    let view = |s: &State| serde_json::to_value(views::listings(s, f, None)).unwrap();
    assert_eq!(view(&first), view(&whole(before)));
    ix.ingest(last.to_vec(), u64::MAX, &[]).unwrap();
    let next = ix.read(&page).unwrap();
    assert!(!Arc::ptr_eq(&first, &next));
    assert_ne!(
        view(&first),
        view(&next),
        "the contested listing left the page"
    );
    assert_eq!(view(&next), view(&all));
    assert!(!Arc::ptr_eq(&one, &ix.read(&listing).unwrap()));
}

/// `GET url` on `rt`: status, the `x-indexer-position` header and the body.
fn get(rt: &tokio::runtime::Runtime, url: &str) -> (u16, Option<String>, Vec<u8>) {
    rt.block_on(async {
        let r = reqwest::get(url).await.unwrap();
        let position = r
            .headers()
            .get("x-indexer-position")
            .map(|v| v.to_str().unwrap().to_string());
        (
            r.status().as_u16(),
            position,
            r.bytes().await.unwrap().to_vec(),
        )
    })
}

#[test]
fn anonymous_answers_kept_over_http_are_the_views_of_their_commit() {
    let pg = e2e::postgres::start();
    let records = market();
    let (before, last) = records.split_at(records.len() - 1);
    let ix = Arc::new(
        indexer::engine::Indexer::open_tables(
            Box::new(SqliteStore::in_memory().unwrap()),
            FoldConfig::default(),
            Some(Box::new(PgState::connect(&pg.url).unwrap())),
            vec![Box::new(PgState::connect_reader(&pg.url).unwrap())],
            &mut |_, _| {},
        )
        .unwrap(),
    );
    ix.ingest(before.to_vec(), u64::MAX, &[]).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    rt.spawn(indexer::http::serve(
        listener,
        indexer::api::AppState::new(ix.clone(), "localnet"),
        std::future::pending(),
    ));
    let f = ListingFilter {
        limit: 100,
        ..Default::default()
    };
    let all = whole(&records);
    let contested = all.listings.values().find(|l| !l.contested_by.is_empty());
    let id = contested.unwrap().listing_id.clone();
    let page_url = format!("{base}/listings?limit=100");
    let listing_url = format!("{base}/listings/{id}");
    let page_view = |s: &State| serde_json::to_value(views::listings(s, &f, None)).unwrap();
    let listing_view = |s: &State| {
        let l = &s.listings[&id];
        json!({"listing": views::listing(s, l, None), "offers": views::offers_of(s, &id, None)})
    };
    let json = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();

    let position_of = |s: &State| s.last.map(|(slot, i)| format!("{slot}:{i}"));
    let (code, position, first) = get(&rt, &page_url);
    assert_eq!(code, 200);
    assert_eq!(position, position_of(&whole(before)));
    assert_eq!(json(&first), page_view(&whole(before)));
    assert_eq!(
        get(&rt, &page_url).2,
        first,
        "the kept bytes, the same answer"
    );
    let (code, _, one) = get(&rt, &listing_url);
    assert_eq!(code, 200);
    assert_eq!(json(&one), listing_view(&whole(before)));
    assert_eq!(get(&rt, &listing_url).2, one);
    // the offers route reads the same kept state and renders its own
    let (_, _, offers) = get(&rt, &format!("{listing_url}/offers"));
    assert_eq!(
        json(&offers),
        json!({"offers": listing_view(&whole(before))["offers"]})
    );

    // a commit later, nothing kept answers
    ix.ingest(last.to_vec(), u64::MAX, &[]).unwrap();
    let (_, position, next) = get(&rt, &page_url);
    assert_eq!(position, position_of(&all));
    assert_ne!(next, first, "the contested listing left the page");
    assert_eq!(json(&next), page_view(&all));
    assert_eq!(json(&get(&rt, &listing_url).2), listing_view(&all));
}
