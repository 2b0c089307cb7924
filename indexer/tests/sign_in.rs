//! Sign-in over HTTP (the real router on 127.0.0.1) against the review's
//! three findings: per-IP limits behind a reverse proxy (the operator's
//! trusted header), challenges requested in a victim's name (several
//! pending per key, the new one refused over the bound, never the
//! victim's evicted), and one default domain for every indexer (a
//! message names its own deployment, so one indexer's challenge cannot
//! be passed off as another's).

use ed25519_dalek::{Signer, SigningKey};
use indexer::api::{AppState, ClientIp, Limiter, Rate, RateLimits};
use indexer::engine::Indexer;
use indexer::fold::FoldConfig;
use indexer::http;
use indexer::store::{SqliteStore, MAX_NONCES_PER_KEY};
use serde_json::{json, Value};
use std::sync::Arc;

struct Served {
    base: String,
    rt: tokio::runtime::Runtime,
}

impl Served {
    fn post(&self, path: &str, body: Value, forwarded_for: Option<&str>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        self.rt.block_on(async {
            let mut req = reqwest::Client::new().post(&url).json(&body);
            if let Some(f) = forwarded_for {
                req = req.header("X-Forwarded-For", f);
            }
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json().await.unwrap())
        })
    }

    fn challenge(&self, pubkey: &str) -> (u16, Value) {
        self.post("/auth/challenge", json!({ "pubkey": pubkey }), None)
    }

    fn verify(&self, key: &SigningKey, c: &Value) -> (u16, Value) {
        let msg = c["message_to_sign"].as_str().unwrap();
        self.post(
            "/auth/verify",
            json!({
                "pubkey": pubkey(key),
                "nonce": c["nonce"],
                "signature_b58": bs58::encode(key.sign(msg.as_bytes()).to_bytes()).into_string(),
            }),
            None,
        )
    }
}

fn pubkey(k: &SigningKey) -> String {
    bs58::encode(k.verifying_key().as_bytes()).into_string()
}

fn indexer(store: SqliteStore) -> Arc<Indexer> {
    Arc::new(Indexer::open(Box::new(store), FoldConfig::default()).unwrap())
}

fn serve(state: AppState) -> Served {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    rt.spawn(http::serve(listener, state, std::future::pending()));
    Served { base, rt }
}

fn fresh() -> Served {
    serve(AppState::new(
        indexer(SqliteStore::in_memory().unwrap()),
        "localnet",
    ))
}

#[test]
fn behind_a_proxy_each_client_has_its_own_sign_in_allowance() {
    let one_a_minute = RateLimits {
        sign_in_per_ip: Rate {
            per_minute: 1,
            burst: 1,
        },
        ..RateLimits::default()
    };
    let trusted = ClientIp::header("X-Forwarded-For", 1).unwrap();
    let s = serve(AppState {
        limiter: Limiter::with_client_ip(one_a_minute, trusted),
        ..AppState::new(indexer(SqliteStore::in_memory().unwrap()), "localnet")
    });
    let pk = pubkey(&SigningKey::from_bytes(&[1; 32]));
    let ask = |via: Option<&str>| s.post("/auth/challenge", json!({ "pubkey": pk }), via).0;
    // every request comes from the proxy's socket (127.0.0.1); the proxy
    // appends the client's address after whatever the client sent
    assert_eq!(ask(Some("203.0.113.1")), 200);
    assert_eq!(
        ask(Some("203.0.113.1")),
        429,
        "the same client, over its limit"
    );
    assert_eq!(ask(Some("203.0.113.2")), 200, "another client has its own");
    // a forged left-hand entry changes nothing: the proxy's entry counts
    assert_eq!(ask(Some("198.51.100.9, 203.0.113.1")), 429);
    // absent or malformed: the socket's own allowance, never a panic
    assert_eq!(ask(Some("not an address")), 200);
    assert_eq!(ask(None), 429, "the socket's allowance is spent");
    assert_eq!(ask(Some(",,")), 429);

    // off (the default): the header is ignored, the socket is the client
    let s = serve(AppState {
        limiter: Limiter::new(one_a_minute),
        ..AppState::new(indexer(SqliteStore::in_memory().unwrap()), "localnet")
    });
    let ask = |via: &str| {
        s.post("/auth/challenge", json!({ "pubkey": pk }), Some(via))
            .0
    };
    assert_eq!(ask("203.0.113.1"), 200);
    assert_eq!(ask("203.0.113.2"), 429);
}

