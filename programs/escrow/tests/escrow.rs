//! The escrow program run natively in `solana-program-test` (SBF builds
//! cannot be downloaded here): each instruction's happy path and each
//! refusal, with balances asserted to the lamport.

use anchor_lang::{AccountDeserialize, InstructionData, ToAccountMetas};
use escrow::error::EscrowError;
use escrow::state::{Config, Escrow, EscrowStatus, Listing};
mod common;

use solana_program_test::{BanksClientError, ProgramTest, ProgramTestContext};
use solana_sdk::account::Account;
use solana_sdk::clock::Clock;
use solana_sdk::instruction::{Instruction, InstructionError};
use solana_sdk::pubkey::Pubkey;
use solana_sdk::rent::Rent;
use solana_sdk::signature::{Keypair, Signer};
const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");
use solana_sdk::transaction::{Transaction, TransactionError};

const SOL: u64 = 1_000_000_000;
const LISTING_ID: &str = "20261123-0123456789ab";
const HASH: [u8; 32] = [7; 32];
const PRICE: u64 = 2 * SOL;
const STAKE: u64 = SOL;
const FEE_BPS: u16 = 250;
const SLASH_BPS: u16 = 5_000;
const WINDOW: i64 = 3_600;
const ENVELOPE: &str = "ZlsB1KpoVHW5YqgSoeDMx8aE2n4r1Qm3hS2u2xIoYq8";

struct T {
    ctx: ProgramTestContext,
    admin: Keypair,
    treasury: Keypair,
    seller: Keypair,
    buyer: Keypair,
    other: Keypair,
    nonce: u32,
    /// Compute units the last transaction consumed.
    last_cu: u64,
}

fn config_pda() -> Pubkey {
    Pubkey::find_program_address(&[b"config"], &escrow::ID).0
}

fn listing_pda(seller: &Pubkey, id: &str) -> Pubkey {
    Pubkey::find_program_address(&[b"listing", seller.as_ref(), id.as_bytes()], &escrow::ID).0
}

fn escrow_pda(listing: &Pubkey, buyer: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(&[b"escrow", listing.as_ref(), buyer.as_ref()], &escrow::ID).0
}

fn code(e: EscrowError) -> u32 {
    anchor_lang::error::ERROR_CODE_OFFSET + e as u32
}

fn custom(res: Result<(), BanksClientError>) -> u32 {
    match res {
        Err(BanksClientError::TransactionError(TransactionError::InstructionError(
            _,
            InstructionError::Custom(c),
        ))) => c,
        Err(BanksClientError::SimulationError {
            err: TransactionError::InstructionError(_, InstructionError::Custom(c)),
            ..
        }) => c,
        other => panic!("expected a custom program error, got {other:?}"),
    }
}

impl T {
    async fn new() -> T {
        let mut pt = ProgramTest::default();
        let [admin, treasury, seller, buyer, other] = std::array::from_fn(|_| Keypair::new());
        for k in [&admin, &treasury, &seller, &buyer, &other] {
            pt.add_account(k.pubkey(), Account::new(10 * SOL, 0, &SYSTEM));
        }
        common::add_program_data(&mut pt, Some(&admin.pubkey()));
        let ctx = common::start(pt).await;
        T {
            ctx,
            admin,
            treasury,
            seller,
            buyer,
            other,
            nonce: 0,
            last_cu: 0,
        }
    }

