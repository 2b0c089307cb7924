//! The node's escrow trade against the program in `solana-program-test`:
//! the very plans `marketplace list --escrow`, `buy` and `refund` send and
//! the checks `listen` makes (`verify_escrow_buy` on the buy transaction
//! and the escrow account as the bank holds it), with hostile buys, the
//! release the daemon appends to its release transaction, and a buyer's
//! refund + slash after the window. Balances to the lamport.

mod common;

use node::chain::instructions::{default_registry, memo};
use node::chain::ParsedTx;
use node::escrow::{self as client, ConfigAccount, EscrowAccount, EscrowStatus, ListingAccount};
use node::market::escrow_trade::{self as plan, EscrowPlanError};
use node::market::manifest::{build_listing, Listing, NewListing};
use node::market::MemoOp;
use node::settle::{verify_escrow_buy, ListingTerms, Rejection};
use node::wallet::Wallet;
use solana_program_test::{BanksClientError, ProgramTest, ProgramTestContext};
use solana_sdk::account::Account;
use solana_sdk::clock::Clock;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::rent::Rent;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::Transaction;

const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");
const SOL: u64 = 1_000_000_000;
const PRICE: u64 = 250_000_000;
const STAKE: u64 = 100_000_000;
const FEE_BPS: u16 = 100;
const SLASH_BPS: u16 = 5_000;
const WINDOW: i64 = 600;
const HASH: &str = "8e1f1b2b4a3c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";

struct Trade {
    ctx: ProgramTestContext,
    seller: Wallet,
    treasury: Keypair,
    buyers: Vec<Wallet>,
}

impl Trade {
    async fn new() -> Trade {
        let mut pt = ProgramTest::default();
        let seller = Wallet::generate();
        let buyers: Vec<Wallet> = (0..3).map(|_| Wallet::generate()).collect();
        let treasury = Keypair::new();
        let admin = Keypair::new();
        let keys: Vec<Pubkey> = std::iter::once(&seller)
            .chain(&buyers)
            .map(|w| w.solana_keypair().pubkey())
            .chain([treasury.pubkey(), admin.pubkey()])
            .collect();
        for k in keys {
            pt.add_account(k, Account::new(10 * SOL, 0, &SYSTEM));
        }
        common::add_program_data(&mut pt, Some(&admin.pubkey()));
        let ctx = common::start(pt).await;
        let mut t = Trade {
            ctx,
            seller,
            treasury,
            buyers,
        };
        let payer = t.ctx.payer.insecure_clone();
        let init = client::initialize_config(
            &admin.pubkey(),
            &client::NewConfig {
                treasury: t.treasury.pubkey(),
                fee_bps: FEE_BPS,
                slash_bps: SLASH_BPS,
                release_window_secs: WINDOW,
                min_stake: STAKE,
            },
        );
        t.send(vec![init], &payer, &[&admin]).await.unwrap();
        t
    }

    /// Sends `ixs` with `payer` paying and signing, plus `signers`, on a
    /// fresh blockhash (so identical sends are distinct transactions).
    async fn send(
        &mut self,
        ixs: Vec<Instruction>,
        payer: &Keypair,
        signers: &[&Keypair],
    ) -> Result<Transaction, BanksClientError> {
        let mut all = vec![payer];
        all.extend_from_slice(signers);
        let blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
        let tx = Transaction::new_signed_with_payer(&ixs, Some(&payer.pubkey()), &all, blockhash);
        self.ctx
            .banks_client
            .process_transaction(tx.clone())
            .await
            .map(|()| tx)
    }

    async fn account(&mut self, k: &Pubkey) -> Option<Account> {
        self.ctx.banks_client.get_account(*k).await.unwrap()
    }

    async fn lamports(&mut self, k: &Pubkey) -> u64 {
        self.account(k).await.map_or(0, |a| a.lamports)
    }

    async fn config(&mut self) -> ConfigAccount {
        let a = self.account(&client::config_address()).await.unwrap();
        ConfigAccount::decode(&a.owner, &a.data).unwrap()
    }

