//! The seller's x402 endpoint: `GET /x402/listings/{listing_id}?buyer=<pubkey>`
//! sells a listing's key to anyone with an x402 client. Unpaid, it answers
//! 402 with the requirements (the listing's mint and price, the seller as
//! payee and fee payer, the buy memo binding the buyer's X25519 key, which
//! is derived from the `buyer` pubkey). Paid (`PAYMENT-SIGNATURE`, or v1's
//! `X-PAYMENT`), it checks the transaction as a facilitator
//! ([`super::verify`]), co-signs, simulates, sends and waits for it, then
//! waits for `listen` (running in the same process, on the same state) to
//! release that buy, and answers with the release: the sealed envelope
//! (the key sealed to the buyer), the blob and the bundle hash.
//!
//! Exactly once by construction: the endpoint never releases anything.
//! The payment is an ordinary buy on chain (the buy memo, the seller's
//! token account; co-signed by the seller as fee payer), which `listen`
//! discovers, verifies and releases like any other, crash-safe. The same
//! payment sent again is the same transaction (the co-signature is
//! deterministic) and gets the same release.
//!
//! Never: holds a write transaction, lets a request make the fee payer
//! move funds (the check refuses it in any instruction), or waits past
//! its budgets (a release not yet made is answered 202 with the buy's
//! signature, to finish with `marketplace fetch`; a payment `listen`
//! refused, 409 with its reason).

use super::verify::{self, Expected, Refusal};
use super::wire::{self, PaymentPayload, PaymentRequired, Requirements, Resource, SettleResponse};
use crate::arweave::Source;
use crate::chain::token::TokenMint;
use crate::chain::{Chain, Pubkey, Signer};
use crate::seller::{BuyState, ListenDb, ListingRecord};
use crate::settle::Currency;
use crate::wallet::Wallet;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the endpoint runs.
#[derive(Debug, Clone)]
pub struct X402Config {
    /// The CAIP-2 id advertised (x402 clients accept only the public
    /// clusters' ids: a local validator advertises devnet's).
    pub network: String,
    /// How long a payment may take (`maxTimeoutSeconds`).
    pub max_timeout_secs: u64,
    /// How long a paid request waits for `listen`'s release.
    pub release_wait: Duration,
    /// Requests served at once (more are answered 503).
    pub concurrency: usize,
    /// Co-signed payments that may land failed in an hour (each costs the
    /// node its fee) before the endpoint stops taking payments for the
    /// rest of that hour.
    pub failures_per_hour: usize,
}

impl X402Config {
    /// Defaults for `network`.
    pub fn new(network: String) -> X402Config {
        X402Config {
            network,
            max_timeout_secs: 60,
            release_wait: Duration::from_secs(90),
            concurrency: 64,
            failures_per_hour: 20,
        }
    }
}

/// What the handlers share.
pub struct X402State {
    chain: Chain,
    seller: Arc<Wallet>,
    db_path: PathBuf,
    source: Source,
    config: X402Config,
    permits: tokio::sync::Semaphore,
    /// Buyers with a payment in flight (one each).
    in_flight: std::sync::Mutex<std::collections::HashSet<Pubkey>>,
    /// When co-signed payments failed to settle, within the last hour.
    failures: std::sync::Mutex<std::collections::VecDeque<std::time::Instant>>,
}

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
        let permits = tokio::sync::Semaphore::new(config.concurrency.max(1));
        Arc::new(X402State {
            chain,
            seller,
            db_path,
            source,
            config,
            permits,
            in_flight: Default::default(),
            failures: Default::default(),
        })
    }
}

/// The endpoint's routes.
pub fn router(state: Arc<X402State>) -> axum::Router {
    axum::Router::new()
        .route("/x402/listings/{listing_id}", axum::routing::get(key))
        .with_state(state)
}

