//! The indexer against a real validator: a negotiated trade (list → offer
//! → counter → accept → settle via the API → listen releases) is seen
//! with the right states; a forged cancel changes nothing; sign-in refuses
//! expired and reused nonces, wrong signatures and wrong keys; offers on a
//! private listing are visible to its seller and that offer's buyer only;
//! and a rebuild from an empty database reaches the same state hash as the
//! incremental ingest.

use base64::Engine;
use e2e::indexer_api::Api;
use e2e::validator;
use indexer::api::{self, AppState};
use indexer::engine::Indexer;
use indexer::fold::{FoldConfig, OfferStatus, Refusal, SettlementStatus};
use indexer::http;
use indexer::ingest::RpcSource;
use indexer::store::SqliteStore;
use node::arweave::{FsStore, Source, Uploader};
use node::chain::instructions::default_registry;
use node::chain::Signer;
use node::listen::pass::{run_once, Catalog};
use node::listen::release::Goods;
use node::listen::{ListenDb, ListingTerms, NegotiatedTerms};
use node::market::manifest::{build_listing, Listing, NewListing, LISTING_SCHEMA};
use node::market::negotiate::{make_counter, make_offer, OfferTerms};
use node::market::tx::post_memo;
use node::market::MemoOp;
use node::mint::token2022::NftSpec;
use node::wallet::Wallet;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const PRICE: u64 = 90_000_000;
const AGREED: u64 = 70_000_000;

struct Market {
    chain: node::chain::Chain,
    uploader: Uploader,
    store: FsStore,
}

impl Market {
    async fn list(&self, seller: &Wallet, visibility: &str, bundle_hash: &str) -> Listing {
        self.list_for(seller, visibility, bundle_hash, 24.0).await
    }

    async fn list_for(
        &self,
        seller: &Wallet,
        visibility: &str,
        bundle_hash: &str,
        duration_hours: f64,
    ) -> Listing {
        let id = node::market::list::new_listing_id();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let manifest = build_listing(
            seller,
            &NewListing {
                listing_id: &id,
                bundle_hash,
                payment_address: None,
                price_usd: 9.0,
                price_lamports: PRICE,
                duration_hours,
                visibility,
                encrypted_bundle_uri: "ar://blob",
                metadata_uri: "ar://meta",
                preview: json!({"memories_count": 2}),
                now,
                escrow_program: None,
                escrow_terms: None,
                settlement: None,
                usd_at_settle: None,
            },
        )
        .unwrap();
        let item = self
            .uploader
            .put_signed(
                seller,
                serde_json::to_vec(&manifest).unwrap(),
                "application/json",
                LISTING_SCHEMA,
            )
            .await
            .unwrap();
        let op = MemoOp::List {
            listing_arweave_id: item,
            bundle_hash: bundle_hash.into(),
        };
        post_memo(&self.chain, seller, &op, &seller.solana_keypair().pubkey())
            .await
            .unwrap();
        Listing::from_value(manifest).unwrap()
    }
}

/// The seller's catalog, read from the indexer's state.
struct IndexedCatalog<'a> {
    ix: &'a Indexer,
    hash: String,
    key: [u8; 32],
}

impl Catalog for IndexedCatalog<'_> {
    fn terms(&self, id: &str) -> Option<ListingTerms> {
        let s = self.ix.state();
        let l = s.listings.get(id)?;
        Some(ListingTerms {
            listing_id: id.into(),
            payment_address: l.payment_address.clone(),
            price_lamports: l.price_lamports?,
            currency: Default::default(),
            expires_at: l.expires_at,
            cancelled_at_slot: l.cancelled.as_ref().map(|c| c.slot),
            fee: None,
            usd: None,
        })
    }
    fn goods(&self, id: &str) -> Option<Goods<'_>> {
        self.terms(id).map(|_| Goods {
            bundle_hash: &self.hash,
            key: &self.key,
            token: NftSpec {
                name: "brainctl bundle".into(),
                symbol: "BRNDL".into(),
                uri: "ar://meta".into(),
            },
            standard: node::mint::bundle_mint::TokenStandard::LightCompressed,
            receipt: node::mint::receipt::ReceiptMode::PerBuy,
            escrow: false,
            fee_to: None,
        })
    }
    fn negotiated(&self, id: &str, buyer: &str) -> Vec<NegotiatedTerms> {
        self.ix.state().accepted_for(id, buyer)
    }
}

fn indexer_at(path: &std::path::Path) -> Indexer {
    Indexer::open(
        Box::new(SqliteStore::open(path).unwrap()),
        FoldConfig::default(),
    )
    .unwrap()
}

