//! The seller's x402 endpoint: `GET /x402/listings/{listing_id}` sells a
//! listing's key to anyone with an x402 client, given only that URL.
//! Unpaid, it answers 402 with the requirements (the listing's mint and
//! price, the seller as payee and fee payer, the compact buy memo) in the
//! `PAYMENT-REQUIRED` header (v2) and, for v1 clients, in the body (v1's
//! shape). Paid (`PAYMENT-SIGNATURE`, or v1's `X-PAYMENT`), it checks the
//! transaction as a facilitator ([`super::verify`]); the buyer is the
//! payment's signer (the key is sealed to its X25519 form; an optional
//! `?buyer=` must name the same key). Admitted by [`super::guard`], the
//! payment is co-signed, simulated and sent by a task of its own, and the
//! request waits at most [`X402Config::answer_within`] from its arrival
//! (under the 5 s default timeout of common HTTP clients) for `listen`,
//! running in the same process on the same state, to release that buy:
//!
//! - 200: the release (the sealed envelope, the blob, the bundle hash);
//! - 202: not released yet (`status: pending`, the payment's signature
//!   in `PAYMENT-RESPONSE`, `success` once it landed): the client finishes
//!   at `GET /x402/payments/{signature}` (`poll` in the body), or asks
//!   again: a payer who already paid for the listing is answered with
//!   that payment, and a new one it sends is never co-signed for good or
//!   sent (a client that retries never pays twice);
//! - 409: it landed and the settlement rules refused it; 402: it was
//!   refused before being sent, or landed failed (nothing was paid).
//!
//! Exactly once by construction: the endpoint never releases anything.
//! The payment is an ordinary buy on chain (the buy memo, the seller's
//! token account; co-signed by the seller as fee payer), which `listen`
//! discovers, verifies and releases like any other, crash-safe. The same
//! payment sent again is the same transaction (the co-signature is
//! deterministic) and gets the same release. Only what `listen` releases
//! is offered: cancelled, expiring, USD-priced, SOL, escrow and foreign
//! payee listings are refused before any payment.
//!
//! Never: holds a write transaction, lets a request make the fee payer
//! move funds (the check refuses it in any instruction), sends a payment
//! the guard did not admit, or holds a request past its budget.

use super::guard::{Guard, GuardConfig, Refused};
use super::reads::Reads;
use super::verify::{self, Expected, Refusal};
use super::wire::{
    self, PaymentPayload, PaymentRequired, PaymentRequiredV1, Requirements, Resource,
    SettleResponse,
};
use crate::arweave::Source;
use crate::chain::token::TokenMint;
use crate::chain::{Chain, ChainError, Pubkey, Signer};
use crate::seller::{BuyState, ListenDb, ListingRecord};
use crate::settle::Currency;
use crate::wallet::Wallet;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the endpoint runs.
#[derive(Debug, Clone)]
pub struct X402Config {
    /// The CAIP-2 id advertised (x402 clients accept only the public
    /// clusters' ids: a local validator advertises devnet's).
    pub network: String,
    /// How long a payment may take (`maxTimeoutSeconds`).
    pub max_timeout_secs: u64,
    /// How long a paid request waits for the release before answering
    /// 202 (pending): under the default timeout of common clients
    /// (httpx's 5 s).
    pub answer_within: Duration,
    /// Payments being settled at once (more are answered 503).
    pub concurrency: usize,
    /// The URL clients reach the endpoint at (`resource.url`, `poll`);
    /// `None`: `http://` and the request's `Host`.
    pub public_url: Option<String>,
    /// Failure budgets and request rates.
    pub guard: GuardConfig,
    /// The web origins whose pages may call the endpoint (CORS; empty:
    /// any origin, as a public shop's endpoint is).
    pub cors_origins: Vec<String>,
    /// The shop page at `/`.
    pub shop: ShopConfig,
}

/// What the seller's shop page needs.
#[derive(Debug, Clone, Default)]
pub struct ShopConfig {
    /// The page's built script (`None`: the page says how to build it).
    pub script: Option<PathBuf>,
    /// The public RPC URL the page reads the chain through and its
    /// wallet's payment is built against (`None`: the page cannot pay and
    /// says so). Never the node's own RPC URL unless the seller says so.
    pub rpc_url: Option<String>,
}

impl X402Config {
    /// Defaults for `network`.
    pub fn new(network: String) -> X402Config {
        X402Config {
            network,
            max_timeout_secs: 60,
            answer_within: Duration::from_secs(4),
            concurrency: 64,
            public_url: None,
            guard: GuardConfig::default(),
            cors_origins: Vec::new(),
            shop: Default::default(),
        }
    }
}

/// Where a payment this process sent stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sending {
    /// Sent (or being simulated); not known to have landed.
    InFlight,
    /// Landed and paid.
    Landed,
    /// Landed failed: nothing was paid (the node paid the fee).
    Failed(String),
    /// Refused by the simulation: never sent, nothing paid.
    Unsent(String),
    /// Not seen landing within its life; it may still have (then
    /// `listen` releases it).
    Unknown(String),
}

/// Payments sent, kept this long for their answers.
const SENT_KEPT: Duration = Duration::from_secs(900);
/// Payments remembered at most.
const MAX_SENT: usize = 50_000;

