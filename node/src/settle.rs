//! The settlement rules (DESIGN.md §Settlement) as one pure function: does
//! this transaction count as a paid buy of this listing? Every way it can
//! fail is a [`Rejection`] with its reason; nothing here touches the
//! network or the disk, so every hostile case is a unit test.
//!
//! One implementation for everyone who judges a buy: the seller's `listen`
//! daemon, the indexer's fold, and the indexer's `/settle` (which price
//! binds a buyer). Commitment is the caller's job (`listen` only feeds
//! transactions read at the required commitment).

use crate::chain::fees::split_with_fee;
use crate::chain::ParsedTx;
use crate::memo::MemoOp;
use serde::Serialize;

/// What a listing is paid in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Currency {
    /// Lamports, by top-level System transfers to the payment address.
    #[default]
    Sol,
    /// Base units of an SPL Token or Token-2022 mint, by top-level
    /// `transferChecked`s into token accounts the payment address owns:
    /// what arrived there counts (a fee the mint withholds does not).
    Token {
        /// The mint (base58).
        mint: String,
    },
}

impl Currency {
    /// Whether it is SOL.
    pub fn is_sol(&self) -> bool {
        *self == Currency::Sol
    }

    /// What `payer` paid `to` in this currency in `tx`.
    pub fn paid(&self, tx: &ParsedTx, payer: &str, to: &str) -> u64 {
        match self {
            Currency::Sol => tx.paid(payer, to),
            Currency::Token { mint } => tx.token_received(payer, to, mint),
        }
    }

    /// The rejection of a buy that paid the seller `paid` of `price`.
    fn underpaid(&self, paid: u64, price: u64) -> Rejection {
        match self {
            Currency::Sol => Rejection::Underpaid { paid, price },
            Currency::Token { mint } => Rejection::UnderpaidToken {
                paid,
                price,
                mint: mint.clone(),
            },
        }
    }

    /// The rejection of a buy that paid the treasury `paid` of `due`.
    fn fee_unpaid(&self, paid: u64, due: u64) -> Rejection {
        match self {
            Currency::Sol => Rejection::FeeUnpaid { paid, due },
            Currency::Token { mint } => Rejection::FeeUnpaidToken {
                paid,
                due,
                mint: mint.clone(),
            },
        }
    }
}

/// What the seller's signed listing fixed, plus what the chain said since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingTerms {
    /// Listing id.
    pub listing_id: String,
    /// Where the price must be paid (for a token, the owner of the token
    /// account it arrives in).
    pub payment_address: String,
    /// Price from the signed manifest, in base units of `currency`
    /// (lamports for SOL; offers and the fee are in the same units).
    pub price_lamports: u64,
    /// What the price is paid in.
    pub currency: Currency,
    /// Expiry (unix seconds) from the signed manifest.
    pub expires_at: i64,
    /// Slot of a valid `cancel` by the seller, if any.
    pub cancelled_at_slot: Option<u64>,
    /// Protocol fee on this cluster: (treasury, fee_bps), charged on the
    /// price that applies (listed or negotiated), rounded up.
    pub fee: Option<(String, u64)>,
    /// Priced in USD at settle time (`price_lamports` is then unused): the
    /// buy's own `quote_usd` fixes its lamports.
    pub usd: Option<UsdTerms>,
}

/// A listing priced in USD at settle time (SOL paid): the price account,
/// feed and rule its buys' `quote_usd` must apply, the USD it converts and
/// the tolerance below the quote the seller takes (the buyer converts
/// before its slot, the program at it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct UsdTerms {
    /// The Pyth price account (base58).
    pub price_account: String,
    /// The feed (hex in JSON).
    #[serde(with = "crate::crypto::hex32")]
    pub feed_id: [u8; 32],
    /// The listing's price in micro-dollars.
    pub usd_micros: u64,
    /// Oldest price taken.
    pub max_age_secs: u32,
    /// Widest confidence taken (bps of the price).
    pub max_conf_bps: u16,
    /// How far below the quote a payment still counts (bps).
    pub tolerance_bps: u16,
    /// Decimals of the currency paid (9: SOL; terms stored before tokens
    /// were priced at settle time are SOL's).
    #[serde(default = "sol_decimals")]
    pub decimals: u8,
}

fn sol_decimals() -> u8 {
    9
}

impl UsdTerms {
    /// The base units the buy's own quote fixed: its `UsdQuoted` event of
    /// this price account and feed, for these micro-dollars in the
    /// listing's currency (its decimals), under a rule
    /// at least as strict as the listing's (the highest, where a buy
    /// quoted more than once: it cannot choose the lower of two prices).
    pub fn quoted(&self, tx: &ParsedTx) -> Result<u64, Rejection> {
        crate::escrow::events_in(tx)
            .into_iter()
            .filter_map(|e| match e {
                crate::escrow::EscrowEvent::UsdQuoted(q)
                    if q.price_update.to_string() == self.price_account
                        && q.feed_id == self.feed_id
                        && q.usd_micros == self.usd_micros
                        && q.decimals == self.decimals
                        && q.max_age_secs <= self.max_age_secs
                        && q.max_conf_bps <= self.max_conf_bps =>
                {
                    Some(q.units)
                }
                _ => None,
            })
            .max()
            .ok_or(Rejection::NoUsdQuote)
    }

    /// The least a payment against `due` lamports counts for.
    pub fn floor(&self, due: u64) -> u64 {
        due - (u128::from(due) * u128::from(self.tolerance_bps) / 10_000) as u64
    }
}

/// An offer/counter the seller accepted, which fixes another price for one buyer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiatedTerms {
    /// Offer id.
    pub offer_id: String,
    /// The only buyer the price is for.
    pub buyer: String,
    /// Agreed price, in base units of the listing's currency (lamports
    /// for SOL).
    pub price_lamports: u64,
    /// Expiry of the accepted offer/counter (unix seconds).
    pub expires_at: i64,
}

/// A buy that counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifiedBuy {
    /// Transaction signature.
    pub signature: String,
    /// Listing.
    pub listing_id: String,
    /// The buyer (sole signer and payer).
    pub buyer: String,
    /// The buyer's X25519 key from the memo.
    pub buyer_x25519: String,
    /// Paid to the payment address, in base units of the listing's
    /// currency (lamports for SOL).
    pub paid_lamports: u64,
    /// The price it was held to.
    pub price_lamports: u64,
    /// The offer whose price applied, if negotiated.
    pub offer_id: Option<String>,
    /// Slot.
    pub slot: u64,
    /// The treasury's share the seller's release must pay (an x402
    /// payment where the protocol fee applies: it paid the seller the
    /// whole price, x402 paying one recipient); 0 otherwise.
    pub fee_at_release: u64,
}

