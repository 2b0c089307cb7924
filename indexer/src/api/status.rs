//! `GET /health`, `/state` (the canonical state hash) and `/metrics`
//! (Prometheus text): what an operator or a replica polls. Read-only.

use super::request::{blocking, read};
use super::{AppState, Res};
use crate::statedb::read::Scope;
use axum::extract::State as AxState;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

pub(super) async fn health(AxState(st): AxState<AppState>) -> Res<Json<Value>> {
    let s = read(&st, Scope::Head).await?;
    Ok(Json(json!({
        "ok": true,
        "cluster": st.cluster,
        "last_slot": s.last.map(|p| p.0),
        "block_time": s.now,
        "transactions": s.transactions,
        "listings": s.totals().listings,
        "offers": s.totals().offers,
        "settlements": s.totals().settlements,
    })))
}

/// The canonical state hash (computed once per fold, then cached).
pub(super) async fn state_hash(AxState(st): AxState<AppState>) -> Res<Json<Value>> {
    blocking(&st, |ix| {
        let (s, hash) = ix.head_hash()?;
        Ok(Json(
            json!({"state_hash": hash, "transactions": s.transactions}),
        ))
    })
    .await
}

pub(super) async fn metrics_text(AxState(st): AxState<AppState>) -> Res<impl IntoResponse> {
    let s = read(&st, Scope::Head).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        st.metrics.render(&s, st.ix.config()),
    ))
}