/// What the handlers share.
pub struct X402State {
    pub(super) chain: Chain,
    pub(super) seller: Arc<Wallet>,
    db_path: PathBuf,
    pub(super) source: Source,
    pub(super) config: X402Config,
    /// Requests answered at once (more are answered 503).
    permits: tokio::sync::Semaphore,
    /// Payments being settled at once.
    settling: Arc<tokio::sync::Semaphore>,
    guard: Arc<Guard>,
    pub(super) reads: Reads,
    /// The payments this process sent, by signature.
    sent: Mutex<HashMap<String, (Sending, Instant)>>,
    /// The payment this process sent for each (listing, payer): a client
    /// that pays again for what it bought is answered with it.
    sent_by_payer: Mutex<HashMap<(String, Pubkey), String>>,
    /// Released envelopes read from storage, by item id (immutable).
    envelopes: Mutex<HashMap<String, Arc<Value>>>,
    /// The listings as last read from the state database, and when.
    listings: Mutex<Option<(Instant, Arc<Vec<ListingRecord>>)>>,
    /// The shop page's listing previews (from their manifests), by
    /// manifest id (immutable).
    pub(super) previews: Mutex<HashMap<String, Arc<Value>>>,
}

/// Envelopes kept at most (a few KiB each).
const MAX_ENVELOPES: usize = 4_096;

impl X402State {
    /// The endpoint of `seller`'s listings recorded in the state at
    /// `db_path`, reading envelopes from `source`.
    pub fn new(
        chain: Chain,
        seller: Arc<Wallet>,
        db_path: PathBuf,
        source: Source,
        config: X402Config,
    ) -> Arc<X402State> {
        let concurrency = config.concurrency.max(1);
        Arc::new(X402State {
            reads: Reads::default(),
            guard: Guard::new(config.guard),
            chain,
            seller,
            db_path,
            source,
            permits: tokio::sync::Semaphore::new(concurrency * 4),
            settling: Arc::new(tokio::sync::Semaphore::new(concurrency)),
            config,
            sent: Mutex::new(HashMap::new()),
            sent_by_payer: Mutex::new(HashMap::new()),
            envelopes: Mutex::new(HashMap::new()),
            listings: Mutex::new(None),
            previews: Mutex::new(HashMap::new()),
        })
    }

    /// The payment `payer` already made for `listing_id`, if any that may
    /// still pay (sent by this process and not known to have failed, or
    /// recorded by `listen` and not refused): answered instead of a new
    /// one, so a retrying client never pays twice.
    async fn earlier_buy(
        &self,
        listing_id: &str,
        payer: &Pubkey,
    ) -> Result<Option<String>, Problem> {
        let here = self
            .sent_by_payer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(listing_id.to_string(), *payer))
            .cloned()
            .filter(|sig| {
                // one not seen landing is `listen`'s to find (below)
                matches!(self.sending(sig), Some(Sending::InFlight | Sending::Landed))
            });
        if here.is_some() {
            return Ok(here);
        }
        let db_path = self.db_path.clone();
        let (id, buyer) = (listing_id.to_string(), payer.to_string());
        tokio::task::spawn_blocking(move || {
            let db = ListenDb::open(&db_path)?;
            Ok::<_, crate::seller::StateError>(
                db.buys_by(&id, &buyer)?
                    .into_iter()
                    .rev()
                    .find(|b| b.state != BuyState::Rejected)
                    .map(|b| b.signature),
            )
        })
        .await
        .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?
        .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))
    }

    /// The released envelope `id`, read once from storage within `budget`
    /// (`None`: not readable in time; asked again next request).
    async fn envelope(&self, id: &str, budget: Duration) -> Option<Arc<Value>> {
        self.item_json(&self.envelopes, id, budget).await
    }

    /// The JSON item `id` (a manifest or an envelope: immutable), from
    /// `cache` or read once from storage within `budget`.
    pub(super) async fn item_json(
        &self,
        cache: &Mutex<HashMap<String, Arc<Value>>>,
        id: &str,
        budget: Duration,
    ) -> Option<Arc<Value>> {
        if let Some(v) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(id) {
            return Some(v.clone());
        }
        let bytes = tokio::time::timeout(budget, self.source.fetch(id, 256 * 1024))
            .await
            .ok()?
            .ok()?;
        let v = Arc::new(serde_json::from_slice::<Value>(&bytes).ok()?);
        let mut kept = cache.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= MAX_ENVELOPES {
            kept.clear();
        }
        kept.insert(id.to_string(), v.clone());
        Some(v)
    }

    fn sending(&self, signature: &str) -> Option<Sending> {
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        sent.get(signature).map(|(s, _)| s.clone())
    }

    fn set_sending(&self, signature: &str, state: Sending) {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if sent.len() >= MAX_SENT {
            sent.retain(|_, (s, at)| *s == Sending::InFlight || at.elapsed() < SENT_KEPT);
        }
        sent.insert(signature.to_string(), (state, Instant::now()));
    }
}