    /// Sends `ix` signed by `signers` (the context payer pays the fee, so
    /// the parties' balances move only by what the program does).
    async fn send(
        &mut self,
        ix: Instruction,
        signers: &[&Keypair],
    ) -> Result<(), BanksClientError> {
        self.nonce += 1;
        // SetComputeUnitLimit with a varying value: identical instructions
        // sent twice must still be two transactions.
        let mut limit = vec![2u8];
        limit.extend_from_slice(&(1_000_000 - self.nonce).to_le_bytes());
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
        let r = self
            .ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await?;
        self.last_cu = r.metadata.map_or(0, |m| m.compute_units_consumed);
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

    async fn init_config(&mut self, fee_bps: u16) -> Result<(), BanksClientError> {
        let admin = self.admin.insecure_clone();
        self.init_config_as(&admin, common::program_data_address(), fee_bps)
            .await
    }

    async fn init_config_as(
        &mut self,
        admin: &Keypair,
        program_data: Pubkey,
        fee_bps: u16,
    ) -> Result<(), BanksClientError> {
        let ix = Self::ix(
            escrow::accounts::InitializeConfig {
                config: config_pda(),
                admin: admin.pubkey(),
                program_data,
                system_program: SYSTEM,
            },
            escrow::instruction::InitializeConfig {
                treasury: self.treasury.pubkey(),
                fee_bps,
                slash_bps: SLASH_BPS,
                release_window_secs: WINDOW,
                min_stake: STAKE,
            },
        );
        self.send(ix, &[admin]).await
    }

    async fn create_listing(
        &mut self,
        id: &str,
        price: u64,
        stake: u64,
    ) -> Result<Pubkey, BanksClientError> {
        let seller = self.seller.insecure_clone();
        let listing = listing_pda(&seller.pubkey(), id);
        let expires_at = self.now().await + 86_400;
        let ix = Self::ix(
            escrow::accounts::CreateListing {
                config: config_pda(),
                listing,
                seller: seller.pubkey(),
                system_program: SYSTEM,
            },
            escrow::instruction::CreateListing {
                listing_id: id.into(),
                bundle_hash: HASH,
                price_lamports: price,
                stake,
                expires_at,
            },
        );
        self.send(ix, &[&seller]).await.map(|_| listing)
    }

    async fn deposit(
        &mut self,
        listing: Pubkey,
        buyer: &Keypair,
    ) -> Result<Pubkey, BanksClientError> {
        let escrow = escrow_pda(&listing, &buyer.pubkey());
        let ix = Self::ix(
            escrow::accounts::Deposit {
                listing,
                escrow,
                buyer: buyer.pubkey(),
                system_program: SYSTEM,
            },
            escrow::instruction::Deposit {
                buyer_x25519: [3; 32],
            },
        );
        self.send(ix, &[buyer]).await.map(|_| escrow)
    }

    fn release_ix(
        &self,
        listing: Pubkey,
        escrow: Pubkey,
        seller: &Pubkey,
        treasury: Pubkey,
        hash: [u8; 32],
    ) -> Instruction {
        Self::ix(
            escrow::accounts::Release {
                config: config_pda(),
                listing,
                escrow,
                seller: *seller,
                treasury,
            },
            escrow::instruction::Release {
                envelope_id: ENVELOPE.into(),
                bundle_hash: hash,
            },
        )
    }

    async fn release(&mut self, listing: Pubkey, escrow: Pubkey) -> Result<(), BanksClientError> {
        let seller = self.seller.insecure_clone();
        let ix = self.release_ix(
            listing,
            escrow,
            &seller.pubkey(),
            self.treasury.pubkey(),
            HASH,
        );
        self.send(ix, &[&seller]).await
    }

    async fn refund(&mut self, listing: Pubkey, buyer: &Keypair) -> Result<(), BanksClientError> {
        let ix = Self::ix(
            escrow::accounts::Refund {
                config: config_pda(),
                listing,
                escrow: escrow_pda(&listing, &buyer.pubkey()),
                buyer: buyer.pubkey(),
            },
            escrow::instruction::Refund {},
        );
        self.send(ix, &[buyer]).await
    }

    async fn slash(&mut self, listing: Pubkey, buyer: &Pubkey) -> Result<(), BanksClientError> {
        let caller = self.other.insecure_clone();
        let ix = Self::ix(
            escrow::accounts::Slash {
                config: config_pda(),
                listing,
                escrow: escrow_pda(&listing, buyer),
                buyer: *buyer,
                caller: caller.pubkey(),
            },
            escrow::instruction::Slash {},
        );
        self.send(ix, &[&caller]).await
    }

    async fn cancel(&mut self, listing: Pubkey) -> Result<(), BanksClientError> {
        let seller = self.seller.insecure_clone();
        let ix = Self::ix(
            escrow::accounts::CancelListing {
                listing,
                seller: seller.pubkey(),
            },
            escrow::instruction::CancelListing {},
        );
        self.send(ix, &[&seller]).await
    }
}

const LISTING_SPACE: usize = 8 + <Listing as anchor_lang::Space>::INIT_SPACE;
const ESCROW_SPACE: usize = 8 + <Escrow as anchor_lang::Space>::INIT_SPACE;

#[tokio::test]
async fn list_deposit_release_cancel_to_the_lamport() {
    let mut t = T::new().await;
    t.init_config(FEE_BPS).await.unwrap();
    let (seller, buyer, treasury) = (t.seller.pubkey(), t.buyer.pubkey(), t.treasury.pubkey());
    let listing_rent = t.rent(LISTING_SPACE).await;
    let escrow_rent = t.rent(ESCROW_SPACE).await;

    let s0 = t.lamports(&seller).await;
    let listing = t.create_listing(LISTING_ID, PRICE, STAKE).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s0 - STAKE - listing_rent);
    assert_eq!(t.lamports(&listing).await, STAKE + listing_rent);

