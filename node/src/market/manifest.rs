//! Listing, offer and counter manifests (PROTOCOL.md §7): typed reading
//! with validation and signature checks, and builders that enforce the
//! protocol's limits at creation.
//!
//! Reading is as strict as interop allows: shapes, charsets, price range,
//! message length, visibility and the signature are checked; duration and
//! TTL limits are enforced when *building* (the reference's own fixtures
//! carry injected `created_at` values), while expiry is judged against
//! block time by `listen` and the indexer. The signed JSON is kept as is:
//! hashes are never computed over a re-serialization of typed fields.

use crate::bundle::{sign_manifest, verify_manifest, Bundle, ManifestError};
use crate::wallet::Wallet;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Schema names.
pub const LISTING_SCHEMA: &str = "brainctl-marketplace/v1/listing";
/// Offer schema.
pub const OFFER_SCHEMA: &str = "brainctl-marketplace/v1/offer";
/// Counter schema.
pub const COUNTER_SCHEMA: &str = "brainctl-marketplace/v1/counter";
/// Highest price in USD.
pub const MAX_PRICE_USD: f64 = 10_000.0;
/// Longest listing, hours.
pub const MAX_LISTING_HOURS: f64 = 720.0;
/// Longest offer/counter TTL, hours.
pub const MAX_OFFER_TTL_HOURS: f64 = 24.0;
/// Longest message, characters.
pub const MAX_MESSAGE_CHARS: usize = 280;
/// Default protocol fee.
pub const DEFAULT_FEE_BPS: u64 = crate::chain::fees::SETTLE_FEE_BPS;
/// Fee cap.
pub const MAX_FEE_BPS: u64 = 1_000;

/// Why a manifest is refused.
#[derive(Debug, thiserror::Error)]
pub enum ManifestRuleError {
    /// A field is missing or malformed.
    #[error("manifest field `{field}`: {why}")]
    Field {
        /// Field.
        field: &'static str,
        /// What is wrong / expected.
        why: String,
    },
    /// Signature or hashing.
    #[error(transparent)]
    Signature(#[from] ManifestError),
}

fn field_err(field: &'static str, why: impl Into<String>) -> ManifestRuleError {
    ManifestRuleError::Field {
        field,
        why: why.into(),
    }
}

fn str_field<'a>(v: &'a Value, field: &'static str) -> Result<&'a str, ManifestRuleError> {
    v.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| field_err(field, "missing or not a string"))
}

fn pubkey_field(v: &Value, field: &'static str) -> Result<String, ManifestRuleError> {
    let s = str_field(v, field)?;
    crate::crypto::b58_array::<32>(s)
        .ok_or_else(|| field_err(field, "not a base58 32-byte key"))?;
    Ok(s.to_string())
}

fn price_field(v: &Value, field: &'static str) -> Result<f64, ManifestRuleError> {
    let p = v
        .pointer(field)
        .and_then(Value::as_f64)
        .ok_or_else(|| field_err("price", format!("{field} missing or not a number")))?;
    if !(0.0..=MAX_PRICE_USD).contains(&p) {
        return Err(field_err(
            "price",
            format!("{p} USD is outside [0, {MAX_PRICE_USD}]"),
        ));
    }
    Ok(p)
}

fn lamports_field(v: &Value) -> Result<Option<u64>, ManifestRuleError> {
    match v.get("price_lamports") {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_u64()
            .map(Some)
            .ok_or_else(|| field_err("price_lamports", "not a non-negative integer")),
    }
}

fn time_field(v: &Value, field: &'static str) -> Result<i64, ManifestRuleError> {
    let s = str_field(v, field)?;
    crate::clock::parse_iso(s)
        .map(|t| t.unix_timestamp())
        .ok_or_else(|| field_err(field, format!("`{s}` is not an ISO 8601 time")))
}

fn message_field(v: &Value) -> Result<String, ManifestRuleError> {
    let m = match v.get("message") {
        None | Some(Value::Null) => "",
        Some(x) => x
            .as_str()
            .ok_or_else(|| field_err("message", "not a string"))?,
    };
    if m.chars().count() > MAX_MESSAGE_CHARS {
        return Err(field_err(
            "message",
            format!("over {MAX_MESSAGE_CHARS} characters"),
        ));
    }
    Ok(m.to_string())
}