/// Drives `agentmemory.marketplace_api` (PyPI brainctl 2.8.0) as a buyer:
/// browse, detail, sign in with the keystore, private offers, settle, status.
const REFERENCE_CLIENT: &str = r#"
import json, sys
from agentmemory import marketplace_api as m
base, pubkey, keystore, listing, private, x25519 = sys.argv[1:7]
browsed = m.browse_listings(base, cluster="localnet", limit=50)
shown = m.get_listing(base, listing, cluster="localnet")
token = m.ensure_session(base, pubkey, keystore_path=keystore)
offers = m.list_offers(base, private, cluster="localnet", session_token=token)
settle = m.build_settle_tx(base, private, buyer_x25519_pubkey=x25519, cluster="localnet", session_token=token)
status = m.settlement_status(base, listing, buyer_pubkey=pubkey, cluster="localnet")
print(json.dumps({
    "browsed": [l["manifest"]["listing_id"] for l in browsed["listings"]],
    "shown": shown["listing"]["manifest"]["listing_id"],
    "private_offers": [o["offer_id"] for o in offers["offers"]],
    "settle_price": settle["price_lamports"],
    "has_tx": bool(settle["tx_base64"]),
    "status": status["status"],
}))
"#;

/// The trade scenario's world: three funded wallets, shared storage, the
/// indexer served on a free port with a clock that can be moved.
struct Scenario {
    rt: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    chain: node::chain::Chain,
    store: FsStore,
    market: Market,
    seller: Wallet,
    buyer: Wallet,
    mallory: Wallet,
    ix: Arc<Indexer>,
    source: Arc<RpcSource>,
    api: Api,
    skew: Arc<AtomicI64>,
}

/// What the negotiation left on chain.
struct Negotiated {
    listing: Listing,
    offer_id: String,
    forged: node::chain::Signature,
}

/// Sessions of the three wallets.
struct Sessions {
    buyer: String,
    seller: String,
    mallory: String,
}

