//! The chain layer against a real validator: discovery reference, pins, and
//! the hostile pins that must not count.

use e2e::{runtime, validator};
use node::chain::instructions::{default_registry, discovery, memo, transfer};
use node::chain::memo_field::parse_memo_field;
use node::chain::pin::{find_pin, pin_memo, post_pin};
use node::chain::Signer;
fn hash_hex(seed: u8) -> String {
    hex::encode([seed; 32])
}

/// DESIGN.md §Settlement, Discovery: the registry appended read-only to a
/// SetComputeUnitLimit leaves the tx successful and findable by address.
#[test]
fn discovery_reference_is_found_by_registry_address() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let actor = v.funded_keypair(2);
    let registry = default_registry();
    let text = "brainctl-marketplace/v1:cancel:20261101-0123456789ab";
    let sent = rt
        .block_on(chain.send(
            &[discovery(&registry, 200_000), memo(text, &actor.pubkey())],
            &[&actor],
        ))
        .expect("discovery tx lands");
    let history = rt.block_on(chain.signatures_for(&registry, None)).unwrap();
    let entry = history
        .iter()
        .find(|s| s.signature == sent.signature.to_string())
        .expect("found via registry");
    assert!(entry.err.is_none());
    assert_eq!(
        entry.memo.as_deref(),
        Some(format!("[{}] {text}", text.len()).as_str())
    );
    assert_eq!(
        parse_memo_field(entry.memo.as_deref().unwrap()).unwrap(),
        vec![text]
    );
    let tx = rt
        .block_on(chain.transaction(&sent.signature))
        .unwrap()
        .unwrap();
    assert!(tx.succeeded && tx.signed_by(&actor.pubkey().to_string()));
    assert_eq!(tx.memos, vec![text]);
}

#[test]
fn pin_then_find_and_hostile_pins_do_not_count() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let signer = v.funded_keypair(2);
    let other = v.funded_keypair(2);
    let me = signer.pubkey().to_string();

    // never pinned
    assert_eq!(
        rt.block_on(find_pin(&chain, &me, &hash_hex(1))).unwrap(),
        None
    );

    // another signer posts the exact text in a tx that touches the signer
    // (a transfer to them), so it shows up in the signer's history
    let h2 = hash_hex(2);
    let forged = pin_memo(&h2, &me);
    rt.block_on(chain.send(
        &[
            transfer(&other.pubkey(), &signer.pubkey(), 1),
            memo(&forged, &other.pubkey()),
        ],
        &[&other],
    ))
    .unwrap();
    assert_eq!(
        rt.block_on(find_pin(&chain, &me, &h2)).unwrap(),
        None,
        "memo by another signer"
    );

    // extra text around the pin string
    let h3 = hash_hex(3);
    let padded = format!("x{}x", pin_memo(&h3, &me));
    rt.block_on(chain.send(&[memo(&padded, &signer.pubkey())], &[&signer]))
        .unwrap();
    assert_eq!(
        rt.block_on(find_pin(&chain, &me, &h3)).unwrap(),
        None,
        "substring must not match"
    );

    // a failed transaction carrying the exact memo (transfer beyond balance)
    let h4 = hash_hex(4);
    let failed = rt
        .block_on(chain.send_skip_preflight(
            &[
                memo(&pin_memo(&h4, &me), &signer.pubkey()),
                transfer(&signer.pubkey(), &other.pubkey(), 1_000_000_000_000),
            ],
            &[&signer],
        ))
        .unwrap();
    let ftx = rt
        .block_on(chain.transaction(&failed.signature))
        .unwrap()
        .unwrap();
    assert!(
        !ftx.succeeded,
        "the hostile tx must really have failed on chain"
    );
    assert_eq!(
        rt.block_on(find_pin(&chain, &me, &h4)).unwrap(),
        None,
        "failed tx"
    );

    // the real thing
    let h5 = hash_hex(5);
    let posted = rt.block_on(post_pin(&chain, &signer, &h5)).unwrap();
    let found = rt
        .block_on(find_pin(&chain, &me, &h5))
        .unwrap()
        .expect("pinned");
    assert_eq!(found.signature, posted.signature);
    assert_eq!(found.memo, pin_memo(&h5, &me));
    assert_eq!(found.cluster, "localnet");
}

/// A node whose status queries always say "not found" (a faulty or lying
/// RPC) must not make a send pay twice: once the blockhash has expired,
/// the ledger is asked again before anything is rebuilt, and the transfer
/// that landed is reported once.
#[test]
fn a_lying_status_query_never_makes_a_send_pay_twice() {
    let v = validator();
    let rt = runtime();
    let proxy = e2e::proxy::FaultProxy::start(&v.rpc_url);
    let lying = proxy.chain();
    let payer = v.funded_keypair(1);
    let to = node::chain::Keypair::new().pubkey();
    proxy.set(e2e::proxy::Fault::HideStatuses);
    let before = rt.block_on(v.chain().balance(&payer.pubkey())).unwrap();
    let sent = rt
        .block_on(lying.send(&[transfer(&payer.pubkey(), &to, 1_000_000)], &[&payer]))
        .expect("the transfer landed once; reported, not sent again");
    proxy.set(e2e::proxy::Fault::None);
    let honest = v.chain();
    assert_eq!(
        rt.block_on(honest.balance(&to)).unwrap(),
        1_000_000,
        "paid once"
    );
    assert_eq!(
        rt.block_on(honest.balance(&payer.pubkey())).unwrap(),
        before - 1_000_000 - 5_000
    );
    let tx = rt
        .block_on(honest.transaction(&sent.signature))
        .unwrap()
        .unwrap();
    assert_eq!(tx.slot, sent.slot);
}

