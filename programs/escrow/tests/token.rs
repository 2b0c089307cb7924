//! The sealed escrow in an SPL token (`escrow::token`) in
//! `solana-program-test` with the SPL Token, Token-2022 and ATA programs it
//! loads, natively or as the SBF build (`BRAINCTL_ESCROW_SO`), every
//! instruction built by the node's client (`node::escrow`), so what ships
//! is what runs: a trade to the base unit in both token programs, the
//! vault emptied and closed on every way out, and the hostile shapes a
//! buyer, a seller or a crank could send, each refused with its error.

use anchor_lang::AccountDeserialize;
use escrow::error::EscrowError;
use escrow::sealed::state::{SealedEscrow, SealedEscrowStatus, SealedListing};
use escrow::token::vault::TOKEN_2022_PROGRAM;
use escrow_math::blob::{seal, Blob, Sealed};
use escrow_math::client::{blind_scalar, listing_scalar, open, point_of, reveal, x25519_shared};
use node::chain::token::{TokenMint, TOKEN_PROGRAM_ID};
use node::escrow::{self as client, Terms};
use solana_program_test::{BanksClientError, ProgramTest, ProgramTestContext};
use solana_sdk::account::Account;
use solana_sdk::clock::Clock;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::Transaction;

mod common;
use common::{code, custom, Party};

const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");
const SOL: u64 = 1_000_000_000;
const ID: &str = "20261126-0123456789ab";
/// Four test dollars (6 decimals).
const PRICE: u64 = 4_000_000;
const STAKE: u64 = SOL;
const FEE_BPS: u16 = 250;
const SLASH_BPS: u16 = 5_000;
const RELEASE: i64 = 600;
const DISPUTE: i64 = 300;
const SELLER_SEED: [u8; 32] = [12; 32];
/// What the buyer's token account starts with.
const FUNDS: u64 = 10 * PRICE;

/// A mint's bytes (no extensions): an authority, the supply, decimals.
fn mint_bytes(authority: &Pubkey, supply: u64, decimals: u8) -> Vec<u8> {
    let mut d = vec![0u8; 82];
    d[..4].copy_from_slice(&1u32.to_le_bytes());
    d[4..36].copy_from_slice(authority.as_ref());
    d[36..44].copy_from_slice(&supply.to_le_bytes());
    d[44] = decimals;
    d[45] = 1;
    d
}

/// A token account's bytes (no extensions), initialized.
fn account_bytes(mint: &Pubkey, owner: &Pubkey, amount: u64) -> Vec<u8> {
    let mut d = vec![0u8; 165];
    d[..32].copy_from_slice(mint.as_ref());
    d[32..64].copy_from_slice(owner.as_ref());
    d[64..72].copy_from_slice(&amount.to_le_bytes());
    d[108] = 1;
    d
}

/// Token-2022's type-length-value extension after the base (padded to
/// 165 bytes) and the account-type byte.
fn extended(mut base: Vec<u8>, account_type: u8, ext_type: u16, value: &[u8]) -> Vec<u8> {
    base.resize(165, 0);
    base.push(account_type);
    base.extend_from_slice(&ext_type.to_le_bytes());
    base.extend_from_slice(&(value.len() as u16).to_le_bytes());
    base.extend_from_slice(value);
    base
}

/// The mint a world trades in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum MintKind {
    /// No extensions.
    Plain,
    /// A 1% transfer fee (Token-2022).
    TransferFee,
    /// A permanent delegate (Token-2022): it could move any vault's tokens.
    PermanentDelegate,
}

/// A Token-2022 mint with a permanent delegate.
fn delegate_mint_bytes(authority: &Pubkey) -> Vec<u8> {
    extended(
        mint_bytes(authority, FUNDS * 3, 6),
        1,
        12,
        authority.as_ref(),
    )
}

/// A Token-2022 mint with a 1% transfer fee (`TransferFeeConfig`).
fn fee_mint_bytes(authority: &Pubkey) -> Vec<u8> {
    let fee = |v: &mut Vec<u8>| {
        v.extend_from_slice(&0u64.to_le_bytes()); // epoch
        v.extend_from_slice(&u64::MAX.to_le_bytes()); // maximum fee
        v.extend_from_slice(&100u16.to_le_bytes()); // bps
    };
    let mut value = vec![0u8; 64 + 8]; // authorities (none), withheld
    fee(&mut value);
    fee(&mut value);
    extended(mint_bytes(authority, FUNDS, 6), 1, 1, &value)
}

struct World {
    ctx: ProgramTestContext,
    treasury: Keypair,
    seller: Party,
    buyers: Vec<Party>,
    mint: TokenMint,
    plain: Vec<u8>,
    blob: Sealed,
    nonce: u32,
}

