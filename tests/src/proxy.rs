//! A fault-injecting HTTP proxy between a client (the `listen` daemon, the
//! indexer) and the validator's JSON-RPC port, on 127.0.0.1 only. Its
//! fault can be changed while clients run:
//! - [`Fault::Refuse`]: the port is closed (connections refused), and open
//!   connections are dropped;
//! - [`Fault::Status`]: every request is answered with that HTTP status
//!   (429, 500, 502, 503 …) and a JSON-RPC-looking error body;
//! - [`Fault::Stall`]: every request waits that long before it is served;
//! - [`Fault::HideStatuses`]: `getSignatureStatuses` always says "not
//!   found" (the rest is forwarded);
//! - [`Fault::NoBlockTime`]: `getTransaction` answers lack `blockTime`;
//! - [`Fault::StallSends`]: every `sendTransaction` waits that long before
//!   it is forwarded (slow-landing transactions; the rest is forwarded);
//! - [`Fault::PriorityFees`]: `getRecentPrioritizationFees` answers
//!   that fee in every recent slot (a congested cluster);
//! - [`Fault::DropSends`]: every `sendTransaction` is answered with its
//!   signature and never forwarded (a node that withholds transactions:
//!   it has seen them, the cluster never will);
//! - [`Fault::DropSendsCarrying`]: the same for the sends whose bytes
//!   carry an instruction's discriminator (one kind withheld);
//! - [`Fault::None`]: requests are forwarded unchanged;
//!
//! and, beside the fault, [`FaultProxy::substitute`]: a lying node that
//! answers a method's question about one signature (`getTransaction`,
//! `getSignatureStatuses`) as if asked about another; and
//! [`FaultProxy::simulated`]: every transaction a client asked it to
//! simulate (what an RPC learns before anything is sent).
//!
//! HTTP/1.1 with `Content-Length` bodies (what the Solana client sends),
//! keep-alive honoured; each request is forwarded with reqwest.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to requests now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward.
    None,
    /// Close the port.
    Refuse,
    /// Answer with this HTTP status.
    Status(u16),
    /// Wait this long, then forward.
    Stall(Duration),
    /// Answer every `getSignatureStatuses` with "not found" (a lying
    /// node); forward the rest.
    HideStatuses,
    /// Wait this long before forwarding each `sendTransaction` (a
    /// transaction lands that much later than its simulation ran);
    /// forward the rest at once.
    StallSends(Duration),
    /// Forward everything, but answer `getTransaction` without its block
    /// time (`"blockTime": null`, as nodes do for blocks whose time they
    /// have not got).
    NoBlockTime,
    /// Answer every `getRecentPrioritizationFees` with this fee
    /// (micro-lamports per compute unit) in each of 150 recent slots (a
    /// congested cluster); forward the rest.
    PriorityFees(u64),
    /// Answer every `sendTransaction` with its signature, forwarding
    /// nothing (the transaction never lands); forward the rest.
    DropSends,
    /// [`Fault::DropSends`] for the transactions whose bytes carry these
    /// (an instruction's discriminator: an RPC that withholds one kind of
    /// transaction, e.g. the escrow's reveals); forward the rest.
    DropSendsCarrying([u8; 8]),
}

/// A running proxy (its own thread and runtime; stops with the process).
pub struct FaultProxy {
    /// Where clients connect.
    pub url: String,
    fault: Arc<Mutex<Fault>>,
    wake: tokio::sync::watch::Sender<Fault>,
    /// Requests seen, and requests answered with a fault.
    stats: Arc<Mutex<(u64, u64)>>,
    /// Calls of the method about the first signature ask about the second.
    swap: Swap,
    /// Every transaction asked to be simulated (wire bytes).
    simulated: Simulated,
}

/// Transactions asked to be simulated.
type Simulated = Arc<Mutex<Vec<Vec<u8>>>>;

/// (method, signature asked, signature the proxy asks about instead).
type Swap = Arc<Mutex<Option<(String, String, String)>>>;

