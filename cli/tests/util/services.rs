//! The long-lived services a test runs beside the binaries it drives:
//! the seller's `brainctl marketplace listen` and `brainctl-indexer run`,
//! killed when dropped, logging to files whose tail a failed wait prints.

use super::Env;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn indexer_bin() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_brainctl")).with_file_name("brainctl-indexer");
    assert!(
        p.exists(),
        "{} is missing: `cargo build -p brainctl-indexer` (cargo test --workspace builds it)",
        p.display()
    );
    p
}

pub fn get(url: &str) -> Option<Value> {
    e2e::runtime().block_on(async { reqwest::get(url).await.ok()?.json::<Value>().await.ok() })
}

/// Kills a child on drop (a failed assertion must not leak daemons); its
/// stderr goes to a log whose tail a failed wait prints.
pub struct Running(pub Child, pub PathBuf);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    pub fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// The last lines of its log.
    pub fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.1).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let asked = Instant::now();
        // node::stop: the process ends within its grace (2 s) whatever is
        // in flight; the rest is room for a loaded machine
        let mut deadline = asked + STOP_WITHIN;
        loop {
            if let Some(s) = self.0.try_wait().unwrap() {
                return s;
            }
            if Instant::now() >= deadline {
                // the service ended itself (its watchdog's `_exit`) inside
                // its grace: what is left is the kernel tearing it down,
                // threads finishing I/O on a loaded machine
                let ended = std::fs::read_to_string(&self.1).is_ok_and(|l| l.contains(ENDED));
                if ended && deadline < asked + STOP_WITHIN + TEARDOWN_WITHIN {
                    eprintln!(
                        "ended itself, still being torn down {:?} after SIGTERM: {}",
                        asked.elapsed(),
                        proc_state(self.0.id())
                    );
                    deadline = asked + STOP_WITHIN + TEARDOWN_WITHIN;
                    continue;
                }
                panic!(
                    "no stop within {:?} of SIGTERM ({}); where its threads are:\n{}\nits log ends:\n{}",
                    asked.elapsed(),
                    proc_state(self.0.id()),
                    backtraces(self.0.id()),
                    self.tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// How soon a service must have exited after SIGTERM.
pub const STOP_WITHIN: Duration = Duration::from_secs(6);
/// The line `node::stop`'s watchdog logs as it ends the process.
const ENDED: &str = "still running after the stop's grace: exiting now";
/// How long the kernel may take to reap a process that ended itself.
const TEARDOWN_WITHIN: Duration = Duration::from_secs(30);

/// The kernel's view of process `pid`: its state and each thread's state
/// and wait channel (`D`: uninterruptible, e.g. finishing disk I/O).
pub fn proc_state(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let state = status
        .lines()
        .find(|l| l.starts_with("State:"))
        .unwrap_or("State: ?")
        .to_string();
    let mut threads = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let tid = t.file_name().to_string_lossy().into_owned();
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            // the state follows the command's closing parenthesis
            let s = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("?");
            let wchan = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
            threads.push(format!("{tid}:{s}:{wchan}"));
        }
    }
    format!("{state}; threads {}", threads.join(" "))
}

/// Every thread's stack of process `pid` (gdb), to say what a stop that
/// did not come was waiting for.
pub fn backtraces(pid: u32) -> String {
    match Command::new("gdb")
        .args([
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt",
        ])
        .output()
    {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => format!("(gdb: {e})"),
    }
}

pub fn log(path: &std::path::Path) -> std::fs::File {
    std::fs::File::create(path).unwrap()
}

/// `brainctl-indexer run` reading the chain at `rpc` and the items in
/// `items`; returns it and its URL.
pub fn indexer(rpc: &str, items: &str, work: &std::path::Path) -> (Running, String) {
    indexer_with(rpc, items, work, &[])
}

/// [`indexer`] with `vars` in its environment (e.g. the protocol fee forced on).
pub fn indexer_with(
    rpc: &str,
    items: &str,
    work: &std::path::Path,
    vars: &[(&str, &str)],
) -> (Running, String) {
    let indexer = Running(
        Command::new(indexer_bin())
            .envs(vars.iter().copied())
            .args(["run", "--rpc", rpc, "--fs-store", items, "--db"])
            .arg(work.join("indexer.db"))
            // port 0: the indexer binds a free port itself and logs it
            .args(["--listen", "127.0.0.1:0", "--interval-ms", "300"])
            .env("RUST_LOG", "warn,brainctl_indexer=info")
            .stdout(Stdio::null())
            .stderr(log(&work.join("indexer.log")))
            .spawn()
            .unwrap(),
        work.join("indexer.log"),
    );
    let addr = e2e::logged_listen_address(&indexer.1);
    (indexer, format!("http://{addr}"))
}

/// `GET /listings/{id}` of the indexer at `base` once it shows `releases`
/// releases (or after 20 s).
pub fn listing_with_releases(base: &str, listing_id: &str, releases: u64) -> Value {
    let mut shown = Value::Null;
    for _ in 0..100 {
        if let Some(l) = get(&format!("{base}/listings/{listing_id}")) {
            shown = l;
            if shown["listing"]["releases"] == releases {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    shown
}

/// `brainctl marketplace listen --interval 1 --storage-dir items` (and
/// `extra` flags) as `seller` runs it against `rpc`, logging at
/// `rust_log` to `work/listen.log`.
pub fn listen(
    seller: &Env,
    rpc: &str,
    items: &str,
    work: &std::path::Path,
    extra: &[&str],
    rust_log: &str,
) -> Running {
    let path = work.join("listen.log");
    Running(
        seller
            .cmd()
            .args(["-u", rpc, "--commitment", "confirmed"])
            .args([
                "marketplace",
                "listen",
                "--interval",
                "1",
                "--storage-dir",
                items,
            ])
            .args(extra)
            .env("RUST_LOG", rust_log)
            .stdout(Stdio::null())
            .stderr(log(&path))
            .spawn()
            .unwrap(),
        path,
    )
}

/// `brainctl marketplace listen` for `seller` and `brainctl-indexer run`,
/// both reading the chain at `rpc`. Returns them and the indexer's URL.
pub fn services(
    seller: &Env,
    rpc: &str,
    items: &str,
    work: &std::path::Path,
) -> (Running, Running, String) {
    let (indexer, base) = indexer(rpc, items, work);
    let daemon = listen(
        seller,
        rpc,
        items,
        work,
        &[],
        "warn,node::listen=debug,node::chain=debug",
    );
    (daemon, indexer, base)
}

/// The live indexer at `base` reaches the state a `rebuild` from scratch
/// gives (same transactions, same state hash).
pub fn indexer_matches_rebuild(
    rpc: &str,
    base: &str,
    items: &str,
    work: &std::path::Path,
    why: &str,
) {
    indexer_matches_rebuild_with(rpc, base, items, work, why, &[])
}

/// [`indexer_matches_rebuild`], the rebuild run with `vars` (as its live
/// indexer was).
pub fn indexer_matches_rebuild_with(
    rpc: &str,
    base: &str,
    items: &str,
    work: &std::path::Path,
    why: &str,
    vars: &[(&str, &str)],
) {
    // the live indexer and a rebuild from scratch converge once the chain
    // is quiet: rebuild (into a fresh db each time) until both have read
    // the same transactions, then the hashes must be equal
    let deadline = Instant::now() + Duration::from_secs(90);
    for attempt in 0.. {
        let rebuilt = Command::new(indexer_bin())
            .envs(vars.iter().copied())
            .args([
                "--json",
                "rebuild",
                "--rpc",
                rpc,
                "--fs-store",
                items,
                "--db",
            ])
            .arg(work.join(format!("rebuilt-{attempt}.db")))
            .output()
            .unwrap();
        assert!(
            rebuilt.status.success(),
            "{}",
            String::from_utf8_lossy(&rebuilt.stderr)
        );
        let rebuilt: Value = serde_json::from_slice(&rebuilt.stdout).unwrap();
        let served = get(&format!("{base}/state")).expect("indexer serves /state");
        if served["transactions"] == rebuilt["transactions"] {
            assert_eq!(served["state_hash"], rebuilt["state_hash"], "{why}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{why}: indexer at {served}, rebuild at {rebuilt}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `POST /listings/{listing_id}/settle` at the indexer at `base`, signed in
/// as `buyer`, with `body`: the status and the answer, once the indexer
/// has folded the listing (retried for up to 15 s while it answers 404).
pub fn settle(
    base: &str,
    buyer: &node::wallet::Wallet,
    listing_id: &str,
    body: Value,
) -> (u16, Value) {
    let rt = e2e::runtime();
    let api = e2e::indexer_api::Api {
        base: base.into(),
        http: reqwest::Client::new(),
    };
    let session = rt.block_on(api.sign_in(buyer));
    let path = format!("/listings/{listing_id}/settle");
    let mut answer = (0, Value::Null);
    for _ in 0..50 {
        answer = rt.block_on(api.post(&path, body.clone(), Some(&session)));
        if answer.0 != 404 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    answer
}

/// The unsigned transaction of a `/settle` answer, signed by `buyer` and
/// sent to `v`; its signature once confirmed.
pub fn sign_and_send(
    v: &e2e::TestValidator,
    answer: &Value,
    buyer: &node::chain::Keypair,
) -> String {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(answer["tx_base64"].as_str().expect("tx_base64"))
        .unwrap();
    let mut tx: solana_sdk::transaction::Transaction = bincode::deserialize(&bytes).unwrap();
    let blockhash = tx.message.recent_blockhash;
    tx.try_sign(&[buyer], blockhash).unwrap();
    e2e::runtime()
        .block_on(v.chain().rpc().send_and_confirm_transaction(&tx))
        .unwrap()
        .to_string()
}

/// A hostile "indexer" on a free local port: whatever it is asked, it
/// answers `body` (JSON, 200) to one request, then stops. Returns its URL.
pub fn answering_once(body: String) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        if let Ok((mut conn, _)) = listener.accept() {
            let mut request = [0u8; 4096];
            let _ = conn.read(&mut request);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}
