//! A generator of hostile (and honest) marketplace transactions for the
//! hostile-chain suite and the trade bench: a seeded, replayable sequence
//! of shapes a stranger can make the chain accept (or land failed), each
//! sent to a real validator while the real daemons run.
//!
//! Seeded with `HOSTILE_SEED` (printed by every run, so a failure replays);
//! the PRNG is splitmix64, so the sequence is the same on every machine.

use node::chain::instructions::{discovery, memo, transfer, MEMO_V1};
use node::chain::{Chain, Keypair, Pubkey, Signer};
use node::market::MemoOp;
use node::wallet::Wallet;
use solana_sdk::instruction::{AccountMeta, Instruction};

/// splitmix64: small, fast, the same everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The seed from `HOSTILE_SEED`, else from the clock; printed so a
    /// failing run can be replayed.
    pub fn from_env() -> (Rng, u64) {
        let seed = std::env::var("HOSTILE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(7, |d| d.as_nanos() as u64)
            });
        eprintln!("hostile generator: HOSTILE_SEED={seed} replays this run");
        (Rng::new(seed), seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// What is being attacked: one live listing (and optionally one the
/// seller cancelled).
#[derive(Debug, Clone)]
pub struct Target {
    /// The live listing.
    pub listing_id: String,
    /// Its payment address.
    pub pay_to: Pubkey,
    /// Its price.
    pub price: u64,
    /// The seller.
    pub seller: Pubkey,
    /// The discovery registry.
    pub registry: Pubkey,
    /// A listing of this seller that was cancelled before any buy.
    pub cancelled_listing: Option<String>,
    /// A listing of this seller that expired before any buy.
    pub expired_listing: Option<String>,
    /// A listing of this seller that expires while the buys arrive.
    pub expiring_listing: Option<String>,
}

/// One kind of transaction the generator sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Pays the price with a v3 memo: must be released exactly once.
    Honest,
    /// Pays the price with the buy memo in SPL Memo v1: released too.
    HonestMemoV1,
    /// One lamport short.
    Underpaid,
    /// A buy memo with a 1-lamport transfer only.
    NoPayment,
    /// Pays the price to someone else, references the payment address.
    PaysElsewhere,
    /// Pays in full, then fails (an instruction that cannot succeed).
    Failed,
    /// Fails on a memo that is not UTF-8 (the RPC returns it undecoded).
    FailedUndecodableMemo,
    /// A full payment co-signed by a second wallet.
    CoSigned,
    /// Another wallet's buy memo (its X25519 key) with no payment of its own.
    Replay,
    /// A full payment for the cancelled listing.
    CancelledListing,
    /// A full payment for the expired listing.
    ExpiredListing,
    /// A `release` memo by a stranger, naming the listing.
    ForgedRelease,
    /// A `cancel` memo by a stranger, naming the listing.
    ForgedCancel,
    /// A full payment whose transaction also carries 8 junk memos and a
    /// zero-lamport transfer with an extra account.
    NoisyButPaid,
    /// Two buy memos for the listing in one paid transaction.
    TwoBuyMemos,
    /// Pays the price in a v0 transaction whose payment address and
    /// registry are loaded from an address lookup table: released too.
    HonestV0,
    /// Pays the price in a transaction that also creates a lookup table,
    /// so it has inner instructions (an inner System transfer from the
    /// buyer among them): released, counting only the top-level payment.
    HonestWithInner,
    /// A burst of [`FLOOD_BURST`] junk buys (a lamport or a few each) sent
    /// at once by one stranger, landing around the honest buys.
    Flood,
    /// A full payment for the listing that expires while the buys arrive:
    /// released exactly once if its block time is before the expiry,
    /// refused as expired otherwise (judged by the chain's clock).
    NearExpiry,
}

/// Junk buys in one [`Shape::Flood`].
pub const FLOOD_BURST: u64 = 20;

impl Shape {
    /// The shapes an honest buyer sends: each must be released exactly once.
    pub const HONEST: [Shape; 5] = [
        Shape::Honest,
        Shape::HonestMemoV1,
        Shape::NoisyButPaid,
        Shape::HonestV0,
        Shape::HonestWithInner,
    ];

