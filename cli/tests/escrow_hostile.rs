//! The sealed escrow under generated hostile transactions (issue 27): on
//! the localnet's validator with the program deployed, while the real
//! `brainctl marketplace listen` daemon and `brainctl-indexer run` are
//! both live, a seeded generator sends honest deposits (as `buy` sends
//! them, and bare ones without a memo) mixed with hostile transactions of
//! every shape: a blinding point no reveal can satisfy, every committed
//! term changed (price, key, root, length, seller key, expiry), a
//! small-order B, a low-order X25519 key, a forged `release` memo and a
//! stranger's reveal; beside them a seller's listing whose key file is
//! lost (its deposits answered from the wallet alone), a downgraded blob
//! and a mint its seller can freeze (both refused before paying). The
//! seller's RPC withholds every reveal (`listen --reveal-rpc` sends each
//! through the validator too). Then: both services are alive; every honest deposit
//! is revealed exactly once and its reveal opens k for that buyer alone;
//! every wrong-B deposit is declined, never revealed; every other hostile
//! deposit was refused by the program (no escrow account); the indexer
//! shows each escrow's status from the program and ends where a `rebuild`
//! from scratch does. `HOSTILE_SEED=<n>` replays a run.

mod util;

use e2e::hostile::Rng;
use node::chain::{Chain, Pubkey, Signer};
use node::escrow::{self, EscrowAccount, EscrowStatus, ListingAccount, Terms};
use node::market::escrow_trade::{blind_point_for, buyer_blinding, read_account};
use node::wallet::Wallet;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use util::escrow::{configured, escrow_seller, LISTING_STAKE};
use util::services::get;

/// Transactions the generator sends per run.
const SENDS: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    /// `plan_buy` + `execute`, as `marketplace buy` sends it.
    Honest,
    /// The program's deposit alone: no memo, no payment address.
    Bare,
    /// A blinding point that is not the one both parties derive.
    WrongBlind,
    /// A small-order B.
    SmallOrderBlind,
    /// A low-order X25519 key.
    LowOrderKey,
    /// Each committed term changed, one at a time.
    OtherPrice,
    OtherKey,
    OtherRoot,
    OtherLength,
    OtherSellerKey,
    OtherExpiry,
    /// A stranger's `release` memo naming the listing.
    ForgedRelease,
    /// A stranger's reveal on an honest deposit.
    StrangerReveal,
    /// `plan_buy` of another seller's listing beside the honest one whose
    /// blob is garbage sealed consistently in a format that cannot prove
    /// the manifest's promise (format 1, or 2 under a stated count):
    /// refused before anything is paid.
    Downgraded,
    /// `plan_buy` of a listing in a mint whose freeze authority its seller
    /// holds (it could freeze a vault through a dispute window): refused
    /// before anything is paid, naming the authority.
    FreezingMint,
    /// `plan_buy` + `execute` of the honest seller's second listing, whose
    /// key file it lost: answered from the wallet alone, revealed.
    Keyless,
}

const SHAPES: [Shape; 16] = [
    Shape::Honest,
    Shape::Bare,
    Shape::WrongBlind,
    Shape::SmallOrderBlind,
    Shape::LowOrderKey,
    Shape::OtherPrice,
    Shape::OtherKey,
    Shape::OtherRoot,
    Shape::OtherLength,
    Shape::OtherSellerKey,
    Shape::OtherExpiry,
    Shape::ForgedRelease,
    Shape::StrangerReveal,
    Shape::Downgraded,
    Shape::FreezingMint,
    Shape::Keyless,
];

impl Shape {
    /// Deposits the program takes (and `listen` must answer).
    fn lands(self) -> bool {
        matches!(
            self,
            Shape::Honest | Shape::Bare | Shape::WrongBlind | Shape::Keyless
        )
    }
}

/// What one send left: the shape, the depositing wallet, its escrow.
struct Sent {
    shape: Shape,
    buyer: Wallet,
    escrow: Pubkey,
}

fn deposit_with(
    rt: &tokio::runtime::Runtime,
    chain: &Chain,
    account: &Pubkey,
    buyer: &Wallet,
    terms: &Terms,
    blind: [u8; 32],
    x25519: [u8; 32],
) -> bool {
    let me = buyer.solana_keypair().pubkey();
    let ix = escrow::deposit(account, &me, terms, &blind, &x25519);
    rt.block_on(chain.send(&[ix], &[&buyer.solana_keypair()]))
        .is_ok()
}

/// A seller's escrow listing of `memory` (through the CLI, staked
/// [`LISTING_STAKE`]) on `v`, its blob and manifest under `dir`.
struct Listed {
    seller: util::Env,
    src: node::arweave::Source,
    listing: node::market::manifest::Listing,
    seller_pk: Pubkey,
    account: Pubkey,
    held: ListingAccount,
}

