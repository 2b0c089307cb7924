//! Offers: `GET /offers/{id}` (hidden and missing look the same) and the
//! hints `POST /listings/{id}/offers`, `/offers/{id}/counter` and
//! `/offers/{id}/{accept,reject,withdraw}`.

use super::request::{check_cluster, hint, listing_id, offer_id, read, signed_in_on, viewer};
use super::{ApiError, AppState, Res};
use crate::statedb::read::Scope;
use crate::views;
use axum::extract::{Path, Query, State as AxState};
use axum::http::HeaderMap;
use axum::routing::{post, MethodRouter};
use axum::Json;
use node::market::{is_offer_id, MemoOp};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;

pub(super) async fn show_offer(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Json<Value>> {
    check_cluster(&st, &q)?;
    offer_id(&id)?;
    let who = viewer(&st, &headers).await?;
    let s = read(&st, Scope::Offer(id.clone())).await?;
    // a hidden offer is indistinguishable from a missing one
    match s.offers.get(&id) {
        Some(o) if views::may_see_offer(&s, o, who.as_deref()) => {
            Ok(Json(json!({"offer": views::offer(o, s.view_now())})))
        }
        _ => Err(ApiError::not_found(format!("no offer {id} visible to you"))),
    }
}

#[derive(Deserialize)]
pub(super) struct OfferBody {
    manifest: Value,
    offer_arweave_id: String,
    offer_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

pub(super) async fn post_offer(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<OfferBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    listing_id(&id)?;
    let oid = b
        .manifest
        .get("offer_id")
        .and_then(Value::as_str)
        .filter(|i| is_offer_id(i))
        .ok_or_else(|| ApiError::bad("manifest.offer_id is missing or malformed"))?
        .to_string();
    let aid = b.offer_arweave_id.clone();
    hint(
        &st,
        &who,
        &b.offer_tx_signature,
        |op| matches!(op, MemoOp::Offer { listing_id, offer_arweave_id, .. } if *listing_id == id && *offer_arweave_id == aid),
        Some((&b.offer_arweave_id, &b.manifest)),
    )
    .await?;
    offer_reply(&st, &oid, &who).await
}

async fn offer_reply(st: &AppState, id: &str, who: &str) -> Res<Json<Value>> {
    let s = read(st, Scope::Offer(id.to_string())).await?;
    let o = s
        .offers
        .get(id)
        .filter(|o| views::may_see_offer(&s, o, Some(who)))
        .ok_or_else(|| ApiError::conflict(format!("offer {id} is not on chain")))?;
    Ok(Json(
        json!({"ok": true, "offer": views::offer(o, s.view_now())}),
    ))
}

#[derive(Deserialize)]
pub(super) struct ActionBody {
    tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

async fn offer_action(
    st: AppState,
    id: String,
    headers: HeaderMap,
    b: ActionBody,
    wanted: fn(&MemoOp, &str) -> bool,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    offer_id(&id)?;
    hint(&st, &who, &b.tx_signature, |op| wanted(op, &id), None).await?;
    offer_reply(&st, &id, &who).await
}

/// `POST /offers/{id}/<action>`: a hint for the memo `wanted` accepts.
pub(super) fn offer_action_route(wanted: fn(&MemoOp, &str) -> bool) -> MethodRouter<AppState> {
    post(
        move |AxState(st): AxState<AppState>,
              Path(id): Path<String>,
              headers: HeaderMap,
              Json(b): Json<ActionBody>| async move {
            offer_action(st, id, headers, b, wanted).await
        },
    )
}

#[derive(Deserialize)]
pub(super) struct CounterBody {
    manifest: Value,
    counter_arweave_id: String,
    counter_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

pub(super) async fn post_counter(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<CounterBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    offer_id(&id)?;
    let aid = b.counter_arweave_id.clone();
    hint(
        &st,
        &who,
        &b.counter_tx_signature,
        |op| matches!(op, MemoOp::Counter { offer_id, counter_arweave_id, .. } if *offer_id == id && *counter_arweave_id == aid),
        Some((&b.counter_arweave_id, &b.manifest)),
    )
    .await?;
    offer_reply(&st, &id, &who).await
}
