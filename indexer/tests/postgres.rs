//! The indexer on PostgreSQL, against a real validator and a real server
//! the harness starts with a hot standby of it (`pg_basebackup`,
//! streaming replication): one writer (`run --pg`, folding into the state
//! tables) and two API servers that fold nothing (`serve --pg`, one
//! reading the primary, one the standby) follow a trade (list, buy, a
//! forged cancel) and serve the same state hash, each answer naming its
//! log position; a session made on one works on the other; the writer
//! killed (SIGKILL) and started again loses and repeats nothing, and the
//! API servers serve what it folds next.

use e2e::indexer_api::Api;
use node::arweave::{FsStore, Uploader};
use node::chain::Signer;
use node::market::manifest::{build_listing, NewListing, LISTING_SCHEMA};
use node::market::tx::post_memo;
use node::market::MemoOp;
use node::wallet::Wallet;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/replica.rs"]
mod replica;

const PRICE: u64 = 50_000_000;

/// A child process killed when the test ends, passed or not.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `brainctl-indexer <args>` with its log in `dir/<name>.log`.
fn spawn(dir: &Path, name: &str, args: &[&str]) -> Owned {
    Owned(
        Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
            .args(args)
            .env("RUST_LOG", "warn,brainctl_indexer=info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("{name}.log"))).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// Polls `GET base/state` until `ok` holds; panics with the last answer.
fn wait_state(api: &Api, rt: &tokio::runtime::Runtime, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // connection refused while the process starts: keep waiting
        let got = rt.block_on(async {
            let res = api
                .http
                .get(format!("{}/state", api.base))
                .send()
                .await
                .ok()?;
            (res.status() == 200).then_some(())?;
            res.json::<Value>().await.ok()
        });
        let (code, body) = match got {
            Some(body) if ok(&body) => return body,
            Some(body) => (200, body),
            None => (0, Value::Null),
        };
        assert!(
            Instant::now() < deadline,
            "{}: not there within 60 s: {code} {body}",
            api.base
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The API of the service `name` spawned in `dir` (on the port it bound).
fn api(dir: &Path, name: &str) -> Api {
    let addr = e2e::logged_listen_address(&dir.join(format!("{name}.log")));
    Api {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
    }
}

fn kill(Owned(child): &mut Owned, signal: i32) {
    unsafe { libc::kill(child.id() as i32, signal) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "did not stop");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_writer_and_two_replicas_share_one_log_and_survive_the_writer_dying() {
    let v = e2e::validator();
    let pg = e2e::postgres::start();
    let standby = pg.standby();
    let rt = e2e::multi_thread_runtime();
    let dir = tempfile::tempdir().unwrap();
    let items = dir.path().join("items");
    let uploader = Uploader::Fs(FsStore::new(&items));
    let (seller, buyer, mallory) = (Wallet::generate(), Wallet::generate(), Wallet::generate());
    for w in [&seller, &buyer, &mallory] {
        v.fund(&w.solana_keypair().pubkey(), 1);
    }

    let items_arg = items.display().to_string();
    let writer_args = [
        "run",
        "--pg",
        &pg.url,
        "--rpc",
        &v.rpc_url,
        "--fs-store",
        &items_arg,
        "--interval-ms",
        "200",
        "--listen",
        "127.0.0.1:0",
    ]
    .map(String::from);
    let writer_args: Vec<&str> = writer_args.iter().map(String::as_str).collect();
    let mut writer = spawn(dir.path(), "writer", &writer_args);
    let writer_api = api(dir.path(), "writer");
    wait_state(&writer_api, &rt, |_| true);
    let mut replicas: Vec<Owned> = [None, Some(&standby.url)]
        .iter()
        .enumerate()
        .map(|(i, read)| {
            let mut args = vec!["serve", "--pg", &pg.url, "--listen", "127.0.0.1:0"];
            if let Some(url) = read {
                args.extend(["--read-pg", url.as_str()]);
            }
            spawn(dir.path(), &format!("replica{i}"), &args)
        })
        .collect();
    let replica_apis: Vec<Api> = (0..2)
        .map(|i| api(dir.path(), &format!("replica{i}")))
        .collect();

    // a trade: list (manifest on the gateway), buy at the listed price
    let listing_id = node::market::list::new_listing_id();
    let manifest = build_listing(
        &seller,
        &NewListing {
            listing_id: &listing_id,
            bundle_hash: &"ab".repeat(32),
            payment_address: None,
            price_usd: 5.0,
            price_lamports: PRICE,
            duration_hours: 24.0,
            visibility: "auction",
            encrypted_bundle_uri: "ar://blob",
            metadata_uri: "ar://meta",
            preview: json!({"memories_count": 1}),
            now: time::OffsetDateTime::now_utc().unix_timestamp(),
            escrow_program: None,
            escrow_terms: None,
            settlement: None,
            usd_at_settle: None,
        },
    )
    .unwrap();
    let chain = v.chain();
    rt.block_on(async {
        let item = uploader
            .put_signed(
                &seller,
                serde_json::to_vec(&manifest).unwrap(),
                "application/json",
                LISTING_SCHEMA,
            )
            .await
            .unwrap();
        let op = MemoOp::List {
            listing_arweave_id: item,
            bundle_hash: "ab".repeat(32),
        };
        post_memo(&chain, &seller, &op, &seller.solana_keypair().pubkey())
            .await
            .unwrap();
        let ixs = node::market::tx::buy_instructions(
            &buyer.solana_keypair().pubkey(),
            &seller.solana_keypair().pubkey(),
            PRICE,
            &listing_id,
            &bs58::encode([7u8; 32]).into_string(),
            &node::chain::instructions::default_registry(),
            None,
        );
        chain.send(&ixs, &[&buyer.solana_keypair()]).await.unwrap();
    });
    let traded = |s: &Value| s["transactions"].as_u64() >= Some(2);
    let at_writer = wait_state(&writer_api, &rt, traded);
    for r in &replica_apis {
        let seen = wait_state(r, &rt, |s| s["state_hash"] == at_writer["state_hash"]);
        assert_eq!(seen["transactions"], at_writer["transactions"]);
    }
    let (code, shown) = rt.block_on(replica_apis[1].get(&format!("/listings/{listing_id}"), None));
    assert_eq!(code, 200, "{shown}");
    assert_eq!(shown["listing"]["manifest"]["listing_id"], listing_id);
    // the standby's answer names the position it reflects: the buy's
    let res = rt
        .block_on(reqwest::get(format!(
            "{}/listings/{listing_id}",
            replica_apis[1].base
        )))
        .unwrap();
    let position = res.headers()["x-indexer-position"]
        .to_str()
        .unwrap()
        .to_string();
    let (slot, index) = position.split_once(':').expect("slot:index");
    assert!(slot.parse::<u64>().unwrap() >= shown["listing"]["listed_slot"].as_u64().unwrap());
    index.parse::<u32>().unwrap();

    // a session made on one replica works on the other (and on the writer)
    let token = rt.block_on(replica_apis[0].sign_in(&buyer));
    for a in [&replica_apis[1], &writer_api] {
        let (code, body) = rt.block_on(a.get(
            &format!(
                "/settlements/{listing_id}?buyer={}",
                buyer.solana_keypair().pubkey()
            ),
            Some(&token),
        ));
        assert_eq!(code, 200, "{}: {body}", a.base);
    }
    // replicas never ingest: a hint there is refused
    let (code, _) = rt.block_on(replica_apis[0].post(
        "/listings",
        json!({"manifest": manifest, "listing_arweave_id": "x", "list_tx_signature": "y"}),
        Some(&token),
    ));
    assert_eq!(code, 503);

    // the writer dies; chain activity goes on; a new writer catches up
    kill(&mut writer, libc::SIGKILL);
    rt.block_on(post_memo(
        &chain,
        &mallory,
        &MemoOp::Cancel {
            listing_id: listing_id.clone(),
        },
        &mallory.solana_keypair().pubkey(),
    ))
    .unwrap();
    let mut writer = spawn(dir.path(), "writer2", &writer_args);
    let writer_api = api(dir.path(), "writer2");
    let caught_up = wait_state(&writer_api, &rt, |s| s["transactions"].as_u64() >= Some(3));
    for r in &replica_apis {
        wait_state(r, &rt, |s| s["state_hash"] == caught_up["state_hash"]);
    }
    let (_, shown) = rt.block_on(replica_apis[0].get(&format!("/listings/{listing_id}"), None));
    assert_eq!(
        shown["listing"]["status"], "live",
        "the forged cancel changed nothing: {shown}"
    );

    // a rebuild of the chain into SQLite reaches the same state
    let out = Command::new(env!("CARGO_BIN_EXE_brainctl-indexer"))
        .args([
            "--json",
            "rebuild",
            "--rpc",
            &v.rpc_url,
            "--fs-store",
            &items_arg,
            "--db",
        ])
        .arg(dir.path().join("rebuilt.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rebuilt: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rebuilt["state_hash"], caught_up["state_hash"]);

    kill(&mut writer, libc::SIGTERM);
    for r in &mut replicas {
        kill(r, libc::SIGTERM);
    }
}

/// A read replica catches up from the last change it applied (change
/// numbers in the shared log): see `support/replica.rs`.
#[test]
fn a_replica_catches_up_from_its_last_change_never_refolding_the_log() {
    let pg = e2e::postgres::start();
    replica::follows_the_writer(|| Box::new(indexer::store::PgStore::connect(&pg.url).unwrap()));
}