    async fn listing_account(&mut self, id: &str) -> ListingAccount {
        let at = client::listing_address(&self.seller.solana_keypair().pubkey(), id);
        let a = self.account(&at).await.unwrap();
        ListingAccount::decode(&a.owner, &a.data).unwrap()
    }

    async fn escrow_of(&mut self, id: &str, buyer: &Pubkey) -> Option<EscrowAccount> {
        let listing = client::listing_address(&self.seller.solana_keypair().pubkey(), id);
        let a = self
            .account(&client::escrow_address(&listing, buyer))
            .await?;
        Some(EscrowAccount::decode(&a.owner, &a.data).unwrap())
    }

    async fn now(&mut self) -> (i64, u64) {
        let clock: Clock = self.ctx.banks_client.get_sysvar().await.unwrap();
        (clock.unix_timestamp, clock.slot)
    }

    async fn advance(&mut self, secs: i64) {
        let mut clock: Clock = self.ctx.banks_client.get_sysvar().await.unwrap();
        clock.unix_timestamp += secs;
        self.ctx.set_sysvar(&clock);
    }

    /// `list --escrow`: the signed manifest, then `create_listing` + the
    /// `list` memo in one transaction; returns the manifest, the config
    /// and the listing account as the bank holds it.
    async fn list(&mut self, id: &str) -> (Listing, ConfigAccount, ListingAccount) {
        let seller_kp = self.seller.solana_keypair();
        let listing = self.manifest(id, PRICE, Some(client::PROGRAM_ID)).await;
        let config = self.config().await;
        let create = plan::list_instruction(&seller_kp.pubkey(), &listing, STAKE, &config).unwrap();
        let list_op = MemoOp::List {
            listing_arweave_id: "manifest-item".into(),
            bundle_hash: HASH.into(),
        };
        let memo_ix = memo(&list_op.to_string(), &seller_kp.pubkey());
        self.send(vec![create, memo_ix], &seller_kp, &[])
            .await
            .unwrap();
        let onchain = self.listing_account(id).await;
        (listing, config, onchain)
    }

    /// The signed listing manifest `list --escrow` would upload.
    async fn manifest(&mut self, id: &str, price: u64, program: Option<&str>) -> Listing {
        let (now, _) = self.now().await;
        let v = build_listing(
            &self.seller,
            &NewListing {
                listing_id: id,
                bundle_hash: HASH,
                payment_address: None,
                price_usd: 25.0,
                price_lamports: price,
                duration_hours: 24.0,
                visibility: "auction",
                encrypted_bundle_uri: "ar://blob",
                metadata_uri: "ar://meta",
                preview: serde_json::json!({}),
                now,
                escrow_program: program,
            },
        )
        .unwrap();
        Listing::from_value(v).unwrap()
    }
}

/// A buyer's X25519 key as the deposit records it.
fn x25519_of(buyer: &Wallet) -> [u8; 32] {
    bs58::decode(buyer.x25519_address())
        .into_vec()
        .unwrap()
        .try_into()
        .unwrap()
}

/// What `getTransaction` would give `listen` for a landed transaction:
/// signers, top-level memos and escrow-program calls, slot and block time.
fn parsed(tx: &Transaction, slot: u64, block_time: i64) -> ParsedTx {
    let msg = &tx.message;
    let keys = &msg.account_keys;
    let mut memos = Vec::new();
    let mut calls = Vec::new();
    for ix in &msg.instructions {
        let program = keys[ix.program_id_index as usize];
        let accounts: Vec<String> = ix
            .accounts
            .iter()
            .map(|i| keys[*i as usize].to_string())
            .collect();
        if node::chain::instructions::is_memo_program(&program.to_string()) {
            memos.push(String::from_utf8(ix.data.clone()).unwrap());
        } else if program == escrow::ID {
            calls.push(node::chain::ProgramCall {
                program_id: program.to_string(),
                accounts,
                data: ix.data.clone(),
            });
        }
    }
    ParsedTx {
        signature: tx.signatures[0].to_string(),
        slot,
        block_time: Some(block_time),
        succeeded: true,
        signers: keys[..msg.header.num_required_signatures as usize]
            .iter()
            .map(Pubkey::to_string)
            .collect(),
        memos,
        transfers: vec![],
        logs: vec![],
        calls,
        legacy_deposits: vec![],
        anomalies: vec![],
    }
}