fn id_field(v: &Value, field: &'static str, offer: bool) -> Result<String, ManifestRuleError> {
    let s = str_field(v, field)?;
    let core = if offer {
        s.strip_prefix("offer-")
    } else {
        Some(s)
    };
    let ok = core.is_some_and(|c| {
        c.len() == 21
            && c.as_bytes()[8] == b'-'
            && c[..8].bytes().all(|b| b.is_ascii_digit())
            && c[9..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    ok.then(|| s.to_string())
        .ok_or_else(|| field_err(field, "not a YYYYMMDD-<12 hex> id"))
}

fn schema(v: &Value, want: &str) -> Result<(), ManifestRuleError> {
    let s = str_field(v, "schema")?;
    (s == want)
        .then_some(())
        .ok_or_else(|| field_err("schema", format!("`{s}`, expected `{want}`")))
}

/// A verified listing manifest.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Listing id.
    pub listing_id: String,
    /// Bundle hash (hex).
    pub bundle_hash: String,
    /// Seller (signer).
    pub seller_pubkey: String,
    /// Where to pay.
    pub payment_address: String,
    /// Fee in basis points.
    pub fee_bps: u64,
    /// Price in USD.
    pub price_usd: f64,
    /// Price in lamports (extension; required to settle).
    pub price_lamports: Option<u64>,
    /// auction | private.
    pub visibility: String,
    /// Expiry, unix seconds.
    pub expires_at: i64,
    /// `ar://` blob.
    pub encrypted_bundle_uri: String,
    /// Extension: the escrow program this listing settles through (its
    /// buyers deposit there; absent: direct payment to `payment_address`).
    pub escrow_program: Option<String>,
    /// Extension: what a sealed escrow listing commits to beside the price
    /// (`escrow_terms`), repeated by its program account.
    pub escrow_terms: Option<EscrowCommitments>,
    /// Extension: the token the listing settles in (`settlement`); absent:
    /// SOL at `price_lamports`.
    pub settlement: Option<TokenSettlement>,
    /// Extension: priced in USD at settle time (`usd_at_settle`): each buy
    /// pays SOL at the Pyth price its own `quote_usd` reads.
    pub usd_at_settle: Option<UsdAtSettle>,
    /// The signed JSON (shared: a state may hold it many times).
    pub raw: std::sync::Arc<Value>,
}

/// A listing's `usd_at_settle` extension: SOL (or the `token` it names)
/// at settle time, converted from `pricing.price_usd` at the Pyth price
/// account's price (its feed, no older than `max_age_secs`, confidence
/// within `max_conf_bps`) by the escrow program's `quote_usd` in the buy
/// itself; the seller takes payments down to `tolerance_bps` below that
/// quote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsdAtSettle {
    /// The Pyth `PriceUpdateV2` account (base58).
    pub price_account: String,
    /// Its feed (64 hex characters).
    #[serde(with = "crate::crypto::hex32")]
    pub feed_id: [u8; 32],
    /// Oldest price taken (seconds).
    pub max_age_secs: u32,
    /// Widest confidence taken (bps of the price).
    pub max_conf_bps: u16,
    /// How far below the quote a payment still counts (bps).
    pub tolerance_bps: u16,
    /// The token paid, when not SOL (a token that is not a dollar: the
    /// feed prices one whole token in USD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<UsdToken>,
}

/// The token a listing priced in USD at settle time is paid in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsdToken {
    /// The mint (base58).
    pub mint: String,
    /// Its token program (base58).
    pub token_program: String,
    /// Its decimals, as the mint states them.
    pub decimals: u8,
}

impl UsdToken {
    /// Its mint, program and decimals as keys.
    pub fn terms(&self) -> Option<TokenTerms> {
        Some(TokenTerms {
            mint: crate::crypto::b58_array::<32>(&self.mint)?,
            token_program: crate::crypto::b58_array::<32>(&self.token_program)?,
            decimals: self.decimals,
        })
    }
}

/// The token a listing is paid in, as its manifest states it (whether at
/// a fixed price, `settlement`, or at settle time, `usd_at_settle.token`):
/// what a buyer checks against the mint on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenTerms {
    /// The mint.
    pub mint: [u8; 32],
    /// Its token program.
    pub token_program: [u8; 32],
    /// Its decimals.
    pub decimals: u8,
}

impl TokenTerms {
    /// The first of `mint`'s token program and decimals (as the chain has
    /// them) that differs from these: (field, stated here, on chain).
    pub fn differs_from(
        &self,
        mint: &crate::chain::token::TokenMint,
    ) -> Option<(&'static str, String, String)> {
        let program = crate::chain::Pubkey::new_from_array(self.token_program);
        if mint.program != program {
            return Some((
                "token_program",
                program.to_string(),
                mint.program.to_string(),
            ));
        }
        (mint.decimals != self.decimals).then(|| {
            (
                "decimals",
                self.decimals.to_string(),
                mint.decimals.to_string(),
            )
        })
    }
}

/// The most tolerance a listing may state (5%).
pub const MAX_USD_TOLERANCE_BPS: u16 = 500;

impl UsdAtSettle {
    fn checked(self) -> Result<UsdAtSettle, ManifestRuleError> {
        if crate::crypto::b58_array::<32>(&self.price_account).is_none() {
            return Err(field_err(
                "usd_at_settle",
                "`price_account` is not a base58 32-byte key",
            ));
        }
        if self.max_age_secs == 0 || self.max_conf_bps == 0 {
            return Err(field_err(
                "usd_at_settle",
                "`max_age_secs` and `max_conf_bps` must be positive",
            ));
        }
        if self.tolerance_bps > MAX_USD_TOLERANCE_BPS {
            return Err(field_err(
                "usd_at_settle",
                format!("`tolerance_bps` is over {MAX_USD_TOLERANCE_BPS}"),
            ));
        }
        if self.token.as_ref().is_some_and(|t| t.terms().is_none()) {
            return Err(field_err(
                "usd_at_settle",
                "`token.mint` and `token.token_program` must be base58 32-byte keys",
            ));
        }
        Ok(self)
    }