/// An answer that is not a release.
pub(super) struct Problem {
    status: StatusCode,
    body: Value,
    headers: Vec<(&'static str, String)>,
}

impl Problem {
    fn new(status: StatusCode, field: Option<&str>, error: impl std::fmt::Display) -> Problem {
        Problem {
            status,
            body: json!({"ok": false, "field": field, "error": error.to_string()}),
            headers: vec![],
        }
    }

    fn busy(why: impl std::fmt::Display, retry_after: Duration) -> Problem {
        let mut p = Problem::new(StatusCode::TOO_MANY_REQUESTS, None, why);
        p.headers
            .push(("retry-after", retry_after.as_secs().max(1).to_string()));
        p
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body)).into_response();
        for (name, value) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                r.headers_mut().insert(name, v);
            }
        }
        r.headers_mut()
            .insert("cache-control", HeaderValue::from_static("no-store"));
        r
    }
}

#[derive(serde::Deserialize)]
pub(super) struct KeyQuery {
    /// The payer, if the client names it (it must sign the payment).
    buyer: Option<String>,
    /// The X25519 key to seal the listing's key to, where it is not the
    /// payer's own (a browser wallet never hands out its secret key: a
    /// page makes a key of its own for the purchase). The payment then
    /// carries the protocol's full buy memo naming it.
    buyer_x25519_pubkey: Option<String>,
}

/// The listing, its mint and the requirements of paying for it.
struct Sale {
    listing: ListingRecord,
    mint: TokenMint,
    memo: String,
    requirements: Requirements,
    /// The resource's absolute URL.
    url: String,
    /// Where a payment's answer is polled (`{base}/x402/payments/`).
    poll_base: String,
}

/// The endpoint's base URL as clients reach it.
pub(super) fn base_url(st: &X402State, headers: &HeaderMap) -> String {
    if let Some(url) = &st.config.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// The request's budget: nothing a request does may hold a permit (and
/// the daemon's shutdown) longer than this.
fn request_budget(st: &X402State) -> Duration {
    st.config.answer_within + Duration::from_secs(30)
}

/// Refuses a request over its client's rate, or when the endpoint is full.
pub(super) fn admit_request<'a>(
    st: &'a X402State,
    peer: SocketAddr,
) -> Result<tokio::sync::SemaphorePermit<'a>, Problem> {
    if !st.guard.allow_request(peer.ip()) {
        return Err(Problem::busy(
            "too many requests from this client; slow down",
            Duration::from_secs(1),
        ));
    }
    st.permits
        .try_acquire()
        .map_err(|_| Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, "busy; retry shortly"))
}

pub(super) async fn key(
    State(st): State<Arc<X402State>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(listing_id): Path<String>,
    Query(q): Query<KeyQuery>,
    headers: HeaderMap,
) -> Response {
    let _permit = match admit_request(&st, peer) {
        Ok(p) => p,
        Err(p) => return p.into_response(),
    };
    let arrived = tokio::time::Instant::now();
    let sold = sell(&st, &listing_id, &q, &headers, arrived);
    match tokio::time::timeout(request_budget(&st), sold).await {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => p.into_response(),
        Err(_) => Problem::new(
            StatusCode::GATEWAY_TIMEOUT,
            None,
            "no answer in time; if the payment was sent, `listen` releases it: send the same payment again to get the key",
        )
        .into_response(),
    }
}

/// `GET /x402/payments/{signature}`: where a payment stands, without
/// waiting (the release when `listen` made it).
pub(super) async fn payment(
    State(st): State<Arc<X402State>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(signature): Path<String>,
    headers: HeaderMap,
) -> Response {
    let _permit = match admit_request(&st, peer) {
        Ok(p) => p,
        Err(p) => return p.into_response(),
    };
    if signature
        .parse::<solana_sdk::signature::Signature>()
        .is_err()
    {
        return Problem::new(
            StatusCode::BAD_REQUEST,
            Some("signature"),
            "not a base58 transaction signature",
        )
        .into_response();
    }
    // the answer is due within its window of the request's arrival, the
    // reads before the wait included
    let deadline = tokio::time::Instant::now() + st.config.answer_within;
    let answered = async {
        let (outcome, recorded) = release_of(&st, &signature).await?;
        let (listing_id, buyer) = recorded.unzip();
        let listing = match listing_id {
            Some(id) => listing_record(&st, &id).await?,
            None => None,
        };
        // sent here and judged before `listen` saw it (or never to be)
        let unpaid = |reason: &str, why: &str, landed: bool| {
            let mut p = Problem::new(
                StatusCode::PAYMENT_REQUIRED,
                Some("signature"),
                format!("{reason}: {why}; nothing was paid"),
            );
            p.body["status"] = json!(if landed { "failed" } else { "unsent" });
            p.body["reason"] = json!(reason);
            p
        };
        let listing = match (listing, st.sending(&signature)) {
            (_, Some(Sending::Failed(why))) => {
                return Err(unpaid("transaction_failed", &why, true))
            }
            (_, Some(Sending::Unsent(why))) => {
                return Err(unpaid("transaction_simulation_failed", &why, false))
            }
            (None, Some(_)) => {
                return Ok(pending_answer(&st, &signature, None, &base_url(&st, &headers)))
            }
            (None, None) => {
                return Err(Problem::new(
                    StatusCode::NOT_FOUND,
                    Some("signature"),
                    format!("no payment {signature} is known here (yet: `listen` records a landed one within seconds)"),
                ))
            }
            (Some(listing), _) => listing,
        };
        let mut response = answer(
            &st,
            &signature,
            outcome,
            &listing,
            &base_url(&st, &headers),
            deadline,
        )
        .await?;
        // released: the payment settled; a client that polled reads it as
        // the one that paid would
        if response.status() == StatusCode::OK {
            let settled = SettleResponse {
                success: true,
                transaction: signature.clone(),
                network: st.config.network.clone(),
                payer: buyer.flatten(),
                error_reason: None,
            };
            if let Ok(v) = HeaderValue::from_str(&wire::encode_header(&settled)) {
                response.headers_mut().insert(wire::PAYMENT_RESPONSE, v);
            }
        }
        Ok(response)
    };
    match tokio::time::timeout(request_budget(&st), answered).await {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => p.into_response(),
        Err(_) => Problem::new(
            StatusCode::GATEWAY_TIMEOUT,
            None,
            "no answer in time; retry",
        )
        .into_response(),
    }
}