/// Why a transaction does not count as a buy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Rejection {
    /// `meta.err` is set.
    #[error("the transaction failed on chain")]
    TxFailed,
    /// No `buy` memo for this listing.
    #[error("no buy memo for this listing")]
    NoBuyMemo,
    /// More than one buy memo for this listing.
    #[error("more than one buy memo for this listing")]
    AmbiguousBuy,
    /// The transaction has signers besides the buyer (a buy is signed by the buyer only).
    #[error("signed by {signers} accounts; a buy is signed by the buyer alone")]
    ExtraSigners {
        /// How many.
        signers: usize,
    },
    /// A listing priced in USD at settle time, bought without the
    /// program's quote of its price account, feed and rule.
    #[error("no quote_usd of the listing's price account, feed and rule in the buy")]
    NoUsdQuote,
    /// Paid less than the price.
    #[error("underpaid: {paid} lamports to the payment address, {price} due")]
    Underpaid {
        /// Paid by the buyer to the payment address.
        paid: u64,
        /// Due.
        price: u64,
    },
    /// Paid less than the price, in a token.
    #[error("underpaid: {paid} base units of {mint} arrived in the payment address's token accounts, {price} due")]
    UnderpaidToken {
        /// Arrived from the buyer's checked transfers.
        paid: u64,
        /// Due.
        price: u64,
        /// The listing's mint.
        mint: String,
    },
    /// The protocol fee was not paid, in a token.
    #[error("protocol fee unpaid: {paid} of {due} base units of {mint} to the treasury's token accounts")]
    FeeUnpaidToken {
        /// Arrived.
        paid: u64,
        /// Due.
        due: u64,
        /// The listing's mint.
        mint: String,
    },
    /// The protocol fee was not paid.
    #[error("protocol fee unpaid: {paid} of {due} lamports to the treasury")]
    FeeUnpaid {
        /// Paid.
        paid: u64,
        /// Due.
        due: u64,
    },
    /// The seller cancelled the listing before this buy.
    #[error("the listing was cancelled at slot {cancelled_at} (buy at slot {slot})")]
    ListingCancelled {
        /// Cancel slot.
        cancelled_at: u64,
        /// Buy slot.
        slot: u64,
    },
    /// The listing had expired at the buy's block time.
    #[error("the listing expired at {expires_at}, the buy's block time is {block_time}")]
    ListingExpired {
        /// Expiry.
        expires_at: i64,
        /// Block time.
        block_time: i64,
    },
    /// The node reported no block time, so expiry can't be judged.
    #[error("no block time for the buy; expiry cannot be checked")]
    NoBlockTime,
    /// An escrow listing's buy without its own `deposit` into this listing's account.
    #[error("no escrow deposit into {listing_account} in this transaction")]
    NoEscrowDeposit {
        /// The listing account expected.
        listing_account: String,
    },
    /// The program held another amount, or another mint, than the signed
    /// manifest's price: the on-chain listing's terms are not the
    /// manifest's.
    #[error("the escrow holds {held} base units of {held_mint} (the default key: SOL), the manifest prices {price}: the on-chain listing's terms are not the manifest's")]
    EscrowTermsDiffer {
        /// What the program's deposit event says it holds.
        held: u64,
        /// In which mint.
        held_mint: String,
        /// The manifest's price.
        price: u64,
    },
    /// The escrow account is missing or not this buyer's on this listing.
    #[error("no escrow of this buyer on this listing on chain")]
    EscrowMissing,
    /// The escrow was already paid out or refunded.
    #[error("the escrow is already {status:?}")]
    EscrowSettled {
        /// Its status.
        status: crate::escrow::EscrowStatus,
    },
    /// The buyer took the escrow back (after the release window) before
    /// the release landed: nothing is left to release.
    #[error("the buyer was refunded from the escrow before the release")]
    RefundedBeforeRelease,
    /// The escrow seals to another X25519 key than the memo names.
    #[error("the escrow records another X25519 key than the buy memo")]
    EscrowKeyMismatch,
    /// The deposit binds a blinding point that is not the one both parties
    /// derive (no reveal could satisfy it): declined, returned in full.
    #[error("the deposit binds a blinding point no reveal can satisfy; declined (the buyer takes it all back with `marketplace refund`)")]
    BlindingDeclined,
    /// Too little of the release window was left to reveal safely (a
    /// reveal landing after the window fails yet publishes the key):
    /// declined, returned in full.
    #[error("too little of the release window was left to reveal safely (it ends at unix time {deadline}); declined, returned in full")]
    RevealTooLate {
        /// End of the release window.
        deadline: i64,
    },
    /// The listing was convicted of fraud (another buyer proved its blob
    /// lies): no reveal is sent to it; the deposit is declined, returned
    /// in full.
    #[error("the listing was convicted of fraud; declined, returned in full")]
    ListingConvicted,
    /// The listing's committed key point is none the seller's wallet
    /// derives on this cluster: no reveal could satisfy it; declined at
    /// once, returned in full.
    #[error("the listing's committed key point is not derived from the seller's wallet on this cluster; declined, returned in full")]
    ForeignKey,
}

/// What every buy must show before its payment is looked at: success, one
/// `buy` memo of this listing, the buyer as sole signer, the listing not
/// cancelled before and not expired at the buy.
struct Claim {
    buyer: String,
    buyer_x25519: String,
    block_time: i64,
}

fn claim(tx: &ParsedTx, listing: &ListingTerms) -> Result<Claim, Rejection> {
    if !tx.succeeded {
        return Err(Rejection::TxFailed);
    }
    // a buy memo names the buyer's X25519 key; an x402 one implies it
    let buys: Vec<Option<String>> = tx
        .memos
        .iter()
        .filter_map(|m| match MemoOp::parse(m) {
            Ok(MemoOp::Buy {
                listing_id,
                buyer_x25519,
            }) if listing_id == listing.listing_id => Some(Some(buyer_x25519)),
            _ if crate::memo::x402_buy_listing(m) == Some(listing.listing_id.as_str()) => {
                Some(None)
            }
            _ => None,
        })
        .collect();
    let named_x25519 = match buys.as_slice() {
        [] => return Err(Rejection::NoBuyMemo),
        [one] => one.clone(),
        _ => return Err(Rejection::AmbiguousBuy),
    };
    let buyer = buyer_of(tx, &listing.payment_address).ok_or(Rejection::ExtraSigners {
        signers: tx.signers.len(),
    })?;
    let buyer_x25519 = match named_x25519 {
        Some(x) => x,
        None => x25519_of(buyer).ok_or(Rejection::NoBuyMemo)?,
    };
    // a payment the seller's own node co-signed (an x402 sale: it checks
    // the listing is live before it signs) was accepted by the seller: a
    // cancel landing between its signature and its landing never takes
    // the buyer's money
    let cosigned = cosigned_by_payee(tx, listing);
    if let Some(cancelled_at) = listing.cancelled_at_slot.filter(|_| !cosigned) {
        if cancelled_at <= tx.slot {
            return Err(Rejection::ListingCancelled {
                cancelled_at,
                slot: tx.slot,
            });
        }
    }
    let block_time = tx.block_time.ok_or(Rejection::NoBlockTime)?;
    if block_time >= listing.expires_at {
        return Err(Rejection::ListingExpired {
            expires_at: listing.expires_at,
            block_time,
        });
    }
    Ok(Claim {
        buyer: buyer.clone(),
        buyer_x25519,
        block_time,
    })
}

