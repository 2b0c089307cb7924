//! The sealed escrow (`escrow::sealed`) in `solana-program-test`, natively
//! or as its SBF build (`BRAINCTL_ESCROW_SO`): a whole trade to the
//! lamport with the buyer opening the blob from the revealed scalar, and
//! every attack of the outside review that the first-generation
//! instructions let through, each refused here. Compute units per
//! instruction are printed (`--nocapture`) and bounded.

use anchor_lang::{AccountDeserialize, InstructionData, ToAccountMetas};
use escrow::error::EscrowError;
use escrow::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, SealedTerms,
};
use escrow::sealed::{FraudProof, LeafFields, LinkFraud, SettingsArgs, StepFraud};
use escrow_math::blob::{seal, seal_v1, Blob, BlobError, Sealed};
use escrow_math::client::{blind_scalar, listing_scalar, open, point_of, reveal, x25519_shared};
use escrow_math::forgery::overstate_memories;
mod common;
use common::{code, custom, Party};

use solana_program_test::{BanksClientError, ProgramTest, ProgramTestContext};
use solana_sdk::account::Account;
use solana_sdk::clock::Clock;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::rent::Rent;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::Transaction;
use std::collections::BTreeMap;

const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");
const SOL: u64 = 1_000_000_000;
const ID: &str = "20261125-0123456789ab";
const PRICE: u64 = 2 * SOL;
const STAKE: u64 = SOL;
const FEE_BPS: u16 = 250;
const SLASH_BPS: u16 = 5_000;
const RELEASE: i64 = 600;
const DISPUTE: i64 = 300;
const GRACE: i64 = escrow::constants::REVEAL_GRACE_SECS;
const SELLER_SEED: [u8; 32] = [11; 32];

fn settings_pda() -> Pubkey {
    Pubkey::find_program_address(&[b"settings"], &escrow::ID).0
}
fn listing_pda(seller: &Pubkey, id: &str) -> Pubkey {
    Pubkey::find_program_address(
        &[b"sealed-listing", seller.as_ref(), id.as_bytes()],
        &escrow::ID,
    )
    .0
}
fn escrow_pda(listing: &Pubkey, buyer: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(
        &[b"sealed-escrow", listing.as_ref(), buyer.as_ref()],
        &escrow::ID,
    )
    .0
}
fn x25519_of(secret: &[u8; 32]) -> [u8; 32] {
    curve25519_dalek::MontgomeryPoint::mul_base_clamped(*secret).to_bytes()
}

struct T {
    ctx: ProgramTestContext,
    admin: Keypair,
    treasury: Keypair,
    seller: Party,
    nonce: u32,
    cu: BTreeMap<&'static str, u64>,
    plain: Vec<u8>,
    blob: Sealed,
}

impl T {
    async fn new(extra: &[&Keypair]) -> T {
        let mut pt = ProgramTest::default();
        let (admin, treasury, seller) = (Keypair::new(), Keypair::new(), Party::new(21));
        for k in [&admin, &treasury, &seller.key]
            .into_iter()
            .chain(extra.iter().copied())
        {
            pt.add_account(k.pubkey(), Account::new(20 * SOL, 0, &SYSTEM));
        }
        common::add_program_data(&mut pt, Some(&admin.pubkey()));
        let ctx = common::start(pt).await;
        let plain: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let k = listing_scalar(
            &SELLER_SEED,
            &listing_pda(&seller.key.pubkey(), ID).to_bytes(),
        );
        let blob = seal(&k, &plain).unwrap();
        T {
            ctx,
            admin,
            treasury,
            seller,
            nonce: 0,
            cu: BTreeMap::new(),
            plain,
            blob,
        }
    }

    async fn send(
        &mut self,
        name: &'static str,
        ix: Instruction,
        signers: &[&Keypair],
    ) -> Result<(), BanksClientError> {
        self.nonce += 1;
        let mut limit = vec![2u8];
        limit.extend_from_slice(&(1_400_000 - self.nonce).to_le_bytes());
        let unique = Instruction {
            program_id: solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111"),
            accounts: vec![],
            data: limit,
        };
        let mut all: Vec<&Keypair> = vec![&self.ctx.payer];
        all.extend_from_slice(signers);
        let tx = Transaction::new_signed_with_payer(
            &[unique, ix],
            Some(&self.ctx.payer.pubkey()),
            &all,
            self.ctx.last_blockhash,
        );
        let size = bincode_len(&tx);
        assert!(
            size <= 1232,
            "{name}: {size} bytes do not fit a transaction"
        );
        let r = self
            .ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await?;
        // failed calls count too: a refused proof runs the whole check
        let used = r.metadata.map_or(0, |m| m.compute_units_consumed);
        let slot = self.cu.entry(name).or_default();
        *slot = (*slot).max(used);
        r.result.map_err(BanksClientError::TransactionError)
    }

