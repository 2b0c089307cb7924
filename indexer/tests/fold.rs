//! The fold's rules on synthetic logs with real signed manifests: trades
//! settle, hostile and forged transactions change nothing but the
//! rejection list (each with its reason), and the state hash is the same
//! however the log is batched or replayed.

use indexer::book::ManifestBook;
use indexer::engine::Indexer;
use indexer::fold::{BuyRefusal, FoldConfig, OfferStatus, Party, Refusal, SettlementStatus, State};
use indexer::record::TxRecord;
use indexer::store::SqliteStore;
use indexer::synth::{self, wallet, LogBuilder, COUNTER_PRICE_LAMPORTS, LIST_PRICE_LAMPORTS};
use node::chain::parsed_tx::Transfer;
use node::market::MemoOp;
use node::settle::Rejection;
use proptest::prelude::*;

fn fold(records: &[TxRecord]) -> State {
    let mut book = ManifestBook::new();
    book.add_records(records);
    State::fold(records, &book, &FoldConfig::default())
}

/// Everything but the bookkeeping (transaction count, rejections, clock).
fn meaning(s: &State) -> String {
    serde_json::to_string(&(&s.listings, &s.offers, &s.settlements)).unwrap()
}

fn reasons(s: &State, sig: &str) -> Vec<Refusal> {
    s.rejected
        .get(sig)
        .map(|v| v.iter().map(|r| r.reason.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn negotiated_trades_settle_and_release() {
    let s = fold(&synth::trades(3, 2));
    assert_eq!(s.transactions, 18);
    assert_eq!(s.listings.len(), 3);
    assert!(s.rejected.is_empty(), "{:?}", s.rejected);
    for o in s.offers.values() {
        assert_eq!(o.status, OfferStatus::Accepted);
        assert_eq!(o.current().price_lamports, Some(COUNTER_PRICE_LAMPORTS));
    }
    for st in s.settlements.values() {
        assert_eq!(st.price_lamports, COUNTER_PRICE_LAMPORTS);
        assert!(st.offer_id.is_some());
        assert!(
            matches!(st.status, SettlementStatus::Released { .. }),
            "{st:?}"
        );
    }
    assert_eq!(s.settlements.len(), 3);
}

/// A live listing by `seller` (bought by nobody yet) and the builder.
fn one_listing() -> (LogBuilder, node::market::manifest::Listing) {
    let mut b = LogBuilder::new();
    let l = b.list(&wallet(1, 0), 0, "auction");
    (b, l)
}

#[test]
fn forged_memos_change_nothing() {
    let seller = wallet(1, 0);
    let buyer = wallet(2, 0);
    let mallory = wallet(3, 0);
    let (mut b, l) = one_listing();
    let offer = b.offer(&buyer, &l, 30_000_000);
    let before = fold(b.records());

    let mut forged = Vec::new();
    // Each a tx signed by the wrong wallet, naming the right ids.
    forged.push((
        b.memo(
            &mallory,
            MemoOp::Cancel {
                listing_id: l.listing_id.clone(),
            },
        ),
        Refusal::CancelNotSignedBySeller,
    ));
    forged.push((
        b.memo(
            &mallory,
            MemoOp::Accept {
                offer_id: offer.clone(),
            },
        ),
        Refusal::NotSignedBy(Party::Seller),
    ));
    forged.push((
        b.memo(
            &seller,
            MemoOp::Withdraw {
                offer_id: offer.clone(),
            },
        ),
        Refusal::NotSignedBy(Party::Buyer),
    ));
    let sig = {
        let r = b.push(
            &[&mallory],
            MemoOp::Offer {
                listing_id: l.listing_id.clone(),
                offer_arweave_id: "A".repeat(43),
                buyer_pubkey: buyer.address(),
            }
            .to_string(),
            vec![],
            vec![],
        );
        r.tx.signature.clone()
    };
    forged.push((sig, Refusal::OfferNotSignedByBuyer));
    let sig = {
        let r = b.push(
            &[&mallory],
            MemoOp::Release {
                listing_id: l.listing_id.clone(),
                envelope_arweave_id: "B".repeat(43),
                minted_token_address: mallory.address(),
            }
            .to_string(),
            vec![],
            vec![],
        );
        r.tx.signature.clone()
    };
    forged.push((sig, Refusal::ReleaseNotSignedBySeller));
    // A counter by a third party, with a valid manifest signed by them.
    b.counter(&mallory, &offer, 1);
    let counter_sig = b.records().last().unwrap().tx.signature.clone();
    forged.push((counter_sig, Refusal::CounterNotParty));
    // The seller's own listing manifest re-posted by someone else.
    let relist = b.records()[0].clone();
    let sig = {
        let r = b.push(&[&mallory], relist.tx.memos[0].clone(), vec![], vec![]);
        r.manifests = relist.manifests.clone();
        r.tx.signature.clone()
    };
    forged.push((sig, Refusal::ListNotSignedBySeller));

    let after = fold(b.records());
    assert_eq!(
        meaning(&after),
        meaning(&before),
        "forgeries changed the state"
    );
    for (sig, want) in forged {
        let got = reasons(&after, &sig);
        assert_eq!(got, vec![want], "tx {sig}");
    }
}

#[test]
fn hostile_buys_are_rejected_with_reasons() {
    let seller = wallet(1, 0);
    let buyer = wallet(2, 0);
    let other = wallet(2, 1);
    let (mut b, l) = one_listing();
    let offer = b.offer(&buyer, &l, 30_000_000);
    b.memo(&seller, MemoOp::Accept { offer_id: offer });

    // The accepted offer's price binds `buyer`: one lamport short.
    let underpaid = b.buy(&buyer, &l, 29_999_999);
    // `other` has no accepted offer: held to the listed price.
    let other_at_offer_price = b.buy(&other, &l, 30_000_000);
    let wrong_address = {
        let memo = MemoOp::Buy {
            listing_id: l.listing_id.clone(),
            buyer_x25519: other.x25519_address(),
        };
        let pay = Transfer {
            from: other.address(),
            to: other.address(),
            lamports: LIST_PRICE_LAMPORTS,
        };
        b.push(&[&other], memo.to_string(), vec![pay], vec![])
            .tx
            .signature
            .clone()
    };
    let failed = b.buy(&other, &l, LIST_PRICE_LAMPORTS);
    let co_signed = {
        let memo = MemoOp::Buy {
            listing_id: l.listing_id.clone(),
            buyer_x25519: other.x25519_address(),
        };
        let pay = Transfer {
            from: other.address(),
            to: l.payment_address.clone(),
            lamports: LIST_PRICE_LAMPORTS,
        };
        b.push(&[&other, &seller], memo.to_string(), vec![pay], vec![])
            .tx
            .signature
            .clone()
    };
    let good = b.buy(&other, &l, LIST_PRICE_LAMPORTS);
    b.memo(
        &seller,
        MemoOp::Cancel {
            listing_id: l.listing_id.clone(),
        },
    );
    let after_cancel = b.buy(&buyer, &l, LIST_PRICE_LAMPORTS);

    let mut records = b.finish();
    // Mark `failed` as failed on chain.
    records
        .iter_mut()
        .find(|r| r.tx.signature == failed)
        .unwrap()
        .tx
        .succeeded = false;
    let s = fold(&records);
    let reason = |sig: &str| match &s.settlements.get(sig).map(|x| &x.status) {
        Some(SettlementStatus::Rejected {
            reason: BuyRefusal::Rules(r),
        }) => r.clone(),
        other => panic!("{sig}: {other:?}"),
    };
    assert_eq!(
        reason(&underpaid),
        Rejection::Underpaid {
            paid: 29_999_999,
            price: 30_000_000
        }
    );
    assert_eq!(
        reason(&underpaid).to_string(),
        "underpaid: 29999999 lamports to the payment address, 30000000 due"
    );
    assert_eq!(
        reason(&other_at_offer_price),
        Rejection::Underpaid {
            paid: 30_000_000,
            price: LIST_PRICE_LAMPORTS
        }
    );
    assert!(matches!(
        reason(&wrong_address),
        Rejection::Underpaid { paid: 0, .. }
    ));
    assert_eq!(reasons(&s, &failed), vec![Refusal::TxFailed]);
    assert!(!s.settlements.contains_key(&failed));
    assert_eq!(reason(&co_signed), Rejection::ExtraSigners { signers: 2 });
    assert!(matches!(
        reason(&after_cancel),
        Rejection::ListingCancelled { .. }
    ));
    assert_eq!(s.settlements[&good].status, SettlementStatus::Paid);
}

#[test]
fn escrow_buys_settle_by_their_deposit_alone() {
    let seller = wallet(1, 0);
    let (buyer, other) = (wallet(2, 0), wallet(2, 1));
    let mut b = LogBuilder::new();
    let l = b.list_escrow(&seller, 0, node::escrow::PROGRAM_ID);
    // an accepted offer does not change an escrow buy: the program holds the listed price
    let offer = b.offer(&buyer, &l, 1);
    b.memo(&seller, MemoOp::Accept { offer_id: offer });
    let good = b.escrow_buy(&buyer, &l);
    // a direct payment to an escrow listing is no buy: nothing holds it to a release
    let direct = b.buy(&other, &l, LIST_PRICE_LAMPORTS);
    // a deposit into another listing's account
    let elsewhere = b.escrow_buy(&other, &l);
    // a release memo alone releases nothing on an escrow listing
    let memo_only = b.memo(
        &seller,
        MemoOp::Release {
            listing_id: l.listing_id.clone(),
            envelope_arweave_id: "x".repeat(43),
            minted_token_address: seller.address(),
        },
    );
    b.escrow_reveal(&seller, &l, &buyer);
    let evil = b.list_escrow(&seller, 1, "Evi1111111111111111111111111111111111111111");
    let into_evil = b.escrow_buy(&buyer, &evil);
    let mut records = b.finish();
    let moved = &mut records
        .iter_mut()
        .find(|r| r.tx.signature == elsewhere)
        .unwrap()
        .tx;
    let mut events = node::escrow::events_in(moved);
    if let [node::escrow::EscrowEvent::Deposited { listing, .. }] = events.as_mut_slice() {
        *listing = wallet(9, 9).address().parse().unwrap();
    }
    moved.inner_calls = events.iter().map(|e| e.emitted()).collect();
    let s = fold(&records);
    let status = |sig: &str| s.settlements[sig].status.clone();
    assert!(
        matches!(status(&good), SettlementStatus::Released { .. }),
        "{:?}",
        status(&good)
    );
    assert_eq!(
        reasons(&s, &memo_only),
        vec![Refusal::EscrowReleasedInProgram]
    );
    assert_eq!(
        (
            s.settlements[&good].paid_lamports,
            s.settlements[&good].price_lamports,
            s.settlements[&good].offer_id.as_deref()
        ),
        (LIST_PRICE_LAMPORTS, LIST_PRICE_LAMPORTS, None)
    );
    let account = node::escrow::listing_address(&seller.address().parse().unwrap(), &l.listing_id);
    let no_deposit = SettlementStatus::Rejected {
        reason: BuyRefusal::Rules(Rejection::NoEscrowDeposit {
            listing_account: account.to_string(),
        }),
    };
    assert_eq!(status(&direct), no_deposit);
    assert_eq!(status(&elsewhere), no_deposit);
    assert_eq!(
        status(&into_evil),
        SettlementStatus::Rejected {
            reason: BuyRefusal::ForeignEscrow {
                program: "Evi1111111111111111111111111111111111111111".into()
            }
        }
    );
}

#[test]
fn expired_listing_refuses_buys_and_offers() {
    let mut b = LogBuilder::new();
    let l = b.list(&wallet(1, 0), 0, "auction");
    let buyer = wallet(2, 0);
    let mut records = b.finish();
    let mut late = LogBuilder::new();
    let sig = late.buy(&buyer, &l, LIST_PRICE_LAMPORTS);
    let mut r = late.finish().pop().unwrap();
    r.tx.slot = 10_000_000;
    r.tx.block_time = Some(l.expires_at + 1);
    records.push(r);
    let s = fold(&records);
    match &s.settlements[&sig].status {
        SettlementStatus::Rejected {
            reason: BuyRefusal::Rules(Rejection::ListingExpired { expires_at, .. }),
        } => assert_eq!(*expires_at, l.expires_at),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.listings[&l.listing_id].status(s.now), "expired");
}

#[test]
fn second_release_of_a_released_buy_is_refused() {
    let seller = wallet(1, 0);
    let buyer = wallet(2, 0);
    let (mut b, l) = one_listing();
    let buy = b.buy(&buyer, &l, LIST_PRICE_LAMPORTS);
    b.release(&seller, &l, &buyer, &buy);
    b.release(&seller, &l, &buyer, &buy);
    let replay = b.records().last().unwrap().tx.signature.clone();
    let s = fold(b.records());
    assert!(matches!(
        s.settlements[&buy].status,
        SettlementStatus::Released { .. }
    ));
    assert_eq!(
        reasons(&s, &replay),
        vec![Refusal::BuyNotAwaitingRelease { signature: buy }]
    );
}

fn ingest_in(records: &[TxRecord], batches: &[usize]) -> String {
    let ix = Indexer::open(
        Box::new(SqliteStore::in_memory().unwrap()),
        FoldConfig::default(),
    )
    .unwrap();
    let final_slot = records.iter().map(|r| r.tx.slot).max().unwrap_or(0);
    let mut rest = records;
    let mut sizes = batches.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap()).clamp(1, rest.len());
        ix.ingest(rest[..n].to_vec(), final_slot, &[]).unwrap();
        rest = &rest[n..];
    }
    ix.state().hash()
}

#[test]
fn replay_of_a_10k_memo_log_matches_incremental_ingest() {
    let records = synth::trades(1_667, 40);
    let memos: usize = records.iter().map(|r| r.tx.memos.len()).sum();
    assert!(memos >= 10_000, "{memos}");
    let incremental = ingest_in(&records, &[1, 7, 250]);
    let mut file = Vec::new();
    indexer::logfile::write(&mut file, &records).unwrap();
    let replayed = indexer::logfile::read(file.as_slice()).unwrap();
    assert_eq!(replayed, records);
    let whole = fold(&replayed);
    assert_eq!(whole.hash(), incremental);
    assert_eq!(whole.settlements.len(), 1_667);
    assert!(whole.rejected.is_empty());
}

#[test]
fn a_bad_log_line_is_an_error_naming_the_line() {
    let mut file = Vec::new();
    indexer::logfile::write(&mut file, &synth::trades(1, 1)[..2]).unwrap();
    file.extend_from_slice(b"{\"tx\": 5}\n");
    let err = indexer::logfile::read(file.as_slice()).unwrap_err();
    assert!(err.to_string().starts_with("log file line 3:"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The hash does not depend on how the log is cut into batches, nor
    /// on batches arriving out of order (the engine refolds).
    #[test]
    fn state_hash_is_independent_of_batching(
        sizes in proptest::collection::vec(1usize..20, 1..6),
        rotate in 0usize..30,
    ) {
        let records = synth::trades(5, 2);
        let want = fold(&records).hash();
        prop_assert_eq!(ingest_in(&records, &sizes), want.clone());
        let mut shuffled = records.clone();
        shuffled.rotate_left(rotate % records.len());
        prop_assert_eq!(ingest_in(&shuffled, &sizes), want);
    }

    /// Arbitrary memos, signers and manifests never panic the fold, and
    /// whatever they are, the honest trades around them still settle.
    #[test]
    fn hostile_memos_never_panic(
        junk in proptest::collection::vec(
            (
                prop_oneof![
                    "brainctl-marketplace/v1:[a-z]{1,8}(:[A-Za-z0-9_-]{0,70}){0,5}",
                    ".{0,200}",
                ],
                any::<bool>(),
                proptest::option::of(any::<i64>()),
            ),
            0..20,
        ),
    ) {
        let mut b = LogBuilder::new();
        b.trade(0, 1);
        let mallory = wallet(3, 0);
        for (memo, ok, time) in junk {
            let r = b.push(&[&mallory], memo, vec![], vec![]);
            r.tx.succeeded = ok;
            r.tx.block_time = time;
        }
        b.trade(1, 1);
        let s = fold(b.records());
        prop_assert_eq!(s.settlements.len(), 2);
        let released = s
            .settlements
            .values()
            .filter(|x| matches!(x.status, SettlementStatus::Released { .. }))
            .count();
        prop_assert_eq!(released, 2);
    }
}

#[test]
fn escrow_program_events_fold_beside_the_memos() {
    use node::chain::Pubkey;
    use node::escrow::EscrowEvent;
    let (listing, escrow, buyer) = (
        Pubkey::new_from_array([1; 32]),
        Pubkey::new_from_array([2; 32]),
        Pubkey::new_from_array([3; 32]),
    );
    let deposited = EscrowEvent::Deposited {
        listing,
        escrow,
        buyer,
        amount: 5_000,
        mint: Pubkey::default(),
        deposited_at: 1,
    };
    let claimed = EscrowEvent::Claimed {
        escrow,
        to_seller: 4_950,
        fee: 50,
    };
    let mut b = LogBuilder::new();
    let payer = wallet(2, 0);
    b.escrow_event(&payer, deposited);
    // the same bytes as another program's call, or as the escrow
    // program's call signed by another account than its event authority,
    // are no event
    let mut forged = claimed.emitted();
    forged.program_id = "Evi1111111111111111111111111111111111111111".into();
    let mut unsigned = claimed.emitted();
    unsigned.accounts = vec![payer.address()];
    b.push(&[&payer], String::new(), vec![], vec![])
        .tx
        .inner_calls = vec![forged, unsigned];
    let s = fold(b.records());
    let key = escrow.to_string();
    assert_eq!(s.escrows[&key].status, "deposited");
    b.escrow_event(&payer, EscrowEvent::Revealed { escrow });
    let s = fold(b.records());
    assert_eq!(s.escrows[&key].status, "revealed");
    assert!(s.escrows[&key].revealed.is_some());
    b.escrow_event(&payer, claimed);
    let s = fold(b.records());
    let e = &s.escrows[&key];
    assert_eq!(
        (e.status, e.paid, e.amount),
        ("claimed", Some((4_950, 50)), 5_000)
    );
}

/// A refund folds into the buy it undoes: the escrow buy turns
/// `refunded` (with the stake share the same instruction paid), and the
/// seller's record counts it as refunded, neither a sale nor unreleased;
/// an escrow buy is a sale, with its volume, only once claimed; a buyer
/// deposits at the same escrow account again after a claimed buy, and
/// each event settles the deposit the account holds, never the buyer's
/// earlier buy.
#[test]
fn refunds_claims_and_redeposits_fold_into_their_own_settlement() {
    use node::chain::Pubkey;
    use node::escrow::EscrowEvent;
    let seller = wallet(1, 0);
    let (buyer, other) = (wallet(2, 0), wallet(2, 1));
    let mut b = LogBuilder::new();
    let l = b.list_escrow(&seller, 0, node::escrow::PROGRAM_ID);
    let refunded = b.escrow_buy(&buyer, &l);
    let kept = b.escrow_buy(&other, &l);
    let account = node::escrow::listing_address(&seller.address().parse().unwrap(), &l.listing_id);
    let escrow_of = |w: &node::wallet::Wallet| {
        node::escrow::escrow_address(&account, &w.address().parse::<Pubkey>().unwrap())
    };
    let refund_sig = b.escrow_event(
        &buyer,
        EscrowEvent::Refunded {
            escrow: escrow_of(&buyer),
            amount: LIST_PRICE_LAMPORTS,
            slashed: 50_000,
        },
    );
    let cfg = FoldConfig::default();
    let figures = |s: &State| {
        let r = indexer::views::reputation(s, &seller.address(), &cfg, None);
        (
            r.sales,
            r.pending_escrow_buys,
            r.refunded_buys,
            r.slashed_lamports,
            r.volume_lamports,
        )
    };
    let s = fold(b.records());
    match &s.settlements[&refunded].status {
        SettlementStatus::Refunded {
            at,
            slashed_lamports,
        } => assert_eq!(
            (at.signature.as_str(), *slashed_lamports),
            (refund_sig.as_str(), 50_000)
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.settlements[&kept].status, SettlementStatus::Paid);
    assert_eq!(
        s.escrows[&escrow_of(&buyer).to_string()].slashed,
        Some(50_000)
    );
    assert_eq!(figures(&s), (0, 1, 1, 50_000, 0), "deposited: no sale yet");
    assert_eq!(
        indexer::views::settlement_for(&s, &l.listing_id, &buyer.address(), &cfg)["status"],
        "refunded"
    );
    // revealed: released, still no sale; claimed: a sale at what was held
    b.escrow_reveal(&seller, &l, &other);
    assert_eq!(figures(&fold(b.records())), (0, 1, 1, 50_000, 0));
    let escrow = escrow_of(&other);
    b.escrow_event(
        &seller,
        EscrowEvent::Claimed {
            escrow,
            to_seller: LIST_PRICE_LAMPORTS,
            fee: 0,
        },
    );
    let s = fold(b.records());
    assert_eq!(figures(&s), (1, 0, 1, 50_000, LIST_PRICE_LAMPORTS));
    assert!(s.settlements[&kept].claimed.is_some());
    // the same buyer closes the claimed escrow (rent only), deposits
    // again and is refunded: the claimed buy stays released and counted
    let closed = EscrowEvent::Refunded {
        escrow,
        amount: 0,
        slashed: 0,
    };
    b.escrow_event(&other, closed);
    let again = b.escrow_buy(&other, &l);
    b.escrow_event(
        &other,
        EscrowEvent::Refunded {
            escrow,
            amount: LIST_PRICE_LAMPORTS,
            slashed: 50_000,
        },
    );
    let s = fold(b.records());
    assert!(
        matches!(
            s.settlements[&kept].status,
            SettlementStatus::Released { .. }
        ),
        "{:?}",
        s.settlements[&kept].status
    );
    assert!(matches!(
        s.settlements[&again].status,
        SettlementStatus::Refunded { .. }
    ));
    assert_eq!(figures(&s), (1, 0, 2, 100_000, LIST_PRICE_LAMPORTS));
}

/// A seller that signs a manifest at one price and lists on chain at
/// another sells nothing that counts: the program's deposit event says
/// what was held, and a buy holding anything but the manifest's price is
/// refused with both figures.
#[test]
fn an_escrow_deposit_off_the_manifests_price_is_no_sale() {
    let seller = wallet(1, 0);
    let buyer = wallet(2, 0);
    let mut b = LogBuilder::new();
    let l = b.list_escrow(&seller, 0, node::escrow::PROGRAM_ID);
    let cheap = b.escrow_buy_holding(&buyer, &l, Some(1));
    let s = fold(b.records());
    assert_eq!(
        s.settlements[&cheap].status,
        SettlementStatus::Rejected {
            reason: BuyRefusal::Rules(Rejection::EscrowTermsDiffer {
                held: 1,
                held_mint: node::chain::Pubkey::default().to_string(),
                price: LIST_PRICE_LAMPORTS,
            })
        }
    );
}

/// A seller buying their own listing (or paying from its payment
/// address) is no sale: not in sales, volume or latency, counted apart.
#[test]
fn self_trades_count_in_no_figure() {
    let seller = wallet(1, 0);
    let buyer = wallet(2, 0);
    let mut b = LogBuilder::new();
    let l = b.list(&seller, 0, "auction");
    let own = b.buy(&seller, &l, LIST_PRICE_LAMPORTS);
    b.release(&seller, &l, &seller, &own);
    let real = b.buy(&buyer, &l, LIST_PRICE_LAMPORTS);
    let s = fold(b.records());
    assert!(!matches!(
        s.settlements[&own].status,
        SettlementStatus::Rejected { .. }
    ));
    let cfg = FoldConfig::default();
    let r = indexer::views::reputation(&s, &seller.address(), &cfg, None);
    assert_eq!(
        (r.sales, r.releases, r.self_trades, r.volume_lamports),
        (1, 0, 1, LIST_PRICE_LAMPORTS),
        "{r:?}"
    );
    assert_eq!(r.median_release_latency_secs, None);
    assert!(s.settlements.contains_key(&real));
    let view = serde_json::to_value(indexer::views::listing(
        &s,
        &s.listings[&l.listing_id],
        None,
    ))
    .unwrap();
    assert_eq!(
        (view["sales"].clone(), view["releases"].clone()),
        (serde_json::json!(1), serde_json::json!(0))
    );
}

/// A listing id belongs to one seller: a second seller listing the same id
/// (a squat on an id seen on the gateway before its `list` memo landed)
/// never takes it over; the listing turns `contested` (so `/settle`
/// refuses it) whichever memo landed first.
#[test]
fn a_listing_id_listed_by_a_second_seller_is_contested_never_taken_over() {
    let (victim, attacker) = (wallet(1, 0), wallet(1, 1));
    for (first, second) in [(&victim, &attacker), (&attacker, &victim)] {
        let mut b = LogBuilder::new();
        let l = b.list(first, 0, "auction");
        let copy = b.list(second, 0, "auction");
        assert_eq!(l.listing_id, copy.listing_id, "the same id");
        let squat = b.records().last().unwrap().tx.signature.clone();
        let s = fold(b.records());
        let st = &s.listings[&l.listing_id];
        assert_eq!(st.seller, first.address());
        assert_eq!(st.contested_by, vec![second.address()]);
        assert_eq!(st.status(s.now), "contested");
        assert_eq!(
            reasons(&s, &squat),
            vec![Refusal::Contested {
                listing_id: l.listing_id.clone(),
                first_seller: first.address()
            }]
        );
    }
}

/// A flood of hints of old transactions (each older than everything
/// folded) is ingested in turns: far fewer refolds than hints, and the
/// state ends exactly where a replay of the whole log does.
#[test]
fn a_flood_of_late_hints_costs_a_refold_per_turn_not_per_hint() {
    let records = synth::trades(300, 20);
    let late: Vec<TxRecord> = records.iter().step_by(7).take(60).cloned().collect();
    let late_sigs: std::collections::HashSet<&str> = late.iter().map(|r| r.signature()).collect();
    let early: Vec<TxRecord> = records
        .iter()
        .filter(|r| !late_sigs.contains(r.signature()))
        .cloned()
        .collect();
    let final_slot = records.iter().map(|r| r.tx.slot).max().unwrap();
    let ix = Indexer::open(
        Box::new(SqliteStore::in_memory().unwrap()),
        FoldConfig::default(),
    )
    .unwrap();
    ix.ingest(early, final_slot, &[]).unwrap();
    let before = ix.refolds();
    let gate = std::sync::Barrier::new(late.len());
    std::thread::scope(|s| {
        for r in &late {
            let (ix, gate) = (&ix, &gate);
            s.spawn(move || {
                gate.wait();
                assert!(ix.ingest_hinted(r.clone(), final_slot).unwrap().is_some());
                assert!(
                    ix.state().has_folded(r.signature()),
                    "folded when the hint returns"
                );
            });
        }
    });
    let refolds = ix.refolds() - before;
    assert!(
        refolds < late.len() as u64 / 2,
        "{refolds} refolds for {} hints",
        late.len()
    );
    assert_eq!(ix.state_hash().1, fold(&records).hash());
    assert_eq!(
        ix.state().hash(),
        ix.state_hash().1,
        "cached hash is the state's"
    );
}

/// The recorded log the state hash is pinned on (`tests/state_hash.rs`)
/// walks every family of refusal, and an escrow buy an older build logged.
#[test]
fn the_pinned_log_covers_the_refusals() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/every-refusal.jsonl");
    let records = indexer::logfile::read(std::fs::File::open(path).unwrap()).unwrap();
    let s = fold(&records);
    let mut kinds: Vec<String> = s
        .rejected
        .values()
        .flatten()
        .map(|r| {
            format!("{:?}", r.reason)
                .split([' ', '(', '{'])
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    for want in [
        "BundleHashDiffers",
        "Contested",
        "ListingExists",
        "CancelNotSignedBySeller",
        "Malformed",
        "UnknownListing",
        "UnknownOffer",
        "OfferExists",
        "OwnListing",
        "CounterNotParty",
        "NotSignedBy",
        "OfferClosed",
        "ReleaseNotSignedBySeller",
        "BuyNotAwaitingRelease",
        "AlreadyCancelled",
        "ListingCancelled",
        "ListingExpired",
        "NoBlockTime",
        "ManifestUnavailable",
        "WrongManifestKind",
        "NoPaidBuy",
        "TxFailed",
    ] {
        assert!(kinds.iter().any(|k| k == want), "{want} not in {kinds:?}");
    }
    let legacy: Vec<_> = records
        .iter()
        .filter(|r| !r.tx.legacy_deposits.is_empty())
        .collect();
    assert_eq!(
        legacy.len(),
        1,
        "one escrow buy as an older build logged it"
    );
    assert_eq!(
        s.settlements[&legacy[0].tx.signature].status,
        SettlementStatus::Paid
    );
}

/// The one visibility rule (`views::may_see_trade`) on a private
/// listing's figures: its seller sees every trade, a buyer their own, an
/// anonymous reader or a stranger none; a public listing's show to all.
#[test]
fn a_private_listings_figures_follow_who_reads_them() {
    use indexer::views::{self, may_see_trade};
    let (seller, alice, bob, stranger) = (wallet(1, 9), wallet(2, 9), wallet(2, 10), wallet(3, 9));
    let mut b = LogBuilder::new();
    let private = b.list(&seller, 90, "private");
    let public = b.list(&seller, 91, "auction");
    let by_alice = b.buy(&alice, &private, LIST_PRICE_LAMPORTS);
    b.release(&seller, &private, &alice, &by_alice);
    b.buy(&bob, &private, LIST_PRICE_LAMPORTS);
    b.buy(&bob, &public, LIST_PRICE_LAMPORTS);
    let s = fold(b.records());
    let cfg = FoldConfig::default();
    let sales = |viewer: Option<&str>| {
        let r = views::reputation(&s, &seller.address(), &cfg, viewer);
        (r.sales, r.releases, r.volume_lamports / LIST_PRICE_LAMPORTS)
    };
    let (pk_seller, pk_alice, pk_stranger) =
        (seller.address(), alice.address(), stranger.address());
    assert_eq!(sales(None), (1, 0, 1), "anonymous: the public sale only");
    assert_eq!(sales(Some(&pk_stranger)), (1, 0, 1));
    assert_eq!(sales(Some(&pk_alice)), (2, 1, 2), "alice: hers too");
    assert_eq!(sales(Some(&pk_seller)), (3, 1, 3), "the seller: all");
    let latencies = |viewer| views::release_latencies(&s, &seller.address(), viewer).len();
    assert_eq!((latencies(None), latencies(Some(&pk_alice))), (0, 1));
    let l = &s.listings[&private.listing_id];
    assert!(may_see_trade(l, &pk_alice, Some(&pk_alice)));
    assert!(may_see_trade(l, &pk_alice, Some(&pk_seller)));
    assert!(!may_see_trade(l, &pk_alice, Some(&bob.address())));
    assert!(!may_see_trade(l, &pk_alice, None));
    assert!(may_see_trade(
        &s.listings[&public.listing_id],
        &pk_alice,
        None
    ));
}