    let b0 = t.lamports(&buyer).await;
    let buyer_kp = t.buyer.insecure_clone();
    let escrow = t.deposit(listing, &buyer_kp).await.unwrap();
    assert_eq!(t.lamports(&buyer).await, b0 - PRICE - escrow_rent);
    assert_eq!(t.lamports(&escrow).await, PRICE + escrow_rent);
    let l: Listing = t.read(&listing).await;
    assert_eq!(l.open_escrows, 1);

    let (s1, tr0) = (t.lamports(&seller).await, t.lamports(&treasury).await);
    t.release(listing, escrow).await.unwrap();
    let fee = (PRICE * FEE_BPS as u64).div_ceil(10_000);
    assert_eq!(fee, 50_000_000);
    assert_eq!(t.lamports(&seller).await, s1 + PRICE - fee);
    assert_eq!(t.lamports(&treasury).await, tr0 + fee);
    assert_eq!(
        t.lamports(&escrow).await,
        escrow_rent,
        "the receipt keeps its rent"
    );
    let e: Escrow = t.read(&escrow).await;
    assert_eq!(
        (e.status, e.envelope_id.as_str(), e.amount),
        (EscrowStatus::Released, ENVELOPE, PRICE)
    );

    // settled once: no second release, no refund after release
    assert_eq!(
        custom(t.release(listing, escrow).await),
        code(EscrowError::AlreadySettled)
    );
    t.advance(WINDOW + 1).await;
    assert_eq!(
        custom(t.refund(listing, &buyer_kp).await),
        code(EscrowError::AlreadySettled)
    );
    assert_eq!(
        custom(t.slash(listing, &buyer).await),
        code(EscrowError::NoCause),
        "no slash without cause"
    );

    let s2 = t.lamports(&seller).await;
    t.cancel(listing).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s2 + STAKE + listing_rent);
    assert_eq!(t.lamports(&listing).await, 0, "closed to the seller");
}