#[test]
fn challenges_in_a_victims_name_never_evict_the_victims_nonce() {
    let s = fresh();
    let victim = SigningKey::from_bytes(&[2; 32]);
    let pk = pubkey(&victim);
    let (code, mine) = s.challenge(&pk);
    assert_eq!(code, 200, "{mine}");
    // an attacker asks for challenges in the victim's name
    for _ in 1..MAX_NONCES_PER_KEY {
        assert_eq!(s.challenge(&pk).0, 200, "several pending per key");
    }
    let (code, refused) = s.challenge(&pk);
    assert_eq!(code, 429, "{refused}");
    assert_eq!(refused["error"], "too_many_challenges");
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains(&pk) && detail.contains("pending sign-in challenges"),
        "{detail}"
    );
    // the victim's own nonce still signs in, once
    let (code, session) = s.verify(&victim, &mine);
    assert_eq!(code, 200, "{session}");
    assert!(session["session_token"].is_string());
    let (code, again) = s.verify(&victim, &mine);
    assert_eq!(
        (code, again["error"].as_str()),
        (401, Some("unknown_nonce"))
    );
    // the used nonce freed a slot
    assert_eq!(s.challenge(&pk).0, 200);
}

fn domain(c: &Value) -> String {
    let msg = c["message_to_sign"].as_str().unwrap();
    let first = msg.lines().next().unwrap();
    first
        .split_once(" wants you to sign in")
        .expect("a sign-in message")
        .0
        .to_string()
}

#[test]
fn a_challenge_names_its_own_deployment_and_cannot_be_relayed() {
    let (a, b) = (fresh(), fresh());
    let victim = SigningKey::from_bytes(&[3; 32]);
    let pk = pubkey(&victim);
    let (_, at_a) = a.challenge(&pk);
    let (_, at_b) = b.challenge(&pk);
    // no two deployments share a default domain
    assert_ne!(domain(&at_a), domain(&at_b), "{at_a} / {at_b}");
    assert_eq!(
        indexer::auth::message_domain(at_a["message_to_sign"].as_str().unwrap()),
        Some(domain(&at_a).as_str())
    );
    // the relay: indexer A passes B's challenge off as its own; a victim
    // who checks the domain (it is A's on every challenge A issues) sees
    // the difference and does not sign
    let (_, again_at_a) = a.challenge(&pk);
    assert_eq!(domain(&again_at_a), domain(&at_a), "stable per deployment");
    assert_ne!(
        domain(&at_b),
        domain(&at_a),
        "B's message does not read as A's"
    );
    // and a signature over A's message opens nothing at B
    let sig_a = bs58::encode(
        victim
            .sign(at_a["message_to_sign"].as_str().unwrap().as_bytes())
            .to_bytes(),
    )
    .into_string();
    for nonce in [&at_a["nonce"], &at_b["nonce"]] {
        let (code, e) = b.post(
            "/auth/verify",
            json!({ "pubkey": pk, "nonce": nonce, "signature_b58": sig_a }),
            None,
        );
        assert_eq!(code, 401, "{e}");
    }

    // kept in the database: a restart (or a replica) says the same
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("indexer.db");
    let first = domain(
        &serve(AppState::new(
            indexer(SqliteStore::open(&db).unwrap()),
            "localnet",
        ))
        .challenge(&pk)
        .1,
    );
    let reopened = domain(
        &serve(AppState::new(
            indexer(SqliteStore::open(&db).unwrap()),
            "localnet",
        ))
        .challenge(&pk)
        .1,
    );
    assert_eq!(first, reopened);
    assert!(first.starts_with("brainctl-indexer-"), "{first}");
    // the operator's --domain wins
    let ix = indexer(SqliteStore::open(&db).unwrap());
    let configured =
        indexer::auth::deployment_domain(&mut **ix.store(), Some("indexer.example.com")).unwrap();
    let s = serve(AppState {
        domain: configured,
        ..AppState::new(ix, "localnet")
    });
    assert_eq!(domain(&s.challenge(&pk).1), "indexer.example.com");
    let ix = indexer(SqliteStore::in_memory().unwrap());
    let bad = indexer::auth::deployment_domain(&mut **ix.store(), Some("evil.example\nNonce: 1"));
    assert!(bad.unwrap_err().to_string().contains("--domain"));
}