    /// The terms a buy of the listing at `price_usd` is checked by.
    pub fn terms(&self, price_usd: f64) -> crate::settle::UsdTerms {
        crate::settle::UsdTerms {
            price_account: self.price_account.clone(),
            feed_id: self.feed_id,
            usd_micros: usd_micros(price_usd),
            max_age_secs: self.max_age_secs,
            max_conf_bps: self.max_conf_bps,
            tolerance_bps: self.tolerance_bps,
            decimals: self.token.as_ref().map_or(9, |t| t.decimals),
        }
    }
}

/// `price_usd` in micro-dollars (rounded to the nearest): the amount a
/// listing's `quote_usd` converts.
pub fn usd_micros(price_usd: f64) -> u64 {
    (price_usd * 1_000_000.0).round().max(0.0) as u64
}

/// A listing's `settlement` extension: it settles in base units of an SPL
/// Token or Token-2022 mint, at `price_units` (the listing then carries no
/// `price_lamports`, so a client that knows only SOL finds no price).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSettlement {
    /// The mint.
    pub mint: [u8; 32],
    /// Its token program.
    pub token_program: [u8; 32],
    /// Its decimals, as the mint states them.
    pub decimals: u8,
    /// The price in base units (a decimal string in JSON: exact past 2^53).
    pub price_units: u64,
}

impl TokenSettlement {
    fn to_json(self) -> Value {
        json!({
            "mint": bs58::encode(self.mint).into_string(),
            "token_program": bs58::encode(self.token_program).into_string(),
            "decimals": self.decimals,
            "price_units": self.price_units.to_string(),
        })
    }

    fn from_json(v: &Value) -> Result<TokenSettlement, ManifestRuleError> {
        let key = |name: &'static str| -> Result<[u8; 32], ManifestRuleError> {
            v.get(name)
                .and_then(Value::as_str)
                .and_then(crate::crypto::b58_array::<32>)
                .ok_or_else(|| {
                    field_err(
                        "settlement",
                        format!("`{name}` is not a base58 32-byte key"),
                    )
                })
        };
        let decimals = v
            .get("decimals")
            .and_then(Value::as_u64)
            .and_then(|d| u8::try_from(d).ok())
            .ok_or_else(|| field_err("settlement", "`decimals` is not an integer in 0..=255"))?;
        let price_units = units_text(v.get("price_units"))?;
        Ok(TokenSettlement {
            mint: key("mint")?,
            token_program: key("token_program")?,
            decimals,
            price_units,
        })
    }

    /// The mint in base58.
    pub fn mint_address(&self) -> String {
        bs58::encode(self.mint).into_string()
    }
}

impl Listing {
    /// What the listing settles in.
    pub fn currency(&self) -> crate::settle::Currency {
        match self.token() {
            None => crate::settle::Currency::Sol,
            Some(t) => crate::settle::Currency::Token {
                mint: bs58::encode(t.mint).into_string(),
            },
        }
    }

    /// The token the listing is paid in (`None`: SOL), at a fixed price or
    /// at settle time.
    pub fn token(&self) -> Option<TokenTerms> {
        match (&self.settlement, &self.usd_at_settle) {
            (Some(t), _) => Some(TokenTerms {
                mint: t.mint,
                token_program: t.token_program,
                decimals: t.decimals,
            }),
            (None, Some(u)) => u.token.as_ref().and_then(UsdToken::terms),
            (None, None) => None,
        }
    }

    /// The price in base units of [`Listing::currency`] (lamports for
    /// SOL); `None` for a listing that fixes none (an old client's).
    pub fn price_units(&self) -> Option<u64> {
        match &self.settlement {
            None => self.price_lamports,
            Some(t) => Some(t.price_units),
        }
    }

    /// Reads and verifies a listing (signed by `seller_pubkey`).
    pub fn from_value(v: Value) -> Result<Listing, ManifestRuleError> {
        Self::from_shared(std::sync::Arc::new(v))
    }