#[tokio::test]
async fn refund_after_the_window_then_slash_once() {
    let mut t = T::new().await;
    t.init_config(FEE_BPS).await.unwrap();
    let buyer_kp = t.buyer.insecure_clone();
    let buyer = buyer_kp.pubkey();
    let listing = t.create_listing(LISTING_ID, PRICE, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer_kp).await.unwrap();

    assert_eq!(
        custom(t.refund(listing, &buyer_kp).await),
        code(EscrowError::ReleaseWindowOpen)
    );
    t.advance(WINDOW - 5).await;
    assert_eq!(
        custom(t.refund(listing, &buyer_kp).await),
        code(EscrowError::ReleaseWindowOpen)
    );
    t.advance(10).await;
    let b0 = t.lamports(&buyer).await;
    t.refund(listing, &buyer_kp).await.unwrap();
    assert_eq!(t.lamports(&buyer).await, b0 + PRICE);
    assert_eq!(
        custom(t.release(listing, escrow).await),
        code(EscrowError::AlreadySettled),
        "release after refund"
    );
    assert_eq!(
        custom(t.refund(listing, &buyer_kp).await),
        code(EscrowError::AlreadySettled)
    );
    assert_eq!(
        custom(t.cancel(listing).await),
        code(EscrowError::OpenEscrows),
        "owes a slash"
    );

    let (b1, l0) = (t.lamports(&buyer).await, t.lamports(&listing).await);
    t.slash(listing, &buyer).await.unwrap();
    let share = STAKE * SLASH_BPS as u64 / 10_000;
    assert_eq!(t.lamports(&buyer).await, b1 + share);
    assert_eq!(t.lamports(&listing).await, l0 - share);
    let l: Listing = t.read(&listing).await;
    assert_eq!(
        (l.stake, l.unslashed_refunds, l.open_escrows),
        (STAKE - share, 0, 0)
    );
    assert_eq!(
        custom(t.slash(listing, &buyer).await),
        code(EscrowError::AlreadySlashed)
    );

    let s0 = t.lamports(&t.seller.pubkey()).await;
    t.cancel(listing).await.unwrap();
    assert_eq!(t.lamports(&t.seller.pubkey()).await, s0 + l0 - share);
}

#[tokio::test]
async fn only_the_upgrade_authority_sets_the_config() {
    let mut t = T::new().await;
    let other = t.other.insecure_clone();
    // someone front-running the deploy with their own treasury
    assert_eq!(
        custom(
            t.init_config_as(&other, common::program_data_address(), FEE_BPS)
                .await
        ),
        code(EscrowError::NotUpgradeAuthority)
    );
    // ...or passing a ProgramData of their own making at another address
    let fake = Pubkey::new_unique();
    t.ctx.set_account(
        &fake,
        &solana_sdk::account::AccountSharedData::from(Account {
            lamports: SOL,
            data: [
                &3u32.to_le_bytes()[..],
                &0u64.to_le_bytes(),
                &[1],
                other.pubkey().as_ref(),
            ]
            .concat(),
            owner: common::UPGRADEABLE_LOADER,
            executable: false,
            rent_epoch: 0,
        }),
    );
    assert_eq!(
        custom(t.init_config_as(&other, fake, FEE_BPS).await),
        anchor_lang::error::ErrorCode::ConstraintSeeds as u32
    );
    assert_eq!(t.lamports(&config_pda()).await, 0, "no config yet");
    // the upgrade authority sets it, once
    t.init_config(FEE_BPS).await.unwrap();
    let c: Config = t.read(&config_pda()).await;
    assert_eq!(
        (c.admin, c.treasury),
        (t.admin.pubkey(), t.treasury.pubkey())
    );
    assert!(t.init_config(FEE_BPS).await.is_err(), "set once");
}