/// The program `release` `listen` sends for `buyer` (envelope `envelope-item`).
fn release_of(seller: &Pubkey, id: &str, buyer: &Pubkey, config: &ConfigAccount) -> Instruction {
    plan::release_instruction(seller, id, buyer, &config.treasury, "envelope-item", HASH).unwrap()
}

fn terms(l: &Listing) -> ListingTerms {
    ListingTerms {
        listing_id: l.listing_id.clone(),
        payment_address: l.payment_address.clone(),
        price_lamports: l.price_lamports.unwrap(),
        expires_at: l.expires_at,
        cancelled_at_slot: None,
        fee: None,
    }
}

#[tokio::test]
async fn list_buy_verify_release_through_the_program_and_refuse_hostile_buys() {
    let mut t = Trade::new().await;
    let id = "20261123-e5c0000000a1";
    let seller_kp = t.seller.solana_keypair();
    let seller = seller_kp.pubkey();
    let seller_before = t.lamports(&seller).await;
    let (listing, config, onchain) = t.list(id).await;
    assert_eq!(
        plan::list_instruction(&seller, &listing, STAKE - 1, &config),
        Err(EscrowPlanError::StakeTooLow {
            stake: STAKE - 1,
            min: STAKE
        })
    );
    assert_eq!(
        (onchain.price_lamports, onchain.stake, onchain.expires_at),
        (PRICE, STAKE, listing.expires_at)
    );
    assert!(
        seller_before - t.lamports(&seller).await > STAKE,
        "stake moved"
    );

    // the buyer's checks against the signed manifest, before any money moves
    let (now, _) = t.now().await;
    let buyer = t.buyers.remove(0);
    let buyer_kp = buyer.solana_keypair();
    let x25519 = x25519_of(&buyer);
    let reg = default_registry();
    let cheaper = t.manifest(id, PRICE - 1, Some(client::PROGRAM_ID)).await;
    assert!(matches!(
        plan::buy_instructions(&buyer_kp.pubkey(), &x25519, &cheaper, &onchain, &reg, now),
        Err(EscrowPlanError::Mismatch {
            field: "price_lamports",
            ..
        })
    ));
    let evil = t
        .manifest(
            id,
            PRICE,
            Some("Evi1111111111111111111111111111111111111111"),
        )
        .await;
    assert!(matches!(
        plan::buy_instructions(&buyer_kp.pubkey(), &x25519, &evil, &onchain, &reg, now),
        Err(EscrowPlanError::UnknownProgram(_))
    ));
    let direct = t.manifest(id, PRICE, None).await;
    assert!(matches!(
        plan::buy_instructions(&buyer_kp.pubkey(), &x25519, &direct, &onchain, &reg, now),
        Err(EscrowPlanError::NotEscrow(_))
    ));
    assert!(matches!(
        plan::buy_instructions(
            &buyer_kp.pubkey(),
            &x25519,
            &listing,
            &onchain,
            &reg,
            listing.expires_at
        ),
        Err(EscrowPlanError::Closed(_, "expired"))
    ));

    // `buy`: the buyer alone signs and pays; the price sits in the escrow
    let ixs =
        plan::buy_instructions(&buyer_kp.pubkey(), &x25519, &listing, &onchain, &reg, now).unwrap();
    let buy = t.send(ixs, &buyer_kp, &[]).await.unwrap();
    let (block_time, slot) = t.now().await;
    let account = client::listing_address(&seller, id);
    let escrow_key = client::escrow_address(&account, &buyer_kp.pubkey());
    let rent: Rent = t.ctx.banks_client.get_sysvar().await.unwrap();
    let receipt_rent = rent.minimum_balance(t.account(&escrow_key).await.unwrap().data.len());
    assert_eq!(t.lamports(&escrow_key).await, PRICE + receipt_rent);

    // `listen`: the buy transaction + the escrow as the bank holds it
    let tx = parsed(&buy, slot, block_time);
    let state = t.escrow_of(id, &buyer_kp.pubkey()).await;
    let verified =
        verify_escrow_buy(&tx, &terms(&listing), &account.to_string(), state.as_ref()).unwrap();
    assert_eq!(
        (
            verified.buyer.as_str(),
            verified.paid_lamports,
            verified.buyer_x25519.as_str()
        ),
        (
            buyer_kp.pubkey().to_string().as_str(),
            PRICE,
            buyer.x25519_address().as_str()
        )
    );

    // hostile: a replayed buy memo without its own deposit...
    let replay_op = MemoOp::Buy {
        listing_id: id.into(),
        buyer_x25519: buyer.x25519_address(),
    };
    let replay = t
        .send(
            vec![memo(&replay_op.to_string(), &buyer_kp.pubkey())],
            &buyer_kp,
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        verify_escrow_buy(
            &parsed(&replay, slot, block_time),
            &terms(&listing),
            &account.to_string(),
            state.as_ref()
        ),
        Err(Rejection::NoEscrowDeposit {
            listing_account: account.to_string()
        })
    );
    // ...and a second deposit by the same buyer fails on chain (one escrow per buyer)
    let again =
        plan::buy_instructions(&buyer_kp.pubkey(), &x25519, &listing, &onchain, &reg, now).unwrap();
    assert!(t.send(again, &buyer_kp, &[]).await.is_err());
    // a buy co-signed by a third party (who could pay for someone else)
    let mallory = Keypair::new();
    let cosigned = parsed(&buy, slot, block_time);
    let mut cosigned = cosigned;
    cosigned.signers.push(mallory.pubkey().to_string());
    assert_eq!(
        verify_escrow_buy(
            &cosigned,
            &terms(&listing),
            &account.to_string(),
            state.as_ref()
        ),
        Err(Rejection::ExtraSigners { signers: 2 })
    );

    // `listen`'s release: the release memo + the escrow release, one transaction
    let seller_before = t.lamports(&seller).await;
    let treasury_before = t.lamports(&t.treasury.pubkey()).await;
    let release_op = MemoOp::Release {
        listing_id: id.into(),
        envelope_arweave_id: "envelope-item".into(),
        minted_token_address: Pubkey::new_unique().to_string(),
    };
    let release_ix = release_of(&seller, id, &buyer_kp.pubkey(), &config);
    let payer = t.ctx.payer.insecure_clone();
    t.send(
        vec![memo(&release_op.to_string(), &seller), release_ix.clone()],
        &payer,
        &[&seller_kp],
    )
    .await
    .unwrap();
    let fee = (PRICE as u128 * FEE_BPS as u128).div_ceil(10_000) as u64;
    assert_eq!(t.lamports(&seller).await, seller_before + PRICE - fee);
    assert_eq!(
        t.lamports(&t.treasury.pubkey()).await,
        treasury_before + fee
    );
    assert_eq!(
        t.lamports(&escrow_key).await,
        receipt_rent,
        "receipt keeps its rent"
    );
    let settled = t.escrow_of(id, &buyer_kp.pubkey()).await.unwrap();
    assert_eq!(
        (settled.status, settled.envelope_id.as_str()),
        (EscrowStatus::Released, "envelope-item")
    );
    // a second release of the same escrow (a crashed daemon re-sending) fails on chain
    assert!(t
        .send(
            vec![memo(&release_op.to_string(), &seller), release_ix],
            &payer,
            &[&seller_kp]
        )
        .await
        .is_err());
    assert_eq!(t.lamports(&seller).await, seller_before + PRICE - fee);
    // re-verifying the buy now: already released, never released twice
    assert_eq!(
        verify_escrow_buy(&tx, &terms(&listing), &account.to_string(), Some(&settled)),
        Err(Rejection::EscrowSettled {
            status: EscrowStatus::Released
        })
    );
}