    /// The same, over a body shared with its caller (no copy).
    pub fn from_shared(v: std::sync::Arc<Value>) -> Result<Listing, ManifestRuleError> {
        let raw = v.clone();
        let v: &Value = &v;
        schema(v, LISTING_SCHEMA)?;
        verify_manifest(v, "seller_pubkey")?;
        let hash = str_field(v, "bundle_hash")?;
        if hash.len() != 64
            || !hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(field_err("bundle_hash", "not 64 lowercase hex characters"));
        }
        let fee_bps = v
            .get("fee_bps")
            .and_then(Value::as_u64)
            .ok_or_else(|| field_err("fee_bps", "missing or not an integer"))?;
        if fee_bps > MAX_FEE_BPS {
            return Err(field_err(
                "fee_bps",
                format!("{fee_bps} is over the cap of {MAX_FEE_BPS}"),
            ));
        }
        let visibility = str_field(v, "visibility")?;
        if visibility != "auction" && visibility != "private" {
            return Err(field_err("visibility", "must be `auction` or `private`"));
        }
        let settlement = match v.get("settlement") {
            None | Some(Value::Null) => None,
            Some(t) => Some(TokenSettlement::from_json(t)?),
        };
        let price_lamports = lamports_field(v)?;
        if settlement.is_some() && price_lamports.is_some() {
            return Err(field_err(
                "settlement",
                "a listing settling in a token carries no `price_lamports` (two prices)",
            ));
        }
        let usd_at_settle = match v.get("usd_at_settle") {
            None | Some(Value::Null) => None,
            Some(u) => Some(
                serde_json::from_value::<UsdAtSettle>(u.clone())
                    .map_err(|e| field_err("usd_at_settle", e.to_string()))?
                    .checked()?,
            ),
        };
        let escrowed = v.get("escrow_program").is_some_and(|p| !p.is_null());
        if usd_at_settle.is_some() && escrowed {
            return Err(field_err(
                "usd_at_settle",
                "an escrow listing settles at its signed price_lamports, not at settle time",
            ));
        }
        if usd_at_settle.is_some() && (price_lamports.is_some() || settlement.is_some()) {
            return Err(field_err(
                "usd_at_settle",
                "a listing priced in USD at settle time fixes no `price_lamports` and no `settlement` (two prices)",
            ));
        }
        Ok(Listing {
            listing_id: id_field(v, "listing_id", false)?,
            bundle_hash: hash.into(),
            seller_pubkey: pubkey_field(v, "seller_pubkey")?,
            payment_address: pubkey_field(v, "payment_address")?,
            fee_bps,
            price_usd: price_field(v, "/pricing/price_usd")?,
            price_lamports,
            visibility: visibility.into(),
            expires_at: time_field(v, "expires_at")?,
            encrypted_bundle_uri: str_field(v, "encrypted_bundle_uri")?.into(),
            escrow_program: match v.get("escrow_program") {
                None | Some(Value::Null) => None,
                Some(_) => Some(pubkey_field(v, "escrow_program")?),
            },
            escrow_terms: match v.get("escrow_terms") {
                None | Some(Value::Null) => None,
                Some(t) => Some(EscrowCommitments::from_json(t)?),
            },
            settlement,
            usd_at_settle,
            raw,
        })
    }
}

/// A verified offer or counter (same shape for settlement).
#[derive(Debug, Clone)]
pub struct Offer {
    /// Offer id (the counter's parent for counters).
    pub offer_id: String,
    /// Listing (offers only).
    pub listing_id: Option<String>,
    /// Who signed: the buyer (offer) or the counterer.
    pub from_pubkey: String,
    /// Buyer X25519 (offers only).
    pub buyer_x25519: Option<String>,
    /// Price in USD.
    pub price_usd: f64,
    /// Price in lamports (extension), for a listing that settles in SOL.
    pub price_lamports: Option<u64>,
    /// Price in a token (extension `settlement {mint, price_units}`), for
    /// a listing that settles in that token; the manifest then carries no
    /// `price_lamports`.
    pub token_price: Option<OfferTokenPrice>,
    /// Message.
    pub message: String,
    /// Expiry, unix seconds.
    pub expires_at: i64,
    /// The signed JSON (shared: a state may hold it many times).
    pub raw: std::sync::Arc<Value>,
}

/// An offer's or counter's price in a token: `"settlement": {"mint":
/// "<base58>", "price_units": "<u64 as a decimal string>"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferTokenPrice {
    /// The mint (base58).
    pub mint: String,
    /// The price in its base units.
    pub price_units: u64,
}

impl OfferTokenPrice {
    /// The JSON extension.
    pub fn to_json(&self) -> Value {
        json!({"mint": self.mint, "price_units": self.price_units.to_string()})
    }

    fn from_json(v: &Value) -> Result<OfferTokenPrice, ManifestRuleError> {
        let mint = v
            .get("mint")
            .and_then(Value::as_str)
            .filter(|m| crate::crypto::b58_array::<32>(m).is_some())
            .ok_or_else(|| field_err("settlement", "`mint` is not a base58 32-byte key"))?;
        let price_units = units_text(v.get("price_units"))?;
        Ok(OfferTokenPrice {
            mint: mint.into(),
            price_units,
        })
    }
}

/// A `price_units` value: a decimal string of a u64 (exact past 2^53).
fn units_text(v: Option<&Value>) -> Result<u64, ManifestRuleError> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| {
            field_err(
                "settlement",
                "`price_units` is not a decimal string of a 64-bit unsigned integer",
            )
        })
}

/// The price fields of an offer or counter: lamports, or a token price,
/// never both.
fn offer_prices(v: &Value) -> Result<(Option<u64>, Option<OfferTokenPrice>), ManifestRuleError> {
    let lamports = lamports_field(v)?;
    let token = match v.get("settlement") {
        None | Some(Value::Null) => None,
        Some(t) => Some(OfferTokenPrice::from_json(t)?),
    };
    if lamports.is_some() && token.is_some() {
        return Err(field_err(
            "settlement",
            "terms in a token carry no `price_lamports` (two prices)",
        ));
    }
    Ok((lamports, token))
}

impl Offer {
    /// The price these terms fix in `currency` (the listing's), in its
    /// base units; `None` when they fix none in it (a SOL price on a token
    /// listing, another mint, or no price at all).
    pub fn price_in(&self, currency: &crate::settle::Currency) -> Option<u64> {
        match currency {
            crate::settle::Currency::Sol => {
                self.token_price.is_none().then_some(self.price_lamports?)
            }
            crate::settle::Currency::Token { mint } => self
                .token_price
                .as_ref()
                .filter(|t| &t.mint == mint)
                .map(|t| t.price_units),
        }
    }

