//! Read models over a [`State`]: the JSON shapes the API serves (the
//! reference client reads `listings[].manifest`, `listing.manifest`,
//! `offers[].manifest` and the settlement `status`), visibility rules for
//! private listings, and seller reputation from the chain alone.
//!
//! Owns "who may see what, in which shape"; never mutates state.

use crate::fold::{
    EscrowState, FoldConfig, ListingState, OfferState, Settlement, SettlementStatus, State,
};
use serde::Serialize;
use serde_json::{json, Value};

/// Browse filters (all optional).
#[derive(Debug, Clone, Default)]
pub struct ListingFilter {
    /// Highest price in USD.
    pub max_price_usd: Option<f64>,
    /// A category the preview must name.
    pub category: Option<String>,
    /// auction | private.
    pub visibility: Option<String>,
    /// Seller.
    pub seller: Option<String>,
    /// live (default) | cancelled | expired | all.
    pub status: Option<String>,
    /// Resume after this listing id (ids sort by date).
    pub after: Option<String>,
    /// Page size.
    pub limit: usize,
}

fn categories(l: &ListingState) -> impl Iterator<Item = &str> {
    l.manifest
        .pointer("/preview/categories_summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

impl ListingFilter {
    /// Whether `l` is on the page at `now`.
    pub fn matches(&self, l: &ListingState, now: i64) -> bool {
        let status = self.status.as_deref().unwrap_or("live");
        (status == "all" || l.status(now) == status)
            && self.max_price_usd.is_none_or(|p| l.price_usd <= p)
            && self.visibility.as_deref().is_none_or(|v| l.visibility == v)
            && self.seller.as_deref().is_none_or(|s| l.seller == s)
            && self
                .category
                .as_deref()
                .is_none_or(|c| categories(l).any(|x| x == c))
            && self
                .after
                .as_deref()
                .is_none_or(|a| l.listing_id.as_str() > a)
    }
}

/// Who reads: the signed-in wallet (base58), or `None` for an anonymous
/// reader (the explorer, a request without a session).
pub type Viewer<'a> = Option<&'a str>;

/// The one visibility rule, used by every view (API, explorer, figures):
/// may `viewer` see a trade of `buyer` on `l` (an offer, a buy, its
/// release or refund, an escrow deposit, or any figure counting them)?
/// On a public listing everyone may; on a private one only its seller and
/// that buyer, signed in. The listing itself (its manifest) is public
/// either way: `GET /listings` shows it.
pub fn may_see_trade(l: &ListingState, buyer: &str, viewer: Viewer<'_>) -> bool {
    l.visibility != "private" || viewer.is_some_and(|v| v == l.seller || v == buyer)
}

/// Whether `viewer` may see `offer` ([`may_see_trade`] on its listing).
pub fn may_see_offer(state: &State, offer: &OfferState, viewer: Viewer<'_>) -> bool {
    state
        .listings
        .get(&offer.listing_id)
        .is_none_or(|l| may_see_trade(l, &offer.buyer, viewer))
}

/// The settlements of `l` that `viewer` may see ([`may_see_trade`]), keyed
/// by buy signature.
pub fn visible_settlements<'a>(
    state: &'a State,
    l: &'a ListingState,
    viewer: Viewer<'a>,
) -> impl Iterator<Item = (&'a String, &'a Settlement)> + 'a {
    state
        .settlements_of(&l.listing_id)
        .filter(move |(_, s)| may_see_trade(l, &s.buyer, viewer))
}

/// The listing whose escrow-program account holds `e`, if folded (only
/// listings that settle through the program are derived).
pub fn escrow_listing<'a>(state: &'a State, e: &EscrowState) -> Option<&'a ListingState> {
    let id = state.escrow_listing_id(&e.listing)?;
    state.listings.get(id).map(|l| &**l)
}

/// The escrow deposits into `l`'s program account that `viewer` may see
/// ([`may_see_trade`] with the depositor as the buyer), keyed by escrow
/// account.
pub fn visible_escrows<'a>(
    state: &'a State,
    l: &'a ListingState,
    viewer: Viewer<'a>,
) -> Vec<(&'a String, &'a EscrowState)> {
    // deposits go only into escrow listings' accounts (the fold links no
    // other); deriving an account costs a curve check per bump tried, so
    // a page of plain listings derives none
    if !l.is_escrow() || state.escrows.is_empty() {
        return Vec::new();
    }
    let Ok(account) = crate::fold::escrow_listing_account(&l.seller, &l.listing_id) else {
        return Vec::new();
    };
    state
        .escrows
        .iter()
        .filter(|(_, e)| e.listing == account && may_see_trade(l, &e.buyer, viewer))
        .collect()
}

