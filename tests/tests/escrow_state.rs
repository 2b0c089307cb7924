//! `listen` finds escrow deposits in the program's state, not in memos:
//! on a real validator holding escrow-program accounts (loaded at
//! genesis), `held_deposits` returns exactly the listing's escrows in the
//! asked status through the node's own `getProgramAccounts` filters; and
//! the indexer's `/settle` of a sealed-escrow listing returns the
//! program's `deposit_sealed` binding the buyer's B (never a direct
//! payment), 400 without B, 409 with the reason where no deposit can be
//! made.

use base64::Engine;
use e2e::runtime;
use node::chain::Pubkey;
use node::escrow::{discriminator, escrow_address, listing_address, program_id, EscrowStatus};
use node::listen::deposits::held_deposits;

/// A `SealedEscrow` account's bytes as the program writes them.
fn escrow_bytes(listing: &Pubkey, buyer: &Pubkey, x25519: [u8; 32], status: u8) -> Vec<u8> {
    let mut d = discriminator("account", "SealedEscrow").to_vec();
    d.extend_from_slice(listing.as_ref());
    d.extend_from_slice(buyer.as_ref());
    d.extend_from_slice(&x25519);
    d.extend_from_slice(&[8; 32]); // B
    d.extend_from_slice(&250_000_000u64.to_le_bytes());
    d.extend_from_slice(&1_700_000_000i64.to_le_bytes());
    d.push(status);
    d.extend_from_slice(&[u8::from(status == 1); 32]); // s
    d.extend_from_slice(&0i64.to_le_bytes());
    d.push(254); // bump
    d.extend_from_slice(&5_000_000u64.to_le_bytes()); // share
    assert_eq!(d.len(), node::escrow::ESCROW_ACCOUNT_SPACE);
    d
}

fn account_file(dir: &std::path::Path, address: &Pubkey, owner: &Pubkey, data: &[u8]) {
    let v = serde_json::json!({
        "pubkey": address.to_string(),
        "account": {
            "lamports": 2_000_000,
            "data": [base64::engine::general_purpose::STANDARD.encode(data), "base64"],
            "owner": owner.to_string(),
            "executable": false,
            "rentEpoch": 0,
            "space": data.len(),
        }
    });
    std::fs::write(
        dir.join(format!("{address}.json")),
        serde_json::to_vec(&v).unwrap(),
    )
    .unwrap();
}

#[test]
fn held_deposits_are_read_from_the_programs_state_on_a_validator() {
    let seller = Pubkey::new_unique();
    let listing = listing_address(&seller, "20261123-e5c0000000d4");
    let other_listing = listing_address(&seller, "20261123-e5c0000000d5");
    let buyers: Vec<Pubkey> = (0..4).map(|_| Pubkey::new_unique()).collect();
    let dir = tempfile::tempdir().unwrap();
    let program = program_id();
    // two held, one released, one held on another listing, one held
    // escrow's bytes at an address that is not its PDA
    let rows = [
        (
            escrow_address(&listing, &buyers[0]),
            &listing,
            0,
            [1; 32],
            0u8,
        ),
        (
            escrow_address(&listing, &buyers[1]),
            &listing,
            1,
            [2; 32],
            0,
        ),
        (
            escrow_address(&listing, &buyers[2]),
            &listing,
            2,
            [3; 32],
            1,
        ),
        (
            escrow_address(&other_listing, &buyers[3]),
            &other_listing,
            3,
            [4; 32],
            0,
        ),
        (Pubkey::new_unique(), &listing, 3, [5; 32], 0),
    ];
    for (at, l, b, key, status) in rows {
        account_file(
            dir.path(),
            &at,
            &program,
            &escrow_bytes(l, &buyers[b], key, status),
        );
    }
    let v = e2e::start(&[
        "--account-dir".into(),
        dir.path().to_string_lossy().into_owned(),
    ]);
    let held = runtime()
        .block_on(held_deposits(&v.chain(), &listing, EscrowStatus::Deposited))
        .unwrap();
    let got: Vec<(Pubkey, Pubkey, [u8; 32])> = held
        .iter()
        .map(|h| (h.escrow, h.account.buyer, h.account.buyer_x25519))
        .collect();
    let mut want = vec![
        (escrow_address(&listing, &buyers[0]), buyers[0], [1; 32]),
        (escrow_address(&listing, &buyers[1]), buyers[1], [2; 32]),
    ];
    want.sort_by_key(|w| w.0);
    let mut got_sorted = got.clone();
    got_sorted.sort_by_key(|g| g.0);
    assert_eq!(got_sorted, want);
    let revealed = runtime()
        .block_on(held_deposits(&v.chain(), &listing, EscrowStatus::Revealed))
        .unwrap();
    assert_eq!(
        revealed.iter().map(|h| h.account.buyer).collect::<Vec<_>>(),
        vec![buyers[2]]
    );
    let none = runtime()
        .block_on(held_deposits(
            &v.chain(),
            &Pubkey::new_unique(),
            EscrowStatus::Deposited,
        ))
        .unwrap();
    assert!(none.is_empty());
}

