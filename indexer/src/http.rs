//! The HTTP server one process runs: the JSON API's routes and the
//! explorer's pages on one router, inside the layers both share (the body
//! cap, the rate limits, the request counters), served until a shutdown
//! future resolves. Owns composition only: handlers live in [`crate::api`]
//! and [`crate::explorer`], neither of which knows the other's routes.

use crate::api::{limits, AppState, Metrics, MAX_BODY_BYTES};
use axum::extract::{DefaultBodyLimit, Request, State as AxState};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;

/// The API and the explorer on one router, with `state`.
pub fn router(state: AppState) -> Router {
    crate::api::routes()
        .merge(crate::explorer::routes())
        .layer(middleware::from_fn(crate::position::header))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            state.limiter.clone(),
            limits::limit,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

async fn count(AxState(st): AxState<AppState>, req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    Metrics::add(&st.metrics.http_requests, 1);
    if res.status().as_u16() >= 400 {
        Metrics::add(&st.metrics.http_errors, 1);
    }
    res
}

/// Serves `router(state)` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
