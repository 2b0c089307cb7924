//! `POST /listings/{id}/settle`: the unsigned buy transaction for the
//! signed-in buyer, identical in effect to `brainctl marketplace buy`
//! (same instructions from `node::market::tx::buy_instructions`): pay the
//! price that binds this buyer (the accepted offer's, else the listing's)
//! to the payment address, the settle fee where due, the `buy` memo with
//! the buyer's X25519 key, the discovery reference. The buyer signs.
//!
//! A listing that settles through the escrow program gets the program's
//! `deposit` instead (`node::market::escrow_trade::deposit_plan`, as
//! `buy` sends it): the on-chain listing must match the signed manifest
//! and take deposits, one deposit per buyer; offers do not apply. A direct
//! payment there would never be released. The escrow blob is fetched and
//! checked first, as `buy` checks it (the committed length and root, the
//! promised format and memory count), and one that cannot prove on chain
//! what its manifest promises is refused (`Unproven`): no deposit is built
//! for a listing whose seller could be paid for garbage.
//!
//! A listing that settles in a token (its manifest's `settlement`) gets
//! `node::market::tx::token_buy_instructions`: checked transfers of the
//! listed price in base units of its mint (checked on chain as `buy`
//! checks it) into the payee's associated token account, created where
//! missing. `currency`, when sent, must name what the listing settles in
//! (`SOL` or the mint).

use super::request::{listing_id, offer_id, signed_in_on};
use super::{ApiError, AppState, Res};
use crate::statedb::read::Scope;
use axum::extract::{Path, State as AxState};
use axum::http::HeaderMap;
use axum::Json;
use base64::Engine;
use node::chain::{FeePolicy, Pubkey};
use node::market::escrow_trade::{deposit_plan, EscrowReadError};
use node::market::is_pubkey;
use node::market::tx::buy_instructions;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use solana_sdk::message::Message;
use solana_sdk::transaction::Transaction;
use std::str::FromStr;

#[derive(Deserialize)]
pub(super) struct SettleBody {
    buyer_x25519_pubkey: String,
    #[serde(default)]
    offer_id: Option<String>,
    /// An escrow listing's deposit binds the buyer's blinding point
    /// B = b·G (64 hex), which only the buyer can derive.
    #[serde(default)]
    blind_point: Option<String>,
    #[serde(default)]
    cluster: Option<String>,
    #[serde(default)]
    currency: Option<String>,
}

/// Seconds a listing (or accepted offer) must stay live past the chain's
/// clock for `/settle` to hand out its transaction: the buy has to land
/// and be judged by its own block time before the terms expire.
pub const SETTLE_MARGIN_SECS: i64 = 30;