/// Who bought in `tx`, a buy paid to `payment_address`: its only signer,
/// or (an x402 payment) the second of two when the first, the fee payer,
/// is the payment address itself (the seller's node co-signed after
/// checking the payment; nobody else can make such a transaction).
pub fn buyer_of<'a>(tx: &'a ParsedTx, payment_address: &str) -> Option<&'a String> {
    match tx.signers.as_slice() {
        [buyer] => Some(buyer),
        [fee_payer, buyer] if fee_payer == payment_address && buyer != fee_payer => Some(buyer),
        _ => None,
    }
}

/// The X25519 key (base58) of a buyer's Ed25519 `pubkey` (base58): what
/// an x402 buy seals the key to.
pub fn x25519_of(pubkey: &str) -> Option<String> {
    let ed = crate::crypto::b58_array::<32>(pubkey)?;
    crate::wallet::ed25519_pub_to_x25519(&ed).map(|x| bs58::encode(x).into_string())
}

/// The part of an escrow buy the transaction alone shows: the claim as for
/// any buy and the one deposit the program made in it, into
/// `listing_account` by the buyer (one escrow per buyer and listing is open
/// at a time, and each deposit is its own transaction, so no deposit is
/// counted twice), holding exactly the manifest's price in the manifest's
/// currency by the program's own event: a seller that listed on chain at
/// another price than its signed manifest names sells nothing that
/// counts. The program holds the deposit to the on-chain listing's price,
/// so negotiated prices (an accepted offer) never apply to escrow
/// listings. What the indexer folds; the amount counted is the one held.
pub fn verify_escrow_deposit(
    tx: &ParsedTx,
    listing: &ListingTerms,
    listing_account: &str,
) -> Result<VerifiedBuy, Rejection> {
    let c = claim(tx, listing)?;
    let held = match crate::escrow::deposits_in(tx).as_slice() {
        [d] if d.listing == listing_account && d.buyer == c.buyer => d.held,
        _ => {
            return Err(Rejection::NoEscrowDeposit {
                listing_account: listing_account.into(),
            })
        }
    };
    let paid = match held {
        Some(h) => {
            let mint = match &listing.currency {
                Currency::Sol => crate::chain::Pubkey::default().to_string(),
                Currency::Token { mint } => mint.clone(),
            };
            if h.amount != listing.price_lamports || h.mint.to_string() != mint {
                return Err(Rejection::EscrowTermsDiffer {
                    held: h.amount,
                    held_mint: h.mint.to_string(),
                    price: listing.price_lamports,
                });
            }
            h.amount
        }
        None => listing.price_lamports,
    };
    Ok(VerifiedBuy {
        signature: tx.signature.clone(),
        listing_id: listing.listing_id.clone(),
        buyer: c.buyer,
        buyer_x25519: c.buyer_x25519,
        paid_lamports: paid,
        price_lamports: listing.price_lamports,
        offer_id: None,
        slot: tx.slot,
        fee_at_release: 0,
    })
}

/// Checks an escrow buy before a release: [`verify_escrow_deposit`], then
/// the escrow account as the chain holds it now (`escrow`, read at the
/// required commitment): this buyer's, on this listing, still deposited,
/// holding at least the price, bound to the memo's X25519 key. The fee is
/// the program's, taken on claim.
pub fn verify_escrow_buy(
    tx: &ParsedTx,
    listing: &ListingTerms,
    listing_account: &str,
    escrow: Option<&crate::escrow::EscrowAccount>,
) -> Result<VerifiedBuy, Rejection> {
    let mut v = verify_escrow_deposit(tx, listing, listing_account)?;
    let e = escrow.ok_or(Rejection::EscrowMissing)?;
    if e.listing.to_string() != listing_account || e.buyer.to_string() != v.buyer {
        return Err(Rejection::EscrowMissing);
    }
    if e.status != crate::escrow::EscrowStatus::Deposited {
        return Err(Rejection::EscrowSettled { status: e.status });
    }
    if e.amount < listing.price_lamports {
        return Err(Rejection::Underpaid {
            paid: e.amount,
            price: listing.price_lamports,
        });
    }
    if bs58::encode(e.buyer_x25519).into_string() != v.buyer_x25519 {
        return Err(Rejection::EscrowKeyMismatch);
    }
    v.paid_lamports = e.amount;
    Ok(v)
}

/// The price that binds `buyer` at `at` (unix seconds): the listed price,
/// lowered by any accepted offer (or the counter that was accepted) of
/// this buyer that is unexpired at `at`. Offers of other buyers and
/// expired ones change nothing, and an offer above the listed price never
/// raises it. Prices are in base units of the listing's currency (the
/// offer's terms priced in it). Returns the price and the offer it came
/// from, if any.
pub fn binding_price(
    listing: &ListingTerms,
    accepted: &[NegotiatedTerms],
    buyer: &str,
    at: i64,
) -> (u64, Option<String>) {
    accepted
        .iter()
        .filter(|o| o.buyer == buyer && at < o.expires_at)
        .filter(|o| o.price_lamports < listing.price_lamports)
        .min_by_key(|o| o.price_lamports)
        .map_or((listing.price_lamports, None), |o| {
            (o.price_lamports, Some(o.offer_id.clone()))
        })
}

