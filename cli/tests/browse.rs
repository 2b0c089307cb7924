//! `brainctl marketplace browse|show` against a real indexer API (served
//! in-process over a synthetic log on 127.0.0.1; no chain needed for reads).

mod util;

use indexer::api::AppState;
use indexer::engine::Indexer;
use indexer::fold::FoldConfig;
use indexer::http;
use indexer::store::SqliteStore;
use indexer::synth::{wallet, LogBuilder};
use std::sync::Arc;
use util::Env;

/// Serves a log of 3 settled trades plus one cancelled escrow listing; returns
/// the base URL, the listing ids (trades first, cancelled last) and the runtime.
fn serve() -> (String, Vec<String>, tokio::runtime::Runtime) {
    let mut b = LogBuilder::new();
    for n in 0..3 {
        b.trade(n, 2);
    }
    let seller = wallet(1, 9);
    let gone = b.list_escrow(&seller, 99, node::escrow::PROGRAM_ID);
    b.memo(
        &seller,
        node::market::MemoOp::Cancel {
            listing_id: gone.listing_id.clone(),
        },
    );
    let records = b.finish();
    let ids: Vec<String> = {
        let mut book = indexer::book::ManifestBook::new();
        book.add_records(&records);
        let s = indexer::fold::State::fold(&records, &book, &FoldConfig::default());
        let mut live: Vec<String> = s
            .listings
            .keys()
            .filter(|k| **k != gone.listing_id)
            .cloned()
            .collect();
        live.push(gone.listing_id.clone());
        live
    };
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
    let state = AppState::new(Arc::new(ix), "localnet");
    rt.spawn(http::serve(listener, state, std::future::pending()));
    (base, ids, rt)
}

#[test]
fn browse_pages_and_show_reads_one_listing() {
    let (base, ids, _rt) = serve();
    let env = Env::new();
    let page = env.run(&[
        "--json",
        "marketplace",
        "browse",
        "--indexer",
        &base,
        "--limit",
        "2",
    ]);
    assert_eq!(page.code, 0, "{}", page.stderr);
    let v = page.json();
    let got: Vec<&str> = v["listings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["listing_id"].as_str().unwrap())
        .collect();
    let mut live = ids[..3].to_vec();
    live.sort();
    assert_eq!(
        got,
        live[..2].iter().map(String::as_str).collect::<Vec<_>>()
    );
    let next = v["next_cursor"].as_str().unwrap().to_string();
    let rest = env.run(&[
        "--json",
        "marketplace",
        "browse",
        "--indexer",
        &base,
        "--cursor",
        &next,
    ]);
    assert_eq!(rest.json()["listings"][0]["listing_id"], live[2].as_str());
    assert_eq!(rest.json()["count"], 1, "the cancelled listing is not live");

    let all = env.run(&[
        "marketplace",
        "browse",
        "--indexer",
        &base,
        "--status",
        "cancelled",
    ]);
    assert_eq!(all.code, 0);
    assert!(
        all.stdout.contains(&ids[3]) && all.stdout.contains("cancelled"),
        "{}",
        all.stdout
    );

    let show = env.run(&["--json", "marketplace", "show", &ids[0], "--indexer", &base]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    let l = &show.json()["listing"];
    assert_eq!(
        (l["sales"].as_u64(), l["releases"].as_u64()),
        (Some(1), Some(1))
    );
    let offer = &show.json()["offers"][0];
    assert_eq!(offer["status"], "accepted");
    // another party's free text reaches an agent only when it asks
    assert_eq!(offer["messages_withheld"], true, "{offer}");
    assert!(!show.stdout.contains("synthetic") && !show.stdout.contains("meet me"));
    let asked = env.run(&[
        "--json",
        "marketplace",
        "show",
        &ids[0],
        "--indexer",
        &base,
        "--include-messages",
    ]);
    let offer = &asked.json()["offers"][0];
    assert_eq!(offer["manifest"]["message"], "synthetic", "{offer}");
    assert_eq!(offer["counters"][0]["manifest"]["message"], "meet me");
    assert!(offer.get("messages_withheld").is_none());
    // how each settles, in words
    let direct = env.run(&["marketplace", "show", &ids[0], "--indexer", &base]);
    assert!(
        direct.stdout.contains("  pay to       "),
        "{}",
        direct.stdout
    );
    let escrowed = env.run(&["marketplace", "show", &ids[3], "--indexer", &base]);
    assert!(
        escrowed.stdout.contains(&format!(
            "settles      through escrow program {}",
            node::escrow::PROGRAM_ID
        )),
        "{}",
        escrowed.stdout
    );
    // what its blob proves about the bundle (the synthetic log's escrow
    // listings are v2); a direct listing says nothing of it
    assert!(
        escrowed.stdout.contains("  bundle proof on chain"),
        "{}",
        escrowed.stdout
    );
    assert!(!direct.stdout.contains("bundle proof"), "{}", direct.stdout);
    let shown = env.run(&["--json", "marketplace", "show", &ids[3], "--indexer", &base]);
    assert_eq!(
        shown.json()["listing"]["bundle_proof"],
        "on_chain",
        "{}",
        shown.stdout
    );
}

#[test]
fn bad_ids_and_unreachable_indexers_are_clear_errors() {
    let env = Env::new();
    let bad = env.run(&[
        "marketplace",
        "show",
        "not-an-id",
        "--indexer",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("YYYYMMDD-<12 hex>"), "{}", bad.stderr);
    let down = env.run(&["marketplace", "browse", "--indexer", "http://127.0.0.1:9"]);
    assert_eq!(down.code, 1);
    assert!(
        down.stderr.contains("brainctl-indexer run"),
        "{}",
        down.stderr
    );
    let scheme = env.run(&["marketplace", "browse", "--indexer", "ftp://x"]);
    assert_eq!(scheme.code, 2);
    assert!(
        scheme.stderr.contains("not an http(s) URL"),
        "{}",
        scheme.stderr
    );
    let (base, _, _rt) = serve();
    let missing = env.run(&[
        "marketplace",
        "show",
        "20260101-000000000000",
        "--indexer",
        &base,
    ]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("404"), "{}", missing.stderr);
}
