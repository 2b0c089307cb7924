//! The state hash is pinned: a log that walks trades and every kind of
//! refused memo and rejected buy folds to the same bytes as before the
//! fold's refusals were typed (a changed hash would make every running
//! replica disagree with a new one, and needs a STATE_VERSION bump).
//! The log is recorded in `tests/fixtures/every-refusal.jsonl`; the pinned
//! value is what the fold as it was at a05d4c7 (refusals as strings) made
//! of that file, re-recorded and re-pinned with STATE_VERSION 2 when the
//! escrow program became the sealed escrow (its PDAs, calls and events
//! changed).

use indexer::book::ManifestBook;
use indexer::fold::{FoldConfig, State};
use indexer::record::TxRecord;
use indexer::synth::{wallet, LogBuilder, COUNTER_PRICE_LAMPORTS, LIST_PRICE_LAMPORTS};
use node::chain::parsed_tx::Transfer;
use node::market::MemoOp;

const PINNED_STATE_HASH: &str = "dca430765a055328bd325bddcf9a0ffe08298b06b22194de56daec70cfbd5a10";
const PINNED_REFUSALS: usize = 25;

/// Trades, then one transaction of each refused shape.
fn every_refusal_log() -> Vec<TxRecord> {
    let (seller, buyer, other, mallory) = (wallet(1, 0), wallet(2, 0), wallet(2, 1), wallet(3, 0));
    let mut b = LogBuilder::new();
    b.trade(0, 1);
    b.trade(1, 1);
    let l = b.list(&seller, 7, "auction");
    let escrowed = b.list_escrow(&seller, 8, node::escrow::PROGRAM_ID);
    let foreign = b.list_escrow(&seller, 9, "Evi1111111111111111111111111111111111111111");
    // listing family: the same listing again, a squat, a forged cancel
    b.list(&seller, 7, "auction");
    b.list(&mallory, 7, "auction");
    b.memo(
        &mallory,
        MemoOp::Cancel {
            listing_id: l.listing_id.clone(),
        },
    );
    b.push(
        &[&mallory],
        "brainctl-marketplace/v1:nonsense".into(),
        vec![],
        vec![],
    );
    b.memo(
        &mallory,
        MemoOp::Cancel {
            listing_id: "20260101-000000000000".into(),
        },
    );
    // offer family
    let offer = b.offer(&buyer, &l, 30_000_000);
    b.offer(&buyer, &l, 30_000_000);
    b.offer(&seller, &l, 1);
    b.counter(&mallory, &offer, 1);
    b.memo(
        &mallory,
        MemoOp::Accept {
            offer_id: offer.clone(),
        },
    );
    b.memo(
        &seller,
        MemoOp::Withdraw {
            offer_id: offer.clone(),
        },
    );
    b.memo(
        &seller,
        MemoOp::Accept {
            offer_id: offer.clone(),
        },
    );
    b.memo(
        &seller,
        MemoOp::Reject {
            offer_id: offer.clone(),
        },
    );
    b.memo(
        &seller,
        MemoOp::Accept {
            offer_id: "offer-20260101-000000000000".into(),
        },
    );
    // settlement family
    let underpaid = b.buy(&buyer, &l, 29_999_999);
    b.buy(&other, &l, LIST_PRICE_LAMPORTS - 1);
    let co_signed = MemoOp::Buy {
        listing_id: l.listing_id.clone(),
        buyer_x25519: other.x25519_address(),
    };
    let pay = Transfer {
        from: other.address(),
        to: l.payment_address.clone(),
        lamports: LIST_PRICE_LAMPORTS,
    };
    b.push(&[&other, &seller], co_signed.to_string(), vec![pay], vec![]);
    let good = b.buy(&other, &l, LIST_PRICE_LAMPORTS);
    b.buy(&other, &escrowed, LIST_PRICE_LAMPORTS);
    b.buy(&other, &foreign, LIST_PRICE_LAMPORTS);
    b.release(&mallory, &l, &other, &good);
    b.release(&seller, &l, &buyer, &underpaid);
    b.release(&seller, &l, &other, &good);
    b.release(&seller, &l, &other, &good);
    b.memo(
        &seller,
        MemoOp::Cancel {
            listing_id: l.listing_id.clone(),
        },
    );
    b.memo(
        &seller,
        MemoOp::Cancel {
            listing_id: l.listing_id.clone(),
        },
    );
    b.buy(&buyer, &l, COUNTER_PRICE_LAMPORTS);
    // after the cancel: an offer (listing cancelled), then a failed one
    b.offer(&other, &l, 1);
    b.offer(&mallory, &l, 1);
    let failed = b.records().len() - 1;
    // manifests that are not there, or of another kind
    let l2 = b.list(&seller, 10, "auction");
    let l2_item = b.records().last().unwrap().manifests.keys().next().cloned();
    let missing = "M".repeat(43);
    b.memo(
        &buyer,
        MemoOp::Offer {
            listing_id: l2.listing_id.clone(),
            offer_arweave_id: missing.clone(),
            buyer_pubkey: buyer.address(),
        },
    );
    b.memo(
        &buyer,
        MemoOp::Offer {
            listing_id: l2.listing_id.clone(),
            offer_arweave_id: l2_item
                .clone()
                .expect("the list record carries its manifest"),
            buyer_pubkey: buyer.address(),
        },
    );
    b.memo(
        &seller,
        MemoOp::List {
            listing_arweave_id: missing.clone(),
            bundle_hash: "ab".repeat(32),
        },
    );
    b.memo(
        &seller,
        MemoOp::List {
            listing_arweave_id: l2_item
                .clone()
                .expect("the list record carries its manifest"),
            bundle_hash: "cd".repeat(32),
        },
    );
    // a bare release with nothing paid
    b.memo(
        &seller,
        MemoOp::Release {
            listing_id: l2.listing_id.clone(),
            envelope_arweave_id: missing,
            minted_token_address: seller.address(),
        },
    );
    // an offer without a block time, and one after the listing expired
    b.offer(&buyer, &l2, 1);
    let untimed = b.records().len() - 1;
    b.offer(&other, &l2, 1);
    let late = b.records().len() - 1;
    // an escrow buy as an older build recorded it (`deposits`, no calls)
    let legacy = b.escrow_buy(&other, &escrowed);
    let mut records = b.finish();
    records[failed].tx.succeeded = false;
    records[untimed].tx.block_time = None;
    records[late].tx.block_time = Some(l2.expires_at + 1);
    let r = records
        .iter_mut()
        .find(|r| r.tx.signature == legacy)
        .unwrap();
    let deposits = node::escrow::deposits_in(&r.tx);
    r.tx.calls.clear();
    r.tx.legacy_deposits = deposits
        .into_iter()
        .map(|d| node::chain::parsed_tx::LegacyDeposit {
            listing: d.listing,
            buyer: d.buyer,
        })
        .collect();
    records
}