/// Checks `tx` against `listing` and the offers the seller accepted on it
/// (`accepted`, any buyer's). A buy counts when it pays at least the price
/// binding its buyer at its block time ([`binding_price`]), and the fee on
/// that price where one is due. Returns the verified buy or why not.
pub fn verify_buy(
    tx: &ParsedTx,
    listing: &ListingTerms,
    accepted: &[NegotiatedTerms],
) -> Result<VerifiedBuy, Rejection> {
    let Claim {
        buyer,
        buyer_x25519,
        block_time,
    } = claim(tx, listing)?;
    let buyer = &buyer;
    // priced in USD at settle time: the buy's own quote, no offers; the
    // least it counts for is the quote less the listing's tolerance (the
    // buyer converts before its slot, the program at it)
    let (price, offer_id, due) = match &listing.usd {
        Some(usd) => {
            let quoted = usd.quoted(tx)?;
            (quoted, None, usd.floor(quoted))
        }
        None => {
            let (price, offer) = binding_price(listing, accepted, buyer, block_time);
            (price, offer, price)
        }
    };
    // the price is what the buyer pays in all: where a fee is due, the
    // seller's share and the treasury's (the reference's split); a buy
    // that paid the fee on top pays the seller more, and counts too
    let (seller_due, fee_due) = match &listing.fee {
        Some((_, bps)) => split_with_fee(due, *bps),
        None => (due, 0),
    };
    let paid = listing.currency.paid(tx, buyer, &listing.payment_address);
    // an x402 payment pays one recipient: the whole price to the seller,
    // whose release then carries the treasury's share
    // (docs/token-settlement.md: the release carries the fee)
    let x402 = fee_due > 0 && is_x402_payment(tx, listing);
    let (seller_due, fee_at_release) = match x402 {
        true => (due, fee_due),
        false => (seller_due, 0),
    };
    if paid < seller_due {
        return Err(listing.currency.underpaid(paid, seller_due));
    }
    if let Some((treasury, _)) = listing.fee.as_ref().filter(|_| fee_due > 0 && !x402) {
        let fee_paid = listing.currency.paid(tx, buyer, treasury);
        if fee_paid < fee_due {
            return Err(listing.currency.fee_unpaid(fee_paid, fee_due));
        }
    }
    Ok(VerifiedBuy {
        signature: tx.signature.clone(),
        listing_id: listing.listing_id.clone(),
        buyer: buyer.clone(),
        buyer_x25519,
        paid_lamports: paid,
        price_lamports: price,
        offer_id,
        slot: tx.slot,
        fee_at_release,
    })
}

/// Whether the payment address co-signed `tx` as its fee payer, beside
/// the buyer: an x402 sale, which the seller's node signs only after
/// checking the listing is live.
fn cosigned_by_payee(tx: &ParsedTx, listing: &ListingTerms) -> bool {
    tx.fee_payer() == Some(listing.payment_address.as_str()) && tx.signers.len() == 2
}

/// Whether `tx` is an x402 payment for `listing`: a buy memo of it (the
/// compact one, or the full one naming the key to seal to, which a page
/// whose wallet keeps its secret pays with), co-signed by the payment
/// address as fee payer.
fn is_x402_payment(tx: &ParsedTx, listing: &ListingTerms) -> bool {
    cosigned_by_payee(tx, listing)
        && tx.memos.iter().any(|m| {
            crate::memo::x402_buy_listing(m) == Some(listing.listing_id.as_str())
                || matches!(MemoOp::parse(m), Ok(MemoOp::Buy { listing_id, .. }) if listing_id == listing.listing_id)
        })
}