async fn sell(
    st: &Arc<X402State>,
    listing_id: &str,
    q: &KeyQuery,
    headers: &HeaderMap,
    arrived: tokio::time::Instant,
) -> Result<Response, Problem> {
    // the answer is due within its window of the request's arrival
    let deadline = arrived + st.config.answer_within;
    let base = base_url(st, headers);
    let buyer = q.buyer.as_deref();
    let seal_to = q.buyer_x25519_pubkey.as_deref();
    if seal_to.is_some_and(|k| !crate::memo::is_pubkey(k)) {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            Some("buyer_x25519_pubkey"),
            "not a base58 32-byte X25519 public key",
        ));
    }
    let named_buyer = buyer
        .map(|b| {
            b.parse::<Pubkey>().map_err(|_| {
                Problem::new(
                    StatusCode::BAD_REQUEST,
                    Some("buyer"),
                    "not a base58 public key",
                )
            })
        })
        .transpose()?;
    let sale = sale(st, listing_id, &base, buyer, seal_to).await?;
    let payment = headers
        .get(wire::PAYMENT_SIGNATURE)
        .or_else(|| headers.get(wire::X_PAYMENT))
        .and_then(|v| v.to_str().ok());
    let Some(payment) = payment else {
        return Err(payment_required(&sale, "payment required"));
    };
    let payload: PaymentPayload = wire::decode_header(payment).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            Some(wire::PAYMENT_SIGNATURE),
            format!("the payment header: {e}"),
        )
    })?;
    let v1 = payload.x402_version == 1;
    wire::matches_requirements(&payload, &sale.requirements)
        .map_err(|why| payment_required(&sale, why))?;
    let mut tx = verify::decode(&payload.payload.transaction).map_err(|r| refused(&sale, &r))?;
    // the buyer is whoever signed the payment; a `?buyer=` must be them
    let payer = verify::payer_of(&tx).ok_or_else(|| refused(&sale, &Refusal::Signatures(1)))?;
    if let Some(named) = named_buyer.filter(|n| *n != payer) {
        return Err(refused(&sale, &Refusal::Payer(named)));
    }
    // without a key named, the key is sealed to the payer's X25519 form:
    // it must have one
    seal_to
        .map(|_| ())
        .or_else(|| crate::wallet::ed25519_pub_to_x25519(&payer.to_bytes()).map(|_| ()))
        .ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                Some("payer"),
                "the payer is not an Ed25519 public key (no X25519 form to seal the key to)",
            )
        })?;
    verify::check(
        &tx,
        &Expected {
            fee_payer: st.seller.solana_keypair().pubkey(),
            payer,
            mint: sale.mint,
            pay_to: sale.requirements.pay_to.parse().expect("our payee"),
            amount: sale.listing.price_lamports,
            memo: verify::MemoRule::Exactly(&sale.memo),
        },
    )
    .map_err(|r| refused(&sale, &r))?;
    verify::cosign(&mut tx, &st.seller.solana_keypair());
    // a payer who already paid for this listing (a client retrying after
    // a 202 or a timeout, with a new transaction) is answered with that
    // payment: this one is never sent
    let signature = match st.earlier_buy(&sale.listing.listing_id, &payer).await? {
        Some(earlier) => {
            if earlier != tx.signatures[0].to_string() {
                tracing::info!(listing = %sale.listing.listing_id, buyer = %payer, %earlier, "x402: this payer already paid; answered with that payment, the new one not sent");
            }
            earlier
        }
        None => tx.signatures[0].to_string(),
    };
    let fresh = signature == tx.signatures[0].to_string();
    let network = if v1 {
        wire::v1_network(&st.config.network)
            .unwrap_or_default()
            .to_string()
    } else {
        st.config.network.clone()
    };
    let ctx = Paid {
        sale: &sale,
        signature: &signature,
        payer,
        network: &network,
        v1,
    };
    // a payment already released (the same one sent again) is answered
    // from the state; one this process is sending is waited for; an
    // unsent one is sent
    let (outcome, _) = release_of(st, &signature).await?;
    let resend = matches!(
        st.sending(&signature),
        None | Some(Sending::Unsent(_)) | Some(Sending::Unknown(_))
    );
    if matches!(outcome, Outcome::Pending) && resend && fresh {
        send(st, tx, &ctx)?;
    }
    let outcome = loop {
        let (outcome, _) = release_of(st, &signature).await?;
        match (&outcome, st.sending(&signature)) {
            (Outcome::Released { .. } | Outcome::Rejected(_), _) => break outcome,
            (_, Some(Sending::Failed(why))) => {
                return Err(not_paid(&ctx, "transaction_failed", &why, true))
            }
            (_, Some(Sending::Unsent(why))) => {
                return Err(not_paid(&ctx, "transaction_simulation_failed", &why, false))
            }
            _ if tokio::time::Instant::now() >= deadline => break outcome,
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    let landed = !matches!(outcome, Outcome::Pending)
        || matches!(st.sending(&signature), Some(Sending::Landed));
    // the release, 409 with `listen`'s reason, or 202 pending
    let mut response = answer(
        st,
        &signature,
        outcome,
        &sale.listing,
        &sale.poll_base,
        deadline,
    )
    .await
    .unwrap_or_else(IntoResponse::into_response);
    let settled = SettleResponse {
        success: landed,
        transaction: signature.clone(),
        network: network.clone(),
        payer: Some(payer.to_string()),
        error_reason: (!landed).then(|| "settlement_pending".into()),
    };
    let header = wire::encode_header(&settled);
    if let Ok(v) = HeaderValue::from_str(&header) {
        response.headers_mut().insert(ctx.response_header(), v);
    }
    Ok(response)
}

/// A checked, co-signed payment for a sale.
struct Paid<'a> {
    sale: &'a Sale,
    signature: &'a str,
    payer: Pubkey,
    network: &'a str,
    /// An x402 v1 client's (its answers' header is `X-PAYMENT-RESPONSE`).
    v1: bool,
}

