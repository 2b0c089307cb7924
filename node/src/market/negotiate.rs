//! Negotiation: offer (buyer), counter (seller), accept / reject (seller),
//! withdraw (buyer). Manifests are signed and stored; each action posts its
//! memo with the discovery reference and the listing's payment address
//! referenced read-only, so both sides (and `listen`) find it in that
//! address's history. The price that binds is the seller-signed one in the
//! accepted offer/counter (`price_lamports`, or `settlement.price_units`
//! on a listing that settles in a token), recorded by the seller for
//! `listen`, and checked by the buyer on chain before paying.

use crate::arweave::{Source, Uploader};
use crate::chain::{Chain, ChainError, Pubkey, Sent};
use crate::market::manifest::{
    Listing, Offer, COUNTER_SCHEMA, MAX_MESSAGE_CHARS, MAX_OFFER_TTL_HOURS, OFFER_SCHEMA,
};
use crate::market::tx::post_memo;
use crate::market::MemoOp;
use crate::wallet::Wallet;
use serde_json::{json, Value};
use std::str::FromStr;

/// Why a negotiation action is refused before anything is sent.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// `--price-usd` out of range.
    #[error("--price-usd must be in [0, 10000]")]
    PriceOutOfRange,
    /// `--message` too long.
    #[error("--message is over {max} characters", max = MAX_MESSAGE_CHARS)]
    MessageTooLong,
    /// `--ttl-hours` out of range.
    #[error("--ttl-hours must be in (0, {max}]", max = MAX_OFFER_TTL_HOURS)]
    TtlOutOfRange,
    /// The accept would bind another price than the seller confirmed.
    #[error("accepting {offer_id} binds {binds} lamports, not the {expected} confirmed; nothing posted (check the offer, then accept with --expect-lamports {binds})")]
    NotTheConfirmedPrice {
        /// The offer.
        offer_id: String,
        /// What the accept would bind.
        binds: u64,
        /// What the seller confirmed.
        expected: u64,
    },
    /// A fetched manifest is not JSON.
    #[error("manifest {id} is not JSON: {source}")]
    NotJson {
        /// Its item id.
        id: String,
        /// The parser's reason.
        source: serde_json::Error,
    },
    /// The listing's payment address is not a public key.
    #[error("bad payment address in the listing")]
    BadListingPaymentAddress,
    /// A recorded payment address is not a public key.
    #[error("bad payment address on record for {listing_id}")]
    BadRecordedPaymentAddress {
        /// The listing.
        listing_id: String,
    },
    /// A signature in an address's history does not decode.
    #[error("bad signature")]
    BadSignature,
    /// The offer is another wallet's or another listing's.
    #[error("that offer is not this wallet's offer on this listing")]
    NotYourOffer,
    /// The offer is for a listing this wallet did not list.
    #[error("offer {offer_id} is for {listing_id}, which is not one of this wallet's listings")]
    NotYourListing {
        /// The offer.
        offer_id: String,
        /// Its listing.
        listing_id: String,
    },
    /// The offer was already accepted or rejected.
    #[error("offer {offer_id} was already {state}")]
    AlreadyAnswered {
        /// The offer.
        offer_id: String,
        /// Its recorded state.
        state: crate::seller::OfferState,
    },
    /// Accepting terms that fix no price in the listing's currency.
    #[error("the terms fix no price in the listing's currency (lamports for SOL, `settlement.price_units` for a token); counter them instead")]
    Unpriced,
    /// Terms in another currency than the listing's.
    #[error("the terms are in another currency than the listing settles in; price them in the listing's currency")]
    OtherCurrency,
    /// The terms an accept would bind expire before it could land.
    #[error("the terms {offer_id}'s accept would bind expire at {expires_at} (unix), within {margin} s by the chain's clock; counter with fresh terms instead", margin = ACCEPT_MARGIN_SECS)]
    TermsExpire {
        /// The offer.
        offer_id: String,
        /// When those terms expire.
        expires_at: i64,
    },
    /// A counter memo names a manifest for another offer or signer.
    #[error("counter {item} is not a counter to this offer by the party whose memo names it")]
    CounterMismatch {
        /// The counter's item id.
        item: String,
    },
    /// The buyer withdrew the offer on chain.
    #[error("the buyer withdrew {offer_id} at slot {slot}; it can't be accepted")]
    Withdrawn {
        /// The offer.
        offer_id: String,
        /// The withdraw's slot.
        slot: u64,
    },
}

