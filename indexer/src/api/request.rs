//! What every handler checks before it acts: the cluster a request
//! names, the shape of listing and offer ids, the session token, and the
//! hint path (fetch the named transaction, check it, fold it, report the
//! fold's verdict). Also the blocking pool store and fold work runs on.
//! Owns no route.

use super::{ApiError, AppState, Res};
use crate::auth;
use crate::engine::Indexer;
use crate::fold::{ListingState, State};
use crate::statedb::answers::{Answer, Staleness};
use crate::statedb::read::Scope;
use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use node::market::{is_listing_id, is_offer_id, MemoOp};
use serde_json::Value;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

pub(super) fn check_cluster(st: &AppState, q: &HashMap<String, String>) -> Res<()> {
    match q.get("cluster").map(String::as_str) {
        None => Ok(()),
        Some(c) if c == st.cluster || (c == "localhost" && st.cluster == "localnet") => Ok(()),
        Some(c) => Err(ApiError::bad(format!(
            "`cluster` is {c:?}; this indexer serves {:?}",
            st.cluster
        ))),
    }
}

pub(super) fn listing_id(id: &str) -> Res<()> {
    is_listing_id(id)
        .then_some(())
        .ok_or_else(|| ApiError::bad("listing id must be YYYYMMDD-<12 hex>"))
}

/// The listing `id` in `s`, or 404.
pub(super) fn known_listing<'a>(s: &'a State, id: &str) -> Res<&'a ListingState> {
    s.listings
        .get(id)
        .map(|l| &**l)
        .ok_or_else(|| ApiError::not_found(format!("no listing {id} on chain")))
}

pub(super) fn offer_id(id: &str) -> Res<()> {
    is_offer_id(id)
        .then_some(())
        .ok_or_else(|| ApiError::bad("offer id must be offer-YYYYMMDD-<12 hex>"))
}

pub(super) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// Runs store or fold work on the blocking pool, never on the async
/// workers (a slow disk or a refold must not stall other requests).
pub(super) async fn blocking<T: Send + 'static>(
    st: &AppState,
    f: impl FnOnce(&Indexer) -> Res<T> + Send + 'static,
) -> Res<T> {
    let ix = st.ix.clone();
    tokio::task::spawn_blocking(move || f(&ix))
        .await
        .map_err(|e| ApiError::internal(format!("request task failed: {e}")))?
}

/// The part of the market `scope` names at the tables' current version,
/// read on the blocking pool (see [`Indexer::read`]): what a caller that
/// just acted (a hint, `/settle`) must see.
pub(super) async fn read(st: &AppState, scope: Scope) -> Res<Arc<State>> {
    Ok(answer_at(st, scope, Staleness::Never).await?.state.clone())
}

/// [`read`] for the anonymous `GET` routes, with what anonymous readers
/// were answered from the same state ([`Indexer::answer`]): while another
/// request reads a hot page or listing at a newer commit, the state kept
/// for the commit before (the answer names its position).
pub(super) async fn answer(st: &AppState, scope: Scope) -> Res<Arc<Answer>> {
    answer_at(st, scope, Staleness::WhileRead).await
}

async fn answer_at(st: &AppState, scope: Scope, staleness: Staleness) -> Res<Arc<Answer>> {
    let a = blocking(st, move |ix| Ok(ix.answer(&scope, staleness)?)).await?;
    crate::position::note_position(a.state.last);
    Ok(a)
}

/// The JSON `render` makes of `a`'s state for `who`: for an anonymous
/// reader, the bytes rendered once per kept state, `route` and view time
/// ([`Answer::public`]); for a signed-in one, rendered for them.
pub(super) fn answer_json(
    a: &Answer,
    route: &'static str,
    who: Option<&str>,
    render: impl Fn(&State, Option<&str>) -> Res<Vec<u8>>,
) -> Res<Response> {
    let body = match who {
        None => a.public(route, |s| render(s, None))?,
        Some(w) => Bytes::from(render(&a.state, Some(w))?),
    };
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

/// `v` as JSON bytes.
pub(super) fn to_json(v: &impl serde::Serialize) -> Res<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| ApiError::internal(format!("answer did not serialize: {e}")))
}

