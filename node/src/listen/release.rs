//! Releasing a verified buy, exactly once (DESIGN.md §Settlement):
//! 1. `verified`: the mint address is derived from the seller and the buy
//!    signature; the signed envelope (sealed key, naming that mint) is
//!    uploaded and recorded → `envelope_uploaded`;
//! 2. `envelope_uploaded`: ONE transaction creates the mint, mints 1 to the
//!    buyer, revokes the authority and posts `release:<listing>:<envelope>:<mint>`
//!    → `released`. A re-sent release fails on chain because the mint
//!    account exists. A release is recorded as done only from evidence
//!    that proves it: a successful transaction in the mint's history that
//!    carries this buy's exact `release` memo signed by the seller
//!    ([`landed_release`]); an account merely existing at the mint address
//!    (anyone can send lamports there) proves nothing.
//!
//! Mint addresses of both standards are derived from the seller's *secret*
//! key and the buy signature ([`release_mint`]), so nobody can compute
//! them before the envelope is published; after a crash the mint recorded
//! for the buy is reused whatever `--token-standard` the restart has. An escrow listing's release
//!    is two transactions (memo + the program's `release`, then the
//!    token), each refused on chain if repeated: see [`land_release`].

use super::journal::SendJournal;
use crate::arweave::Uploader;
use crate::chain::instructions::{discovery, memo, registry_from_env, DEFAULT_CU_LIMIT};
use crate::chain::{Chain, ChainError, Pubkey, Signature, Signer};
use crate::market::envelope::seal_envelope;
use crate::memo::MemoOp;
use crate::mint::bundle_mint::TokenStandard;
use crate::mint::receipt::{listing_mint, Receipt, ReceiptMode, NO_RECEIPT};
use crate::mint::token2022::{mint_address, mint_nft, seed_from, NftSpec};
use crate::seller::{ListenDb, StateError, Step};
use crate::wallet::Wallet;
use std::str::FromStr;

