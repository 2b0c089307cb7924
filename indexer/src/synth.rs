//! Synthetic, deterministic marketplace logs for tests and benchmarks:
//! complete negotiated trades (list → offer → counter → accept → buy →
//! release) between seeded wallets, with real signed manifests, so a log
//! of any size folds exactly as a chain recording would.
//!
//! Owns generating records only; it never touches a chain or a store.

use crate::record::TxRecord;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use node::chain::parsed_tx::Transfer;
use node::chain::ParsedTx;
use node::market::envelope::seal_envelope;
use node::market::manifest::{build_listing, Listing, NewListing};
use node::market::negotiate::{counter_manifest, offer_manifest, OfferTerms};
use node::market::MemoOp;
use node::wallet::Wallet;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Block time of slot 0 of a synthetic chain (2026-09-01).
pub const GENESIS_TIME: i64 = 1_788_220_800;
/// Listed price of every synthetic listing.
pub const LIST_PRICE_LAMPORTS: u64 = 50_000_000;
/// Counter price every synthetic trade settles at.
pub const COUNTER_PRICE_LAMPORTS: u64 = 40_000_000;
/// Records per synthetic trade.
pub const RECORDS_PER_TRADE: usize = 6;

/// A seeded wallet (`role` keeps sellers and buyers apart).
pub fn wallet(role: u8, n: u64) -> Wallet {
    let mut seed = [0u8; 32];
    seed[0] = role;
    seed[1..9].copy_from_slice(&n.to_le_bytes());
    Wallet::from_seed(&seed)
}

fn hash_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    hex::encode(h.finalize())
}

/// A content id for a manifest body, shaped like an Arweave item id.
pub fn item_id(body: &Value) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(body.to_string().as_bytes()))
}

/// Builds synthetic records on a synthetic clock: each record takes the
/// next slot (400 ms apart), index 0.
pub struct LogBuilder {
    slot: u64,
    records: Vec<TxRecord>,
}

impl Default for LogBuilder {
    fn default() -> Self {
        LogBuilder::new()
    }
}

impl LogBuilder {
    /// An empty log starting at slot 1.
    pub fn new() -> LogBuilder {
        LogBuilder {
            slot: 1,
            records: Vec::new(),
        }
    }

    /// The block time of the next record.
    pub fn now(&self) -> i64 {
        GENESIS_TIME + (self.slot as i64 * 2) / 5
    }

    /// Lets `seconds` of chain time pass (slots of 0.4 s) before the next
    /// record: listings expire.
    pub fn pass_time(&mut self, seconds: u64) {
        self.slot += seconds * 5 / 2;
    }

    /// Appends one successful transaction signed by `signers` (fee payer
    /// first) carrying `memo`, `transfers` and `manifests`.
    pub fn push(
        &mut self,
        signers: &[&Wallet],
        memo: String,
        transfers: Vec<Transfer>,
        manifests: Vec<&Value>,
    ) -> &mut TxRecord {
        let slot = self.slot;
        self.slot += 1;
        let sig_seed = hash_hex(&[&slot.to_le_bytes(), memo.as_bytes()]);
        let signature = bs58::encode(hex::decode(sig_seed.repeat(2)).expect("hex")).into_string();
        self.records.push(TxRecord {
            tx: ParsedTx {
                signature,
                slot,
                block_time: Some(GENESIS_TIME + (slot as i64 * 2) / 5),
                succeeded: true,
                signers: signers.iter().map(|w| w.address()).collect(),
                memos: vec![memo],
                transfers,
                token_transfers: Vec::new(),
                token_balances: Vec::new(),
                calls: vec![],
                inner_calls: vec![],
                legacy_deposits: vec![],
                anomalies: vec![],
            },
            index: 0,
            manifests: manifests
                .into_iter()
                .map(|m| (item_id(m), std::sync::Arc::new(m.clone())))
                .collect::<BTreeMap<_, _>>(),
        });
        self.records.last_mut().expect("just pushed")
    }

    /// A signed listing by `seller`, posted with its `list` memo.
    pub fn list(&mut self, seller: &Wallet, n: u64, visibility: &str) -> Listing {
        self.list_settled(seller, n, visibility, None)
    }