    /// The shapes whose verdict depends on when they land.
    pub const TIMED: [Shape; 1] = [Shape::NearExpiry];

    /// The shapes no release may follow.
    pub const HOSTILE: [Shape; 13] = [
        Shape::Underpaid,
        Shape::NoPayment,
        Shape::PaysElsewhere,
        Shape::Failed,
        Shape::FailedUndecodableMemo,
        Shape::CoSigned,
        Shape::Replay,
        Shape::CancelledListing,
        Shape::ExpiredListing,
        Shape::ForgedRelease,
        Shape::ForgedCancel,
        Shape::TwoBuyMemos,
        Shape::Flood,
    ];

    /// Whether the daemon must release it (exactly once).
    pub fn honest(self) -> bool {
        Shape::HONEST.contains(&self)
    }

    /// Whether the transaction is meant to land failed.
    pub fn fails(self) -> bool {
        matches!(self, Shape::Failed | Shape::FailedUndecodableMemo)
    }
}

/// A transaction sent, and what it was.
#[derive(Debug, Clone)]
pub struct SentTx {
    /// Its shape.
    pub shape: Shape,
    /// Its signature.
    pub signature: String,
}

fn buy_memo(listing_id: &str, x25519: &str) -> String {
    MemoOp::Buy {
        listing_id: listing_id.into(),
        buyer_x25519: x25519.into(),
    }
    .to_string()
}

/// A memo in SPL Memo v1 (an old-loader program: it takes no accounts,
/// given any it faults).
fn memo_v1(text: &str) -> Instruction {
    Instruction {
        program_id: MEMO_V1.parse().expect("memo v1 id"),
        accounts: vec![],
        data: text.as_bytes().to_vec(),
    }
}

/// The instructions of `shape` by `actor` (who pays and signs), with
/// `other` as the second wallet where a shape needs one. Returns the
/// instructions and whether `other` signs too.
pub fn build(shape: Shape, t: &Target, actor: &Wallet, other: &Wallet) -> (Vec<Instruction>, bool) {
    let me = actor.solana_keypair().pubkey();
    let them = other.solana_keypair().pubkey();
    let mine = buy_memo(&t.listing_id, &actor.x25519_address());
    let reg = discovery(&t.registry, 200_000);
    let pay = |lamports| transfer(&me, &t.pay_to, lamports);
    match shape {
        Shape::Honest | Shape::HonestV0 | Shape::HonestWithInner => {
            (vec![reg, pay(t.price), memo(&mine, &me)], false)
        }
        Shape::HonestMemoV1 => (vec![reg, pay(t.price), memo_v1(&mine)], false),
        Shape::Underpaid => (vec![reg, pay(t.price - 1), memo(&mine, &me)], false),
        Shape::NoPayment | Shape::Flood => (vec![reg, pay(1), memo(&mine, &me)], false),
        Shape::NearExpiry => {
            let id = t
                .expiring_listing
                .as_deref()
                .unwrap_or("20261123-eeeeeeeeeeee");
            (
                vec![
                    reg,
                    pay(t.price),
                    memo(&buy_memo(id, &actor.x25519_address()), &me),
                ],
                false,
            )
        }
        Shape::PaysElsewhere => (
            vec![reg, pay(1), transfer(&me, &them, t.price), memo(&mine, &me)],
            false,
        ),
        Shape::Failed => (
            vec![
                reg,
                pay(t.price),
                memo(&mine, &me),
                transfer(&me, &them, u64::MAX / 2),
            ],
            false,
        ),
        Shape::FailedUndecodableMemo => {
            let mut junk = memo("x", &me);
            junk.data = vec![0xff, 0xfe, 0x00, 0xc3];
            (vec![reg, pay(t.price), memo(&mine, &me), junk], false)
        }
        Shape::CoSigned => (
            vec![
                reg,
                pay(t.price),
                memo(&mine, &me),
                memo("co-signed", &them),
            ],
            true,
        ),
        Shape::Replay => {
            let theirs = buy_memo(&t.listing_id, &other.x25519_address());
            (vec![reg, pay(1), memo(&theirs, &me)], false)
        }
        Shape::CancelledListing | Shape::ExpiredListing => {
            let closed = if shape == Shape::CancelledListing {
                &t.cancelled_listing
            } else {
                &t.expired_listing
            };
            // without one, a listing id nobody listed
            let id = closed.as_deref().unwrap_or("20261123-ffffffffffff");
            (
                vec![
                    reg,
                    pay(t.price),
                    memo(&buy_memo(id, &actor.x25519_address()), &me),
                ],
                false,
            )
        }
        Shape::ForgedRelease => {
            let op = MemoOp::Release {
                listing_id: t.listing_id.clone(),
                envelope_arweave_id: "x".repeat(43),
                minted_token_address: them.to_string(),
            };
            (vec![reg, pay(1), memo(&op.to_string(), &me)], false)
        }
        Shape::ForgedCancel => {
            let op = MemoOp::Cancel {
                listing_id: t.listing_id.clone(),
            };
            (vec![reg, pay(1), memo(&op.to_string(), &me)], false)
        }
        Shape::NoisyButPaid => {
            // the memos need more compute than one buy's limit
            let reg = discovery(&t.registry, 1_400_000);
            let mut ixs = vec![reg, pay(t.price), memo(&mine, &me)];
            ixs.extend((0..8).map(|i| memo(&format!("junk {i}; [9] not a field"), &me)));
            // a zero-lamport transfer carrying an account it does not use
            let mut noop = transfer(&me, &t.pay_to, 0);
            noop.accounts.push(AccountMeta::new_readonly(them, false));
            ixs.push(noop);
            (ixs, false)
        }
        Shape::TwoBuyMemos => (
            vec![reg, pay(t.price), memo(&mine, &me), memo(&mine, &me)],
            false,
        ),
    }
}