/// Whether `viewer` may see the deposit `e` ([`may_see_trade`] on the
/// listing it was made into; a deposit into no folded listing is public).
pub fn may_see_escrow(state: &State, e: &EscrowState, viewer: Viewer<'_>) -> bool {
    escrow_listing(state, e).is_none_or(|l| may_see_trade(l, &e.buyer, viewer))
}

/// One listing as served: borrowed from the state, serialized straight
/// to the response (no intermediate JSON tree).
#[derive(Debug, Serialize)]
pub struct ListingView<'a> {
    listing_id: &'a str,
    status: &'static str,
    seller_pubkey: &'a str,
    payment_address: &'a str,
    price_usd: f64,
    price_lamports: Option<u64>,
    currency: &'a node::settle::Currency,
    price_units: Option<u64>,
    fee_bps: u64,
    visibility: &'a str,
    expires_at: i64,
    bundle_hash: &'a str,
    listing_arweave_id: &'a str,
    list_tx_signature: &'a str,
    listed_slot: u64,
    cancel_tx_signature: Option<&'a str>,
    sales: u64,
    releases: u64,
    manifest: &'a Value,
}

impl ListingView<'_> {
    /// Verified paid buys (self-trades excluded).
    pub fn sales(&self) -> u64 {
        self.sales
    }

    /// Of those, released.
    pub fn releases(&self) -> u64 {
        self.releases
    }
}

/// Whether `s` is a self-trade on `l`: the buyer is the seller or the
/// payment address itself (money moving between one party's wallets).
/// Self-trades are no sales: they count nowhere in sales, volume or latency.
pub fn is_self_trade(l: &ListingState, s: &Settlement) -> bool {
    s.buyer == l.seller || s.buyer == l.payment_address
}

/// One listing as `viewer` sees it (its sales count only the buys they
/// may see).
pub fn listing<'a>(state: &'a State, l: &'a ListingState, viewer: Viewer<'_>) -> ListingView<'a> {
    let (mut sales, mut releases) = (0u64, 0u64);
    for (_, s) in visible_settlements(state, l, viewer) {
        if is_self_trade(l, s) {
            continue;
        }
        match s.status {
            SettlementStatus::Paid => sales += 1,
            SettlementStatus::Released { .. } => {
                sales += 1;
                releases += 1
            }
            // a refund is no sale: the money went back
            SettlementStatus::Rejected { .. } | SettlementStatus::Refunded { .. } => {}
        }
    }
    ListingView {
        listing_id: &l.listing_id,
        status: l.status(state.view_now()),
        seller_pubkey: &l.seller,
        payment_address: &l.payment_address,
        price_usd: l.price_usd,
        price_lamports: l.price_lamports,
        currency: &l.currency,
        price_units: l.price(),
        fee_bps: l.fee_bps,
        visibility: &l.visibility,
        expires_at: l.expires_at,
        bundle_hash: &l.bundle_hash,
        listing_arweave_id: &l.manifest_id,
        list_tx_signature: &l.listed.signature,
        listed_slot: l.listed.slot,
        cancel_tx_signature: l.cancelled.as_ref().map(|c| c.signature.as_str()),
        sales,
        releases,
        manifest: &l.manifest,
    }
}

/// A page of listings and the cursor of the next.
#[derive(Debug, Serialize)]
pub struct ListingPage<'a> {
    listings: Vec<ListingView<'a>>,
    count: usize,
    next_cursor: Option<&'a str>,
}

/// The listings matching `f`, in id order, one page, and the cursor of
/// the next.
pub fn listing_page<'a>(
    state: &'a State,
    f: &ListingFilter,
) -> (Vec<&'a ListingState>, Option<&'a str>) {
    use std::ops::Bound::{Excluded, Unbounded};
    let from = match &f.after {
        Some(a) => (Excluded(a.clone()), Unbounded),
        None => (Unbounded, Unbounded),
    };
    let mut page: Vec<&ListingState> = Vec::new();
    let mut next_cursor = None;
    for l in state
        .listings
        .range::<_, String>(from)
        .map(|(_, l)| l)
        .filter(|l| f.matches(l, state.view_now()))
    {
        if page.len() == f.limit {
            next_cursor = page.last().map(|l| l.listing_id.as_str());
            break;
        }
        page.push(l);
    }
    (page, next_cursor)
}

/// Listings matching `f`, in id order, one page, and the cursor of the
/// next, as `viewer` sees them.
pub fn listings<'a>(state: &'a State, f: &ListingFilter, viewer: Viewer<'_>) -> ListingPage<'a> {
    let (rows, next_cursor) = listing_page(state, f);
    let page: Vec<_> = rows
        .into_iter()
        .map(|l| listing(state, l, viewer))
        .collect();
    ListingPage {
        count: page.len(),
        listings: page,
        next_cursor,
    }
}