/// Negotiation errors.
#[derive(Debug, thiserror::Error)]
pub enum NegotiateError {
    /// Bad input or a refused action.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Storage.
    #[error(transparent)]
    Storage(#[from] crate::arweave::StorageError),
    /// Manifests.
    #[error(transparent)]
    Manifest(#[from] crate::market::manifest::ManifestRuleError),
    /// Signing.
    #[error(transparent)]
    Sign(#[from] crate::bundle::ManifestError),
    /// The seller's state.
    #[error(transparent)]
    State(#[from] crate::seller::StateError),
}

fn iso(t: i64) -> String {
    crate::clock::python_isoformat(
        time::OffsetDateTime::from_unix_timestamp(t).expect("valid time"),
    )
}

fn check_terms(price_usd: f64, message: &str, ttl_hours: f64) -> Result<(), NegotiateError> {
    if !(0.0..=crate::market::manifest::MAX_PRICE_USD).contains(&price_usd) {
        return Err(Refusal::PriceOutOfRange.into());
    }
    if message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(Refusal::MessageTooLong.into());
    }
    if !(ttl_hours > 0.0 && ttl_hours <= MAX_OFFER_TTL_HOURS) {
        return Err(Refusal::TtlOutOfRange.into());
    }
    Ok(())
}

/// What an offer or counter proposes.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferTerms<'a> {
    /// Price in USD.
    pub price_usd: f64,
    /// The binding price in base units of `currency` (lamports for SOL).
    pub price_units: u64,
    /// What the price is in: the listing's currency.
    pub currency: crate::settle::Currency,
    /// Free text.
    pub message: &'a str,
    /// Hours the terms stand.
    pub ttl_hours: f64,
}

impl OfferTerms<'_> {
    /// The manifest's price fields: `price_lamports` for SOL, the
    /// `settlement {mint, price_units}` extension for a token.
    fn price_fields(&self, v: &mut Value) {
        match &self.currency {
            crate::settle::Currency::Sol => v["price_lamports"] = json!(self.price_units),
            crate::settle::Currency::Token { mint } => {
                v["settlement"] = crate::market::manifest::OfferTokenPrice {
                    mint: mint.clone(),
                    price_units: self.price_units,
                }
                .to_json()
            }
        }
    }

    /// Refuses terms in another currency than `listing`'s.
    fn check_currency(&self, listing: &crate::settle::Currency) -> Result<(), NegotiateError> {
        if &self.currency != listing {
            return Err(Refusal::OtherCurrency.into());
        }
        Ok(())
    }
}

/// `v` with `more`'s fields after its own (the manifests keep the field
/// order they always had: the price right after the USD price).
fn extend(v: &mut Value, more: Value) {
    if let (Some(v), Value::Object(more)) = (v.as_object_mut(), more) {
        v.extend(more);
    }
}

/// Builds and signs an offer manifest of `buyer` on `listing` at `now`.
pub fn offer_manifest(
    buyer: &Wallet,
    listing: &Listing,
    offer_id: &str,
    t: &OfferTerms<'_>,
    now: i64,
) -> Result<Value, NegotiateError> {
    check_terms(t.price_usd, t.message, t.ttl_hours)?;
    t.check_currency(&listing.currency())?;
    let mut v = json!({
        "schema": OFFER_SCHEMA,
        "offer_id": offer_id,
        "listing_id": listing.listing_id,
        "buyer_pubkey": buyer.address(),
        "buyer_x25519_pubkey": buyer.x25519_address(),
        "offered_price_usd": t.price_usd,
    });
    t.price_fields(&mut v);
    extend(
        &mut v,
        json!({
            "visibility": listing.visibility,
            "message": t.message,
            "expires_at": iso(now + (t.ttl_hours * 3600.0) as i64),
            "created_at": iso(now),
        }),
    );
    crate::bundle::sign_manifest(&mut v, buyer)?;
    Offer::offer_from_value(v.clone())?;
    Ok(v)
}

/// Builds and signs a counter manifest of `from` to `offer_id` at `now`.
pub fn counter_manifest(
    from: &Wallet,
    offer_id: &str,
    t: &OfferTerms<'_>,
    now: i64,
) -> Result<Value, NegotiateError> {
    check_terms(t.price_usd, t.message, t.ttl_hours)?;
    let mut v = json!({
        "schema": COUNTER_SCHEMA,
        "parent_offer_id": offer_id,
        "from_pubkey": from.address(),
        "counter_price_usd": t.price_usd,
    });
    t.price_fields(&mut v);
    extend(
        &mut v,
        json!({
            "message": t.message,
            "expires_at": iso(now + (t.ttl_hours * 3600.0) as i64),
            "created_at": iso(now),
        }),
    );
    crate::bundle::sign_manifest(&mut v, from)?;
    Offer::counter_from_value(v.clone())?;
    Ok(v)
}

/// A new offer id `offer-YYYYMMDD-<12 hex>`.
pub fn new_offer_id() -> String {
    format!("offer-{}", crate::market::list::new_listing_id())
}

async fn store_manifest(
    uploader: &Uploader,
    signer: &Wallet,
    v: &Value,
    schema: &str,
) -> Result<String, NegotiateError> {
    Ok(uploader
        .put_signed(
            signer,
            serde_json::to_vec(v).expect("json"),
            "application/json",
            schema,
        )
        .await?)
}

/// Reads an offer or counter manifest by item id.
pub async fn fetch_offer(
    source: &Source,
    id: &str,
    counter: bool,
) -> Result<Offer, NegotiateError> {
    let bytes = source.fetch(id, 256 * 1024).await?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|source| Refusal::NotJson {
        id: id.into(),
        source,
    })?;
    Ok(if counter {
        Offer::counter_from_value(v)?
    } else {
        Offer::offer_from_value(v)?
    })
}