/// The signed-in wallet, if a valid session token was sent.
pub(super) async fn viewer(st: &AppState, headers: &HeaderMap) -> Res<Option<String>> {
    let Some(token) = bearer(headers).map(str::to_string) else {
        return Ok(None);
    };
    let now = (st.clock)();
    blocking(st, move |ix| {
        Ok(Some(auth::session(&**ix.store(), &token, now)?))
    })
    .await
}

/// The signed-in wallet; 401 without one.
pub(super) async fn signed_in(st: &AppState, headers: &HeaderMap) -> Res<String> {
    viewer(st, headers).await?.ok_or_else(|| {
        ApiError::unauthorized("sign in first: POST /auth/challenge, then /auth/verify")
    })
}

/// The signed-in wallet of a write (hint) request whose body names, if
/// anything, this indexer's cluster; 401 / 400 otherwise.
pub(super) async fn signed_in_on(
    st: &AppState,
    headers: &HeaderMap,
    cluster: &Option<String>,
) -> Res<String> {
    let who = signed_in(st, headers).await?;
    let mut q = HashMap::new();
    if let Some(c) = cluster {
        q.insert("cluster".to_string(), c.clone());
    }
    check_cluster(st, &q)?;
    Ok(who)
}

/// A hinted transaction: fetch, check, fold; then the fold's verdict.
pub(super) async fn hint(
    st: &AppState,
    who: &str,
    tx_signature: &str,
    wanted: impl Fn(&MemoOp) -> bool,
    manifest: Option<(&str, &Value)>,
) -> Res<()> {
    let source = st
        .hints
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("this indexer runs without RPC; hints are off"))?;
    let sig = node::chain::Signature::from_str(tx_signature)
        .map_err(|_| ApiError::bad("transaction signature is not base58 64 bytes"))?;
    let this = Scope::Transactions(vec![tx_signature.to_string()]);
    let s = read(st, this.clone()).await?;
    if !s.has_folded(tx_signature) {
        let Some(rec) = source.record(&st.ix, sig).await? else {
            return Err(ApiError::not_found(
                "no marketplace transaction with that signature at `confirmed` yet; retry shortly",
            ));
        };
        let ops: Vec<MemoOp> = rec
            .tx
            .memos
            .iter()
            .filter_map(|m| MemoOp::parse(m).ok())
            .collect();
        if !ops.iter().any(&wanted) {
            return Err(ApiError::bad(
                "the transaction carries no memo for this action",
            ));
        }
        if !rec.tx.signed_by(who) {
            return Err(ApiError::forbidden(
                "the transaction is not signed by your wallet",
            ));
        }
        // the body a hint carries is never used: only what the gateway
        // serves as that ANS-104 item (id = hash of its signature) enters
        if let Some((id, _)) = manifest {
            if !rec.manifests.contains_key(id) {
                return Err(ApiError::conflict(format!(
                    "the gateway does not serve manifest {id} yet; the indexer reads it from there (retry once it does)"
                )));
            }
        }
        let final_slot = source.final_slot().await?;
        // queued behind other hints: a flood of old transactions costs
        // one refold per turn, on the blocking pool
        blocking(st, move |ix| {
            ix.ingest_hinted(rec, final_slot)?
                .map(|_| ())
                .ok_or_else(|| {
                    ApiError::unavailable("too many hinted transactions are waiting; retry shortly")
                })
        })
        .await?;
    }
    let s = read(st, this).await?;
    if let Some(rej) = s.rejected.get(tx_signature) {
        let reasons: Vec<String> = rej.iter().map(|r| r.reason.to_string()).collect();
        return Err(ApiError::conflict(format!(
            "the chain does not accept it: {}",
            reasons.join("; ")
        )));
    }
    Ok(())
}