/// Release errors.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// State machine.
    #[error(transparent)]
    State(#[from] StateError),
    /// Chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Upload.
    #[error(transparent)]
    Storage(#[from] crate::arweave::StorageError),
    /// Envelope.
    #[error(transparent)]
    Envelope(#[from] crate::market::envelope::EnvelopeError),
    /// The buy's X25519 key is not 32 bytes of base58.
    #[error("buy {0} carries an invalid X25519 key")]
    BadBuyerKey(String),
    /// The escrow program refused or could not be read.
    #[error("escrow release: {0}")]
    Escrow(#[from] crate::market::escrow_trade::EscrowReadError),
    /// The transaction this buy's release shared with others of its
    /// listing failed (retried, alone or shared again, once due).
    #[error("the shared release transaction failed: {0}")]
    Shared(String),
    /// Nothing is left to release: the buyer closed its escrow, or we
    /// declined it.
    #[error("nothing to release: {0}")]
    Abandoned(crate::settle::Rejection),
    /// The listing's committed key is none this wallet derives (listed by
    /// another wallet, or on another cluster): no reveal can satisfy it.
    #[error(
        "listing {0}: its committed key point is not derived from this wallet on this cluster"
    )]
    ForeignKey(String),
    /// The mint recorded for the buy is none this seller derives for it.
    #[error("buy {signature}: recorded mint {mint} is not derived from this wallet for this buy")]
    ForeignMint {
        /// Buy.
        signature: String,
        /// The recorded mint.
        mint: String,
    },
}

impl From<crate::market::escrow_trade::EscrowPlanError> for ReleaseError {
    fn from(e: crate::market::escrow_trade::EscrowPlanError) -> Self {
        ReleaseError::Escrow(e.into())
    }
}

/// Mints the buyer's token (`extra` riding along); a re-sent mint fails on
/// chain (its derived account exists) instead of minting twice.
async fn mint_token(
    chain: &Chain,
    seller: &Wallet,
    seed: &str,
    buyer: &Pubkey,
    goods: &Goods<'_>,
    standard: TokenStandard,
    extra: Vec<solana_sdk::instruction::Instruction>,
) -> Result<crate::chain::Sent, ChainError> {
    match standard {
        TokenStandard::Token2022 => mint_nft(
            chain,
            &seller.solana_keypair(),
            seed,
            buyer,
            &goods.token,
            extra,
        )
        .await
        .map(|m| m.sent),
        TokenStandard::LightCompressed => crate::mint::light::send_compressed_mint(
            chain,
            seller,
            seed,
            buyer,
            1,
            &goods.token,
            extra,
        )
        .await
        .map(|m| m.sent),
    }
}

/// A release about to land: the buyer, the mint derived from the buy, and
/// the `release` memo (its text, and it with the discovery reference).
struct Pending {
    buyer: Pubkey,
    mint: Pubkey,
    seed: String,
    standard: TokenStandard,
    memo_text: String,
    extra: Vec<solana_sdk::instruction::Instruction>,
}

/// Seconds a reveal must have left before the program's answer deadline
/// (the release window and its 90 s grace) when sent: more than a
/// blockhash lives (~60-90 s), so a reveal can never land after it, where
/// it would fail yet publish s to a buyer then owed a refund. With the
/// grace, a seller may reveal until 15 s past the nominal window.
pub const REVEAL_MARGIN_SECS: i64 = 75;

/// The compute-unit limit of a reveal transaction, which is never
/// simulated (its `s` would reach the RPC): the program's `reveal` with its
/// event (about 20,000 CU, measured on the SBF build), the discovery
/// reference, and the memo at about 360 CU a byte, with room to spare.
pub fn reveal_cu_limit(memo_bytes: usize) -> u32 {
    let memo = u32::try_from(memo_bytes)
        .unwrap_or(u32::MAX)
        .saturating_mul(400);
    100_000u32.saturating_add(memo).min(1_400_000)
}

/// A sealed-escrow listing's release, as two transactions because the
/// token, the memo and the program's `reveal` together exceed a packet:
/// 1. the `release` memo + the program's `reveal` of s = k + b (k derived
///    again from our wallet and the listing id, b from our X25519 secret
///    and the escrow's; a deposit whose B is not b·G is declined instead,
///    returned to the buyer in full); the program refuses a second reveal,
///    and after a crash the landed one is found in the escrow's history;
/// 2. the buyer's token, unless its derived mint exists.
///
/// The seller is paid later, by `claim` once the dispute window passed
/// ([`super::pass`]). Returns the signature of (1), which carries the memo.
async fn land_escrow_release(
    chain: &Chain,
    seller: &Wallet,
    journal: &SendJournal,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
    p: Pending,
) -> Result<String, ReleaseError> {
    use crate::escrow::{escrow_address, listing_address, EscrowAccount, EscrowStatus};
    use crate::market::escrow_trade::{read_account, seller_blinding};
    use crate::settle::Rejection;
    let Pending {
        buyer,
        mint,
        seed,
        standard,
        memo_text,
        extra: mut release,
    } = p;
    let buyer = &buyer;
    let payer = seller.solana_keypair();
    let me = payer.pubkey();
    let listing = listing_address(&me, &row.listing_id);
    let at = escrow_address(&listing, buyer);
    let state = || async { read_account(chain, &at, EscrowAccount::decode).await };
    let sig = match state().await? {
        // closed: the buyer took it back (after the window, or declined)
        None => return Err(ReleaseError::Abandoned(Rejection::RefundedBeforeRelease)),
        Some(e) if e.status == EscrowStatus::Declined => {
            return Err(ReleaseError::Abandoned(Rejection::BlindingDeclined))
        }
        // left past its answer deadline and expired (by us or anyone):
        // nothing can answer it, the buyer refunds it with its share
        Some(e) if e.status == EscrowStatus::Expired => {
            return Err(ReleaseError::Abandoned(Rejection::EscrowSettled {
                status: e.status,
            }))
        }
        Some(e) if e.status != EscrowStatus::Deposited => {
            // the reveal kept before it was sent is the record; the
            // escrow's history (anyone can lengthen it) is read, bounded,
            // only when nothing was kept
            let kept = kept_release(chain, journal, &row.signature, &memo_text, &me).await?;
            let found = match kept {
                Some(sig) => Some(sig),
                None => landed_release(chain, &at, &memo_text, &me).await?,
            };
            match found {
                Some(sig) => sig,
                // a deposit again at this address (`<escrow>#<n>`) that is
                // no longer held, with no reveal of ours for it: another
                // deposit's answer is what the account shows (read behind
                // the chain when it was recorded), nothing is left to do
                None if row.signature != crate::seller::escrow_of_key(&row.signature) => {
                    return Err(ReleaseError::Abandoned(Rejection::EscrowSettled {
                        status: e.status,
                    }))
                }
                None => return Err(released_without_memo(&at).into()),
            }
        }
        Some(e) => {
            let b = seller_blinding(&seller.x25519_secret(), &at, &e.buyer_x25519)?;
            let settings = crate::market::escrow_trade::read_settings(chain).await?;
            let deadline = settings.answer_deadline(e.deposited_at);
            // a reveal sent before (kept before it was sent): its s is
            // known to the RPC that took it, so it is never declined
            // now; one that landed is the answer
            let kept = journal.kept(&row.signature)?;
            let mut landed = None;
            for k in &kept {
                if let Some(sent) = chain
                    .finish_recorded(&k.signature, k.last_valid, &k.wire)
                    .await?
                {
                    landed = Some(sent.signature.to_string());
                    break;
                }
            }
            match landed {
                Some(sig) => sig,
                None => {
                    let now = chain.cluster_time().await?;
                    // k by the derivation the listing committed to (bound
                    // to this cluster, or the first one for an older listing)
                    let genesis = chain.genesis_hash().await?;
                    let onchain =
                        read_account(chain, &listing, crate::escrow::ListingAccount::decode)
                            .await?;
                    let convicted = onchain
                        .as_ref()
                        .is_some_and(|l| l.status == crate::escrow::ListingStatus::Convicted);
                    let committed = onchain.as_ref().and_then(|l| {
                        crate::escrow::committed_scalar(
                            seller,
                            &genesis,
                            &row.listing_id,
                            &l.terms.key_point,
                        )
                    });
                    let late = now + REVEAL_MARGIN_SECS >= deadline;
                    let why = if escrow_math::client::point_of(&b) != e.blind_point {
                        Some(Rejection::BlindingDeclined)
                    } else if convicted {
                        Some(Rejection::ListingConvicted)
                    } else if committed.is_none() {
                        Some(Rejection::ForeignKey)
                    } else if late && kept.is_empty() {
                        Some(Rejection::RevealTooLate { deadline })
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        return decline_deposit(chain, seller, &listing, buyer, deadline, why)
                            .await;
                    }
                    if now >= deadline {
                        // a reveal sent before that never landed, and the
                        // program takes none now: the buyer refunds it
                        return Err(ReleaseError::Abandoned(Rejection::RevealTooLate {
                            deadline,
                        }));
                    }
                    let k = committed
                        .ok_or_else(|| ReleaseError::ForeignKey(row.listing_id.clone()))?;
                    let s = escrow_math::client::reveal(&k, &b);
                    release.push(crate::escrow::reveal(&listing, buyer, &me, &s));
                    // never simulated (s would reach the RPC before it is
                    // sent for good), kept before it is sent, one blockhash:
                    // the next pass finishes or sends it again until the
                    // answer deadline, and never declines it
                    let record = journal.recorder(&row.signature);
                    match chain
                        .send_secret_once(
                            &release,
                            &[&payer],
                            reveal_cu_limit(memo_text.len()),
                            &record,
                        )
                        .await
                    {
                        Ok(sent) => sent.signature.to_string(),
                        // revealed concurrently or before a crash: the program refused a second one
                        Err(err)
                            if state()
                                .await?
                                .is_some_and(|e| e.status != EscrowStatus::Deposited) =>
                        {
                            tracing::info!(error = %err, escrow = %at, "escrow already revealed; recording it");
                            match kept_release(chain, journal, &row.signature, &memo_text, &me)
                                .await?
                            {
                                Some(sig) => sig,
                                None => released_by(chain, &at, &memo_text, &me).await?,
                            }
                        }
                        Err(err) => return Err(err.into()),
                    }
                }
            }
        }
    };
    crate::fault::maybe_abort("release_sent");
    if !is_our_mint(chain, &mint).await? {
        if let Err(e) = mint_token(chain, seller, &seed, buyer, goods, standard, vec![]).await {
            if !is_our_mint(chain, &mint).await? {
                return Err(e.into());
            }
        }
    }
    Ok(sig)
}

/// Declines a deposit (`why`): a decline publishes nothing and returns the
/// deposit in full; one that lands late fails harmlessly. A decline that
/// fails inside the window is retried next pass (the deposit is answered
/// only once it lands).
async fn decline_deposit(
    chain: &Chain,
    seller: &Wallet,
    listing: &Pubkey,
    buyer: &Pubkey,
    deadline: i64,
    why: crate::settle::Rejection,
) -> Result<String, ReleaseError> {
    let payer = seller.solana_keypair();
    tracing::warn!(listing = %listing, %buyer, reason = %why, "declining the deposit");
    let decline = crate::escrow::decline(listing, buyer, &payer.pubkey());
    if let Err(err) = chain.send(&[decline], &[&payer]).await {
        // past the window nothing can answer it (the buyer refunds it
        // with the stake share)
        if chain.cluster_time().await? < deadline {
            tracing::warn!(%buyer, error = %err, "decline failed; will retry");
            return Err(err.into());
        }
        tracing::warn!(%buyer, error = %err, "decline failed after the release window");
    }
    Err(ReleaseError::Abandoned(why))
}

/// A release of `buy` kept in `journal` before it was sent that landed
/// with our memo (a successful transaction we signed carrying it): the
/// record of a reveal after a crash, read without the escrow's history.
async fn kept_release(
    chain: &Chain,
    journal: &SendJournal,
    buy: &str,
    memo_text: &str,
    seller: &Pubkey,
) -> Result<Option<String>, ReleaseError> {
    for k in journal.kept(buy)? {
        if let Some(tx) = chain.transaction(&k.signature).await? {
            if tx.succeeded
                && tx.signed_by(&seller.to_string())
                && tx.memos.iter().any(|m| m == memo_text)
            {
                return Ok(Some(k.signature.to_string()));
            }
        }
    }
    Ok(None)
}

/// The transaction in the escrow's history that released it with our memo.
async fn released_by(
    chain: &Chain,
    escrow: &Pubkey,
    memo_text: &str,
    seller: &Pubkey,
) -> Result<String, ChainError> {
    landed_release(chain, escrow, memo_text, seller)
        .await?
        .ok_or_else(|| released_without_memo(escrow))
}

/// An escrow no longer held whose release memo of ours is not (yet) in
/// its history.
fn released_without_memo(escrow: &Pubkey) -> ChainError {
    ChainError::Config(format!(
        "escrow {escrow} is released but no transaction with our release memo is in its history"
    ))
}

/// Successful entries of `history` whose memo field holds `memo_text`,
/// oldest first: candidates only (the memo field does not say who signed).
fn release_candidates(history: &[crate::chain::SigInfo], memo_text: &str) -> Vec<String> {
    history
        .iter()
        .rev()
        .filter(|s| {
            s.err.is_none()
                && s.memo
                    .as_deref()
                    .and_then(|m| crate::chain::memo_field::parse_memo_field(m).ok())
                    .is_some_and(|memos| memos.iter().any(|m| m == memo_text))
        })
        .map(|s| s.signature.clone())
        .collect()
}

/// How much of an address's history [`landed_release`] reads: anyone can
/// lengthen it (a 1-lamport transfer a signature), so a lookup after a
/// crash reads the newest pages only. A release is found sooner from what
/// was kept before it was sent (the journal); one buried deeper than this
/// is not found, and the buy is retried (the chain refuses a second mint
/// or reveal), never released twice.
pub const RELEASE_HISTORY_MAX: usize = 5_000;

/// Proof that a release landed: the first successful transaction in
/// `address`'s newest [`RELEASE_HISTORY_MAX`] history entries carrying
/// exactly `memo_text`, signed by `seller` (a stranger can copy the memo
/// text, not the seller's signature).
pub async fn landed_release(
    chain: &Chain,
    address: &Pubkey,
    memo_text: &str,
    seller: &Pubkey,
) -> Result<Option<String>, ChainError> {
    landed_release_within(chain, address, memo_text, seller, RELEASE_HISTORY_MAX).await
}

/// [`landed_release`] in `address`'s newest `max` history entries (whole
/// pages of 1,000): what one lookup may cost, whatever the history's
/// length.
pub async fn landed_release_within(
    chain: &Chain,
    address: &Pubkey,
    memo_text: &str,
    seller: &Pubkey,
    max: usize,
) -> Result<Option<String>, ChainError> {
    let history = chain.signatures_at_most(address, None, max).await?;
    if history.len() >= max {
        tracing::warn!(%address, entries = history.len(), "a long history: only its newest entries are searched for our release");
    }
    // oldest first (a release lands before copies of its memo can); a
    // stranger's copies cost a lookup each, so only so many are read
    for candidate in release_candidates(&history, memo_text).into_iter().take(64) {
        let Ok(sig) = Signature::from_str(&candidate) else {
            continue;
        };
        if let Some(tx) = chain.transaction(&sig).await? {
            if tx.succeeded
                && tx.signed_by(&seller.to_string())
                && tx.memos.iter().any(|m| m == memo_text)
            {
                return Ok(Some(candidate));
            }
        }
    }
    Ok(None)
}

/// What a listing sells, as the seller knows it.
#[derive(Debug, Clone)]
pub struct Goods<'a> {
    /// Bundle hash.
    pub bundle_hash: &'a str,
    /// The blob key.
    pub key: &'a [u8; 32],
    /// Token name/symbol/URI for the buyer's token.
    pub token: NftSpec,
    /// Light compressed token (default) or Token-2022 NFT, for a receipt
    /// minted per buy.
    pub standard: TokenStandard,
    /// Which receipt releases carry (escrow listings: a mint per buy).
    pub receipt: ReceiptMode,
    /// Settled through the escrow program: the release transaction also
    /// releases the buyer's escrow (the seller is paid there).
    pub escrow: bool,
    /// Where a release pays a buy's [`crate::settle::VerifiedBuy::fee_at_release`]
    /// (the treasury, and the listing's mint); `None` where no fee applies.
    pub fee_to: Option<(String, String)>,
}