impl World {
    /// A world whose mint (of `kind`) is under `program`; the buyers hold
    /// `FUNDS` in their associated accounts; the treasury has none (a
    /// listing creates it).
    async fn new(program: Pubkey, kind: MintKind) -> World {
        let mut pt = ProgramTest::default();
        let (admin, treasury, seller) = (Keypair::new(), Keypair::new(), Party::new(21));
        let buyers: Vec<Party> = (0..3).map(|i| Party::new(31 + i)).collect();
        for k in [&admin, &treasury, &seller.key]
            .into_iter()
            .chain(buyers.iter().map(|b| &b.key))
        {
            pt.add_account(k.pubkey(), Account::new(20 * SOL, 0, &SYSTEM));
        }
        let mint = TokenMint {
            address: Pubkey::new_unique(),
            program,
            decimals: 6,
        };
        let data = match kind {
            MintKind::Plain => mint_bytes(&admin.pubkey(), FUNDS * 3, 6),
            MintKind::TransferFee => fee_mint_bytes(&admin.pubkey()),
            MintKind::PermanentDelegate => delegate_mint_bytes(&admin.pubkey()),
        };
        let token_account = |data: Vec<u8>| Account {
            lamports: SOL / 100,
            data,
            owner: program,
            executable: false,
            rent_epoch: 0,
        };
        pt.add_account(mint.address, token_account(data));
        for b in &buyers {
            let base = account_bytes(&mint.address, &b.key.pubkey(), FUNDS);
            // an account of a fee mint carries its withheld amount
            let data = match kind {
                MintKind::TransferFee => extended(base, 2, 2, &0u64.to_le_bytes()),
                _ => base,
            };
            let at = node::chain::token::associated_account(&b.key.pubkey(), &mint);
            pt.add_account(at, token_account(data));
        }
        common::add_program_data(&mut pt, Some(&admin.pubkey()));
        let ctx = common::start(pt).await;
        let plain: Vec<u8> = (0..1000u32).map(|i| (i * 11 % 251) as u8).collect();
        let listing = client::listing_address(&seller.key.pubkey(), ID);
        let blob = seal(&listing_scalar(&SELLER_SEED, &listing.to_bytes()), &plain).unwrap();
        let mut w = World {
            ctx,
            treasury,
            seller,
            buyers,
            mint,
            plain,
            blob,
            nonce: 0,
        };
        let settings = client::NewSettings {
            treasury: w.treasury.pubkey(),
            fee_bps: FEE_BPS,
            slash_bps: SLASH_BPS,
            release_window_secs: RELEASE,
            dispute_window_secs: DISPUTE,
            min_stake: STAKE,
        };
        w.send(
            &[client::init_settings(&admin.pubkey(), &settings)],
            &[&admin],
        )
        .await
        .unwrap();
        w
    }