/// Sends `shape` (failed shapes without preflight so they land).
pub async fn send(
    chain: &Chain,
    shape: Shape,
    t: &Target,
    actor: &Wallet,
    other: &Wallet,
) -> Result<SentTx, node::chain::ChainError> {
    let (ixs, cosign) = build(shape, t, actor, other);
    let (a, o): (Keypair, Keypair) = (actor.solana_keypair(), other.solana_keypair());
    let signers: Vec<&Keypair> = if cosign { vec![&o, &a] } else { vec![&a] };
    if shape == Shape::HonestWithInner {
        let (create, _) = create_table(chain, &a.pubkey()).await?;
        let mut ixs = ixs;
        ixs.push(create);
        let sent = chain.send(&ixs, &[&a]).await?;
        return Ok(SentTx {
            shape,
            signature: sent.signature.to_string(),
        });
    }
    if shape == Shape::Flood {
        // one burst, each its own transaction (its own amount), all in flight at once
        let sends = (0..FLOOD_BURST).map(|i| {
            let mut ixs = ixs.clone();
            ixs[1] = transfer(&a.pubkey(), &t.pay_to, 1 + i);
            let a = &a;
            async move { chain.send(&ixs, &[a]).await }
        });
        let mut first = None;
        for sent in futures_util::future::join_all(sends).await {
            first = first.or(Some(sent?.signature.to_string()));
        }
        return Ok(SentTx {
            shape,
            signature: first.expect("a burst sends"),
        });
    }
    if shape == Shape::HonestV0 {
        let loaded = vec![t.pay_to, t.registry];
        let table = lookup_table(chain, &a, &loaded).await?;
        let signature = send_v0(chain, &a, &ixs, table, loaded).await?;
        return Ok(SentTx { shape, signature });
    }
    let sent = if shape.fails() {
        chain.send_skip_preflight(&ixs, &signers).await?
    } else {
        chain.send(&ixs, &signers).await?
    };
    Ok(SentTx {
        shape,
        signature: sent.signature.to_string(),
    })
}

/// The address lookup table program.
const ALT_PROGRAM: &str = "AddressLookupTab1e1111111111111111111111111";

