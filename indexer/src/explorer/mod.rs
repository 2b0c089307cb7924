//! The web explorer: server-rendered HTML at `/` for people (listings with
//! filters and paging, a listing's preview, price history and timeline,
//! a seller's record with a latency chart, escrow state). Reads the same
//! folded state and applies the same visibility rule as the JSON API
//! (`views::may_see_trade`); no sign-in, so a private listing's offers,
//! buys, escrow deposits and every figure or chart bar counting them are
//! never shown.
//!
//! Owns the routes and page assembly; the markup is in [`pages`], the
//! timeline in [`timeline`], the chart in [`chart`]. Never writes.

pub mod chart;
pub mod pages;
pub mod timeline;

use crate::api::AppState;
use crate::fold::State;
use crate::statedb::read::Scope;
use axum::extract::{Path, Query, State as AxState};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;
use std::sync::Arc;

/// Page size of the listings page.
pub const PAGE: usize = 50;

/// The explorer's routes (merged with the API's in [`crate::http::router`]).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/l/{id}", get(listing))
        .route("/s/{pubkey}", get(seller))
}

fn page(status: StatusCode, markup: maud::Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

fn not_found(state: &State, detail: &str) -> Response {
    page(
        StatusCode::NOT_FOUND,
        pages::error(state, "Not found", detail),
    )
}

/// The part of the market `scope` names (see `Indexer::read`), read on
/// the blocking pool; a page saying the store failed, if it did.
async fn read(st: &AppState, scope: Scope) -> Result<Arc<State>, Response> {
    let ix = st.ix.clone();
    let read = tokio::task::spawn_blocking(move || ix.read(&scope)).await;
    match read {
        Ok(Ok(s)) => {
            crate::position::note_position(s.last);
            Ok(s)
        }
        Ok(Err(e)) => Err(page(
            StatusCode::SERVICE_UNAVAILABLE,
            pages::error(&State::new(), "Unavailable", &e.to_string()),
        )),
        Err(e) => Err(page(
            StatusCode::INTERNAL_SERVER_ERROR,
            pages::error(&State::new(), "Internal error", &e.to_string()),
        )),
    }
}

async fn index(
    AxState(st): AxState<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    // the API's own filter parsing: the same limits and the same errors
    let mut q = q;
    q.retain(|_, v| !v.trim().is_empty());
    q.insert("limit".into(), PAGE.to_string());
    let f = match crate::api::parse_filter(&q) {
        Ok(f) => f,
        Err(e) => {
            let s = match read(&st, Scope::Head).await {
                Ok(s) => s,
                Err(r) => return r,
            };
            return page(
                StatusCode::BAD_REQUEST,
                pages::error(&s, "Bad filter", &e.detail),
            );
        }
    };
    let s = match read(&st, Scope::Page(f.clone())).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let (rows, next) = crate::views::listing_page(&s, &f);
    page(StatusCode::OK, pages::listings(&s, &f, &rows, next))
}

async fn listing(AxState(st): AxState<AppState>, Path(id): Path<String>) -> Response {
    let s = match read(&st, Scope::Listing(id.clone())).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let Some(l) = s.listings.get(&id) else {
        return not_found(&s, &format!("No listing {id} on chain."));
    };
    let rows = timeline::of(&s, l);
    let escrows = crate::views::visible_escrows(&s, l, None);
    let links = pages::Links {
        cluster: &st.cluster,
    };
    page(
        StatusCode::OK,
        pages::listing(&s, l, &rows, &escrows, &links),
    )
}

async fn seller(AxState(st): AxState<AppState>, Path(pk): Path<String>) -> Response {
    let s = match read(&st, Scope::Seller(pk.clone())).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if pk.parse::<node::chain::Pubkey>().is_err() {
        return page(
            StatusCode::BAD_REQUEST,
            pages::error(&s, "Bad seller", "A seller is a base58 32-byte key."),
        );
    }
    let latencies = crate::views::release_latencies(&s, &pk, None);
    let rep = crate::views::reputation_with(&s, &pk, st.ix.config(), None, &latencies);
    let listings: Vec<&crate::fold::ListingState> = s
        .listings
        .values()
        .filter(|l| l.seller == pk)
        .map(|l| &**l)
        .collect();
    if listings.is_empty() {
        return not_found(&s, &format!("No listings by {pk} on chain."));
    }
    page(
        StatusCode::OK,
        pages::seller(&s, &rep, &latencies, &listings),
    )
}