pub(super) async fn settle(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<SettleBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    listing_id(&id)?;
    if !is_pubkey(&b.buyer_x25519_pubkey) {
        return Err(ApiError::bad(
            "`buyer_x25519_pubkey` is not a base58 32-byte key",
        ));
    }
    let source = st
        .source
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("this indexer runs without RPC; settle is off"))?;
    // expiry by the chain's clock, not the fold's (on a quiet market the
    // newest folded block is old): a buy must land, and `listen` judge it
    // by its block time, before the listing or the offer expires
    let cluster_now = source
        .chain()
        .cluster_time()
        .await
        .map_err(|e| ApiError::unavailable(format!("RPC: {e}")))?;
    let s = super::request::read(&st, Scope::Listing(id.clone())).await?;
    let now = s.now.max(cluster_now).saturating_add(SETTLE_MARGIN_SECS);
    let l = super::request::known_listing(&s, &id)?;
    // `currency`, when sent, must be what the listing settles in
    let settles_in = match &l.currency {
        node::settle::Currency::Sol => "SOL",
        node::settle::Currency::Token { mint } => mint.as_str(),
    };
    if let Some(asked) = b.currency.as_deref().filter(|c| *c != settles_in) {
        return Err(ApiError::conflict(format!(
            "listing {id} settles in {settles_in}, not {asked} (send that `currency`, or omit it)"
        )));
    }
    match l.status(now) {
        "live" => {}
        "expired" => {
            return Err(ApiError::conflict(format!(
                "listing {id} has expired or expires within {SETTLE_MARGIN_SECS} s by the chain's clock (expires_at {}, chain time {cluster_now})",
                l.expires_at
            )))
        }
        other => return Err(ApiError::conflict(format!("listing {id} is {other}"))),
    }
    let buyer = Pubkey::from_str(&who).map_err(|_| ApiError::bad("session pubkey"))?;
    if let Some(program) = l.manifest.get("escrow_program").and_then(Value::as_str) {
        if program != node::escrow::PROGRAM_ID {
            return Err(ApiError::conflict(format!(
                "listing {id} settles through escrow program {program}, not {}; it cannot be settled here",
                node::escrow::PROGRAM_ID
            )));
        }
        if b.offer_id.is_some() {
            return Err(ApiError::conflict(
                "escrow listings settle at the listed price; offers do not apply (omit offer_id)",
            ));
        }
        let listing = node::market::manifest::Listing::from_value((*l.manifest).clone())
            .map_err(|e| ApiError::conflict(format!("the listing's manifest: {e}")))?;
        let x25519 = node::crypto::b58_array::<32>(&b.buyer_x25519_pubkey)
            .ok_or_else(|| ApiError::bad("`buyer_x25519_pubkey` is not a base58 32-byte key"))?;
        let blind: [u8; 32] = b
            .blind_point
            .as_deref()
            .and_then(|h| hex::decode(h).ok())
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| ApiError::bad("an escrow listing's deposit binds your blinding point B = b·G: send `blind_point` (64 hex; docs/escrow-protocol.md says how to derive it, or buy with `brainctl marketplace buy`)"))?;
        let chain = source.chain();
        let plan = deposit_plan(chain, &buyer, &x25519, &blind, &listing, &st.registry, now)
            .await
            .map_err(|e| match e {
                EscrowReadError::Plan(p) => ApiError::conflict(p.to_string()),
                EscrowReadError::Mint(m) => ApiError::conflict(m.to_string()),
                other => ApiError::unavailable(format!("RPC: {other}")),
            })?;
        // the blob a buyer would pay for, checked as `buy` checks it (the
        // listing account matched the manifest above, so its terms are
        // the manifest's)
        let blob = source
            .gateway()
            .fetch(
                node::market::buy::blob_item(&listing),
                node::seal::MAX_BLOB_BYTES,
            )
            .await
            .map_err(|_| {
                ApiError::unavailable(format!(
                    "the listing's escrow blob {} could not be read from this indexer's storage gateway; nothing was built (try again, or buy with `brainctl marketplace buy`)",
                    listing.encrypted_bundle_uri
                ))
            })?;
        let terms = node::market::escrow_trade::manifest_terms(&listing)
            .map_err(|e| ApiError::conflict(e.to_string()))?;
        let proof = node::market::escrow_trade::check_blob_before_paying(
            &terms,
            &node::market::escrow_trade::BlobPromise::of(&listing),
            &blob,
            node::market::escrow_trade::Unproven::Refuse,
        )
        .map_err(|e| ApiError::conflict(e.to_string()))?;
        let account = node::escrow::listing_address(
            &Pubkey::from_str(&listing.seller_pubkey)
                .map_err(|_| ApiError::conflict("the listing's seller is malformed"))?,
            &id,
        );
        let (tx_base64, blockhash, last_valid) =
            unsigned(chain, &plan.instructions, &buyer).await?;
        // in a token, the deposit moves price_units of the mint (its
        // decimals as the chain has them) into the escrow's vault
        let price_units = listing.settlement.as_ref().map(|t| t.price_units);
        return Ok(Json(json!({
            "ok": true,
            "tx_base64": tx_base64,
            "listing_id": id,
            "buyer_pubkey": who,
            "payment_address": l.payment_address,
            "price_lamports": listing.price_lamports,
            "price_units": price_units,
            "decimals": plan.token.map(|t| t.decimals),
            "fee_lamports": 0,
            "offer_id": null,
            "currency": settles_in,
            "escrow": {
                "program": node::escrow::PROGRAM_ID,
                "listing_account": account.to_string(),
                "escrow_account": node::escrow::escrow_address(&account, &buyer).to_string(),
                "blob_proof": proof,
            },
            "recent_blockhash": blockhash,
            "last_valid_block_height": last_valid,
        })));
    }
    let payer = Payer {
        st: &st,
        chain: source.chain(),
        buyer: &buyer,
        listing_id: &id,
        buyer_x25519: &b.buyer_x25519_pubkey,
    };
    if let Some(usd) = &l.usd {
        if b.offer_id.is_some() {
            return Err(ApiError::conflict(
                "a listing priced in USD at settle time is bought at its listed USD price; offers do not apply (omit offer_id)",
            ));
        }
        return settle_usd(&payer, l, &who, usd).await;
    }
    let listed = l.price().ok_or_else(|| {
        ApiError::conflict("the listing fixes no price_lamports; it cannot be settled")
    })?;
    let accepted = s.accepted_for(&id, &who);
    let terms = node::settle::ListingTerms {
        listing_id: id.clone(),
        payment_address: l.payment_address.clone(),
        price_lamports: listed,
        currency: l.currency.clone(),
        expires_at: l.expires_at,
        cancelled_at_slot: None,
        fee: None,
        usd: None,
    };
    // the lowest price binding this wallet now; a named offer must be one of them
    let (price, used_offer) = node::settle::binding_price(&terms, &accepted, &who, now);
    if let Some(o) = &b.offer_id {
        offer_id(o)?;
        if used_offer.as_deref() != Some(o.as_str()) {
            return Err(ApiError::conflict(match accepted.iter().find(|n| n.offer_id == *o) {
                Some(_) => format!("offer {o} has expired or is above the listed price; pay the listed price (omit offer_id)"),
                None => format!("offer {o} is not accepted on chain for your wallet"),
            }));
        }
    }
    let (ixs, mut out) = payer.pay(l, price, vec![]).await?;
    out.insert("offer_id".into(), json!(used_offer));
    payer.respond(&ixs, l, &who, out).await
}