impl Goods<'_> {
    /// These goods owned, for a release in flight past the catalog they
    /// came from (the daemon reloads its catalog every round).
    pub fn to_owned_goods(&self) -> OwnedGoods {
        OwnedGoods {
            bundle_hash: self.bundle_hash.to_string(),
            key: zeroize::Zeroizing::new(*self.key),
            token: self.token.clone(),
            standard: self.standard,
            receipt: self.receipt,
            escrow: self.escrow,
            fee_to: self.fee_to.clone(),
        }
    }
}

/// [`Goods`] owned (the blob key wiped when dropped).
#[derive(Clone)]
pub struct OwnedGoods {
    bundle_hash: String,
    key: zeroize::Zeroizing<[u8; 32]>,
    token: NftSpec,
    standard: TokenStandard,
    receipt: ReceiptMode,
    escrow: bool,
    fee_to: Option<(String, String)>,
}

impl OwnedGoods {
    /// Borrowed, as the release steps take them.
    pub fn goods(&self) -> Goods<'_> {
        Goods {
            bundle_hash: &self.bundle_hash,
            key: &self.key,
            token: self.token.clone(),
            standard: self.standard,
            receipt: self.receipt,
            escrow: self.escrow,
            fee_to: self.fee_to.clone(),
        }
    }
}

/// The instructions paying the treasury `row`'s share at its release (an
/// x402 buy where the protocol fee applies), creating the treasury's
/// token account first if it is missing (a transaction of its own, once
/// per mint: the release stays within a packet); none otherwise.
async fn fee_instructions(
    chain: &Chain,
    seller: &Wallet,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
) -> Result<Vec<solana_sdk::instruction::Instruction>, ReleaseError> {
    if row.fee_at_release == 0 {
        return Ok(vec![]);
    }
    let Some((treasury, mint)) = &goods.fee_to else {
        return Err(ChainError::Config(format!(
            "buy {} owes the treasury {} at its release, but no protocol fee is configured: run `listen` with the fee settings it was verified under",
            row.signature, row.fee_at_release
        ))
        .into());
    };
    let bad = |what: &str| ChainError::Config(format!("{what} is not a pubkey"));
    let treasury = Pubkey::from_str(treasury).map_err(|_| bad("the treasury"))?;
    let mint = Pubkey::from_str(mint).map_err(|_| bad("the listing's mint"))?;
    let mint = crate::chain::token::read_held_mint(chain, &mint)
        .await
        .map_err(|e| ChainError::Config(e.to_string()))?;
    let payer = seller.solana_keypair();
    let account = crate::chain::token::associated_account(&treasury, &mint);
    if chain.balance(&account).await? == 0 {
        let create =
            crate::chain::token::create_associated_account(&payer.pubkey(), &treasury, &mint);
        chain.send(&[create], &[&payer]).await?;
    }
    Ok(vec![crate::chain::token::transfer_to(
        &payer.pubkey(),
        &treasury,
        &mint,
        row.fee_at_release,
    )])
}