/// A `SealedListing` account's bytes as the program writes them.
fn listing_bytes(seller: &Pubkey, l: &node::market::manifest::Listing, stake: u64) -> Vec<u8> {
    let terms = node::market::escrow_trade::manifest_terms(l).unwrap();
    let mut d = discriminator("account", "SealedListing").to_vec();
    d.extend_from_slice(seller.as_ref());
    d.extend_from_slice(&(l.listing_id.len() as u32).to_le_bytes());
    d.extend_from_slice(l.listing_id.as_bytes());
    d.extend_from_slice(&terms.encode());
    d.extend_from_slice(&stake.to_le_bytes());
    d.push(0); // Live
    d.extend_from_slice(&1u32.to_le_bytes()); // one open escrow
    d.push(253); // bump
    d.extend_from_slice(&[0; 32]); // mint: the default key (lamports)
    d.extend_from_slice(&5_000_000u64.to_le_bytes()); // reserved: one share
    d.extend_from_slice(&u32::MAX.to_le_bytes()); // max_open: no cap
    d
}

/// The `Settings` account `escrow configure` writes.
fn settings_bytes(min_stake: u64) -> Vec<u8> {
    let mut d = discriminator("account", "Settings").to_vec();
    d.extend_from_slice(Pubkey::new_unique().as_ref()); // admin
    d.extend_from_slice(Pubkey::new_unique().as_ref()); // treasury
    d.extend_from_slice(&100u16.to_le_bytes());
    d.extend_from_slice(&5_000u16.to_le_bytes());
    d.extend_from_slice(&600i64.to_le_bytes());
    d.extend_from_slice(&60i64.to_le_bytes());
    d.extend_from_slice(&min_stake.to_le_bytes());
    d.push(252);
    d
}