/// What every non-escrow settle builds a payment with.
struct Payer<'a> {
    st: &'a AppState,
    chain: &'a node::chain::Chain,
    buyer: &'a Pubkey,
    listing_id: &'a str,
    buyer_x25519: &'a str,
}

impl Payer<'_> {
    /// The payment of `price` (the fee of the deployment's policy taken
    /// out of it) in the listing's currency after `first` (a USD quote),
    /// and the response's price fields: lamports for SOL; base units, the
    /// mint (checked on chain as `buy` checks it), its program and decimals
    /// for a token.
    async fn pay(
        &self,
        l: &crate::fold::ListingState,
        price: u64,
        first: Vec<solana_sdk::instruction::Instruction>,
    ) -> Res<(
        Vec<solana_sdk::instruction::Instruction>,
        Map<String, Value>,
    )> {
        let chain = self.chain;
        let policy = FeePolicy::from_env(
            chain
                .cluster_kind()
                .await
                .map_err(crate::ingest::IngestError::from)?,
        )
        .map_err(|e| ApiError::unavailable(e.to_string()))?;
        let (_, fee) = policy.split(price);
        let fee_to = (fee > 0).then_some((&policy.treasury, fee));
        let pay_to = Pubkey::from_str(&l.payment_address)
            .map_err(|_| ApiError::conflict("the listing's payment address is malformed"))?;
        let mut ixs = first;
        let (id, x25519, registry) = (self.listing_id, self.buyer_x25519, &self.st.registry);
        let node::settle::Currency::Token { mint: settles_in } = &l.currency else {
            ixs.extend(buy_instructions(
                self.buyer, &pay_to, price, id, x25519, registry, fee_to,
            ));
            let out = json!({"price_lamports": price, "fee_lamports": fee, "currency": "SOL"});
            return Ok((ixs, object(out)));
        };
        let listing = node::market::manifest::Listing::from_value((*l.manifest).clone())
            .map_err(|e| ApiError::conflict(format!("the listing's manifest: {e}")))?;
        let token = listing
            .token()
            .ok_or_else(|| ApiError::conflict("the listing's manifest names no token"))?;
        let mint = node::market::buy::listing_mint(chain, &token)
            .await
            .map_err(|e| match e {
                node::market::buy::BuyError::Chain(c) => ApiError::unavailable(format!("RPC: {c}")),
                other => ApiError::conflict(other.to_string()),
            })?;
        ixs.extend(node::market::tx::token_buy_instructions(
            self.buyer, &pay_to, &mint, price, id, x25519, registry, fee_to,
        ));
        let out = json!({
            "currency": settles_in,
            "token_program": mint.program.to_string(),
            "decimals": mint.decimals,
            "price_units": price,
            "fee_units": fee,
        });
        Ok((ixs, object(out)))
    }

    /// The response: `ixs` unsigned for the buyer, with `fields`.
    async fn respond(
        &self,
        ixs: &[solana_sdk::instruction::Instruction],
        l: &crate::fold::ListingState,
        who: &str,
        fields: Map<String, Value>,
    ) -> Res<Json<Value>> {
        let (tx_base64, blockhash, last_valid) = unsigned(self.chain, ixs, self.buyer).await?;
        let mut out = object(json!({
            "ok": true,
            "tx_base64": tx_base64,
            "listing_id": self.listing_id,
            "buyer_pubkey": who,
            "payment_address": l.payment_address,
            "offer_id": null,
            "recent_blockhash": blockhash,
            "last_valid_block_height": last_valid,
        }));
        out.extend(fields);
        Ok(Json(Value::Object(out)))
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A listing priced in USD at settle time: its price account read now
/// (the rule's refusal is a 409), the program's `quote_usd` bounded by
/// what the buy pays, then the payment in the listing's currency (SOL or
/// its token); offers do not apply.
async fn settle_usd(
    payer: &Payer<'_>,
    l: &crate::fold::ListingState,
    who: &str,
    usd: &node::settle::UsdTerms,
) -> Res<Json<Value>> {
    let quote = node::market::usd_price::quote_now(payer.chain, usd, &l.currency)
        .await
        .map_err(|e| match e {
            node::market::usd_price::UsdPriceError::Chain(c) => {
                ApiError::unavailable(format!("RPC: {c}"))
            }
            other => ApiError::conflict(other.to_string()),
        })?;
    let price = quote.units;
    let first = vec![node::market::usd_price::quote_instruction(usd, price)
        .map_err(|e| ApiError::conflict(e.to_string()))?];
    let (ixs, mut out) = payer.pay(l, price, first).await?;
    out.insert("usd".into(), json!(quote));
    payer.respond(&ixs, l, who, out).await
}

/// `ixs` as an unsigned transaction paid by `buyer` on a fresh blockhash:
/// (base64 bytes, blockhash, last valid block height).
async fn unsigned(
    chain: &node::chain::Chain,
    ixs: &[solana_sdk::instruction::Instruction],
    buyer: &Pubkey,
) -> Res<(String, String, u64)> {
    let (blockhash, last_valid) = chain
        .rpc()
        .get_latest_blockhash_with_commitment(
            solana_commitment_config::CommitmentConfig::confirmed(),
        )
        .await
        .map_err(|e| ApiError::unavailable(format!("RPC: {e}")))?;
    let tx = Transaction::new_unsigned(Message::new_with_blockhash(ixs, Some(buyer), &blockhash));
    let bytes = bincode::serialize(&tx).map_err(|e| ApiError::unavailable(e.to_string()))?;
    Ok((
        base64::engine::general_purpose::STANDARD.encode(bytes),
        blockhash.to_string(),
        last_valid,
    ))
}