/// The seed of a release's mint: from the seller's secret key and the buy
/// signature, so it cannot be computed from public data.
fn release_seed(seller: &Wallet, buy_signature: &str) -> String {
    let secret = seller.solana_keypair().to_bytes();
    let mut input = b"brainctl/release-mint/v2:".to_vec();
    input.extend_from_slice(&secret[..32]);
    input.extend_from_slice(buy_signature.as_bytes());
    seed_from(&input)
}

/// The seed releases used before v2 (public: kept only so a buy recorded
/// with such a mint before an upgrade is finished with that same mint).
fn legacy_release_seed(buy_signature: &str) -> String {
    seed_from(format!("release:{buy_signature}").as_bytes())
}

fn mint_of(seller: &Wallet, seed: &str, standard: TokenStandard) -> Result<Pubkey, ChainError> {
    Ok(match standard {
        TokenStandard::Token2022 => mint_address(&seller.solana_keypair().pubkey(), seed)?,
        TokenStandard::LightCompressed => crate::mint::light::mint_keypair(seller, seed).pubkey(),
    })
}

/// The mint a release of `buy_signature` creates (derived from the
/// seller's secret, so a second release of the same buy names the same
/// mint and cannot land, and nobody else can compute it).
pub fn release_mint(
    seller: &Wallet,
    buy_signature: &str,
    standard: TokenStandard,
) -> Result<(Pubkey, String), ChainError> {
    let seed = release_seed(seller, buy_signature);
    Ok((mint_of(seller, &seed, standard)?, seed))
}

/// The mint, seed and standard of `row`'s release: the mint recorded for
/// the buy when there is one (whatever standard this process was started
/// with), else a new one of `standard`.
fn mint_for_row(
    seller: &Wallet,
    row: &crate::seller::BuyRow,
    standard: TokenStandard,
) -> Result<(Pubkey, String, TokenStandard), ReleaseError> {
    let Some(recorded) = row.mint_address.as_deref() else {
        let (mint, seed) = release_mint(seller, &row.signature, standard)?;
        return Ok((mint, seed, standard));
    };
    let seeds = [
        release_seed(seller, &row.signature),
        legacy_release_seed(&row.signature),
    ];
    for seed in seeds {
        for std in [TokenStandard::LightCompressed, TokenStandard::Token2022] {
            let mint = mint_of(seller, &seed, std)?;
            if mint.to_string() == recorded {
                return Ok((mint, seed, std));
            }
        }
    }
    Err(ReleaseError::ForeignMint {
        signature: row.signature.clone(),
        mint: recorded.into(),
    })
}

/// The receipt of `row`'s release: the one recorded for the buy when
/// there is one (whatever this process was started with), else one of
/// `goods`' mode (a mint per buy for an escrow listing: its token is sent
/// after the program's reveal, and only its own mint makes that repeat
/// refused on chain).
fn receipt_for_row(
    seller: &Wallet,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
) -> Result<Receipt, ReleaseError> {
    let listing = || listing_mint(seller, &row.listing_id);
    match row.mint_address.as_deref() {
        Some(recorded) if recorded == NO_RECEIPT.to_string() => Ok(Receipt::None),
        Some(recorded) if recorded == listing().to_string() => {
            Ok(Receipt::Listing { mint: listing() })
        }
        // the treasury's share rides in the release, which a fresh mint
        // per buy leaves no room for: a unit of the listing's mint then
        None if !goods.escrow
            && (goods.receipt == ReceiptMode::Listing
                || (goods.receipt == ReceiptMode::PerBuy && row.fee_at_release > 0)) =>
        {
            Ok(Receipt::Listing { mint: listing() })
        }
        None if !goods.escrow && goods.receipt == ReceiptMode::None => Ok(Receipt::None),
        _ => {
            let (mint, seed, standard) = mint_for_row(seller, row, goods.standard)?;
            Ok(Receipt::PerBuy {
                mint,
                seed,
                standard,
            })
        }
    }
}

/// Whether `mint` is a finished release mint: owned by Token-2022, supply
/// exactly 1, mint authority revoked. Lamports parked at the address by a
/// stranger, or a half-made mint, are not.
async fn is_our_mint(chain: &Chain, mint: &Pubkey) -> Result<bool, ChainError> {
    Ok(crate::mint::token2022::mint_base(chain, mint)
        .await?
        .is_some_and(|m| m.supply == 1 && m.mint_authority.is_none()))
}

/// What step 1 leaves for a buy: the envelope its release memo names (the
/// escrow account, for a sealed-escrow buy), its mint and token standard.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Envelope item id (or escrow account).
    pub envelope_id: String,
    /// The receipt's address ([`NO_RECEIPT`] for none).
    pub mint: String,
    /// The receipt's kind ([`Receipt::kind`]).
    pub standard: &'static str,
}

/// Step 1 without the state database: seals and uploads `row`'s envelope
/// (none for a sealed-escrow buy: the key reaches the buyer only through
/// the program's reveal, which pays), so several can be in flight at once.
/// An upload whose result is never recorded (a crash) is repeated: the
/// orphan costs storage, never a second release.
pub async fn prepare_envelope(
    seller: &Wallet,
    uploader: &Uploader,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
) -> Result<Prepared, ReleaseError> {
    let signature = row.signature.as_str();
    let (Some(buyer), Some(buyer_x25519)) = (&row.buyer, &row.buyer_x25519) else {
        return Err(StateError::WrongState {
            signature: signature.into(),
            state: row.state,
            step: "upload the envelope",
        }
        .into());
    };
    let x25519 = crate::crypto::b58_array::<32>(buyer_x25519)
        .ok_or_else(|| ReleaseError::BadBuyerKey(signature.into()))?;
    let receipt = receipt_for_row(seller, row, goods)?;
    let mint = receipt.address();
    let envelope_id = if goods.escrow {
        let listing =
            crate::escrow::listing_address(&seller.solana_keypair().pubkey(), &row.listing_id);
        let buyer: Pubkey = buyer
            .parse()
            .map_err(|_| ChainError::Config(format!("buyer {buyer} is not a pubkey")))?;
        crate::escrow::escrow_address(&listing, &buyer).to_string()
    } else {
        let env = seal_envelope(
            seller,
            &row.listing_id,
            buyer,
            &x25519,
            signature,
            goods.bundle_hash,
            &mint.to_string(),
            goods.key,
        )?;
        uploader
            .put_signed(
                seller,
                serde_json::to_vec(&env).expect("serializes"),
                "application/json",
                crate::market::envelope::ENVELOPE_SCHEMA,
            )
            .await?
    };
    Ok(Prepared {
        envelope_id,
        mint: mint.to_string(),
        standard: receipt.kind(),
    })
}