#[tokio::test]
async fn wrong_signers_pdas_and_accounts_are_refused() {
    let mut t = T::new().await;
    t.init_config(FEE_BPS).await.unwrap();
    let buyer_kp = t.buyer.insecure_clone();
    let other = t.other.insecure_clone();
    let listing = t.create_listing(LISTING_ID, PRICE, STAKE).await.unwrap();
    let escrow = t.deposit(listing, &buyer_kp).await.unwrap();
    let before = t.lamports(&escrow).await;

    // the buyer (or anyone) signing as the seller
    let ix = t.release_ix(listing, escrow, &other.pubkey(), t.treasury.pubkey(), HASH);
    assert_eq!(
        custom(t.send(ix, &[&other]).await),
        code(EscrowError::NotSeller)
    );
    // the right seller, a treasury of their choosing
    let seller = t.seller.insecure_clone();
    let ix = t.release_ix(listing, escrow, &seller.pubkey(), seller.pubkey(), HASH);
    assert_eq!(
        custom(t.send(ix, &[&seller]).await),
        code(EscrowError::WrongTreasury)
    );
    // a bundle hash other than the listed one
    let ix = t.release_ix(
        listing,
        escrow,
        &seller.pubkey(),
        t.treasury.pubkey(),
        [8; 32],
    );
    assert_eq!(
        custom(t.send(ix, &[&seller]).await),
        code(EscrowError::BundleHashMismatch)
    );
    // someone else asking for the buyer's refund: the escrow PDA is not theirs
    t.advance(WINDOW).await;
    let ix = T::ix(
        escrow::accounts::Refund {
            config: config_pda(),
            listing,
            escrow,
            buyer: other.pubkey(),
        },
        escrow::instruction::Refund {},
    );
    assert_eq!(
        custom(t.send(ix, &[&other]).await),
        anchor_lang::error::ErrorCode::ConstraintSeeds as u32
    );
    // a deposit into an escrow address that is not the PDA of (listing, buyer)
    let ix = T::ix(
        escrow::accounts::Deposit {
            listing,
            escrow: escrow_pda(&listing, &t.seller.pubkey()),
            buyer: other.pubkey(),
            system_program: SYSTEM,
        },
        escrow::instruction::Deposit {
            buyer_x25519: [0; 32],
        },
    );
    assert_eq!(
        custom(t.send(ix, &[&other]).await),
        anchor_lang::error::ErrorCode::ConstraintSeeds as u32
    );
    assert_eq!(t.lamports(&escrow).await, before, "nothing moved");
    let e: Escrow = t.read(&escrow).await;
    assert_eq!(e.status, EscrowStatus::Deposited);
    // a cancel with a deposit held
    assert_eq!(
        custom(t.cancel(listing).await),
        code(EscrowError::OpenEscrows)
    );
}

#[tokio::test]
async fn limits_and_edge_amounts() {
    let mut t = T::new().await;
    assert_eq!(
        custom(t.init_config(1_001).await),
        code(EscrowError::FeeTooHigh)
    );
    t.init_config(1_000).await.unwrap();
    assert_eq!(
        custom(t.create_listing(LISTING_ID, 0, STAKE).await.map(|_| ())),
        code(EscrowError::ZeroPrice)
    );
    assert_eq!(
        custom(
            t.create_listing(LISTING_ID, PRICE, STAKE - 1)
                .await
                .map(|_| ())
        ),
        code(EscrowError::StakeTooLow)
    );
    assert_eq!(
        custom(
            t.create_listing("not-a-listing-id-xxxx", PRICE, STAKE)
                .await
                .map(|_| ())
        ),
        code(EscrowError::BadListingId)
    );
    // a stake of u64::MAX cannot be paid: the system transfer fails, nothing moves
    let s0 = t.lamports(&t.seller.pubkey()).await;
    assert!(t.create_listing(LISTING_ID, PRICE, u64::MAX).await.is_err());
    assert_eq!(t.lamports(&t.seller.pubkey()).await, s0);
    // a price of u64::MAX lists, but no deposit can pay it
    let listing = t.create_listing(LISTING_ID, u64::MAX, STAKE).await.unwrap();
    let buyer_kp = t.buyer.insecure_clone();
    let b0 = t.lamports(&buyer_kp.pubkey()).await;
    assert!(t.deposit(listing, &buyer_kp).await.is_err());
    assert_eq!(t.lamports(&buyer_kp.pubkey()).await, b0);
    // expiry
    let second = t
        .create_listing("20261123-00000000000f", PRICE, STAKE)
        .await
        .unwrap();
    t.advance(86_400).await;
    assert_eq!(
        custom(t.deposit(second, &buyer_kp).await.map(|_| ())),
        code(EscrowError::ListingExpired)
    );
}