fn pay_to(listing: &Listing) -> Result<Pubkey, NegotiateError> {
    Pubkey::from_str(&listing.payment_address).map_err(|_| Refusal::BadListingPaymentAddress.into())
}

/// Buyer: signs and stores an offer, posts `offer:<listing>:<item>:<buyer>`.
/// Returns (offer item id, offer id, tx).
pub async fn make_offer(
    chain: &Chain,
    buyer: &Wallet,
    uploader: &Uploader,
    listing: &Listing,
    terms: &OfferTerms<'_>,
) -> Result<(String, String, Sent), NegotiateError> {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let offer_id = new_offer_id();
    let v = offer_manifest(buyer, listing, &offer_id, terms, now)?;
    let item = store_manifest(uploader, buyer, &v, OFFER_SCHEMA).await?;
    let op = MemoOp::Offer {
        listing_id: listing.listing_id.clone(),
        offer_arweave_id: item.clone(),
        buyer_pubkey: buyer.address(),
    };
    let sent = post_memo(chain, buyer, &op, &pay_to(listing)?).await?;
    Ok((item, offer_id, sent))
}

/// Seller: signs and stores a counter to `offer`, posts
/// `counter:<offer>:<item>:<seller>`. Returns (counter item id, tx).
pub async fn make_counter(
    chain: &Chain,
    seller: &Wallet,
    uploader: &Uploader,
    offer: &Offer,
    pay_to: &Pubkey,
    terms: &OfferTerms<'_>,
) -> Result<(String, Sent), NegotiateError> {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let v = counter_manifest(seller, &offer.offer_id, terms, now)?;
    let item = store_manifest(uploader, seller, &v, COUNTER_SCHEMA).await?;
    let op = MemoOp::Counter {
        offer_id: offer.offer_id.clone(),
        counter_arweave_id: item.clone(),
        counterer_pubkey: seller.address(),
    };
    let sent = post_memo(chain, seller, &op, pay_to).await?;
    Ok((item, sent))
}