/// The log, recorded once (releases seal with fresh randomness, so the
/// log is a fixture, not regenerated): `BRAINCTL_WRITE_FIXTURE=1` rewrites it.
fn recorded_log() -> Vec<TxRecord> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/every-refusal.jsonl");
    if std::env::var_os("BRAINCTL_WRITE_FIXTURE").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let f = std::fs::File::create(&path).unwrap();
        indexer::logfile::write(f, &every_refusal_log()).unwrap();
    }
    indexer::logfile::read(std::fs::File::open(&path).unwrap()).unwrap()
}

#[test]
fn the_state_hash_is_pinned() {
    let records = recorded_log();
    let mut book = ManifestBook::new();
    book.add_records(&records);
    let s = State::fold(&records, &book, &FoldConfig::default());
    let refusals = s.rejected.values().map(Vec::len).sum::<usize>();
    let rejected_buys = s
        .settlements
        .values()
        .filter(|x| serde_json::to_value(x).unwrap()["status"] == "rejected")
        .count();
    println!(
        "hash {} refusals {refusals} rejected buys {rejected_buys}",
        s.hash()
    );
    assert_eq!((refusals, rejected_buys), (PINNED_REFUSALS, 6));
    assert_eq!(s.hash(), PINNED_STATE_HASH);
}