impl Paid<'_> {
    /// The settlement header's name for this client's version.
    fn response_header(&self) -> &'static str {
        if self.v1 {
            wire::X_PAYMENT_RESPONSE
        } else {
            wire::PAYMENT_RESPONSE
        }
    }
}

/// Admits `tx` and sends it from a task of its own, which records how it
/// ended (the request may answer before it does).
fn send(
    st: &Arc<X402State>,
    tx: solana_sdk::transaction::VersionedTransaction,
    ctx: &Paid<'_>,
) -> Result<(), Problem> {
    let source = verify::source_of(&tx).unwrap_or_default();
    let admission = st
        .guard
        .admit(ctx.payer, source)
        .map_err(|r: Refused| Problem::busy(&r, r.retry_after()))?;
    let permit = st.settling.clone().try_acquire_owned().map_err(|_| {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "too many payments being settled; retry shortly",
        )
    })?;
    let signature = ctx.signature.to_string();
    st.set_sending(&signature, Sending::InFlight);
    {
        let mut by_payer = st.sent_by_payer.lock().unwrap_or_else(|p| p.into_inner());
        if by_payer.len() >= MAX_SENT {
            by_payer.clear();
        }
        by_payer.insert(
            (ctx.sale.listing.listing_id.clone(), ctx.payer),
            signature.clone(),
        );
    }
    let (st, listing) = (st.clone(), ctx.sale.listing.listing_id.clone());
    let payer = ctx.payer;
    tokio::spawn(async move {
        let _permit = permit;
        let state = match st.chain.send_cosigned(&tx).await {
            Ok(_) => {
                admission.landed();
                tracing::info!(%listing, buyer = %payer, %signature, "x402 payment landed");
                Sending::Landed
            }
            Err(ChainError::TxFailed { error: err, .. }) => {
                admission.failed();
                tracing::warn!(%listing, buyer = %payer, %signature, error = %err, "x402 payment landed failed (the node paid its fee)");
                Sending::Failed(err)
            }
            Err(ChainError::Config(why)) => {
                admission.refused();
                tracing::info!(%listing, buyer = %payer, reason = %why, "x402 payment refused by the simulation");
                Sending::Unsent(why)
            }
            Err(e) => {
                tracing::warn!(%listing, buyer = %payer, %signature, error = %e, "x402 payment not seen landing");
                Sending::Unknown(e.to_string())
            }
        };
        st.set_sending(&signature, state);
    });
    Ok(())
}

/// A 402 for a payment that paid nothing: refused by the simulation
/// (never sent) or landed failed.
fn not_paid(ctx: &Paid<'_>, reason: &str, why: &str, landed: bool) -> Problem {
    let failed = SettleResponse {
        success: false,
        transaction: if landed {
            ctx.signature.to_string()
        } else {
            String::new()
        },
        network: ctx.network.to_string(),
        payer: Some(ctx.payer.to_string()),
        error_reason: Some(reason.into()),
    };
    let mut p = Problem::new(
        StatusCode::PAYMENT_REQUIRED,
        None,
        format!("{reason}: {why}; nothing was paid"),
    );
    p.body["reason"] = json!(reason);
    p.headers
        .push((ctx.response_header(), wire::encode_header(&failed)));
    p
}