/// Step 1: seal and upload the envelope, recorded (idempotent per buy).
pub async fn upload_envelope(
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    signature: &str,
    goods: &Goods<'_>,
) -> Result<Step, ReleaseError> {
    let row = db.get(signature)?;
    let p = prepare_envelope(seller, uploader, &row, goods).await?;
    Ok(db.mark_envelope_uploaded(signature, &p.envelope_id, &p.mint, p.standard)?)
}

/// Step 2: the one release transaction (or recording one that landed).
/// Returns the release transaction's signature.
pub async fn send_release(
    db: &mut ListenDb,
    chain: &Chain,
    seller: &Wallet,
    buy_signature: &str,
    goods: &Goods<'_>,
) -> Result<String, ReleaseError> {
    let row = db.get(buy_signature)?;
    if let Some(sig) = row.release_sig {
        return Ok(sig);
    }
    let journal = SendJournal::beside(db)?;
    let sig = land_release(chain, seller, &journal, &row, goods).await?;
    db.mark_released(buy_signature, &sig)?;
    Ok(sig)
}

/// Lands the release of `row` (state `envelope_uploaded`) without touching
/// the buy's state, so several can be in flight at once. With a mint per
/// buy: if its mint exists the release landed before (the transaction in
/// the mint's history carrying our memo is returned: [`landed_release`]);
/// otherwise ONE transaction mints and posts `release` (refused on chain
/// if a copy landed meanwhile, which is then looked for the same way).
/// With a unit of the listing's mint or no receipt, the chain would take a
/// repeat, so what `journal` kept for the buy is finished first and a new
/// release is kept before it is sent ([`land_kept_release`]).
pub async fn land_release(
    chain: &Chain,
    seller: &Wallet,
    journal: &SendJournal,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
) -> Result<String, ReleaseError> {
    let payer = seller.solana_keypair();
    let receipt = receipt_for_row(seller, row, goods)?;
    let (buyer, memo_text) = release_parts(row, &receipt)?;
    let mut extra = vec![
        memo(&memo_text, &payer.pubkey()),
        discovery(&registry_from_env()?, DEFAULT_CU_LIMIT),
    ];
    // an x402 buy's release pays the treasury's share, in the same
    // transaction as the release memo (both land, or neither)
    extra.extend(fee_instructions(chain, seller, row, goods).await?);
    let Receipt::PerBuy {
        mint,
        seed,
        standard,
    } = receipt
    else {
        return land_kept_release(chain, seller, journal, row, goods, &receipt, &buyer, extra)
            .await;
    };
    if goods.escrow {
        let p = Pending {
            buyer,
            mint,
            seed,
            standard,
            memo_text,
            extra,
        };
        return land_escrow_release(chain, seller, journal, row, goods, p).await;
    }
    let me = payer.pubkey();
    // a release that landed before (a crash, a send that timed out) made
    // the mint: the mint builder reads the mint's address and refuses to
    // send (`AccountExists`), and only then is the mint's history read
    // below, so a restart sends nothing new and a first release costs one
    // account read, not a history read
    let started = std::time::Instant::now();
    let minted = mint_token(chain, seller, &seed, &buyer, goods, standard, extra).await;
    let sig = match minted {
        Ok(sent) => {
            tracing::debug!(buy = %row.signature, release = %sent.signature, slot = sent.slot, ms = started.elapsed().as_millis() as u64, "release landed");
            crate::fault::maybe_abort("release_sent");
            sent.signature.to_string()
        }
        // landed concurrently or before a crash: the builder found the mint
        // (or the chain refused a second one); recorded only if our signed
        // release memo proves it
        Err(e) => match landed_release(chain, &mint, &memo_text, &me).await? {
            Some(sig) => {
                tracing::info!(error = %e, %mint, "release already on chain; recording it");
                sig
            }
            None => return Err(e.into()),
        },
    };
    Signature::from_str(&sig).map_err(|_| ChainError::Config("bad release signature".into()))?;
    Ok(sig)
}

/// The buyer of `row`, an `envelope_uploaded` buy, and the text of its
/// `release` memo naming `receipt`.
fn release_parts(
    row: &crate::seller::BuyRow,
    receipt: &Receipt,
) -> Result<(Pubkey, String), ReleaseError> {
    let (Some(envelope_id), Some(buyer)) = (&row.envelope_id, &row.buyer) else {
        return Err(StateError::WrongState {
            signature: row.signature.clone(),
            state: row.state,
            step: "release",
        }
        .into());
    };
    let buyer = Pubkey::from_str(buyer)
        .map_err(|_| ChainError::Config(format!("buyer {buyer} is not a pubkey")))?;
    let op = MemoOp::Release {
        listing_id: row.listing_id.clone(),
        envelope_arweave_id: envelope_id.clone(),
        minted_token_address: receipt.address().to_string(),
    };
    Ok((buyer, op.to_string()))
}

/// The receipt `row` releases with, when its release may share a
/// transaction with others of its listing: a receipt the chain would not
/// refuse to repeat (a unit of the listing's mint, or none), no fee paid
/// at its release, not settled in escrow, and nothing kept in `journal`
/// for it yet (what was kept is finished first, alone: [`land_release`]).
/// `None`: it is released alone.
pub fn shared_receipt(
    seller: &Wallet,
    journal: &SendJournal,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
) -> Result<Option<Receipt>, StateError> {
    // the packing model counts envelope ids of an item id's 43 characters
    // (what every uploader of ours returns); anything else goes alone
    if goods.escrow
        || row.fee_at_release > 0
        || row.envelope_id.as_deref().is_none_or(|id| id.len() != 43)
        || row
            .buyer
            .as_deref()
            .and_then(|b| Pubkey::from_str(b).ok())
            .is_none()
    {
        return Ok(None);
    }
    let receipt = match receipt_for_row(seller, row, goods) {
        Ok(r @ (Receipt::Listing { .. } | Receipt::None)) => r,
        _ => return Ok(None),
    };
    Ok(journal.kept(&row.signature)?.is_empty().then_some(receipt))
}

