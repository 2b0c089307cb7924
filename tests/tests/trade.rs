//! A fixed-price trade on a real validator, at the library level: the
//! buyer pays with one transaction (transfer + buy memo + discovery), the
//! seller verifies it against the settlement rules, uploads the envelope,
//! crashes, resumes, releases with ONE transaction (seeded mint + release
//! memo); a replayed release mints nothing; the buyer opens the envelope,
//! decrypts, checks the hash and imports. An underpaid buy is rejected and
//! can never be released.

use e2e::{runtime, validator};
use node::arweave::{DataItem, FsStore, Tag, Uploader};
use node::bundle::{Bundle, Cell, Filter, MemoryRow};
use node::chain::instructions::default_registry;
use node::chain::{ParsedTx, Signer};
use node::listen::release::{release_mint, send_release, upload_envelope, Goods};
use node::listen::{verify_buy, ListenDb, ListingTerms, Rejection, StateError, Step};
use node::market::envelope::{open_envelope, Expected};
use node::market::tx::buy_instructions;
use node::market::MemoOp;
use node::mint::bundle_mint::TokenStandard;
use node::mint::token2022::{read_nft, NftSpec};
use node::wallet::Wallet;

const LISTING: &str = "20261123-0123456789ab";
const PRICE: u64 = 250_000_000;

fn bundle() -> Bundle {
    let row = |id: i64, content: &str| MemoryRow {
        cells: [
            Cell::Int(id),
            Cell::Text("default".into()),
            Cell::Text("lesson".into()),
            Cell::Text("global".into()),
            Cell::Text(content.into()),
            Cell::Real(0.9),
            Cell::Text("[\"ops\"]".into()),
            Cell::Text("2026-11-22T23:41:15Z".into()),
            Cell::Text("2026-11-22T23:41:15Z".into()),
            Cell::Null,
            Cell::Null,
            Cell::Real(1.0),
            Cell::Text("semantic".into()),
        ],
    };
    Bundle {
        version: 1,
        generated_at: "2026-11-23T00:00:00+00:00".into(),
        filter_used: Filter::default(),
        memories: vec![
            row(1, "Deploys go through staging first."),
            row(2, "Retry with jittered backoff."),
        ],
    }
}