    /// Reads and verifies an offer (signed by `buyer_pubkey`).
    pub fn offer_from_value(v: Value) -> Result<Offer, ManifestRuleError> {
        Self::offer_from_shared(std::sync::Arc::new(v))
    }

    /// The same, over a body shared with its caller (no copy).
    pub fn offer_from_shared(v: std::sync::Arc<Value>) -> Result<Offer, ManifestRuleError> {
        let raw = v.clone();
        let v: &Value = &v;
        schema(v, OFFER_SCHEMA)?;
        verify_manifest(v, "buyer_pubkey")?;
        let (price_lamports, token_price) = offer_prices(v)?;
        Ok(Offer {
            offer_id: id_field(v, "offer_id", true)?,
            listing_id: Some(id_field(v, "listing_id", false)?),
            from_pubkey: pubkey_field(v, "buyer_pubkey")?,
            buyer_x25519: Some(pubkey_field(v, "buyer_x25519_pubkey")?),
            price_usd: price_field(v, "/offered_price_usd")?,
            price_lamports,
            token_price,
            message: message_field(v)?,
            expires_at: time_field(v, "expires_at")?,
            raw,
        })
    }

    /// Reads and verifies a counter (signed by `from_pubkey`).
    pub fn counter_from_value(v: Value) -> Result<Offer, ManifestRuleError> {
        Self::counter_from_shared(std::sync::Arc::new(v))
    }

    /// The same, over a body shared with its caller (no copy).
    pub fn counter_from_shared(v: std::sync::Arc<Value>) -> Result<Offer, ManifestRuleError> {
        let raw = v.clone();
        let v: &Value = &v;
        schema(v, COUNTER_SCHEMA)?;
        verify_manifest(v, "from_pubkey")?;
        let (price_lamports, token_price) = offer_prices(v)?;
        Ok(Offer {
            offer_id: id_field(v, "parent_offer_id", true)?,
            listing_id: None,
            from_pubkey: pubkey_field(v, "from_pubkey")?,
            buyer_x25519: None,
            price_usd: price_field(v, "/counter_price_usd")?,
            price_lamports,
            token_price,
            message: message_field(v)?,
            expires_at: time_field(v, "expires_at")?,
            raw,
        })
    }
}

/// The listing preview: counts, categories, tags (parsed from the JSON
/// array inside the tags string) and the creation date range. Never content.
pub fn preview(bundle: &Bundle, description: &str) -> Value {
    let mut categories = BTreeSet::new();
    let mut tags = BTreeSet::new();
    let (mut min, mut max): (Option<String>, Option<String>) = (None, None);
    for m in &bundle.memories {
        if let Some(c) = m.get("category").as_text() {
            categories.insert(c.to_string());
        }
        if let Some(t) = m.get("tags").as_text() {
            match serde_json::from_str::<Vec<String>>(t) {
                Ok(list) => tags.extend(list),
                Err(_) => {
                    tags.extend(
                        t.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty()),
                    );
                }
            }
        }
        if let Some(c) = m.get("created_at").as_text() {
            if min.as_deref().is_none_or(|x| c < x) {
                min = Some(c.into());
            }
            if max.as_deref().is_none_or(|x| c > x) {
                max = Some(c.into());
            }
        }
    }
    json!({
        "memories_count": bundle.memories.len(),
        "categories_summary": categories,
        "tags_summary": tags,
        "min_created_at": min,
        "max_created_at": max,
        "description": description,
    })
}

/// Inputs of a new listing.
#[derive(Debug, Clone)]
pub struct NewListing<'a> {
    /// Listing id.
    pub listing_id: &'a str,
    /// Bundle hash.
    pub bundle_hash: &'a str,
    /// Payment address (default: the seller).
    pub payment_address: Option<&'a str>,
    /// Price USD.
    pub price_usd: f64,
    /// Price lamports (computed from the rate at list time); ignored when
    /// `settlement` is set (the price is its `price_units`).
    pub price_lamports: u64,
    /// Duration in hours.
    pub duration_hours: f64,
    /// auction | private.
    pub visibility: &'a str,
    /// Blob URI.
    pub encrypted_bundle_uri: &'a str,
    /// Metadata URI.
    pub metadata_uri: &'a str,
    /// Preview (see [`preview`]).
    pub preview: Value,
    /// Creation time (unix seconds).
    pub now: i64,
    /// Settles through this escrow program (extension field `escrow_program`).
    pub escrow_program: Option<&'a str>,
    /// The sealed escrow's commitments (extension field `escrow_terms`).
    pub escrow_terms: Option<EscrowCommitments>,
    /// Settles in this token (extension field `settlement`); `None`: SOL.
    pub settlement: Option<TokenSettlement>,
    /// Priced in USD at settle time (extension `usd_at_settle`; SOL, no
    /// `price_lamports`).
    pub usd_at_settle: Option<UsdAtSettle>,
}