/// The slot of transaction `signature` if it succeeded and `signer`
/// signed it (a memo anyone could have posted counts only then).
async fn signed_slot(
    chain: &Chain,
    signature: &str,
    signer: &str,
) -> Result<Option<u64>, NegotiateError> {
    let sig = crate::chain::Signature::from_str(signature).map_err(|_| Refusal::BadSignature)?;
    Ok(chain
        .transaction(&sig)
        .await?
        .filter(|tx| tx.succeeded && tx.signed_by(signer))
        .map(|tx| tx.slot))
}

/// The slot of a successful transaction in `pay_to`'s history, signed by
/// `signer`, carrying a memo `wanted` accepts.
pub async fn find_signed_memo(
    chain: &Chain,
    pay_to: &Pubkey,
    signer: &str,
    wanted: impl Fn(&MemoOp) -> bool,
) -> Result<Option<u64>, NegotiateError> {
    for (signature, op) in crate::market::status::memo_ops(chain, pay_to).await? {
        if !wanted(&op) {
            continue;
        }
        if let Some(slot) = signed_slot(chain, &signature, signer).await? {
            return Ok(Some(slot));
        }
    }
    Ok(None)
}

/// Buyer: the slot of the seller's `accept` of `offer_id`, if any.
pub async fn find_accept(
    chain: &Chain,
    listing: &Listing,
    offer_id: &str,
) -> Result<Option<u64>, NegotiateError> {
    find_signed_memo(
        chain,
        &pay_to(listing)?,
        &listing.seller_pubkey,
        |op| matches!(op, MemoOp::Accept { offer_id: o } if o == offer_id),
    )
    .await
}

/// A counter to an offer, as its memo names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterRef {
    /// The counter manifest's Arweave item id.
    pub item: String,
    /// Who countered (and signed the memo): the seller or the offer's buyer.
    pub counterer: String,
}

/// What an offer's accept binds, by the protocol's one rule (the indexer's
/// fold applies the same): the newest counter to the offer signed by its
/// counterer, the listing's seller or the offer's buyer, posted before the
/// seller's first accept; no counter: the offer's own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// Whether the seller's accept is on chain. Without one, `counter` is
    /// the newest counter so far: what an accept sent now would bind.
    pub accepted: bool,
    /// The counter whose terms bind (`None`: the offer's).
    pub counter: Option<CounterRef>,
}