/// Creates an address lookup table holding `addresses` (authority and
/// payer `payer`) and waits until it can be used (the slot after its
/// extension). Built by hand: `CreateLookupTable` and `ExtendLookupTable`
/// are the program's enum tags 0 and 2, bincode-encoded.
pub async fn lookup_table(
    chain: &Chain,
    payer: &Keypair,
    addresses: &[Pubkey],
) -> Result<Pubkey, node::chain::ChainError> {
    let (create, table) = create_table(chain, &payer.pubkey()).await?;
    let mut extend = 2u32.to_le_bytes().to_vec();
    extend.extend_from_slice(&(addresses.len() as u64).to_le_bytes());
    for a in addresses {
        extend.extend_from_slice(a.as_ref());
    }
    let ixs = [
        create.clone(),
        Instruction {
            program_id: create.program_id,
            accounts: create.accounts,
            data: extend,
        },
    ];
    let sent = chain.send(&ixs, &[payer]).await?;
    // usable from the slot after the one that extended it
    loop {
        let now = node::chain::retry::with_retry("getSlot", || chain.rpc().get_slot()).await?;
        if now > sent.slot + 1 {
            return Ok(table);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The instruction creating a lookup table of `payer` (authority and
/// payer), and the table's address. It runs the System program by CPI, so
/// a transaction carrying it has inner instructions (an inner transfer
/// from the payer among them).
async fn create_table(
    chain: &Chain,
    payer: &Pubkey,
) -> Result<(Instruction, Pubkey), node::chain::ChainError> {
    let program: Pubkey = ALT_PROGRAM.parse().expect("ALT program id");
    let system: Pubkey = "11111111111111111111111111111111"
        .parse()
        .expect("system id");
    let slot = node::chain::retry::with_retry("getSlot", || chain.rpc().get_slot()).await?;
    let recent = slot.saturating_sub(1);
    let (table, bump) =
        Pubkey::find_program_address(&[payer.as_ref(), &recent.to_le_bytes()], &program);
    let mut data = 0u32.to_le_bytes().to_vec();
    data.extend_from_slice(&recent.to_le_bytes());
    data.push(bump);
    let ix = Instruction {
        program_id: program,
        accounts: vec![
            AccountMeta::new(table, false),
            AccountMeta::new_readonly(*payer, true),
            AccountMeta::new(*payer, true),
            AccountMeta::new_readonly(system, false),
        ],
        data,
    };
    Ok((ix, table))
}

/// Sends `ixs` as a v0 transaction whose non-signer accounts in `table`
/// (holding `addresses`) are loaded from it.
pub async fn send_v0(
    chain: &Chain,
    payer: &Keypair,
    ixs: &[Instruction],
    table: Pubkey,
    addresses: Vec<Pubkey>,
) -> Result<String, node::chain::ChainError> {
    use solana_sdk::message::{v0, AddressLookupTableAccount, VersionedMessage};
    use solana_sdk::transaction::VersionedTransaction;
    let rpc_err = |what: &str, e| node::chain::ChainError::Rpc {
        what: what.into(),
        error: Box::new(e),
    };
    let blockhash = chain
        .rpc()
        .get_latest_blockhash()
        .await
        .map_err(|e| rpc_err("getLatestBlockhash", e))?;
    let lookup = AddressLookupTableAccount {
        key: table,
        addresses,
    };
    let msg = v0::Message::try_compile(&payer.pubkey(), ixs, &[lookup], blockhash)
        .map_err(|e| node::chain::ChainError::Config(format!("v0 message: {e}")))?;
    let tx = VersionedTransaction::try_new(VersionedMessage::V0(msg), &[payer])
        .map_err(|e| node::chain::ChainError::Config(format!("v0 signing: {e}")))?;
    let sig = chain
        .rpc()
        .send_and_confirm_transaction(&tx)
        .await
        .map_err(|e| rpc_err("sendTransaction (v0)", e))?;
    Ok(sig.to_string())
}

/// What a token listing's attack needs: the listing settling in `mint`,
/// a SOL listing of the same seller, and another mint.
#[derive(Debug, Clone)]
pub struct TokenTarget {
    /// The listing that settles in `mint`.
    pub listing_id: String,
    /// Its payment address (the owner of the token account paid).
    pub pay_to: Pubkey,
    /// Its price in base units of `mint`.
    pub price: u64,
    /// The mint it settles in.
    pub mint: node::chain::token::TokenMint,
    /// A mint the listing does not settle in (the actors hold some).
    pub other_mint: node::chain::token::TokenMint,
    /// A listing of the same seller that settles in SOL.
    pub sol_listing: String,
    /// Its price in lamports.
    pub sol_price: u64,
    /// The discovery registry.
    pub registry: Pubkey,
}

/// One kind of transaction sent at a token listing (or, in the token, at
/// a SOL listing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenShape {
    /// The buy `brainctl marketplace buy` sends: released exactly once.
    Honest,
    /// One base unit short.
    Underpaid,
    /// One base unit.
    NoPayment,
    /// The full price in another mint, into the seller's account of it.
    WrongMint,
    /// The full price into a token account of the mint the seller does
    /// not own (another wallet's), the payment address referenced.
    NotSellersAccount,
    /// The full price by an unchecked `Transfer` (names no mint or decimals).
    UncheckedTransfer,
    /// The token listing's buy memo, paid in lamports (the SOL listing's price).
    SolToTokenListing,
    /// The SOL listing's buy memo, paid in the token (as many units as its
    /// lamport price).
    TokenToSolListing,
}

impl TokenShape {
    /// The shapes an honest buyer sends.
    pub const HONEST: [TokenShape; 1] = [TokenShape::Honest];

    /// The shapes no release may follow (each is rejected, underpaid).
    pub const HOSTILE: [TokenShape; 7] = [
        TokenShape::Underpaid,
        TokenShape::NoPayment,
        TokenShape::WrongMint,
        TokenShape::NotSellersAccount,
        TokenShape::UncheckedTransfer,
        TokenShape::SolToTokenListing,
        TokenShape::TokenToSolListing,
    ];

    /// The rejection reason `listen` must record.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            TokenShape::Honest => None,
            TokenShape::TokenToSolListing => Some("underpaid"),
            _ => Some("underpaid_token"),
        }
    }
}

/// The instructions of token `shape` by `actor`, with `other` as the
/// stranger whose token account a shape pays into.
pub fn build_token(
    shape: TokenShape,
    t: &TokenTarget,
    actor: &Wallet,
    other: &Wallet,
) -> Vec<Instruction> {
    use node::chain::token::{associated_account, create_associated_account, transfer_to};
    use node::market::tx::token_buy_instructions;
    let me = actor.solana_keypair().pubkey();
    let them = other.solana_keypair().pubkey();
    let x = actor.x25519_address();
    let buy = |mint: &node::chain::token::TokenMint, listing: &str, units: u64| {
        token_buy_instructions(&me, &t.pay_to, mint, units, listing, &x, &t.registry, None)
    };
    // the discovery reference with the payment address in it, so the
    // seller's history shows the transaction
    let reg = || {
        let mut reg = discovery(&t.registry, 200_000);
        reg.accounts
            .push(AccountMeta::new_readonly(t.pay_to, false));
        reg
    };
    let memo_for = |listing: &str| memo(&buy_memo(listing, &x), &me);
    match shape {
        TokenShape::Honest => buy(&t.mint, &t.listing_id, t.price),
        TokenShape::Underpaid => buy(&t.mint, &t.listing_id, t.price - 1),
        TokenShape::NoPayment => buy(&t.mint, &t.listing_id, 1),
        TokenShape::WrongMint => buy(&t.other_mint, &t.listing_id, t.price),
        TokenShape::TokenToSolListing => buy(&t.mint, &t.sol_listing, t.sol_price),
        TokenShape::NotSellersAccount => vec![
            reg(),
            create_associated_account(&me, &them, &t.mint),
            transfer_to(&me, &them, &t.mint, t.price),
            memo_for(&t.listing_id),
        ],
        TokenShape::UncheckedTransfer => {
            // Transfer: tag 3, amount; source, destination, owner
            let mut data = vec![3];
            data.extend_from_slice(&t.price.to_le_bytes());
            vec![
                reg(),
                create_associated_account(&me, &t.pay_to, &t.mint),
                Instruction {
                    program_id: t.mint.program,
                    accounts: vec![
                        AccountMeta::new(associated_account(&me, &t.mint), false),
                        AccountMeta::new(associated_account(&t.pay_to, &t.mint), false),
                        AccountMeta::new_readonly(me, true),
                    ],
                    data,
                },
                memo_for(&t.listing_id),
            ]
        }
        TokenShape::SolToTokenListing => vec![
            reg(),
            transfer(&me, &t.pay_to, t.sol_price),
            memo_for(&t.listing_id),
        ],
    }
}
