//! `marketplace list`: encrypt a signed bundle, store blob, metadata and the
//! signed listing manifest, keep the key (by blob and by listing), post the
//! `list` memo (with the discovery reference and, on mainnet, the op fee),
//! and record the listing for `listen`.

use crate::arweave::Uploader;
use crate::bundle::{canonical, verify_text, Bundle, Filter};
use crate::chain::{Chain, Signer};
use crate::keys::KeyDir;
use crate::market::manifest::{build_listing, preview, NewListing};
use crate::market::tx::post_memo_with;
use crate::market::MemoOp;
use crate::publish::store_encrypted;
use crate::seller::{ListenDb, ListingRecord};
use crate::wallet::Wallet;

/// Why `list` or `cancel` refuses its arguments (nothing was sent).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// `--sol-usd` is not a positive rate.
    #[error("--sol-usd must be a positive rate, got {0}")]
    BadRate(f64),
    /// `--token-usd` is not a positive rate.
    #[error("--token-usd must be a positive rate (USD per whole token), got {0}")]
    BadTokenRate(f64),
    /// A token whose unit is not known to be a dollar, without a rate.
    #[error("mint {0} is not a known dollar stablecoin: pass --token-usd (USD per whole token) to fix its price in the listing")]
    NoTokenRate(String),
    /// The price does not fit the currency's base units.
    #[error("{price_usd} USD is more base units of the currency than 64 bits hold")]
    PriceTooLarge {
        /// The USD price.
        price_usd: f64,
    },
    /// The mint cannot settle a listing.
    #[error("--mint: {0}")]
    Mint(#[from] crate::chain::token::MintRefusal),
    /// A currency's mint that is not an address.
    #[error("mint {0:?} is not a base58 address")]
    BadMint(String),
    /// `--usd-at-settle` with the escrow.
    #[error("--usd-at-settle prices a direct listing (the escrow holds a price fixed at listing); leave out --escrow")]
    UsdAtSettleDirectOnly,
    /// `--usd-at-settle` in a dollar stablecoin.
    #[error("--usd-at-settle: {0} is a dollar stablecoin, which settles 1:1 without a price feed; leave out --usd-at-settle")]
    UsdAtSettleInDollars(String),
    /// `--usd-at-settle` with a fixed rate for the currency paid.
    #[error("--usd-at-settle converts at the price account's price; leave out {0}")]
    UsdAtSettleFixedRate(&'static str),
    /// `--usd-at-settle --mint` without `--sol-usd`.
    #[error("--usd-at-settle with --mint: pass --sol-usd too (what the price is worth against a release's cost, which is paid in SOL)")]
    UsdAtSettleNeedsSolUsd,
    /// The program that quotes USD at settle time is not on this cluster.
    #[error("--usd-at-settle: buys quote the price through the escrow program {0}, which is not deployed on this cluster")]
    NoQuoteProgram(String),
    /// The price account cannot price a buy now.
    #[error("--usd-at-settle: {0}")]
    UsdPrice(String),
    /// The cluster's program refused a buy's quote (an older build
    /// without `quote_usd`, or a rule the account fails on chain).
    #[error("--usd-at-settle: the escrow program {0} refused a buy's quote_usd ({1}); is its deployed build one with quote_usd?")]
    QuoteRefused(String, String),
    /// The listing is not in this wallet's seller state.
    #[error("{0} is not one of this wallet's listings (see ~/.brainctl/listen.db)")]
    NotOurs(String),
    /// The listing was already cancelled.
    #[error("{listing_id} was already cancelled at slot {slot}")]
    AlreadyCancelled {
        /// The listing.
        listing_id: String,
        /// The cancel's slot.
        slot: u64,
    },
    /// The recorded payment address is not a public key.
    #[error("bad payment address on record")]
    BadPaymentAddress,
    /// The price is under what each release costs the seller.
    #[error("a listing at {price} lamports earns less than the {cost} lamports each release costs you (its signature and receipt: see `listen --receipt`): every buy, junk buys anyone sends for a 5,000-lamport fee included, would cost you more than it pays; raise --price-usd, or pass --below-cost to list it anyway (`listen` then releases at most --below-cost-per-hour such buys an hour)")]
    BelowCost {
        /// The listing's price.
        price: u64,
        /// One release's cost.
        cost: u64,
    },
}

/// Listing errors.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The bundle file does not verify, or is not ours.
    #[error("cannot list this bundle: {0}")]
    Bundle(String),
    /// A bad argument, or a listing this wallet can't act on.
    #[error(transparent)]
    Input(#[from] InputError),
    /// Encrypting, uploading or keeping the key.
    #[error(transparent)]
    Publish(#[from] crate::publish::PublishError),
    /// Uploading the listing manifest.
    #[error("upload failed: {0}")]
    Storage(#[from] crate::arweave::StorageError),
    /// Linking the listing to its key.
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    /// Chain.
    #[error(transparent)]
    Chain(#[from] crate::chain::ChainError),
    /// Manifest rules.
    #[error(transparent)]
    Manifest(#[from] crate::market::manifest::ManifestRuleError),
    /// State.
    #[error(transparent)]
    State(#[from] crate::seller::StateError),
    /// The escrow program refused (not deployed, no config, stake).
    #[error(transparent)]
    Escrow(#[from] crate::market::escrow_trade::EscrowReadError),
}

/// Options of a listing.
#[derive(Debug, Clone)]
pub struct ListOptions {
    /// Price in USD.
    pub price_usd: f64,
    /// SOL/USD rate used to fix `price_lamports`.
    pub sol_usd: f64,
    /// Duration.
    pub duration_hours: f64,
    /// auction | private.
    pub visibility: String,
    /// Payment address (default: the seller).
    pub payment_address: Option<String>,
    /// Preview description.
    pub description: String,
    /// Settle through the escrow program with this stake (lamports);
    /// `None`: direct payment.
    pub escrow_stake: Option<u64>,
    /// With the escrow: at most this many escrows open at once
    /// (`u32::MAX`: as many as the stake backs, one slash share each).
    pub escrow_max_open: u32,
    /// List even when the price is under one release's cost.
    pub below_cost: bool,
    /// The receipt its releases give: with a listing's own
    /// ([`ReceiptMode::Listing`](crate::mint::receipt::ReceiptMode)), its
    /// mint is made before the listing is posted (escrow listings: a mint
    /// per buy, nothing made now).
    pub receipt: crate::mint::receipt::ReceiptMode,
    /// Settle in this token instead of SOL.
    pub settle_in: Option<SettleIn>,
    /// Price in USD at settle time (SOL paid at each buy's Pyth price)
    /// instead of fixing lamports now.
    pub usd_at_settle: Option<crate::market::manifest::UsdAtSettle>,
}

/// The environment variable naming the mint new listings settle in (the
/// deployment's default currency; unset or `SOL`: SOL).
pub const SETTLE_MINT_ENV: &str = "BRAINCTL_SETTLE_MINT";

/// A listing's token (`list --mint`).
#[derive(Debug, Clone, Copy)]
pub struct SettleIn {
    /// The mint (read from the chain: its program and decimals).
    pub mint: crate::chain::Pubkey,
    /// USD per whole token; `None` for a dollar stablecoin
    /// ([`crate::chain::token::DOLLAR_MINTS`]), which settles 1:1.
    pub token_usd: Option<f64>,
}

/// `price_usd / sol_usd` SOL in lamports, rounded up.
pub fn usd_to_lamports(price_usd: f64, sol_usd: f64) -> Result<u64, ListError> {
    if !(sol_usd.is_finite() && sol_usd > 0.0) {
        return Err(InputError::BadRate(sol_usd).into());
    }
    usd_to_units(price_usd, sol_usd, 9)
}

/// `price_usd / usd_per_whole` whole units in base units of `decimals`,
/// rounded up: the seller is never paid less than the USD price. A
/// product within a billionth of a whole base unit is that unit (0.07 USD
/// is 70,000 micro-dollars, not the 70,001 `ceil` of the binary float).
pub fn usd_to_units(price_usd: f64, usd_per_whole: f64, decimals: u8) -> Result<u64, ListError> {
    let units = price_usd / usd_per_whole * 10f64.powi(i32::from(decimals));
    let nearest = units.round();
    let units = if (units - nearest).abs() <= 1e-9 * nearest.max(1.0) {
        nearest
    } else {
        units.ceil()
    };
    if !(0.0..u64::MAX as f64).contains(&units) {
        return Err(InputError::PriceTooLarge { price_usd }.into());
    }
    Ok(units as u64)
}

/// `price_usd` in base units of `currency`: lamports at `sol_usd` for
/// SOL; for a token, at `token_usd` USD per whole token (`None`: a dollar
/// stablecoin, 1:1), its decimals read from the mint. The rule a listing's
/// price follows, for the terms of offers and counters.
pub async fn price_in(
    chain: &Chain,
    price_usd: f64,
    sol_usd: f64,
    token_usd: Option<f64>,
    currency: &crate::settle::Currency,
) -> Result<u64, ListError> {
    match currency {
        crate::settle::Currency::Sol => usd_to_lamports(price_usd, sol_usd),
        crate::settle::Currency::Token { mint } => {
            let mint = mint
                .parse()
                .map_err(|_| InputError::BadMint(mint.clone()))?;
            let settle_in = SettleIn { mint, token_usd };
            Ok(token_price(chain, price_usd, &settle_in).await?.price_units)
        }
    }
}

/// A listing priced in USD at settle time: its terms, in SOL or in the
/// `--mint` token (read from the chain; a dollar stablecoin is refused: it
/// settles 1:1 without a feed), and the base units they come to now (its
/// price account read and checked by its rule: a listing whose buyers
/// could not pay now is refused), its buys' `quote_usd` simulated on the
/// cluster's escrow program (deployed, and a build that has it). Direct
/// payment only.
async fn usd_at_settle_now(
    chain: &Chain,
    seller: &Wallet,
    o: &ListOptions,
    usd: &crate::market::manifest::UsdAtSettle,
) -> Result<(crate::market::manifest::UsdAtSettle, u64), ListError> {
    if o.escrow_stake.is_some() {
        return Err(InputError::UsdAtSettleDirectOnly.into());
    }
    if !crate::market::escrow_trade::program_deployed(chain).await? {
        return Err(InputError::NoQuoteProgram(crate::escrow::PROGRAM_ID.into()).into());
    }
    let mut usd = usd.clone();
    let sol_usd_given = !o.sol_usd.is_nan();
    if o.settle_in.is_none() && sol_usd_given {
        return Err(InputError::UsdAtSettleFixedRate("--sol-usd").into());
    }
    if let Some(t) = &o.settle_in {
        if t.token_usd.is_some() {
            return Err(InputError::UsdAtSettleFixedRate("--token-usd").into());
        }
        if !sol_usd_given {
            return Err(InputError::UsdAtSettleNeedsSolUsd.into());
        }
        let mint = crate::chain::token::read_mint(chain, &t.mint)
            .await
            .map_err(InputError::from)?;
        if crate::chain::token::is_dollar(&mint.address) {
            return Err(InputError::UsdAtSettleInDollars(mint.address.to_string()).into());
        }
        usd.token = Some(crate::market::manifest::UsdToken {
            mint: mint.address.to_string(),
            token_program: mint.program.to_string(),
            decimals: mint.decimals,
        });
    }
    let terms = usd.terms(o.price_usd);
    let currency = match &usd.token {
        None => crate::settle::Currency::Sol,
        Some(t) => crate::settle::Currency::Token {
            mint: t.mint.clone(),
        },
    };
    let quote = crate::market::usd_price::quote_now(chain, &terms, &currency)
        .await
        .map_err(|e| InputError::UsdPrice(e.to_string()))?;
    // a buy's quote, run now as the program would run it in the buy
    let ix = crate::market::usd_price::quote_instruction(&terms, quote.units)
        .map_err(|e| InputError::UsdPrice(e.to_string()))?;
    match chain.simulated_cost(&[ix], &seller.solana_keypair()).await {
        Ok(_) => Ok((usd, quote.units)),
        Err(crate::chain::ChainError::Config(why)) => {
            Err(InputError::QuoteRefused(crate::escrow::PROGRAM_ID.into(), why).into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The token a listing settles in and its price in base units.
async fn token_price(
    chain: &Chain,
    price_usd: f64,
    settle_in: &SettleIn,
) -> Result<crate::market::manifest::TokenSettlement, ListError> {
    let mint = crate::chain::token::read_mint(chain, &settle_in.mint)
        .await
        .map_err(InputError::from)?;
    let rate = match settle_in.token_usd {
        Some(r) if r.is_finite() && r > 0.0 => r,
        Some(r) => return Err(InputError::BadTokenRate(r).into()),
        None if crate::chain::token::is_dollar(&mint.address) => 1.0,
        None => return Err(InputError::NoTokenRate(mint.address.to_string()).into()),
    };
    Ok(crate::market::manifest::TokenSettlement {
        mint: mint.address.to_bytes(),
        token_program: mint.program.to_bytes(),
        decimals: mint.decimals,
        price_units: usd_to_units(price_usd, rate, mint.decimals)?,
    })
}

/// A new listing id `YYYYMMDD-<12 hex>`.
pub fn new_listing_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    let r = crate::crypto::random_bytes::<6>();
    format!(
        "{:04}{:02}{:02}-{}",
        now.year(),
        now.month() as u8,
        now.day(),
        hex::encode(r)
    )
}

/// Lists the signed bundle `text` (signed by `seller`).
pub async fn list_bundle(
    chain: &Chain,
    seller: &Wallet,
    uploader: &Uploader,
    keys: &KeyDir,
    db: &mut ListenDb,
    text: &[u8],
    o: &ListOptions,
) -> Result<ListingRecord, ListError> {
    let (report, verified) = verify_text(text);
    let v = verified.ok_or_else(|| ListError::Bundle(report.error.unwrap_or_default()))?;
    if v.signer != seller.address() {
        return Err(ListError::Bundle(format!(
            "it is signed by {}, not by this wallet ({})",
            v.signer,
            seller.address()
        )));
    }
    // what the price is worth in lamports (a token listing's too, at
    // --sol-usd; a SOL listing priced at settle time, at its price now):
    // compared with what a release costs the seller
    let usd_at_settle = match &o.usd_at_settle {
        None => None,
        Some(usd) => Some(usd_at_settle_now(chain, seller, o, usd).await?),
    };
    let price_lamports = match &usd_at_settle {
        Some((usd, lamports)) if usd.token.is_none() => *lamports,
        _ => usd_to_lamports(o.price_usd, o.sol_usd)?,
    };
    let usd_at_settle = usd_at_settle.map(|(usd, _)| usd);
    let settlement = match (&o.settle_in, &usd_at_settle) {
        (Some(t), None) => Some(token_price(chain, o.price_usd, t).await?),
        _ => None,
    };
    // an escrow vault in a token: the program refuses a mint whose
    // extensions could move, stop or hide a vault; say so before listing
    if let (Some(_), Some(t)) = (o.escrow_stake, &o.settle_in) {
        crate::chain::token::read_escrow_mint(chain, &t.mint)
            .await
            .map_err(InputError::from)?;
    }
    if !o.below_cost {
        // what a release of it costs by default: a unit of the listing's
        // receipt mint (an escrow listing's: a Light mint per buy); a
        // seller running `listen --receipt per-buy` pays more, which its
        // own below-cost guard then counts
        let mode = match o.escrow_stake {
            Some(_) => crate::mint::receipt::ReceiptMode::PerBuy,
            None => o.receipt,
        };
        let light = crate::mint::bundle_mint::TokenStandard::LightCompressed;
        let cost = crate::mint::receipt::release_cost(chain, mode, light).await?;
        if price_lamports < cost {
            return Err(InputError::BelowCost {
                price: price_lamports,
                cost,
            }
            .into());
        }
    }
    // an escrow listing needs the program and its settings: checked before anything is uploaded
    let escrow_settings = match o.escrow_stake {
        Some(stake) => {
            let settings = crate::market::escrow_trade::read_settings(chain).await?;
            if stake < settings.min_stake {
                return Err(crate::market::escrow_trade::EscrowReadError::from(
                    crate::market::escrow_trade::EscrowPlanError::StakeTooLow {
                        stake,
                        min: settings.min_stake,
                    },
                )
                .into());
            }
            Some(settings)
        }
        None => None,
    };
    let memories = v.memories().map_err(ListError::Bundle)?;
    let hash = hex::encode(v.bundle_hash);
    let listing_id = new_listing_id();
    let plaintext = canonical(&v.inner);
    // a sealed-escrow listing: its own blob under k (derived from the
    // wallet and the listing id), and the commitments the program will hold
    let (stored, escrow_terms) = match o.escrow_stake {
        None => (
            store_encrypted(seller, uploader, keys, &plaintext, &hash, memories.len()).await?,
            None,
        ),
        Some(_) => {
            let genesis = chain.genesis_hash().await?;
            let k = crate::escrow::cluster_listing_scalar(seller, &genesis, &listing_id);
            let (stored, blob_root, plain_len) = crate::publish::store_escrow_sealed(
                seller,
                uploader,
                keys,
                &plaintext,
                &k,
                &hash,
                memories.len(),
            )
            .await?;
            let terms = crate::market::manifest::EscrowCommitments {
                key_point: escrow_math::client::point_of(&k),
                blob_root,
                plain_len,
                seller_x25519: seller.x25519_public(),
                blob_format: escrow_math::blob::Format::V3,
            };
            (stored, Some(terms))
        }
    };
    let (blob_id, meta_id) = (stored.blob_id, stored.metadata_id);
    keys.link_listing(&listing_id, &blob_id)?;
    let typed = Bundle {
        version: 1,
        generated_at: String::new(),
        filter_used: Filter::default(),
        memories,
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let manifest = build_listing(
        seller,
        &NewListing {
            listing_id: &listing_id,
            bundle_hash: &hash,
            payment_address: o.payment_address.as_deref(),
            price_usd: o.price_usd,
            price_lamports,
            duration_hours: o.duration_hours,
            visibility: &o.visibility,
            encrypted_bundle_uri: &format!("ar://{blob_id}"),
            metadata_uri: &format!("ar://{meta_id}"),
            preview: preview(&typed, &o.description),
            now,
            escrow_program: o.escrow_stake.map(|_| crate::escrow::PROGRAM_ID),
            escrow_terms,
            settlement,
            usd_at_settle,
        },
    )?;
    let listing = crate::market::manifest::Listing::from_value(manifest.clone())?;
    let manifest_id = uploader
        .put_signed(
            seller,
            serde_json::to_vec(&manifest).expect("json"),
            "application/json",
            crate::market::manifest::LISTING_SCHEMA,
        )
        .await?;
    let op = MemoOp::List {
        listing_arweave_id: manifest_id.clone(),
        bundle_hash: hash.clone(),
    };
    let create = match (o.escrow_stake, &escrow_settings) {
        (Some(stake), Some(settings)) => vec![crate::market::escrow_trade::list_instruction(
            &seller.solana_keypair().pubkey(),
            &listing,
            (stake, o.escrow_max_open),
            settings,
        )
        .map_err(crate::market::escrow_trade::EscrowReadError::from)?],
        _ => vec![],
    };
    // a token listing: the payee's token account of the mint, created
    // (idempotently) with the listing at the seller's cost, so no buyer
    // pays its rent
    let create = match &listing.token() {
        Some(t) => {
            let mint = crate::chain::token::TokenMint {
                address: crate::chain::Pubkey::new_from_array(t.mint),
                program: crate::chain::Pubkey::new_from_array(t.token_program),
                decimals: t.decimals,
            };
            let payee: crate::chain::Pubkey = listing
                .payment_address
                .parse()
                .map_err(|_| InputError::BadPaymentAddress)?;
            let mut with_account = create;
            with_account.push(crate::chain::token::create_associated_account(
                &seller.solana_keypair().pubkey(),
                &payee,
                &mint,
            ));
            with_account
        }
        None => create,
    };
    // In the catalog before the memo is sent: `listen` releases a buyer
    // who pays the moment the memo is visible (before our commitment is
    // reached), and a crash between landing and recording strands nobody.
    // A memo that never lands leaves a listing nobody can find on chain
    // (cancel it, or list again).
    let mut record = ListingRecord {
        listing_id,
        manifest_id,
        bundle_hash: hash,
        blob_id,
        metadata_uri: format!("ar://{meta_id}"),
        payment_address: listing.payment_address.clone(),
        price_lamports: listing.price_units().unwrap_or(price_lamports),
        currency: listing.currency(),
        expires_at: listing.expires_at,
        cancelled_at_slot: None,
        list_signature: String::new(),
        escrow: o.escrow_stake.is_some(),
        usd: listing
            .usd_at_settle
            .as_ref()
            .map(|u| u.terms(listing.price_usd)),
    };
    db.add_listing(&record)?;
    // the listing's receipt mint before the listing is seen: a release
    // then costs its signature (`listen` makes it if this one never landed)
    if !record.escrow && o.receipt == crate::mint::receipt::ReceiptMode::Listing {
        let spec = crate::mint::token2022::NftSpec {
            name: format!("brainctl bundle {}", &record.bundle_hash[..12]),
            symbol: crate::mint::bundle_mint::SYMBOL.into(),
            uri: record.metadata_uri.clone(),
        };
        crate::mint::receipt::ensure_listing_mint(chain, seller, &record.listing_id, &spec).await?;
    }
    // the seller signs; a separate payment address is not referenced (as before)
    let sent = post_memo_with(
        chain,
        seller,
        &op,
        &seller.solana_keypair().pubkey(),
        create,
    )
    .await?;
    record.list_signature = sent.signature.to_string();
    db.set_list_signature(&record.listing_id, &record.list_signature)?;
    Ok(record)
}

/// Cancels one of our listings: posts `cancel:<listing>` (with the
/// discovery reference and the payment address referenced read-only, so the
/// daemon and buyers see it in that address's history) and records the slot.
pub async fn cancel_listing(
    chain: &Chain,
    seller: &Wallet,
    db: &mut ListenDb,
    listing_id: &str,
) -> Result<crate::chain::Sent, ListError> {
    let rec = db
        .listings()?
        .into_iter()
        .find(|l| l.listing_id == listing_id)
        .ok_or_else(|| ListError::from(InputError::NotOurs(listing_id.into())))?;
    if let Some(slot) = rec.cancelled_at_slot {
        return Err(InputError::AlreadyCancelled {
            listing_id: listing_id.into(),
            slot,
        }
        .into());
    }
    let pay_to: crate::chain::Pubkey = rec
        .payment_address
        .parse()
        .map_err(|_| InputError::BadPaymentAddress)?;
    let op = MemoOp::Cancel {
        listing_id: listing_id.into(),
    };
    // an escrow listing is closed in the program in the same transaction
    let close = if rec.escrow {
        use crate::market::escrow_trade::{cancel_instructions, read_account};
        let me = seller.solana_keypair().pubkey();
        let account = crate::escrow::listing_address(&me, listing_id);
        let onchain = read_account(chain, &account, crate::escrow::ListingAccount::decode).await?;
        cancel_instructions(&me, listing_id, onchain.as_ref())
            .map_err(crate::market::escrow_trade::EscrowReadError::from)?
    } else {
        vec![]
    };
    let sent = post_memo_with(chain, seller, &op, &pay_to, close).await?;
    db.mark_listing_cancelled(listing_id, sent.slot)?;
    Ok(sent)
}
