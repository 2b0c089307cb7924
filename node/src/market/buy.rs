//! The buyer's side: read and verify the listing manifest, pay with one
//! transaction signed by the buyer alone, wait for the seller's release of
//! *this* buy, open the envelope, decrypt the blob, check the bundle hash
//! the seller signed in the listing, import into `imported:<listing id>`.

use crate::arweave::Source;
use crate::chain::instructions::registry_from_env;
use crate::chain::{Chain, ChainError, Pubkey, Signer};
use crate::import::{import_inner, import_inner_into_brain_db, ImportReport};
use crate::market::envelope::{open_envelope, Expected};
use crate::market::manifest::Listing;
use crate::market::tx::buy_instructions;
use crate::market::MemoOp;
use crate::store::Store;
use crate::wallet::Wallet;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Largest manifest or envelope we read.
const MAX_JSON_BYTES: usize = 256 * 1024;

/// Why a listing can't be bought as asked (nothing was sent): the
/// buyer's to fix, or to give up on.
#[derive(Debug, thiserror::Error)]
pub enum ListingRefusal {
    /// The manifest fetched is not JSON.
    #[error("manifest is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The manifest fails the listing rules (schema, signature).
    #[error("listing manifest refused: {0}")]
    Manifest(#[source] crate::market::manifest::ManifestRuleError),
    /// `--offer` on an escrow listing.
    #[error("escrow listings settle at the listed price only; buy it without --offer")]
    EscrowAtListedPriceOnly,
    /// The listing fixes no lamport price.
    #[error(
        "the listing has no price_lamports (made by an old client?); ask the seller to relist"
    )]
    Unpriced,
    /// The listing has expired, or will before a buy could land.
    #[error("listing {listing_id} has expired or expires within {BUY_MARGIN_SECS} s by the chain's clock")]
    Expired {
        /// The listing.
        listing_id: String,
    },
    /// The seller cancelled the listing.
    #[error("listing {listing_id} was cancelled by the seller at slot {slot}")]
    Cancelled {
        /// The listing.
        listing_id: String,
        /// The cancel's slot.
        slot: u64,
    },
    /// The listing's payment address is not a public key.
    #[error("bad payment address")]
    BadPaymentAddress,
    /// The listing's seller is not a public key.
    #[error("bad seller_pubkey")]
    BadSeller,
    /// The offer named is another wallet's or another listing's.
    #[error("that offer is not this wallet's offer on this listing")]
    NotYourOffer,
    /// The counter named is not a counter to the offer by its seller or buyer.
    #[error("that counter is not a counter to this offer by its seller or its buyer")]
    NotTheSellersCounter,
    /// The agreed terms fix no price in the listing's currency.
    #[error("the agreed terms fix no price in the listing's currency (lamports for SOL, `settlement.price_units` for a token)")]
    TermsUnpriced,
    /// The agreed terms have expired, or will before a buy could land.
    #[error(
        "the agreed terms have expired or expire within {BUY_MARGIN_SECS} s by the chain's clock"
    )]
    TermsExpired,
    /// No accept of the offer by the seller on chain.
    #[error("the seller has not accepted {offer_id} on chain")]
    NotAccepted {
        /// The offer.
        offer_id: String,
    },
    /// The listing's mint cannot settle, or is not what the listing says.
    #[error("the listing's settlement token: {0}")]
    Mint(#[from] crate::chain::token::MintRefusal),
    /// The listing's token program or decimals differ from its mint's.
    #[error("the listing says its mint {mint} has {field} {listed}, the chain says {onchain}: not bought (ask the seller to relist)")]
    MintMismatch {
        /// The mint.
        mint: String,
        /// `token_program` or `decimals`.
        field: &'static str,
        /// The manifest's value.
        listed: String,
        /// The chain's.
        onchain: String,
    },
    /// Offers on a listing priced in USD at settle time.
    #[error("a listing priced in USD at settle time is bought at its listed USD price; buy it without --offer")]
    UsdAtSettleListedOnly,
    /// The listing's price account cannot price a buy now.
    #[error("the listing is priced in USD at settle time and its price cannot be taken now: {0}")]
    UsdPrice(String),
    /// The agreed terms ask more than the listing does.
    #[error("the agreed terms ask {agreed} base units, above the listed {listed}; pay the listed price (buy without --offer)")]
    AboveListedPrice {
        /// The offer's or counter's price.
        agreed: u64,
        /// The listing's.
        listed: u64,
    },
}