/// Reads [`Bound`] for `offer` from `pay_to`'s history (oldest first, so
/// a counter or accept anyone posts later never changes what bound).
pub async fn bound_counter(
    chain: &Chain,
    pay_to: &Pubkey,
    offer_id: &str,
    seller: &str,
    buyer: &str,
) -> Result<Bound, NegotiateError> {
    let mut ops = crate::market::status::memo_ops(chain, pay_to).await?;
    ops.reverse();
    let mut newest = None;
    for (signature, op) in ops {
        match op {
            MemoOp::Counter {
                offer_id: o,
                counter_arweave_id,
                counterer_pubkey,
            } if o == offer_id && (counterer_pubkey == seller || counterer_pubkey == buyer) => {
                // (a counter memo someone else signed is passed over)
                let signed = signed_slot(chain, &signature, &counterer_pubkey).await?;
                newest = match signed {
                    Some(_) => Some(CounterRef {
                        item: counter_arweave_id,
                        counterer: counterer_pubkey,
                    }),
                    None => newest,
                };
            }
            MemoOp::Accept { offer_id: o } if o == offer_id => {
                let signed = signed_slot(chain, &signature, seller).await?;
                if signed.is_some() {
                    return Ok(Bound {
                        accepted: true,
                        counter: newest,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(Bound {
        accepted: false,
        counter: newest,
    })
}

/// Buyer: what the seller's accept of `offer` (this buyer's offer on
/// `listing`) binds ([`bound_counter`]). A counter posted after the accept
/// is never paid (nor is any counter without an accept): neither side can
/// move agreed terms.
pub async fn find_counter(
    chain: &Chain,
    listing: &Listing,
    offer: &Offer,
) -> Result<Bound, NegotiateError> {
    bound_counter(
        chain,
        &pay_to(listing)?,
        &offer.offer_id,
        &listing.seller_pubkey,
        &offer.from_pubkey,
    )
    .await
}

/// Buyer: counters the seller's terms on this buyer's own `offer` on
/// `listing` (the protocol lets either party counter): the counter is
/// signed, stored and posted to the listing's payment address. Should the
/// seller accept it, these are the terms that bind ([`bound_counter`]).
pub async fn counter_as_buyer(
    chain: &Chain,
    buyer: &Wallet,
    uploader: &Uploader,
    listing: &Listing,
    offer: &Offer,
    terms: &OfferTerms<'_>,
) -> Result<(String, Sent), NegotiateError> {
    if offer.from_pubkey != buyer.address()
        || offer.listing_id.as_deref() != Some(listing.listing_id.as_str())
    {
        return Err(Refusal::NotYourOffer.into());
    }
    terms.check_currency(&listing.currency())?;
    make_counter(chain, buyer, uploader, offer, &pay_to(listing)?, terms).await
}

/// Seller: the slot of the buyer's `withdraw` of `offer`, if any.
pub async fn find_withdraw(
    chain: &Chain,
    pay_to: &Pubkey,
    offer: &Offer,
) -> Result<Option<u64>, NegotiateError> {
    find_signed_memo(
        chain,
        pay_to,
        &offer.from_pubkey,
        |op| matches!(op, MemoOp::Withdraw { offer_id: o } if *o == offer.offer_id),
    )
    .await
}

/// Buyer: withdraws an own offer on `listing`.
pub async fn withdraw(
    chain: &Chain,
    buyer: &Wallet,
    listing: &Listing,
    offer: &Offer,
) -> Result<Sent, NegotiateError> {
    if offer.from_pubkey != buyer.address()
        || offer.listing_id.as_deref() != Some(listing.listing_id.as_str())
    {
        return Err(Refusal::NotYourOffer.into());
    }
    let op = MemoOp::Withdraw {
        offer_id: offer.offer_id.clone(),
    };
    Ok(post_memo(chain, buyer, &op, &pay_to(listing)?).await?)
}

/// The seller's answer to an offer, as recorded and posted.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Answer {
    /// The offer.
    pub offer_id: String,
    /// Where the seller now stands on it.
    pub state: crate::seller::OfferState,
    /// The price that applies (the counter's, once countered).
    pub price_lamports: u64,
    /// The seller's counter item, if countered now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_item_id: Option<String>,
    /// The memo transaction.
    pub signature: String,
}

/// The seller's own listing `offer` is for, from the seller's state.
pub fn our_listing(
    db: &crate::seller::ListenDb,
    offer: &Offer,
) -> Result<crate::seller::ListingRecord, NegotiateError> {
    let id = offer.listing_id.clone().unwrap_or_default();
    db.listings()?
        .into_iter()
        .find(|l| l.listing_id == id)
        .ok_or_else(|| {
            Refusal::NotYourListing {
                offer_id: offer.offer_id.clone(),
                listing_id: id,
            }
            .into()
        })
}

fn payment_address(l: &crate::seller::ListingRecord) -> Result<Pubkey, NegotiateError> {
    l.payment_address.parse().map_err(|_| {
        Refusal::BadRecordedPaymentAddress {
            listing_id: l.listing_id.clone(),
        }
        .into()
    })
}

/// The seller counters `offer` (item `offer_item`) with `terms`: the
/// counter is signed, stored and posted, then recorded so `listen` binds
/// this buyer to it once accepted.
pub async fn counter_offer(
    chain: &Chain,
    seller: &Wallet,
    uploader: &Uploader,
    db: &mut crate::seller::ListenDb,
    offer: &Offer,
    offer_item: &str,
    terms: &OfferTerms<'_>,
) -> Result<Answer, NegotiateError> {
    let listing = our_listing(db, offer)?;
    terms.check_currency(&listing.currency)?;
    let (item, sent) = make_counter(
        chain,
        seller,
        uploader,
        offer,
        &payment_address(&listing)?,
        terms,
    )
    .await?;
    let expires_at =
        time::OffsetDateTime::now_utc().unix_timestamp() + (terms.ttl_hours * 3600.0) as i64;
    let mut answer = record_answer(
        db,
        (offer, offer_item, listing.listing_id),
        (terms.price_units, expires_at, Some(item.clone())),
        crate::seller::OfferState::Countered,
        sent.signature.to_string(),
    )?;
    answer.counter_item_id = Some(item);
    Ok(answer)
}

/// Records the seller's stand on `offer` (its item `offer_item`, of
/// listing `listing_id`) at `terms`, for `listen`; returns the answer
/// the memo `signature` posted.
fn record_answer(
    db: &mut crate::seller::ListenDb,
    (offer, offer_item, listing_id): (&Offer, &str, String),
    (price, expires_at, counter): BoundTerms,
    state: crate::seller::OfferState,
    signature: String,
) -> Result<Answer, NegotiateError> {
    db.upsert_offer(&crate::seller::OfferRecord {
        offer_id: offer.offer_id.clone(),
        listing_id,
        buyer: offer.from_pubkey.clone(),
        price_lamports: price,
        expires_at,
        state,
        counter_manifest_id: counter,
        offer_manifest_id: offer_item.into(),
    })?;
    Ok(Answer {
        offer_id: offer.offer_id.clone(),
        state,
        price_lamports: price,
        counter_item_id: None,
        signature,
    })
}

/// Terms an accept binds: (price in the listing's currency, expiry,
/// counter item).
type BoundTerms = (u64, i64, Option<String>);

/// The price (in `currency`, the listing's), expiry and counter item of
/// what `bound` names for `offer`: the seller's own recorded counter when
/// it is the one, else the counter manifest itself (fetched and checked:
/// signed by its counterer, for this offer), else the offer's terms.
async fn bound_terms(
    source: &Source,
    offer: &Offer,
    bound: &Bound,
    recorded: Option<&crate::seller::OfferRecord>,
    currency: &crate::settle::Currency,
) -> Result<BoundTerms, NegotiateError> {
    let Some(c) = &bound.counter else {
        return Ok((
            offer.price_in(currency).ok_or(Refusal::Unpriced)?,
            offer.expires_at,
            None,
        ));
    };
    if let Some(r) = recorded.filter(|r| r.counter_manifest_id.as_deref() == Some(&c.item)) {
        return Ok((r.price_lamports, r.expires_at, Some(c.item.clone())));
    }
    let m = fetch_offer(source, &c.item, true).await?;
    if m.offer_id != offer.offer_id || m.from_pubkey != c.counterer {
        return Err(Refusal::CounterMismatch {
            item: c.item.clone(),
        }
        .into());
    }
    Ok((
        m.price_in(currency).ok_or(Refusal::Unpriced)?,
        m.expires_at,
        Some(c.item.clone()),
    ))
}

/// Seconds of validity an accept's terms must have left by the chain's
/// clock: an accept landing after they expire binds nothing.
pub const ACCEPT_MARGIN_SECS: i64 = 30;

/// The seller accepts or rejects `offer`. An accept binds what the chain
/// says it binds ([`bound_counter`], the indexer's rule): the newest
/// counter by either party (a buyer who countered last is held to its own
/// counter), else the offer; refused when already decided, when those
/// terms name no lamports or expire within [`ACCEPT_MARGIN_SECS`] by the
/// chain's clock, or when the buyer withdrew. With `expect_lamports`, an
/// accept that would bind any other price is refused before anything is
/// posted. After the accept lands its binding is read again (a counter
/// that landed first wins) and that is what is recorded for `listen`. An
/// accept already on chain (a crash before recording) is recorded, not
/// posted again.
#[allow(clippy::too_many_arguments)]
pub async fn answer_offer(
    chain: &Chain,
    source: &Source,
    seller: &Wallet,
    db: &mut crate::seller::ListenDb,
    offer: &Offer,
    offer_item: &str,
    accept: bool,
    expect_lamports: Option<u64>,
) -> Result<Answer, NegotiateError> {
    use crate::seller::OfferState;
    let listing = our_listing(db, offer)?;
    let recorded = db.offer(&offer.offer_id)?;
    if let Some(r) = recorded.as_ref().filter(|r| r.state.is_final()) {
        return Err(Refusal::AlreadyAnswered {
            offer_id: offer.offer_id.clone(),
            state: r.state,
        }
        .into());
    }
    let pay_to = payment_address(&listing)?;
    let seller_address = seller.address();
    let bound = |chain| {
        bound_counter(
            chain,
            &pay_to,
            &offer.offer_id,
            &seller_address,
            &offer.from_pubkey,
        )
    };
    if !accept {
        return reject_offer(chain, seller, db, offer, offer_item, &listing, recorded).await;
    }
    let before = bound(chain).await?;
    let (price, expires_at, counter) =
        bound_terms(source, offer, &before, recorded.as_ref(), &listing.currency).await?;
    if let Some(expected) = expect_lamports.filter(|e| *e != price) {
        return Err(Refusal::NotTheConfirmedPrice {
            offer_id: offer.offer_id.clone(),
            binds: price,
            expected,
        }
        .into());
    }
    if let Some(slot) = find_withdraw(chain, &pay_to, offer).await? {
        return Err(Refusal::Withdrawn {
            offer_id: offer.offer_id.clone(),
            slot,
        }
        .into());
    }
    let signature = if before.accepted {
        None
    } else {
        let now = chain.cluster_time().await?;
        if expires_at <= now + ACCEPT_MARGIN_SECS {
            return Err(Refusal::TermsExpire {
                offer_id: offer.offer_id.clone(),
                expires_at,
            }
            .into());
        }
        let op = MemoOp::Accept {
            offer_id: offer.offer_id.clone(),
        };
        Some(post_memo(chain, seller, &op, &pay_to).await?.signature)
    };
    // what the chain bound: a counter that landed before the accept wins
    let after = bound(chain).await?;
    let bound = if after.counter == before.counter {
        (price, expires_at, counter)
    } else {
        bound_terms(source, offer, &after, recorded.as_ref(), &listing.currency).await?
    };
    record_answer(
        db,
        (offer, offer_item, listing.listing_id),
        bound,
        OfferState::Accepted,
        signature.map(|s| s.to_string()).unwrap_or_default(),
    )
}

/// The seller rejects `offer`: posts `reject` and records it.
async fn reject_offer(
    chain: &Chain,
    seller: &Wallet,
    db: &mut crate::seller::ListenDb,
    offer: &Offer,
    offer_item: &str,
    listing: &crate::seller::ListingRecord,
    recorded: Option<crate::seller::OfferRecord>,
) -> Result<Answer, NegotiateError> {
    let terms = match recorded {
        Some(r) => (r.price_lamports, r.expires_at, r.counter_manifest_id),
        None => (
            offer.price_in(&listing.currency).unwrap_or(0),
            offer.expires_at,
            None,
        ),
    };
    let op = MemoOp::Reject {
        offer_id: offer.offer_id.clone(),
    };
    let sent = post_memo(chain, seller, &op, &payment_address(listing)?).await?;
    record_answer(
        db,
        (offer, offer_item, listing.listing_id.clone()),
        terms,
        crate::seller::OfferState::Rejected,
        sent.signature.to_string(),
    )
}