/// Serves the endpoint on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<X402State>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(listen = %listener.local_addr()?, "x402 endpoint serving");
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// An answer that is not a release.
struct Problem {
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
struct KeyQuery {
    buyer: Option<String>,
}

/// The listing, its mint and the buyer, or why this request is refused.
struct Sale {
    listing: ListingRecord,
    mint: TokenMint,
    buyer: Pubkey,
    memo: String,
    requirements: Requirements,
}

async fn key(
    State(st): State<Arc<X402State>>,
    Path(listing_id): Path<String>,
    Query(q): Query<KeyQuery>,
    headers: HeaderMap,
) -> Response {
    let Ok(_permit) = st.permits.try_acquire() else {
        return Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, "busy; retry shortly")
            .into_response();
    };
    // nothing a request does may hold a permit (and the daemon's
    // shutdown) longer than a payment's whole budget
    let budget = Duration::from_secs(st.config.max_timeout_secs)
        + st.config.release_wait
        + Duration::from_secs(30);
    match tokio::time::timeout(budget, sell(&st, &listing_id, q.buyer.as_deref(), &headers)).await {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => p.into_response(),
        Err(_) => Problem::new(
            StatusCode::GATEWAY_TIMEOUT,
            None,
            "the payment did not settle in time; if it landed, `listen` releases it: retry with the same payment to get the key",
        )
        .into_response(),
    }
}

async fn sell(
    st: &X402State,
    listing_id: &str,
    buyer: Option<&str>,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let sale = sale(st, listing_id, buyer).await?;
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
    verify::check(
        &tx,
        &Expected {
            fee_payer: st.seller.solana_keypair().pubkey(),
            payer: sale.buyer,
            mint: sale.mint,
            pay_to: sale.requirements.pay_to.parse().expect("our payee"),
            amount: sale.listing.price_lamports,
            memo: verify::MemoRule::Exactly(&sale.memo),
        },
    )
    .map_err(|r| refused(&sale, &r))?;
    verify::cosign(&mut tx, &st.seller.solana_keypair());
    let signature = tx.signatures[0].to_string();
    // one payment in flight per buyer, and none while failed ones have
    // cost the node its hourly budget
    let _in_flight = InFlight::claim(st, sale.buyer)?;
    if st.recent_failures() >= st.config.failures_per_hour {
        return Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "too many payments failed on chain in the last hour; payments resume later",
        ));
    }
    let network = if v1 {
        wire::v1_network(&st.config.network)
            .unwrap_or_default()
            .to_string()
    } else {
        st.config.network.clone()
    };
    let settled = SettleResponse {
        success: true,
        transaction: signature.clone(),
        network: network.clone(),
        payer: Some(sale.buyer.to_string()),
        error_reason: None,
    };
    // a payment already released (the same one sent again) is answered
    // from the state; otherwise it is sent and waited for
    if !matches!(release_of(st, &signature).await?, Outcome::Released { .. }) {
        if let Err(e) = st.chain.send_cosigned(&tx).await {
            tracing::warn!(listing = %listing_id, buyer = %sale.buyer, error = %e, "x402 payment not settled");
            if matches!(e, crate::chain::ChainError::TxFailed { .. }) {
                st.failed_now();
            }
            let failed = SettleResponse {
                success: false,
                transaction: String::new(),
                network,
                payer: Some(sale.buyer.to_string()),
                error_reason: Some("transaction_failed".into()),
            };
            let mut p = Problem::new(StatusCode::PAYMENT_REQUIRED, None, e);
            p.headers
                .push((wire::PAYMENT_RESPONSE, wire::encode_header(&failed)));
            return Err(p);
        }
        tracing::info!(listing = %listing_id, buyer = %sale.buyer, %signature, "x402 payment landed");
    }
    let deadline = tokio::time::Instant::now() + st.config.release_wait;
    let released = loop {
        match release_of(st, &signature).await? {
            Outcome::Released {
                envelope_id,
                release_sig,
            } => break Some((envelope_id, release_sig)),
            // landed, and `listen` refused it (the listing closed as it
            // landed): said at once, with its reason
            Outcome::Rejected(reason) => {
                let mut p = Problem::new(
                    StatusCode::CONFLICT,
                    None,
                    format!("the payment {signature} landed but the seller's settlement rules refused it: {reason}"),
                );
                p.headers
                    .push((wire::PAYMENT_RESPONSE, wire::encode_header(&settled)));
                return Err(p);
            }
            Outcome::Pending if tokio::time::Instant::now() >= deadline => break None,
            Outcome::Pending => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    };
    let settle_header = wire::encode_header(&settled);
    let mut response = match released {
        Some((envelope_id, release_sig)) => {
            let envelope = st
                .source
                .fetch(&envelope_id, 256 * 1024)
                .await
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            (
                StatusCode::OK,
                axum::Json(json!({
                    "ok": true,
                    "listing_id": listing_id,
                    "buy_signature": signature,
                    "release_signature": release_sig,
                    "envelope_id": envelope_id,
                    "envelope": envelope,
                    "encrypted_bundle_uri": format!("ar://{}", sale.listing.blob_id),
                    "bundle_hash": sale.listing.bundle_hash,
                    "manifest_id": sale.listing.manifest_id,
                })),
            )
                .into_response()
        }
        None => (
            StatusCode::ACCEPTED,
            axum::Json(json!({
                "ok": true,
                "listing_id": listing_id,
                "buy_signature": signature,
                "released": false,
                "finish_with": format!(
                    "brainctl marketplace fetch {} --buy-signature {signature}",
                    sale.listing.manifest_id
                ),
            })),
        )
            .into_response(),
    };
    for name in [wire::PAYMENT_RESPONSE, wire::X_PAYMENT_RESPONSE] {
        if let Ok(v) = HeaderValue::from_str(&settle_header) {
            response.headers_mut().insert(name, v);
        }
    }
    Ok(response)
}