    async fn send(
        &mut self,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<u64, BanksClientError> {
        self.nonce += 1;
        let mut limit = vec![2u8];
        limit.extend_from_slice(&(1_400_000 - self.nonce).to_le_bytes());
        let mut all = vec![Instruction {
            program_id: solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111"),
            accounts: vec![],
            data: limit,
        }];
        all.extend_from_slice(ixs);
        let mut keys: Vec<&Keypair> = vec![&self.ctx.payer];
        keys.extend_from_slice(signers);
        let tx = Transaction::new_signed_with_payer(
            &all,
            Some(&self.ctx.payer.pubkey()),
            &keys,
            self.ctx.last_blockhash,
        );
        let r = self
            .ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await?;
        let used = r.metadata.map_or(0, |m| m.compute_units_consumed);
        r.result.map_err(BanksClientError::TransactionError)?;
        Ok(used)
    }

    async fn account(&mut self, k: &Pubkey) -> Option<Account> {
        self.ctx.banks_client.get_account(*k).await.unwrap()
    }
    async fn lamports(&mut self, k: &Pubkey) -> u64 {
        self.account(k).await.map_or(0, |a| a.lamports)
    }
    /// Base units in token account `k` (0 when it does not exist).
    async fn units(&mut self, k: &Pubkey) -> u64 {
        self.account(k).await.map_or(0, |a| {
            u64::from_le_bytes(a.data[64..72].try_into().unwrap())
        })
    }
    async fn units_of(&mut self, owner: &Pubkey) -> u64 {
        let at = node::chain::token::associated_account(owner, &self.mint);
        self.units(&at).await
    }
    async fn read<A: AccountDeserialize>(&mut self, k: &Pubkey) -> A {
        let acc = self.account(k).await.unwrap();
        A::try_deserialize(&mut acc.data.as_slice()).unwrap()
    }
    async fn advance(&mut self, secs: i64) {
        let mut clock: Clock = self.ctx.banks_client.get_sysvar().await.unwrap();
        clock.unix_timestamp += secs;
        self.ctx.set_sysvar(&clock);
    }
    async fn now(&mut self) -> i64 {
        let clock: Clock = self.ctx.banks_client.get_sysvar().await.unwrap();
        clock.unix_timestamp
    }

    fn k(&self) -> [u8; 32] {
        let listing = client::listing_address(&self.seller.key.pubkey(), ID);
        *listing_scalar(&SELLER_SEED, &listing.to_bytes())
    }

    async fn terms(&mut self, blob_root: [u8; 32]) -> Terms {
        Terms {
            price_lamports: PRICE,
            key_point: point_of(&self.k()),
            blob_root,
            plain_len: self.blob.plain_len,
            bundle_hash: escrow_math::sha256(&[&self.plain]),
            seller_x25519: self.seller.x_public(),
            expires_at: self.now().await + 86_400,
        }
    }

    /// Lists in the mint; returns the listing account.
    async fn try_list(&mut self, blob_root: [u8; 32]) -> Result<Pubkey, BanksClientError> {
        let terms = self.terms(blob_root).await;
        let seller = self.seller.key.insecure_clone();
        let treasury = self.treasury.pubkey();
        let ix = client::list_sealed_token(
            &seller.pubkey(),
            ID,
            &terms,
            STAKE,
            u32::MAX,
            &self.mint,
            &treasury,
        );
        let cu = self.send(&[ix], &[&seller]).await?;
        eprintln!("list_sealed_token ({}): {cu} CU", self.mint.program);
        Ok(client::listing_address(&seller.pubkey(), ID))
    }
    async fn list(&mut self, blob_root: [u8; 32]) -> Pubkey {
        self.try_list(blob_root).await.unwrap()
    }

    fn blind_point(&self, listing: &Pubkey, buyer: usize) -> [u8; 32] {
        let b = &self.buyers[buyer];
        let shared = x25519_shared(&b.x_secret, &self.seller.x_public()).unwrap();
        let at = client::escrow_address(listing, &b.key.pubkey());
        point_of(&blind_scalar(&shared, &at.to_bytes()))
    }

    /// `buyer`'s deposit as the node builds it (with `edit` applied).
    async fn deposit_with(
        &mut self,
        listing: Pubkey,
        buyer: usize,
        edit: impl FnOnce(&mut Instruction),
    ) -> Result<Pubkey, BanksClientError> {
        let terms = client::ListingAccount::decode(
            &escrow::ID,
            &self.account(&listing).await.unwrap().data,
        )
        .unwrap()
        .terms;
        let b = self.buyers[buyer].key.insecure_clone();
        let mut ix = client::deposit_token(
            &listing,
            &b.pubkey(),
            &terms,
            &self.blind_point(&listing, buyer),
            &self.buyers[buyer].x_public(),
            &self.mint,
        );
        edit(&mut ix);
        let cu = self.send(&[ix], &[&b]).await?;
        eprintln!("deposit_sealed_token ({}): {cu} CU", self.mint.program);
        Ok(client::escrow_address(&listing, &b.pubkey()))
    }
    async fn deposit(&mut self, listing: Pubkey, buyer: usize) -> Pubkey {
        self.deposit_with(listing, buyer, |_| {}).await.unwrap()
    }

    async fn reveal(&mut self, listing: Pubkey, escrow: Pubkey) {
        let e: SealedEscrow = self.read(&escrow).await;
        let shared = x25519_shared(&self.seller.x_secret, &e.buyer_x25519).unwrap();
        let b = blind_scalar(&shared, &escrow.to_bytes());
        let s = reveal(&self.k(), &b);
        let seller = self.seller.key.insecure_clone();
        let ix = client::reveal(&listing, &e.buyer, &seller.pubkey(), &s);
        self.send(&[ix], &[&seller]).await.unwrap();
    }

    /// The claim `listen` sends: the seller's associated account created
    /// if missing, then `claim_token` (with `edit` applied).
    async fn claim_with(
        &mut self,
        listing: Pubkey,
        buyer: usize,
        edit: impl FnOnce(&mut Instruction),
    ) -> Result<u64, BanksClientError> {
        let seller = self.seller.key.insecure_clone();
        let me = seller.pubkey();
        let buyer = self.buyers[buyer].key.pubkey();
        let treasury = self.treasury.pubkey();
        let mut ix = client::claim_token(&listing, &buyer, &me, &treasury, &self.mint);
        edit(&mut ix);
        let create = node::chain::token::create_associated_account(&me, &me, &self.mint);
        self.send(&[create, ix], &[&seller]).await
    }

    async fn refund(&mut self, listing: Pubkey, buyer: usize) -> Result<u64, BanksClientError> {
        let b = self.buyers[buyer].key.insecure_clone();
        let ix = client::refund_token(&listing, &b.pubkey(), &self.mint);
        let cu = self.send(&[ix], &[&b]).await?;
        eprintln!("refund_sealed_token ({}): {cu} CU", self.mint.program);
        Ok(cu)
    }

    fn vault(&self, listing: &Pubkey, buyer: usize) -> Pubkey {
        client::vault_address(listing, &self.buyers[buyer].key.pubkey(), &self.mint)
    }
    fn buyer(&self, buyer: usize) -> Pubkey {
        self.buyers[buyer].key.pubkey()
    }
}

/// A whole trade in `program`'s mint: listed, deposited into the vault,
/// revealed, claimed after the window to the seller and the treasury,
/// the vault and the escrow closed to the buyer; what a buyer, a seller
/// or a crank could send instead is refused.
async fn trade_in(program: Pubkey) {
    let mut w = World::new(program, MintKind::Plain).await;
    let root = w.blob.root;
    let listing = w.list(root).await;
    let l: SealedListing = w.read(&listing).await;
    assert_eq!(l.mint, w.mint.address, "the listing records its mint");

    // a deposit in lamports on a listing in a token is refused
    let b0 = w.buyers[0].key.insecure_clone();
    let lamport_deposit = client::deposit(
        &listing,
        &b0.pubkey(),
        &client::ListingAccount::decode(&escrow::ID, &w.account(&listing).await.unwrap().data)
            .unwrap()
            .terms,
        &w.blind_point(&listing, 0),
        &w.buyers[0].x_public(),
    );
    assert_eq!(
        custom(w.send(&[lamport_deposit], &[&b0]).await),
        code(EscrowError::ListingInToken)
    );
    // another mint, another vault, or the token program of another mint
    let other_mint = Pubkey::new_unique();
    let refusals: [(usize, Pubkey, EscrowError); 3] = [
        (4, other_mint, EscrowError::WrongMint),
        (6, Pubkey::new_unique(), EscrowError::WrongVault),
        (
            7,
            if program == TOKEN_PROGRAM_ID {
                TOKEN_2022_PROGRAM
            } else {
                TOKEN_PROGRAM_ID
            },
            // the vault derives from the token program too
            EscrowError::WrongVault,
        ),
    ];
    for (at, key, want) in refusals {
        let res = w
            .deposit_with(listing, 0, |ix| ix.accounts[at].pubkey = key)
            .await;
        assert_eq!(custom(res), code(want), "account {at} replaced");
    }

    let lamports0 = w.lamports(&w.buyer(0)).await;
    let escrow = w.deposit(listing, 0).await;
    let vault = w.vault(&listing, 0);
    assert_eq!(w.units_of(&w.buyer(0)).await, FUNDS - PRICE);
    assert_eq!(w.units(&vault).await, PRICE, "the vault holds the price");
    let e: SealedEscrow = w.read(&escrow).await;
    assert_eq!((e.amount, e.status), (PRICE, SealedEscrowStatus::Deposited));
    let rents = lamports0 - w.lamports(&w.buyer(0)).await;
    assert!(
        rents > 0,
        "the buyer pays the escrow's and the vault's rent"
    );

    w.reveal(listing, escrow).await;
    // the buyer opens the key from the reveal
    let e: SealedEscrow = w.read(&escrow).await;
    let shared = x25519_shared(&w.buyers[0].x_secret, &w.seller.x_public()).unwrap();
    let b = blind_scalar(&shared, &escrow.to_bytes());
    let k = open(&e.revealed, &b, &point_of(&w.k())).unwrap();
    let bundle_hash = escrow_math::sha256(&[&w.plain]);
    assert_eq!(
        Blob::parse(&w.blob.bytes)
            .unwrap()
            .open(&k, &bundle_hash)
            .unwrap(),
        w.plain
    );

    assert_eq!(
        custom(w.claim_with(listing, 0, |_| {}).await),
        code(EscrowError::DisputeWindowOpen)
    );
    w.advance(DISPUTE).await;
    // the lamport claim, a seller account that is not the seller's, a
    // treasury account that is not the treasury's
    let seller = w.seller.key.pubkey();
    let lamport_claim = client::claim(&listing, &w.buyer(0), &seller, &w.treasury.pubkey());
    assert_eq!(
        custom(w.send(&[lamport_claim], &[]).await),
        code(EscrowError::ListingInToken)
    );
    let buyers_account = node::chain::token::associated_account(&w.buyer(0), &w.mint);
    assert_eq!(
        custom(
            w.claim_with(listing, 0, |ix| ix.accounts[6].pubkey = buyers_account)
                .await
        ),
        code(EscrowError::WrongSellerAccount)
    );
    let sellers_account = node::chain::token::associated_account(&seller, &w.mint);
    assert_eq!(
        custom(
            w.claim_with(listing, 0, |ix| ix.accounts[7].pubkey = sellers_account)
                .await
        ),
        code(EscrowError::WrongTreasury)
    );
    let cu = w.claim_with(listing, 0, |_| {}).await.unwrap();
    let fee = (PRICE * FEE_BPS as u64).div_ceil(10_000);
    assert_eq!(w.units_of(&seller).await, PRICE - fee);
    assert_eq!(w.units_of(&w.treasury.pubkey()).await, fee);
    assert_eq!(w.units(&vault).await, 0);
    eprintln!("claim_token ({program}): {cu} CU");
    let e: SealedEscrow = w.read(&escrow).await;
    assert_eq!(e.status, SealedEscrowStatus::Claimed);
    assert!(
        w.claim_with(listing, 0, |_| {}).await.is_err(),
        "a claim never repeats"
    );
    // the buyer closes the vault and the escrow for their rent, even once
    // the mint is gone (a mint with a close authority closes once its
    // supply is zero; here it is removed): an empty vault closes without
    // reading it
    let before = w.lamports(&w.buyer(0)).await;
    let mint = w.mint.address;
    let mint_account = w.account(&mint).await.expect("the mint");
    w.ctx.set_account(&mint, &Account::default().into());
    assert!(w.account(&mint).await.is_none());
    w.refund(listing, 0).await.unwrap();
    w.ctx.set_account(&mint, &mint_account.into());
    assert_eq!(w.lamports(&w.buyer(0)).await, before + rents);
    assert!(w.account(&vault).await.is_none() && w.account(&escrow).await.is_none());
    assert_eq!(w.units_of(&w.buyer(0)).await, FUNDS - PRICE);
}

#[tokio::test]
async fn a_trade_in_spl_token_pays_from_the_vault_once() {
    trade_in(TOKEN_PROGRAM_ID).await;
}

#[tokio::test]
async fn a_trade_in_token_2022_pays_from_the_vault_once() {
    trade_in(TOKEN_2022_PROGRAM).await;
}

/// Every way a deposit comes back: declined (all of it, and tokens sent to
/// the vault by anyone besides), never revealed (all of it and the stake
/// share, in lamports), revealed on a lying blob (a fraud proof).
#[tokio::test]
async fn a_token_deposit_comes_back_whole_on_every_way_out() {
    let mut w = World::new(TOKEN_PROGRAM_ID, MintKind::Plain).await;
    // the seller commits to a blob whose chunk 2 lies
    let mut lying = w.blob.bytes.clone();
    let at = Blob::parse(&lying).unwrap().cipher_offset();
    lying[at + 2 * 256 + 9] ^= 0x40;
    let root = Blob::parse(&lying).unwrap().root();
    let listing = w.list(root).await;

    // declined, with a stranger's tokens in the vault: all returned
    let escrow = w.deposit(listing, 0).await;
    let vault = w.vault(&listing, 0);
    let b1 = w.buyers[1].key.insecure_clone();
    let gift = node::chain::token::transfer_to(&b1.pubkey(), &escrow, &w.mint, 7);
    w.send(&[gift], &[&b1]).await.unwrap();
    assert_eq!(w.units(&vault).await, PRICE + 7);
    let seller = w.seller.key.insecure_clone();
    let decline = client::decline(&listing, &w.buyer(0), &seller.pubkey());
    w.send(&[decline], &[&seller]).await.unwrap();
    w.refund(listing, 0).await.unwrap();
    assert_eq!(w.units_of(&w.buyer(0)).await, FUNDS + 7);
    assert!(w.account(&vault).await.is_none() && w.account(&escrow).await.is_none());

    // buyer 1 deposits and is never revealed to; buyer 2 is revealed to
    w.deposit(listing, 1).await;
    assert_eq!(
        custom(w.refund(listing, 1).await),
        code(EscrowError::ReleaseWindowOpen)
    );
    // the lamport refund of a token escrow is refused
    let lamport_refund = client::refund(&listing, &b1.pubkey());
    assert_eq!(
        custom(w.send(&[lamport_refund], &[&b1]).await),
        code(EscrowError::ListingInToken)
    );
    let escrow = w.deposit(listing, 2).await;
    w.reveal(listing, escrow).await;

    // revealed on the lying blob: the fraud proof returns the deposit
    let e: SealedEscrow = w.read(&escrow).await;
    let shared = x25519_shared(&w.buyers[2].x_secret, &w.seller.x_public()).unwrap();
    let b = blind_scalar(&shared, &escrow.to_bytes());
    let k = open(&e.revealed, &b, &point_of(&w.k())).unwrap();
    // the proof the buyer's client builds (a step proof: a v2 blob), and
    // the same shape at an honest chunk
    let bundle_hash = escrow_math::sha256(&[&w.plain]);
    let proof = node::market::escrow_trade::fraud_proof(&lying, &k, &bundle_hash).unwrap();
    assert_eq!((proof.kind(), proof.index()), ("step", 2));
    let blob = Blob::parse(&lying).unwrap();
    let p = blob.step_parts(1);
    let honest = client::FraudProof::Step {
        k: *k,
        index: 1,
        cipher: p.cipher.to_vec(),
        plain_hash: p.plain_hash,
        states: (p.before, p.after),
        path: p.path,
        tallies: p.tallies,
    };
    let b2 = w.buyers[2].key.insecure_clone();
    let no_fraud = client::dispute_token(&listing, &b2.pubkey(), &honest);
    assert_eq!(
        custom(w.send(&[no_fraud], &[&b2]).await),
        code(EscrowError::NoFraud)
    );
    // the mint's freeze authority freezes the vault through the dispute
    // window: the proof still convicts (no token moves), the escrow holds
    // the share, the seller's claim is refused after the window, and the
    // buyer withdraws once the vault is thawed
    let vault2 = w.vault(&listing, 2);
    let thawed = w.account(&vault2).await.expect("the vault");
    let mut frozen = thawed.clone();
    frozen.data[108] = 2;
    w.ctx.set_account(&vault2, &frozen.into());
    let escrow_before = w.lamports(&escrow).await;
    let dispute = client::dispute_token(&listing, &b2.pubkey(), &proof);
    let cu = w.send(&[dispute], &[&b2]).await.unwrap();
    eprintln!("dispute_step_token: {cu} CU");
    let slash = STAKE * SLASH_BPS as u64 / 10_000;
    let e: SealedEscrow = w.read(&escrow).await;
    assert_eq!(e.status, SealedEscrowStatus::Expired);
    assert_eq!(w.lamports(&escrow).await, escrow_before + slash);
    assert_eq!(w.units(&vault2).await, PRICE, "no token moved");
    let l: SealedListing = w.read(&listing).await;
    assert_eq!(
        l.status,
        escrow::sealed::state::SealedListingStatus::Convicted
    );
    assert!(
        w.refund(listing, 2).await.is_err(),
        "a frozen vault delays the withdrawal"
    );
    w.advance(DISPUTE).await;
    assert!(
        w.claim_with(listing, 2, |_| {}).await.is_err(),
        "a convicted escrow is never claimed, frozen or not"
    );
    w.ctx.set_account(&vault2, &thawed.into());
    let before = w.lamports(&w.buyer(2)).await;
    w.refund(listing, 2).await.unwrap();
    assert_eq!(w.units_of(&w.buyer(2)).await, FUNDS);
    assert!(w.lamports(&w.buyer(2)).await > before + slash);
    assert!(w.account(&vault2).await.is_none() && w.account(&escrow).await.is_none());

    // never revealed: after the window and its grace, anyone expires it
    // (the share moves into the escrow; the vault is not touched), and
    // the buyer takes the deposit and the share
    w.advance(RELEASE + escrow::constants::REVEAL_GRACE_SECS)
        .await;
    let escrow1 = client::escrow_address(&listing, &w.buyer(1));
    let before_escrow = w.lamports(&escrow1).await;
    let expire = client::expire(&listing, &w.buyer(1));
    w.send(&[expire], &[]).await.unwrap();
    assert_eq!(w.lamports(&escrow1).await, before_escrow + slash);
    assert_eq!(w.units(&w.vault(&listing, 1)).await, PRICE);
    let before = w.lamports(&w.buyer(1)).await;
    w.refund(listing, 1).await.unwrap();
    assert_eq!(w.units_of(&w.buyer(1)).await, FUNDS - 7);
    assert!(w.lamports(&w.buyer(1)).await > before + slash);
    assert!(w.account(&w.vault(&listing, 1)).await.is_none());
    let l: SealedListing = w.read(&listing).await;
    assert_eq!(l.open_escrows, 0);
    assert_eq!(
        l.status,
        escrow::sealed::state::SealedListingStatus::Convicted
    );
}

/// The listing creates the treasury's account of the mint; while it is
/// frozen the claim fails (a freeze never waives the fee),
/// and once thawed the claim pays the seller and the fee. A mint with an extension that could move, freeze, tax or
/// block a vault (a transfer fee, a permanent delegate) is refused at
/// listing, and at every deposit (a mint made again with one since takes
/// no deposit); a lamport listing takes no token
/// deposit; a "mint" that is none cannot be listed.
#[tokio::test]
async fn only_mints_that_cannot_touch_a_vault_are_listed_and_no_fee_blocks_a_claim() {
    let mut w = World::new(TOKEN_PROGRAM_ID, MintKind::Plain).await;
    let root = w.blob.root;
    let listing = w.list(root).await;
    let treasury_account = node::chain::token::associated_account(&w.treasury.pubkey(), &w.mint);
    let mut frozen = w
        .account(&treasury_account)
        .await
        .expect("the listing created the treasury's account");
    let mut thawed = frozen.clone();
    frozen.data[108] = 2;
    w.ctx.set_account(&treasury_account, &frozen.into());
    let escrow = w.deposit(listing, 0).await;
    w.reveal(listing, escrow).await;
    w.advance(DISPUTE).await;
    assert_eq!(
        custom(w.claim_with(listing, 0, |_| {}).await),
        code(EscrowError::TreasuryFrozen)
    );
    let seller = w.seller.key.pubkey();
    assert_eq!(w.units_of(&seller).await, 0, "nothing paid while frozen");
    thawed.data[108] = 1;
    w.ctx.set_account(&treasury_account, &thawed.into());
    w.claim_with(listing, 0, |_| {}).await.unwrap();
    let fee = (PRICE * u64::from(FEE_BPS)).div_ceil(10_000);
    assert_eq!(w.units_of(&seller).await, PRICE - fee);
    assert_eq!(
        w.units_of(&w.treasury.pubkey()).await,
        fee,
        "the fee stayed owed"
    );

    for kind in [MintKind::TransferFee, MintKind::PermanentDelegate] {
        let mut w = World::new(TOKEN_2022_PROGRAM, kind).await;
        let root = w.blob.root;
        assert_eq!(
            custom(w.try_list(root).await),
            code(EscrowError::MintExtension),
            "{kind:?}"
        );
    }
    // a mint the listing did not see (its bytes swapped in after, as a
    // mint closed by its close authority and made again at the same
    // address would be): a transfer fee, a permanent delegate that could
    // pull the vault. The extensions are checked at every deposit, and
    // nothing moves
    for kind in [MintKind::TransferFee, MintKind::PermanentDelegate] {
        let mut w = World::new(TOKEN_2022_PROGRAM, kind).await;
        let mint = w.mint.address;
        let extended = w.account(&mint).await.unwrap();
        let mut plain = extended.clone();
        plain.data = mint_bytes(&Pubkey::new_unique(), FUNDS * 3, 6);
        w.ctx.set_account(&mint, &plain.into());
        let root = w.blob.root;
        let listing = w.list(root).await;
        w.ctx.set_account(&mint, &extended.into());
        assert_eq!(
            custom(w.deposit_with(listing, 0, |_| {}).await),
            code(EscrowError::MintExtension),
            "{kind:?}"
        );
        assert_eq!(w.units_of(&w.buyer(0)).await, FUNDS, "nothing moved");
    }

    // a lamport listing refuses the token instructions
    let mut w = World::new(TOKEN_PROGRAM_ID, MintKind::Plain).await;
    let terms = w.terms(w.blob.root).await;
    let seller = w.seller.key.insecure_clone();
    let ix = client::list_sealed(&seller.pubkey(), ID, &terms, STAKE, u32::MAX);
    w.send(&[ix], &[&seller]).await.unwrap();
    let listing = client::listing_address(&seller.pubkey(), ID);
    let res = w
        .deposit_with(listing, 0, |ix| {
            // the listing's mint is the default key: pass that
            ix.accounts[4].pubkey = Pubkey::default();
        })
        .await;
    assert_eq!(custom(res), code(EscrowError::ListingInLamports));
    // a "mint" that is no mint cannot be listed
    let id2 = "20261126-0123456789ac";
    let not_a_mint = w.buyer(1);
    let not_a_mint = TokenMint {
        address: not_a_mint,
        program: SYSTEM, // its owner
        decimals: 6,
    };
    let treasury = w.treasury.pubkey();
    let ix = client::list_sealed_token(
        &seller.pubkey(),
        id2,
        &terms,
        STAKE,
        u32::MAX,
        &not_a_mint,
        &treasury,
    );
    assert_eq!(
        custom(w.send(&[ix], &[&seller]).await),
        code(EscrowError::NotAMint)
    );
}

/// The largest token disputes the buyer's client sends, at the deepest
/// tree the node accepts (227 chunks of a v3 blob: depth 8): a step
/// proof at a full chunk and the link proof with the longest paths (at
/// 127: 8 + 7 hashes), of the hash chain and of the memory tallies, each built by the node's own `fraud_proof` from the lying
/// blob, convicting on the SBF build; the transaction the node sends
/// (the buyer signs and pays alone, a compute-unit limit and price, the
/// dispute) fits 1,232 bytes. Prints compute units and bytes.
#[tokio::test]
async fn the_deepest_token_proofs_fit_one_transaction_and_convict() {
    use escrow_math::midstate::{chain, mask, xor, Side};
    let len = 227 * 256 - 50;
    let promised: Vec<u8> = (0..len as u32).map(|i| (i * 13 % 241) as u8).collect();
    // (name, chunk whose committed states are another chain's, the expected proof)
    for (name, forged_at, want) in [
        ("step", 115usize, ("step", 115u32)),
        ("link", 128, ("link", 127)),
        ("count", 128, ("link", 127)),
    ] {
        let mut w = World::new(TOKEN_PROGRAM_ID, MintKind::Plain).await;
        let k = w.k();
        // step: chunk 115 ships another byte under the promised chain's
        // states; link: chunk 128's states come from another chain
        let mut shipped = promised.clone();
        let mut states_of = promised.clone();
        if name == "step" {
            shipped[forged_at * 256 + 3] ^= 1;
        } else {
            states_of[..forged_at * 256].fill(0xee);
        }
        let mut bytes = escrow_math::blob::seal(&k, &shipped).unwrap().bytes;
        let record = escrow_math::blob::Format::V3.record_len();
        let (before, after) = chain(&states_of).nth(forged_at).unwrap();
        let at = escrow_math::blob::HEADER_LEN + forged_at * record + 32;
        let i = forged_at as u32;
        if name == "count" {
            // chunk 128 on states 2 more memories than the bytes hold
            bytes = escrow_math::forgery::overstate_memories(&k, &shipped, i, 2, true).bytes;
        } else {
            bytes[at..at + 32].copy_from_slice(&xor(&before, &mask(&k, i, Side::Before)));
            bytes[at + 32..at + 64].copy_from_slice(&xor(&after, &mask(&k, i, Side::After)));
        }
        assert!(bytes.len() <= 81_920);
        let root = Blob::parse(&bytes).unwrap().root();
        w.plain = promised.clone();
        w.blob = Sealed {
            bytes: bytes.clone(),
            root,
            plain_len: len as u64,
        };
        let listing = w.list(root).await;
        let escrow = w.deposit(listing, 0).await;
        w.reveal(listing, escrow).await;
        let e: SealedEscrow = w.read(&escrow).await;
        let shared = x25519_shared(&w.buyers[0].x_secret, &w.seller.x_public()).unwrap();
        let b = blind_scalar(&shared, &escrow.to_bytes());
        let opened = open(&e.revealed, &b, &point_of(&k)).unwrap();
        let proof = node::market::escrow_trade::fraud_proof(
            &bytes,
            &opened,
            &escrow_math::sha256(&[&promised]),
        )
        .unwrap();
        assert_eq!((proof.kind(), proof.index()), want, "{name}");
        let b0 = w.buyers[0].key.insecure_clone();
        let ix =
            node::market::escrow_trade::dispute_instruction(&b0.pubkey(), &listing, &proof, true);
        // what the node sends: the buyer alone, a compute-unit limit and price
        let size = common::buyer_tx_len(ix.clone(), &b0);
        assert!(size <= 1232, "{name}: {size} bytes");
        let cu = w.send(&[ix], &[&b0]).await.unwrap();
        eprintln!(
            "dispute_{name}_token at depth 8, chunk {}: {cu} CU, {size} bytes",
            want.1
        );
        assert!(cu < 200_000, "{name}: {cu} CU");
        // convicted without a token moving; the withdrawal returns it
        assert_eq!(w.units_of(&w.buyer(0)).await, FUNDS - PRICE);
        w.refund(listing, 0).await.unwrap();
        assert_eq!(w.units_of(&w.buyer(0)).await, FUNDS);
        let l: SealedListing = w.read(&listing).await;
        assert_eq!(
            l.status,
            escrow::sealed::state::SealedListingStatus::Convicted
        );
    }
}