impl Scenario {
    fn start() -> Scenario {
        let v = validator();
        let rt = e2e::multi_thread_runtime();
        let dir = tempfile::tempdir().unwrap();
        let store = FsStore::new(dir.path().join("items"));
        let market = Market {
            chain: v.chain(),
            uploader: Uploader::Fs(store.clone()),
            store: store.clone(),
        };
        let (seller, buyer, mallory) = (Wallet::generate(), Wallet::generate(), Wallet::generate());
        for w in [&seller, &buyer, &mallory] {
            v.fund(&w.solana_keypair().pubkey(), 2);
        }
        let ix = Arc::new(indexer_at(&dir.path().join("indexer.db")));
        let source = Arc::new(RpcSource::new(
            v.chain(),
            Source::Fs(market.store.clone()),
            vec![default_registry()],
            4,
            0,
        ));
        let skew = Arc::new(AtomicI64::new(0));
        let clock: api::Clock = {
            let skew = skew.clone();
            Arc::new(move || {
                time::OffsetDateTime::now_utc().unix_timestamp() + skew.load(Ordering::SeqCst)
            })
        };
        let state = AppState {
            domain: "brainctl-indexer-test".into(),
            clock,
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
        Scenario {
            chain: v.chain(),
            rt,
            dir,
            store,
            market,
            seller,
            buyer,
            mallory,
            ix,
            source,
            api,
            skew,
        }
    }

    fn poll(&self) -> indexer::ingest::PollReport {
        self.rt.block_on(self.source.poll(&self.ix)).unwrap()
    }

    fn seller_pk(&self) -> node::chain::Pubkey {
        self.seller.solana_keypair().pubkey()
    }

    /// List → offer → counter → accept, plus mallory's forged cancel: the
    /// indexer reads it all from chain memos alone.
    fn negotiate(&self) -> Negotiated {
        let (rt, chain) = (&self.rt, &self.chain);
        let listing = rt.block_on(self.market.list(&self.seller, "auction", &"cd".repeat(32)));
        let (offer_item, offer_id, _) = rt
            .block_on(make_offer(
                chain,
                &self.buyer,
                &self.market.uploader,
                &listing,
                &OfferTerms {
                    price_usd: 5.0,
                    price_units: 50_000_000,
                    currency: node::settle::Currency::Sol,
                    message: "fifty?",
                    ttl_hours: 2.0,
                },
            ))
            .unwrap();
        let offer = rt
            .block_on(node::market::negotiate::fetch_offer(
                &Source::Fs(self.store.clone()),
                &offer_item,
                false,
            ))
            .unwrap();
        let seller_pk = self.seller_pk();
        rt.block_on(make_counter(
            chain,
            &self.seller,
            &self.market.uploader,
            &offer,
            &seller_pk,
            &OfferTerms {
                price_usd: 7.0,
                price_units: AGREED,
                currency: node::settle::Currency::Sol,
                message: "seventy",
                ttl_hours: 2.0,
            },
        ))
        .unwrap();
        rt.block_on(post_memo(
            chain,
            &self.seller,
            &MemoOp::Accept {
                offer_id: offer_id.clone(),
            },
            &seller_pk,
        ))
        .unwrap();
        // A forgery: mallory "cancels" the seller's listing.
        let forged = rt
            .block_on(post_memo(
                chain,
                &self.mallory,
                &MemoOp::Cancel {
                    listing_id: listing.listing_id.clone(),
                },
                &seller_pk,
            ))
            .unwrap()
            .signature;
        let report = self.poll();
        assert!(report.fetched >= 5, "{report:?}");
        {
            let s = self.ix.state();
            let l = &s.listings[&listing.listing_id];
            assert_eq!(l.status(s.now), "live", "forged cancel ignored");
            assert!(l.cancelled.is_none());
            assert_eq!(
                s.rejected[&forged.to_string()][0].reason,
                Refusal::CancelNotSignedBySeller
            );
            let o = &s.offers[&offer_id];
            assert_eq!(o.status, OfferStatus::Accepted);
            assert_eq!(o.terms.len(), 2);
            assert_eq!(o.current().price_lamports, Some(AGREED));
        }
        let (code, body) = rt.block_on(self.api.get("/listings", None));
        assert_eq!(code, 200);
        assert_eq!(
            body["listings"][0]["manifest"]["listing_id"],
            listing.listing_id
        );
        assert_eq!(body["listings"][0]["status"], "live");
        Negotiated {
            listing,
            offer_id,
            forged,
        }
    }

    /// Sign-in: good, reused, expired, wrong signature, wrong key, a
    /// made-up token. Returns the three wallets' sessions.
    fn sign_in(&self) -> Sessions {
        let (rt, api, buyer, mallory) = (&self.rt, &self.api, &self.buyer, &self.mallory);
        let token = rt.block_on(api.sign_in(buyer));
        let (nonce, msg) = rt.block_on(api.challenge(buyer));
        let good_sig = buyer.sign(msg.as_bytes());
        let (code, _) = rt.block_on(api.verify(&buyer.address(), &nonce, &good_sig));
        assert_eq!(code, 200);
        let (code, body) = rt.block_on(api.verify(&buyer.address(), &nonce, &good_sig));
        assert_eq!(
            (code, body["error"].as_str()),
            (401, Some("unknown_nonce")),
            "reused nonce: {body}"
        );
        let (nonce, msg) = rt.block_on(api.challenge(buyer));
        let (code, body) =
            rt.block_on(api.verify(&buyer.address(), &nonce, &mallory.sign(msg.as_bytes())));
        assert_eq!(
            (code, body["error"].as_str()),
            (401, Some("bad_signature")),
            "{body}"
        );
        let (nonce, msg) = rt.block_on(api.challenge(buyer));
        let (code, body) =
            rt.block_on(api.verify(&mallory.address(), &nonce, &mallory.sign(msg.as_bytes())));
        assert_eq!(
            (code, body["error"].as_str()),
            (401, Some("wrong_pubkey")),
            "{body}"
        );
        let (nonce, msg) = rt.block_on(api.challenge(buyer));
        self.skew.store(301, Ordering::SeqCst);
        let (code, body) =
            rt.block_on(api.verify(&buyer.address(), &nonce, &buyer.sign(msg.as_bytes())));
        assert_eq!(
            (code, body["error"].as_str()),
            (401, Some("expired_nonce")),
            "{body}"
        );
        self.skew.store(0, Ordering::SeqCst);
        let (code, _) = rt.block_on(api.get(
            "/listings/00000000-000000000000/offers",
            Some("forged-token"),
        ));
        assert_eq!(code, 401, "a made-up session token is refused");
        Sessions {
            buyer: token,
            seller: rt.block_on(api.sign_in(&self.seller)),
            mallory: rt.block_on(api.sign_in(mallory)),
        }
    }

    /// The buyer settles through the API (signs the returned transaction,
    /// at the accepted counter's price); the seller's listen pass, with the
    /// indexer as its catalog, releases it; the indexer and the API show it.
    fn settle_and_release(&self, n: &Negotiated, token: &str) {
        let (rt, api, chain) = (&self.rt, &self.api, &self.chain);
        let settle_path = format!("/listings/{}/settle", n.listing.listing_id);
        let (code, body) = rt.block_on(api.post(
            &settle_path,
            json!({"buyer_x25519_pubkey": self.buyer.x25519_address()}),
            None,
        ));
        assert_eq!(code, 401, "settle needs a session: {body}");
        let (code, settle) = rt.block_on(api.post(
            &settle_path,
            json!({"buyer_x25519_pubkey": self.buyer.x25519_address(), "cluster": "localnet"}),
            Some(token),
        ));
        assert_eq!(code, 200, "{settle}");
        assert_eq!(
            settle["price_lamports"], AGREED,
            "the accepted counter binds"
        );
        assert_eq!(settle["offer_id"], n.offer_id.as_str());
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(settle["tx_base64"].as_str().unwrap())
            .unwrap();
        let mut tx: solana_sdk::transaction::Transaction = bincode::deserialize(&bytes).unwrap();
        let buyer_kp = self.buyer.solana_keypair();
        assert_eq!(
            tx.message.account_keys[0],
            buyer_kp.pubkey(),
            "buyer pays the fee"
        );
        let blockhash = tx.message.recent_blockhash;
        tx.try_sign(&[&buyer_kp], blockhash).unwrap();
        let seller_pk = self.seller_pk();
        let seller_before = rt.block_on(chain.rpc().get_balance(&seller_pk)).unwrap();
        let buy_sig = rt
            .block_on(chain.rpc().send_and_confirm_transaction(&tx))
            .unwrap();
        let seller_after = rt.block_on(chain.rpc().get_balance(&seller_pk)).unwrap();
        assert_eq!(seller_after - seller_before, AGREED);

        self.poll();
        let catalog = IndexedCatalog {
            ix: &self.ix,
            hash: "cd".repeat(32),
            key: [9u8; 32],
        };
        let mut db = ListenDb::open(&self.dir.path().join("listen.db")).unwrap();
        let pass = rt
            .block_on(run_once(
                chain,
                &mut db,
                &self.seller,
                &self.market.uploader,
                &catalog,
                &seller_pk,
            ))
            .unwrap();
        assert_eq!(
            (pass.verified, pass.released, pass.rejected),
            (1, 1, 0),
            "{pass:?}"
        );
        self.poll();
        {
            let s = self.ix.state();
            let st = &s.settlements[&buy_sig.to_string()];
            assert_eq!(st.price_lamports, AGREED);
            assert_eq!(st.paid_lamports, AGREED);
            assert_eq!(st.offer_id.as_deref(), Some(n.offer_id.as_str()));
            assert!(
                matches!(st.status, SettlementStatus::Released { .. }),
                "{st:?}"
            );
        }
        let (code, body) = rt.block_on(api.get(
            &format!(
                "/settlements/{}?buyer={}&cluster=localnet",
                n.listing.listing_id,
                self.buyer.address()
            ),
            None,
        ));
        assert_eq!(code, 200);
        assert_eq!(body["status"], "released", "{body}");
        assert!(body["envelope_arweave_id"]
            .as_str()
            .is_some_and(|e| self.store.get(e).is_ok()));
        let (code, rep) =
            rt.block_on(api.get(&format!("/sellers/{}", self.seller.address()), None));
        assert_eq!(code, 200);
        assert_eq!(
            (rep["sales"].as_u64(), rep["releases"].as_u64()),
            (Some(1), Some(1)),
            "{rep}"
        );
    }

    /// A private listing: offers visible to its seller and that buyer
    /// only, settlements likewise. Returns (listing, the buyer's offer id).
    fn private_listing(&self, sessions: &Sessions) -> (Listing, String) {
        let (rt, api) = (&self.rt, &self.api);
        let private = rt.block_on(self.market.list(&self.seller, "private", &"ef".repeat(32)));
        let (_, private_offer, _) = rt
            .block_on(make_offer(
                &self.chain,
                &self.buyer,
                &self.market.uploader,
                &private,
                &OfferTerms {
                    price_usd: 4.0,
                    price_units: 40_000_000,
                    currency: node::settle::Currency::Sol,
                    message: "private bid",
                    ttl_hours: 2.0,
                },
            ))
            .unwrap();
        self.poll();
        let path = format!("/listings/{}/offers", private.listing_id);
        let ids = |v: &Value| -> Vec<String> {
            v["offers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["offer_id"].as_str().unwrap().to_string())
                .collect()
        };
        let (_, as_seller) = rt.block_on(api.get(&path, Some(&sessions.seller)));
        let (_, as_buyer) = rt.block_on(api.get(&path, Some(&sessions.buyer)));
        let (_, as_mallory) = rt.block_on(api.get(&path, Some(&sessions.mallory)));
        let (_, anonymous) = rt.block_on(api.get(&path, None));
        assert_eq!(ids(&as_seller), vec![private_offer.clone()]);
        assert_eq!(ids(&as_buyer), vec![private_offer.clone()]);
        assert!(ids(&as_mallory).is_empty(), "{as_mallory}");
        assert!(ids(&anonymous).is_empty(), "{anonymous}");
        let (code, _) =
            rt.block_on(api.get(&format!("/offers/{private_offer}"), Some(&sessions.mallory)));
        assert_eq!(code, 404, "a private offer is not even confirmed to exist");
        // a private listing's settlements: its seller and that buyer, signed in
        let status = format!(
            "/settlements/{}?buyer={}&cluster=localnet",
            private.listing_id,
            self.buyer.address()
        );
        let (code, _) = rt.block_on(api.get(&status, None));
        assert_eq!(code, 401, "anonymous");
        let (code, _) = rt.block_on(api.get(&status, Some(&sessions.mallory)));
        assert_eq!(code, 403, "a stranger");
        for t in [&sessions.buyer, &sessions.seller] {
            let (code, body) = rt.block_on(api.get(&status, Some(t)));
            assert_eq!(code, 200, "{body}");
            assert_eq!(body["listing_id"], private.listing_id.as_str());
        }
        (private, private_offer)
    }

    /// A hint's manifest body is never trusted: a `list` memo whose
    /// manifest the gateway does not serve is not folded from the body the
    /// hint carries (it would let anyone cache any signed body under any
    /// id); and a hint of a transaction the chain refuses is a 409 with
    /// the fold's reason.
    fn hostile_hints(&self, n: &Negotiated, mallory_token: &str) {
        let (rt, api) = (&self.rt, &self.api);
        // a listing of mallory's, signed but never served by the gateway
        let mallorys = || {
            let id = node::market::list::new_listing_id();
            let m = build_listing(
                &self.mallory,
                &NewListing {
                    listing_id: &id,
                    bundle_hash: &"ab".repeat(32),
                    payment_address: None,
                    price_usd: 1.0,
                    price_lamports: PRICE,
                    duration_hours: 24.0,
                    visibility: "auction",
                    encrypted_bundle_uri: "ar://blob",
                    metadata_uri: "ar://meta",
                    preview: json!({}),
                    now: time::OffsetDateTime::now_utc().unix_timestamp(),
                    escrow_program: None,
                    escrow_terms: None,
                    settlement: None,
                    usd_at_settle: None,
                },
            )
            .unwrap();
            (id, m)
        };
        let (ghost_id, ghost) = mallorys();
        let unserved = "G".repeat(43); // an item id the gateway does not have
        let sent = rt
            .block_on(post_memo(
                &self.chain,
                &self.mallory,
                &MemoOp::List {
                    listing_arweave_id: unserved.clone(),
                    bundle_hash: "ab".repeat(32),
                },
                &self.mallory.solana_keypair().pubkey(),
            ))
            .unwrap();
        let (code, body) = rt.block_on(api.post(
            "/listings",
            json!({
                "manifest": ghost,
                "listing_arweave_id": unserved,
                "list_tx_signature": sent.signature.to_string(),
                "cluster": "localnet",
            }),
            Some(mallory_token),
        ));
        assert_eq!(code, 409, "{body}");
        assert!(
            body.to_string().contains("does not serve manifest"),
            "{body}"
        );
        assert!(!self.ix.state().listings.contains_key(&ghost_id));
        self.poll(); // the ingest folds it as the chain has it: refused, no manifest
        assert!(!self.ix.state().listings.contains_key(&ghost_id));

        // a listing whose memo references no watched address (no registry
        // reference): polling never lists it, so neither may a hint fold it
        // (a rebuild would lose it), though its manifest is served
        let (stray_id, stray) = mallorys();
        let item = rt
            .block_on(self.market.uploader.put_signed(
                &self.mallory,
                serde_json::to_vec(&stray).unwrap(),
                "application/json",
                LISTING_SCHEMA,
            ))
            .unwrap();
        let op = MemoOp::List {
            listing_arweave_id: item.clone(),
            bundle_hash: "ab".repeat(32),
        };
        let mallory_pk = self.mallory.solana_keypair().pubkey();
        let bare = rt
            .block_on(self.chain.send(
                &[node::chain::instructions::memo(
                    &op.to_string(),
                    &mallory_pk,
                )],
                &[&self.mallory.solana_keypair()],
            ))
            .unwrap();
        let (code, body) = rt.block_on(api.post(
            "/listings",
            json!({
                "manifest": stray,
                "listing_arweave_id": item,
                "list_tx_signature": bare.signature.to_string(),
                "cluster": "localnet",
            }),
            Some(mallory_token),
        ));
        assert_eq!(code, 400, "{body}");
        assert!(
            body.to_string()
                .contains("references none of the addresses"),
            "{body}"
        );
        assert!(!self.ix.state().listings.contains_key(&stray_id));

        let (code, body) = rt.block_on(api.post(
            &format!("/listings/{}/cancel", n.listing.listing_id),
            json!({"cancel_tx_signature": n.forged.to_string()}),
            Some(mallory_token),
        ));
        assert_eq!(code, 409, "{body}");
        assert!(body["detail"]
            .as_str()
            .unwrap()
            .contains("cancel not signed by the listing's seller"));
    }

    /// The reference Python client, unchanged, against this indexer.
    fn reference_client(&self, n: &Negotiated, private: &Listing, private_offer: &str) {
        let py = e2e::ref_python();
        let home = self.dir.path().join("ref-home");
        let keystore = home.join("buyer.json");
        self.buyer.save(&keystore, false).unwrap();
        let out = std::process::Command::new(py)
            .arg("-c")
            .arg(REFERENCE_CLIENT)
            .args([
                &self.api.base,
                &self.buyer.address(),
                keystore.to_str().unwrap(),
                &n.listing.listing_id,
                &private.listing_id,
                &self.buyer.x25519_address(),
            ])
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            r["browsed"]
                .as_array()
                .unwrap()
                .contains(&json!(n.listing.listing_id)),
            "{r}"
        );
        assert_eq!(r["shown"], n.listing.listing_id.as_str());
        assert_eq!(r["status"], "released");
        assert_eq!(r["private_offers"], json!([private_offer]));
        assert_eq!(
            r["settle_price"], PRICE,
            "the offer was not accepted: list price"
        );
    }

    /// A rebuild from an empty database reaches the same state, and so
    /// does a restart on the original database.
    fn rebuild(&self) {
        let incremental = self.ix.state().hash();
        let fresh = Arc::new(indexer_at(&self.dir.path().join("rebuilt.db")));
        self.rt.block_on(self.source.poll(&fresh)).unwrap();
        assert_eq!(fresh.state().hash(), incremental);
        assert_eq!(fresh.state().transactions, self.ix.state().transactions);
        let reopened = indexer_at(&self.dir.path().join("indexer.db"));
        assert_eq!(reopened.state().hash(), incremental);
    }
}

#[test]
fn indexer_follows_a_trade_and_serves_it() {
    let world = Scenario::start();
    let negotiated = world.negotiate();
    let sessions = world.sign_in();
    world.settle_and_release(&negotiated, &sessions.buyer);
    let (private, private_offer) = world.private_listing(&sessions);
    world.hostile_hints(&negotiated, &sessions.mallory);
    world.reference_client(&negotiated, &private, &private_offer);
    world.rebuild();
}

/// A gateway lags the chain: a `list` memo lands before its manifest is
/// served. The indexer holds the transaction back and re-fetches it each
/// poll, and folds the listing once the manifest is served; with no grace
/// the memo is refused for good (what every indexer did before).
#[test]
fn a_listing_whose_manifest_is_served_late_is_held_then_folded() {
    let v = validator();
    let rt = e2e::multi_thread_runtime();
    let dir = tempfile::tempdir().unwrap();
    let staging = FsStore::new(dir.path().join("staging"));
    let gateway = FsStore::new(dir.path().join("items"));
    std::fs::create_dir_all(gateway.dir()).unwrap();
    let market = Market {
        chain: v.chain(),
        uploader: Uploader::Fs(staging.clone()),
        store: staging.clone(),
    };
    let seller = Wallet::generate();
    v.fund(&seller.solana_keypair().pubkey(), 1);
    let listing = rt.block_on(market.list(&seller, "auction", &"ef".repeat(32)));

    let source = |grace: u64| {
        Arc::new(
            RpcSource::new(
                v.chain(),
                Source::Fs(gateway.clone()),
                vec![default_registry()],
                4,
                0,
            )
            .with_manifest_grace(std::time::Duration::from_secs(grace)),
        )
    };
    let patient = source(600);
    let ix = Arc::new(indexer_at(&dir.path().join("patient.db")));
    rt.block_on(patient.poll(&ix)).unwrap();
    assert!(
        !ix.state().listings.contains_key(&listing.listing_id),
        "folded without its manifest"
    );
    assert!(ix.state().rejected.is_empty(), "{:?}", ix.state().rejected);
    let held = ix.store().meta(indexer::ingest::HELD_KEY).unwrap().unwrap();
    assert!(held.contains(':'), "nothing held: {held}");

    // the impatient indexer refuses the memo for good
    let impatient = Arc::new(indexer_at(&dir.path().join("impatient.db")));
    rt.block_on(source(0).poll(&impatient)).unwrap();
    let refused: Vec<Refusal> = impatient
        .state()
        .rejected
        .values()
        .flatten()
        .map(|r| r.reason.clone())
        .collect();
    assert!(
        refused.iter().any(|r| matches!(
            r,
            Refusal::ManifestUnavailable {
                kind: indexer::fold::ManifestKind::Listing,
                ..
            }
        )),
        "{refused:?}"
    );

    // the gateway catches up: the next poll folds the listing
    for e in std::fs::read_dir(staging.dir()).unwrap().flatten() {
        std::fs::copy(e.path(), gateway.dir().join(e.file_name())).unwrap();
    }
    rt.block_on(patient.poll(&ix)).unwrap();
    let s = ix.state();
    let l = &s.listings[&listing.listing_id];
    assert_eq!(l.seller, seller.address());
    assert!(s.rejected.is_empty(), "{:?}", s.rejected);
    assert_eq!(
        ix.store()
            .meta(indexer::ingest::HELD_KEY)
            .unwrap()
            .as_deref(),
        Some("{}")
    );
}

/// The writer service as the binary runs it (`indexer::service::run`),
/// in-process on 127.0.0.1:0, polling every `interval` (and woken by the
/// chain's notifications, read from `ws_url` when given, else the
/// validator's): lists one listing, returns how long after its list
/// transaction was confirmed the API served it; then stops the service
/// and checks it returned cleanly and closed its port.
fn writer_service(interval: std::time::Duration, ws_url: Option<&str>) -> std::time::Duration {
    let v = validator();
    let rt = e2e::multi_thread_runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path().join("items"));
    let market = Market {
        chain: v.chain(),
        uploader: Uploader::Fs(store.clone()),
        store: store.clone(),
    };
    let seller = Wallet::generate();
    v.fund(&seller.solana_keypair().pubkey(), 2);
    let ix = Arc::new(indexer_at(&dir.path().join("indexer.db")));
    let chain = match ws_url {
        None => v.chain(),
        Some(ws) => node::chain::Chain::new(
            node::chain::Endpoint {
                rpc_url: v.rpc_url.clone(),
                ws_url: ws.to_string(),
            },
            solana_commitment_config::CommitmentConfig::confirmed(),
            &[node::escrow::PROGRAM_ID],
        ),
    };
    let source = Arc::new(RpcSource::new(
        chain,
        Source::Fs(store.clone()),
        vec![default_registry()],
        4,
        0,
    ));
    let state = AppState::new(ix.clone(), "localnet").with_chain(source.clone());
    let metrics = state.metrics.clone();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = rt.spawn(indexer::service::run(
        listener,
        state,
        source,
        (interval, true),
        async move {
            let _ = stopped.await;
        },
    ));
    // the first poll and the subscription are up before the listing
    while metrics.polls.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let listing = rt.block_on(market.list(&seller, "auction", &"ab".repeat(32)));
    let confirmed = std::time::Instant::now();
    let api = Api {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
    };
    let deadline = confirmed + std::time::Duration::from_secs(30);
    let served = loop {
        let (code, body) = rt.block_on(api.get(&format!("/listings/{}", listing.listing_id), None));
        if code == 200 {
            assert_eq!(body["listing"]["seller_pubkey"], seller.address());
            break confirmed.elapsed();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never folded: {code} {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    stop.send(()).unwrap();
    let done = rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(10), service).await
    });
    done.expect("stops within 10 s").unwrap().unwrap();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the port is closed after shutdown"
    );
    served
}