/// One offer with its lineage.
pub fn offer(o: &OfferState, now: i64) -> Value {
    let current = o.current();
    let expired = o.status == crate::fold::OfferStatus::Open && now >= current.expires_at;
    json!({
        "offer_id": o.offer_id,
        "listing_id": o.listing_id,
        "buyer_pubkey": o.buyer,
        "status": if expired { json!("expired") } else { json!(o.status) },
        "price_usd": current.price_usd,
        "price_lamports": current.price_lamports,
        "price_units": current.price_units,
        "expires_at": current.expires_at,
        "offer_tx_signature": o.terms[0].at.signature,
        "closed_tx_signature": o.closed.as_ref().map(|c| &c.signature),
        "counters": o.terms[1..].iter().map(|t| json!({
            "from_pubkey": t.from,
            "counter_arweave_id": t.manifest_id,
            "price_usd": t.price_usd,
            "price_lamports": t.price_lamports,
            "price_units": t.price_units,
            "expires_at": t.expires_at,
            "tx_signature": t.at.signature,
            "manifest": t.manifest,
        })).collect::<Vec<_>>(),
        "offer_arweave_id": o.terms[0].manifest_id,
        "manifest": o.terms[0].manifest,
    })
}

/// Offers on a listing `viewer` may see.
pub fn offers_of(state: &State, listing_id: &str, viewer: Option<&str>) -> Vec<Value> {
    state
        .offers
        .values()
        .filter(|o| o.listing_id == listing_id && may_see_offer(state, o, viewer))
        .map(|o| offer(o, state.view_now()))
        .collect()
}

/// A buy as the settlement endpoint shows it.
pub fn settlement(state: &State, sig: &str, s: &Settlement, cfg: &FoldConfig) -> Value {
    let mut v = json!({
        "listing_id": s.listing_id,
        "buyer_pubkey": s.buyer,
        "status": state.settlement_status(s, cfg),
        "buy_tx_signature": sig,
        "buy_slot": s.at.slot,
        "paid_lamports": s.paid_lamports,
        "price_lamports": s.price_lamports,
        "offer_id": s.offer_id,
    });
    match &s.status {
        SettlementStatus::Released {
            at,
            envelope_id,
            minted_token,
        } => {
            v["release_tx_signature"] = json!(at.signature);
            v["envelope_arweave_id"] = json!(envelope_id);
            v["minted_token"] = json!(minted_token);
        }
        SettlementStatus::Rejected { reason } => v["reason"] = json!(reason),
        SettlementStatus::Refunded {
            at,
            slashed_lamports,
        } => {
            v["refund_tx_signature"] = json!(at.signature);
            v["slashed_lamports"] = json!(slashed_lamports);
        }
        SettlementStatus::Paid => {}
    }
    v
}

/// The settlement of `buyer` on `listing_id`: the best one (released over
/// paid over rejected), newest first among equals; `pending` when none.
pub fn settlement_for(state: &State, listing_id: &str, buyer: &str, cfg: &FoldConfig) -> Value {
    let rank = |s: &Settlement| match s.status {
        SettlementStatus::Released { .. } | SettlementStatus::Refunded { .. } => 2,
        SettlementStatus::Paid => 1,
        SettlementStatus::Rejected { .. } => 0,
    };
    state
        .settlements_of(listing_id)
        .filter(|(_, s)| s.buyer == buyer)
        .max_by_key(|(_, s)| (rank(s), s.at.slot))
        .map(|(sig, s)| settlement(state, sig, s, cfg))
        .unwrap_or_else(
            || json!({"listing_id": listing_id, "buyer_pubkey": buyer, "status": "pending"}),
        )
}

/// A seller's record, from the chain alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reputation {
    /// Seller.
    pub seller_pubkey: String,
    /// Listings made.
    pub listings: u64,
    /// Verified paid buys (an escrow buy once its seller is paid: claimed
    /// after the dispute window, never disputed).
    pub sales: u64,
    /// Of those, released.
    pub releases: u64,
    /// Paid buys past the grace period without a release.
    pub unreleased_paid_buys: u64,
    /// Escrow buys never released: the buyer took the deposit back.
    pub refunded_buys: u64,
    /// Escrow buys not settled yet: deposited, or revealed and inside the
    /// dispute window (a sale, with its volume, once claimed).
    pub pending_escrow_buys: u64,
    /// Lamports of the seller's stakes paid to refunded buyers.
    pub slashed_lamports: u64,
    /// Buys by the seller's own wallet or payment address: in no figure.
    pub self_trades: u64,
    /// Median seconds from buy to release (block times).
    pub median_release_latency_secs: Option<i64>,
    /// Lamports received in verified buys of listings settling in SOL.
    pub volume_lamports: u64,
    /// Base units received in verified buys of listings settling in a
    /// token, by mint.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub volume_tokens: std::collections::BTreeMap<String, u64>,
}

