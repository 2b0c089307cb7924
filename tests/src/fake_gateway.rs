//! A scripted Arweave gateway on 127.0.0.1 for tests of what a gateway
//! may lie about: for each id it answers `GET /{id}` with a body and
//! `POST /graphql` (`transaction(id:)`) with the signed header of an
//! item, both set by the test and changeable while clients run. Answer an
//! id with its own item to be honest, with another body or another item's
//! header to lie. Unknown ids: 404 and a `null` transaction, as arlocal.
//!
//! HTTP/1.1 with `Content-Length` bodies, one request per connection.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use node::arweave::DataItem;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader};

/// What the gateway answers for one id.
#[derive(Clone)]
struct Answer {
    header: Value,
    body: Vec<u8>,
}

/// A running fake gateway (its own thread and runtime; stops with the
/// process).
pub struct FakeGateway {
    /// Base URL.
    pub url: String,
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    served: Arc<Mutex<u64>>,
}

/// The GraphQL `transaction` of `item`, in arlocal's shape.
pub fn graphql_header(item: &DataItem) -> Value {
    json!({
        "signature": B64URL.encode(item.signature),
        "owner": {"key": B64URL.encode(item.owner)},
        "recipient": item.target.map(|t| B64URL.encode(t)).unwrap_or_default(),
        "anchor": item.anchor.map(|a| B64URL.encode(a)).unwrap_or_default(),
        "tags": item.tags.iter().map(|t| json!({"name": t.name, "value": t.value})).collect::<Vec<_>>(),
    })
}

impl FakeGateway {
    /// Starts a gateway that knows no item.
    pub fn start() -> FakeGateway {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = std_listener.local_addr().expect("addr").port();
        std_listener.set_nonblocking(true).expect("nonblocking");
        let answers: Arc<Mutex<HashMap<String, Answer>>> = Arc::default();
        let served: Arc<Mutex<u64>> = Arc::default();
        let (a, s) = (answers.clone(), served.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("gateway runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                loop {
                    let Ok((conn, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(answer(conn, a.clone(), s.clone()));
                }
            });
        });
        FakeGateway {
            url: format!("http://127.0.0.1:{port}"),
            answers,
            served,
        }
    }

    /// From now on `id` is answered with `header`'s signed header and
    /// `body` as its data (`header.id() == id` and `body == header.data`:
    /// honest).
    pub fn answer(&self, id: &str, header: &DataItem, body: &[u8]) {
        self.answers.lock().expect("answers").insert(
            id.to_string(),
            Answer {
                header: graphql_header(header),
                body: body.to_vec(),
            },
        );
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        *self.served.lock().expect("served")
    }
}

async fn answer(
    conn: tokio::net::TcpStream,
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    served: Arc<Mutex<u64>>,
) {
    let (read, mut write) = conn.into_split();
    let mut read = BufReader::new(read);
    let Some((path, body)) = crate::proxy::read_request(&mut read).await else {
        return;
    };
    *served.lock().expect("served") += 1;
    let known = |id: &str| answers.lock().expect("answers").get(id).cloned();
    let (status, reply) = if path == "/graphql" {
        let query: Value = serde_json::from_slice(&body).unwrap_or_default();
        let text = query["query"].as_str().unwrap_or_default();
        let id = text
            .split("transaction(id: \"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_default();
        let tx = known(id).map_or(Value::Null, |a| a.header);
        (
            200,
            json!({"data": {"transaction": tx}})
                .to_string()
                .into_bytes(),
        )
    } else {
        match known(path.trim_start_matches('/')) {
            Some(a) => (200, a.body),
            None => (404, b"Not Found".to_vec()),
        }
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        crate::proxy::reason(status),
        reply.len()
    );
    let _ = write.write_all(head.as_bytes()).await;
    let _ = write.write_all(&reply).await;
}