/// It polls on its own (no manual `poll`), serves what it folded, and
/// returns cleanly when its shutdown future completes.
#[test]
fn the_writer_service_polls_serves_and_stops_on_its_shutdown_future() {
    writer_service(std::time::Duration::from_millis(100), None);
}

/// The chain's push notifications wake the writer: with a poll only every
/// minute, a new listing is served within seconds of its confirmation;
/// with the subscription lost (a websocket that is not there), polling
/// still serves it, so a dropped subscription never loses a transaction.
#[test]
fn the_writer_wakes_on_chain_notifications_and_polling_covers_a_lost_subscription() {
    let woken = writer_service(std::time::Duration::from_secs(60), None);
    assert!(
        woken < std::time::Duration::from_secs(10),
        "woken by the notification, not the 60 s poll: {woken:?}"
    );
    let polled = writer_service(
        std::time::Duration::from_millis(500),
        Some("ws://127.0.0.1:9"),
    );
    assert!(polled < std::time::Duration::from_secs(30), "{polled:?}");
}

/// `/settle` judges expiry by the chain's clock with a margin, never by the
/// fold's "now" (on a quiet market, the newest folded block): a listing
/// that the clock has expired, though the last fold still shows it live,
/// gets no buy transaction, nor does one expiring within the margin.
#[test]
fn settle_refuses_a_listing_expired_by_the_chains_clock_on_a_quiet_market() {
    let world = Scenario::start();
    let (rt, api) = (&world.rt, &world.api);
    // 18 s: inside the 30 s margin at once, expired by the clock soon after
    let listing = rt.block_on(world.market.list_for(
        &world.seller,
        "auction",
        &"ab".repeat(32),
        0.005,
    ));
    world.poll();
    let token = rt.block_on(api.sign_in(&world.buyer));
    let path = format!("/listings/{}/settle", listing.listing_id);
    let body = json!({"buyer_x25519_pubkey": world.buyer.x25519_address(), "cluster": "localnet"});
    let (code, within) = rt.block_on(api.post(&path, body.clone(), Some(&token)));
    assert_eq!(code, 409, "{within}");
    assert!(
        within["detail"]
            .as_str()
            .unwrap()
            .contains("expires within 30 s by the chain's clock"),
        "{within}"
    );
    // past its expiry by the chain's clock; no poll since, so the fold's
    // newest block is still the listing's own
    let expires_at = listing.expires_at;
    e2e::validator().wait_block_time(expires_at + 1);
    let (code, expired) = rt.block_on(api.post(&path, body, Some(&token)));
    assert_eq!(code, 409, "{expired}");
    assert!(
        expired["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("expires_at {expires_at}")),
        "{expired}"
    );
    // the views judge by the chain's clock (read at the last poll, advanced
    // since) too: the listing is expired there, not live
    let (code, shown) = rt.block_on(api.get(&format!("/listings/{}", listing.listing_id), None));
    assert_eq!(code, 200, "{shown}");
    assert_eq!(shown["listing"]["status"], "expired", "{shown}");
    let (_, live) = rt.block_on(api.get("/listings", None));
    assert!(
        !live.to_string().contains(&listing.listing_id),
        "not among the live listings: {live}"
    );
}

/// The review's finding: the indexer cached the first body a gateway
/// answered for an id, so a lying (or glitching) gateway bound another
/// body to a listing for ever. A scripted gateway answers the listing's
/// item id with the seller's other signed manifest (same listing id and
/// bundle hash, price 1 lamport): first under the item's own header, then
/// under the other item's header. Neither body is folded or cached (the
/// transaction is held back as if not served yet); once the gateway
/// answers honestly the next poll folds the listing at its real price.
#[test]
fn a_lying_gateway_cannot_bind_another_body_to_a_listings_item() {
    use e2e::fake_gateway::FakeGateway;
    use node::arweave::{DataItem, Tag};
    let v = validator();
    let rt = e2e::multi_thread_runtime();
    let dir = tempfile::tempdir().unwrap();
    let seller = Wallet::generate();
    v.fund(&seller.solana_keypair().pubkey(), 1);
    let (id, bundle_hash) = (node::market::list::new_listing_id(), "ab".repeat(32));
    let manifest = |price_lamports: u64| {
        let m = build_listing(
            &seller,
            &NewListing {
                listing_id: &id,
                bundle_hash: &bundle_hash,
                payment_address: None,
                price_usd: 9.0,
                price_lamports,
                duration_hours: 24.0,
                visibility: "auction",
                encrypted_bundle_uri: "ar://blob",
                metadata_uri: "ar://meta",
                preview: json!({"memories_count": 2}),
                now: time::OffsetDateTime::now_utc().unix_timestamp(),
                escrow_program: None,
                escrow_terms: None,
                settlement: None,
                usd_at_settle: None,
            },
        )
        .unwrap();
        let tags = vec![
            Tag::new("Content-Type", "application/json"),
            Tag::new("App-Name", "brainctl"),
            Tag::new("Schema", LISTING_SCHEMA),
        ];
        DataItem::sign(&seller, serde_json::to_vec(&m).unwrap(), tags, None, None).unwrap()
    };
    let (honest, other) = (manifest(PRICE), manifest(1));
    let item = honest.id();
    // referenced from an address of its own, not the shared registry: the
    // other tests' indexers on this validator never see this listing
    let watched = Wallet::generate().solana_keypair().pubkey();
    let op = MemoOp::List {
        listing_arweave_id: item.clone(),
        bundle_hash: bundle_hash.clone(),
    };
    let kp = seller.solana_keypair();
    let ixs = [
        node::chain::instructions::discovery(&watched, 200_000),
        node::chain::instructions::memo(&op.to_string(), &kp.pubkey()),
    ];
    rt.block_on(v.chain().send(&ixs, &[&kp])).unwrap();

    let gw = FakeGateway::start();
    let source = Arc::new(RpcSource::new(
        v.chain(),
        Source::Gateway(gw.url.clone()),
        vec![watched],
        4,
        0,
    ));
    let ix = Arc::new(indexer_at(&dir.path().join("ix.db")));
    let unbound = |what: &str| {
        let s = ix.state();
        assert!(
            !s.listings.contains_key(&id),
            "{what}: folded {:?}",
            s.listings.get(&id).map(|l| l.price_lamports)
        );
        assert!(
            s.rejected.is_empty(),
            "{what}: refused for good: {:?}",
            s.rejected
        );
        assert_eq!(ix.store().manifest(&item).unwrap(), None, "{what}: cached");
    };
    // the other body under the item's own header
    gw.answer(&item, &honest, &other.data);
    rt.block_on(source.poll(&ix)).unwrap();
    unbound("another body");
    // the other item whole (its header and body) under this id
    gw.answer(&item, &other, &other.data);
    rt.block_on(source.poll(&ix)).unwrap();
    unbound("another item");
    assert!(gw.served() >= 3, "the gateway was asked");

    // honest at last: folded at the real price, and cached
    gw.answer(&item, &honest, &honest.data);
    rt.block_on(source.poll(&ix)).unwrap();
    let s = ix.state();
    let l = s.listings.get(&id).expect("folded once proven");
    assert_eq!(l.price_lamports, Some(PRICE));
    assert_eq!(
        ix.store().manifest(&item).unwrap(),
        Some(serde_json::from_slice::<Value>(&honest.data).unwrap())
    );
}