    async fn lamports(&mut self, k: &Pubkey) -> u64 {
        self.ctx
            .banks_client
            .get_account(*k)
            .await
            .unwrap()
            .map_or(0, |a| a.lamports)
    }
    async fn rent(&mut self, space: usize) -> u64 {
        let rent: Rent = self.ctx.banks_client.get_sysvar().await.unwrap();
        rent.minimum_balance(space)
    }
    async fn read<A: AccountDeserialize>(&mut self, k: &Pubkey) -> A {
        let acc = self
            .ctx
            .banks_client
            .get_account(*k)
            .await
            .unwrap()
            .unwrap();
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
    fn ix(accounts: impl ToAccountMetas, data: impl InstructionData) -> Instruction {
        Instruction {
            program_id: escrow::ID,
            accounts: accounts.to_account_metas(None),
            data: data.data(),
        }
    }

    /// The listing's scalar, as the seller derives it.
    fn k(&self) -> [u8; 32] {
        *listing_scalar(
            &SELLER_SEED,
            &listing_pda(&self.seller.key.pubkey(), ID).to_bytes(),
        )
    }

    fn args() -> SettingsArgs {
        SettingsArgs {
            fee_bps: FEE_BPS,
            slash_bps: SLASH_BPS,
            release_window_secs: RELEASE,
            dispute_window_secs: DISPUTE,
            min_stake: STAKE,
        }
    }
    async fn init_settings(
        &mut self,
        args: SettingsArgs,
        treasury: Pubkey,
    ) -> Result<(), BanksClientError> {
        let admin = self.admin.insecure_clone();
        let ix = Self::ix(
            escrow::accounts::InitSettings {
                settings: settings_pda(),
                treasury,
                admin: admin.pubkey(),
                program_data: common::program_data_address(),
                system_program: SYSTEM,
            },
            escrow::instruction::InitSettings { args },
        );
        self.send("init_settings", ix, &[&admin]).await
    }
    async fn ready_with(extra: &[&Keypair]) -> T {
        let mut t = T::new(extra).await;
        let treasury = t.treasury.pubkey();
        t.init_settings(T::args(), treasury).await.unwrap();
        t
    }

    async fn terms(&mut self) -> SealedTerms {
        SealedTerms {
            price_lamports: PRICE,
            key_point: point_of(&self.k()),
            blob_root: self.blob.root,
            plain_len: self.blob.plain_len,
            bundle_hash: escrow_math::sha256(&[&self.plain]),
            seller_x25519: self.seller.x_public(),
            expires_at: self.now().await + 86_400,
        }
    }
    async fn list(
        &mut self,
        id: &str,
        terms: SealedTerms,
        stake: u64,
    ) -> Result<Pubkey, BanksClientError> {
        self.list_capped(id, terms, stake, u32::MAX).await
    }
    async fn list_capped(
        &mut self,
        id: &str,
        terms: SealedTerms,
        stake: u64,
        max_open: u32,
    ) -> Result<Pubkey, BanksClientError> {
        let seller = self.seller.key.insecure_clone();
        let listing = listing_pda(&seller.pubkey(), id);
        let ix = Self::ix(
            escrow::accounts::ListSealed {
                settings: settings_pda(),
                listing,
                seller: seller.pubkey(),
                system_program: SYSTEM,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::ListSealed {
                listing_id: id.into(),
                terms,
                stake,
                max_open,
            },
        );
        self.send("list_sealed", ix, &[&seller])
            .await
            .map(|_| listing)
    }
    /// The blinding b of `buyer`'s escrow on `listing`, as the buyer derives it.
    fn blinding(&self, listing: &Pubkey, buyer: &Party) -> [u8; 32] {
        let shared = x25519_shared(&buyer.x_secret, &self.seller.x_public()).unwrap();
        *blind_scalar(
            &shared,
            &escrow_pda(listing, &buyer.key.pubkey()).to_bytes(),
        )
    }
    /// The same b, as the seller derives it from the escrow's X25519 key.
    fn seller_blinding(&self, listing: &Pubkey, buyer: &Pubkey, buyer_x: &[u8; 32]) -> [u8; 32] {
        let shared = x25519_shared(&self.seller.x_secret, buyer_x).unwrap();
        *blind_scalar(&shared, &escrow_pda(listing, buyer).to_bytes())
    }
    async fn deposit_with(
        &mut self,
        listing: Pubkey,
        buyer: &Party,
        terms: SealedTerms,
        blind_point: [u8; 32],
        buyer_x: [u8; 32],
    ) -> Result<Pubkey, BanksClientError> {
        let escrow = escrow_pda(&listing, &buyer.key.pubkey());
        let ix = Self::ix(
            escrow::accounts::DepositSealed {
                settings: settings_pda(),
                listing,
                escrow,
                buyer: buyer.key.pubkey(),
                system_program: SYSTEM,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::DepositSealed {
                terms,
                blind_point,
                buyer_x25519: buyer_x,
            },
        );
        self.send("deposit_sealed", ix, &[&buyer.key])
            .await
            .map(|_| escrow)
    }
    async fn deposit(
        &mut self,
        listing: Pubkey,
        buyer: &Party,
    ) -> Result<Pubkey, BanksClientError> {
        let terms = self.read::<SealedListing>(&listing).await.terms;
        let b = self.blinding(&listing, buyer);
        self.deposit_with(listing, buyer, terms, point_of(&b), buyer.x_public())
            .await
    }
    async fn reveal_as(
        &mut self,
        signer: &Keypair,
        listing: Pubkey,
        escrow: Pubkey,
        s: [u8; 32],
    ) -> Result<(), BanksClientError> {
        let ix = Self::ix(
            escrow::accounts::Reveal {
                settings: settings_pda(),
                listing,
                escrow,
                seller: signer.pubkey(),
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::Reveal { revealed: s },
        );
        self.send("reveal", ix, &[signer]).await
    }
    /// What the seller's daemon reveals for `escrow`: k + b, b from the escrow's keys.
    async fn honest_s(&mut self, listing: Pubkey, escrow: Pubkey) -> [u8; 32] {
        let e: SealedEscrow = self.read(&escrow).await;
        let b = self.seller_blinding(&listing, &e.buyer, &e.buyer_x25519);
        reveal(&self.k(), &b)
    }
    async fn reveal(&mut self, listing: Pubkey, escrow: Pubkey) -> Result<(), BanksClientError> {
        let s = self.honest_s(listing, escrow).await;
        let seller = self.seller.key.insecure_clone();
        self.reveal_as(&seller, listing, escrow, s).await
    }
    async fn decline(&mut self, listing: Pubkey, escrow: Pubkey) -> Result<(), BanksClientError> {
        let seller = self.seller.key.insecure_clone();
        let ix = Self::ix(
            escrow::accounts::Decline {
                settings: settings_pda(),
                listing,
                escrow,
                seller: seller.pubkey(),
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::Decline {},
        );
        self.send("decline", ix, &[&seller]).await
    }
    async fn claim(
        &mut self,
        listing: Pubkey,
        escrow: Pubkey,
        treasury: Pubkey,
    ) -> Result<(), BanksClientError> {
        let ix = Self::ix(
            escrow::accounts::Claim {
                settings: settings_pda(),
                listing,
                escrow,
                seller: self.seller.key.pubkey(),
                treasury,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::Claim {},
        );
        self.send("claim", ix, &[]).await
    }
    async fn refund(&mut self, listing: Pubkey, buyer: &Keypair) -> Result<(), BanksClientError> {
        let ix = Self::ix(
            escrow::accounts::RefundSealed {
                settings: settings_pda(),
                listing,
                escrow: escrow_pda(&listing, &buyer.pubkey()),
                buyer: buyer.pubkey(),
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::RefundSealed {},
        );
        self.send("refund_sealed", ix, &[buyer]).await
    }
    async fn dispute(
        &mut self,
        listing: Pubkey,
        buyer: &Keypair,
        proof: FraudProof,
    ) -> Result<(), BanksClientError> {
        let ix = Self::dispute_ix(listing, buyer, escrow::instruction::Dispute { proof });
        self.send("dispute", ix, &[buyer]).await
    }
    fn dispute_ix(listing: Pubkey, buyer: &Keypair, data: impl InstructionData) -> Instruction {
        Self::ix(
            escrow::accounts::Dispute {
                settings: settings_pda(),
                listing,
                escrow: escrow_pda(&listing, &buyer.pubkey()),
                buyer: buyer.pubkey(),
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            data,
        )
    }
    /// `dispute_step` or `dispute_link` with `proof`.
    async fn dispute_v2(
        &mut self,
        listing: Pubkey,
        buyer: &Keypair,
        proof: V2Proof,
    ) -> Result<(), BanksClientError> {
        let (name, ix) = proof.ix(listing, buyer);
        self.send(name, ix, &[buyer]).await
    }
    /// `expire`, sent by nobody in particular (the payer signs alone).
    async fn expire(&mut self, listing: Pubkey, escrow: Pubkey) -> Result<(), BanksClientError> {
        let ix = Self::ix(
            escrow::accounts::Expire {
                settings: settings_pda(),
                listing,
                escrow,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::Expire {},
        );
        self.send("expire", ix, &[]).await
    }
    async fn retire(&mut self, listing: Pubkey) -> Result<(), BanksClientError> {
        let seller = self.seller.key.insecure_clone();
        let ix = Self::ix(
            escrow::accounts::RetireSealed {
                listing,
                seller: seller.pubkey(),
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            escrow::instruction::RetireSealed {},
        );
        self.send("retire_sealed", ix, &[&seller]).await
    }
    /// The buyer's k from the revealed s (checked against K).
    async fn opened_k(&mut self, listing: Pubkey, buyer: &Party) -> [u8; 32] {
        let e: SealedEscrow = self.read(&escrow_pda(&listing, &buyer.key.pubkey())).await;
        assert_eq!(e.status, SealedEscrowStatus::Revealed);
        let l: SealedListing = self.read(&listing).await;
        *open(
            &e.revealed,
            &self.blinding(&listing, buyer),
            &l.terms.key_point,
        )
        .unwrap()
    }
    /// The v2 proof the buyer's client builds for what opening `blob`
    /// under `k` names, with the promised `bundle_hash`.
    fn v2_proof(blob: &[u8], k: [u8; 32], bundle_hash: &[u8; 32]) -> Option<V2Proof> {
        match Blob::parse(blob).unwrap().open(&k, bundle_hash) {
            Ok(_) => None,
            Err(BlobError::Misdelivery { index }) => Some(V2Proof::step(blob, k, index)),
            Err(BlobError::BrokenLink { index }) => Some(V2Proof::link(blob, k, index)),
            Err(e) => panic!("{e}"),
        }
    }
    fn proof(blob: &[u8], k: [u8; 32], index: u32) -> FraudProof {
        let blob = Blob::parse(blob).unwrap();
        let (cipher, plain_hash, path) = blob.proof_parts(index);
        FraudProof {
            k,
            index,
            cipher: cipher.to_vec(),
            plain_hash,
            path,
        }
    }
}

/// A v2 blob's proof, as the program takes it.
#[derive(Clone, Debug)]
enum V2Proof {
    Step(StepFraud),
    Link(LinkFraud),
}

impl V2Proof {
    fn step(blob: &[u8], k: [u8; 32], index: u32) -> V2Proof {
        let p = Blob::parse(blob).unwrap().step_parts(index);
        V2Proof::Step(StepFraud {
            k,
            index,
            cipher: p.cipher.to_vec(),
            plain_hash: p.plain_hash,
            before: p.before,
            after: p.after,
            path: p.path,
            tallies: p.tallies,
        })
    }
    fn link(blob: &[u8], k: [u8; 32], index: u32) -> V2Proof {
        let (l, r, path, next) = Blob::parse(blob).unwrap().link_parts(index);
        let fields = |p: escrow_math::fraud::LeafParts| LeafFields {
            before: p.before,
            after: p.after,
            body: p.body,
            tallies: p.tallies,
        };
        V2Proof::Link(LinkFraud {
            k,
            index,
            left: fields(l),
            right: fields(r),
            path,
            next,
        })
    }
    fn ix(self, listing: Pubkey, buyer: &Keypair) -> (&'static str, Instruction) {
        match self {
            V2Proof::Step(proof) => (
                "dispute_step",
                T::dispute_ix(listing, buyer, escrow::instruction::DisputeStep { proof }),
            ),
            V2Proof::Link(proof) => (
                "dispute_link",
                T::dispute_ix(listing, buyer, escrow::instruction::DisputeLink { proof }),
            ),
        }
    }
    /// Bytes of the transaction the buyer's client sends with it: the
    /// buyer signs and pays alone, with a compute-unit limit and price.
    fn buyer_tx_len(self, listing: Pubkey, buyer: &Keypair) -> usize {
        let (_, ix) = self.ix(listing, buyer);
        common::buyer_tx_len(ix, buyer)
    }
}

fn bincode_len(tx: &Transaction) -> usize {
    let sigs = tx.signatures.len();
    1 + sigs * 64 + tx.message_data().len()
}

const LISTING_SPACE: usize = 8 + <SealedListing as anchor_lang::Space>::INIT_SPACE;
const ESCROW_SPACE: usize = 8 + <SealedEscrow as anchor_lang::Space>::INIT_SPACE;

#[tokio::test]
async fn a_sealed_trade_pays_only_through_the_reveal_and_the_buyer_opens_the_blob() {
    let buyer = Party::new(31);
    let mut t = T::ready_with(&[&buyer.key]).await;
    let (seller, treasury, b) = (
        t.seller.key.pubkey(),
        t.treasury.pubkey(),
        buyer.key.pubkey(),
    );
    let (listing_rent, escrow_rent) = (t.rent(LISTING_SPACE).await, t.rent(ESCROW_SPACE).await);

    let s0 = t.lamports(&seller).await;
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s0 - STAKE - listing_rent);

    let b0 = t.lamports(&b).await;
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    assert_eq!(t.lamports(&b).await, b0 - PRICE - escrow_rent);
    assert_eq!(t.read::<SealedListing>(&listing).await.open_escrows, 1);

    // the reveal pays nobody yet; the buyer opens k and the blob
    let s1 = t.lamports(&seller).await;
    t.reveal(listing, escrow).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s1);
    let k = t.opened_k(listing, &buyer).await;
    let blob = t.blob.bytes.clone();
    let bundle_hash = escrow_math::sha256(&[&t.plain]);
    assert_eq!(
        Blob::parse(&blob).unwrap().open(&k, &bundle_hash).unwrap(),
        t.plain
    );
    assert_eq!(
        custom(t.reveal(listing, escrow).await),
        code(EscrowError::WrongEscrowState),
        "one reveal"
    );

    // an honest seller: every step and every link proof is refused, and
    // a v1 chunk proof reaches no v2 root
    let count = Blob::parse(&blob).unwrap().count();
    for i in 0..count {
        let kp = buyer.key.insecure_clone();
        assert_eq!(
            custom(t.dispute_v2(listing, &kp, V2Proof::step(&blob, k, i)).await),
            code(EscrowError::NoFraud),
            "step {i}"
        );
        if i + 1 < count {
            assert_eq!(
                custom(t.dispute_v2(listing, &kp, V2Proof::link(&blob, k, i)).await),
                code(EscrowError::NoFraud),
                "link {i}"
            );
        }
        let v1 = seal_v1(&k, &t.plain).unwrap();
        assert_eq!(
            custom(t.dispute(listing, &kp, T::proof(&v1.bytes, k, i)).await),
            code(EscrowError::ProofBadPath),
            "chunk {i}"
        );
    }
    assert_eq!(
        custom(t.claim(listing, escrow, treasury).await),
        code(EscrowError::DisputeWindowOpen)
    );
    let kp = buyer.key.insecure_clone();
    assert_eq!(
        custom(t.refund(listing, &kp).await),
        code(EscrowError::WrongEscrowState),
        "no refund of a revealed escrow"
    );
    t.advance(DISPUTE).await;
    let kp = buyer.key.insecure_clone();
    assert_eq!(
        custom(t.dispute(listing, &kp, T::proof(&blob, k, 0)).await),
        code(EscrowError::DisputeWindowClosed)
    );

    // anyone cranks the claim; the fee to the treasury
    let (tr0, s2) = (t.lamports(&treasury).await, t.lamports(&seller).await);
    t.claim(listing, escrow, treasury).await.unwrap();
    let fee = (PRICE * FEE_BPS as u64).div_ceil(10_000);
    assert_eq!(t.lamports(&seller).await, s2 + PRICE - fee);
    assert_eq!(t.lamports(&treasury).await, tr0 + fee);
    assert_eq!(t.lamports(&escrow).await, escrow_rent);
    assert_eq!(
        custom(t.claim(listing, escrow, treasury).await),
        code(EscrowError::WrongEscrowState),
        "one claim"
    );

    // the buyer closes the receipt for its rent
    let b1 = t.lamports(&b).await;
    t.refund(listing, &kp).await.unwrap();
    assert_eq!(t.lamports(&b).await, b1 + escrow_rent);
    assert_eq!(t.lamports(&escrow).await, 0);

    // retired: stake back, the id never returns with other terms
    let s3 = t.lamports(&seller).await;
    t.retire(listing).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s3 + STAKE);
    assert_eq!(
        t.lamports(&listing).await,
        listing_rent,
        "the tombstone keeps its rent"
    );
    let flipped = SealedTerms {
        price_lamports: 4 * PRICE,
        ..terms
    };
    assert!(
        t.list(ID, flipped, STAKE).await.is_err(),
        "a listing id is used once"
    );
    assert_eq!(
        custom(t.deposit(listing, &buyer).await),
        code(EscrowError::ListingClosed)
    );

    eprintln!("compute units per instruction (max seen):");
    for (name, cu) in &t.cu {
        eprintln!("  {name:<16} {cu:>7}");
    }
    for (name, bound) in [
        ("deposit_sealed", 60_000),
        ("reveal", 60_000),
        ("dispute", 200_000),
        ("dispute_step", 200_000),
        ("dispute_link", 200_000),
        ("claim", 30_000),
    ] {
        let used = t.cu.get(name).copied().unwrap_or(0);
        assert!(used > 0 && used < bound, "{name}: {used} CU");
    }
}

#[tokio::test]
async fn a_deposit_binds_the_terms_the_buyer_checked() {
    let buyer = Party::new(32);
    let mut t = T::ready_with(&[&buyer.key]).await;
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let b = point_of(&t.blinding(&listing, &buyer));
    // every field the buyer checked is compared: price (the relist flip), key, root, length, hash, seller key, expiry
    let variants = [
        SealedTerms {
            price_lamports: PRICE / 4,
            ..terms
        },
        SealedTerms {
            key_point: point_of(&[3; 32]),
            ..terms
        },
        SealedTerms {
            blob_root: [1; 32],
            ..terms
        },
        SealedTerms {
            plain_len: terms.plain_len + 1,
            ..terms
        },
        SealedTerms {
            bundle_hash: [2; 32],
            ..terms
        },
        SealedTerms {
            seller_x25519: x25519_of(&[9; 32]),
            ..terms
        },
        SealedTerms {
            expires_at: terms.expires_at + 1,
            ..terms
        },
    ];
    for (i, v) in variants.into_iter().enumerate() {
        assert_eq!(
            custom(
                t.deposit_with(listing, &buyer, v, b, buyer.x_public())
                    .await
            ),
            code(EscrowError::TermsMismatch),
            "variant {i}"
        );
    }
    // small-order B, low-order X25519
    let torsion = curve25519_dalek::constants::EIGHT_TORSION[3]
        .compress()
        .to_bytes();
    assert_eq!(
        custom(
            t.deposit_with(listing, &buyer, terms, torsion, buyer.x_public())
                .await
        ),
        code(EscrowError::BadPoint)
    );
    assert_eq!(
        custom(
            t.deposit_with(
                listing,
                &buyer,
                terms,
                escrow_math::point::IDENTITY,
                buyer.x_public()
            )
            .await
        ),
        code(EscrowError::BadPoint)
    );
    assert_eq!(
        custom(t.deposit_with(listing, &buyer, terms, b, [0; 32]).await),
        code(EscrowError::LowOrderKey)
    );
    // expired
    t.advance(86_400).await;
    assert_eq!(
        custom(
            t.deposit_with(listing, &buyer, terms, b, buyer.x_public())
                .await
        ),
        code(EscrowError::ListingExpired)
    );
}

#[tokio::test]
async fn listings_and_settings_refuse_unusable_values() {
    let mut t = T::new(&[]).await;
    let treasury = t.treasury.pubkey();
    for (bad, want) in [
        (
            SettingsArgs {
                release_window_secs: 119,
                ..T::args()
            },
            EscrowError::WindowOutOfRange,
        ),
        (
            SettingsArgs {
                dispute_window_secs: 9,
                ..T::args()
            },
            EscrowError::WindowOutOfRange,
        ),
        (
            SettingsArgs {
                dispute_window_secs: 31 * 86_400,
                ..T::args()
            },
            EscrowError::WindowOutOfRange,
        ),
        (
            SettingsArgs {
                min_stake: 0,
                ..T::args()
            },
            EscrowError::ZeroMinStake,
        ),
        (
            SettingsArgs {
                slash_bps: 0,
                ..T::args()
            },
            EscrowError::ZeroSlash,
        ),
        // a share that rounds to nothing slashes nothing
        (
            SettingsArgs {
                min_stake: 1,
                slash_bps: 9_999,
                ..T::args()
            },
            EscrowError::ZeroShare,
        ),
        (
            SettingsArgs {
                fee_bps: 1_001,
                ..T::args()
            },
            EscrowError::FeeTooHigh,
        ),
    ] {
        assert_eq!(
            custom(t.init_settings(bad, treasury).await),
            code(want),
            "{bad:?}"
        );
    }
    // a treasury that is not a system account
    let r = t
        .init_settings(T::args(), common::program_data_address())
        .await;
    assert_eq!(
        custom(r),
        anchor_lang::error::ErrorCode::AccountNotSystemOwned as u32
    );
    // one below rent exemption (here: empty), which would waive every fee
    // that leaves it there
    assert_eq!(
        custom(t.init_settings(T::args(), Pubkey::new_unique()).await),
        code(EscrowError::TreasuryNotRentExempt)
    );
    t.init_settings(T::args(), treasury).await.unwrap();

    let terms = t.terms().await;
    for (bad, want) in [
        (
            SealedTerms {
                key_point: escrow_math::point::IDENTITY,
                ..terms
            },
            EscrowError::BadPoint,
        ),
        (
            SealedTerms {
                key_point: curve25519_dalek::constants::EIGHT_TORSION[1]
                    .compress()
                    .to_bytes(),
                ..terms
            },
            EscrowError::BadPoint,
        ),
        (
            SealedTerms {
                seller_x25519: [0; 32],
                ..terms
            },
            EscrowError::LowOrderKey,
        ),
        (
            SealedTerms {
                plain_len: 0,
                ..terms
            },
            EscrowError::BadPlainLen,
        ),
        (
            SealedTerms {
                plain_len: 32 * 1024 * 1024 + 1,
                ..terms
            },
            EscrowError::BadPlainLen,
        ),
        (
            SealedTerms {
                price_lamports: 0,
                ..terms
            },
            EscrowError::ZeroPrice,
        ),
    ] {
        assert_eq!(custom(t.list(ID, bad, STAKE).await), code(want), "{bad:?}");
    }
    assert_eq!(
        custom(t.list(ID, terms, STAKE - 1).await),
        code(EscrowError::StakeTooLow)
    );
    assert_eq!(
        custom(t.list_capped(ID, terms, STAKE, 0).await),
        code(EscrowError::ZeroMaxOpen)
    );
}

/// Each deposit reserves its slash share from the listing's stake, so
/// however many puppets deposit while the seller is offline, N open
/// escrows take at most N shares (never "half of what is left" each, in
/// turn, down to nothing), and the seller's cap bounds N.
#[tokio::test]
async fn open_escrows_never_take_more_than_their_reserved_shares() {
    let puppets: Vec<Party> = (50..55).map(Party::new).collect();
    let keys: Vec<&Keypair> = puppets.iter().map(|p| &p.key).collect();
    let mut t = T::ready_with(&keys).await;
    let share = STAKE * SLASH_BPS as u64 / 10_000;
    let terms = t.terms().await;
    // a stake of three floors backs six shares
    let listing = t.list(ID, terms, 3 * STAKE).await.unwrap();
    let mut escrows = Vec::new();
    for p in &puppets[..4] {
        escrows.push(t.deposit(listing, p).await.unwrap());
    }
    let l: SealedListing = t.read(&listing).await;
    assert_eq!((l.open_escrows, l.reserved), (4, 4 * share));
    assert_eq!(t.read::<SealedEscrow>(&escrows[0]).await.share, share);
    // the seller is offline: every window passes, every puppet refunds
    t.advance(RELEASE + GRACE).await;
    for p in &puppets[..4] {
        let kp = p.key.insecure_clone();
        t.refund(listing, &kp).await.unwrap();
    }
    let l: SealedListing = t.read(&listing).await;
    assert_eq!(
        (l.stake, l.reserved, l.open_escrows),
        (3 * STAKE - 4 * share, 0, 0),
        "four escrows took four shares, no more"
    );
    // a stake that covers no further share takes no deposit
    let id2 = "20261125-0123456789ac";
    let listing2 = t.list(id2, terms, STAKE).await.unwrap();
    t.deposit(listing2, &puppets[0]).await.unwrap();
    t.deposit(listing2, &puppets[1]).await.unwrap();
    assert_eq!(
        custom(t.deposit(listing2, &puppets[2]).await),
        code(EscrowError::StakeReserved)
    );
    // an escrow that settles frees its share
    let e = escrow_pda(&listing2, &puppets[0].key.pubkey());
    t.reveal(listing2, e).await.unwrap();
    t.advance(DISPUTE).await;
    let treasury = t.treasury.pubkey();
    t.claim(listing2, e, treasury).await.unwrap();
    t.deposit(listing2, &puppets[2]).await.unwrap();
    // the seller's cap
    let id3 = "20261125-0123456789ad";
    let listing3 = t.list_capped(id3, terms, 3 * STAKE, 1).await.unwrap();
    let e3 = t.deposit(listing3, &puppets[3]).await.unwrap();
    assert_eq!(
        custom(t.deposit(listing3, &puppets[4]).await),
        code(EscrowError::TooManyOpen)
    );
    t.decline(listing3, e3).await.unwrap();
    t.deposit(listing3, &puppets[4]).await.unwrap();
}

/// A buyer that never comes back cannot keep a listing open: anyone
/// expires its deposit once the window and its grace are over (the share
/// moves into the escrow, nothing touches the buyer), the seller retires,
/// and the buyer still takes its deposit and share whenever it returns.
#[tokio::test]
async fn anyone_expires_a_missed_deposit_and_the_buyer_keeps_its_due() {
    let (buyer, revealed) = (Party::new(60), Party::new(61));
    let mut t = T::ready_with(&[&buyer.key, &revealed.key]).await;
    let share = STAKE * SLASH_BPS as u64 / 10_000;
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    let other = t.deposit(listing, &revealed).await.unwrap();
    t.reveal(listing, other).await.unwrap();
    assert_eq!(
        custom(t.expire(listing, escrow).await),
        code(EscrowError::NotExpirable),
        "inside the window"
    );
    t.advance(RELEASE + GRACE).await;
    assert_eq!(
        custom(t.expire(listing, other).await),
        code(EscrowError::NotExpirable),
        "a reveal on a listing not convicted is claimed, not expired"
    );
    let (held, rent) = (t.lamports(&escrow).await, t.rent(ESCROW_SPACE).await);
    assert_eq!(held, PRICE + rent);
    t.expire(listing, escrow).await.unwrap();
    let e: SealedEscrow = t.read(&escrow).await;
    assert_eq!(e.status, SealedEscrowStatus::Expired);
    assert_eq!(t.lamports(&escrow).await, PRICE + rent + share);
    let l: SealedListing = t.read(&listing).await;
    assert_eq!(
        (l.stake, l.reserved, l.open_escrows),
        (STAKE - share, share, 1)
    );
    assert_eq!(
        custom(t.expire(listing, escrow).await),
        code(EscrowError::NotExpirable),
        "once"
    );
    // the revealed one is claimed; nothing open: the seller retires
    t.advance(DISPUTE).await;
    let treasury = t.treasury.pubkey();
    t.claim(listing, other, treasury).await.unwrap();
    let seller = t.seller.key.pubkey();
    let s0 = t.lamports(&seller).await;
    t.retire(listing).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s0 + STAKE - share);
    // the buyer comes back: the deposit and the share, and the rent
    let kp = buyer.key.insecure_clone();
    let b0 = t.lamports(&kp.pubkey()).await;
    t.refund(listing, &kp).await.unwrap();
    assert_eq!(t.lamports(&kp.pubkey()).await, b0 + PRICE + rent + share);
    assert_eq!(t.lamports(&escrow).await, 0);
}

#[tokio::test]
async fn a_missed_reveal_refunds_and_slashes_in_one_signed_call_and_the_windows_are_disjoint() {
    let buyer = Party::new(33);
    let mut t = T::ready_with(&[&buyer.key]).await;
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    let kp = buyer.key.insecure_clone();
    t.advance(RELEASE - 5).await;
    assert_eq!(
        custom(t.refund(listing, &kp).await),
        code(EscrowError::ReleaseWindowOpen)
    );
    // the window closed, its grace not: a reveal sent inside the window
    // still lands, so the refund waits
    t.advance(5 + GRACE - 1).await;
    assert_eq!(
        custom(t.refund(listing, &kp).await),
        code(EscrowError::ReleaseWindowOpen)
    );
    assert_eq!(
        custom(t.expire(listing, escrow).await),
        code(EscrowError::NotExpirable)
    );
    t.advance(1).await;
    // the grace closed: no reveal, no decline (the key can never come after the refund opens)
    assert_eq!(
        custom(t.reveal(listing, escrow).await),
        code(EscrowError::ReleaseWindowClosed)
    );
    assert_eq!(
        custom(t.decline(listing, escrow).await),
        code(EscrowError::ReleaseWindowClosed)
    );
    let b0 = t.lamports(&kp.pubkey()).await;
    let escrow_rent = t.rent(ESCROW_SPACE).await;
    t.refund(listing, &kp).await.unwrap();
    let slash = STAKE * SLASH_BPS as u64 / 10_000;
    assert_eq!(
        t.lamports(&kp.pubkey()).await,
        b0 + PRICE + escrow_rent + slash
    );
    let l: SealedListing = t.read(&listing).await;
    assert_eq!((l.stake, l.open_escrows), (STAKE - slash, 0));
    // the stake fell under the floor: no more deposits (a drained listing stops selling)
    let again = Party::new(34);
    let key = again.key.insecure_clone();
    t.ctx
        .set_account(&key.pubkey(), &Account::new(20 * SOL, 0, &SYSTEM).into());
    assert_eq!(
        custom(t.deposit(listing, &again).await),
        code(EscrowError::StakeBelowFloor)
    );
    // nothing open: the seller retires with what is left
    t.retire(listing).await.unwrap();
}

#[tokio::test]
async fn a_wrong_blinding_is_declined_in_full_and_a_reveal_never_replays() {
    let (honest, griefer) = (Party::new(35), Party::new(36));
    let mut t = T::ready_with(&[&honest.key, &griefer.key]).await;
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let e1 = t.deposit(listing, &honest).await.unwrap();
    // the griefer binds a B that is not its blinding
    let wrong = point_of(&[77; 32]);
    let e2 = t
        .deposit_with(listing, &griefer, terms, wrong, griefer.x_public())
        .await
        .unwrap();
    let s2 = t.honest_s(listing, e2).await;
    let seller = t.seller.key.insecure_clone();
    assert_eq!(
        custom(t.reveal_as(&seller, listing, e2, s2).await),
        code(EscrowError::WrongReveal)
    );
    // the honest reveal for e1 opens nothing on e2, and nobody but the seller reveals
    t.reveal(listing, e1).await.unwrap();
    let s1 = t.read::<SealedEscrow>(&e1).await.revealed;
    assert_eq!(
        custom(t.reveal_as(&seller, listing, e2, s1).await),
        code(EscrowError::WrongReveal)
    );
    let outsider = honest.key.insecure_clone();
    assert_eq!(
        custom(t.reveal_as(&outsider, listing, e2, s1).await),
        code(EscrowError::NotSeller)
    );
    // declined: returned in full, no stake moves
    t.decline(listing, e2).await.unwrap();
    let g = griefer.key.insecure_clone();
    let (g0, rent) = (t.lamports(&g.pubkey()).await, t.rent(ESCROW_SPACE).await);
    t.refund(listing, &g).await.unwrap();
    assert_eq!(t.lamports(&g.pubkey()).await, g0 + PRICE + rent);
    let l: SealedListing = t.read(&listing).await;
    assert_eq!((l.stake, l.open_escrows), (STAKE, 1));
}

#[tokio::test]
async fn a_fraud_proof_refunds_and_slashes_a_cheating_seller() {
    let (buyer, second) = (Party::new(37), Party::new(40));
    let mut t = T::ready_with(&[&buyer.key, &second.key]).await;
    // a listing made before v2 (a v1 blob, still traded): the seller
    // commits to a blob whose chunk 2 does not decrypt to its committed hash
    let k = t.k();
    let mut lying = seal_v1(&k, &t.plain).unwrap().bytes;
    let at = Blob::parse(&lying).unwrap().cipher_offset();
    lying[at + 2 * 256 + 9] ^= 0x40;
    let root = Blob::parse(&lying).unwrap().root();
    let terms = SealedTerms {
        blob_root: root,
        ..t.terms().await
    };
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    t.reveal(listing, escrow).await.unwrap();
    // a second buyer, revealed to as well, before the conviction
    let second_escrow = t.deposit(listing, &second).await.unwrap();
    t.reveal(listing, second_escrow).await.unwrap();
    let opened = t.opened_k(listing, &buyer).await;
    assert_eq!(opened, k);
    assert_eq!(
        Blob::parse(&lying).unwrap().open(&opened, &[0; 32]),
        Err(BlobError::Misdelivery { index: 2 })
    );
    let kp = buyer.key.insecure_clone();
    // proofs that prove nothing: an honest chunk, a wrong key, a wrong path
    assert_eq!(
        custom(t.dispute(listing, &kp, T::proof(&lying, opened, 1)).await),
        code(EscrowError::NoFraud)
    );
    assert_eq!(
        custom(t.dispute(listing, &kp, T::proof(&lying, [5; 32], 2)).await),
        code(EscrowError::ProofWrongKey)
    );
    let mut bad_path = T::proof(&lying, opened, 2);
    bad_path.path[0][0] ^= 1;
    assert_eq!(
        custom(t.dispute(listing, &kp, bad_path).await),
        code(EscrowError::ProofBadPath)
    );
    let b0 = t.lamports(&kp.pubkey()).await;
    let rent = t.rent(ESCROW_SPACE).await;
    t.dispute(listing, &kp, T::proof(&lying, opened, 2))
        .await
        .unwrap();
    let slash = STAKE * SLASH_BPS as u64 / 10_000;
    assert_eq!(t.lamports(&kp.pubkey()).await, b0 + PRICE + rent + slash);
    assert_eq!(t.lamports(&escrow).await, 0);
    let l: SealedListing = t.read(&listing).await;
    assert_eq!(
        (l.stake, l.open_escrows, l.status),
        (STAKE - slash, 1, SealedListingStatus::Convicted)
    );
    let treasury = t.treasury.pubkey();
    assert!(
        t.claim(listing, escrow, treasury).await.is_err(),
        "nothing left to claim"
    );
    // every reveal of a convicted listing opened the same lying blob:
    // nothing of it is claimed, and the second buyer refunds with the slash
    t.advance(DISPUTE).await;
    assert_eq!(
        custom(t.claim(listing, second_escrow, treasury).await),
        code(EscrowError::ListingConvicted)
    );
    let sk = second.key.insecure_clone();
    let s0 = t.lamports(&sk.pubkey()).await;
    t.refund(listing, &sk).await.unwrap();
    // each escrow's share was reserved at its deposit: the same for both
    let second_slash = STAKE * SLASH_BPS as u64 / 10_000;
    assert_eq!(
        t.lamports(&sk.pubkey()).await,
        s0 + PRICE + rent + second_slash
    );
    // no more deposits; the seller retires it for what stake is left
    let next = Party::new(41);
    t.ctx.set_account(
        &next.key.pubkey(),
        &Account::new(20 * SOL, 0, &SYSTEM).into(),
    );
    assert_eq!(
        custom(t.deposit(listing, &next).await),
        code(EscrowError::ListingClosed)
    );
    let seller = t.seller.key.pubkey();
    let s1 = t.lamports(&seller).await;
    t.retire(listing).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s1 + STAKE - slash - second_slash);
    eprintln!("dispute: {} CU", t.cu["dispute"]);
}

#[tokio::test]
async fn nothing_the_buyer_does_to_its_wallet_blocks_the_seller() {
    let buyer = Party::new(38);
    let mut t = T::ready_with(&[&buyer.key]).await;
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    // the buyer hands its wallet to another program (a plain System Assign), and makes it executable
    let mut acc: Account = t
        .ctx
        .banks_client
        .get_account(buyer.key.pubkey())
        .await
        .unwrap()
        .unwrap();
    acc.owner = solana_sdk::pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
    acc.executable = true;
    t.ctx.set_account(&buyer.key.pubkey(), &acc.into());
    t.reveal(listing, escrow).await.unwrap();
    t.advance(DISPUTE).await;
    let treasury = t.treasury.pubkey();
    t.claim(listing, escrow, treasury).await.unwrap();
    t.retire(listing).await.unwrap();
}

/// A permissionless claim sent behind instructions that fill the log to
/// the runtime's 10 KB cap (what a crank hostile to the seller's record
/// sends) still shows `PaymentClaimed`: the event is the claim's
/// self-CPI, which the runtime records whole, and the node reads it from
/// there (an event read from the log lines is lost: the flood truncates
/// them).
#[tokio::test]
async fn a_log_flood_before_a_claim_hides_no_event() {
    let buyer = Party::new(32);
    let mut t = T::ready_with(&[&buyer.key]).await;
    let treasury = t.treasury.pubkey();
    let terms = t.terms().await;
    let listing = t.list(ID, terms, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    t.reveal(listing, escrow).await.unwrap();
    t.advance(DISPUTE).await;

    let memo = solana_sdk::pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
    let mut ixs: Vec<Instruction> = (0..44u8)
        .map(|i| Instruction {
            program_id: memo,
            accounts: vec![],
            data: vec![b'a' + i % 26],
        })
        .collect();
    ixs.push(T::ix(
        escrow::accounts::Claim {
            settings: settings_pda(),
            listing,
            escrow,
            seller: t.seller.key.pubkey(),
            treasury,
            event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
            program: escrow::ID,
        },
        escrow::instruction::Claim {},
    ));
    let blockhash = t.ctx.banks_client.get_latest_blockhash().await.unwrap();
    let tx = Transaction::new_signed_with_payer(
        &ixs,
        Some(&t.ctx.payer.pubkey()),
        &[&t.ctx.payer],
        blockhash,
    );
    assert!(bincode_len(&tx) <= 1232);
    let keys = tx.message.account_keys.clone();
    let sim = t
        .ctx
        .banks_client
        .simulate_transaction(tx.clone())
        .await
        .unwrap();
    assert_eq!(sim.result, Some(Ok(())), "the flooded claim lands");
    let details = sim.simulation_details.expect("simulated");
    assert!(
        details.logs.iter().any(|l| l == "Log truncated"),
        "the flood reaches the log's cap: {} lines",
        details.logs.len()
    );
    let inner_calls = details
        .inner_instructions
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .map(|i| node::chain::ProgramCall {
            program_id: keys[i.instruction.program_id_index as usize].to_string(),
            accounts: i
                .instruction
                .accounts
                .iter()
                .map(|a| keys[*a as usize].to_string())
                .collect(),
            data: i.instruction.data,
        })
        .collect();
    let parsed = node::chain::ParsedTx {
        inner_calls,
        succeeded: true,
        ..Default::default()
    };
    let fee = (PRICE * FEE_BPS as u64).div_ceil(10_000);
    assert_eq!(
        node::escrow::events_in(&parsed),
        vec![node::escrow::EscrowEvent::Claimed {
            escrow,
            to_seller: PRICE - fee,
            fee
        }]
    );
    t.ctx.banks_client.process_transaction(tx).await.unwrap();
    assert_eq!(
        t.read::<SealedEscrow>(&escrow).await.status,
        SealedEscrowStatus::Claimed
    );
}

/// A bundle-shaped plaintext of exactly `len` bytes (at least 40): as
/// many memories as fit, then a padding key.
fn bundle_of(len: usize) -> Vec<u8> {
    let mut out = br#"{"memories":["#.to_vec();
    let row = |i: usize| format!(r#"{{"agent_id":"a","content":"memory {i:05}","id":{i}}}"#);
    let close = br#"],"z":""}"#;
    let mut i = 0;
    while out.len() + row(i).len() + 1 + close.len() <= len {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(row(i).as_bytes());
        i += 1;
    }
    out.extend_from_slice(&close[..7]);
    out.resize(len - 2, b'x');
    out.extend_from_slice(b"\"}");
    out
}

/// Issue 45's cases at the shallowest tree (one chunk, or two for a link)
/// and at the deepest the node accepts (227 chunks: the largest v3 blob
/// under `MAX_BLOB_BYTES`, depth 8): a seller who seals anything but the
/// bundle its `bundle_hash` names is convicted by the proof the buyer's
/// client builds (deposit, rent and the slash share back; the listing
/// convicted), after an honest proof at another index is refused. Prints
/// each proof's compute units and the size of the transaction the buyer
/// sends (signed and paid by the buyer alone, with a compute-unit limit
/// and price), and bounds both.
#[tokio::test]
async fn a_plaintext_other_than_the_promised_bundle_is_convicted_at_every_depth() {
    // the deepest: 227 chunks, a v3 blob of at most 81,920 bytes
    let record = escrow_math::blob::Format::V3.record_len();
    let deep_len = 227 * 256 - 50;
    let blob_len = escrow_math::blob::HEADER_LEN + 227 * record + deep_len;
    assert!(blob_len <= 81_920, "{blob_len}");
    type Case = (
        &'static str,
        Vec<u8>,
        Box<dyn Fn(&[u8; 32], &[u8]) -> Sealed>,
        &'static str,
    );
    let cases = |len: usize| -> Vec<Case> {
        let promised: Vec<u8> = (0..len as u32).map(|i| (i * 31 % 253) as u8).collect();
        let last_of = |p: &[u8]| (p.len() - 1) / 256;
        vec![
            (
                "one byte changed, sealed consistently",
                promised.clone(),
                Box::new(move |k: &[u8; 32], p: &[u8]| {
                    let mut other = p.to_vec();
                    other[p.len() / 2] ^= 1;
                    seal(k, &other).unwrap()
                }),
                "step",
            ),
            (
                "one byte changed, the promised bundle's states committed",
                promised.clone(),
                Box::new(move |k: &[u8; 32], p: &[u8]| {
                    let mut other = p.to_vec();
                    other[p.len() / 2] ^= 1;
                    escrow_math::forgery::with_states_of(k, &other, p)
                }),
                "step",
            ),
            (
                "the first and last chunks swapped",
                promised.clone(),
                Box::new(move |k: &[u8; 32], p: &[u8]| {
                    let mut other = p.to_vec();
                    let last = last_of(p);
                    if last > 0 {
                        let tail = other[last * 256..].to_vec();
                        let head: Vec<u8> = other[..tail.len()].to_vec();
                        other[..tail.len()].copy_from_slice(&tail);
                        other[last * 256..].copy_from_slice(&head);
                    } else {
                        other.reverse();
                    }
                    seal(k, &other).unwrap()
                }),
                "step",
            ),
            (
                "truncated",
                promised.clone(),
                Box::new(move |k: &[u8; 32], p: &[u8]| seal(k, &p[..p.len() - 1]).unwrap()),
                "step",
            ),
            // the listing's bundle_hash is another's (set below)
            (
                "the right bundle under a wrong bundle_hash",
                promised.clone(),
                Box::new(move |k: &[u8; 32], p: &[u8]| seal(k, p).unwrap()),
                "step",
            ),
            (
                "the right bundle, one chunk's states forged consistently",
                promised.clone(),
                Box::new(move |k: &[u8; 32], p: &[u8]| {
                    // chunk `last` (or 128: the link at 127 carries the
                    // longest paths, 8 + 7 hashes) gets another state before and
                    // the step from it after
                    let last = last_of(p).min(128);
                    let mut other_chain_source = vec![0xeeu8; last * 256];
                    other_chain_source.extend_from_slice(&p[last * 256..]);
                    let forged = escrow_math::forgery::with_states_of(k, p, &other_chain_source);
                    let honest = seal(k, p).unwrap();
                    // keep every other chunk's honest states: only chunk `last` forged
                    let mut bytes = honest.bytes.clone();
                    let at = escrow_math::blob::HEADER_LEN + last * record;
                    bytes[at..at + 96].copy_from_slice(&forged.bytes[at..at + 96]);
                    let root = Blob::parse(&bytes).unwrap().root();
                    Sealed {
                        bytes,
                        root,
                        plain_len: p.len() as u64,
                    }
                }),
                "link",
            ),
            (
                "a lying memory count, the last step's",
                bundle_of(len),
                Box::new(move |k: &[u8; 32], p: &[u8]| {
                    overstate_memories(k, p, last_of(p) as u32, 2, false)
                }),
                "step",
            ),
            (
                "a lying memory count, a link's",
                bundle_of(len),
                Box::new(move |k: &[u8; 32], p: &[u8]| {
                    // into chunk 128 at depth 8: the longest link paths
                    overstate_memories(k, p, last_of(p).min(128) as u32, 2, true)
                }),
                "link",
            ),
        ]
    };
    let buyers: Vec<Party> = (0..16).map(|i| Party::new(60 + i)).collect();
    let keys: Vec<&Keypair> = buyers.iter().map(|b| &b.key).collect();
    let mut t = T::ready_with(&keys).await;
    let mut report = Vec::new();
    let mut n = 0;
    for (depth_name, len) in [("shallowest", 300usize), ("deepest", deep_len)] {
        for (name, promised, make, kind) in cases(len) {
            // the shallowest tree: one chunk for a step, two for a link
            let promised = if depth_name == "shallowest" && kind == "step" {
                promised[..200].to_vec()
            } else {
                promised
            };
            let id = format!("20261128-{n:012x}");
            let listing = listing_pda(&t.seller.key.pubkey(), &id);
            let k = *listing_scalar(&SELLER_SEED, &listing.to_bytes());
            let sealed = make(&k, &promised);
            if name.contains("memory count") {
                // the blob states 2 more memories than the plaintext holds
                let stated = Blob::parse(&sealed.bytes).unwrap().stated_memories();
                let held = escrow_math::tally::count_of(&promised);
                assert_eq!(stated, Some(held + 2), "{depth_name} {name}");
            }
            let bundle_hash = if name.contains("wrong bundle_hash") {
                escrow_math::sha256(&[b"another bundle"])
            } else {
                escrow_math::sha256(&[&promised])
            };
            let terms = SealedTerms {
                key_point: point_of(&k),
                blob_root: sealed.root,
                plain_len: sealed.plain_len,
                bundle_hash,
                ..t.terms().await
            };
            t.list(&id, terms, STAKE).await.unwrap();
            let buyer = &buyers[n];
            n += 1;
            let escrow = t.deposit(listing, buyer).await.unwrap();
            let e: SealedEscrow = t.read(&escrow).await;
            let b = t.seller_blinding(&listing, &e.buyer, &e.buyer_x25519);
            let seller = t.seller.key.insecure_clone();
            t.reveal_as(&seller, listing, escrow, reveal(&k, &b))
                .await
                .unwrap();
            let opened = *open(
                &t.read::<SealedEscrow>(&escrow).await.revealed,
                &t.blinding(&listing, buyer),
                &point_of(&k),
            )
            .unwrap();
            assert_eq!(opened, k);
            let count = Blob::parse(&sealed.bytes).unwrap().count();
            let depth = escrow_math::merkle::depth(count);
            let proof = T::v2_proof(&sealed.bytes, opened, &bundle_hash)
                .unwrap_or_else(|| panic!("{depth_name} {name}: the blob opened"));
            let (got_kind, index) = match &proof {
                V2Proof::Step(p) => ("step", p.index),
                V2Proof::Link(p) => ("link", p.index),
            };
            assert_eq!(got_kind, kind, "{depth_name} {name}");
            let kp = buyer.key.insecure_clone();
            // an honest index proves nothing (when there is one)
            if count > 2 {
                let honest = if index == 0 { 1 } else { 0 };
                assert_eq!(
                    custom(
                        t.dispute_v2(listing, &kp, V2Proof::step(&sealed.bytes, opened, honest))
                            .await
                    ),
                    code(EscrowError::NoFraud),
                    "{depth_name} {name}: honest step {honest}"
                );
            }
            let bytes = proof.clone().buyer_tx_len(listing, &kp);
            assert!(bytes <= 1232, "{depth_name} {name}: {bytes} bytes");
            let (b0, rent) = (t.lamports(&kp.pubkey()).await, t.rent(ESCROW_SPACE).await);
            let before_cu = t.cu.clone();
            t.cu.clear();
            t.dispute_v2(listing, &kp, proof)
                .await
                .unwrap_or_else(|e| panic!("{depth_name} {name}: {e}"));
            let cu = t.cu.values().copied().max().unwrap_or(0);
            t.cu = before_cu;
            let slash = STAKE * SLASH_BPS as u64 / 10_000;
            assert_eq!(
                t.lamports(&kp.pubkey()).await,
                b0 + PRICE + rent + slash,
                "{depth_name} {name}"
            );
            let l: SealedListing = t.read(&listing).await;
            assert_eq!(
                l.status,
                SealedListingStatus::Convicted,
                "{depth_name} {name}"
            );
            report.push(format!("  {depth_name:<10} depth {depth} {got_kind} at {index:>3}: {cu:>6} CU, {bytes:>4} bytes  ({name})"));
            assert!(cu > 0 && cu < 200_000, "{depth_name} {name}: {cu} CU");
        }
    }
    eprintln!("v3 fraud proofs that convicted (compute units; bytes of the buyer's transaction):");
    for line in &report {
        eprintln!("{line}");
    }
}