/// 202: the payment `signature` is on its way (landing, or landed and
/// waiting for its release).
fn pending_answer(
    st: &X402State,
    signature: &str,
    listing: Option<&ListingRecord>,
    base: &str,
) -> Response {
    let landed = matches!(st.sending(signature), Some(Sending::Landed));
    let mut body = json!({
        "ok": true,
        "status": "pending",
        "buy_signature": signature,
        "landed": landed,
        "released": false,
        "poll": format!("{base}/x402/payments/{signature}"),
        // what a client that does not follow `poll` gets by trying again
        "retry": "request the listing again, paying as before: this payer's earlier payment answers it and the new one is never sent",
    });
    if let Some(l) = listing {
        body["listing_id"] = json!(l.listing_id);
        body["finish_with"] = json!(format!(
            "brainctl marketplace fetch {} --buy-signature {signature}",
            l.manifest_id
        ));
    }
    let mut r = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
    r.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-store"));
    r
}

/// The answer for a payment `listen` has judged: its release, or 409
/// with the reason it was refused; pending otherwise.
async fn answer(
    st: &X402State,
    signature: &str,
    outcome: Outcome,
    listing: &ListingRecord,
    base: &str,
    deadline: tokio::time::Instant,
) -> Result<Response, Problem> {
    match outcome {
        Outcome::Released {
            envelope_id,
            release_sig,
        } => {
            // read within what is left of the answer's window (at least a
            // moment: a cached envelope is at hand)
            let left = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .max(Duration::from_millis(250));
            let Some(envelope) = st.envelope(&envelope_id, left).await else {
                return Ok(pending_answer(st, signature, Some(listing), base));
            };
            Ok((
                StatusCode::OK,
                axum::Json(json!({
                    "ok": true,
                    "status": "released",
                    "listing_id": listing.listing_id,
                    "buy_signature": signature,
                    "release_signature": release_sig,
                    "envelope_id": envelope_id,
                    "envelope": envelope,
                    "encrypted_bundle_uri": format!("ar://{}", listing.blob_id),
                    "bundle_hash": listing.bundle_hash,
                    "manifest_id": listing.manifest_id,
                })),
            )
                .into_response())
        }
        // landed, and `listen` refused it (the listing closed as it
        // landed): said at once, with its reason
        Outcome::Rejected(reason) => {
            let mut p = Problem::new(
                StatusCode::CONFLICT,
                None,
                format!("the payment {signature} landed but the seller's settlement rules refused it: {reason}"),
            );
            p.body["status"] = json!("rejected");
            Err(p)
        }
        Outcome::Pending => Ok(pending_answer(st, signature, Some(listing), base)),
    }
}

/// Seconds a listing must still live when a payment is asked for: the
/// payment's own timeout, a blockhash's life (150 blocks) and the
/// commitment's lag, so it lands, and is judged by its block time, before
/// the listing expires.
const EXPIRY_MARGIN_SECS: i64 = 180;

/// How long the listings read from the state database serve requests.
const LISTINGS_TTL: Duration = Duration::from_secs(1);

/// Our listings as recorded, read from the state database at most every
/// [`LISTINGS_TTL`] (requests never open it each).
pub(super) async fn listings(st: &X402State) -> Result<Arc<Vec<ListingRecord>>, Problem> {
    if let Some((at, all)) = &*st.listings.lock().unwrap_or_else(|p| p.into_inner()) {
        if at.elapsed() < LISTINGS_TTL {
            return Ok(all.clone());
        }
    }
    let db_path = st.db_path.clone();
    let all = tokio::task::spawn_blocking(move || {
        let db = ListenDb::open(&db_path)?;
        db.listings()
    })
    .await
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?;
    let all = Arc::new(all);
    *st.listings.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), all.clone()));
    Ok(all)
}

/// Our listing `listing_id` as recorded, if it is one.
async fn listing_record(
    st: &X402State,
    listing_id: &str,
) -> Result<Option<ListingRecord>, Problem> {
    Ok(listings(st)
        .await?
        .iter()
        .find(|l| l.listing_id == listing_id)
        .cloned())
}

/// The mint `listing` is sold in if x402 can sell it at unix time `now`
/// (live, a direct sale in a token paid to `seller`, the node's own
/// wallet: exactly what `listen` releases on a direct payment), or the
/// answer saying why not.
pub(super) fn sellable(
    listing: &ListingRecord,
    seller: &Pubkey,
    now: i64,
    max_timeout_secs: u64,
) -> Result<Pubkey, Problem> {
    let listing_id = &listing.listing_id;
    let gone = |why: String| Problem::new(StatusCode::GONE, Some("listing_id"), why);
    let conflict = |why: String| Problem::new(StatusCode::CONFLICT, Some("listing_id"), why);
    if let Some(slot) = listing.cancelled_at_slot {
        return Err(gone(format!("{listing_id} was cancelled at slot {slot}")));
    }
    if listing.escrow {
        // `listen` answers an escrow listing's buyers through the escrow
        // program only: a direct payment would never be released
        return Err(conflict(format!(
            "{listing_id} is sold through the escrow program (the buyer's deposit is refunded unless the key is revealed), which x402's exact scheme cannot pay: buy it with `brainctl marketplace buy {listing_id}`"
        )));
    }
    if listing.usd.is_some() {
        return Err(conflict(format!("{listing_id} is priced in USD at settle time (its buy carries the program's quote); x402's exact scheme pays a fixed amount: buy it with `brainctl marketplace buy`")));
    }
    let Currency::Token { mint } = &listing.currency else {
        return Err(conflict(format!(
            "{listing_id} settles in SOL; x402 pays in SPL tokens (buy it with `brainctl marketplace buy`)"
        )));
    };
    if listing.payment_address != seller.to_string() {
        return Err(conflict(format!(
            "{listing_id} is paid to {}, not to this node's wallet (the x402 fee payer)",
            listing.payment_address
        )));
    }
    // the payment must land, and be judged by its block time, before expiry
    if now + EXPIRY_MARGIN_SECS.max(max_timeout_secs as i64) >= listing.expires_at {
        return Err(gone(format!(
            "{listing_id} has expired or expires within the payment's timeout"
        )));
    }
    mint.parse().map_err(|_| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            "bad mint on record",
        )
    })
}

