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
use node::listen::{verify_buy, ListenDb, ListingTerms, Rejection, StateError, Step, VerifiedBuy};
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

/// The two sides and what the seller published.
struct Trade {
    rt: tokio::runtime::Runtime,
    chain: node::chain::Chain,
    dir: tempfile::TempDir,
    seller: Wallet,
    buyer: Wallet,
    store: FsStore,
    bundle: Bundle,
    bundle_hash: String,
    key: [u8; 32],
    blob_id: String,
    terms: ListingTerms,
}

impl Trade {
    /// Step 1: funded wallets; the seller's encrypted blob in shared storage.
    fn publish() -> Trade {
        let v = validator();
        let dir = tempfile::tempdir().unwrap();
        let (seller, buyer) = (Wallet::generate(), Wallet::generate());
        v.fund(&seller.solana_keypair().pubkey(), 2);
        v.fund(&buyer.solana_keypair().pubkey(), 2);
        let store = FsStore::new(dir.path().join("items"));
        let b = bundle();
        let plain = b.canonical_bytes();
        let key = *node::seal::new_blob_key();
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
            payment_address: seller.solana_keypair().pubkey().to_string(),
            price_lamports: PRICE,
            currency: Default::default(),
            expires_at: i64::MAX,
            cancelled_at_slot: None,
            fee: None,
            usd: None,
        };
        Trade {
            rt: runtime(),
            chain: v.chain(),
            bundle_hash: hex::encode(node::crypto::sha256(&plain)),
            bundle: b,
            dir,
            seller,
            buyer,
            store,
            key,
            blob_id,
            terms,
        }
    }

    /// The buyer pays `lamports` with the one buy transaction.
    fn pay(&self, lamports: u64) -> node::chain::Signature {
        let kp = self.buyer.solana_keypair();
        let ixs = buy_instructions(
            &kp.pubkey(),
            &self.seller.solana_keypair().pubkey(),
            lamports,
            LISTING,
            &self.buyer.x25519_address(),
            &default_registry(),
            None,
        );
        self.rt
            .block_on(self.chain.send(&ixs, &[&kp]))
            .unwrap()
            .signature
    }

    fn fetch(&self, sig: &node::chain::Signature) -> ParsedTx {
        self.rt
            .block_on(self.chain.transaction(sig))
            .unwrap()
            .unwrap()
    }

    fn db_path(&self) -> std::path::PathBuf {
        self.dir.path().join("listen.db")
    }

    fn goods(&self) -> Goods<'_> {
        Goods {
            bundle_hash: &self.bundle_hash,
            key: &self.key,
            token: NftSpec {
                name: "brainctl bundle".into(),
                symbol: "BRNDL".into(),
                uri: format!("ar://{}", self.blob_id),
            },
            standard: TokenStandard::Token2022,
            receipt: node::mint::receipt::ReceiptMode::PerBuy,
            escrow: false,
            fee_to: None,
        }
    }

    /// Step 3: the seller's daemon finds both buys by the payment address,
    /// rejects the underpaid one and verifies the paid one.
    fn verify(&self, cheap: &node::chain::Signature, paid: &node::chain::Signature) -> VerifiedBuy {
        let mut db = ListenDb::open(&self.db_path()).unwrap();
        let history = self
            .rt
            .block_on(
                self.chain
                    .signatures_for(&self.seller.solana_keypair().pubkey(), None),
            )
            .unwrap();
        let found: Vec<&str> = history.iter().map(|s| s.signature.as_str()).collect();
        assert!(
            found.contains(&paid.to_string().as_str())
                && found.contains(&cheap.to_string().as_str())
        );
        let (cheap_tx, paid_tx) = (self.fetch(cheap), self.fetch(paid));
        db.record_seen(&cheap_tx.signature, LISTING, cheap_tx.slot)
            .unwrap();
        let why = verify_buy(&cheap_tx, &self.terms, &[]).unwrap_err();
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
        let buy = verify_buy(&paid_tx, &self.terms, &[]).unwrap();
        assert_eq!(
            (buy.buyer.as_str(), buy.paid_lamports),
            (self.buyer.address().as_str(), PRICE)
        );
        db.mark_verified(&buy).unwrap();
        buy
    }

    /// Step 4: the envelope is uploaded, then the process dies (the
    /// database handle is dropped before any release).
    fn upload_then_crash(&self, buy: &VerifiedBuy) {
        let mut db = ListenDb::open(&self.db_path()).unwrap();
        let uploader = Uploader::Fs(self.store.clone());
        let step = self
            .rt
            .block_on(upload_envelope(
                &mut db,
                &self.seller,
                &uploader,
                &buy.signature,
                &self.goods(),
            ))
            .unwrap();
        assert_eq!(step, Step::Applied);
    }

    /// Step 5: a new process resumes from the database and releases once;
    /// a replayed release, and a release of the rejected buy, do nothing.
    fn resume_and_release(&self, buy: &VerifiedBuy, cheap: &node::chain::Signature) -> String {
        let mut db = ListenDb::open(&self.db_path()).unwrap();
        let pending = db.unfinished().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].state, "envelope_uploaded");
        let release = |db: &mut ListenDb, sig: &str| {
            self.rt.block_on(send_release(
                db,
                &self.chain,
                &self.seller,
                sig,
                &self.goods(),
            ))
        };
        let release_sig = release(&mut db, &buy.signature).unwrap();
        assert_eq!(release(&mut db, &buy.signature).unwrap(), release_sig);
        assert!(matches!(db.mark_verified(buy), Ok(Step::AlreadyDone)));
        assert!(matches!(
            release(&mut db, &cheap.to_string()),
            Err(node::listen::release::ReleaseError::State(
                StateError::WrongState { .. }
            ))
        ));
        release_sig
    }

    /// Step 6: exactly one release memo on chain, exactly one token, held
    /// by the buyer; returns the envelope's item id.
    fn one_release_one_token(&self, buy: &VerifiedBuy, release_sig: &str) -> String {
        let seller_pk = self.seller.solana_keypair().pubkey();
        let (mint, mint_seed) =
            release_mint(&self.seller, &buy.signature, TokenStandard::Token2022).unwrap();
        let releases: Vec<ParsedTx> = self
            .rt
            .block_on(self.chain.signatures_for(&seller_pk, None))
            .unwrap()
            .iter()
            .map(|s| self.fetch(&s.signature.parse().unwrap()))
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
        let buyer_pk = self.buyer.solana_keypair().pubkey();
        let (token_account, _) =
            node::mint::token2022::token_account_address(&seller_pk, &mint_seed, &buyer_pk)
                .unwrap();
        let nft = self
            .rt
            .block_on(read_nft(&self.chain, &mint, &token_account))
            .unwrap();
        assert_eq!(
            (
                nft.holder_amount,
                nft.mint.supply,
                nft.mint.mint_authority,
                nft.holder
            ),
            (1, 1, None, buyer_pk)
        );
        envelope_arweave_id
    }

    /// Step 7: the buyer opens the envelope, decrypts the blob, checks the
    /// hash and imports exactly the seller's rows into quarantine.
    fn buyer_imports(&self, buy: &VerifiedBuy, envelope_id: &str) {
        let envelope = self.store.get(envelope_id).unwrap();
        let (seller_addr, buyer_addr) = (self.seller.address(), self.buyer.address());
        let want = Expected {
            listing_id: LISTING,
            seller: &seller_addr,
            buyer: &buyer_addr,
            buy_signature: &buy.signature,
            bundle_hash: &self.bundle_hash,
        };
        let (opened, signed) = open_envelope(&envelope.data, &self.buyer, &want).unwrap();
        assert!(signed);
        let inner = node::seal::decrypt_blob(&opened, &self.store.get(&self.blob_id).unwrap().data)
            .unwrap();
        let mut mem = node::store::Store::open(&self.dir.path().join("buyer.db")).unwrap();
        let scope = format!("imported:{LISTING}");
        let report = node::import::import_inner(
            &mut mem,
            &inner,
            &self.bundle_hash,
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
        let original: Vec<_> = self
            .bundle
            .memories
            .iter()
            .map(|r| r.get("content").clone())
            .collect();
        assert_eq!(
            contents, original,
            "the buyer holds exactly the seller's rows"
        );
    }
}

#[test]
fn fixed_price_trade_releases_exactly_once() {
    let trade = Trade::publish();
    // step 2: a hostile buy (underpaid by one lamport), then the real one
    let cheap = trade.pay(PRICE - 1);
    let paid = trade.pay(PRICE);
    let buy = trade.verify(&cheap, &paid);
    trade.upload_then_crash(&buy);
    let release_sig = trade.resume_and_release(&buy, &cheap);
    let envelope_id = trade.one_release_one_token(&buy, &release_sig);
    trade.buyer_imports(&buy, &envelope_id);
}
