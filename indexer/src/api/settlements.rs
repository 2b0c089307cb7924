//! Settlements and who settled: `GET /settlements/{id}?buyer=`, `GET
//! /sellers/{pubkey}` (reputation) and `GET /escrows/{pubkey}` (an escrow
//! deposit from the program's events). Each shows a private listing's
//! trades only to whom `views::may_see_trade` lets see them (its seller
//! and that buyer, signed in). Read-only.

use super::request::{check_cluster, known_listing, listing_id, read, signed_in, viewer};
use super::{ApiError, AppState, Res};
use crate::statedb::read::Scope;
use crate::views;
use axum::extract::{Path, Query, State as AxState};
use axum::http::HeaderMap;
use axum::Json;
use node::market::is_pubkey;
use serde_json::{json, Value};
use std::collections::HashMap;

/// A buyer's settlement on a listing. A private listing's settlements
/// (price, offer, negotiated terms) only to its seller and that buyer,
/// signed in.
pub(super) async fn settlement(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    check_cluster(&st, &q)?;
    listing_id(&id)?;
    let buyer = q
        .get("buyer")
        .filter(|b| is_pubkey(b))
        .ok_or_else(|| ApiError::bad("`buyer` must be the buyer's base58 pubkey"))?;
    let s = read(&st, Scope::Listing(id.clone())).await?;
    let l = known_listing(&s, &id)?;
    // only a private listing needs a session: a public one answers anyone
    let who = if l.visibility == "private" {
        Some(signed_in(&st, &headers).await?)
    } else {
        None
    };
    if !views::may_see_trade(l, buyer, who.as_deref()) {
        return Err(ApiError::forbidden(
            "a private listing's settlements are shown only to its seller and that buyer: sign in as one of them",
        ));
    }
    Ok(Json(views::settlement_for(&s, &id, buyer, st.ix.config())))
}

/// A seller's figures, counting only the trades the caller may see.
pub(super) async fn seller(
    AxState(st): AxState<AppState>,
    Path(pk): Path<String>,
    headers: HeaderMap,
) -> Res<Json<views::Reputation>> {
    if !is_pubkey(&pk) {
        return Err(ApiError::bad("seller must be a base58 32-byte key"));
    }
    let who = viewer(&st, &headers).await?;
    Ok(Json(views::reputation(
        &*read(&st, Scope::Seller(pk.clone())).await?,
        &pk,
        st.ix.config(),
        who.as_deref(),
    )))
}

/// An escrow-program deposit (from the program's events); a deposit into
/// a private listing is 404 to whoever may not see it.
pub(super) async fn show_escrow(
    AxState(st): AxState<AppState>,
    Path(pk): Path<String>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    if !is_pubkey(&pk) {
        return Err(ApiError::bad("escrow must be a base58 32-byte key"));
    }
    let who = viewer(&st, &headers).await?;
    let s = read(&st, Scope::Escrow(pk.clone())).await?;
    let e = s
        .escrows
        .get(&pk)
        .filter(|e| views::may_see_escrow(&s, e, who.as_deref()))
        .ok_or_else(|| ApiError::not_found(format!("no escrow {pk} on chain")))?;
    Ok(Json(json!({ "escrow_pubkey": pk, "escrow": e })))
}