#[test]
fn fixed_price_trade_releases_exactly_once() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let dir = tempfile::tempdir().unwrap();
    let seller = Wallet::generate();
    let buyer = Wallet::generate();
    let (seller_kp, buyer_kp) = (seller.solana_keypair(), buyer.solana_keypair());
    v.fund(&seller_kp.pubkey(), 2);
    v.fund(&buyer_kp.pubkey(), 2);

    // seller: encrypted blob in shared storage
    let store = FsStore::new(dir.path().join("items"));
    let uploader = Uploader::Fs(store.clone());
    let b = bundle();
    let plain = b.canonical_bytes();
    let bundle_hash = hex::encode(node::crypto::sha256(&plain));
    let key = node::seal::new_blob_key();
    let blob = DataItem::sign(
        &seller,
        node::seal::encrypt_blob(&key, &plain).unwrap(),
        vec![Tag::new("App-Name", "brainctl")],
        None,
        None,
    )
    .unwrap();
    let blob_id = store.put(&blob).unwrap();
    let terms = ListingTerms {
        listing_id: LISTING.into(),
        payment_address: seller_kp.pubkey().to_string(),
        price_lamports: PRICE,
        expires_at: i64::MAX,
        cancelled_at_slot: None,
        fee: None,
    };

    // a hostile buy: underpaid by one lamport
    let cheap = rt
        .block_on(chain.send(
            &buy_instructions(
                &buyer_kp.pubkey(),
                &seller_kp.pubkey(),
                PRICE - 1,
                LISTING,
                &buyer.x25519_address(),
                &default_registry(),
                None,
            ),
            &[&buyer_kp],
        ))
        .unwrap();
    // the real buy
    let paid = rt
        .block_on(chain.send(
            &buy_instructions(
                &buyer_kp.pubkey(),
                &seller_kp.pubkey(),
                PRICE,
                LISTING,
                &buyer.x25519_address(),
                &default_registry(),
                None,
            ),
            &[&buyer_kp],
        ))
        .unwrap();

    // seller's daemon: discovery by payment address, decode, verify, record
    let db_path = dir.path().join("listen.db");
    let mut db = ListenDb::open(&db_path).unwrap();
    let history = rt
        .block_on(chain.signatures_for(&seller_kp.pubkey(), None))
        .unwrap();
    let found: Vec<&str> = history.iter().map(|s| s.signature.as_str()).collect();
    assert!(
        found.contains(&paid.signature.to_string().as_str())
            && found.contains(&cheap.signature.to_string().as_str())
    );
    let fetch = |sig: &node::chain::Signature| -> ParsedTx {
        rt.block_on(chain.transaction(sig)).unwrap().unwrap()
    };
    let (cheap_tx, paid_tx) = (fetch(&cheap.signature), fetch(&paid.signature));

    db.record_seen(&cheap_tx.signature, LISTING, cheap_tx.slot)
        .unwrap();
    let why = verify_buy(&cheap_tx, &terms, &[]).unwrap_err();
    assert_eq!(
        why,
        Rejection::Underpaid {
            paid: PRICE - 1,
            price: PRICE
        }
    );
    db.mark_rejected(&cheap_tx.signature, &why).unwrap();

    db.record_seen(&paid_tx.signature, LISTING, paid_tx.slot)
        .unwrap();
    let buy = verify_buy(&paid_tx, &terms, &[]).unwrap();
    assert_eq!(
        (buy.buyer.as_str(), buy.paid_lamports),
        (buyer.address().as_str(), PRICE)
    );
    db.mark_verified(&buy).unwrap();

    let goods = Goods {
        bundle_hash: &bundle_hash,
        key: &key,
        token: NftSpec {
            name: "brainctl bundle".into(),
            symbol: "BRNDL".into(),
            uri: format!("ar://{blob_id}"),
        },
        standard: TokenStandard::Token2022,
        escrow: false,
    };
    assert_eq!(
        rt.block_on(upload_envelope(
            &mut db,
            &seller,
            &uploader,
            &buy.signature,
            &goods
        ))
        .unwrap(),
        Step::Applied
    );
    // crash after the envelope upload: a new process resumes from the db
    drop(db);
    let mut db = ListenDb::open(&db_path).unwrap();
    let pending = db.unfinished().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].state, "envelope_uploaded");
    let release_sig = rt
        .block_on(send_release(
            &mut db,
            &chain,
            &seller,
            &buy.signature,
            &goods,
        ))
        .unwrap();
    // a replayed release (another pass, or a second memo for the same buy) does nothing
    assert_eq!(
        rt.block_on(send_release(
            &mut db,
            &chain,
            &seller,
            &buy.signature,
            &goods
        ))
        .unwrap(),
        release_sig
    );
    assert!(matches!(db.mark_verified(&buy), Ok(Step::AlreadyDone)));
    assert!(matches!(
        rt.block_on(send_release(
            &mut db,
            &chain,
            &seller,
            &cheap_tx.signature,
            &goods
        )),
        Err(node::listen::release::ReleaseError::State(
            StateError::WrongState { .. }
        ))
    ));

    // exactly one release memo, exactly one token to the buyer
    let (mint, _) = release_mint(&seller, &buy.signature, TokenStandard::Token2022).unwrap();
    let releases: Vec<ParsedTx> = rt
        .block_on(chain.signatures_for(&seller_kp.pubkey(), None))
        .unwrap()
        .iter()
        .map(|s| fetch(&s.signature.parse().unwrap()))
        .filter(|t| {
            t.memos
                .iter()
                .any(|m| matches!(MemoOp::parse(m), Ok(MemoOp::Release { .. })))
        })
        .collect();
    assert_eq!(releases.len(), 1, "one release memo");
    assert_eq!(releases[0].signature, release_sig);
    let Ok(MemoOp::Release {
        envelope_arweave_id,
        minted_token_address,
        ..
    }) = MemoOp::parse(&releases[0].memos[0])
    else {
        panic!("release memo")
    };
    assert_eq!(minted_token_address, mint.to_string());
    let (token_account, _) = node::mint::token2022::token_account_address(
        &seller_kp.pubkey(),
        &release_mint(&seller, &buy.signature, TokenStandard::Token2022)
            .unwrap()
            .1,
        &buyer_kp.pubkey(),
    )
    .unwrap();
    let nft = rt
        .block_on(read_nft(&chain, &mint, &token_account))
        .unwrap();
    assert_eq!(
        (
            nft.holder_amount,
            nft.mint.supply,
            nft.mint.mint_authority,
            nft.holder
        ),
        (1, 1, None, buyer_kp.pubkey())
    );

    // buyer: envelope → key → blob → hash check → import into quarantine
    let envelope = store.get(&envelope_arweave_id).unwrap();
    let (seller_addr, buyer_addr) = (seller.address(), buyer.address());
    let want = Expected {
        listing_id: LISTING,
        seller: &seller_addr,
        buyer: &buyer_addr,
        buy_signature: &buy.signature,
        bundle_hash: &bundle_hash,
    };
    let (opened, signed) = open_envelope(&envelope.data, &buyer, &want).unwrap();
    assert!(signed);
    let inner = node::seal::decrypt_blob(&opened, &store.get(&blob_id).unwrap().data).unwrap();
    let mut mem = node::store::Store::open(&dir.path().join("buyer.db")).unwrap();
    let scope = format!("imported:{LISTING}");
    let report = node::import::import_inner(
        &mut mem,
        &inner,
        &bundle_hash,
        &seller_addr,
        Some(&scope),
        Some(LISTING),
    )
    .unwrap();
    assert_eq!(report.outcome.ids.len(), 2);
    let rows = mem
        .export_rows(&Filter {
            scope: Some(scope),
            ..Default::default()
        })
        .unwrap();
    let contents: Vec<_> = rows.iter().map(|r| r.get("content").clone()).collect();
    let original: Vec<_> = b
        .memories
        .iter()
        .map(|r| r.get("content").clone())
        .collect();
    assert_eq!(
        contents, original,
        "the buyer holds exactly the seller's rows"
    );
}