#[tokio::test]
async fn an_unreleased_escrow_is_refunded_after_the_window_with_the_slash() {
    let mut t = Trade::new().await;
    let id = "20261123-e5c0000000b2";
    let seller_kp = t.seller.solana_keypair();
    let seller = seller_kp.pubkey();
    let (listing, config, onchain) = t.list(id).await;
    let buyer = t.buyers.remove(1);
    let buyer_kp = buyer.solana_keypair();
    let x25519 = x25519_of(&buyer);
    let (now, _) = t.now().await;
    let ixs = plan::buy_instructions(
        &buyer_kp.pubkey(),
        &x25519,
        &listing,
        &onchain,
        &default_registry(),
        now,
    )
    .unwrap();
    t.send(ixs, &buyer_kp, &[]).await.unwrap();
    let account = client::listing_address(&seller, id);
    let state = t.escrow_of(id, &buyer_kp.pubkey()).await;

    // before the window ends the plan refuses (and would fail on chain)
    let (now, _) = t.now().await;
    assert_eq!(
        plan::refund_instructions(
            &buyer_kp.pubkey(),
            &account,
            id,
            state.as_ref(),
            &config,
            now
        ),
        Err(EscrowPlanError::WindowOpen {
            opens_at: state.as_ref().unwrap().deposited_at + WINDOW
        })
    );
    // someone else's escrow is not theirs to refund
    let other = t.buyers[1].solana_keypair().pubkey();
    assert_eq!(
        plan::refund_instructions(&other, &account, id, state.as_ref(), &config, now),
        Err(EscrowPlanError::NoEscrow(id.into()))
    );

    t.advance(WINDOW).await;
    let (now, _) = t.now().await;
    let refund = plan::refund_instructions(
        &buyer_kp.pubkey(),
        &account,
        id,
        state.as_ref(),
        &config,
        now,
    )
    .unwrap();
    let payer = t.ctx.payer.insecure_clone();
    let before = t.lamports(&buyer_kp.pubkey()).await;
    t.send(refund, &payer, &[&buyer_kp]).await.unwrap();
    let slash = (STAKE as u128 * SLASH_BPS as u128 / 10_000) as u64;
    assert_eq!(
        t.lamports(&buyer_kp.pubkey()).await,
        before + PRICE + slash,
        "price back plus half the stake"
    );
    let refunded = t.escrow_of(id, &buyer_kp.pubkey()).await.unwrap();
    assert_eq!(
        (refunded.status, refunded.slashed),
        (EscrowStatus::Refunded, true)
    );
    assert_eq!(t.listing_account(id).await.stake, STAKE - slash);
    // the seller's late release can no longer take the money
    let late = release_of(&seller, id, &buyer_kp.pubkey(), &config);
    assert!(t.send(vec![late], &payer, &[&seller_kp]).await.is_err());
    // and nothing is refunded twice
    assert_eq!(
        plan::refund_instructions(
            &buyer_kp.pubkey(),
            &account,
            id,
            Some(&refunded),
            &config,
            now
        ),
        Err(EscrowPlanError::Settled(EscrowStatus::Refunded))
    );
}