/// A buyer's payment in flight; the claim ends when it drops.
struct InFlight<'a> {
    st: &'a X402State,
    buyer: Pubkey,
}

impl<'a> InFlight<'a> {
    fn claim(st: &'a X402State, buyer: Pubkey) -> Result<InFlight<'a>, Problem> {
        let fresh = st
            .in_flight
            .lock()
            .map(|mut s| s.insert(buyer))
            .unwrap_or(false);
        if !fresh {
            return Err(Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                Some("buyer"),
                "a payment of this buyer is in flight; retry once it is answered",
            ));
        }
        Ok(InFlight { st, buyer })
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.st.in_flight.lock() {
            s.remove(&self.buyer);
        }
    }
}

impl X402State {
    /// Co-signed payments that landed failed in the last hour.
    fn recent_failures(&self) -> usize {
        let Ok(mut f) = self.failures.lock() else {
            return usize::MAX;
        };
        let hour = Duration::from_secs(3600);
        while f.front().is_some_and(|t| t.elapsed() > hour) {
            f.pop_front();
        }
        f.len()
    }

    fn failed_now(&self) {
        if let Ok(mut f) = self.failures.lock() {
            f.push_back(std::time::Instant::now());
        }
    }
}

/// Seconds a listing must still live when a payment is asked for: the
/// payment's own timeout, a blockhash's life (150 blocks) and the
/// commitment's lag, so it lands, and is judged by its block time, before
/// the listing expires.
const EXPIRY_MARGIN_SECS: i64 = 180;