/// The listing, its mint (screened now) and the requirements of paying
/// for it; the key sealed to `seal_to` where one is named.
async fn sale(
    st: &X402State,
    listing_id: &str,
    base: &str,
    buyer: Option<&str>,
    seal_to: Option<&str>,
) -> Result<Sale, Problem> {
    let listing = listing_record(st, listing_id).await?.ok_or_else(|| {
        Problem::new(
            StatusCode::NOT_FOUND,
            Some("listing_id"),
            format!("{listing_id} is not one of this node's listings"),
        )
    })?;
    let conflict = |why: String| Problem::new(StatusCode::CONFLICT, Some("listing_id"), why);
    let seller = st.seller.solana_keypair().pubkey();
    let now = st
        .reads
        .now(&st.chain)
        .await
        .map_err(|e| Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, e))?;
    let mint_address = sellable(&listing, &seller, now, st.config.max_timeout_secs)?;
    let mint = st
        .reads
        .mint(&st.chain, &mint_address)
        .await
        .map_err(|e| match &*e {
            crate::chain::token::MintRefusal::Chain(_) => {
                Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, e)
            }
            // a mint that gained a fee, a hook or a pause since it was listed
            refusal => conflict(format!(
                "{listing_id} cannot be paid in its mint now: {refusal}"
            )),
        })?;
    let payee = crate::chain::token::associated_account(&seller, &mint);
    if st
        .reads
        .requires_memo(&st.chain, &payee)
        .await
        .map_err(|e| Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, e))?
    {
        return Err(conflict(format!(
            "{listing_id}: the seller's token account {payee} requires a memo before each incoming transfer, and an x402 payment's memo follows its transfer (the seller can run `spl-token disable-required-transfer-memos {payee}`)"
        )));
    }
    // the compact x402 buy memo: the full one would not fit the common
    // clients' compute budget; the key is sealed to the payer's own key's
    // X25519 form. A client naming another key to seal to (a page whose
    // wallet keeps its secret) pays with the protocol's full buy memo,
    // which names it, and sets the compute limit that memo needs.
    let memo = match seal_to {
        Some(key) => crate::memo::MemoOp::Buy {
            listing_id: listing_id.to_string(),
            buyer_x25519: key.to_string(),
        }
        .to_string(),
        None => format!("{}{listing_id}", crate::memo::X402_BUY_PREFIX),
    };
    let requirements = Requirements {
        scheme: "exact".into(),
        network: st.config.network.clone(),
        amount: listing.price_lamports.to_string(),
        asset: mint.address.to_string(),
        pay_to: seller.to_string(),
        max_timeout_seconds: st.config.max_timeout_secs,
        extra: wire::Extra::paying(seller.to_string(), Some(memo.clone()), &mint),
    };
    let query: Vec<String> = [("buyer", buyer), ("buyer_x25519_pubkey", seal_to)]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
        .collect();
    let url = match query.is_empty() {
        true => format!("{base}/x402/listings/{listing_id}"),
        false => format!("{base}/x402/listings/{listing_id}?{}", query.join("&")),
    };
    Ok(Sale {
        listing,
        mint,
        memo,
        requirements,
        url,
        poll_base: base.to_string(),
    })
}

/// A 402 with the requirements of `sale` and `error` saying why: v2 in
/// the `PAYMENT-REQUIRED` header (which v2 clients read first), v1's
/// shape in the body (which v1 clients read) where the network has a v1
/// name.
fn payment_required(sale: &Sale, error: impl Into<String>) -> Problem {
    let resource = Resource {
        url: sale.url.clone(),
        description: Some(format!(
            "the key of brainctl listing {} (bundle {}), sealed to the payer",
            sale.listing.listing_id, sale.listing.bundle_hash
        )),
        mime_type: Some("application/json".into()),
    };
    let required = PaymentRequired {
        x402_version: 2,
        error: error.into(),
        resource: Some(resource.clone()),
        accepts: vec![sale.requirements.clone()],
    };
    let body = match sale.requirements.to_v1(&resource) {
        Some(v1) => serde_json::to_value(PaymentRequiredV1 {
            x402_version: 1,
            error: required.error.clone(),
            accepts: vec![v1],
        }),
        None => serde_json::to_value(&required),
    }
    .expect("serializes");
    Problem {
        status: StatusCode::PAYMENT_REQUIRED,
        body,
        headers: vec![(wire::PAYMENT_REQUIRED, wire::encode_header(&required))],
    }
}