#[test]
fn fee_and_share_math_do_not_overflow() {
    assert_eq!(escrow::fee_of(u64::MAX, 1_000), u64::MAX / 10 + 1);
    assert_eq!(escrow::fee_of(0, 1_000), 0);
    assert_eq!(escrow::fee_of(1, 1), 1, "rounded up");
    assert_eq!(escrow::share_of(u64::MAX, 10_000), u64::MAX);
    assert_eq!(escrow::share_of(1, 5_000), 0, "rounded down");
}

/// A treasury that cannot hold a fee (never funded, so the fee alone would
/// leave it under rent exemption) never fails a release: the seller gets
/// the fee instead. A fee that makes it rent-exempt is paid as usual, and
/// from then on every fee is.
#[tokio::test]
async fn an_unfunded_treasury_never_fails_a_release() {
    let mut t = T::new().await;
    t.treasury = Keypair::new(); // no account: 0 lamports
    t.init_config(FEE_BPS).await.unwrap();
    let treasury = t.treasury.pubkey();
    let small = 10_000_000; // fee 250,000: under the 890,880 rent minimum
    let buyer = t.buyer.insecure_clone();
    let other = t.other.insecure_clone();
    let seller = t.seller.pubkey();

    let first = t.create_listing(LISTING_ID, small, STAKE).await.unwrap();
    let escrow = t.deposit(first, &buyer).await.unwrap();
    let s0 = t.lamports(&seller).await;
    t.release(first, escrow).await.unwrap();
    assert_eq!(
        t.lamports(&seller).await,
        s0 + small,
        "the fee went to the seller"
    );
    assert_eq!(t.lamports(&treasury).await, 0);

    // a fee large enough to fund the treasury is paid to it
    let big = t
        .create_listing("20261123-0123456789ac", PRICE, STAKE)
        .await
        .unwrap();
    let escrow = t.deposit(big, &buyer).await.unwrap();
    let fee = PRICE * FEE_BPS as u64 / 10_000;
    let s0 = t.lamports(&seller).await;
    t.release(big, escrow).await.unwrap();
    assert_eq!(t.lamports(&seller).await, s0 + PRICE - fee);
    assert_eq!(t.lamports(&treasury).await, fee);

    // now rent-exempt, it takes small fees too
    let escrow = t.deposit(first, &other).await.unwrap();
    t.release(first, escrow).await.unwrap();
    assert_eq!(
        t.lamports(&treasury).await,
        fee + small * FEE_BPS as u64 / 10_000
    );
}

/// Compute units of each instruction (the transaction's, less the
/// compute-budget instruction's 150): printed for the notes; against the
/// SBF build (`BRAINCTL_ESCROW_SO`) each must be real BPF work and fit far
/// under the 200,000 default.
#[tokio::test]
async fn compute_units_per_instruction() {
    let mut t = T::new().await;
    let mut cu = Vec::new();
    t.init_config(FEE_BPS).await.unwrap();
    cu.push(("initialize_config", t.last_cu));
    let listing = t.create_listing(LISTING_ID, PRICE, STAKE).await.unwrap();
    cu.push(("create_listing", t.last_cu));
    let buyer = t.buyer.insecure_clone();
    let escrow = t.deposit(listing, &buyer).await.unwrap();
    cu.push(("deposit", t.last_cu));
    t.release(listing, escrow).await.unwrap();
    cu.push(("release", t.last_cu));
    let other = t.other.insecure_clone();
    t.deposit(listing, &other).await.unwrap();
    t.advance(WINDOW).await;
    t.refund(listing, &other).await.unwrap();
    cu.push(("refund", t.last_cu));
    t.slash(listing, &other.pubkey()).await.unwrap();
    cu.push(("slash", t.last_cu));
    t.cancel(listing).await.unwrap();
    cu.push(("cancel_listing", t.last_cu));
    let sbf = common::sbf_program().is_some();
    eprintln!(
        "escrow compute units ({}): {cu:?}",
        if sbf { "SBF .so" } else { "native" }
    );
    if sbf {
        for (name, units) in &cu {
            assert!(
                (1_000..100_000).contains(units),
                "{name}: {units} CU is not BPF work under the limit"
            );
        }
    }
}