/// The listing (ours, live, in a token, paid to the node's own wallet),
/// its mint, the buyer and the requirements of paying for it.
async fn sale(st: &X402State, listing_id: &str, buyer: Option<&str>) -> Result<Sale, Problem> {
    let bad = |field, why: String| Problem::new(StatusCode::BAD_REQUEST, Some(field), why);
    let buyer: Pubkey = buyer
        .ok_or_else(|| {
            bad(
                "buyer",
                "add ?buyer=<your Solana pubkey>: the key is sealed to it".into(),
            )
        })?
        .parse()
        .map_err(|_| bad("buyer", "not a base58 public key".into()))?;
    // the key is sealed to the buyer's X25519 form: it must have one
    crate::wallet::ed25519_pub_to_x25519(&buyer.to_bytes())
        .ok_or_else(|| bad("buyer", "not an Ed25519 public key (no X25519 form)".into()))?;
    let db_path = st.db_path.clone();
    let id = listing_id.to_string();
    let listing = tokio::task::spawn_blocking(move || {
        let db = ListenDb::open(&db_path)?;
        Ok::<_, crate::seller::StateError>(db.listings()?.into_iter().find(|l| l.listing_id == id))
    })
    .await
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?
    .ok_or_else(|| {
        Problem::new(
            StatusCode::NOT_FOUND,
            Some("listing_id"),
            format!("{listing_id} is not one of this node's listings"),
        )
    })?;
    let gone = |why: String| Problem::new(StatusCode::GONE, Some("listing_id"), why);
    if let Some(slot) = listing.cancelled_at_slot {
        return Err(gone(format!("{listing_id} was cancelled at slot {slot}")));
    }
    let now = st
        .chain
        .cluster_time()
        .await
        .map_err(|e| Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, e))?;
    // the payment must land, and be judged by its block time, before expiry
    if now + EXPIRY_MARGIN_SECS.max(st.config.max_timeout_secs as i64) >= listing.expires_at {
        return Err(gone(format!(
            "{listing_id} has expired or expires within the payment's timeout"
        )));
    }
    if listing.usd.is_some() {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            Some("listing_id"),
            format!("{listing_id} is priced in USD at settle time (its buy carries the program's quote); x402's exact scheme pays a fixed amount: buy it with `brainctl marketplace buy`"),
        ));
    }
    let Currency::Token { mint } = &listing.currency else {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            Some("listing_id"),
            format!("{listing_id} settles in SOL; x402 pays in SPL tokens (buy it with `brainctl marketplace buy`)"),
        ));
    };
    let seller = st.seller.solana_keypair().pubkey();
    if listing.payment_address != seller.to_string() {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            Some("listing_id"),
            format!(
                "{listing_id} is paid to {}, not to this node's wallet (the x402 fee payer)",
                listing.payment_address
            ),
        ));
    }
    let mint_address: Pubkey = mint.parse().map_err(|_| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            "bad mint on record",
        )
    })?;
    let mint = crate::chain::token::read_mint(&st.chain, &mint_address)
        .await
        .map_err(|e| Problem::new(StatusCode::SERVICE_UNAVAILABLE, None, e))?;
    // the compact x402 buy memo: the full one would not fit the client's
    // compute budget; the key is sealed to the buyer's own key's X25519 form
    let memo = format!("{}{listing_id}", crate::memo::X402_BUY_PREFIX);
    let requirements = Requirements {
        scheme: "exact".into(),
        network: st.config.network.clone(),
        amount: listing.price_lamports.to_string(),
        asset: mint.address.to_string(),
        pay_to: seller.to_string(),
        max_timeout_seconds: st.config.max_timeout_secs,
        extra: wire::Extra {
            fee_payer: seller.to_string(),
            memo: Some(memo.clone()),
        },
    };
    Ok(Sale {
        listing,
        mint,
        buyer,
        memo,
        requirements,
    })
}

/// A 402 with the requirements of `sale` and `error` saying why.
fn payment_required(sale: &Sale, error: impl Into<String>) -> Problem {
    let required = PaymentRequired {
        x402_version: 2,
        error: error.into(),
        resource: Some(Resource {
            url: format!(
                "/x402/listings/{}?buyer={}",
                sale.listing.listing_id, sale.buyer
            ),
            description: Some(format!(
                "the key of brainctl listing {} (bundle {}), sealed to the buyer",
                sale.listing.listing_id, sale.listing.bundle_hash
            )),
            mime_type: Some("application/json".into()),
        }),
        accepts: vec![sale.requirements.clone()],
    };
    Problem {
        status: StatusCode::PAYMENT_REQUIRED,
        body: serde_json::to_value(&required).expect("serializes"),
        headers: vec![(wire::PAYMENT_REQUIRED, wire::encode_header(&required))],
    }
}

/// A 402 for a payment the check refused, with x402's reason.
fn refused(sale: &Sale, r: &Refusal) -> Problem {
    tracing::info!(listing = %sale.listing.listing_id, buyer = %sale.buyer, reason = r.reason(), error = %r, "x402 payment refused");
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

/// What `listen` has done with buy `signature`.
async fn release_of(st: &X402State, signature: &str) -> Result<Outcome, Problem> {
    let db_path = st.db_path.clone();
    let sig = signature.to_string();
    tokio::task::spawn_blocking(move || {
        let db = ListenDb::open(&db_path)?;
        Ok::<_, crate::seller::StateError>(match db.get(&sig) {
            Ok(row) if row.state == BuyState::Released => {
                match row.envelope_id.zip(row.release_sig) {
                    Some((envelope_id, release_sig)) => Outcome::Released {
                        envelope_id,
                        release_sig,
                    },
                    None => Outcome::Pending,
                }
            }
            Ok(row) if row.state == BuyState::Rejected => {
                Outcome::Rejected(row.reason.unwrap_or_default())
            }
            _ => Outcome::Pending,
        })
    })
    .await
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))?
    .map_err(|e| Problem::new(StatusCode::INTERNAL_SERVER_ERROR, None, e))
}
