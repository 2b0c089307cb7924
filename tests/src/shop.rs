//! One seller's shop for daemon tests: a funded seller wallet, its listen
//! state and item store in a temp dir, a fixed catalog, and buyers who pay
//! it. Replaces the copies of that set-up in each scenario test.

use crate::TestValidator;
use node::arweave::{FsStore, Uploader};
use node::chain::instructions::default_registry;
use node::chain::{Chain, Keypair, Pubkey, Signer};
use node::listen::pass::{run_once, PassReport};
use node::listen::{ListenDb, ListingTerms};
use node::market::tx::buy_instructions;
use node::wallet::Wallet;
use solana_sdk::instruction::Instruction;

/// A seller with its state and catalog.
pub struct Shop {
    /// The seller.
    pub seller: Wallet,
    /// The seller's key (also the payment address).
    pub seller_pk: Pubkey,
    /// Where released envelopes go.
    pub uploader: Uploader,
    /// The seller's durable state.
    pub db: ListenDb,
    /// What it sells.
    pub catalog: TestCatalog,
    /// Holds the state and items until the shop is dropped.
    pub dir: tempfile::TempDir,
}

impl Shop {
    /// A new seller funded with `sol`, selling nothing yet.
    pub fn open(v: &TestValidator, sol: u64) -> Shop {
        let dir = tempfile::tempdir().expect("temp dir");
        let seller = Wallet::generate();
        let seller_pk = seller.solana_keypair().pubkey();
        v.fund(&seller_pk, sol);
        Shop {
            uploader: Uploader::Fs(FsStore::new(dir.path().join("items"))),
            db: ListenDb::open(&dir.path().join("listen.db")).expect("listen state"),
            catalog: TestCatalog::new(vec![]),
            seller,
            seller_pk,
            dir,
        }
    }

    /// This shop selling `listings`.
    pub fn selling(mut self, listings: Vec<ListingTerms>) -> Shop {
        self.catalog = TestCatalog {
            receipt: self.catalog.receipt,
            ..TestCatalog::new(listings)
        };
        self
    }

    /// This shop giving `receipt` with each release.
    pub fn with_receipt(mut self, receipt: node::mint::receipt::ReceiptMode) -> Shop {
        self.catalog.receipt = receipt;
        self
    }

    /// Live, never-expiring, fee-free terms paid to this seller.
    pub fn at_price(&self, listing_id: &str, price_lamports: u64) -> ListingTerms {
        fixed_price(listing_id, &self.seller_pk, price_lamports)
    }

    /// One pass of the settlement daemon over the seller's address.
    pub fn pass(&mut self, rt: &tokio::runtime::Runtime, chain: &Chain) -> PassReport {
        rt.block_on(run_once(
            chain,
            &mut self.db,
            &self.seller,
            &self.uploader,
            &self.catalog,
            &self.seller_pk,
        ))
        .expect("a pass never fails on chain data")
    }
}

/// A buyer with a funded key.
pub struct Buyer {
    /// The wallet (its X25519 key receives the release).
    pub wallet: Wallet,
    /// Its Solana key.
    pub key: Keypair,
}

impl Buyer {
    /// A new buyer funded with `sol`.
    pub fn funded(v: &TestValidator, sol: u64) -> Buyer {
        let buyer = Buyer::unfunded();
        v.fund(&buyer.key.pubkey(), sol);
        buyer
    }

    /// A new buyer, not funded (fund many at once with airdrops).
    pub fn unfunded() -> Buyer {
        let wallet = Wallet::generate();
        let key = wallet.solana_keypair();
        Buyer { wallet, key }
    }

    /// The buy instructions `marketplace buy` sends: `lamports` to the
    /// shop's seller for `listing_id`, with this buyer's X25519 key.
    pub fn buy(&self, shop: &Shop, listing_id: &str, lamports: u64) -> Vec<Instruction> {
        buy_instructions(
            &self.key.pubkey(),
            &shop.seller_pk,
            lamports,
            listing_id,
            &self.wallet.x25519_address(),
            &default_registry(),
            None,
        )
    }
}

/// A seller's catalog for daemon tests: fixed listings, one stand-in bundle
/// hash and key for all of them, no accepted offers.
pub struct TestCatalog {
    listings: Vec<node::listen::ListingTerms>,
    hash: String,
    key: [u8; 32],
    /// The hourly budget of below-cost buys (`None`: unlimited).
    pub below_cost: Option<node::listen::pass::BelowCost>,
    /// What each release gives the buyer (default: a mint per buy).
    pub receipt: node::mint::receipt::ReceiptMode,
}

impl TestCatalog {
    /// A catalog of `listings`.
    pub fn new(listings: Vec<node::listen::ListingTerms>) -> TestCatalog {
        TestCatalog {
            listings,
            hash: "ab".repeat(32),
            key: [5u8; 32],
            below_cost: None,
            receipt: node::mint::receipt::ReceiptMode::PerBuy,
        }
    }
}

/// Live, never-expiring, fee-free terms.
pub fn fixed_price(
    listing_id: &str,
    payment_address: &Pubkey,
    price_lamports: u64,
) -> node::listen::ListingTerms {
    node::listen::ListingTerms {
        listing_id: listing_id.into(),
        payment_address: payment_address.to_string(),
        price_lamports,
        currency: Default::default(),
        expires_at: i64::MAX,
        cancelled_at_slot: None,
        fee: None,
        usd: None,
    }
}

impl node::listen::pass::Catalog for TestCatalog {
    fn terms(&self, id: &str) -> Option<node::listen::ListingTerms> {
        self.listings.iter().find(|l| l.listing_id == id).cloned()
    }
    fn goods(&self, id: &str) -> Option<node::listen::release::Goods<'_>> {
        self.terms(id).map(|_| node::listen::release::Goods {
            bundle_hash: &self.hash,
            key: &self.key,
            token: node::mint::token2022::NftSpec {
                name: "brainctl bundle".into(),
                symbol: "BRNDL".into(),
                uri: "ar://meta".into(),
            },
            standard: node::mint::bundle_mint::TokenStandard::LightCompressed,
            receipt: self.receipt,
            escrow: false,
            fee_to: None,
        })
    }
    fn negotiated(&self, _: &str, _: &str) -> Vec<node::listen::NegotiatedTerms> {
        vec![] // no offer was ever accepted
    }
    fn below_cost(&self) -> Option<node::listen::pass::BelowCost> {
        self.below_cost
    }
}