/// Buy errors.
#[derive(Debug, thiserror::Error)]
pub enum BuyError {
    /// The listing can't be bought as asked.
    #[error(transparent)]
    Listing(#[from] ListingRefusal),
    /// Looking up the seller's memos (accept, cancel) failed.
    #[error(transparent)]
    Lookup(#[from] crate::market::negotiate::NegotiateError),
    /// The wallet's X25519 key does not decode.
    #[error("this wallet's X25519 key does not decode")]
    BadWalletKey,
    /// An escrow buy not answered in time: its deposit stands, kept with
    /// the checked blob among the pending escrows, and `marketplace watch`
    /// (or `fetch`) finishes it (imports, proves a lie, or refunds a
    /// missed window).
    #[error("no answer to escrow buy {0} yet; the deposit is held by the program and this buy is kept pending: `brainctl marketplace watch` finishes it (imports the release, proves a lie, or refunds a missed window)")]
    Pending(String),
    /// The seller never revealed in its window (or declined): refunded.
    #[error("the seller never revealed the key in its window (or declined): your deposit was refunded, with a share of the seller's stake when owed (tx {0})")]
    Refunded(String),
    /// Nothing left for this client to do on the escrow.
    #[error("{0}")]
    Closed(String),
    /// No release arrived in time (the payment stands; `marketplace fetch` resumes).
    #[error("no release for buy {0} within the timeout; the payment stands on chain; finish later with: brainctl marketplace fetch <LISTING> --buy-signature {0}")]
    Timeout(String),
    /// Chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Storage.
    #[error(transparent)]
    Storage(#[from] crate::arweave::StorageError),
    /// Decryption.
    #[error(transparent)]
    Seal(#[from] crate::seal::SealError),
    /// Import.
    #[error(transparent)]
    Import(#[from] crate::import::ImportError),
    /// Import into a brain.db (nothing written there).
    #[error(transparent)]
    BrainDb(Box<crate::import::BrainDbImportError>),
    /// The escrow program or its accounts refused the buy.
    #[error(transparent)]
    Escrow(#[from] crate::market::escrow_trade::EscrowReadError),
    /// The spend policy refused the buy (nothing sent), or its ledger failed.
    #[error(transparent)]
    Spend(#[from] crate::spend::SpendError),
}

impl From<crate::market::escrow_trade::EscrowPlanError> for BuyError {
    fn from(e: crate::market::escrow_trade::EscrowPlanError) -> Self {
        BuyError::Escrow(e.into())
    }
}

/// Reads and verifies a listing manifest by item id.
pub async fn fetch_listing(source: &Source, manifest_id: &str) -> Result<Listing, BuyError> {
    let bytes = source.fetch(manifest_id, MAX_JSON_BYTES).await?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(ListingRefusal::NotJson)?;
    Ok(Listing::from_value(v).map_err(ListingRefusal::Manifest)?)
}

/// What a buy costs, all in, before anything is sent: what `quote` shows
/// and what the spend policy is checked against.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Quote {
    /// The listing.
    pub listing_id: String,
    /// Its seller.
    pub seller: String,
    /// `direct` (a payment to the seller) or `escrow` (a program deposit).
    pub settles: &'static str,
    /// `listed`, or the accepted offer / counter id whose price binds.
    pub terms: String,
    /// The price the buyer pays in all: to the seller (less the protocol
    /// fee where due), or held by the escrow program.
    pub price_lamports: u64,
    /// Of the price, the protocol fee's share paid to the treasury (where
    /// fees apply; the seller gets the rest: the reference's split).
    pub protocol_fee_lamports: u64,
    /// Rent of the escrow account the deposit creates (kept by the program
    /// as the buy's receipt).
    pub escrow_rent_lamports: u64,
    /// The transaction fee (signatures).
    pub network_fee_lamports: u64,
    /// The most the buy's priority fee may add (compute-unit price ×
    /// limit: the cluster's recent fees, capped by `--priority-fee-cap`),
    /// not in `total_lamports`.
    pub priority_fee_max_lamports: u64,
    /// Everything the buyer's SOL balance loses (for a token buy: the
    /// network fee and the rent of any token account it creates).
    pub total_lamports: u64,
    /// A listing that settles in a token: what is paid in it (the
    /// `*_lamports` price fields are then 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<TokenQuote>,
    /// A listing priced in USD at settle time: the price it was converted
    /// at (source account, feed, price, confidence, age) and the tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<crate::market::usd_price::UsdQuoteNow>,
    /// An escrow buy: what its blob lets the program prove about what the
    /// manifest promises (checked before paying, refused where it falls
    /// short unless the buyer named `--allow-unproven-blob`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escrow_proof: Option<crate::market::escrow_trade::BlobProof>,
    /// An escrow buy: the windows and the slash share the program's
    /// settings guarantee (refused off a localnet when they do not
    /// protect a buyer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escrow_protection: Option<crate::market::escrow_trade::Protection>,
}

impl Quote {
    /// What the spend policy judges: the lamports (the priority fee at its
    /// most included: a budget holds whatever the cluster's fees do), and
    /// a token buy's units.
    pub fn spend(&self) -> crate::spend::Spend<'_> {
        crate::spend::Spend {
            listing_id: &self.listing_id,
            seller: &self.seller,
            lamports: self
                .total_lamports
                .saturating_add(self.priority_fee_max_lamports),
            token: self
                .token
                .as_ref()
                .map(|t| (t.mint.as_str(), t.price_units)),
            unproven: self.escrow_proof.is_some_and(|p| p.gap().is_some()),
        }
    }

    /// One line: what is paid, to whom, and what the SOL balance loses.
    pub fn summary(&self) -> String {
        let paid = match &self.token {
            Some(t) => format!(
                "price {} base units of {} (protocol fee {} of them, {} decimals); network fee and token-account rent {} lamports",
                t.price_units, t.mint, t.protocol_fee_units, t.decimals, self.total_lamports
            ),
            None => format!(
                "price {} + protocol fee {} + escrow rent {} + network fee {} = {} lamports",
                self.price_lamports,
                self.protocol_fee_lamports,
                self.escrow_rent_lamports,
                self.network_fee_lamports,
                self.total_lamports
            ),
        };
        let rate = match &self.usd {
            Some(u) => format!(
                "; at {} USD (±{}) per whole {}, a price {} s old",
                u.usd_per_whole,
                u.usd_conf,
                if self.token.is_some() { "token" } else { "SOL" },
                u.age_secs
            ),
            None => String::new(),
        };
        let proof = match &self.escrow_proof {
            Some(p) => format!(
                "; blob format {}: {}",
                p.blob_format,
                match p.gap() {
                    None => match p.proves_memory_count {
                        Some(true) => "a plaintext other than the bundle hash or the preview's memory count is fraud the program convicts",
                        _ => "a plaintext other than the bundle hash is fraud the program convicts",
                    },
                    Some(gap) => gap,
                }
            ),
            None => String::new(),
        };
        let protection = match &self.escrow_protection {
            Some(p) => format!(
                "; the seller answers within {} s, a lie is provable for {} s after the reveal, a missed reveal or a proven lie pays you {} lamports of the seller's stake",
                p.release_window_secs, p.dispute_window_secs, p.slash_share_lamports
            ),
            None => String::new(),
        };
        format!(
            "{} ({}, {}): {paid}{rate}; priority fee at most {} lamports{proof}{protection}",
            self.listing_id, self.settles, self.terms, self.priority_fee_max_lamports
        )
    }
}

/// What a token buy pays in the token.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenQuote {
    /// The mint.
    pub mint: String,
    /// Its decimals.
    pub decimals: u8,
    /// The price in base units, all in (the seller's share and the fee).
    pub price_units: u64,
    /// Of the price, the protocol fee's share paid to the treasury.
    pub protocol_fee_units: u64,
}

/// The terms a buy pays.
#[derive(Clone, Copy)]
pub enum Terms<'a> {
    /// The listed price (or a deposit of it, for an escrow listing).
    Listed,
    /// This buyer's offer the seller accepted, or the seller's counter to it.
    Negotiated {
        /// The buyer's offer.
        offer: &'a crate::market::manifest::Offer,
        /// The seller's counter, when that is what was accepted.
        counter: Option<&'a crate::market::manifest::Offer>,
    },
}

/// A checked buy, ready to send: its quote and its instructions.
pub struct BuyPlan {
    /// What it costs.
    pub quote: Quote,
    instructions: Vec<solana_sdk::instruction::Instruction>,
    /// An escrow buy's blob, checked against the committed root before
    /// paying: what the buyer keeps with its pending escrow
    /// ([`crate::market::pending`]) to open and prove against later.
    pub checked_blob: Option<Vec<u8>>,
}

/// The spend policy a buy runs under, and the ledger recording it.
pub struct SpendGuard<'a> {
    /// The policy (file, tightened by the caller's flags).
    pub policy: &'a crate::spend::SpendPolicy,
    /// The wallet's ledger.
    pub ledger: &'a mut crate::spend::SpendLedger,
}

pub use crate::chain::fees::LAMPORTS_PER_SIGNATURE;

/// Seconds a listing or agreed terms must still have by the chain's clock
/// for a buy: `listen` judges expiry by the buy's block time, so a buy
/// sent in the last seconds could land late and be refused, its money gone.
pub const BUY_MARGIN_SECS: i64 = 30;

/// Checks a buy of `listing` on `terms` and prices it, sending nothing:
/// the listing must be live by the chain's clock with [`BUY_MARGIN_SECS`]
/// to spare, and not cancelled (looked up at `confirmed`, whatever the
/// handle's commitment: a cancel the seller sent is seen at once), an escrow
/// listing's on-chain account must match its manifest, negotiated terms
/// must be this buyer's and accepted on chain.
/// An escrow listing whose blob cannot prove what its manifest promises
/// is refused ([`crate::market::escrow_trade::Unproven::Refuse`]).
pub async fn plan_buy(
    chain: &Chain,
    source: &Source,
    buyer: &Wallet,
    listing: &Listing,
    terms: Terms<'_>,
) -> Result<BuyPlan, BuyError> {
    plan_buy_with(chain, source, buyer, listing, terms, Default::default()).await
}

/// [`plan_buy`], an escrow blob that cannot prove what its manifest
/// promises paid for only when `unproven` allows it (a person's
/// `--allow-unproven-blob`).
pub async fn plan_buy_with(
    chain: &Chain,
    source: &Source,
    buyer: &Wallet,
    listing: &Listing,
    terms: Terms<'_>,
    unproven: crate::market::escrow_trade::Unproven,
) -> Result<BuyPlan, BuyError> {
    let mut plan = plan_priced(chain, source, buyer, listing, terms, unproven).await?;
    plan.quote.priority_fee_max_lamports = chain.priority().max_lamports;
    Ok(plan)
}

/// [`plan_buy_with`] before the priority fee's cap is named.
async fn plan_priced(
    chain: &Chain,
    source: &Source,
    buyer: &Wallet,
    listing: &Listing,
    terms: Terms<'_>,
    unproven: crate::market::escrow_trade::Unproven,
) -> Result<BuyPlan, BuyError> {
    // the latest the buy could land, by the chain's clock
    let now = chain.cluster_time().await? + BUY_MARGIN_SECS;
    if listing.escrow_program.is_some() {
        if let Terms::Negotiated { .. } = terms {
            return Err(ListingRefusal::EscrowAtListedPriceOnly.into());
        }
        return plan_escrow(chain, source, buyer, listing, now, unproven).await;
    }
    // a listing priced in USD at settle time: its price account now (the
    // buy's own quote_usd, at its slot, is what `listen` checks)
    let usd = listing
        .usd_at_settle
        .as_ref()
        .map(|u| u.terms(listing.price_usd));
    let (price, terms_name, usd_now) = match (terms, &usd) {
        (Terms::Negotiated { .. }, Some(_)) => {
            return Err(ListingRefusal::UsdAtSettleListedOnly.into())
        }
        (Terms::Listed, Some(usd)) => {
            let q = crate::market::usd_price::quote_now(chain, usd, &listing.currency())
                .await
                .map_err(|e| match e {
                    crate::market::usd_price::UsdPriceError::Chain(c) => BuyError::Chain(c),
                    other => ListingRefusal::UsdPrice(other.to_string()).into(),
                })?;
            (q.units, "usd_at_settle".to_string(), Some(q))
        }
        (Terms::Listed, None) => (
            listing.price_units().ok_or(ListingRefusal::Unpriced)?,
            "listed".to_string(),
            None,
        ),
        (Terms::Negotiated { offer, counter }, None) => {
            let (price, name) =
                negotiated_price(chain, buyer, listing, offer, counter, now).await?;
            (price, name, None)
        }
    };
    if now >= listing.expires_at {
        return Err(ListingRefusal::Expired {
            listing_id: listing.listing_id.clone(),
        }
        .into());
    }
    let pay_to = Pubkey::from_str(&listing.payment_address)
        .map_err(|_| ListingRefusal::BadPaymentAddress)?;
    let confirmed = chain.at_commitment(solana_commitment_config::CommitmentConfig::confirmed());
    if let Some(slot) = find_cancel(&confirmed, &pay_to, listing).await? {
        return Err(ListingRefusal::Cancelled {
            listing_id: listing.listing_id.clone(),
            slot,
        }
        .into());
    }
    let kp = buyer.solana_keypair();
    let policy = crate::chain::FeePolicy::from_env(chain.cluster_kind().await?)?;
    let (_, fee) = policy.split(price);
    let fee_to = (fee > 0).then_some((&policy.treasury, fee));
    // the program converts at the buy's slot, in its logs; a price that
    // moved past the tolerance fails the whole buy
    let quote_usd = |usd: &crate::settle::UsdTerms| {
        crate::market::usd_price::quote_instruction(usd, price)
            .map_err(|e| ListingRefusal::UsdPrice(e.to_string()))
    };
    let Some(token) = listing.token() else {
        let mut instructions = buy_instructions(
            &kp.pubkey(),
            &pay_to,
            price,
            &listing.listing_id,
            &buyer.x25519_address(),
            &registry_from_env()?,
            fee_to,
        );
        if let Some(usd) = &usd {
            instructions.insert(0, quote_usd(usd)?);
        }
        let mut q = quote(listing, "direct", terms_name, price, fee, 0);
        q.usd = usd_now;
        return Ok(BuyPlan {
            quote: q,
            instructions,
            checked_blob: None,
        });
    };
    let mint = listing_mint(chain, &token).await?;
    let mut instructions = crate::market::tx::token_buy_instructions(
        &kp.pubkey(),
        &pay_to,
        &mint,
        price,
        &listing.listing_id,
        &buyer.x25519_address(),
        &registry_from_env()?,
        fee_to,
    );
    if let Some(usd) = &usd {
        instructions.insert(0, quote_usd(usd)?);
    }
    // what the SOL balance loses: the fee, and rent where the payee's
    // token account is created (refused here when the buyer lacks the tokens)
    let lamports = chain.simulated_cost(&instructions, &kp).await?;
    let mut q = quote(listing, "direct", terms_name, 0, 0, 0);
    q.total_lamports = lamports.max(LAMPORTS_PER_SIGNATURE);
    q.token = Some(TokenQuote {
        mint: mint.address.to_string(),
        decimals: mint.decimals,
        price_units: price,
        protocol_fee_units: fee,
    });
    q.usd = usd_now;
    Ok(BuyPlan {
        quote: q,
        instructions,
        checked_blob: None,
    })
}

/// The listing's mint as the chain has it: one that settles
/// ([`crate::chain::token::read_mint`]) with the program and decimals the
/// listing states.
pub async fn listing_mint(
    chain: &Chain,
    settlement: &crate::market::manifest::TokenTerms,
) -> Result<crate::chain::token::TokenMint, BuyError> {
    let address = Pubkey::new_from_array(settlement.mint);
    let mint = crate::chain::token::read_mint(chain, &address)
        .await
        .map_err(|e| match e {
            crate::chain::token::MintRefusal::Chain(c) => BuyError::Chain(c),
            refusal => ListingRefusal::Mint(refusal).into(),
        })?;
    if let Some((field, listed, onchain)) = settlement.differs_from(&mint) {
        return Err(ListingRefusal::MintMismatch {
            mint: address.to_string(),
            field,
            listed,
            onchain,
        }
        .into());
    }
    Ok(mint)
}

fn quote(
    listing: &Listing,
    settles: &'static str,
    terms: String,
    price: u64,
    fee: u64,
    rent: u64,
) -> Quote {
    Quote {
        listing_id: listing.listing_id.clone(),
        seller: listing.seller_pubkey.clone(),
        settles,
        terms,
        price_lamports: price,
        protocol_fee_lamports: fee,
        escrow_rent_lamports: rent,
        network_fee_lamports: LAMPORTS_PER_SIGNATURE,
        priority_fee_max_lamports: 0,
        // the fee is the treasury's share of the price, not on top of it
        total_lamports: price
            .saturating_add(rent)
            .saturating_add(LAMPORTS_PER_SIGNATURE),
        token: None,
        usd: None,
        escrow_proof: None,
        escrow_protection: None,
    }
}

/// The agreed price: `offer` must be this buyer's offer on `listing`,
/// `counter` (if any) the seller's counter to it, unexpired, and the
/// seller must have posted `accept` for the offer on chain.
async fn negotiated_price(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
    offer: &crate::market::manifest::Offer,
    counter: Option<&crate::market::manifest::Offer>,
    now: i64,
) -> Result<(u64, String), BuyError> {
    if offer.from_pubkey != buyer.address()
        || offer.listing_id.as_deref() != Some(listing.listing_id.as_str())
    {
        return Err(ListingRefusal::NotYourOffer.into());
    }
    let (terms, name) = match counter {
        Some(c)
            if c.offer_id != offer.offer_id
                || (c.from_pubkey != listing.seller_pubkey
                    && c.from_pubkey != offer.from_pubkey) =>
        {
            return Err(ListingRefusal::NotTheSellersCounter.into())
        }
        Some(c) => (c, format!("counter:{}", c.offer_id)),
        None => (offer, format!("offer:{}", offer.offer_id)),
    };
    let price = terms
        .price_in(&listing.currency())
        .ok_or(ListingRefusal::TermsUnpriced)?;
    if now >= terms.expires_at {
        return Err(ListingRefusal::TermsExpired.into());
    }
    // a negotiation never costs more than the listing itself
    if let Some(listed) = listing.price_units().filter(|l| price > *l) {
        return Err(ListingRefusal::AboveListedPrice {
            agreed: price,
            listed,
        }
        .into());
    }
    let accepted = crate::market::negotiate::find_accept(chain, listing, &offer.offer_id).await?;
    if accepted.is_none() {
        return Err(ListingRefusal::NotAccepted {
            offer_id: offer.offer_id.clone(),
        }
        .into());
    }
    Ok((price, name))
}

/// A deposit of the listed price into the sealed escrow: the listing
/// account on chain must match the signed manifest (every committed
/// field) and take deposits, and the blob on Arweave must be the committed
/// ciphertext; the deposit binds those terms and this buyer's blinding
/// point B. The seller is paid only by revealing the key to this buyer.
/// A blob that cannot prove what the manifest promises is refused unless
/// `unproven` allows it.
async fn plan_escrow(
    chain: &Chain,
    source: &Source,
    buyer: &Wallet,
    listing: &Listing,
    now: i64,
    unproven: crate::market::escrow_trade::Unproven,
) -> Result<BuyPlan, BuyError> {
    use crate::market::escrow_trade::{
        blind_point_for, check_blob_before_paying, checked_listing, BlobPromise,
    };
    let kp = buyer.solana_keypair();
    let (account, onchain, settings) = checked_listing(chain, listing, now).await?;
    let protection = crate::market::escrow_trade::Protection::of(&settings);
    let blob = source
        .fetch(blob_item(listing), crate::seal::MAX_BLOB_BYTES)
        .await?;
    let proof =
        check_blob_before_paying(&onchain.terms, &BlobPromise::of(listing), &blob, unproven)
            .map_err(crate::market::escrow_trade::EscrowReadError::from)?;
    let blind = blind_point_for(&buyer.x25519_secret(), &onchain, &account, &kp.pubkey())
        .map_err(crate::market::escrow_trade::EscrowReadError::from)?;
    let crate::market::escrow_trade::DepositPlan {
        instructions,
        token,
    } = crate::market::escrow_trade::deposit_plan(
        chain,
        &kp.pubkey(),
        &buyer.x25519_public(),
        &blind,
        listing,
        &registry_from_env()?,
        now,
    )
    .await?;
    let simulated = chain.simulated_cost(&instructions, &kp).await?;
    let price = onchain.terms.price_lamports;
    if let Some(mint) = token {
        // in a token: the program moves exactly the price into the vault;
        // the SOL balance pays the escrow's and the vault's rent (back to
        // the buyer when it closes them) and the fee
        let mut q = quote(listing, "escrow", "listed".into(), 0, 0, 0);
        q.total_lamports = simulated.max(LAMPORTS_PER_SIGNATURE);
        q.escrow_rent_lamports = q.total_lamports - LAMPORTS_PER_SIGNATURE;
        q.token = Some(TokenQuote {
            mint: mint.address.to_string(),
            decimals: mint.decimals,
            price_units: price,
            protocol_fee_units: 0,
        });
        q.escrow_proof = Some(proof);
        q.escrow_protection = Some(protection);
        return Ok(BuyPlan {
            quote: q,
            instructions,
            checked_blob: Some(blob),
        });
    }
    let rent = chain
        .rent_exemption(crate::escrow::ESCROW_ACCOUNT_SPACE)
        .await?;
    let mut quote = quote(listing, "escrow", "listed".into(), price, 0, rent);
    quote.escrow_proof = Some(proof);
    quote.escrow_protection = Some(protection);
    // the spend ledger reserves the quote: the program must take no more
    if simulated > quote.total_lamports {
        return Err(crate::market::escrow_trade::EscrowReadError::from(
            crate::market::escrow_trade::EscrowPlanError::CostsMore {
                quoted: quote.total_lamports,
                simulated,
            },
        )
        .into());
    }
    Ok(BuyPlan {
        quote,
        instructions,
        checked_blob: Some(blob),
    })
}

/// The Arweave item of a listing's blob.
pub fn blob_item(listing: &Listing) -> &str {
    listing.encrypted_bundle_uri.trim_start_matches("ar://")
}

/// Sends a planned buy; returns its signature. Under a [`SpendGuard`] the
/// full quoted cost is reserved first (refused with the policy's reason,
/// nothing sent, when over a limit) and the outcome recorded: paid, failed
/// (the network fee counted), or freed when the transaction provably never
/// landed. An unknown outcome stays reserved.
pub async fn execute(
    chain: &Chain,
    buyer: &Wallet,
    plan: &BuyPlan,
    guard: Option<SpendGuard<'_>>,
) -> Result<String, BuyError> {
    execute_recorded(chain, buyer, plan, guard, None).await
}

/// [`execute`], each signed transaction handed to `record` before it is
/// sent (its signature and last valid block height: an escrow buy is kept
/// pending from then on, so a crash or a lost confirmation after it lands
/// never leaves an untracked deposit).
pub async fn execute_recorded(
    chain: &Chain,
    buyer: &Wallet,
    plan: &BuyPlan,
    guard: Option<SpendGuard<'_>>,
    record: Option<crate::chain::RecordSend<'_>>,
) -> Result<String, BuyError> {
    use crate::spend::Outcome;
    let kp = buyer.solana_keypair();
    let send = || async {
        let sent = match record {
            Some(record) => {
                chain
                    .send_recorded(&plan.instructions, &[&kp], record)
                    .await
            }
            None => chain.send(&plan.instructions, &[&kp]).await,
        };
        if sent.is_ok() {
            crate::fault::maybe_abort("buy_landed");
        }
        sent
    };
    let Some(SpendGuard { policy, ledger }) = guard else {
        return Ok(send().await?.signature.to_string());
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let q = &plan.quote;
    let id = ledger.reserve(policy, &q.spend(), now)?;
    match send().await {
        Ok(sent) => {
            let signature = sent.signature.to_string();
            // what it cost: the quote's, with the fee it paid (priority
            // included) in place of the network fee; unread, the
            // reservation (the priority fee at its most) stands
            let fee = chain.fee_paid(&sent.signature).await;
            let lamports = fee.map(|f| {
                q.total_lamports
                    .saturating_sub(q.network_fee_lamports)
                    .saturating_add(f)
            });
            ledger.settle(
                id,
                &Outcome::Paid {
                    signature: signature.clone(),
                    lamports,
                },
            )?;
            Ok(signature)
        }
        Err(e) => {
            let outcome = match &e {
                ChainError::TxFailed { signature, .. } => Some(Outcome::Failed {
                    signature: signature.clone(),
                    fee_lamports: q.network_fee_lamports,
                }),
                ChainError::Expired => Some(Outcome::NeverLanded {
                    reason: "blockhash expired without landing".into(),
                }),
                e if e.is_preflight_refusal() => Some(Outcome::NeverLanded {
                    reason: "refused in preflight".into(),
                }),
                _ => None,
            };
            if let Some(o) = outcome {
                ledger.settle(id, &o)?;
            }
            Err(e.into())
        }
    }
}

fn buyer_pubkey(buyer: &Wallet) -> Pubkey {
    buyer.solana_keypair().pubkey()
}

/// The escrow program's account of `listing` (seller, listing id).
fn escrow_listing_account(listing: &Listing) -> Result<Pubkey, BuyError> {
    let seller = Pubkey::from_str(&listing.seller_pubkey).map_err(|_| ListingRefusal::BadSeller)?;
    Ok(crate::escrow::listing_address(&seller, &listing.listing_id))
}

/// The buyer's `refund_sealed`: a declined deposit in full, one never
/// revealed inside the window in full with the stake share, or a claimed
/// escrow's rent.
pub async fn refund_escrow(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
) -> Result<String, BuyError> {
    use crate::market::escrow_trade::{read_account, read_settings, refund_instructions};
    let account = escrow_listing_account(listing)?;
    let kp = buyer.solana_keypair();
    let settings = read_settings(chain).await?;
    let at = crate::escrow::escrow_address(&account, &kp.pubkey());
    let state = read_account(chain, &at, crate::escrow::EscrowAccount::decode).await?;
    let listing_state =
        read_account(chain, &account, crate::escrow::ListingAccount::decode).await?;
    let token = match &listing_state {
        Some(l) => crate::market::escrow_trade::exit_mint(chain, &account, l, &kp.pubkey()).await?,
        None => None,
    };
    let now = chain.cluster_time().await?;
    let ixs = refund_instructions(
        &kp.pubkey(),
        &account,
        &listing.listing_id,
        state.as_ref(),
        listing_state.map(|l| l.status),
        &settings,
        now,
        token.as_ref(),
    )?;
    Ok(chain.send(&ixs, &[&kp]).await?.signature.to_string())
}

/// The listing's scalar k, opened from the seller's reveal on this buyer's
/// escrow (`None` while nothing is revealed).
async fn revealed_key(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
) -> Result<Option<zeroize::Zeroizing<[u8; 32]>>, BuyError> {
    use crate::market::escrow_trade::{buyer_blinding, read_account, EscrowReadError};
    let account = escrow_listing_account(listing)?;
    let me = buyer_pubkey(buyer);
    let at = crate::escrow::escrow_address(&account, &me);
    let Some(e) = read_account(chain, &at, crate::escrow::EscrowAccount::decode).await? else {
        return Ok(None);
    };
    if !matches!(
        e.status,
        crate::escrow::EscrowStatus::Revealed | crate::escrow::EscrowStatus::Claimed
    ) {
        return Ok(None);
    }
    let terms =
        crate::market::escrow_trade::manifest_terms(listing).map_err(EscrowReadError::from)?;
    let b = buyer_blinding(&buyer.x25519_secret(), &terms.seller_x25519, &account, &me)
        .map_err(EscrowReadError::from)?;
    let k = escrow_math::client::open(&e.revealed, &b, &terms.key_point).map_err(|e| {
        EscrowReadError::from(crate::market::escrow_trade::EscrowPlanError::from(e))
    })?;
    Ok(Some(k))
}

/// `marketplace dispute`: proves, inside the dispute window, that the key
/// the seller revealed does not open the committed blob to the committed
/// bundle; the program refunds the deposit and pays the stake share.
pub async fn dispute_escrow(
    chain: &Chain,
    source: &Source,
    buyer: &Wallet,
    listing: &Listing,
) -> Result<String, BuyError> {
    use crate::market::escrow_trade::{EscrowPlanError, EscrowReadError};
    let k = revealed_key(chain, buyer, listing).await?.ok_or_else(|| {
        EscrowReadError::from(EscrowPlanError::NotDisputable(
            "no key was revealed for this wallet's escrow".into(),
        ))
    })?;
    let blob = fetch_committed_blob(source, listing).await?;
    Ok(send_dispute(chain, buyer, listing, &blob, &k)
        .await?
        .signature)
}

/// The listing's blob, checked against its committed length and root on
/// every fetch (a gateway serving other bytes is caught before they are
/// opened or proven against).
pub async fn fetch_committed_blob(source: &Source, listing: &Listing) -> Result<Vec<u8>, BuyError> {
    use crate::market::escrow_trade::{check_blob, manifest_terms, BlobPromise, EscrowReadError};
    let blob = source
        .fetch(blob_item(listing), crate::seal::MAX_BLOB_BYTES)
        .await?;
    let terms = manifest_terms(listing).map_err(EscrowReadError::from)?;
    check_blob(&terms, &BlobPromise::of(listing), &blob).map_err(EscrowReadError::from)?;
    Ok(blob)
}

/// Sends the fraud proof of the first chunk of `blob` that `k` does not
/// open, for this wallet's revealed escrow inside its dispute window (k
/// goes on chain only then); returns the dispute's signature.
async fn send_dispute(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
    blob: &[u8],
    k: &[u8; 32],
) -> Result<Disputed, BuyError> {
    use crate::market::escrow_trade::{
        fraud_proof, read_account, read_settings, EscrowPlanError, EscrowReadError,
    };
    let at = crate::escrow::escrow_address(&escrow_listing_account(listing)?, &buyer_pubkey(buyer));
    let e = read_account(chain, &at, crate::escrow::EscrowAccount::decode)
        .await?
        .ok_or_else(|| {
            EscrowReadError::from(EscrowPlanError::NoEscrow(listing.listing_id.clone()))
        })?;
    let refuse = |why: String| EscrowReadError::from(EscrowPlanError::NotDisputable(why));
    if e.status != crate::escrow::EscrowStatus::Revealed {
        return Err(refuse(format!("it is {:?}, not revealed", e.status)).into());
    }
    let closes = read_settings(chain).await?.dispute_closes(e.revealed_at);
    if chain.cluster_time().await? >= closes {
        return Err(refuse(format!("the dispute window closed at unix time {closes}")).into());
    }
    let bundle_hash = crate::market::escrow_trade::manifest_terms(listing)
        .map_err(EscrowReadError::from)?
        .bundle_hash;
    let proof = fraud_proof(blob, k, &bundle_hash).map_err(EscrowReadError::from)?;
    let account = escrow_listing_account(listing)?;
    let kp = buyer.solana_keypair();
    let onchain = read_account(chain, &account, crate::escrow::ListingAccount::decode)
        .await?
        .ok_or_else(|| {
            EscrowReadError::from(EscrowPlanError::NoListingAccount(
                listing.listing_id.clone(),
            ))
        })?;
    let in_token = onchain.mint.is_some();
    let ix =
        crate::market::escrow_trade::dispute_instruction(&kp.pubkey(), &account, &proof, in_token);
    tracing::info!(
        kind = proof.kind(),
        index = proof.index(),
        "sending the fraud proof"
    );
    let signature = chain.send(&[ix], &[&kp]).await?.signature.to_string();
    if !in_token {
        return Ok(Disputed {
            signature,
            withdrawn: true,
        });
    }
    // a token conviction moves no token: the deposit and the share are
    // withdrawn now, or (a frozen vault, a lost send) by the next look
    let withdrawn = match refund_escrow(chain, buyer, listing).await {
        Ok(refund) => {
            tracing::info!(%refund, "the convicted escrow's deposit withdrawn");
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "the fraud proof landed; withdrawing the deposit: tried again later");
            false
        }
    };
    Ok(Disputed {
        signature,
        withdrawn,
    })
}

/// A fraud proof that landed ([`send_dispute`]).
struct Disputed {
    /// The dispute's signature.
    signature: String,
    /// Whether the deposit is back with the buyer (a token escrow's is
    /// withdrawn after the conviction, and may wait for a frozen vault).
    withdrawn: bool,
}

/// Where a sealed buy stands after one look at its escrow ([`advance_sealed`]).
#[derive(Debug)]
pub enum SealedStep {
    /// Deposited, inside the seller's window: nothing to do yet.
    Waiting,
    /// Revealed: opened with the kept blob and imported.
    Imported(Imported),
    /// The revealed key opens another plaintext than committed: the fraud
    /// proof landed (deposit, rent and the stake share back, or for a
    /// token escrow whose withdrawal has not landed yet, held for this
    /// buyer in the expired escrow: the next look refunds it).
    Disputed {
        /// The lying chunk.
        index: u32,
        /// The dispute.
        signature: String,
        /// Whether the deposit is back with the buyer.
        withdrawn: bool,
    },
    /// Never revealed in the window (or declined, or expired): refunded
    /// (with the stake share when owed).
    Refunded {
        /// The refund.
        signature: String,
    },
    /// Nothing left for this client: the escrow is gone (closed by hand),
    /// or a lie was found after its dispute window.
    Closed(String),
}

/// One look at this wallet's sealed escrow of `listing`, acting on what it
/// finds, with `blob` (checked against the committed root here, again):
/// a reveal is opened and imported, or, when it lies, proven on chain at
/// once inside the dispute window (the buyer never has to notice and
/// dispute by hand); a deposit left past its window, declined or expired
/// is refunded. What `buy`, `fetch` and `marketplace watch` run.
pub async fn advance_sealed(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
    blob: &[u8],
    target: ImportTarget<'_>,
) -> Result<SealedStep, BuyError> {
    use crate::escrow::EscrowStatus;
    use crate::market::escrow_trade::{
        check_blob, manifest_terms, read_account, read_settings, BlobPromise, EscrowPlanError,
        EscrowReadError,
    };
    let account = escrow_listing_account(listing)?;
    let at = crate::escrow::escrow_address(&account, &buyer_pubkey(buyer));
    let Some(e) = read_account(chain, &at, crate::escrow::EscrowAccount::decode).await? else {
        return Ok(SealedStep::Closed(format!("escrow {at} is closed")));
    };
    match e.status {
        EscrowStatus::Deposited => {
            let deadline = read_settings(chain).await?.answer_deadline(e.deposited_at);
            if chain.cluster_time().await? < deadline {
                return Ok(SealedStep::Waiting);
            }
        }
        EscrowStatus::Declined | EscrowStatus::Expired => {}
        EscrowStatus::Revealed | EscrowStatus::Claimed => {
            let k = revealed_key(chain, buyer, listing).await?.ok_or_else(|| {
                EscrowReadError::from(EscrowPlanError::NoEscrow(listing.listing_id.clone()))
            })?;
            let terms = manifest_terms(listing).map_err(EscrowReadError::from)?;
            check_blob(&terms, &BlobPromise::of(listing), blob).map_err(EscrowReadError::from)?;
            let parsed = escrow_math::blob::Blob::parse(blob)
                .map_err(|e| EscrowReadError::from(EscrowPlanError::from(e)))?;
            return match parsed.open(&k, &terms.bundle_hash) {
                Ok(inner) => {
                    let inner = zeroize::Zeroizing::new(inner);
                    Ok(SealedStep::Imported(import_opened(&inner, listing, target)?))
                }
                Err(
                    escrow_math::blob::BlobError::Misdelivery { index }
                    | escrow_math::blob::BlobError::BrokenLink { index },
                ) if e.status == EscrowStatus::Revealed => {
                    let closes = read_settings(chain).await?.dispute_closes(e.revealed_at);
                    if chain.cluster_time().await? >= closes {
                        // too late to prove it; but a listing another buyer
                        // convicted refunds this deposit with its share
                        // whatever the window says
                        let convicted =
                            read_account(chain, &account, crate::escrow::ListingAccount::decode)
                                .await?
                                .is_some_and(|l| {
                                    l.status == crate::escrow::ListingStatus::Convicted
                                });
                        if convicted {
                            tracing::warn!(listing = %listing.listing_id, index, "the listing was convicted of fraud: refunding this escrow with its share");
                            let signature = refund_escrow(chain, buyer, listing).await?;
                            return Ok(SealedStep::Refunded { signature });
                        }
                        return Ok(SealedStep::Closed(format!(
                            "chunk {index} of the blob does not open, found after the dispute window: the seller is paid"
                        )));
                    }
                    tracing::warn!(listing = %listing.listing_id, index, "the revealed key does not open the committed blob: proving it on chain");
                    match send_dispute(chain, buyer, listing, blob, &k).await {
                        Ok(d) => Ok(SealedStep::Disputed {
                            index,
                            signature: d.signature,
                            withdrawn: d.withdrawn,
                        }),
                        Err(e) => {
                            tracing::warn!(error = %e, "the fraud proof was not sent");
                            Err(EscrowReadError::from(EscrowPlanError::Misdelivery { index }).into())
                        }
                    }
                }
                Err(
                    escrow_math::blob::BlobError::Misdelivery { index }
                    | escrow_math::blob::BlobError::BrokenLink { index },
                ) => Ok(SealedStep::Closed(format!(
                    "chunk {index} of the blob does not open, found after the dispute window: the seller was paid"
                ))),
                Err(other) => Err(EscrowReadError::from(EscrowPlanError::from(other)).into()),
            };
        }
    }
    let signature = refund_escrow(chain, buyer, listing).await?;
    Ok(SealedStep::Refunded { signature })
}

/// What a look at an imported buy's escrow did ([`close_imported`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClosingStep {
    /// Revealed, its dispute window still open: the seller is not paid yet.
    Waiting,
    /// Closed to this buyer (the escrow's rent back, and where the listing
    /// was convicted since, the deposit and share too): the refund.
    Closed {
        /// The `refund_sealed`.
        signature: String,
    },
    /// Nothing left to close.
    Gone,
}

/// One look at this wallet's escrow of `listing` after its delivery was
/// imported: once the dispute window passed, the payment is claimed for
/// the seller if it has not been (anyone may; a lamport escrow, or a
/// token one whose seller's account exists) and the escrow closed, its
/// rent back to the buyer, so no rent is left behind and the buyer may
/// deposit on the listing again.
pub async fn close_imported(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
) -> Result<ClosingStep, BuyError> {
    use crate::escrow::{EscrowStatus, ListingStatus};
    use crate::market::escrow_trade::{
        claim_instructions, read_account, read_settings, vault_mint, EscrowPlanError,
        EscrowReadError,
    };
    let account = escrow_listing_account(listing)?;
    let me = buyer_pubkey(buyer);
    let at = crate::escrow::escrow_address(&account, &me);
    let Some(e) = read_account(chain, &at, crate::escrow::EscrowAccount::decode).await? else {
        return Ok(ClosingStep::Gone);
    };
    if e.status == EscrowStatus::Revealed {
        let onchain = read_account(chain, &account, crate::escrow::ListingAccount::decode)
            .await?
            .ok_or_else(|| {
                EscrowReadError::from(EscrowPlanError::NoListingAccount(
                    listing.listing_id.clone(),
                ))
            })?;
        if onchain.status != ListingStatus::Convicted {
            let settings = read_settings(chain).await?;
            if chain.cluster_time().await? < settings.dispute_closes(e.revealed_at) {
                return Ok(ClosingStep::Waiting);
            }
            let token = vault_mint(chain, &onchain).await?;
            if let Some(mint) = &token {
                // never pays the seller's token account's rent
                if !crate::chain::token::has_associated(chain, &onchain.seller, mint).await? {
                    return Ok(ClosingStep::Waiting);
                }
            }
            let ixs = claim_instructions(
                &me,
                &account,
                &me,
                &onchain.seller,
                &settings.treasury,
                token.as_ref(),
            );
            let kp = buyer.solana_keypair();
            // the claim only pays the seller what the delivery earned; the
            // seller's own `listen` may claim first (then this fails and
            // the escrow is `Claimed` below)
            if let Err(err) = chain.send(&ixs[ixs.len() - 1..], &[&kp]).await {
                tracing::info!(escrow = %at, error = %err, "claim not sent by the buyer; the escrow is read again");
            }
            let after = read_account(chain, &at, crate::escrow::EscrowAccount::decode).await?;
            if !after.is_some_and(|e| e.status == EscrowStatus::Claimed) {
                return Ok(ClosingStep::Waiting);
            }
        }
    }
    let signature = refund_escrow(chain, buyer, listing).await?;
    Ok(ClosingStep::Closed { signature })
}

/// Waits for the seller's answer on this buyer's sealed escrow and acts on
/// it ([`advance_sealed`]), with `kept` (the blob checked before paying)
/// or else the blob fetched now and checked against its committed root.
/// A proven lie, a refund or a closed escrow ends the buy with that error
/// (the first two with their signatures).
#[allow(clippy::too_many_arguments)]
async fn fetch_and_import_sealed(
    chain: &Chain,
    buyer: &Wallet,
    source: &Source,
    listing: &Listing,
    buy_signature: &str,
    mut target: ImportTarget<'_>,
    kept_blob: Option<&[u8]>,
    timeout: Duration,
    mut on_wait: impl FnMut(Duration),
) -> Result<Imported, BuyError> {
    use crate::market::escrow_trade::{EscrowPlanError, EscrowReadError};
    let start = Instant::now();
    let mut blob: Option<Vec<u8>> = kept_blob.map(<[u8]>::to_vec);
    loop {
        // the blob is fetched once something is revealed (a deposit still
        // waiting needs none)
        let revealed = revealed_key(chain, buyer, listing).await?.is_some();
        if revealed && blob.is_none() {
            blob = Some(fetch_committed_blob(source, listing).await?);
        }
        let step = advance_sealed(
            chain,
            buyer,
            listing,
            blob.as_deref().unwrap_or_default(),
            target.reborrow(),
        )
        .await?;
        match step {
            SealedStep::Waiting => {}
            SealedStep::Imported(report) => return Ok(report),
            // convicted in a token, the deposit not withdrawn yet (a
            // frozen vault): the next look refunds it
            SealedStep::Disputed {
                withdrawn: false, ..
            } => {}
            SealedStep::Disputed {
                index, signature, ..
            } => {
                return Err(
                    EscrowReadError::from(EscrowPlanError::Disputed { index, signature }).into(),
                )
            }
            SealedStep::Refunded { signature } => return Err(BuyError::Refunded(signature)),
            SealedStep::Closed(why) => return Err(BuyError::Closed(why)),
        }
        if start.elapsed() >= timeout {
            return Err(BuyError::Pending(buy_signature.into()));
        }
        on_wait(start.elapsed());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn import_opened(
    inner: &[u8],
    listing: &Listing,
    target: ImportTarget<'_>,
) -> Result<Imported, BuyError> {
    let scope = format!("imported:{}", listing.listing_id);
    Ok(match target {
        ImportTarget::Store(store) => Imported::Store(import_inner(
            store,
            inner,
            &listing.bundle_hash,
            &listing.seller_pubkey,
            Some(&scope),
            Some(&listing.listing_id),
        )?),
        ImportTarget::BrainctlDb(path) => Imported::BrainctlDb(
            import_inner_into_brain_db(path, inner, &listing.bundle_hash, &scope)
                .map_err(|e| BuyError::BrainDb(Box::new(e)))?,
        ),
    })
}

/// The slot of a successful `cancel` of `listing` signed by its seller.
pub async fn find_cancel(
    chain: &Chain,
    pay_to: &Pubkey,
    listing: &Listing,
) -> Result<Option<u64>, BuyError> {
    crate::market::negotiate::find_signed_memo(
        chain,
        pay_to,
        &listing.seller_pubkey,
        |op| matches!(op, MemoOp::Cancel { listing_id } if *listing_id == listing.listing_id),
    )
    .await
    .map_err(BuyError::from)
}

/// Where a fetched bundle's memories go.
pub enum ImportTarget<'a> {
    /// Our store (a quarantine scope with provenance).
    Store(&'a mut Store),
    /// The agent's own Python brainctl `brain.db` at this path.
    BrainctlDb(&'a std::path::Path),
}

impl ImportTarget<'_> {
    /// The same target, borrowed again (one per look at an escrow).
    pub fn reborrow(&mut self) -> ImportTarget<'_> {
        match self {
            ImportTarget::Store(s) => ImportTarget::Store(s),
            ImportTarget::BrainctlDb(p) => ImportTarget::BrainctlDb(p),
        }
    }
}

/// What a fetch imported, by target.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum Imported {
    /// Into our store.
    Store(ImportReport),
    /// Into a brain.db.
    BrainctlDb(crate::brainctl_db::BrainDbReport),
}

/// Longest pause before an envelope the gateway failed to serve is asked for again.
const MAX_ENVELOPE_PAUSE: Duration = Duration::from_secs(30);

/// Waits for the release of `buy_signature`, then decrypts and imports.
/// An escrow buy opens `kept_blob` (the blob checked before paying, kept
/// with the pending escrow) when given, else fetches the blob, and checks
/// it against the committed root either way.
#[allow(clippy::too_many_arguments)]
pub async fn fetch_and_import(
    chain: &Chain,
    buyer: &Wallet,
    source: &Source,
    listing: &Listing,
    buy_signature: &str,
    target: ImportTarget<'_>,
    kept_blob: Option<&[u8]>,
    timeout: Duration,
    mut on_wait: impl FnMut(Duration),
) -> Result<Imported, BuyError> {
    if listing.escrow_program.is_some() {
        return fetch_and_import_sealed(
            chain,
            buyer,
            source,
            listing,
            buy_signature,
            target,
            kept_blob,
            timeout,
            on_wait,
        )
        .await;
    }
    let pay_to = Pubkey::from_str(&listing.payment_address)
        .map_err(|_| ListingRefusal::BadPaymentAddress)?;
    let (seller, me) = (listing.seller_pubkey.clone(), buyer.address());
    let want = Expected {
        listing_id: &listing.listing_id,
        seller: &seller,
        buyer: &me,
        buy_signature,
        bundle_hash: &listing.bundle_hash,
    };
    // each round reads only the history since the last; each envelope id
    // is fetched until it opens or proves to be another's, one that fails
    // again after a growing pause: junk `release` memos cost one fetch
    // each, never one per round
    let mut newest = None;
    let mut known = std::collections::HashSet::new();
    let mut waiting: Vec<(String, Instant, Duration)> = Vec::new();
    let start = Instant::now();
    loop {
        let (ops, top) =
            crate::market::status::memo_ops_since(chain, &pay_to, newest.as_ref()).await?;
        newest = top.or(newest);
        for (_, op) in ops {
            if let MemoOp::Release {
                listing_id,
                envelope_arweave_id: id,
                ..
            } = op
            {
                if listing_id == listing.listing_id && known.insert(id.clone()) {
                    waiting.push((id, Instant::now(), Duration::from_secs(1)));
                }
            }
        }
        let mut opened = None;
        let now = Instant::now();
        let mut i = 0;
        while i < waiting.len() && opened.is_none() {
            let (id, due, pause) = &mut waiting[i];
            if *due > now {
                i += 1;
                continue;
            }
            match source.fetch(id, MAX_JSON_BYTES).await {
                Err(_) => {
                    *pause = (*pause * 2).min(MAX_ENVELOPE_PAUSE);
                    *due = now + *pause;
                    i += 1;
                }
                Ok(body) => {
                    waiting.swap_remove(i);
                    // envelopes of other buyers' buys fail the bindings
                    opened = open_envelope(&body, buyer, &want).ok();
                }
            }
        }
        if let Some((key, _)) = opened {
            let blob = source
                .fetch(blob_item(listing), crate::seal::MAX_BLOB_BYTES)
                .await?;
            let inner = crate::seal::decrypt_blob(&key, &blob)?;
            return import_opened(&inner, listing, target);
        }
        if start.elapsed() >= timeout {
            return Err(BuyError::Timeout(buy_signature.into()));
        }
        on_wait(start.elapsed());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