/// One released buy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latency {
    /// The buy's signature.
    pub buy: String,
    /// Seconds from the buy's block to the release's.
    pub secs: i64,
}

/// `seller`'s released buys with both block times that `viewer` may see,
/// in buy order: seconds from the buy to its release (self-trades
/// excluded, as in every figure).
pub fn release_latencies(state: &State, seller: &str, viewer: Viewer<'_>) -> Vec<Latency> {
    let mut out: Vec<(u64, Latency)> = state
        .settlements
        .iter()
        .filter_map(|(sig, s)| {
            let l = state.listings.get(&s.listing_id)?;
            if l.seller != seller || is_self_trade(l, s) || !may_see_trade(l, &s.buyer, viewer) {
                return None;
            }
            let SettlementStatus::Released { at, .. } = &s.status else {
                return None;
            };
            let secs = at.block_time? - s.at.block_time?;
            Some((
                s.at.slot,
                Latency {
                    buy: sig.clone(),
                    secs,
                },
            ))
        })
        .collect();
    out.sort_by_key(|(slot, _)| *slot);
    out.into_iter().map(|(_, l)| l).collect()
}

/// Reputation of `seller` as `viewer` may see it: every figure counts
/// only the trades [`may_see_trade`] lets them see (an anonymous reader:
/// none on private listings).
pub fn reputation(state: &State, seller: &str, cfg: &FoldConfig, viewer: Viewer<'_>) -> Reputation {
    reputation_with(
        state,
        seller,
        cfg,
        viewer,
        &release_latencies(state, seller, viewer),
    )
}

/// Reputation of `seller` whose [`release_latencies`] (for the same
/// `viewer`) the caller already has (the explorer's seller page draws
/// them too).
pub fn reputation_with(
    state: &State,
    seller: &str,
    cfg: &FoldConfig,
    viewer: Viewer<'_>,
    latencies: &[Latency],
) -> Reputation {
    let mine: std::collections::BTreeMap<&str, &ListingState> = state
        .listings
        .values()
        .filter(|l| l.seller == seller)
        .map(|l| (l.listing_id.as_str(), &**l))
        .collect();
    let mut r = Reputation {
        seller_pubkey: seller.into(),
        listings: mine.len() as u64,
        sales: 0,
        releases: 0,
        unreleased_paid_buys: 0,
        refunded_buys: 0,
        pending_escrow_buys: 0,
        slashed_lamports: 0,
        self_trades: 0,
        median_release_latency_secs: None,
        volume_lamports: 0,
        volume_tokens: Default::default(),
    };
    for s in state.settlements.values() {
        let Some(l) = mine.get(s.listing_id.as_str()) else {
            continue;
        };
        if !may_see_trade(l, &s.buyer, viewer) {
            continue;
        }
        if is_self_trade(l, s) {
            if !matches!(s.status, SettlementStatus::Rejected { .. }) {
                r.self_trades += 1;
            }
            continue;
        }
        match s.status {
            SettlementStatus::Rejected { .. } => continue,
            // not a sale (the money went back) and not unreleased: refunded
            SettlementStatus::Refunded {
                slashed_lamports, ..
            } => {
                r.refunded_buys += 1;
                r.slashed_lamports = r.slashed_lamports.saturating_add(slashed_lamports);
                continue;
            }
            _ => {}
        }
        // an escrow buy is a sale once its seller is paid (claimed after
        // the dispute window, undisputed); before, it may still be proven
        // a lie or refunded
        if l.is_escrow() && s.claimed.is_none() {
            if state.settlement_status(s, cfg) == "unreleased" {
                r.unreleased_paid_buys += 1;
            }
            r.pending_escrow_buys += 1;
            continue;
        }
        r.sales += 1;
        match &l.currency {
            node::settle::Currency::Sol => {
                r.volume_lamports = r.volume_lamports.saturating_add(s.paid_lamports)
            }
            node::settle::Currency::Token { mint } => {
                let v = r.volume_tokens.entry(mint.clone()).or_default();
                *v = v.saturating_add(s.paid_lamports);
            }
        }
        match &s.status {
            SettlementStatus::Released { .. } => r.releases += 1,
            _ if state.settlement_status(s, cfg) == "unreleased" => r.unreleased_paid_buys += 1,
            _ => {}
        }
    }
    let mut latencies: Vec<i64> = latencies.iter().map(|l| l.secs).collect();
    latencies.sort_unstable();
    r.median_release_latency_secs = match latencies.len() {
        0 => None,
        n if n % 2 == 1 => Some(latencies[n / 2]),
        n => Some((latencies[n / 2 - 1] + latencies[n / 2]) / 2),
    };
    r
}