/// What the seller's release transaction `release` paid the treasury
/// toward a buy's [`VerifiedBuy::fee_at_release`]: what arrived at
/// `treasury` from `seller` in the listing's currency.
pub fn fee_paid_at_release(
    release: &ParsedTx,
    currency: &Currency,
    seller: &str,
    treasury: &str,
) -> u64 {
    currency.paid(release, seller, treasury)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::parsed_tx::Transfer;

    const LISTING: &str = "20261101-0123456789ab";
    const X25519: &str = "6tZPpkyrbRbL9PKX5WMK9dHbeCfAftmtGswHdPgULGaR";

    fn listing() -> ListingTerms {
        ListingTerms {
            listing_id: LISTING.into(),
            payment_address: "Seller".into(),
            price_lamports: 1_000,
            currency: Default::default(),
            expires_at: 2_000,
            cancelled_at_slot: None,
            fee: None,
            usd: None,
        }
    }

    fn buy_memo() -> String {
        format!("brainctl-marketplace/v1:buy:{LISTING}:{X25519}")
    }

    fn tx(paid: u64) -> ParsedTx {
        ParsedTx {
            signature: "sig".into(),
            slot: 50,
            block_time: Some(1_500),
            succeeded: true,
            signers: vec!["Buyer".into()],
            memos: vec![buy_memo()],
            transfers: vec![Transfer {
                from: "Buyer".into(),
                to: "Seller".into(),
                lamports: paid,
            }],
            token_transfers: vec![],
            token_balances: vec![],
            calls: vec![],
            inner_calls: vec![],
            legacy_deposits: vec![],
            anomalies: vec![],
        }
    }

    const PRICE_ACCOUNT: &str = "7UVimffxr9ow1uXYxsr4LHAcV58mLzhmwaeKvJ1pjLiE";

    fn usd_terms() -> UsdTerms {
        UsdTerms {
            price_account: PRICE_ACCOUNT.into(),
            feed_id: [0xef; 32],
            usd_micros: 15_000_000,
            max_age_secs: 60,
            max_conf_bps: 100,
            tolerance_bps: 100,
            decimals: 9,
        }
    }

    /// A `quote_usd` event of `units` (the program's own event bytes) as
    /// its self-CPI in a transaction, for `terms` with a rule of
    /// `max_age_secs`.
    fn quote_logs(
        terms: &UsdTerms,
        units: u64,
        max_age_secs: u32,
    ) -> Vec<crate::chain::ProgramCall> {
        let mut data = Vec::new();
        let account: crate::chain::Pubkey = terms.price_account.parse().unwrap();
        data.extend_from_slice(account.as_ref());
        data.extend_from_slice(&terms.feed_id);
        data.extend_from_slice(&15_000_000_000i64.to_le_bytes());
        data.extend_from_slice(&1_000u64.to_le_bytes());
        data.extend_from_slice(&(-8i32).to_le_bytes());
        data.extend_from_slice(&1_490i64.to_le_bytes());
        data.extend_from_slice(&terms.usd_micros.to_le_bytes());
        data.push(terms.decimals);
        data.extend_from_slice(&max_age_secs.to_le_bytes());
        data.extend_from_slice(&terms.max_conf_bps.to_le_bytes());
        data.extend_from_slice(&units.to_le_bytes());
        vec![crate::escrow::emitted("UsdQuoted", &data)]
    }

    /// A listing priced in USD at settle time counts a buy by its own
    /// quote, down to the tolerance; without a quote of its account and
    /// rule it does not count; two quotes bind the higher; the fee split
    /// applies to the floor, so a payment at the tolerance's edge that the
    /// program took also counts with a fee.
    #[test]
    fn usd_listings_count_the_buys_own_quote_within_the_tolerance() {
        let l = ListingTerms {
            usd: Some(usd_terms()),
            price_lamports: 0,
            ..listing()
        };
        let with = |paid: u64, events: Vec<crate::chain::ProgramCall>| {
            let mut t = tx(paid);
            t.inner_calls = events;
            t
        };
        let q = |units| quote_logs(&usd_terms(), units, 60);
        assert_eq!(
            verify_buy(&with(100_000_000, vec![]), &l, &[]),
            Err(Rejection::NoUsdQuote)
        );
        let b = verify_buy(&with(99_000_000, q(100_000_000)), &l, &[]).unwrap();
        assert_eq!(
            (b.price_lamports, b.paid_lamports),
            (100_000_000, 99_000_000)
        );
        assert_eq!(
            verify_buy(&with(98_999_999, q(100_000_000)), &l, &[]),
            Err(Rejection::Underpaid {
                paid: 98_999_999,
                price: 99_000_000
            })
        );
        // a looser rule than the listing's, another account: no quote
        assert_eq!(
            verify_buy(
                &with(100_000_000, quote_logs(&usd_terms(), 100_000_000, 61)),
                &l,
                &[]
            ),
            Err(Rejection::NoUsdQuote)
        );
        // a quote in another currency's decimals (a token's, for a SOL
        // listing) prices nothing
        let in_a_token = UsdTerms {
            decimals: 6,
            ..usd_terms()
        };
        assert_eq!(
            verify_buy(
                &with(100_000_000, quote_logs(&in_a_token, 100_000_000, 60)),
                &l,
                &[]
            ),
            Err(Rejection::NoUsdQuote)
        );
        let elsewhere = UsdTerms {
            price_account: "11111111111111111111111111111111".into(),
            ..usd_terms()
        };
        assert_eq!(
            verify_buy(
                &with(100_000_000, quote_logs(&elsewhere, 100_000_000, 60)),
                &l,
                &[]
            ),
            Err(Rejection::NoUsdQuote)
        );
        // quoted twice: the higher binds
        let mut twice = q(90_000_000);
        twice.extend(q(100_000_000));
        assert!(verify_buy(&with(90_000_000, twice), &l, &[]).is_err());
        // with the fee: the program's edge (max_quote_paid_by) counts
        let fee = ListingTerms {
            fee: Some(("Treasury".into(), 250)),
            ..l.clone()
        };
        let paid = 100_000_000u64;
        let edge = escrow_math::usd::max_quote_paid_by(paid, 100);
        let (to_seller, to_fee) = split_with_fee(paid, 250);
        let mut t = with(to_seller, q(edge));
        t.transfers.push(Transfer {
            from: "Buyer".into(),
            to: "Treasury".into(),
            lamports: to_fee,
        });
        assert!(
            verify_buy(&t, &fee, &[]).is_ok(),
            "the edge {edge} with the fee"
        );
    }

    fn offer(buyer: &str) -> NegotiatedTerms {
        NegotiatedTerms {
            offer_id: "offer-20261101-a1b2c3d4e5f6".into(),
            buyer: buyer.into(),
            price_lamports: 800,
            expires_at: 1_800,
        }
    }

    /// A token listing: 1,000 base units of `Usdc`.
    fn token_listing() -> ListingTerms {
        ListingTerms {
            currency: Currency::Token {
                mint: "Usdc".into(),
            },
            ..listing()
        }
    }

    /// A buy of the token listing: the buyer's checked transfer of `sent`
    /// units of `mint` into a token account of `owner`, whose balance rose
    /// by `arrived` (less where the mint withholds a fee); no lamports.
    fn token_tx(mint: &str, owner: &str, sent: u64, arrived: u64) -> ParsedTx {
        use crate::chain::parsed_tx::{TokenBalance, TokenTransfer, TOKEN_PROGRAM};
        let mut t = tx(0);
        t.transfers.clear();
        let account = format!("{owner}-{mint}-account");
        t.token_transfers = vec![TokenTransfer {
            program: TOKEN_PROGRAM.into(),
            source: "Buyer-account".into(),
            destination: account.clone(),
            mint: mint.into(),
            authority: "Buyer".into(),
            amount: sent,
            decimals: 6,
            fee: 0,
        }];
        t.token_balances = vec![TokenBalance {
            account,
            mint: mint.into(),
            owner: owner.into(),
            program: TOKEN_PROGRAM.into(),
            pre: 7,
            post: 7 + arrived,
        }];
        t
    }

    /// Every token shape of issue 31's list: only what arrived, of the
    /// listed mint, in the seller's own account, from the buyer's checked
    /// transfer, counts.
    #[test]
    fn token_listings_count_what_arrived_of_their_mint_in_the_sellers_account() {
        let due = |paid: u64| {
            Err(Rejection::UnderpaidToken {
                paid,
                price: 1_000,
                mint: "Usdc".into(),
            })
        };
        let l = token_listing();
        let b = verify_buy(&token_tx("Usdc", "Seller", 1_000, 1_000), &l, &[]).unwrap();
        assert_eq!(b.paid_lamports, 1_000);
        // a wrong mint
        assert_eq!(
            verify_buy(&token_tx("Fake", "Seller", 1_000, 1_000), &l, &[]),
            due(0)
        );
        // a token account the seller does not own
        assert_eq!(
            verify_buy(&token_tx("Usdc", "Mallory", 1_000, 1_000), &l, &[]),
            due(0)
        );
        // a transfer-fee mint: 1% withheld
        assert_eq!(
            verify_buy(&token_tx("Usdc", "Seller", 1_000, 990), &l, &[]),
            due(990)
        );
        // a closed or frozen account: nothing arrived
        assert_eq!(
            verify_buy(&token_tx("Usdc", "Seller", 1_000, 0), &l, &[]),
            due(0)
        );
        // someone else's transfer into the seller's account
        let mut other = token_tx("Usdc", "Seller", 1_000, 1_000);
        other.token_transfers[0].authority = "Stranger".into();
        assert_eq!(verify_buy(&other, &l, &[]), due(0));
        // SOL to a token listing
        assert_eq!(verify_buy(&tx(1_000), &l, &[]), due(0));
        // a token to a SOL listing
        assert_eq!(
            verify_buy(&token_tx("Usdc", "Seller", 1_000, 1_000), &listing(), &[]),
            Err(Rejection::Underpaid {
                paid: 0,
                price: 1_000
            })
        );
        // the fee in the token: 975 to the seller, 25 to the treasury
        let with_fee = ListingTerms {
            fee: Some(("Treasury".into(), 250)),
            ..token_listing()
        };
        let mut t = token_tx("Usdc", "Seller", 975, 975);
        assert_eq!(
            verify_buy(&t, &with_fee, &[]),
            Err(Rejection::FeeUnpaidToken {
                paid: 0,
                due: 25,
                mint: "Usdc".into()
            })
        );
        let treasury = token_tx("Usdc", "Treasury", 25, 25);
        t.token_transfers.extend(treasury.token_transfers);
        t.token_balances.extend(treasury.token_balances);
        assert!(verify_buy(&t, &with_fee, &[]).is_ok());
        // an accepted offer on the token listing binds its base units, for
        // its buyer alone
        let b = verify_buy(&token_tx("Usdc", "Seller", 800, 800), &l, &[offer("Buyer")]).unwrap();
        assert_eq!(
            (b.price_lamports, b.offer_id.as_deref()),
            (800, Some("offer-20261101-a1b2c3d4e5f6"))
        );
        assert_eq!(
            verify_buy(&token_tx("Usdc", "Seller", 799, 799), &l, &[offer("Buyer")]),
            Err(Rejection::UnderpaidToken {
                paid: 799,
                price: 800,
                mint: "Usdc".into()
            })
        );
        assert_eq!(
            verify_buy(&token_tx("Usdc", "Seller", 800, 800), &l, &[offer("Other")]),
            due(800),
            "another buyer's offer binds nothing"
        );
    }

    #[test]
    fn exact_payment_is_a_buy() {
        let b = verify_buy(&tx(1_000), &listing(), &[]).unwrap();
        assert_eq!(
            (b.buyer.as_str(), b.buyer_x25519.as_str(), b.paid_lamports),
            ("Buyer", X25519, 1_000)
        );
    }

    #[test]
    fn underpaid_by_one_lamport() {
        assert_eq!(
            verify_buy(&tx(999), &listing(), &[]),
            Err(Rejection::Underpaid {
                paid: 999,
                price: 1_000
            })
        );
    }

    #[test]
    fn paid_to_the_wrong_address() {
        let mut t = tx(1_000);
        t.transfers[0].to = "Mallory".into();
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::Underpaid {
                paid: 0,
                price: 1_000
            })
        );
    }

    #[test]
    fn failed_transaction() {
        let mut t = tx(1_000);
        t.succeeded = false;
        assert_eq!(verify_buy(&t, &listing(), &[]), Err(Rejection::TxFailed));
    }

    /// An x402 payment: the payment address's own node pays the fee and
    /// co-signs first; the buyer is the second signer. Anyone else as the
    /// first signer, or the payment address as the only other one, is not.
    #[test]
    fn a_buy_co_signed_by_the_sellers_node_as_fee_payer_counts() {
        let mut t = tx(1_000);
        t.signers = vec!["Seller".into(), "Buyer".into()];
        let v = verify_buy(&t, &listing(), &[]).unwrap();
        assert_eq!((v.buyer.as_str(), v.paid_lamports), ("Buyer", 1_000));
        t.signers = vec!["Seller".into(), "Seller".into()];
        assert!(verify_buy(&t, &listing(), &[]).is_err());
        t.signers = vec!["Buyer".into(), "Seller".into()];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::ExtraSigners { signers: 2 }),
            "the seller's node is the fee payer, first"
        );
        t.signers = vec!["Seller".into(), "Buyer".into(), "Mallory".into()];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::ExtraSigners { signers: 3 })
        );
        // co-signed, but the money came from the seller: nothing paid
        let mut t = tx(1_000);
        t.signers = vec!["Seller".into(), "Buyer".into()];
        t.transfers[0].from = "Seller".into();
        assert!(matches!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::Underpaid { paid: 0, .. })
        ));
    }

    /// An x402 payment naming the key to seal to (the full buy memo, a
    /// shop page's purchase) pays the whole price to the seller, as the
    /// compact one does (below), and its release carries the treasury's share;
    /// the key sealed to is the one the memo names. The same memo signed
    /// by the buyer alone pays the fee itself.
    #[test]
    fn an_x402_payment_with_the_full_buy_memo_leaves_the_fee_to_the_release() {
        let mut l = listing();
        l.fee = Some(("Treasury".into(), 250));
        let mut t = tx(1_000);
        t.signers = vec!["Seller".into(), "Buyer".into()];
        let v = verify_buy(&t, &l, &[]).unwrap();
        assert_eq!((v.fee_at_release, v.buyer_x25519.as_str()), (25, X25519));
        let t = tx(1_000);
        assert!(matches!(
            verify_buy(&t, &l, &[]),
            Err(Rejection::FeeUnpaid { paid: 0, due: 25 })
        ));
    }

    /// An x402 payment's compact memo `x402:buy:<listing>` is a buy whose
    /// X25519 key is the buyer's own key's Montgomery form; one naming
    /// another listing is none, and beside a full buy memo it is ambiguous.
    #[test]
    fn an_x402_buy_memo_seals_to_the_buyers_own_key() {
        let buyer = crate::wallet::Wallet::from_seed(&[9u8; 32]);
        let mut t = tx(1_000);
        t.signers = vec!["Seller".into(), buyer.address()];
        t.transfers[0].from = buyer.address();
        t.memos = vec![format!("x402:buy:{LISTING}")];
        let v = verify_buy(&t, &listing(), &[]).unwrap();
        assert_eq!(v.buyer, buyer.address());
        assert_eq!(v.buyer_x25519, buyer.x25519_address());
        t.memos = vec!["x402:buy:20261101-ffffffffffff".into()];
        assert_eq!(verify_buy(&t, &listing(), &[]), Err(Rejection::NoBuyMemo));
        t.memos = vec![format!("x402:buy:{LISTING}"), buy_memo()];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::AmbiguousBuy)
        );
        assert_eq!(crate::memo::x402_buy_listing("x402:buy:not-an-id"), None);
    }

    #[test]
    fn memo_signed_by_someone_other_than_the_payer() {
        // Mallory signs the memo and pays the fees; the transfer comes from Buyer
        let mut t = tx(1_000);
        t.signers = vec!["Mallory".into(), "Buyer".into()];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::ExtraSigners { signers: 2 })
        );
        // a lone signer whose payment comes from someone else pays nothing
        let mut t = tx(1_000);
        t.signers = vec!["Mallory".into()];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::Underpaid {
                paid: 0,
                price: 1_000
            })
        );
    }

    #[test]
    fn cancelled_before_the_buy() {
        let mut l = listing();
        l.cancelled_at_slot = Some(50);
        assert_eq!(
            verify_buy(&tx(1_000), &l, &[]),
            Err(Rejection::ListingCancelled {
                cancelled_at: 50,
                slot: 50
            })
        );
        l.cancelled_at_slot = Some(51);
        assert!(
            verify_buy(&tx(1_000), &l, &[]).is_ok(),
            "a cancel after the buy does not void it"
        );
        // a payment the seller's node co-signed before its cancel landed
        // (an x402 sale racing the cancel) is honoured
        l.cancelled_at_slot = Some(50);
        let mut cosigned = tx(1_000);
        cosigned.signers = vec!["Seller".into(), "Buyer".into()];
        assert!(
            verify_buy(&cosigned, &l, &[]).is_ok(),
            "the seller signed it: honoured"
        );
    }

    #[test]
    fn expired_listing_and_missing_block_time() {
        let mut t = tx(1_000);
        t.block_time = Some(2_000);
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::ListingExpired {
                expires_at: 2_000,
                block_time: 2_000
            })
        );
        t.block_time = None;
        assert_eq!(verify_buy(&t, &listing(), &[]), Err(Rejection::NoBlockTime));
    }

    #[test]
    fn negotiated_price_only_for_the_accepted_buyer() {
        let b = verify_buy(&tx(800), &listing(), &[offer("Buyer")]).unwrap();
        assert_eq!(
            (b.price_lamports, b.offer_id.as_deref()),
            (800, Some("offer-20261101-a1b2c3d4e5f6"))
        );
        // an offer accepted for someone else changes nothing
        assert_eq!(
            verify_buy(&tx(800), &listing(), &[offer("SomeoneElse")]),
            Err(Rejection::Underpaid {
                paid: 800,
                price: 1_000
            })
        );
        let other = verify_buy(&tx(1_000), &listing(), &[offer("SomeoneElse")]).unwrap();
        assert_eq!((other.price_lamports, other.offer_id), (1_000, None));
        assert_eq!(
            verify_buy(&tx(799), &listing(), &[offer("Buyer")]),
            Err(Rejection::Underpaid {
                paid: 799,
                price: 800
            })
        );
    }

    /// Prices bind the buyer, never against them (issue 14).
    #[test]
    fn an_accepted_offer_only_ever_lowers_the_price() {
        // expired accepted offer + a full-price buy: released at the list price
        let mut late = tx(1_000);
        late.block_time = Some(1_800);
        let b = verify_buy(&late, &listing(), &[offer("Buyer")]).unwrap();
        assert_eq!((b.price_lamports, b.offer_id), (1_000, None));
        // expired offer + the offer's price: underpaid against the list price
        let mut late_cheap = tx(800);
        late_cheap.block_time = Some(1_800);
        assert_eq!(
            verify_buy(&late_cheap, &listing(), &[offer("Buyer")]),
            Err(Rejection::Underpaid {
                paid: 800,
                price: 1_000
            })
        );
        // an accepted offer above the list price: the list price still buys
        let dear = NegotiatedTerms {
            price_lamports: 5_000,
            ..offer("Buyer")
        };
        let b = verify_buy(&tx(1_000), &listing(), &[dear]).unwrap();
        assert_eq!((b.price_lamports, b.offer_id), (1_000, None));
        // several accepted (an offer, then its counter): the lowest live one binds
        let counter = NegotiatedTerms {
            offer_id: "offer-20261101-ffffffffffff".into(),
            price_lamports: 900,
            expires_at: 1_900,
            ..offer("Buyer")
        };
        let both = [counter.clone(), offer("Buyer")];
        assert_eq!(
            verify_buy(&tx(800), &listing(), &both)
                .unwrap()
                .price_lamports,
            800
        );
        let mut between = tx(900);
        between.block_time = Some(1_850);
        let b = verify_buy(&between, &listing(), &both).unwrap();
        assert_eq!(b.offer_id.as_deref(), Some("offer-20261101-ffffffffffff"));
        // full price always counts, whatever is accepted
        for at in [1_000, 1_799, 1_800, 1_999] {
            let mut t = tx(1_000);
            t.block_time = Some(at);
            assert!(verify_buy(&t, &listing(), &both).is_ok(), "at {at}");
        }
    }

    #[test]
    fn memo_problems() {
        let mut t = tx(1_000);
        t.memos = vec![format!(
            "brainctl-marketplace/v1:buy:20261101-ffffffffffff:{X25519}"
        )];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::NoBuyMemo),
            "buy of another listing"
        );
        t.memos = vec![buy_memo(), buy_memo()];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::AmbiguousBuy)
        );
        t.memos = vec![format!("x{}", buy_memo())];
        assert_eq!(
            verify_buy(&t, &listing(), &[]),
            Err(Rejection::NoBuyMemo),
            "memo with extra text"
        );
    }

    #[test]
    fn the_fee_is_split_out_of_the_price_as_the_reference_does() {
        let mut l = listing();
        l.fee = Some(("Treasury".into(), 250)); // 2.5 % of 1,000
        let fee = |n: u64| Transfer {
            from: "Buyer".into(),
            to: "Treasury".into(),
            lamports: n,
        };
        // the reference's settlement: 975 to the seller, 25 to the treasury
        assert_eq!(
            verify_buy(&tx(975), &l, &[]),
            Err(Rejection::FeeUnpaid { paid: 0, due: 25 })
        );
        let mut t = tx(975);
        t.transfers.push(fee(24));
        assert_eq!(
            verify_buy(&t, &l, &[]),
            Err(Rejection::FeeUnpaid { paid: 24, due: 25 })
        );
        t.transfers.push(fee(1));
        assert_eq!(verify_buy(&t, &l, &[]).map(|v| v.paid_lamports), Ok(975));
        // the seller underpaid by one
        let mut short = tx(974);
        short.transfers.push(fee(25));
        assert_eq!(
            verify_buy(&short, &l, &[]),
            Err(Rejection::Underpaid {
                paid: 974,
                price: 975
            })
        );
        // the fee on top (an older client) pays the seller more: counts
        let mut on_top = tx(1_000);
        on_top.transfers.push(fee(25));
        assert!(verify_buy(&on_top, &l, &[]).is_ok());
        // negotiated: the split of the agreed price (800 -> 780 + 20)
        let mut n = tx(780);
        n.transfers.push(fee(20));
        assert!(verify_buy(&n, &l, &[offer("Buyer")]).is_ok());
        assert_eq!(split_with_fee(1_000_000, 250), (975_000, 25_000));
        assert_eq!(split_with_fee(1, 250), (0, 1), "too small to split");
        assert_eq!(
            split_with_fee(1_000_001, 250),
            (975_000, 25_001),
            "rounds up"
        );
        assert_eq!(split_with_fee(0, 250), (0, 0));
    }

    #[test]
    fn split_payments_add_up() {
        let mut t = tx(600);
        t.transfers.push(Transfer {
            from: "Buyer".into(),
            to: "Seller".into(),
            lamports: 400,
        });
        assert_eq!(
            verify_buy(&t, &listing(), &[]).unwrap().paid_lamports,
            1_000
        );
    }

    mod escrow_buys {
        use super::*;
        use crate::escrow::{EscrowAccount, EscrowStatus};
        use solana_sdk::pubkey::Pubkey;

        struct World {
            listing_account: Pubkey,
            buyer: Pubkey,
            x25519: [u8; 32],
        }

        fn world() -> World {
            World {
                listing_account: Pubkey::new_unique(),
                buyer: Pubkey::new_unique(),
                x25519: bs58::decode(X25519).into_vec().unwrap().try_into().unwrap(),
            }
        }

        /// The program's `SealedDeposited` event of `buyer` into
        /// `listing` holding `amount` of `mint`.
        fn deposited(
            listing: &Pubkey,
            buyer: &Pubkey,
            amount: u64,
            mint: &Pubkey,
        ) -> crate::chain::ProgramCall {
            let escrow = crate::escrow::escrow_address(listing, buyer);
            let mut body: Vec<u8> = [listing, &escrow, buyer]
                .iter()
                .flat_map(|k| k.to_bytes())
                .collect();
            body.extend_from_slice(&amount.to_le_bytes());
            body.extend_from_slice(mint.as_ref());
            body.extend_from_slice(&1_500i64.to_le_bytes());
            crate::escrow::emitted("SealedDeposited", &body)
        }

        fn escrow_tx(w: &World) -> ParsedTx {
            let mut t = tx(0);
            t.transfers.clear();
            t.signers = vec![w.buyer.to_string()];
            t.inner_calls = vec![deposited(
                &w.listing_account,
                &w.buyer,
                1_000,
                &Pubkey::default(),
            )];
            t
        }

        fn account(w: &World) -> EscrowAccount {
            EscrowAccount {
                listing: w.listing_account,
                buyer: w.buyer,
                buyer_x25519: w.x25519,
                amount: 1_000,
                deposited_at: 1_500,
                status: EscrowStatus::Deposited,
                blind_point: [6; 32],
                revealed: [0; 32],
                revealed_at: 0,
                share: 500,
            }
        }

        fn check(
            w: &World,
            t: &ParsedTx,
            e: Option<&EscrowAccount>,
        ) -> Result<VerifiedBuy, Rejection> {
            verify_escrow_buy(t, &listing(), &w.listing_account.to_string(), e)
        }

        #[test]
        fn a_deposit_with_its_escrow_is_a_buy() {
            let w = world();
            let b = check(&w, &escrow_tx(&w), Some(&account(&w))).unwrap();
            assert_eq!(
                (b.buyer, b.paid_lamports, b.buyer_x25519.as_str()),
                (w.buyer.to_string(), 1_000, X25519)
            );
        }

        #[test]
        fn hostile_escrow_buys_are_rejected_with_their_reason() {
            let w = world();
            let (t, e) = (escrow_tx(&w), account(&w));
            let no_deposit = Rejection::NoEscrowDeposit {
                listing_account: w.listing_account.to_string(),
            };
            // a second buy memo riding on the one deposit (replay), or a direct payment
            let mut replay = t.clone();
            replay.inner_calls.clear();
            assert_eq!(check(&w, &replay, Some(&e)), Err(no_deposit.clone()));
            // a deposit into another listing's account
            let mut other = t.clone();
            let elsewhere = Pubkey::new_unique();
            other.inner_calls = vec![deposited(&elsewhere, &w.buyer, 1_000, &Pubkey::default())];
            assert_eq!(check(&w, &other, Some(&e)), Err(no_deposit.clone()));
            // a deposit by someone else than the signer
            let mut someone = t.clone();
            let stranger = Pubkey::new_unique();
            someone.inner_calls = vec![deposited(
                &w.listing_account,
                &stranger,
                1_000,
                &Pubkey::default(),
            )];
            assert_eq!(check(&w, &someone, Some(&e)), Err(no_deposit.clone()));
            // two deposits in one transaction
            let mut two = t.clone();
            two.inner_calls.push(t.inner_calls[0].clone());
            assert_eq!(check(&w, &two, Some(&e)), Err(no_deposit));
            // an on-chain listing at another price, or in a token, than
            // the manifest's: the program held what the chain said
            for (amount, mint) in [(1, Pubkey::default()), (1_000, Pubkey::new_unique())] {
                let mut lied = t.clone();
                lied.inner_calls = vec![deposited(&w.listing_account, &w.buyer, amount, &mint)];
                assert_eq!(
                    check(&w, &lied, Some(&e)),
                    Err(Rejection::EscrowTermsDiffer {
                        held: amount,
                        held_mint: mint.to_string(),
                        price: 1_000
                    })
                );
            }
            // no escrow on chain (or another buyer's)
            assert_eq!(check(&w, &t, None), Err(Rejection::EscrowMissing));
            let mut theirs = e.clone();
            theirs.buyer = Pubkey::new_unique();
            assert_eq!(check(&w, &t, Some(&theirs)), Err(Rejection::EscrowMissing));
            // revealed already, declined, or claimed
            for status in [
                EscrowStatus::Revealed,
                EscrowStatus::Declined,
                EscrowStatus::Claimed,
            ] {
                let mut done = e.clone();
                done.status = status;
                assert_eq!(
                    check(&w, &t, Some(&done)),
                    Err(Rejection::EscrowSettled { status })
                );
            }
            // underfunded
            let mut short = e.clone();
            short.amount = 999;
            assert_eq!(
                check(&w, &t, Some(&short)),
                Err(Rejection::Underpaid {
                    paid: 999,
                    price: 1_000
                })
            );
            // sealed to another key than the memo names
            let mut key = e.clone();
            key.buyer_x25519 = [9; 32];
            assert_eq!(check(&w, &t, Some(&key)), Err(Rejection::EscrowKeyMismatch));
            // failed, expired, cancelled: the same claim rules as any buy
            let mut failed = t.clone();
            failed.succeeded = false;
            assert_eq!(check(&w, &failed, Some(&e)), Err(Rejection::TxFailed));
            let mut late = t.clone();
            late.block_time = Some(2_000);
            assert!(matches!(
                check(&w, &late, Some(&e)),
                Err(Rejection::ListingExpired { .. })
            ));
            let mut l = listing();
            l.cancelled_at_slot = Some(10);
            assert!(matches!(
                verify_escrow_buy(&t, &l, &w.listing_account.to_string(), Some(&e)),
                Err(Rejection::ListingCancelled { .. })
            ));
            // a co-signed buy
            let mut co = t.clone();
            co.signers.push("Mallory".into());
            assert_eq!(
                check(&w, &co, Some(&e)),
                Err(Rejection::ExtraSigners { signers: 2 })
            );
        }
    }
}