/// A stranger's deposit, as the program accepts it outside our client.
#[derive(Debug, Clone, Copy)]
enum DepositShape {
    /// `deposit` alone: no memo, no payment address.
    Bare,
    /// With a `buy` memo naming another X25519 key than the deposit's.
    MemoWithAnotherKey,
    /// Co-signed by a second wallet (which pays the fee).
    ExtraSigner,
    /// With an extra account appended to the `deposit` instruction.
    ExtraAccount,
    /// Our client's own buy, for comparison.
    Client,
}

impl Trade {
    /// A new wallet with `sol` SOL from the test payer.
    async fn funded(&mut self, sol: u64) -> Wallet {
        let w = Wallet::generate();
        let payer = self.ctx.payer.insecure_clone();
        let to = w.solana_keypair().pubkey();
        let ix = node::chain::instructions::transfer(&payer.pubkey(), &to, sol * SOL);
        self.send(vec![ix], &payer, &[]).await.unwrap();
        w
    }

    /// `buyer` deposits into listing `id` in `shape`.
    async fn deposit_as(&mut self, shape: DepositShape, buyer: &Wallet, listing: &Listing) {
        let kp = buyer.solana_keypair();
        let account =
            client::listing_address(&self.seller.solana_keypair().pubkey(), &listing.listing_id);
        let key = x25519_of(buyer);
        let mut deposit = client::deposit(&account, &kp.pubkey(), &key);
        let other = Wallet::generate();
        let buy_memo = |x: &str| {
            let op = MemoOp::Buy {
                listing_id: listing.listing_id.clone(),
                buyer_x25519: x.into(),
            };
            memo(&op.to_string(), &kp.pubkey())
        };
        match shape {
            DepositShape::Bare => self.send(vec![deposit], &kp, &[]).await,
            DepositShape::MemoWithAnotherKey => {
                let ixs = vec![deposit, buy_memo(&other.x25519_address())];
                self.send(ixs, &kp, &[]).await
            }
            DepositShape::ExtraSigner => {
                let payer = self.ctx.payer.insecure_clone();
                self.send(vec![deposit], &payer, &[&kp]).await
            }
            DepositShape::ExtraAccount => {
                deposit
                    .accounts
                    .push(solana_sdk::instruction::AccountMeta::new_readonly(
                        other.solana_keypair().pubkey(),
                        false,
                    ));
                self.send(vec![deposit], &kp, &[]).await
            }
            DepositShape::Client => {
                let onchain = self.listing_account(&listing.listing_id).await;
                let (now, _) = self.now().await;
                let ixs = plan::buy_instructions(
                    &kp.pubkey(),
                    &key,
                    listing,
                    &onchain,
                    &default_registry(),
                    now,
                )
                .unwrap();
                self.send(ixs, &kp, &[]).await
            }
        }
        .unwrap_or_else(|e| panic!("{shape:?} deposit: {e}"));
    }
}