impl FaultProxy {
    /// Starts a proxy to `upstream` (an `http://host:port` URL) on a free
    /// loopback port.
    pub fn start(upstream: &str) -> FaultProxy {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = std_listener.local_addr().expect("addr").port();
        std_listener.set_nonblocking(true).expect("nonblocking");
        let fault = Arc::new(Mutex::new(Fault::None));
        let stats = Arc::new(Mutex::new((0, 0)));
        let (wake, watch) = tokio::sync::watch::channel(Fault::None);
        let swap: Swap = Arc::new(Mutex::new(None));
        let simulated: Simulated = Arc::default();
        let (f, s, up, sw, sim) = (
            fault.clone(),
            stats.clone(),
            upstream.to_string(),
            swap.clone(),
            simulated.clone(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("proxy runtime");
            rt.block_on(serve(std_listener, port, up, f, s, (sw, sim), watch));
        });
        FaultProxy {
            url: format!("http://127.0.0.1:{port}"),
            fault,
            wake,
            stats,
            swap,
            simulated,
        }
    }

    /// The wire bytes of every transaction a client asked to simulate
    /// through this proxy so far.
    pub fn simulated(&self) -> Vec<Vec<u8>> {
        self.simulated.lock().expect("simulated lock").clone()
    }

    /// From now on, `method` calls naming `asked` are forwarded naming
    /// `answered` instead (`None`: honest again).
    pub fn substitute(&self, swap: Option<(&str, String, String)>) {
        *self.swap.lock().expect("swap lock") = swap.map(|(m, a, b)| (m.to_string(), a, b));
    }

    /// Sets the fault from now on.
    pub fn set(&self, f: Fault) {
        *self.fault.lock().expect("fault lock") = f;
        let _ = self.wake.send(f);
    }

    /// A chain handle through this proxy, as [`crate::TestValidator::chain`]
    /// makes one (confirmed, watching the escrow program).
    pub fn chain(&self) -> node::chain::Chain {
        node::chain::Chain::new(
            node::chain::Endpoint::parse(&self.url).expect("the proxy's URL"),
            node::chain::parse_commitment("confirmed").expect("valid"),
            &[node::escrow::PROGRAM_ID],
        )
    }

    /// (requests seen, requests faulted) so far.
    pub fn stats(&self) -> (u64, u64) {
        *self.stats.lock().expect("stats lock")
    }
}