/// A 402 for a payment the check refused, with x402's reason.
fn refused(sale: &Sale, r: &Refusal) -> Problem {
    tracing::info!(listing = %sale.listing.listing_id, reason = r.reason(), error = %r, "x402 payment refused");
    let mut p = payment_required(sale, r.reason());
    p.body["message"] = json!(r.to_string());
    p
}

/// Where `listen` has got with a buy.
enum Outcome {
    /// Released: its envelope and release transaction.
    Released {
        /// The envelope's item id.
        envelope_id: String,
        /// The release transaction.
        release_sig: String,
    },
    /// Refused by the settlement rules, with the reason.
    Rejected(String),
    /// Not recorded yet, or on its way.
    Pending,
}

/// What `listen` has done with buy `signature`, and the listing it names
/// (`None`: not recorded).
/// Where the buy `signature` stands in `listen`'s state, its listing and
/// its buyer (`None`: not recorded yet).
async fn release_of(
    st: &X402State,
    signature: &str,
) -> Result<(Outcome, Option<(String, Option<String>)>), Problem> {
    let db_path = st.db_path.clone();
    let sig = signature.to_string();
    tokio::task::spawn_blocking(move || {
        let db = ListenDb::open(&db_path)?;
        let Ok(row) = db.get(&sig) else {
            return Ok((Outcome::Pending, None));
        };
        let outcome = match row.state {
            BuyState::Released => match row.envelope_id.zip(row.release_sig) {
                Some((envelope_id, release_sig)) => Outcome::Released {
                    envelope_id,
                    release_sig,
                },
                None => Outcome::Pending,
            },
            BuyState::Rejected => Outcome::Rejected(row.reason.unwrap_or_default()),
            _ => Outcome::Pending,
        };
        Ok::<_, crate::seller::StateError>((outcome, Some((row.listing_id, row.buyer))))
    })
    .await
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payment refused unsent or landed failed answers its settlement
    /// in the header its client's version reads: `X-PAYMENT-RESPONSE` for
    /// v1 (its network under v1's name), `PAYMENT-RESPONSE` for v2, never
    /// both.
    #[test]
    fn a_failed_payment_answers_in_the_header_its_clients_version_reads() {
        let listing_id = "20261207-0123456789ab";
        let mint = TokenMint {
            address: Pubkey::new_unique(),
            program: crate::chain::token::TOKEN_PROGRAM_ID,
            decimals: 6,
        };
        let seller = Pubkey::new_unique().to_string();
        let memo = format!("{}{listing_id}", crate::memo::X402_BUY_PREFIX);
        let sale = Sale {
            listing: ListingRecord {
                listing_id: listing_id.into(),
                manifest_id: "m".into(),
                bundle_hash: "h".into(),
                blob_id: "b".into(),
                metadata_uri: "ar://x".into(),
                payment_address: seller.clone(),
                price_lamports: 2_000_000,
                currency: Currency::Token {
                    mint: mint.address.to_string(),
                },
                expires_at: 0,
                cancelled_at_slot: None,
                list_signature: "l".into(),
                escrow: false,
                usd: None,
            },
            mint,
            memo: memo.clone(),
            requirements: Requirements {
                scheme: "exact".into(),
                network: wire::SOLANA_DEVNET.into(),
                amount: "2000000".into(),
                asset: mint.address.to_string(),
                pay_to: seller.clone(),
                max_timeout_seconds: 60,
                extra: wire::Extra::paying(seller, Some(memo), &mint),
            },
            url: format!("http://localhost/x402/listings/{listing_id}"),
            poll_base: "http://localhost".into(),
        };
        let payer = Pubkey::new_unique();
        for (v1, network, read, other) in [
            (
                true,
                "solana-devnet",
                wire::X_PAYMENT_RESPONSE,
                wire::PAYMENT_RESPONSE,
            ),
            (
                false,
                wire::SOLANA_DEVNET,
                wire::PAYMENT_RESPONSE,
                wire::X_PAYMENT_RESPONSE,
            ),
        ] {
            let ctx = Paid {
                sale: &sale,
                signature: "5igFailed",
                payer,
                network,
                v1,
            };
            for (reason, landed) in [
                ("transaction_failed", true),
                ("transaction_simulation_failed", false),
            ] {
                let r = not_paid(&ctx, reason, "why", landed).into_response();
                assert_eq!(r.status(), StatusCode::PAYMENT_REQUIRED);
                assert!(r.headers().get(other).is_none(), "v1 {v1}: no {other}");
                let header = r.headers().get(read).unwrap().to_str().unwrap();
                let settled: SettleResponse = wire::decode_header(header).unwrap();
                assert_eq!(
                    settled,
                    SettleResponse {
                        success: false,
                        transaction: if landed {
                            "5igFailed".into()
                        } else {
                            String::new()
                        },
                        network: network.into(),
                        payer: Some(payer.to_string()),
                        error_reason: Some(reason.into()),
                    }
                );
            }
        }
    }
}