/// Every deposit the program accepted is found in the program's state
/// (memo or none, any shape), recorded once with the X25519 key the escrow
/// holds, and released by the very `release` `listen` sends: the seller is
/// paid, no buyer can refund or slash after the window, the stake stays.
/// Then `cancel` closes the listing in the program (stake and rent back),
/// and a deposit after it fails on chain.
#[tokio::test]
async fn every_deposit_the_program_holds_is_released_and_cancel_closes_the_listing() {
    use node::listen::deposits::held_of;
    use node::listen::ListenDb;
    let mut t = Trade::new().await;
    let id = "20261123-e5c0000000c3";
    let seller_kp = t.seller.solana_keypair();
    let seller = seller_kp.pubkey();
    let (listing, config, _) = t.list(id).await;
    let account = client::listing_address(&seller, id);
    let shapes = [
        DepositShape::Bare,
        DepositShape::MemoWithAnotherKey,
        DepositShape::ExtraSigner,
        DepositShape::ExtraAccount,
        DepositShape::Client,
    ];
    let mut buyers = Vec::new();
    for shape in shapes {
        let b = t.funded(2).await;
        t.deposit_as(shape, &b, &listing).await;
        buyers.push(b);
    }
    assert_eq!(
        t.listing_account(id).await.open_escrows,
        shapes.len() as u32
    );

    // cancel is refused while deposits are held, by the plan and the program
    let onchain = t.listing_account(id).await;
    assert!(matches!(
        plan::cancel_instructions(&seller, id, Some(&onchain)),
        Err(EscrowPlanError::StillHeld {
            open_escrows: 5,
            ..
        })
    ));
    let forced = client::cancel_listing(&seller, id);
    assert!(t.send(vec![forced], &seller_kp, &[]).await.is_err());

    // what getProgramAccounts returns for the program, decoys included
    let mut accounts = Vec::new();
    for b in &buyers {
        let at = client::escrow_address(&account, &b.solana_keypair().pubkey());
        let a = t.account(&at).await.unwrap();
        accounts.push((at, a.owner, a.data));
    }
    let l = t.account(&account).await.unwrap();
    accounts.push((account, l.owner, l.data));
    let held = held_of(&account, accounts);
    assert_eq!(held.len(), buyers.len(), "every deposit, no decoy");

    let dir = tempfile::tempdir().unwrap();
    let mut db = ListenDb::open(&dir.path().join("listen.db")).unwrap();
    let seller_before = t.lamports(&seller).await;
    for h in &held {
        let b = buyers
            .iter()
            .find(|b| b.solana_keypair().pubkey() == h.account.buyer)
            .unwrap();
        // the key to seal to is the escrow's: the buyer's own, whatever a memo said
        assert_eq!(h.account.buyer_x25519, x25519_of(b));
        let buy = node::listen::VerifiedBuy {
            signature: h.escrow.to_string(),
            listing_id: id.into(),
            buyer: h.account.buyer.to_string(),
            buyer_x25519: bs58::encode(h.account.buyer_x25519).into_string(),
            paid_lamports: h.account.amount,
            price_lamports: PRICE,
            offer_id: None,
            slot: 1,
        };
        assert_eq!(
            db.record_deposit(&buy).unwrap(),
            node::listen::Step::Applied
        );
        assert_eq!(
            db.record_deposit(&buy).unwrap(),
            node::listen::Step::AlreadyDone,
            "recorded once"
        );
        let release = release_of(&seller, id, &h.account.buyer, &config);
        t.send(vec![release], &seller_kp, &[]).await.unwrap();
    }
    assert_eq!(
        db.due(node::listen::BuyState::Verified, i64::MAX)
            .unwrap()
            .len(),
        buyers.len()
    );
    let fee = (PRICE as u128 * FEE_BPS as u128 / 10_000) as u64;
    let fees_paid = 5_000 * buyers.len() as u64;
    assert_eq!(
        t.lamports(&seller).await,
        seller_before + (PRICE - fee) * buyers.len() as u64 - fees_paid,
        "paid for every deposit"
    );

    // after the window nobody can refund or slash: the stake stays whole
    t.advance(WINDOW + 1).await;
    let payer = t.ctx.payer.insecure_clone();
    for b in &buyers {
        let kp = b.solana_keypair();
        let refund = client::refund(&account, &kp.pubkey());
        assert!(t.send(vec![refund], &payer, &[&kp]).await.is_err());
        let slash = client::slash(&account, &kp.pubkey(), &payer.pubkey());
        assert!(t.send(vec![slash], &payer, &[]).await.is_err());
    }
    let onchain = t.listing_account(id).await;
    assert_eq!((onchain.stake, onchain.open_escrows), (STAKE, 0));

    // cancel: `cancel_listing` + the memo in one transaction; the account
    // closes to the seller with stake and rent
    let rent = t.lamports(&account).await;
    let mut ixs = plan::cancel_instructions(&seller, id, Some(&onchain)).unwrap();
    assert_eq!(ixs.len(), 1);
    let op = MemoOp::Cancel {
        listing_id: id.into(),
    };
    ixs.push(memo(&op.to_string(), &seller));
    let before = t.lamports(&seller).await;
    t.send(ixs, &seller_kp, &[]).await.unwrap();
    assert!(t.account(&account).await.is_none(), "closed");
    assert_eq!(t.lamports(&seller).await, before + rent - 5_000);
    assert_eq!(plan::cancel_instructions(&seller, id, None), Ok(vec![]));
    // a deposit after the cancel fails on chain
    let late = t.funded(2).await;
    let kp = late.solana_keypair();
    let deposit = client::deposit(&account, &kp.pubkey(), &x25519_of(&late));
    assert!(t.send(vec![deposit], &kp, &[]).await.is_err());
    assert!(t.escrow_of(id, &kp.pubkey()).await.is_none());
}