    /// A listing that settles through `escrow_program` (its manifest says so).
    pub fn list_escrow(&mut self, seller: &Wallet, n: u64, escrow_program: &str) -> Listing {
        self.list_settled(seller, n, "auction", Some(escrow_program))
    }

    /// `buyer`'s escrow buy: the `deposit` into the listing's account and
    /// the `buy` memo, no transfer to the seller; returns the signature.
    pub fn escrow_buy(&mut self, buyer: &Wallet, listing: &Listing) -> String {
        self.escrow_buy_holding(buyer, listing, None)
    }

    /// An escrow buy whose deposit holds `held` (the on-chain listing's
    /// price, when it is not the manifest's) instead of the price.
    pub fn escrow_buy_holding(
        &mut self,
        buyer: &Wallet,
        listing: &Listing,
        held: Option<u64>,
    ) -> String {
        let memo = MemoOp::Buy {
            listing_id: listing.listing_id.clone(),
            buyer_x25519: buyer.x25519_address(),
        };
        let seller = listing.seller_pubkey.parse().expect("seller pubkey");
        let account = node::escrow::listing_address(&seller, &listing.listing_id);
        let buyer_key = buyer.address().parse().expect("buyer pubkey");
        let terms = node::market::escrow_trade::manifest_terms(listing).expect("escrow terms");
        let b = node::market::escrow_trade::buyer_blinding(
            &buyer.x25519_secret(),
            &terms.seller_x25519,
            &account,
            &buyer_key,
        )
        .expect("a real key");
        let blind = node::escrow::math::client::point_of(&b);
        let deposit =
            node::escrow::deposit(&account, &buyer_key, &terms, &blind, &buyer.x25519_public());
        let event = node::escrow::EscrowEvent::Deposited {
            listing: account,
            escrow: node::escrow::escrow_address(&account, &buyer_key),
            buyer: buyer_key,
            amount: held.unwrap_or(terms.price_lamports),
            mint: node::chain::Pubkey::default(),
            deposited_at: self.now(),
        };
        let r = self.push(&[buyer], memo.to_string(), vec![], vec![]);
        r.tx.calls = vec![node::chain::ProgramCall::of(&deposit)];
        r.tx.inner_calls = vec![event.emitted()];
        r.tx.signature.clone()
    }

    /// A transaction of `signer` in which the escrow program emitted
    /// `event` alone (a claim, refund or proof); returns the signature.
    pub fn escrow_event(&mut self, signer: &Wallet, event: node::escrow::EscrowEvent) -> String {
        let r = self.push(&[signer], String::new(), vec![], vec![]);
        r.tx.inner_calls = vec![event.emitted()];
        r.tx.signature.clone()
    }

    /// The seller's reveal on `buyer`'s escrow of `listing`: the program's
    /// `KeyRevealed` event and the `release` memo naming the escrow
    /// account, as `listen` sends them; returns the signature.
    pub fn escrow_reveal(&mut self, seller: &Wallet, listing: &Listing, buyer: &Wallet) -> String {
        let account = node::escrow::listing_address(
            &seller.address().parse().expect("seller pubkey"),
            &listing.listing_id,
        );
        let escrow =
            node::escrow::escrow_address(&account, &buyer.address().parse().expect("buyer pubkey"));
        let memo = MemoOp::Release {
            listing_id: listing.listing_id.clone(),
            envelope_arweave_id: escrow.to_string(),
            minted_token_address: seller.address(),
        };
        let r = self.push(&[seller], memo.to_string(), vec![], vec![]);
        r.tx.inner_calls = vec![node::escrow::EscrowEvent::Revealed { escrow }.emitted()];
        r.tx.signature.clone()
    }