#[test]
fn the_indexer_settles_an_escrow_listing_with_the_programs_deposit() {
    use e2e::indexer_api::Api;
    use indexer::api::AppState;
    use indexer::http;
    use indexer::ingest::RpcSource;
    use node::arweave::{FsStore, Source, Uploader};
    use node::chain::instructions::default_registry;
    use node::chain::Signer;
    use node::market::manifest::{build_listing, Listing, NewListing, LISTING_SCHEMA};
    use node::market::MemoOp;
    use node::wallet::Wallet;
    use serde_json::json;
    use std::sync::Arc;

    const PRICE: u64 = 80_000_000;
    let (seller, buyer, earlier) = (Wallet::generate(), Wallet::generate(), Wallet::generate());
    let seller_pk = seller.solana_keypair().pubkey();
    let id = "20261123-e5c0000000e6";
    // a downgraded listing beside it: garbage sealed consistently as a
    // format 1 blob, whose manifest promises a bundle it cannot prove
    let downgraded = "20261123-e5c0000000e7";
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let dir = tempfile::tempdir().unwrap();
    let rt = e2e::multi_thread_runtime();
    let store = FsStore::new(dir.path().join("items"));
    let uploader = Uploader::Fs(store.clone());
    let listed =
        |id: &str, sealed: node::escrow::math::blob::Sealed, k: &[u8; 32], format, count| {
            let blob = rt
                .block_on(uploader.put_signed(
                    &seller,
                    sealed.bytes,
                    node::publish::BLOB_CONTENT_TYPE,
                    node::publish::ESCROW_BLOB_SCHEMA,
                ))
                .unwrap();
            build_listing(
                &seller,
                &NewListing {
                    listing_id: id,
                    bundle_hash: &"ab".repeat(32),
                    payment_address: None,
                    price_usd: 8.0,
                    price_lamports: PRICE,
                    duration_hours: 24.0,
                    visibility: "auction",
                    encrypted_bundle_uri: &format!("ar://{blob}"),
                    metadata_uri: "ar://meta",
                    preview: json!({"memories_count": count}),
                    now,
                    escrow_program: Some(node::escrow::PROGRAM_ID),
                    escrow_terms: Some(node::market::manifest::EscrowCommitments {
                        key_point: node::escrow::math::client::point_of(k),
                        blob_root: sealed.root,
                        plain_len: sealed.plain_len,
                        seller_x25519: seller.x25519_public(),
                        blob_format: format,
                    }),
                    settlement: None,
                    usd_at_settle: None,
                },
            )
            .unwrap()
        };
    let k = node::escrow::listing_scalar(&seller, id);
    let sealed = node::escrow::math::blob::seal(&k, b"{}").unwrap();
    let manifest = listed(id, sealed, &k, node::escrow::math::blob::Format::V3, 0);
    let listing = Listing::from_value(manifest.clone()).unwrap();
    let k1 = node::escrow::listing_scalar(&seller, downgraded);
    let garbage = node::escrow::math::blob::seal_v1(&k1, &[0x41; 700]).unwrap();
    let manifest_v1 = listed(
        downgraded,
        garbage,
        &k1,
        node::escrow::math::blob::Format::V1,
        12,
    );
    let listing_v1 = Listing::from_value(manifest_v1.clone()).unwrap();
    // the program's accounts as `list --escrow` and an earlier deposit left them
    let account = listing_address(&seller_pk, id);
    let earlier_pk = earlier.solana_keypair().pubkey();
    account_file(
        dir.path(),
        &account,
        &program_id(),
        &listing_bytes(&seller_pk, &listing, 1),
    );
    account_file(
        dir.path(),
        &listing_address(&seller_pk, downgraded),
        &program_id(),
        &listing_bytes(&seller_pk, &listing_v1, 1),
    );
    account_file(
        dir.path(),
        &node::escrow::settings_address(),
        &program_id(),
        &settings_bytes(1),
    );
    account_file(
        dir.path(),
        &escrow_address(&account, &earlier_pk),
        &program_id(),
        &escrow_bytes(&account, &earlier_pk, [6; 32], 0),
    );
    // the program deployed as the localnet deploys it
    let args = [
        vec![
            "--account-dir".into(),
            dir.path().to_string_lossy().into_owned(),
        ],
        e2e::escrow_args(&Pubkey::new_unique()),
    ]
    .concat();
    let v = e2e::start(&args);
    for w in [&seller, &buyer, &earlier] {
        v.fund(&w.solana_keypair().pubkey(), 1);
    }
    let chain = v.chain();
    for (manifest, listing) in [(&manifest, &listing), (&manifest_v1, &listing_v1)] {
        let item = rt
            .block_on(uploader.put_signed(
                &seller,
                serde_json::to_vec(manifest).unwrap(),
                "application/json",
                LISTING_SCHEMA,
            ))
            .unwrap();
        let op = MemoOp::List {
            listing_arweave_id: item,
            bundle_hash: listing.bundle_hash.clone(),
        };
        rt.block_on(node::market::tx::post_memo(
            &chain, &seller, &op, &seller_pk,
        ))
        .unwrap();
    }

    // the indexer, in process, follows the chain and serves the API
    let ix = Arc::new(
        indexer::engine::Indexer::open(
            Box::new(indexer::store::SqliteStore::open(&dir.path().join("ix.db")).unwrap()),
            indexer::fold::FoldConfig::default(),
        )
        .unwrap(),
    );
    let source = Arc::new(RpcSource::new(
        v.chain(),
        Source::Fs(store),
        vec![default_registry()],
        4,
        0,
    ));
    rt.block_on(source.poll(&ix)).unwrap();
    assert_eq!(ix.state().listings[id].status(now), "live");
    let state = AppState {
        domain: "brainctl-indexer-test".into(),
        ..AppState::new(ix.clone(), "localnet").with_chain(source.clone())
    };
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let api = Api {
        base: format!("http://{}", listener.local_addr().unwrap()),
        http: reqwest::Client::new(),
    };
    rt.spawn(http::serve(listener, state, std::future::pending()));
    let settle_on = |id: &str, who: &Wallet, extra: serde_json::Value| {
        let token = rt.block_on(api.sign_in(who));
        let mut body = json!({"buyer_x25519_pubkey": who.x25519_address(), "cluster": "localnet"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        rt.block_on(api.post(&format!("/listings/{id}/settle"), body, Some(&token)))
    };
    let settle = |who: &Wallet, extra: serde_json::Value| settle_on(id, who, extra);

    // without B: the buyer must derive it (the indexer cannot)
    let (code, body) = settle(&buyer, json!({}));
    assert_eq!(code, 400, "{body}");
    assert!(body.to_string().contains("blind_point"), "{body}");
    // the deposit, as `buy` sends it: into the program, never to the seller
    let buyer_pk = buyer.solana_keypair().pubkey();
    let b = node::market::escrow_trade::buyer_blinding(
        &buyer.x25519_secret(),
        &seller.x25519_public(),
        &account,
        &buyer_pk,
    )
    .unwrap();
    let blind = hex::encode(node::escrow::math::client::point_of(&b));
    let (code, body) = settle(&buyer, json!({"blind_point": blind}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        (
            &body["price_lamports"],
            &body["fee_lamports"],
            &body["escrow"]["listing_account"]
        ),
        (&json!(PRICE), &json!(0), &json!(account.to_string()))
    );
    assert_eq!(
        body["escrow"]["escrow_account"],
        escrow_address(&account, &buyer_pk).to_string()
    );
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(body["tx_base64"].as_str().unwrap())
        .unwrap();
    let tx: solana_sdk::transaction::Transaction = bincode::deserialize(&bytes).unwrap();
    let keys = &tx.message.account_keys;
    assert_eq!(keys[0], buyer_pk, "the buyer pays and signs");
    let mut deposits = Vec::new();
    for ix in &tx.message.instructions {
        let program_key = keys[ix.program_id_index as usize];
        let accounts: Vec<Pubkey> = ix.accounts.iter().map(|i| keys[*i as usize]).collect();
        if program_key == program_id() {
            // (discriminator, listing account, buyer) of each call
            deposits.push((ix.data[..8].to_vec(), accounts[1], accounts[3]));
        }
        if program_key == solana_sdk::pubkey!("11111111111111111111111111111111") {
            panic!("a direct payment in an escrow settle: {ix:?}");
        }
    }
    assert_eq!(
        deposits,
        vec![(
            node::escrow::discriminator("global", "deposit_sealed").to_vec(),
            account,
            buyer_pk
        )]
    );

    // refused with the reason: offers do not apply; one deposit per buyer
    let (code, body) = settle(
        &buyer,
        json!({"offer_id": "0".repeat(43), "blind_point": blind}),
    );
    assert_eq!(code, 409, "{body}");
    assert!(body.to_string().contains("offers do not apply"), "{body}");
    let (code, body) = settle(&earlier, json!({"blind_point": blind}));
    assert_eq!(code, 409, "{body}");
    assert!(body.to_string().contains("already deposited"), "{body}");
    // the blob was read and checked: the deposit names what it proves
    let (_, body) = settle(&buyer, json!({"blind_point": blind}));
    assert_eq!(body["escrow"]["blob_proof"]["blob_format"], 3, "{body}");
    // no deposit is built for a blob that cannot prove what
    // its manifest promises
    let account_v1 = listing_address(&seller_pk, downgraded);
    let b1 = node::market::escrow_trade::buyer_blinding(
        &buyer.x25519_secret(),
        &seller.x25519_public(),
        &account_v1,
        &buyer_pk,
    )
    .unwrap();
    let blind_v1 = hex::encode(node::escrow::math::client::point_of(&b1));
    let (code, body) = settle_on(downgraded, &buyer, json!({"blind_point": blind_v1}));
    assert_eq!(code, 409, "{body}");
    assert!(
        body.to_string().contains("blob is format 1") && body.get("tx_base64").is_none(),
        "{body}"
    );
}