fn listed(
    v: &e2e::TestValidator,
    rt: &tokio::runtime::Runtime,
    chain: &Chain,
    dir: &str,
    memory: &str,
) -> Listed {
    let (seller, listed) = escrow_seller(v, dir, memory);
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let src = node::arweave::Source::Fs(node::arweave::FsStore::new(dir));
    let listing = rt
        .block_on(node::market::buy::fetch_listing(&src, manifest))
        .unwrap();
    let seller_pk: Pubkey = listing.seller_pubkey.parse().unwrap();
    let account = escrow::listing_address(&seller_pk, &listing.listing_id);
    let held = rt
        .block_on(read_account(chain, &account, ListingAccount::decode))
        .unwrap()
        .unwrap();
    Listed {
        seller,
        src,
        listing,
        seller_pk,
        account,
        held,
    }
}

#[test]
fn honest_deposits_are_revealed_exactly_once_among_hostile_ones() {
    let (mut rng, seed) = Rng::from_env();
    let (v, _treasury) = configured(&e2e::light_args(), 3600);
    let (rt, chain) = (e2e::runtime(), v.chain());
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let Listed {
        seller,
        src,
        listing,
        seller_pk,
        account,
        held,
    } = listed(&v, &rt, &chain, &dir, "Hostile escrow lesson");
    let id = listing.listing_id.clone();
    let terms = held.terms;

    // the same seller's second listing, its key file lost: a reveal needs
    // none (k comes from the wallet), so its deposits are answered
    let keyless = {
        let again = util::escrow::list_escrow(&v, &seller, &dir, &[]);
        let id = again["listing"]["listing_id"].as_str().unwrap();
        std::fs::remove_file(seller.path(&format!(".brainctl/keys/{id}.listing"))).unwrap();
        let manifest = again["listing"]["manifest_id"].as_str().unwrap();
        rt.block_on(node::market::buy::fetch_listing(&src, manifest))
            .unwrap()
    };
    let keyless_account = escrow::listing_address(&seller_pk, &keyless.listing_id);
    let keyless_terms = rt
        .block_on(read_account(
            &chain,
            &keyless_account,
            ListingAccount::decode,
        ))
        .unwrap()
        .unwrap()
        .terms;

    // the seller's RPC withholds every reveal (it has seen s, the cluster
    // never will); `--reveal-rpc` sends each through the validator too.
    // The indexer reads the validator.
    let proxy = e2e::proxy::FaultProxy::start(&v.rpc_url);
    proxy.set(e2e::proxy::Fault::DropSendsCarrying(
        node::chain::anchor::discriminator("global", "reveal"),
    ));
    let (mut indexer, base) = util::services::indexer(&v.rpc_url, &dir, shared.path());
    let mut daemon = util::services::listen(
        &seller,
        &proxy.url,
        &dir,
        shared.path(),
        &["--reveal-rpc", &v.rpc_url],
        "warn,node::listen=debug,node::chain=debug",
    );
    let uploader = node::arweave::Uploader::Fs(node::arweave::FsStore::new(&dir));
    // a seller who lists in a mint whose freeze authority it holds
    let freezing = {
        let cheat = Wallet::generate();
        let cheat_pk: Pubkey = cheat.address().parse().unwrap();
        v.fund(&cheat_pk, 5);
        let mint = node::chain::token::TokenMint {
            address: v.create_mint_with(6, Some(&cheat_pk)),
            program: node::chain::token::TOKEN_PROGRAM_ID,
            decimals: 6,
        };
        let id = node::market::list::new_listing_id();
        let k = escrow::listing_scalar(&cheat, &id);
        let plain = [0x42; 700];
        let (sealed, stated) = util::escrow::Sealed::v3(&k, &plain);
        let (manifest, _) = util::escrow::list_as_cheater_in(
            &v,
            &uploader,
            &cheat,
            &id,
            sealed,
            &hex::encode(escrow::math::sha256(&[&plain])),
            stated,
            Some(&mint),
        );
        let listing = rt
            .block_on(node::market::buy::fetch_listing(&src, &manifest))
            .unwrap();
        (listing, cheat_pk)
    };
    // a downgrading seller's listings beside the honest one (format 1;
    // format 2 under a stated count), both listed in the program
    let downgraded: Vec<node::market::manifest::Listing> = {
        use node::escrow::math::blob::{seal_v1, seal_v2};
        let cheat = Wallet::generate();
        v.fund(&cheat.address().parse().unwrap(), 5);
        let promised = hex::encode(escrow::math::sha256(&[b"a dozen fine memories"]));
        [seal_v1 as util::escrow::Seal, seal_v2]
            .into_iter()
            .map(|seal| {
                let (_, manifest) = util::escrow::list_downgraded(
                    &v,
                    &uploader,
                    &cheat,
                    seal,
                    &[0x41; 600],
                    &promised,
                    12,
                );
                rt.block_on(node::market::buy::fetch_listing(&src, &manifest))
                    .unwrap()
            })
            .collect()
    };

    // every shape at least once, in a random order, then random ones
    let mut shapes = SHAPES.to_vec();
    for i in (1..shapes.len()).rev() {
        shapes.swap(i, rng.below(i as u64 + 1) as usize);
    }
    while shapes.len() < SENDS {
        shapes.push(SHAPES[rng.below(SHAPES.len() as u64) as usize]);
    }
    let whale = v.funded_keypair(50);
    let mut sent: Vec<Sent> = Vec::new();
    for shape in shapes {
        let buyer = Wallet::generate();
        let me = buyer.solana_keypair().pubkey();
        rt.block_on(chain.send(
            &[node::chain::instructions::transfer(
                &whale.pubkey(),
                &me,
                200_000_000,
            )],
            &[&whale],
        ))
        .unwrap();
        let blind = blind_point_for(&buyer.x25519_secret(), &held, &account, &me).unwrap();
        let x = buyer.x25519_public();
        let changed = |edit: fn(&mut Terms)| {
            let mut t = terms;
            edit(&mut t);
            t
        };
        let landed = match shape {
            Shape::Honest => {
                let plan = rt
                    .block_on(node::market::buy::plan_buy(
                        &chain,
                        &src,
                        &buyer,
                        &listing,
                        node::market::buy::Terms::Listed,
                    ))
                    .unwrap_or_else(|e| panic!("seed {seed}: plan: {e}"));
                rt.block_on(node::market::buy::execute(&chain, &buyer, &plan, None))
                    .is_ok()
            }
            Shape::Bare => deposit_with(&rt, &chain, &account, &buyer, &terms, blind, x),
            Shape::WrongBlind => {
                let wrong = escrow::math::client::point_of(&[rng.below(250) as u8 + 1; 32]);
                deposit_with(&rt, &chain, &account, &buyer, &terms, wrong, x)
            }
            Shape::SmallOrderBlind => {
                let torsion = [
                    escrow::math::point::IDENTITY,
                    // the order-2 point (0, -1)
                    {
                        let mut p = [0xff; 32];
                        p[0] = 0xec;
                        p[31] = 0x7f;
                        p
                    },
                ][rng.below(2) as usize];
                deposit_with(&rt, &chain, &account, &buyer, &terms, torsion, x)
            }
            Shape::LowOrderKey => {
                deposit_with(&rt, &chain, &account, &buyer, &terms, blind, [0; 32])
            }
            Shape::OtherPrice => {
                let t = changed(|t| t.price_lamports /= 4);
                deposit_with(&rt, &chain, &account, &buyer, &t, blind, x)
            }
            Shape::OtherKey => {
                let t = changed(|t| t.key_point = escrow::math::client::point_of(&[3; 32]));
                deposit_with(&rt, &chain, &account, &buyer, &t, blind, x)
            }
            Shape::OtherRoot => {
                let t = changed(|t| t.blob_root[0] ^= 1);
                deposit_with(&rt, &chain, &account, &buyer, &t, blind, x)
            }
            Shape::OtherLength => {
                let t = changed(|t| t.plain_len += 1);
                deposit_with(&rt, &chain, &account, &buyer, &t, blind, x)
            }
            Shape::OtherSellerKey => {
                let t = changed(|t| t.seller_x25519[0] ^= 1);
                deposit_with(&rt, &chain, &account, &buyer, &t, blind, x)
            }
            Shape::OtherExpiry => {
                let t = changed(|t| t.expires_at += 1);
                deposit_with(&rt, &chain, &account, &buyer, &t, blind, x)
            }
            Shape::ForgedRelease => {
                let op = node::market::MemoOp::Release {
                    listing_id: id.clone(),
                    envelope_arweave_id: escrow::escrow_address(&account, &me).to_string(),
                    minted_token_address: me.to_string(),
                };
                rt.block_on(node::market::tx::post_memo(&chain, &buyer, &op, &seller_pk))
                    .unwrap();
                false
            }
            Shape::Downgraded => {
                let l = &downgraded[rng.below(2) as usize];
                let before = rt.block_on(chain.balance(&me)).unwrap();
                match rt.block_on(node::market::buy::plan_buy(
                    &chain,
                    &src,
                    &buyer,
                    l,
                    node::market::buy::Terms::Listed,
                )) {
                    Err(e) => assert!(
                        e.to_string().contains("--allow-unproven-blob"),
                        "seed {seed}: refused for another reason: {e}"
                    ),
                    Ok(_) => panic!("seed {seed}: a downgraded blob was planned for payment"),
                }
                assert_eq!(
                    rt.block_on(chain.balance(&me)).unwrap(),
                    before,
                    "seed {seed}"
                );
                false
            }
            Shape::FreezingMint => {
                let before = rt.block_on(chain.balance(&me)).unwrap();
                match rt.block_on(node::market::buy::plan_buy(
                    &chain,
                    &src,
                    &buyer,
                    &freezing.0,
                    node::market::buy::Terms::Listed,
                )) {
                    Err(e) => assert!(
                        e.to_string().contains("freeze authority")
                            && e.to_string().contains(&freezing.1.to_string()),
                        "seed {seed}: refused for another reason: {e}"
                    ),
                    Ok(_) => panic!("seed {seed}: a freezable mint was planned for payment"),
                }
                assert_eq!(
                    rt.block_on(chain.balance(&me)).unwrap(),
                    before,
                    "seed {seed}"
                );
                false
            }
            Shape::Keyless => {
                let plan = rt
                    .block_on(node::market::buy::plan_buy(
                        &chain,
                        &src,
                        &buyer,
                        &keyless,
                        node::market::buy::Terms::Listed,
                    ))
                    .unwrap_or_else(|e| panic!("seed {seed}: plan keyless: {e}"));
                rt.block_on(node::market::buy::execute(&chain, &buyer, &plan, None))
                    .is_ok()
            }
            Shape::StrangerReveal => {
                // on an honest deposit, if one exists: refused (not the seller)
                if let Some(h) = sent.iter().find(|s| s.shape == Shape::Honest) {
                    let ix =
                        escrow::reveal(&account, &h.buyer.solana_keypair().pubkey(), &me, &[1; 32]);
                    assert!(
                        rt.block_on(chain.send(&[ix], &[&buyer.solana_keypair()]))
                            .is_err(),
                        "seed {seed}: a stranger's reveal landed"
                    );
                }
                false
            }
        };
        assert_eq!(
            landed,
            shape.lands(),
            "seed {seed}: {shape:?} landed: {landed}"
        );
        let on = if shape == Shape::Keyless {
            &keyless_account
        } else {
            &account
        };
        sent.push(Sent {
            shape,
            escrow: escrow::escrow_address(on, &me),
            buyer,
        });
    }

    // honest deposits revealed, wrong blindings declined, the rest absent
    let why = format!("seed {seed}");
    let status = |at: &Pubkey| {
        rt.block_on(read_account(&chain, at, EscrowAccount::decode))
            .unwrap()
            .map(|e| e.status)
    };
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let pending = sent
            .iter()
            .filter(|s| s.shape.lands() && status(&s.escrow) == Some(EscrowStatus::Deposited))
            .count();
        if pending == 0 {
            break;
        }
        assert!(daemon.alive() && indexer.alive(), "{why}: a service died");
        assert!(
            Instant::now() < deadline,
            "{why}: {pending} deposits never answered"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let state = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    let mut by_shape: BTreeMap<Shape, usize> = BTreeMap::new();
    for s in &sent {
        *by_shape.entry(s.shape).or_default() += 1;
        let got = rt
            .block_on(read_account(&chain, &s.escrow, EscrowAccount::decode))
            .unwrap();
        match s.shape {
            Shape::Honest | Shape::Bare | Shape::Keyless => {
                let e = got.unwrap_or_else(|| panic!("{why}: {:?} escrow gone", s.shape));
                assert_eq!(e.status, EscrowStatus::Revealed, "{why}: {:?}", s.shape);
                // the reveal opens k for this buyer, and K is k·G
                let me = s.buyer.solana_keypair().pubkey();
                let (on, t) = if s.shape == Shape::Keyless {
                    (&keyless_account, &keyless_terms)
                } else {
                    (&account, &terms)
                };
                let b =
                    buyer_blinding(&s.buyer.x25519_secret(), &t.seller_x25519, on, &me).unwrap();
                escrow::math::client::open(&e.revealed, &b, &t.key_point).unwrap_or_else(|err| {
                    panic!("{why}: {:?} reveal does not open k: {err}", s.shape)
                });
                // exactly once: one release recorded by the daemon (it
                // records the reveal once its send returns, a moment after
                // the chain shows it)
                let recorded = Instant::now() + Duration::from_secs(30);
                let row = loop {
                    let row = state.get(&s.escrow.to_string()).unwrap();
                    if row.state.as_str() == "released" || Instant::now() > recorded {
                        break row;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                };
                assert_eq!(row.state.as_str(), "released", "{why}");
                assert!(row.release_sig.is_some(), "{why}");
            }
            Shape::WrongBlind => {
                let e = got.unwrap_or_else(|| panic!("{why}: wrong-blind escrow gone"));
                assert_eq!(
                    e.status,
                    EscrowStatus::Declined,
                    "{why}: a wrong B was not declined"
                );
                assert_eq!(e.revealed, [0; 32], "{why}: nothing revealed");
            }
            _ => assert!(got.is_none(), "{why}: {:?} left an escrow", s.shape),
        }
    }
    eprintln!("{why}: {by_shape:?}");

    // deposits again at the same address: each declined buyer takes its
    // deposit back and deposits again, now with the right B (a puppet that
    // tries again, or a buyer whose client erred); and a revealed buyer's
    // escrow is not touched. Each new deposit is a new buy: revealed, with
    // its own state row and receipt, never left to be refunded with a
    // share of the stake
    let again: Vec<&Sent> = sent
        .iter()
        .filter(|s| s.shape == Shape::WrongBlind)
        .collect();
    for s in &again {
        let kp = s.buyer.solana_keypair();
        let me = kp.pubkey();
        rt.block_on(chain.send(&[escrow::refund(&account, &me)], &[&kp]))
            .unwrap_or_else(|e| panic!("{why}: refunding a declined deposit: {e}"));
        let blind = blind_point_for(&s.buyer.x25519_secret(), &held, &account, &me).unwrap();
        assert!(
            deposit_with(
                &rt,
                &chain,
                &account,
                &s.buyer,
                &terms,
                blind,
                s.buyer.x25519_public()
            ),
            "{why}: a deposit again at {}",
            s.escrow
        );
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    for s in &again {
        loop {
            let now = status(&s.escrow);
            if now == Some(EscrowStatus::Revealed) {
                break;
            }
            assert!(daemon.alive(), "{why}: listen died");
            assert!(
                Instant::now() < deadline,
                "{why}: a deposit again at {} is {now:?}, never answered; listen's log ends:\n{}",
                s.escrow,
                daemon.tail()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        let key = node::seller::deposit_key(&s.escrow.to_string(), 1);
        let recorded = Instant::now() + Duration::from_secs(30);
        let row = loop {
            let row = state.get(&key);
            if row.as_ref().is_ok_and(|r| r.state.as_str() == "released")
                || Instant::now() > recorded
            {
                break row.unwrap_or_else(|e| panic!("{why}: no row {key}: {e}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(row.state.as_str(), "released", "{why}: {key}");
        let first = state.get(&s.escrow.to_string()).unwrap();
        assert_eq!(
            first.state.as_str(),
            "rejected",
            "{why}: the first stays declined"
        );
        assert_ne!(
            row.mint_address, first.mint_address,
            "{why}: each deposit its own receipt"
        );
    }

    // every reveal went to the withholding RPC, and landed by the relay
    let revealed = sent
        .iter()
        .filter(|s| matches!(s.shape, Shape::Honest | Shape::Bare | Shape::Keyless))
        .count()
        + again.len();
    let (_, withheld) = proxy.stats();
    assert!(
        withheld as usize >= revealed,
        "{why}: the RPC withheld {withheld} sends, {revealed} reveals landed"
    );

    // the stake is whole: nothing hostile slashed it
    let after = rt
        .block_on(read_account(&chain, &account, ListingAccount::decode))
        .unwrap()
        .unwrap();
    assert_eq!(after.stake, LISTING_STAKE, "{why}");

    // the indexer shows each escrow as the program has it now: every
    // address holds a revealed deposit (the declined ones' second deposit)
    let deadline = Instant::now() + Duration::from_secs(60);
    for s in sent.iter().filter(|s| s.shape.lands()) {
        let want = "revealed";
        loop {
            let got = get(&format!("{base}/escrows/{}", s.escrow));
            if got.as_ref().is_some_and(|v| v["escrow"]["status"] == want) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{why}: the indexer shows {got:?}, not {want}; its log ends:\n{}",
                std::fs::read_to_string(shared.path().join("indexer.log"))
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .take(30)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    util::services::indexer_matches_rebuild(&v.rpc_url, &base, &dir, shared.path(), &why);
    assert!(daemon.alive() && indexer.alive(), "{why}: a service died");
    assert!(daemon.stop().success());
    assert!(indexer.stop().success());
}

/// Puppets with a wrong B deposit in a burst while `listen` is down,
/// beside honest buyers; started again, `listen` declines every puppet
/// (nothing slashed) and reveals every honest deposit. Then, with `listen`
/// down again, past the dispute window a stranger cranks each honest
/// escrow's permissionless `claim` behind memos that fill the log to the
/// runtime's cap: the claims land, and the live indexer shows each escrow
/// claimed and counts it as the seller's sale (the events are self-CPIs,
/// which no log flood hides), and ends where a rebuild does. Meanwhile a
/// lying seller reveals to two buyers: the first's client convicts the
/// listing at once, the second is offline through its whole dispute
/// window and, back, is refunded its deposit, rent and share.
#[test]
fn puppet_bursts_while_listen_is_down_and_flooded_claims_hide_nothing() {
    const DISPUTE: i64 = 30;
    let (mut rng, seed) = Rng::from_env();
    let (v, treasury) = configured(&e2e::light_args(), DISPUTE as u64);
    let (rt, chain) = (e2e::runtime(), v.chain());
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let Listed {
        seller,
        src,
        listing,
        seller_pk,
        account,
        held,
    } = listed(&v, &rt, &chain, &dir, "Flooded claim lesson");
    let why = format!("seed {seed}");
    let (indexer, base) = util::services::indexer(&v.rpc_url, &dir, shared.path());
    let mut indexer = indexer;

    // listen down: a burst of puppets, and honest buyers
    let whale = v.funded_keypair(20);
    let funded = || {
        let w = Wallet::generate();
        let to = w.solana_keypair().pubkey();
        rt.block_on(chain.send(
            &[node::chain::instructions::transfer(
                &whale.pubkey(),
                &to,
                200_000_000,
            )],
            &[&whale],
        ))
        .unwrap();
        w
    };
    let mut lying_buyers: Vec<Wallet> = Vec::new();
    let puppets: Vec<Wallet> = (0..3 + rng.below(4)).map(|_| funded()).collect();
    for p in &puppets {
        let wrong = escrow::math::client::point_of(&[rng.below(250) as u8 + 1; 32]);
        assert!(
            deposit_with(
                &rt,
                &chain,
                &account,
                p,
                &held.terms,
                wrong,
                p.x25519_public()
            ),
            "{why}: a puppet's deposit"
        );
    }
    let honest: Vec<Wallet> = (0..2).map(|_| funded()).collect();
    for h in &honest {
        let plan = rt
            .block_on(node::market::buy::plan_buy(
                &chain,
                &src,
                h,
                &listing,
                node::market::buy::Terms::Listed,
            ))
            .unwrap_or_else(|e| panic!("{why}: plan: {e}"));
        rt.block_on(node::market::buy::execute(&chain, h, &plan, None))
            .unwrap_or_else(|e| panic!("{why}: an honest deposit: {e}"));
    }
    let escrow_of = |w: &Wallet| escrow::escrow_address(&account, &w.solana_keypair().pubkey());
    let status = |at: &Pubkey| {
        rt.block_on(read_account(&chain, at, EscrowAccount::decode))
            .unwrap()
            .map(|e| e.status)
    };

    // meanwhile a lying seller (another bundle sealed under the promised
    // hash) reveals to two buyers: the first's client convicts the listing
    // at once; the second is offline through its whole dispute window
    let (lying, lying_blob, lying_account, lying_revealed_at) = {
        let cheat = Wallet::generate();
        let cheat_pk: Pubkey = cheat.address().parse().unwrap();
        v.fund(&cheat_pk, 5);
        let uploader = node::arweave::Uploader::Fs(node::arweave::FsStore::new(&dir));
        let id = node::market::list::new_listing_id();
        let k = escrow::listing_scalar(&cheat, &id);
        let promised: Vec<u8> = (0..1_500u32).map(|i| (i % 241) as u8).collect();
        let mut shipped = promised.clone();
        shipped[rng.below(1_500) as usize] ^= 0x5a;
        let (sealed, stated) = util::escrow::Sealed::v3(&k, &shipped);
        let blob = sealed.bytes.clone();
        let (manifest, _) = util::escrow::list_as_cheater(
            &v,
            &uploader,
            &cheat,
            &id,
            sealed,
            &hex::encode(escrow::math::sha256(&[&promised])),
            stated,
        );
        let lying = rt
            .block_on(node::market::buy::fetch_listing(&src, &manifest))
            .unwrap();
        let at = escrow::listing_address(&cheat_pk, &id);
        let mut revealed_at = 0;
        for _ in 0..2 {
            let b = funded();
            let plan = rt
                .block_on(node::market::buy::plan_buy(
                    &chain,
                    &src,
                    &b,
                    &lying,
                    node::market::buy::Terms::Listed,
                ))
                .unwrap_or_else(|e| panic!("{why}: plan the lying listing: {e}"));
            rt.block_on(node::market::buy::execute(&chain, &b, &plan, None))
                .unwrap_or_else(|e| panic!("{why}: a deposit on the lying listing: {e}"));
            let me = b.solana_keypair().pubkey();
            let escrow_at = escrow::escrow_address(&at, &me);
            util::escrow::reveal_by_hand(&v, &cheat, &at, &me, &k);
            revealed_at = rt
                .block_on(read_account(&chain, &escrow_at, EscrowAccount::decode))
                .unwrap()
                .unwrap()
                .revealed_at;
            lying_buyers.push(b);
        }
        (lying, blob, at, revealed_at)
    };
    let store_dir = tempfile::tempdir().unwrap();
    let mut store = node::store::Store::open(&store_dir.path().join("brain.db")).unwrap();
    let look = |b: &Wallet, store: &mut node::store::Store| {
        rt.block_on(node::market::buy::advance_sealed(
            &chain,
            b,
            &lying,
            &lying_blob,
            node::market::buy::ImportTarget::Store(store),
        ))
    };
    match look(&lying_buyers[0], &mut store) {
        Ok(node::market::buy::SealedStep::Disputed { .. }) => {}
        other => panic!("{why}: the first buyer's look: {other:?}"),
    }
    assert_eq!(
        rt.block_on(read_account(&chain, &lying_account, ListingAccount::decode))
            .unwrap()
            .unwrap()
            .status,
        node::escrow::ListingStatus::Convicted,
        "{why}"
    );

    // listen up: every puppet declined, every honest deposit revealed
    let daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        shared.path(),
        &[],
        "warn,node::listen=debug",
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let want: Vec<(Pubkey, EscrowStatus)> = puppets
        .iter()
        .map(|p| (escrow_of(p), EscrowStatus::Declined))
        .chain(
            honest
                .iter()
                .map(|h| (escrow_of(h), EscrowStatus::Revealed)),
        )
        .collect();
    for (at, state) in &want {
        while status(at) != Some(*state) {
            assert!(
                Instant::now() < deadline,
                "{why}: {at} is {:?}, not {state:?}; listen's log ends:\n{}",
                status(at),
                daemon.tail()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    // down again before the dispute window ends (its claims are ours now)
    assert!(daemon.stop().success(), "{why}: listen stops");
    let after = rt
        .block_on(read_account(&chain, &account, ListingAccount::decode))
        .unwrap()
        .unwrap();
    assert_eq!(
        after.stake, LISTING_STAKE,
        "{why}: no puppet slashed the stake"
    );

    // past the window: each claim behind a log flood, by a stranger
    let revealed_at = honest
        .iter()
        .filter_map(|h| {
            rt.block_on(read_account(&chain, &escrow_of(h), EscrowAccount::decode))
                .unwrap()
        })
        .map(|e| e.revealed_at)
        .chain([lying_revealed_at])
        .max()
        .unwrap();
    v.wait_block_time(revealed_at + DISPUTE + 1);
    // the offline buyer of the convicted listing comes back past its
    // window: refunded, deposit, rent and share
    let late = &lying_buyers[1];
    let late_pk = late.solana_keypair().pubkey();
    let before = rt.block_on(chain.balance(&late_pk)).unwrap();
    match look(late, &mut store) {
        Ok(node::market::buy::SealedStep::Refunded { .. }) => {}
        other => panic!("{why}: the late buyer's look: {other:?}"),
    }
    let rent = rt
        .block_on(chain.rent_exemption(escrow::ESCROW_ACCOUNT_SPACE))
        .unwrap();
    let back = rt.block_on(chain.balance(&late_pk)).unwrap() - before;
    let due = util::escrow::CHEAT_PRICE + rent + util::escrow::STAKE / 2;
    assert!(
        back <= due && back + 10_000 >= due,
        "{why}: deposit, rent and share back, less the fee: {back} of {due}"
    );
    let mut cranked = Vec::new();
    for h in &honest {
        let at = escrow_of(h);
        if status(&at) != Some(EscrowStatus::Revealed) {
            continue; // listen claimed it before it stopped
        }
        let mut ixs: Vec<_> = (0..50)
            .map(|i| node::chain::instructions::memo(&format!("flood {i}"), &whale.pubkey()))
            .collect();
        ixs.push(escrow::claim(
            &account,
            &h.solana_keypair().pubkey(),
            &seller_pk,
            &treasury.pubkey(),
        ));
        let sent = rt
            .block_on(chain.send(&ixs, &[&whale]))
            .unwrap_or_else(|e| panic!("{why}: the flooded claim: {e}"));
        assert_eq!(status(&at), Some(EscrowStatus::Claimed), "{why}");
        // the flood reached the log's cap: a log-borne event was lost
        let tx: serde_json::Value = rt.block_on(async {
            reqwest::Client::new()
                .post(&v.rpc_url)
                .json(
                    &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "getTransaction",
                    "params": [sent.signature.to_string(),
                        {"encoding": "json", "commitment": "confirmed",
                         "maxSupportedTransactionVersion": 0}]}),
                )
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        let logs = tx["result"]["meta"]["logMessages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            logs.iter().any(|l| l == "Log truncated"),
            "{why}: the flood did not fill the log ({} lines)",
            logs.len()
        );
        cranked.push(at);
    }
    assert!(
        !cranked.is_empty(),
        "{why}: listen claimed every escrow before it stopped"
    );

    // the indexer saw every claim, and counts each as a sale
    let deadline = Instant::now() + Duration::from_secs(60);
    for at in &cranked {
        loop {
            let got = get(&format!("{base}/escrows/{at}"));
            if got
                .as_ref()
                .is_some_and(|v| v["escrow"]["status"] == "claimed")
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{why}: the indexer shows {got:?} for a flooded claim"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    // the convicting buyer's escrow disputed, the late one's refunded
    for (b, want) in lying_buyers.iter().zip(["disputed", "refunded"]) {
        let at = escrow::escrow_address(&lying_account, &b.solana_keypair().pubkey());
        loop {
            let got = get(&format!("{base}/escrows/{at}"));
            if got.as_ref().is_some_and(|v| v["escrow"]["status"] == want) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{why}: the indexer shows {got:?} for {at}, not {want}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let rep = get(&format!("{base}/sellers/{seller_pk}")).expect("the seller's record");
    assert_eq!(rep["sales"], honest.len(), "{why}: {rep}");
    assert_eq!(rep["pending_escrow_buys"], 0, "{why}: {rep}");
    util::services::indexer_matches_rebuild(&v.rpc_url, &base, &dir, shared.path(), &why);
    assert!(indexer.alive(), "{why}: the indexer died");
    assert!(indexer.stop().success());
}

/// A listing's mint closed by its close authority and made again at the
/// same address with a permanent delegate (who could pull every vault)
/// while `listen` runs: the buyer's own client refuses to pay, naming the
/// extension; a deposit sent by hand is refused by the program, which
/// checks the mint's extensions at every deposit; nothing moves, no escrow
/// exists, `listen` stays up and the stake is whole.
#[test]
fn a_mint_remade_with_a_permanent_delegate_takes_no_deposit() {
    let (v, _treasury) = configured(&e2e::light_args(), 3600);
    let (rt, chain) = (e2e::runtime(), v.chain());
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let issuer = v.funded_keypair(5);
    let mint_key = node::chain::Keypair::new();
    let mint = v.create_token_2022_mint(&mint_key, &issuer, false);
    let mint_s = mint.address.to_string();
    let (seller, listed) = util::escrow::escrow_seller_with(
        &v,
        &dir,
        "Remade mint lesson",
        &["--mint", &mint_s, "--token-usd", "1"],
    );
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let src = node::arweave::Source::Fs(node::arweave::FsStore::new(&dir));
    let listing = rt
        .block_on(node::market::buy::fetch_listing(&src, &manifest))
        .unwrap();
    let seller_pk: Pubkey = listing.seller_pubkey.parse().unwrap();
    let account = escrow::listing_address(&seller_pk, &listing.listing_id);
    let held = rt
        .block_on(read_account(&chain, &account, ListingAccount::decode))
        .unwrap()
        .unwrap();
    assert_eq!(held.mint, Some(mint.address));
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        shared.path(),
        &[],
        "warn,node::listen=debug",
    );

    // the issuer closes the mint (no supply yet) and makes it again at
    // its address with a permanent delegate, then funds a buyer
    v.close_token_2022_mint(&mint.address, &issuer);
    let remade = v.create_token_2022_mint(&mint_key, &issuer, true);
    assert_eq!(remade.address, mint.address);
    let buyer = util::Env::new();
    buyer.ok(&["wallet", "new"]);
    util::escrow::ok(&v, &buyer, &["wallet", "airdrop", "2", "--json"]);
    let buyer_pk = util::escrow::address(&buyer);
    let price = held.terms.price_lamports;
    rt.block_on(chain.send(
        &node::chain::test_dollar::mint_to(&issuer.pubkey(), &buyer_pk, &remade, 10 * price),
        &[&issuer],
    ))
    .unwrap();
    let units = || {
        rt.block_on(node::chain::token::balance(&chain, &buyer_pk, &remade))
            .unwrap()
    };
    let before = units();

    // the buyer's client refuses before paying, naming the extension
    let run = buyer.run(&[
        "-u",
        v.rpc_url.as_str(),
        "--commitment",
        "confirmed",
        "marketplace",
        "buy",
        &manifest,
        "--storage-dir",
        &dir,
        "--timeout",
        "5",
        "--json",
    ]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        format!("{}{}", run.stdout, run.stderr).contains("PermanentDelegate"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    // by hand: the program refuses the deposit
    let wallet = node::wallet::Wallet::load(&buyer.path(".brainctl/wallet.json")).unwrap();
    let blind = blind_point_for(&wallet.x25519_secret(), &held, &account, &buyer_pk).unwrap();
    let ix = escrow::deposit_token(
        &account,
        &buyer_pk,
        &held.terms,
        &blind,
        &wallet.x25519_public(),
        &remade,
    );
    assert!(
        rt.block_on(chain.send(&[ix], &[&wallet.solana_keypair()]))
            .is_err(),
        "the program took a deposit in a remade mint"
    );
    assert_eq!(units(), before, "nothing moved");
    let at = escrow::escrow_address(&account, &buyer_pk);
    assert!(rt
        .block_on(read_account(&chain, &at, EscrowAccount::decode))
        .unwrap()
        .is_none());
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        daemon.alive(),
        "listen died; its log ends:\n{}",
        daemon.tail()
    );
    let after = rt
        .block_on(read_account(&chain, &account, ListingAccount::decode))
        .unwrap()
        .unwrap();
    assert_eq!(after.stake, LISTING_STAKE);
    assert!(daemon.stop().success());
}