/// Sends of one handle in flight together share their status readings
/// (one `getSignatureStatuses` + one `getBlockHeight` a tick for all of
/// them): 40 transfers at once cost the node two requests each (blockhash,
/// send), a handful of readings and one compute-budget simulation and fee
/// reading for all, not two requests per send per tick;
/// each still lands once, at the slot its status says.
#[test]
fn concurrent_sends_share_their_status_readings() {
    let v = validator();
    let rt = e2e::multi_thread_runtime();
    let proxy = e2e::proxy::FaultProxy::start(&v.rpc_url);
    let chain = proxy.chain();
    let payers: Vec<node::chain::Keypair> = (0..40).map(|_| v.funded_keypair(1)).collect();
    let to = node::chain::Keypair::new().pubkey();
    let (requests_before, _) = proxy.stats();
    let started = std::time::Instant::now();
    let sent = rt.block_on(futures_util::future::join_all(payers.iter().map(|p| {
        let ix = transfer(&p.pubkey(), &to, 1_000_000);
        let chain = &chain;
        async move { chain.send(&[ix], &[p]).await.expect("landed") }
    })));
    let took = started.elapsed();
    let (requests_after, _) = proxy.stats();
    let requests = requests_after - requests_before;
    assert_eq!(
        rt.block_on(v.chain().balance(&to)).unwrap(),
        40 * 1_000_000,
        "each paid once"
    );
    // a reading (two requests) at most every tick while they wait, and
    // the compute budget's two reads once for all of them (one shape, one
    // payee: one simulation, one reading of its recent fees)
    let ticks = (took.as_millis() / 250 + 2) as u64;
    assert!(
        requests <= 2 * 40 + 2 * ticks + 2,
        "{requests} requests for 40 sends over {took:?} (at most {} expected)",
        2 * 40 + 2 * ticks + 2
    );
    for s in &sent {
        let tx = rt
            .block_on(v.chain().transaction(&s.signature))
            .unwrap()
            .unwrap();
        assert_eq!(tx.slot, s.slot);
    }
}

/// A release is looked up after a crash in its escrow's history, which
/// anyone lengthens for a lamport a signature: the lookup reads at most
/// the newest pages it is given, whatever the history's length. Here a
/// stranger's copy of a release memo (not the seller's signature: skipped)
/// is followed by the seller's release and 1,050 one-lamport transfers: with
/// room for 2,000 entries the release is found; with 1,000 the lookup
/// reads exactly one page and finds nothing (the buy is retried, never
/// released twice); the production bound is 5,000.
#[test]
fn a_release_lookup_reads_a_bounded_history_however_long_anyone_makes_it() {
    use node::listen::release::{landed_release_within, RELEASE_HISTORY_MAX};
    use solana_sdk::transaction::Transaction;
    const JUNK: u64 = 1_050;
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let escrow = v.funded_keypair(1).pubkey();
    let seller = v.funded_keypair(1);
    let stranger = v.funded_keypair(5);
    let text = "brainctl-marketplace/v1:release:20261207-0123456789ab:escrow:mint";
    // a stranger's copy first (the oldest candidate: skipped, not signed
    // by the seller), then the seller's release
    rt.block_on(chain.send(
        &[
            transfer(&stranger.pubkey(), &escrow, 1),
            memo(text, &stranger.pubkey()),
        ],
        &[&stranger],
    ))
    .unwrap();
    let release = rt
        .block_on(chain.send(
            &[
                transfer(&seller.pubkey(), &escrow, 1),
                memo(text, &seller.pubkey()),
            ],
            &[&seller],
        ))
        .unwrap()
        .signature
        .to_string();
    // the stranger's flood, sent without waiting (each amount its own tx)
    let (blockhash, _) = rt
        .block_on(
            chain
                .rpc()
                .get_latest_blockhash_with_commitment(chain.commitment()),
        )
        .unwrap();
    let config = solana_rpc_client_api::config::RpcSendTransactionConfig {
        skip_preflight: true,
        ..Default::default()
    };
    for lamports in 1..=JUNK {
        let tx = Transaction::new_signed_with_payer(
            &[transfer(&stranger.pubkey(), &escrow, lamports)],
            Some(&stranger.pubkey()),
            &[&stranger],
            blockhash,
        );
        rt.block_on(chain.rpc().send_transaction_with_config(&tx, config))
            .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let seen = rt
            .block_on(chain.signatures_for(&escrow, None))
            .unwrap()
            .len();
        if seen as u64 >= JUNK + 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the flood landed {seen} of {JUNK}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let seller_pk = seller.pubkey();
    let found = |max| {
        rt.block_on(landed_release_within(
            &chain, &escrow, text, &seller_pk, max,
        ))
        .unwrap()
    };
    assert_eq!(found(2_000), Some(release), "found under the flood");
    assert_eq!(found(1_000), None, "past the bound: not read");
    let one_page = rt
        .block_on(chain.signatures_at_most(&escrow, None, 1_000))
        .unwrap();
    assert_eq!(
        one_page.len(),
        1_000,
        "one page read, not the whole history"
    );
    assert_eq!(RELEASE_HISTORY_MAX, 5_000);
}