/// What a sealed escrow listing commits to beside price, bundle hash and
/// expiry (`docs/escrow-protocol.md`): signed in the manifest, repeated in
/// the program's listing account, checked by the buyer against both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EscrowCommitments {
    /// K = k·G (hex in JSON).
    pub key_point: [u8; 32],
    /// Root over the escrow blob's chunk leaves (hex).
    pub blob_root: [u8; 32],
    /// Plaintext length in bytes.
    pub plain_len: u64,
    /// The seller's X25519 key (hex).
    pub seller_x25519: [u8; 32],
    /// The blob's format (`"blob_format"`): 3 commits SHA-256's
    /// midstates and the memory tallies (a plaintext other than the
    /// bundle `bundle_hash` names, or holding another memory count than
    /// the preview's, is provable fraud), 2 the midstates only; absent or
    /// 1 in listings made before either, whose blobs commit neither.
    pub blob_format: escrow_math::blob::Format,
}

impl EscrowCommitments {
    fn to_json(self) -> Value {
        let mut v = json!({
            "key_point": hex::encode(self.key_point),
            "blob_root": hex::encode(self.blob_root),
            "plain_len": self.plain_len,
            "seller_x25519": hex::encode(self.seller_x25519),
        });
        if self.blob_format != escrow_math::blob::Format::V1 {
            v["blob_format"] = json!(self.blob_format.number());
        }
        v
    }

    fn from_json(v: &Value) -> Result<EscrowCommitments, ManifestRuleError> {
        let hex32 = |name: &'static str| -> Result<[u8; 32], ManifestRuleError> {
            v.get(name)
                .and_then(Value::as_str)
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    field_err("escrow_terms", format!("`{name}` is not 32 bytes of hex"))
                })
        };
        Ok(EscrowCommitments {
            key_point: hex32("key_point")?,
            blob_root: hex32("blob_root")?,
            plain_len: v
                .get("plain_len")
                .and_then(Value::as_u64)
                .ok_or_else(|| field_err("escrow_terms", "`plain_len` is not an integer"))?,
            seller_x25519: hex32("seller_x25519")?,
            blob_format: match v.get("blob_format") {
                None => escrow_math::blob::Format::V1,
                Some(f) => f
                    .as_u64()
                    .and_then(escrow_math::blob::Format::from_number)
                    .ok_or_else(|| {
                        field_err(
                            "escrow_terms",
                            "`blob_format` must be 1, 2 or 3 (a newer brainctl's format?)",
                        )
                    })?,
            },
        })
    }
}