    /// A listing of `visibility` that settles through `escrow_program`
    /// when one is named, by direct payment otherwise.
    pub fn list_settled(
        &mut self,
        seller: &Wallet,
        n: u64,
        visibility: &str,
        escrow_program: Option<&str>,
    ) -> Listing {
        let now = self.now();
        let listing_id = format!(
            "20260901-{}",
            &hash_hex(&[&n.to_le_bytes(), b"listing"])[..12]
        );
        let bundle_hash = hash_hex(&[listing_id.as_bytes()]);
        // an escrow listing commits to a (small, real) sealed blob
        let escrow_terms = escrow_program.map(|_| {
            let k = node::escrow::listing_scalar(seller, &listing_id);
            let sealed = node::escrow::math::blob::seal(&k, bundle_hash.as_bytes()).expect("seals");
            node::market::manifest::EscrowCommitments {
                key_point: node::escrow::math::client::point_of(&k),
                blob_root: sealed.root,
                plain_len: sealed.plain_len,
                seller_x25519: seller.x25519_public(),
                blob_format: node::escrow::math::blob::Format::V3,
            }
        });
        let manifest = build_listing(
            seller,
            &NewListing {
                listing_id: &listing_id,
                bundle_hash: &bundle_hash,
                payment_address: None,
                price_usd: 10.0,
                price_lamports: LIST_PRICE_LAMPORTS,
                duration_hours: 24.0 * 30.0,
                visibility,
                encrypted_bundle_uri: "ar://blob",
                metadata_uri: "ar://metadata",
                preview: json!({"memories_count": 3, "categories_summary": {"lesson": 3}}),
                now,
                escrow_program,
                escrow_terms,
                settlement: None,
                usd_at_settle: None,
            },
        )
        .expect("synthetic listing is valid");
        let memo = MemoOp::List {
            listing_arweave_id: item_id(&manifest),
            bundle_hash,
        };
        self.push(&[seller], memo.to_string(), vec![], vec![&manifest]);
        Listing::from_value(manifest).expect("valid")
    }

    /// `buyer` offers on `listing`; returns the offer id.
    pub fn offer(&mut self, buyer: &Wallet, listing: &Listing, price_lamports: u64) -> String {
        let offer_id = format!(
            "offer-20260901-{}",
            &hash_hex(&[listing.listing_id.as_bytes(), buyer.address().as_bytes()])[..12]
        );
        let terms = OfferTerms {
            price_usd: 7.0,
            price_units: price_lamports,
            currency: node::settle::Currency::Sol,
            message: "synthetic",
            ttl_hours: 24.0,
        };
        let m = offer_manifest(buyer, listing, &offer_id, &terms, self.now()).expect("valid");
        let memo = MemoOp::Offer {
            listing_id: listing.listing_id.clone(),
            offer_arweave_id: item_id(&m),
            buyer_pubkey: buyer.address(),
        };
        self.push(&[buyer], memo.to_string(), vec![], vec![&m]);
        offer_id
    }

    /// `from` counters `offer_id` at `price_lamports`.
    pub fn counter(&mut self, from: &Wallet, offer_id: &str, price_lamports: u64) {
        let terms = OfferTerms {
            price_usd: 8.0,
            price_units: price_lamports,
            currency: node::settle::Currency::Sol,
            message: "meet me",
            ttl_hours: 24.0,
        };
        let m = counter_manifest(from, offer_id, &terms, self.now()).expect("valid");
        let memo = MemoOp::Counter {
            offer_id: offer_id.into(),
            counter_arweave_id: item_id(&m),
            counterer_pubkey: from.address(),
        };
        self.push(&[from], memo.to_string(), vec![], vec![&m]);
    }

    /// `signer` posts a memo without a manifest (accept, reject, withdraw, cancel).
    pub fn memo(&mut self, signer: &Wallet, op: MemoOp) -> String {
        self.push(&[signer], op.to_string(), vec![], vec![])
            .tx
            .signature
            .clone()
    }

    /// `buyer` pays `lamports` to the listing's payment address with the
    /// `buy` memo; returns the buy signature.
    pub fn buy(&mut self, buyer: &Wallet, listing: &Listing, lamports: u64) -> String {
        let memo = MemoOp::Buy {
            listing_id: listing.listing_id.clone(),
            buyer_x25519: buyer.x25519_address(),
        };
        let pay = Transfer {
            from: buyer.address(),
            to: listing.payment_address.clone(),
            lamports,
        };
        self.push(&[buyer], memo.to_string(), vec![pay], vec![])
            .tx
            .signature
            .clone()
    }