async fn serve(
    first: std::net::TcpListener,
    port: u16,
    upstream: String,
    fault: Arc<Mutex<Fault>>,
    stats: Arc<Mutex<(u64, u64)>>,
    (swap, simulated): (Swap, Simulated),
    mut watch: tokio::sync::watch::Receiver<Fault>,
) {
    let client = reqwest::Client::new();
    let mut listener = Some(TcpListener::from_std(first).expect("tokio listener"));
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let refusing = *watch.borrow() == Fault::Refuse;
        if refusing {
            // close the port and every open connection until the fault changes
            listener = None;
            conns.abort_all();
            if watch.changed().await.is_err() {
                return;
            }
            continue;
        }
        let l = match &listener {
            Some(l) => l,
            None => match TcpListener::bind(("127.0.0.1", port)).await {
                Ok(l) => listener.insert(l),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tokio::select! {
            accepted = l.accept() => {
                if let Ok((stream, _)) = accepted {
                    let (c, u, f, s) = (client.clone(), upstream.clone(), fault.clone(), stats.clone());
                    conns.spawn(connection(stream, c, u, f, s, (swap.clone(), simulated.clone())));
                }
            }
            changed = watch.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// Serves one client connection, request by request.
async fn connection(
    stream: TcpStream,
    client: reqwest::Client,
    upstream: String,
    fault: Arc<Mutex<Fault>>,
    stats: Arc<Mutex<(u64, u64)>>,
    (swap, simulated): (Swap, Simulated),
) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    loop {
        let Some((path, mut body)) = read_request(&mut read).await else {
            return;
        };
        let swapping = swap.lock().expect("swap lock").clone();
        if let Some((method, asked, answered)) = swapping {
            let text = String::from_utf8_lossy(&body);
            if text.contains(&format!("\"{method}\"")) && text.contains(&asked) {
                body = text.replace(&asked, &answered).into_bytes();
            }
        }
        if let Some(wire) = transaction_param(&body, "simulateTransaction") {
            simulated.lock().expect("simulated lock").push(wire);
        }
        let now = *fault.lock().expect("fault lock");
        let dropped = match now {
            Fault::DropSends => transaction_param(&body, "sendTransaction"),
            Fault::DropSendsCarrying(bytes) => transaction_param(&body, "sendTransaction")
                .filter(|wire| wire.windows(bytes.len()).any(|w| w == bytes)),
            _ => None,
        };
        let hidden = now == Fault::HideStatuses
            && String::from_utf8_lossy(&body).contains("\"getSignatureStatuses\"");
        let timeless = now == Fault::NoBlockTime
            && String::from_utf8_lossy(&body).contains("\"getTransaction\"");
        let sending = matches!(now, Fault::StallSends(_))
            && String::from_utf8_lossy(&body).contains("\"sendTransaction\"");
        let pricing = matches!(now, Fault::PriorityFees(_))
            && String::from_utf8_lossy(&body).contains("\"getRecentPrioritizationFees\"");
        let faulted = dropped.is_some()
            || hidden
            || timeless
            || sending
            || pricing
            || !matches!(
                now,
                Fault::None
                    | Fault::Stall(_)
                    | Fault::HideStatuses
                    | Fault::NoBlockTime
                    | Fault::StallSends(_)
                    | Fault::PriorityFees(_)
                    | Fault::DropSends
                    | Fault::DropSendsCarrying(_)
            );
        {
            let mut s = stats.lock().expect("stats lock");
            s.0 += 1;
            s.1 += u64::from(faulted);
        }
        let (status, reply) = match now {
            Fault::Refuse => return,
            Fault::Status(code) => (
                code,
                br#"{"jsonrpc":"2.0","error":{"code":-32005,"message":"injected fault"},"id":null}"#
                    .to_vec(),
            ),
            Fault::Stall(d) => {
                tokio::time::sleep(d).await;
                forward(&client, &upstream, &path, body).await
            }
            Fault::StallSends(d) => {
                if sending {
                    tokio::time::sleep(d).await;
                }
                forward(&client, &upstream, &path, body).await
            }
            Fault::HideStatuses if hidden => {
                let id = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(serde_json::Value::Null);
                let reply = serde_json::json!({"jsonrpc": "2.0", "id": id,
                    "result": {"context": {"slot": 0}, "value": [null]}});
                (200, reply.to_string().into_bytes())
            }
            Fault::NoBlockTime if timeless => {
                let (status, reply) = forward(&client, &upstream, &path, body).await;
                match serde_json::from_slice::<serde_json::Value>(&reply) {
                    Ok(mut v) if v["result"].is_object() => {
                        v["result"]["blockTime"] = serde_json::Value::Null;
                        (status, v.to_string().into_bytes())
                    }
                    _ => (status, reply),
                }
            }
            Fault::PriorityFees(fee) if pricing => {
                let id = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(serde_json::Value::Null);
                let fees: Vec<serde_json::Value> = (0..150u64)
                    .map(|slot| serde_json::json!({"slot": slot, "prioritizationFee": fee}))
                    .collect();
                let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": fees});
                (200, reply.to_string().into_bytes())
            }
            Fault::DropSends | Fault::DropSendsCarrying(_) if dropped.is_some() => {
                let wire = dropped.unwrap_or_default();
                // the first signature (after its compact-u16 count, < 128)
                let sig = bs58::encode(wire.get(1..65).unwrap_or_default()).into_string();
                let id = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(serde_json::Value::Null);
                let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": sig});
                (200, reply.to_string().into_bytes())
            }
            Fault::None
            | Fault::HideStatuses
            | Fault::NoBlockTime
            | Fault::PriorityFees(_)
            | Fault::DropSends
            | Fault::DropSendsCarrying(_) => forward(&client, &upstream, &path, body).await,
        };
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            reason(status),
            reply.len()
        );
        if write.write_all(head.as_bytes()).await.is_err() || write.write_all(&reply).await.is_err()
        {
            return;
        }
    }
}

/// The transaction (wire bytes) a JSON-RPC request of `method` carries as
/// its first parameter (base64, as the Solana client sends it).
fn transaction_param(body: &[u8], method: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    if v.get("method")?.as_str()? != method {
        return None;
    }
    let encoded = v.get("params")?.get(0)?.as_str()?;
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

async fn forward(
    client: &reqwest::Client,
    upstream: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let sent = client
        .post(format!("{upstream}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    match sent {
        Ok(r) => {
            let status = r.status().as_u16();
            (
                status,
                r.bytes().await.map(|b| b.to_vec()).unwrap_or_default(),
            )
        }
        // the validator itself is down: what a proxy in front of it says
        Err(_) => (502, b"upstream unreachable".to_vec()),
    }
}

/// One request: its path and body (`Content-Length` framing). `None` at
/// the end of the connection or on anything else.
pub(crate) async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await.ok()?;
    Some((path, body))
}