/// Builds and signs a listing, enforcing the creation limits.
pub fn build_listing(seller: &Wallet, n: &NewListing<'_>) -> Result<Value, ManifestRuleError> {
    if !(0.0..=MAX_PRICE_USD).contains(&n.price_usd) {
        return Err(field_err(
            "price",
            format!("--price-usd must be in [0, {MAX_PRICE_USD}]"),
        ));
    }
    if !(n.duration_hours > 0.0 && n.duration_hours <= MAX_LISTING_HOURS) {
        return Err(field_err(
            "expires_at",
            format!("--duration-hours must be in (0, {MAX_LISTING_HOURS}]"),
        ));
    }
    let iso = |t: i64| {
        crate::clock::python_isoformat(
            time::OffsetDateTime::from_unix_timestamp(t).expect("valid time"),
        )
    };
    let seller_pk = seller.address();
    let mut v = json!({
        "schema": LISTING_SCHEMA,
        "listing_id": n.listing_id,
        "bundle_hash": n.bundle_hash,
        "seller_pubkey": seller_pk,
        "payment_address": n.payment_address.unwrap_or(&seller_pk),
        "treasury_pubkey": null,
        "fee_bps": DEFAULT_FEE_BPS,
        "pricing": {"price_usd": n.price_usd, "max_price_usd": MAX_PRICE_USD, "currency": "USD"},
        "price_lamports": n.price_lamports,
        "visibility": n.visibility,
        "expires_at": iso(n.now + (n.duration_hours * 3600.0) as i64),
        "encrypted_bundle_uri": n.encrypted_bundle_uri,
        "metadata_uri": n.metadata_uri,
        "preview": n.preview,
        "created_at": iso(n.now),
    });
    if let Some(program) = n.escrow_program {
        v["escrow_program"] = json!(program);
    }
    if let Some(terms) = n.escrow_terms {
        v["escrow_terms"] = terms.to_json();
    }
    if let Some(settlement) = n.settlement {
        if let Some(o) = v.as_object_mut() {
            o.remove("price_lamports");
        }
        v["settlement"] = settlement.to_json();
    }
    if let Some(usd) = &n.usd_at_settle {
        if let Some(o) = v.as_object_mut() {
            o.remove("price_lamports");
        }
        v["usd_at_settle"] = serde_json::to_value(usd).expect("serializes");
    }
    sign_manifest(&mut v, seller)?;
    Listing::from_value(v.clone())?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let p = format!(
            "{}/../tests/fixtures/interop/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    }

    #[test]
    fn reference_manifests_read_and_verify() {
        let l = Listing::from_value(fixture("listing.manifest.json")).unwrap();
        assert_eq!(
            (
                l.listing_id.as_str(),
                l.price_usd,
                l.fee_bps,
                l.price_lamports
            ),
            ("20261101-0123456789ab", 12.5, 250, None)
        );
        let o = Offer::offer_from_value(fixture("offer.manifest.json")).unwrap();
        assert_eq!(
            (o.offer_id.as_str(), o.price_usd),
            ("offer-20261101-a1b2c3d4e5f6", 10.0)
        );
        let c = Offer::counter_from_value(fixture("counter.manifest.json")).unwrap();
        assert_eq!((c.price_usd, c.message.as_str()), (11.0, "meet at eleven"));
        assert!(
            Offer::offer_from_value(fixture("counter.manifest.json")).is_err(),
            "schema checked"
        );
    }

    /// Terms on a token listing carry `settlement {mint, price_units}` and
    /// price only in that mint; lamports price only SOL; both are refused.
    #[test]
    fn terms_in_a_token_price_only_in_that_token() {
        use crate::settle::Currency;
        let w = crate::wallet::Wallet::from_seed(&[7; 32]);
        let dollar = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
        let signed = |edit: &dyn Fn(&mut Value)| {
            let mut v = fixture("offer.manifest.json");
            v["buyer_pubkey"] = json!(w.address());
            v["buyer_x25519_pubkey"] = json!(w.x25519_address());
            v.as_object_mut().unwrap().remove("price_lamports");
            edit(&mut v);
            crate::bundle::sign_manifest(&mut v, &w).unwrap();
            Offer::offer_from_value(v)
        };
        let sol = Currency::Sol;
        let token = |m: &str| Currency::Token { mint: m.into() };
        let in_token = signed(&|v| {
            v["settlement"] = json!({"mint": dollar, "price_units": "3000000"});
        })
        .unwrap();
        assert_eq!(in_token.price_in(&token(dollar)), Some(3_000_000));
        assert_eq!(in_token.price_in(&sol), None, "no SOL price");
        assert_eq!(
            in_token.price_in(&token("So11111111111111111111111111111111111111112")),
            None,
            "another mint"
        );
        let in_sol = signed(&|v| v["price_lamports"] = json!(60_000_000u64)).unwrap();
        assert_eq!(in_sol.price_in(&sol), Some(60_000_000));
        assert_eq!(in_sol.price_in(&token(dollar)), None);
        for bad in [
            json!({"mint": dollar, "price_units": 3000000}),
            json!({"mint": dollar, "price_units": "-1"}),
            json!({"mint": "nope", "price_units": "1"}),
        ] {
            assert!(signed(&|v| v["settlement"] = bad.clone()).is_err(), "{bad}");
        }
        let both = signed(&|v| {
            v["price_lamports"] = json!(1);
            v["settlement"] = json!({"mint": dollar, "price_units": "1"});
        });
        assert!(both.unwrap_err().to_string().contains("two prices"));
    }

    #[test]
    fn escrow_terms_name_their_blob_format() {
        use escrow_math::blob::Format;
        let c = EscrowCommitments {
            key_point: [1; 32],
            blob_root: [2; 32],
            plain_len: 300,
            seller_x25519: [3; 32],
            blob_format: Format::V3,
        };
        let v = c.to_json();
        assert_eq!(v["blob_format"], 3);
        assert_eq!(EscrowCommitments::from_json(&v).unwrap(), c);
        let v2 = EscrowCommitments {
            blob_format: Format::V2,
            ..c
        };
        assert_eq!(v2.to_json()["blob_format"], 2);
        assert_eq!(EscrowCommitments::from_json(&v2.to_json()).unwrap(), v2);
        let old = EscrowCommitments {
            blob_format: Format::V1,
            ..c
        };
        assert!(old.to_json().get("blob_format").is_none());
        assert_eq!(EscrowCommitments::from_json(&old.to_json()).unwrap(), old);
        let mut newer = v.clone();
        newer["blob_format"] = serde_json::json!(4);
        let e = EscrowCommitments::from_json(&newer)
            .unwrap_err()
            .to_string();
        assert!(e.contains("blob_format"), "{e}");
    }

    #[test]
    fn tampered_or_out_of_range_manifests_are_refused() {
        let mut l = fixture("listing.manifest.json");
        l["pricing"]["price_usd"] = json!(1.0);
        assert!(matches!(
            Listing::from_value(l),
            Err(ManifestRuleError::Signature(_))
        ));
        // the fixture seller's seed is the bytes 1..=32
        let seller = Wallet::from_seed(&std::array::from_fn(|i| i as u8 + 1));
        let mut big = fixture("listing.manifest.json");
        big["pricing"]["price_usd"] = json!(10_000.5);
        sign_manifest(&mut big, &seller).unwrap();
        assert!(matches!(
            Listing::from_value(big),
            Err(ManifestRuleError::Field { field: "price", .. })
        ));
        let mut long = fixture("offer.manifest.json");
        long["message"] = json!("x".repeat(281));
        sign_manifest(&mut long, &Wallet::from_seed(&[33u8; 32])).unwrap();
        // signed by a key that is not buyer_pubkey: refused before the message check
        assert!(matches!(
            Offer::offer_from_value(long),
            Err(ManifestRuleError::Signature(_))
        ));
    }

    #[test]
    fn built_listing_has_parsed_tags_and_enforces_limits() {
        let seller = Wallet::from_seed(&[1u8; 32]);
        let text = std::fs::read(format!(
            "{}/../tests/fixtures/interop/all.signed.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let (_, v) = crate::bundle::verify_text(&text);
        let v = v.unwrap();
        let bundle = Bundle {
            version: 1,
            generated_at: "x".into(),
            filter_used: Default::default(),
            memories: v.memories().unwrap(),
        };
        let p = preview(&bundle, "four lessons");
        assert_eq!(
            p["tags_summary"],
            json!(["deploy", "http", "ops", "retry", "style"])
        );
        assert_eq!(
            p["categories_summary"],
            json!(["decision", "lesson", "preference", "project"])
        );
        assert!(!p.to_string().contains("staging"), "no content in previews");
        let n = NewListing {
            listing_id: "20261123-00112233aabb",
            bundle_hash: &hex::encode(v.bundle_hash),
            payment_address: None,
            price_usd: 12.5,
            price_lamports: 62_500_000,
            duration_hours: 48.0,
            visibility: "auction",
            encrypted_bundle_uri: "ar://x",
            metadata_uri: "ar://y",
            preview: p,
            now: 1_795_000_000,
            escrow_program: None,
            escrow_terms: None,
            settlement: None,
            usd_at_settle: None,
        };
        let listing = Listing::from_value(build_listing(&seller, &n).unwrap()).unwrap();
        assert_eq!(listing.currency(), crate::settle::Currency::Sol);
        assert_eq!(listing.price_units(), Some(62_500_000));
        assert_eq!(listing.price_lamports, Some(62_500_000));
        assert_eq!(listing.expires_at, 1_795_000_000 + 48 * 3600);
        assert_eq!(listing.escrow_program, None, "direct payment by default");
        let program = "GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq";
        let escrowed = build_listing(
            &seller,
            &NewListing {
                escrow_program: Some(program),
                escrow_terms: None,
                ..n.clone()
            },
        )
        .unwrap();
        assert_eq!(
            Listing::from_value(escrowed.clone())
                .unwrap()
                .escrow_program
                .as_deref(),
            Some(program),
            "signed with the manifest"
        );
        let mut forged = escrowed;
        forged["escrow_program"] = json!("11111111111111111111111111111111");
        assert!(
            Listing::from_value(forged).is_err(),
            "covered by the signature"
        );
        assert!(build_listing(
            &seller,
            &NewListing {
                duration_hours: 721.0,
                ..n.clone()
            }
        )
        .is_err());
        assert!(build_listing(
            &seller,
            &NewListing {
                price_usd: -1.0,
                ..n
            }
        )
        .is_err());
    }

    /// A token listing states its mint, program, decimals and price in base
    /// units, and no lamport price; readers refuse a listing with both
    /// prices or a price that is not an exact decimal string.
    #[test]
    fn a_token_listing_names_its_mint_and_carries_no_lamport_price() {
        let seller = Wallet::from_seed(&[1u8; 32]);
        let settlement = TokenSettlement {
            mint: [7u8; 32],
            token_program: [6u8; 32],
            decimals: 6,
            price_units: u64::MAX - 1,
        };
        let built = build_listing(
            &seller,
            &NewListing {
                listing_id: "20261126-00112233aabb",
                bundle_hash: &"ab".repeat(32),
                payment_address: None,
                price_usd: 5.0,
                price_lamports: 33_000_000,
                duration_hours: 1.0,
                visibility: "auction",
                encrypted_bundle_uri: "ar://x",
                metadata_uri: "ar://y",
                preview: json!({}),
                now: 1_795_000_000,
                escrow_program: None,
                escrow_terms: None,
                settlement: Some(settlement),
                usd_at_settle: None,
            },
        )
        .unwrap();
        assert!(built.get("price_lamports").is_none(), "one price only");
        assert_eq!(
            built["settlement"]["price_units"],
            json!("18446744073709551614"),
            "exact as a string"
        );
        let listing = Listing::from_value(built.clone()).unwrap();
        assert_eq!(listing.settlement, Some(settlement));
        assert_eq!(listing.price_lamports, None);
        assert_eq!(listing.price_units(), Some(u64::MAX - 1));
        assert_eq!(
            listing.currency(),
            crate::settle::Currency::Token {
                mint: bs58::encode([7u8; 32]).into_string()
            }
        );
        let resigned = |edit: &dyn Fn(&mut Value)| {
            let mut v = built.clone();
            edit(&mut v);
            sign_manifest(&mut v, &seller).unwrap();
            Listing::from_value(v)
        };
        for (what, edit) in [
            (
                "both prices",
                &(|v: &mut Value| v["price_lamports"] = json!(1)) as &dyn Fn(&mut Value),
            ),
            ("a number", &|v: &mut Value| {
                v["settlement"]["price_units"] = json!(5)
            }),
            ("a sign", &|v: &mut Value| {
                v["settlement"]["price_units"] = json!("+5")
            }),
            ("past u64", &|v: &mut Value| {
                v["settlement"]["price_units"] = json!("18446744073709551616")
            }),
            ("decimals past u8", &|v: &mut Value| {
                v["settlement"]["decimals"] = json!(256)
            }),
            ("a bad mint", &|v: &mut Value| {
                v["settlement"]["mint"] = json!("0OIl")
            }),
        ] {
            assert!(
                matches!(
                    resigned(edit),
                    Err(ManifestRuleError::Field {
                        field: "settlement",
                        ..
                    })
                ),
                "{what} refused"
            );
        }
    }
}
