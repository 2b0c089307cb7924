//! Listings: `GET /listings` (browse, filters, paging), `GET
//! /listings/{id}` and `/listings/{id}/offers` (offers shown only to whom
//! may see them), and the hints `POST /listings` and
//! `/listings/{id}/cancel`. The settle route is `settle`.

use super::request::{
    answer, answer_json, check_cluster, hint, known_listing, listing_id, read, signed_in_on,
    to_json, viewer,
};
use super::{ApiError, AppState, Res, MAX_PAGE};
use crate::statedb::read::Scope;
use crate::views::{self, ListingFilter};
use axum::extract::{Path, Query, State as AxState};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use node::market::{is_listing_id, is_pubkey, MemoOp};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The browse filters of a query (shared with the explorer).
pub(crate) fn parse_filter(q: &HashMap<String, String>) -> Res<ListingFilter> {
    let limit = match q.get("limit") {
        None => 20,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| ApiError::bad(format!("`limit` must be 1..={MAX_PAGE}")))?,
    };
    let max_price_usd = q
        .get("max_price_usd")
        .map(|p| {
            p.parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| ApiError::bad("`max_price_usd` must be a non-negative number"))
        })
        .transpose()?;
    let short = |k: &str, max: usize| -> Res<Option<String>> {
        match q.get(k) {
            Some(v) if v.len() > max => Err(ApiError::bad(format!("`{k}` is over {max} bytes"))),
            v => Ok(v.cloned()),
        }
    };
    let f = ListingFilter {
        max_price_usd,
        category: short("category", 64)?,
        visibility: short("visibility", 16)?,
        seller: short("seller_pubkey", 44)?,
        status: short("status", 16)?,
        after: short("cursor", 21)?,
        limit,
    };
    if let Some(v) = &f.visibility {
        if v != "auction" && v != "private" {
            return Err(ApiError::bad("`visibility` must be auction or private"));
        }
    }
    if let Some(s) = &f.status {
        if !["live", "cancelled", "expired", "all"].contains(&s.as_str()) {
            return Err(ApiError::bad(
                "`status` must be live, cancelled, expired or all",
            ));
        }
    }
    if f.seller.as_deref().is_some_and(|s| !is_pubkey(s)) {
        return Err(ApiError::bad("`seller_pubkey` is not a base58 32-byte key"));
    }
    Ok(f)
}

pub(super) async fn browse(
    AxState(st): AxState<AppState>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Response> {
    check_cluster(&st, &q)?;
    let f = parse_filter(&q)?;
    let who = viewer(&st, &headers).await?;
    let a = answer(&st, Scope::Page(f.clone())).await?;
    answer_json(&a, "browse", who.as_deref(), |s, who| {
        to_json(&views::listings(s, &f, who))
    })
}

pub(super) async fn show_listing(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Response> {
    check_cluster(&st, &q)?;
    listing_id(&id)?;
    let who = viewer(&st, &headers).await?;
    let a = answer(&st, Scope::Listing(id.clone())).await?;
    answer_json(&a, "listing", who.as_deref(), |s, who| {
        let l = known_listing(s, &id)?;
        to_json(&json!({
            "listing": views::listing(s, l, who),
            "offers": views::offers_of(s, &id, who),
        }))
    })
}

pub(super) async fn listing_offers(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Res<Response> {
    check_cluster(&st, &q)?;
    listing_id(&id)?;
    let who = viewer(&st, &headers).await?;
    let a = answer(&st, Scope::Listing(id.clone())).await?;
    known_listing(&a.state, &id)?;
    answer_json(&a, "offers", who.as_deref(), |s, who| {
        to_json(&json!({"offers": views::offers_of(s, &id, who)}))
    })
}

#[derive(Deserialize)]
pub(super) struct PostListing {
    manifest: Value,
    listing_arweave_id: String,
    list_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

pub(super) async fn post_listing(
    AxState(st): AxState<AppState>,
    headers: HeaderMap,
    Json(b): Json<PostListing>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    let id = b
        .manifest
        .get("listing_id")
        .and_then(Value::as_str)
        .filter(|i| is_listing_id(i))
        .ok_or_else(|| ApiError::bad("manifest.listing_id is missing or malformed"))?
        .to_string();
    let aid = b.listing_arweave_id.clone();
    hint(
        &st,
        &who,
        &b.list_tx_signature,
        |op| matches!(op, MemoOp::List { listing_arweave_id, .. } if *listing_arweave_id == aid),
        Some((&b.listing_arweave_id, &b.manifest)),
    )
    .await?;
    let s = read(&st, Scope::Listing(id.clone())).await?;
    let l = s
        .listings
        .get(&id)
        .ok_or_else(|| ApiError::conflict("the list memo did not create this listing"))?;
    Ok(Json(
        json!({"ok": true, "listing": views::listing(&s, l, Some(&who))}),
    ))
}

#[derive(Deserialize)]
pub(super) struct CancelBody {
    cancel_tx_signature: String,
    #[serde(default)]
    cluster: Option<String>,
}

pub(super) async fn post_cancel(
    AxState(st): AxState<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(b): Json<CancelBody>,
) -> Res<Json<Value>> {
    let who = signed_in_on(&st, &headers, &b.cluster).await?;
    listing_id(&id)?;
    hint(
        &st,
        &who,
        &b.cancel_tx_signature,
        |op| matches!(op, MemoOp::Cancel { listing_id } if *listing_id == id),
        None,
    )
    .await?;
    let s = read(&st, Scope::Listing(id.clone())).await?;
    let l = known_listing(&s, &id)?;
    Ok(Json(
        json!({"ok": true, "listing": views::listing(&s, l, Some(&who))}),
    ))
}