/// The instructions of one transaction releasing `buys` (each buyer with
/// its `release` memo) of one listing with `receipt`: the discovery
/// reference (its limit set from the simulation when sent), a unit of the
/// listing's mint to every buyer in one `mint_to` (none for
/// [`Receipt::None`]), then every memo.
pub fn shared_release_instructions(
    me: &Pubkey,
    receipt: &Receipt,
    buys: &[(Pubkey, String)],
    registry: &Pubkey,
) -> Vec<solana_sdk::instruction::Instruction> {
    // the limit if no simulation answers (the chain sets it from one
    // otherwise): a compressed output and its memo about 80,000 CU each,
    // a memo alone about 360 CU a byte
    let memo_bytes: usize = buys.iter().map(|(_, text)| text.len()).sum();
    let estimate = match receipt {
        Receipt::Listing { .. } => 100_000 + 80_000 * buys.len(),
        _ => 20_000 + 400 * memo_bytes,
    };
    let limit = u32::try_from(estimate)
        .unwrap_or(u32::MAX)
        .max(DEFAULT_CU_LIMIT);
    let mut ixs = vec![discovery(registry, limit)];
    if let Receipt::Listing { mint } = receipt {
        let to: Vec<(Pubkey, u64)> = buys.iter().map(|(b, _)| (*b, 1)).collect();
        ixs.push(crate::mint::light::mint_to_many(
            me,
            me,
            mint,
            &to,
            &crate::mint::light::LOCALNET_STATE_TREE,
            true,
        ));
    }
    ixs.extend(buys.iter().map(|(_, text)| memo(text, me)));
    ixs
}

/// The most releases of `listing_id` with `receipt` one transaction
/// holds: ids at their real lengths, every buyer distinct, with its
/// compute-unit limit and price (at least 1), compiled against `tables`
/// (a v0 message when any: [`crate::listen::tables`]).
pub fn releases_per_transaction(
    me: &Pubkey,
    receipt: &Receipt,
    listing_id: &str,
    tables: &[crate::chain::lookup::AddressLookupTableAccount],
) -> usize {
    use crate::chain::priority::{with_budget, FALLBACK_CU_LIMIT};
    let buys = |n: usize| -> Vec<(Pubkey, String)> {
        (0..n)
            .map(|i| {
                let op = MemoOp::Release {
                    listing_id: listing_id.to_string(),
                    envelope_arweave_id: format!("{i:_>43}"),
                    minted_token_address: receipt.address().to_string(),
                };
                (Pubkey::new_unique(), op.to_string())
            })
            .collect()
    };
    let registry = crate::chain::instructions::default_registry();
    let fits_n = |n: usize| {
        let ixs = shared_release_instructions(me, receipt, &buys(n), &registry);
        crate::chain::lookup::fits(&with_budget(&ixs, FALLBACK_CU_LIMIT, 1), me, 1, tables)
    };
    (2..=MAX_SHARED_RELEASES)
        .take_while(|n| fits_n(*n))
        .last()
        .unwrap_or(1)
}

/// The most releases one transaction is ever given (far above what fits).
const MAX_SHARED_RELEASES: usize = 32;

/// Releases `rows` (buys of one listing, each with `receipt` from
/// [`shared_receipt`], as many as [`releases_per_transaction`] allows) in
/// one transaction, kept under every one of them before it is sent
/// ([`SendJournal::recorder_for`]), so after a crash each finds it and
/// none signs its own until it can no longer land. The listing's mint is
/// created first if no release has made it yet. Its signature is every
/// row's release.
pub async fn land_shared_release(
    chain: &Chain,
    seller: &Wallet,
    journal: &SendJournal,
    rows: &[crate::seller::BuyRow],
    goods: &Goods<'_>,
    receipt: &Receipt,
) -> Result<String, ReleaseError> {
    let payer = seller.solana_keypair();
    let me = payer.pubkey();
    let buys = rows
        .iter()
        .map(|row| release_parts(row, receipt))
        .collect::<Result<Vec<_>, _>>()?;
    let ixs = shared_release_instructions(&me, receipt, &buys, &registry_from_env()?);
    let record = journal.recorder_for(rows.iter().map(|r| r.signature.as_str()).collect());
    let started = std::time::Instant::now();
    let sent = match receipt {
        Receipt::Listing { .. } => {
            let listing_id = rows.first().map_or("", |r| r.listing_id.as_str());
            crate::mint::receipt::ensure_listing_mint(chain, seller, listing_id, &goods.token)
                .await?;
            crate::mint::light::send_to_open_tree_recorded(
                chain,
                &ixs,
                &[&payer],
                rows.len() as u64,
                Some(&record),
            )
            .await?
        }
        _ => {
            chain
                .send_unsimulated_recorded(&ixs, &[&payer], &record)
                .await?
        }
    };
    tracing::debug!(releases = rows.len(), release = %sent.signature, slot = sent.slot, ms = started.elapsed().as_millis() as u64, "shared release landed");
    crate::fault::maybe_abort("release_sent");
    Ok(sent.signature.to_string())
}

