//! `POST /auth/challenge` and `/auth/verify`: sign-in with the wallet's
//! Ed25519 key (the rules and the session store are `crate::auth`).

use super::request::blocking;
use super::{AppState, Res};
use crate::auth;
use axum::extract::State as AxState;
use axum::Json;
use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct ChallengeBody {
    pubkey: String,
}

pub(super) async fn challenge(
    AxState(st): AxState<AppState>,
    Json(b): Json<ChallengeBody>,
) -> Res<Json<auth::Challenge>> {
    let (domain, now) = (st.domain.clone(), (st.clock)());
    blocking(&st, move |ix| {
        Ok(Json(auth::challenge(
            &mut **ix.store(),
            &b.pubkey,
            &domain,
            now,
        )?))
    })
    .await
}

#[derive(Deserialize)]
pub(super) struct VerifyBody {
    pubkey: String,
    nonce: String,
    signature_b58: String,
}

pub(super) async fn verify(
    AxState(st): AxState<AppState>,
    Json(b): Json<VerifyBody>,
) -> Res<Json<auth::Issued>> {
    let now = (st.clock)();
    blocking(&st, move |ix| {
        let issued = auth::verify(
            &mut **ix.store(),
            &b.pubkey,
            &b.nonce,
            &b.signature_b58,
            now,
        )?;
        Ok(Json(issued))
    })
    .await
}
