//! The log position an answer reflects: a handler notes the head of the
//! state it read ([`note_position`]) and a middleware ([`header`]) names
//! it in the response, so a client of several API servers (a primary and
//! hot standbys) sees how far behind each answer is. Owns that header
//! only; knows no route.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The header naming the log position an answer reflects: the slot and
/// index in block of the last transaction folded into the state it read
/// (`none` before the first), so a client of several API servers (a
/// primary and hot standbys) sees how far behind each answer is.
pub const POSITION_HEADER: &str = "x-indexer-position";

tokio::task_local! {
    /// The position of the state the current request read, if it read one.
    static POSITION: std::cell::Cell<Option<Option<crate::record::Position>>>;
}

/// Notes the position of the state a request read (for its header).
pub fn note_position(last: Option<crate::record::Position>) {
    let _ = POSITION.try_with(|p| p.set(Some(last)));
}

/// Middleware: names the position of the state the request read, if it
/// read one, in [`POSITION_HEADER`].
pub async fn header(req: Request, next: Next) -> Response {
    let (mut res, read) = POSITION
        .scope(std::cell::Cell::new(None), async {
            let res = next.run(req).await;
            (res, POSITION.with(|p| p.get()))
        })
        .await;
    if let Some(last) = read {
        let v = last.map_or("none".to_string(), |(slot, i)| format!("{slot}:{i}"));
        if let Ok(v) = axum::http::HeaderValue::from_str(&v) {
            res.headers_mut().insert(POSITION_HEADER, v);
        }
    }
    res
}