/// A release the chain would not refuse to repeat (a unit of the
/// listing's mint, or the memo alone): every transaction `journal` kept
/// for the buy is finished first (sent again while it can land; the first
/// that landed is the release), and only when none did is a new one
/// signed, kept, then sent. The listing's mint is created first if no
/// release has made it yet.
#[allow(clippy::too_many_arguments)]
async fn land_kept_release(
    chain: &Chain,
    seller: &Wallet,
    journal: &SendJournal,
    row: &crate::seller::BuyRow,
    goods: &Goods<'_>,
    receipt: &Receipt,
    buyer: &Pubkey,
    extra: Vec<solana_sdk::instruction::Instruction>,
) -> Result<String, ReleaseError> {
    for kept in journal.kept(&row.signature)? {
        if let Some(sent) = chain
            .finish_recorded(&kept.signature, kept.last_valid, &kept.wire)
            .await?
        {
            tracing::info!(buy = %row.signature, release = %sent.signature, "a release kept before a restart landed; recording it");
            crate::fault::maybe_abort("release_sent");
            return Ok(sent.signature.to_string());
        }
    }
    let payer = seller.solana_keypair();
    let me = payer.pubkey();
    let record = journal.recorder(&row.signature);
    let sent = match receipt {
        Receipt::Listing { mint } => {
            crate::mint::receipt::ensure_listing_mint(chain, seller, &row.listing_id, &goods.token)
                .await?;
            let mut ixs = vec![crate::mint::light::mint_to(
                &me,
                &me,
                mint,
                buyer,
                1,
                &crate::mint::light::LOCALNET_STATE_TREE,
                true,
            )];
            ixs.extend(extra);
            crate::mint::light::send_to_open_tree_recorded(chain, &ixs, &[&payer], 1, Some(&record))
                .await?
        }
        _ => {
            chain
                .send_unsimulated_recorded(&extra, &[&payer], &record)
                .await?
        }
    };
    crate::fault::maybe_abort("release_sent");
    Ok(sent.signature.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mint::account_setup::{self, AddressState::*, Derivation};
    use crate::mint::light::compressed_mint_instructions;
    use solana_sdk::message::Message;

    /// A shared release holds as many releases as fit a packet with its
    /// compute budget, and one more does not: a unit of the listing's mint
    /// each (one `mint_to`) or the memo alone.
    #[test]
    fn shared_releases_fill_a_packet_and_no_more() {
        use crate::chain::priority::{with_budget, FALLBACK_CU_LIMIT};
        let fits = |ixs: &[solana_sdk::instruction::Instruction], me: &Pubkey, signers: usize| {
            crate::chain::lookup::fits(ixs, me, signers, &[])
        };
        let me = Pubkey::new_unique();
        let listing_id = "20261128-0123456789ab";
        let registry = crate::chain::instructions::default_registry();
        let tx = |receipt: &Receipt, n: usize| {
            let buys: Vec<(Pubkey, String)> = (0..n)
                .map(|i| {
                    let op = MemoOp::Release {
                        listing_id: listing_id.into(),
                        envelope_arweave_id: format!("{i:x>43}"),
                        minted_token_address: receipt.address().to_string(),
                    };
                    (Pubkey::new_unique(), op.to_string())
                })
                .collect();
            with_budget(
                &shared_release_instructions(&me, receipt, &buys, &registry),
                FALLBACK_CU_LIMIT,
                1,
            )
        };
        let listing = Receipt::Listing {
            mint: Pubkey::new_unique(),
        };
        for (receipt, at_least) in [(listing, 3), (Receipt::None, 5)] {
            let most = releases_per_transaction(&me, &receipt, listing_id, &[]);
            eprintln!("{}: {most} releases a transaction", receipt.kind());
            assert!(most >= at_least, "{}: {most}", receipt.kind());
            assert!(fits(&tx(&receipt, most), &me, 1));
            assert!(!fits(&tx(&receipt, most + 1), &me, 1), "{}", receipt.kind());
            // every buyer gets its receipt and its memo
            let ixs = tx(&receipt, most);
            let memos = ixs
                .iter()
                .filter(|ix| ix.program_id == crate::chain::instructions::MEMO_V3)
                .count();
            assert_eq!(memos, most);
        }
    }

    /// The releases `listen` sends, with ids at their longest, fit in a
    /// packet (1232 bytes): a Light mint with its metadata + the `release`
    /// memo + the discovery reference in one; for escrow listings the memo
    /// + the program's `release`, then the mint (all three would not fit).
    #[test]
    fn release_transactions_fit_in_a_packet() {
        let (seller, mint, buyer) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let item = "x".repeat(43);
        let listing_id = "20261123-0123456789ab";
        let spec = NftSpec {
            name: "brainctl bundle 0123456789ab".into(),
            symbol: crate::mint::bundle_mint::SYMBOL.into(),
            uri: format!("ar://{item}"),
        };
        let setup = |state| {
            account_setup::instructions(&seller, &mint, Derivation::Keypair, 10, 234, state)
        };
        let mut ixs =
            compressed_mint_instructions(&seller, &mint, &buyer, 1, &spec, setup(Empty)).unwrap();
        let op = MemoOp::Release {
            listing_id: listing_id.into(),
            envelope_arweave_id: item.clone(),
            minted_token_address: mint.to_string(),
        };
        ixs.push(memo(&op.to_string(), &seller));
        ixs.push(discovery(
            &crate::chain::instructions::default_registry(),
            DEFAULT_CU_LIMIT,
        ));
        ixs.push(crate::escrow::reveal(
            &crate::escrow::listing_address(&seller, listing_id),
            &buyer,
            &seller,
            &[7; 32],
        ));
        let size = |ixs: &[solana_sdk::instruction::Instruction]| {
            let m = Message::new(ixs, Some(&seller));
            1 + 64 * m.header.num_required_signatures as usize + m.serialize().len()
        };
        let (mint_ixs, memo_ixs, escrow_ix) = (&ixs[..6], &ixs[6..8], &ixs[8]);
        assert!(
            size(&ixs[..8]) <= 1232,
            "memo release: {} bytes",
            size(&ixs[..8])
        );
        assert!(
            size(&ixs) > 1232,
            "all in one would not fit: why escrow releases are two"
        );
        let first = [memo_ixs, std::slice::from_ref(escrow_ix)].concat();
        assert!(
            size(&first) <= 1232,
            "escrow release: {} bytes",
            size(&first)
        );
        assert!(size(mint_ixs) <= 1232, "mint: {} bytes", size(mint_ixs));
        // an x402 buy's release where the protocol fee applies carries
        // the treasury's share in the listing's (Token-2022) mint: beside
        // a fresh mint it would not fit, which is why such a buy's receipt
        // is a unit of the listing's mint
        let paid_in = crate::chain::token::TokenMint {
            address: Pubkey::new_unique(),
            program: spl_token_2022_interface::ID,
            decimals: 6,
        };
        let fee =
            crate::chain::token::transfer_to(&seller, &Pubkey::new_unique(), &paid_in, 50_000);
        let with_fee = [&ixs[..8], std::slice::from_ref(&fee)].concat();
        assert!(
            size(&with_fee) > 1232,
            "a fresh mint with the treasury's share: {} bytes",
            size(&with_fee)
        );
        // lamports parked at the mint address: top-up + allocate + assign
        // instead of create_account, and the release still fits
        let mut parked = setup(Parked(1));
        assert_eq!(parked.len(), 3);
        parked.extend_from_slice(&ixs[1..8]);
        assert!(
            size(&parked) <= 1232,
            "memo release around parked lamports: {} bytes",
            size(&parked)
        );
    }

    /// A Token-2022 release (mint + token account + memo + discovery)
    /// fits a packet: fresh, with lamports parked at one of its accounts,
    /// and when both were parked (then both are prepared in a transaction
    /// of their own first: all in one would not fit).
    #[test]
    fn token2022_releases_fit_in_a_packet_around_parked_lamports() {
        use crate::mint::token2022::{nft_instructions, NftAddresses};
        let (seller, buyer) = (Pubkey::new_unique(), Pubkey::new_unique());
        let item = "x".repeat(43);
        let spec = NftSpec {
            name: "brainctl bundle 0123456789ab".into(),
            symbol: crate::mint::bundle_mint::SYMBOL.into(),
            uri: format!("ar://{item}"),
        };
        let seed = seed_from(b"buy");
        let size = |ixs: &[solana_sdk::instruction::Instruction]| {
            let m = Message::new(ixs, Some(&seller));
            1 + 64 * m.header.num_required_signatures as usize + m.serialize().len()
        };
        let rents = [10, 10];
        let release = |states| {
            let at = NftAddresses::derive(&seller, &seed, &buyer, &spec).unwrap();
            let mut ixs = nft_instructions(&seller, &at, &buyer, &spec, rents, states).unwrap();
            let op = MemoOp::Release {
                listing_id: "20261123-0123456789ab".into(),
                envelope_arweave_id: item.clone(),
                minted_token_address: at.mint.to_string(),
            };
            ixs.push(memo(&op.to_string(), &seller));
            ixs.push(discovery(
                &crate::chain::instructions::default_registry(),
                DEFAULT_CU_LIMIT,
            ));
            (at, ixs)
        };
        let mut sizes = Vec::new();
        for states in [
            [Empty, Empty],
            [Parked(1), Empty],
            [Empty, Parked(1)],
            [Prepared(1), Prepared(1)],
        ] {
            let (_, ixs) = release(states);
            sizes.push(size(&ixs));
            assert!(size(&ixs) <= 1232, "{states:?}: {} bytes", size(&ixs));
        }
        // both parked: too big for one packet, so prepared apart first
        let both = [Parked(1), Parked(1)];
        let (at, ixs) = release(both);
        assert!(size(&ixs) > 1232, "{} bytes", size(&ixs));
        let prepare = at.setup(&seller, rents, both).concat();
        assert_eq!(prepare.len(), 6, "top-up, allocate, assign, twice");
        assert!(size(&prepare) <= 1232, "{} bytes", size(&prepare));
        let after = both.map(|s| s.after_setup(10));
        assert_eq!(after, [Prepared(10), Prepared(10)]);
        let (_, ixs) = release(after);
        assert!(size(&ixs) <= 1232, "{} bytes", size(&ixs));
        eprintln!(
            "token2022 release bytes (fresh, mint parked, account parked, prepared): {sizes:?}"
        );
    }

    /// A release with a unit of the listing's mint (`mint_to` + memo +
    /// discovery) or none is a fraction of a packet, and the listing's
    /// mint itself (created by its first release) fits one.
    #[test]
    fn listing_and_memo_only_releases_fit_with_room_to_spare() {
        let (seller, mint, buyer) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let size = |ixs: &[solana_sdk::instruction::Instruction]| {
            let m = Message::new(ixs, Some(&seller));
            1 + 64 * m.header.num_required_signatures as usize + m.serialize().len()
        };
        let release = |minted: Pubkey| {
            let op = MemoOp::Release {
                listing_id: "20261123-0123456789ab".into(),
                envelope_arweave_id: "x".repeat(43),
                minted_token_address: minted.to_string(),
            };
            vec![
                memo(&op.to_string(), &seller),
                discovery(
                    &crate::chain::instructions::default_registry(),
                    DEFAULT_CU_LIMIT,
                ),
            ]
        };
        let mut listing = vec![crate::mint::light::mint_to(
            &seller,
            &seller,
            &mint,
            &buyer,
            1,
            &crate::mint::light::LOCALNET_STATE_TREE,
            true,
        )];
        listing.extend(release(mint));
        // an x402 buy owing the treasury its share at release
        let paid_in = crate::chain::token::TokenMint {
            address: Pubkey::new_unique(),
            program: spl_token_2022_interface::ID,
            decimals: 6,
        };
        listing.push(crate::chain::token::transfer_to(
            &seller,
            &Pubkey::new_unique(),
            &paid_in,
            50_000,
        ));
        let none = release(NO_RECEIPT);
        assert!(
            size(&listing) <= 1_000,
            "listing receipt with the treasury's share: {} bytes",
            size(&listing)
        );
        assert!(size(&none) <= 400, "no receipt: {} bytes", size(&none));
        let spec = NftSpec {
            name: "brainctl bundle 0123456789ab".into(),
            symbol: crate::mint::bundle_mint::SYMBOL.into(),
            uri: format!("ar://{}", "x".repeat(43)),
        };
        let setup =
            account_setup::instructions(&seller, &mint, Derivation::Keypair, 10, 234, Parked(1));
        let mut create = setup;
        create.extend(
            crate::mint::token2022::metadata_mint_instructions(&seller, &mint, &spec).unwrap(),
        );
        create.push(crate::mint::light::create_token_pool(&seller, &mint, true));
        assert!(
            size(&create) <= 1232,
            "listing mint: {} bytes",
            size(&create)
        );
        eprintln!(
            "release bytes: listing receipt {}, none {}; listing mint {}",
            size(&listing),
            size(&none),
            size(&create)
        );
    }

    #[test]
    fn a_landed_release_is_a_candidate_by_its_memo_not_by_a_failed_copy() {
        let text = "brainctl-marketplace/v1:release:20261123-0123456789ab:env:mint";
        let entry = |sig: &str, memo: Option<String>, failed: bool| {
            serde_json::from_value::<crate::chain::SigInfo>(serde_json::json!({
                "signature": sig, "slot": 1, "err": if failed { serde_json::json!({"InstructionError": [0, {"Custom": 6011}]}) } else { serde_json::Value::Null },
                "memo": memo, "blockTime": null, "confirmationStatus": "confirmed"
            }))
            .unwrap()
        };
        let history = vec![
            entry(
                "retry-failed",
                Some(format!("[{}] {text}", text.len())),
                true,
            ),
            entry("other-memo", Some("[3] abc".into()), false),
            entry("deposit", None, false),
            entry("landed", Some(format!("[{}] {text}", text.len())), false),
        ];
        assert_eq!(release_candidates(&history, text), vec!["landed"]);
        assert!(release_candidates(&history[..3], text).is_empty());
    }

    #[test]
    fn release_mints_are_secret_derived_and_a_recorded_one_is_reused() {
        let seller = Wallet::generate();
        let sig = "5".repeat(88);
        let (light, seed) = release_mint(&seller, &sig, TokenStandard::LightCompressed).unwrap();
        let (t22, seed2) = release_mint(&seller, &sig, TokenStandard::Token2022).unwrap();
        assert_eq!(seed, seed2);
        assert_ne!(
            seed,
            legacy_release_seed(&sig),
            "not computable from public data"
        );
        // what anyone could compute from the seller's public key and the buy
        let public = mint_address(
            &seller.solana_keypair().pubkey(),
            &legacy_release_seed(&sig),
        )
        .unwrap();
        assert_ne!(t22, public);
        let row = |mint: Option<String>| crate::listen::BuyRow {
            signature: sig.clone(),
            listing_id: "20261123-0123456789ab".into(),
            slot: 1,
            state: crate::seller::BuyState::EnvelopeUploaded,
            buyer: None,
            buyer_x25519: None,
            envelope_id: None,
            mint_address: mint,
            release_sig: None,
            reason: None,
            attempts: 0,
            last_error: None,
            retry_at: 0,
            token_standard: None,
            fee_at_release: 0,
        };
        // restarted with the other standard: the recorded mint wins
        let (m, _, std) = mint_for_row(
            &seller,
            &row(Some(t22.to_string())),
            TokenStandard::LightCompressed,
        )
        .unwrap();
        assert_eq!((m, std), (t22, TokenStandard::Token2022));
        let (m, _, std) = mint_for_row(
            &seller,
            &row(Some(light.to_string())),
            TokenStandard::Token2022,
        )
        .unwrap();
        assert_eq!((m, std), (light, TokenStandard::LightCompressed));
        // a buy recorded before v2 seeds finishes with its legacy mint
        let (m, _, _) = mint_for_row(
            &seller,
            &row(Some(public.to_string())),
            TokenStandard::LightCompressed,
        )
        .unwrap();
        assert_eq!(m, public);
        let (m, _, std) = mint_for_row(&seller, &row(None), TokenStandard::Token2022).unwrap();
        assert_eq!((m, std), (t22, TokenStandard::Token2022));
        assert!(matches!(
            mint_for_row(
                &seller,
                &row(Some(Pubkey::new_unique().to_string())),
                TokenStandard::Token2022
            ),
            Err(ReleaseError::ForeignMint { .. })
        ));
    }
}