    /// The seller releases `buy_signature` with a signed envelope.
    pub fn release(&mut self, seller: &Wallet, listing: &Listing, buyer: &Wallet, buy: &str) {
        let mint = wallet(0xAA, self.slot).address();
        let envelope = seal_envelope(
            seller,
            &listing.listing_id,
            &buyer.address(),
            &buyer.x25519_public(),
            buy,
            &listing.bundle_hash,
            &mint,
            &[7u8; 32],
        )
        .expect("seal");
        let memo = MemoOp::Release {
            listing_id: listing.listing_id.clone(),
            envelope_arweave_id: item_id(&envelope),
            minted_token_address: mint,
        };
        self.push(&[seller], memo.to_string(), vec![], vec![&envelope]);
    }

    /// One complete negotiated trade (6 records) between seller
    /// `n % sellers` and buyer `n`.
    pub fn trade(&mut self, n: u64, sellers: u64) {
        let seller = wallet(1, n % sellers.max(1));
        let buyer = wallet(2, n);
        let listing = self.list(&seller, n, "auction");
        let offer = self.offer(&buyer, &listing, 30_000_000);
        self.counter(&seller, &offer, COUNTER_PRICE_LAMPORTS);
        self.memo(&seller, MemoOp::Accept { offer_id: offer });
        let buy = self.buy(&buyer, &listing, COUNTER_PRICE_LAMPORTS);
        self.release(&seller, &listing, &buyer, &buy);
    }

    /// One trade with the hostile shapes around it (11 records): an
    /// underpaying buy, a buy paying a stranger, a cancel and a release by
    /// a stranger, a failed transaction carrying a `list` memo, a
    /// malformed marketplace memo and a memo that is not the
    /// marketplace's, beside the honest negotiated trade. Each hostile one
    /// folds to a refusal (or nothing), never a change.
    pub fn hostile_trade(&mut self, n: u64, sellers: u64) {
        let seller = wallet(1, n % sellers.max(1));
        let buyer = wallet(2, n);
        let mallory = wallet(3, n % 97);
        let listing = self.list(&seller, n, "auction");
        self.buy(&mallory, &listing, 1);
        let mut elsewhere = listing.clone();
        elsewhere.payment_address = mallory.address();
        self.buy(&mallory, &elsewhere, LIST_PRICE_LAMPORTS);
        self.memo(
            &mallory,
            MemoOp::Cancel {
                listing_id: listing.listing_id.clone(),
            },
        );
        let failed = self.memo(
            &mallory,
            MemoOp::List {
                listing_arweave_id: format!("failed-{n}"),
                bundle_hash: "ab".repeat(32),
            },
        );
        if let Some(r) = self.records.last_mut() {
            debug_assert_eq!(r.tx.signature, failed);
            r.tx.succeeded = false;
        }
        self.push(
            &[&mallory],
            format!("{}:buy:{n}", node::market::memo::PREFIX),
            vec![],
            vec![],
        );
        self.push(&[&mallory], format!("gm {n}"), vec![], vec![]);
        let buy = self.buy(&buyer, &listing, LIST_PRICE_LAMPORTS);
        self.release(&mallory, &listing, &buyer, &buy);
        self.release(&seller, &listing, &buyer, &buy);
    }

    /// The records so far, in chain order.
    pub fn records(&self) -> &[TxRecord] {
        &self.records
    }

    /// Takes the records so far, going on from the same slot (a long log
    /// generated in batches).
    pub fn take_records(&mut self) -> Vec<TxRecord> {
        std::mem::take(&mut self.records)
    }

    /// Takes the records.
    pub fn finish(self) -> Vec<TxRecord> {
        self.records
    }
}

/// A log of `trades` complete trades among `sellers` sellers.
pub fn trades(trades: u64, sellers: u64) -> Vec<TxRecord> {
    let mut b = LogBuilder::new();
    for n in 0..trades {
        b.trade(n, sellers);
    }
    b.finish()
}
