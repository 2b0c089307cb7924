//! The `brainctl` binary against a real solana-test-validator (started by
//! the e2e harness on free ports): balances, airdrops, pins and the
//! on-chain verify.

mod util;

use util::Env;

fn onchain(e: &Env, args: &[&str]) -> util::Run {
    let v = e2e::validator();
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    e.run(&full)
}

fn ok(e: &Env, args: &[&str]) -> serde_json::Value {
    let r = onchain(e, args);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
}

/// A fresh home with a wallet funded with 1 SOL and one memory.
fn funded_with_memory(text: &str, category: &str) -> Env {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    ok(&e, &["wallet", "airdrop", "1", "--json"]);
    e.ok(&["memory", "add", text, "-c", category]);
    e
}

/// A seller whose signed bundle of `memories` is listed at `price_usd` (at
/// `sol_usd`), a funded buyer, and storage both sides read.
struct Market {
    seller: Env,
    buyer: Env,
    shared: tempfile::TempDir,
    listed: serde_json::Value,
}

impl Market {
    fn dir(&self) -> String {
        self.shared.path().join("items").display().to_string()
    }
}

/// Runs `brainctl <buy_args>` for the buyer in the background while the
/// seller's `listen --once` runs until it releases one buy (asserting no
/// rejection); returns the buyer's output.
fn buy_while_listening(
    buyer: &Env,
    seller: &Env,
    dir: &str,
    buy_args: &[&str],
    why: &str,
) -> std::process::Output {
    let v = e2e::validator();
    let buy = buyer
        .cmd()
        .args(["-u", v.rpc_url.as_str(), "--commitment", "confirmed"])
        .args(buy_args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut released = false;
    for _ in 0..60 {
        let pass = ok(
            seller,
            &[
                "marketplace",
                "listen",
                "--once",
                "--storage-dir",
                dir,
                "--json",
            ],
        );
        assert_eq!(pass["pass"]["rejected"], 0, "{pass}");
        if pass["pass"]["released"] == 1 {
            released = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert!(released, "{why}");
    buy.wait_with_output().unwrap()
}

/// `brainctl-indexer run` on the shared validator, manifests from `dir`,
/// with `vars` in its environment; its base URL and work dir.
fn indexer_on(
    dir: &str,
    vars: &[(&str, &str)],
) -> (util::services::Running, String, tempfile::TempDir) {
    let v = e2e::validator();
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("indexer.log");
    let indexer = util::services::Running(
        std::process::Command::new(util::services::indexer_bin())
            .args([
                "run",
                "--rpc",
                v.rpc_url.as_str(),
                "--fs-store",
                dir,
                "--db",
            ])
            .arg(work.path().join("indexer.db"))
            .args(["--listen", "127.0.0.1:0", "--interval-ms", "300"])
            .envs(vars.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(util::services::log(&log))
            .spawn()
            .unwrap(),
        log,
    );
    let base = format!("http://{}", e2e::logged_listen_address(&indexer.1));
    (indexer, base, work)
}

fn market(memories: &[&str], price_usd: &str, sol_usd: &str) -> Market {
    market_with(memories, price_usd, sol_usd, &[])
}

/// [`market`] with `vars` set for both sides (e.g. gateway storage).
fn market_with(memories: &[&str], price_usd: &str, sol_usd: &str, vars: &[(&str, &str)]) -> Market {
    let (seller, buyer) = (Env::new().with_vars(vars), Env::new().with_vars(vars));
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    for e in [&seller, &buyer] {
        e.ok(&["wallet", "new"]);
        ok(e, &["wallet", "airdrop", "2", "--json"]);
    }
    for text in memories {
        seller.ok(&["memory", "add", text, "-c", "lesson"]);
    }
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let listed = ok(
        &seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            price_usd,
            "--sol-usd",
            sol_usd,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    Market {
        seller,
        buyer,
        shared,
        listed,
    }
}

#[test]
fn airdrop_then_balance() {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    assert_eq!(ok(&e, &["wallet", "balance", "--json"])["lamports"], 0);
    let drop = ok(&e, &["wallet", "airdrop", "2", "--json"]);
    assert_eq!(drop["balance_lamports"], 2_000_000_000u64);
    assert_eq!(
        ok(&e, &["wallet", "balance", "--json"])["lamports"],
        2_000_000_000u64
    );
    let bad = onchain(&e, &["wallet", "airdrop", "-1"]);
    assert_eq!(bad.code, 2);
}

#[test]
fn pin_then_check_onchain() {
    let e = funded_with_memory("Deploys go through staging first", "project");
    let ex = ok(
        &e,
        &[
            "export",
            "--sign",
            "--pin-onchain",
            "-o",
            "p.signed.json",
            "--json",
        ],
    );
    assert_eq!(ex["pinned_onchain"], true);
    let sig = ex["pin"]["signature"].as_str().unwrap().to_string();
    let receipt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(e.path("p.signed.json.pin.json")).unwrap())
            .unwrap();
    assert_eq!(receipt["signature"], sig.as_str());
    assert_eq!(
        receipt["memo"],
        format!(
            "brainctl/v1:{}:{}",
            ex["bundle_hash"].as_str().unwrap(),
            ex["signer_pubkey"].as_str().unwrap()
        )
    );

    let v = ok(
        &e,
        &["verify", "--check-onchain", "p.signed.json", "--json"],
    );
    assert_eq!(v["onchain"]["pinned"], true);
    assert_eq!(v["onchain"]["pin"]["signature"], sig.as_str());

    // a bundle signed but never pinned: exit 2 with the reason
    let ex2 = ok(
        &e,
        &["export", "--sign", "-o", "unpinned.signed.json", "--json"],
    );
    assert_eq!(ex2["pinned_onchain"], false);
    let r = onchain(&e, &["verify", "--check-onchain", "unpinned.signed.json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not pinned"), "{}", r.stderr);
}

#[test]
fn bad_cluster_is_bad_input() {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    let r = e.run(&["-u", "mainnet-bet", "wallet", "balance"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("localhost"), "{}", r.stderr);
}

#[test]
fn export_mint_encrypts_uploads_keeps_key_and_mints_one_token() {
    use node::arweave::FsStore;
    use node::chain::Pubkey;
    let e = funded_with_memory("Retry with jittered backoff", "lesson");
    let buyer = "GcQfK48DV9BzDuDeCyV2sShbAAY4vqmK8JSj1NBrwoVZ";
    let ex = ok(
        &e,
        &[
            "export",
            "--sign",
            "--mint",
            "--token-standard",
            "token2022",
            "--recipient",
            buyer,
            "-o",
            "m.signed.json",
            "--json",
        ],
    );
    let m = &ex["mint"];
    let hash = ex["bundle_hash"].as_str().unwrap();

    // the key file is private and decrypts the stored blob to the bundle
    let key_path = std::path::PathBuf::from(m["key_path"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let key = node::seal::key_from_hex(&std::fs::read_to_string(&key_path).unwrap()).unwrap();
    let store = FsStore::new(e.path(".brainctl/items"));
    let blob = store.get(m["blob_id"].as_str().unwrap()).unwrap();
    assert_eq!(
        blob.tag("Content-Type"),
        Some("application/x-brnctl-encrypted-bundle")
    );
    let plain = node::seal::decrypt_blob(&key, &blob.data).unwrap();
    assert_eq!(hex::encode(node::crypto::sha256(&plain)), hash);

    // the metadata names the blob; the mint names the metadata
    let meta_item = store.get(m["metadata_id"].as_str().unwrap()).unwrap();
    assert_eq!(meta_item.tag("Schema"), Some("brnctl/mint/v1/metadata"));
    let meta: serde_json::Value = serde_json::from_slice(&meta_item.data).unwrap();
    assert_eq!(
        meta["properties"]["files"][0]["uri"],
        format!("ar://{}", m["blob_id"].as_str().unwrap())
    );
    let chain = e2e::validator().chain();
    let mint: Pubkey = m["mint"].as_str().unwrap().parse().unwrap();
    assert_eq!(m["token_standard"], "token2022");
    let acct: Pubkey = m["token_account"].as_str().unwrap().parse().unwrap();
    let state = e2e::runtime()
        .block_on(node::mint::token2022::read_nft(&chain, &mint, &acct))
        .unwrap();
    assert_eq!(state.mint.uri, m["metadata_uri"].as_str().unwrap());
    assert_eq!(
        (
            state.holder_amount,
            state.mint.supply,
            state.mint.mint_authority
        ),
        (1, 1, None)
    );
    assert_eq!(state.holder.to_string(), buyer);
    assert!(e.path("m.signed.json.mint.json").exists());
}

#[test]
fn export_mint_defaults_to_one_light_compressed_token() {
    let e = funded_with_memory("Deploys go through staging first", "lesson");
    let buyer = "GcQfK48DV9BzDuDeCyV2sShbAAY4vqmK8JSj1NBrwoVZ";
    let ex = ok(
        &e,
        &[
            "export",
            "--sign",
            "--mint",
            "--recipient",
            buyer,
            "-o",
            "l.signed.json",
            "--json",
        ],
    );
    let m = &ex["mint"];
    assert_eq!(m["token_standard"], "light");
    assert!(
        m.get("token_account").is_none(),
        "compressed: no token account"
    );
    let mint: node::chain::Pubkey = m["mint"].as_str().unwrap().parse().unwrap();
    let chain = e2e::validator().chain();
    let rt = e2e::runtime();
    let state = rt
        .block_on(node::mint::token2022::read_mint(&chain, &mint))
        .unwrap();
    assert_eq!(
        (state.supply, state.decimals, state.mint_authority),
        (1, 0, None),
        "supply 1, authority revoked"
    );
    assert_eq!(
        state.uri,
        m["metadata_uri"].as_str().unwrap(),
        "URI on the mint"
    );
    assert_eq!(state.metadata_address, Some(mint));
    let sig = m["signature"].as_str().unwrap().parse().unwrap();
    let outputs = rt
        .block_on(node::mint::light::minted_outputs(&chain, &sig))
        .unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(
        (outputs[0].owner.to_string(), outputs[0].amount),
        (buyer.to_string(), 1),
        "the recipient holds exactly 1"
    );
}

/// The fixed-price trade through the real binaries: list, buy (waiting in
/// the background), listen --once, and the buyer's quarantined import.
#[test]
fn marketplace_list_buy_listen_import() {
    let m = market(
        &[
            "Deploys go through staging first",
            "Retry with jittered backoff",
        ],
        // a cent, listed with no flag (issue 46)
        "0.01",
        "150",
    );
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        listed["listing"]["price_lamports"], 66_667u64,
        "0.01 USD at 150 USD/SOL"
    );
    let seller_lamports = || {
        ok(seller, &["wallet", "balance", "--json"])["lamports"]
            .as_u64()
            .unwrap()
    };
    let seller_before = seller_lamports();

    let out = buy_while_listening(
        buyer,
        seller,
        dir,
        &[
            "marketplace",
            "buy",
            &manifest,
            "--storage-dir",
            dir,
            "--timeout",
            "60",
            "--json",
        ],
        "listen released the buy",
    );
    assert!(
        out.status.success(),
        "buy failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the seller keeps the price less what its release cost: one
    // signature and a unit of the listing's own receipt mint
    let release_cost = 66_667 - (seller_lamports() as i64 - seller_before as i64);
    assert!(
        (5_000..=10_300).contains(&release_cost),
        "the release cost the seller {release_cost} lamports"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let scope = report["import"]["scope"].as_str().unwrap().to_string();
    assert_eq!(
        scope,
        format!(
            "imported:{}",
            listed["listing"]["listing_id"].as_str().unwrap()
        )
    );
    let rows = buyer.ok(&["memory", "list", "-s", &scope, "--json"]).json();
    let mut got: Vec<String> = rows["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            "Deploys go through staging first",
            "Retry with jittered backoff"
        ]
    );
    // a second pass releases nothing more
    let again = ok(
        seller,
        &[
            "marketplace",
            "listen",
            "--once",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(again["pass"]["released"], 0);
    assert_eq!(again["counts"], serde_json::json!([["released", 1]]));
}

/// A listing that settles in the localnet's test dollar: `list --mint`
/// signs the mint and the price in base units (no lamport price), the
/// buyer's quote and spend policy count the token, the buy pays by a
/// checked transfer into the seller's token account, `listen` releases it
/// once, and the balances moved by exactly the price. A buyer without the
/// tokens is refused before anything is sent; a mint that is not a dollar
/// needs a rate. The indexer folds the same buy as released, and its
/// `/settle` hands a second buyer the token payment, which `listen`
/// releases too.
#[test]
fn a_token_listing_trades_in_test_dollars() {
    let v = e2e::validator();
    let dollar = node::chain::test_dollar::ADDRESS.to_string();
    let (seller, buyer, broke) = (Env::new(), Env::new(), Env::new());
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let dir = dir.as_str();
    for e in [&seller, &buyer, &broke] {
        e.ok(&["wallet", "new"]);
        ok(e, &["wallet", "airdrop", "1", "--json"]);
    }
    let address = |e: &Env| -> node::chain::Pubkey {
        e.ok(&["wallet", "address"]).stdout.trim().parse().unwrap()
    };
    v.fund_dollars(&address(&buyer), 20);
    seller.ok(&[
        "memory",
        "add",
        "Pay in dollars, settle on chain",
        "-c",
        "lesson",
    ]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let list = |extra: &[&str]| {
        let mut args = vec![
            "marketplace",
            "list",
            "b.signed.json",
            // a cent: what agents pay for things (issue 46)
            "--price-usd",
            "0.01",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
            "--json",
        ];
        args.extend_from_slice(extra);
        onchain(&seller, &args)
    };
    // a mint whose unit is not known to be a dollar needs --token-usd
    let other_mint = v.create_mint(9).to_string();
    let unrated = list(&["--mint", &other_mint]);
    assert_eq!(unrated.code, 2, "{}", unrated.stdout);
    assert!(
        unrated
            .stdout
            .contains("is not a known dollar stablecoin: pass --token-usd"),
        "{}",
        unrated.stdout
    );
    let rated = list(&["--mint", &other_mint, "--token-usd", "2.5"]);
    assert_eq!(rated.code, 0, "{}", rated.stdout);
    assert_eq!(
        rated.json()["listing"]["price_lamports"],
        4_000_000u64,
        "a cent at 2.5 USD per token of 9 decimals"
    );

    let (_indexer, base, _work) = indexer_on(dir, &[]);
    let listed = list(&["--mint", &dollar]);
    assert_eq!(listed.code, 0, "{}", listed.stdout);
    let listed = listed.json();
    assert_eq!(
        listed["listing"]["currency"],
        serde_json::json!({"kind": "token", "mint": dollar})
    );
    assert_eq!(listed["listing"]["price_lamports"], 10_000u64);
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    seller.ok(&[
        "storage",
        "get",
        manifest,
        "--storage-dir",
        dir,
        "-o",
        "listing.json",
    ]);
    let signed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(seller.path("listing.json")).unwrap()).unwrap();
    assert!(signed.get("price_lamports").is_none(), "{signed}");
    assert_eq!(signed["settlement"]["price_units"], "10000", "{signed}");

    // the quote: 10,000 base units, 0 lamports of price
    let quote = ok(
        &buyer,
        &[
            "marketplace",
            "quote",
            manifest,
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(quote["quote"]["token"]["price_units"], 10_000u64, "{quote}");
    assert_eq!(quote["quote"]["token"]["mint"], dollar.as_str());
    assert_eq!(quote["quote"]["price_lamports"], 0);
    assert_eq!(
        quote["quote"]["total_lamports"], 5_000,
        "the network fee alone: the seller's token account was made with the listing"
    );
    // a buyer without the tokens: refused before anything is sent
    let refused = onchain(
        &broke,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            dir,
            "--timeout",
            "5",
            "--json",
        ],
    );
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert_eq!(
        e2e::runtime()
            .block_on(v.chain().balance(&address(&broke)))
            .unwrap(),
        1_000_000_000,
        "nothing sent: {}",
        refused.stdout
    );

    let out = buy_while_listening(
        &buyer,
        &seller,
        dir,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            dir,
            "--timeout",
            "60",
            "--json",
        ],
        "listen released the token buy",
    );
    assert!(
        out.status.success(),
        "buy failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let scope = report["import"]["scope"].as_str().unwrap().to_string();
    let rows = buyer.ok(&["memory", "list", "-s", &scope, "--json"]).json();
    assert_eq!(
        rows["memories"][0]["content"],
        "Pay in dollars, settle on chain"
    );
    let held = |e: &Env| {
        let b = ok(e, &["token", "balance", "--mint", &dollar, "--json"]);
        b["units"].as_u64().unwrap()
    };
    assert_eq!((held(&seller), held(&buyer)), (10_000, 19_990_000));
    let again = ok(
        &seller,
        &[
            "marketplace",
            "listen",
            "--once",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(again["pass"]["released"], 0);
    assert_eq!(again["counts"], serde_json::json!([["released", 1]]));

    // the indexer, from chain memos and the manifest alone
    let listing_id = listed["listing"]["listing_id"].as_str().unwrap();
    let shown = util::services::listing_with_releases(&base, listing_id, 1);
    assert_eq!(shown["listing"]["sales"], 1, "{shown}");
    assert_eq!(
        shown["listing"]["currency"],
        serde_json::json!({"kind": "token", "mint": dollar})
    );
    assert_eq!(shown["listing"]["price_units"], 10_000u64);
    assert_eq!(shown["listing"]["price_lamports"], serde_json::Value::Null);

    // a listing is named by its listing id or its manifest's item id alike
    let by_id = ok(
        &buyer,
        &[
            "marketplace",
            "quote",
            listing_id,
            "--indexer",
            &base,
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(by_id["quote"]["listing_id"], listing_id, "{by_id}");
    assert_eq!(by_id["quote"]["token"]["price_units"], 10_000u64);
    let by_manifest = buyer
        .ok(&[
            "marketplace",
            "show",
            manifest,
            "--indexer",
            &base,
            "--storage-dir",
            dir,
            "--json",
        ])
        .json();
    assert_eq!(by_manifest["listing"]["listing_id"], listing_id);
    assert_eq!(by_manifest["listing"]["sales"], 1);
    let mine = ok(&seller, &["marketplace", "status", manifest, "--json"]);
    let rows = mine["listings"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{mine}");
    assert_eq!(rows[0]["listing_id"], listing_id);
    // an indexer that names another listing's manifest is caught: the
    // manifest fetched must carry the listing id asked for
    let other = rated.json()["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let liar = util::services::answering_once(
        serde_json::json!({"listing": {"listing_arweave_id": other}}).to_string(),
    );
    let fooled = onchain(
        &buyer,
        &[
            "marketplace",
            "quote",
            listing_id,
            "--indexer",
            &liar,
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(fooled.code, 2, "{}{}", fooled.stdout, fooled.stderr);
    assert!(
        fooled.stdout.contains("but that manifest is listing"),
        "{}",
        fooled.stdout
    );

    // a second buyer settles through the indexer's API
    let second = node::wallet::Wallet::from_seed(&[0x5E; 32]);
    let second_kp = second.solana_keypair();
    v.fund(&node::chain::Signer::pubkey(&second_kp), 1);
    v.fund_dollars(&node::chain::Signer::pubkey(&second_kp), 6);
    let settle = |currency: &str| {
        util::services::settle(
            &base,
            &second,
            listing_id,
            serde_json::json!({"buyer_x25519_pubkey": second.x25519_address(), "cluster": "localnet", "currency": currency}),
        )
    };
    let (code, body) = settle("SOL");
    assert_eq!(code, 409, "{body}");
    assert!(
        body.to_string()
            .contains(&format!("settles in {dollar}, not SOL")),
        "{body}"
    );
    let (code, settle) = settle(&dollar);
    assert_eq!(code, 200, "{settle}");
    assert_eq!(settle["price_units"], 10_000u64, "{settle}");
    assert_eq!(
        (settle["decimals"].as_u64(), settle["currency"].as_str()),
        (Some(6), Some(dollar.as_str()))
    );
    util::services::sign_and_send(v, &settle, &second_kp);
    let mut released = 0;
    for _ in 0..40 {
        let pass = ok(
            &seller,
            &[
                "marketplace",
                "listen",
                "--once",
                "--storage-dir",
                dir,
                "--json",
            ],
        );
        assert_eq!(pass["pass"]["rejected"], 0, "{pass}");
        released += pass["pass"]["released"].as_u64().unwrap();
        if released == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert_eq!(released, 1, "the /settle buy released");
    assert_eq!(held(&seller), 20_000);
    let shown = util::services::listing_with_releases(&base, listing_id, 2);
    assert_eq!(shown["listing"]["releases"], 2, "{shown}");
}

/// Kill the daemon (abort, like SIGKILL) after each step of a release,
/// from `seen` on, restart it each time: exactly one release memo and one
/// receipt of the mode (`listen --receipt`), and what was released opens
/// in the reference's own buyer pipeline
/// (`agentmemory.marketplace_buy.post_release_pipeline`, its gateway the
/// local arlocal) and imports into a reference brain.db.
fn listen_killed_at_each_step(receipt: &str) {
    // one at a time: arlocal serves items only once mined, and a mine asked
    // while another's runs is refused (404), leaving an item unserved for a
    // while; these three share it (a real gateway has no such step)
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let v = e2e::validator();
    let gw = e2e::gateway();
    let storage = [
        ("BRAINCTL_STORAGE", "gateway"),
        ("BRAINCTL_GATEWAY_URL", gw.url.as_str()),
    ];
    let m = market_with(&["One lesson", "Another lesson"], "1", "100", &storage);
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .unwrap()
        .to_string();
    let listing_id = listed["listing"]["listing_id"]
        .as_str()
        .unwrap()
        .to_string();
    // a second buyer: where releases may share a transaction (a unit of
    // the listing's mint, or none), both buys are on chain before the
    // daemon first runs, so one transaction releases both and every kill
    // below hits it
    let second = Env::new().with_vars(&storage);
    second.ok(&["wallet", "new"]);
    ok(&second, &["wallet", "airdrop", "2", "--json"]);
    let buyers: Vec<&Env> = match receipt {
        "per-buy" => vec![buyer],
        _ => vec![buyer, &second],
    };
    let buying = |who: &Env| {
        who.cmd()
            .args([
                "-u",
                v.rpc_url.as_str(),
                "--commitment",
                "confirmed",
                "marketplace",
                "buy",
                &manifest,
                "--timeout",
                "120",
                "--json",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut buys: Vec<std::process::Child> = buyers.iter().map(|b| buying(b)).collect();
    let chain = v.chain();
    let rt = e2e::runtime();
    let seller_pk: node::chain::Pubkey = seller
        .ok(&["wallet", "address"])
        .stdout
        .trim()
        .parse()
        .unwrap();
    let buy_memos = || {
        rt.block_on(node::market::status::memo_ops(&chain, &seller_pk))
            .unwrap()
            .into_iter()
            .filter(|(_, op)| matches!(op, node::market::MemoOp::Buy { .. }))
            .count()
    };
    for _ in 0..240 {
        if buy_memos() >= buyers.len() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }

    let listen = |fault: Option<&str>| {
        let mut c = seller.cmd();
        c.args([
            "-u",
            v.rpc_url.as_str(),
            "--commitment",
            "confirmed",
            "marketplace",
            "listen",
            "--once",
            "--receipt",
            receipt,
            "--json",
        ]);
        if let Some(f) = fault {
            c.env("BRAINCTL_FAULT_ABORT_AFTER", f);
        }
        c.output().unwrap()
    };
    // wait until the buy is on chain and the first step kills the daemon
    let mut crashed_after_seen = false;
    for _ in 0..120 {
        let out = listen(Some("seen"));
        if !out.status.success() {
            crashed_after_seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    if !crashed_after_seen {
        let mut buy = buys.remove(0);
        let _ = buy.kill();
        let out = buy.wait_with_output().unwrap();
        panic!(
            "{receipt}: the daemon never saw the buy; the buyer said: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // each restart resumes the buy where the last one died (`seen`
    // included: it is never skipped as "already done"); a release the
    // chain would take twice dies once kept and not yet sent too
    let mut steps = vec!["verified", "envelope_uploaded"];
    if receipt != "per-buy" {
        steps.push("release_signed");
    }
    steps.push("release_sent");
    for step in steps {
        let out = listen(Some(step));
        assert!(
            !out.status.success(),
            "{receipt}: died after {step}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // restart without faults: records the landed release, sends nothing new
    let out = listen(None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pass: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        pass["counts"],
        serde_json::json!([["released", buyers.len()]])
    );

    for done in buys {
        let done = done.wait_with_output().unwrap();
        assert!(
            done.status.success(),
            "buyer ({:?}): {}{}",
            done.status,
            String::from_utf8_lossy(&done.stdout),
            String::from_utf8_lossy(&done.stderr)
        );
    }

    // the chain holds exactly one release memo a buy and each buyer
    // exactly one receipt
    let address = |e: &Env| -> node::chain::Pubkey {
        e.ok(&["wallet", "address"]).stdout.trim().parse().unwrap()
    };
    let buyer_pks: Vec<node::chain::Pubkey> = buyers.iter().map(|b| address(b)).collect();
    let txs: Vec<(String, node::chain::ParsedTx)> = rt
        .block_on(chain.signatures_for(&seller_pk, None))
        .unwrap()
        .iter()
        .filter_map(|s| {
            rt.block_on(chain.transaction(&s.signature.parse().unwrap()))
                .unwrap()
                .map(|t| (s.signature.clone(), t))
        })
        .collect();
    let releases: Vec<(&String, String, String)> = txs
        .iter()
        .filter(|(_, t)| t.succeeded)
        .flat_map(|(sig, t)| t.memos.iter().map(move |m| (sig, m)))
        .filter_map(|(sig, m)| match node::market::MemoOp::parse(m) {
            Ok(node::market::MemoOp::Release {
                envelope_arweave_id,
                minted_token_address,
                ..
            }) => Some((sig, envelope_arweave_id, minted_token_address)),
            _ => None,
        })
        .collect();
    assert_eq!(
        releases.len(),
        buyers.len(),
        "exactly one release memo a buy: {releases:?}"
    );
    let release_txs: std::collections::BTreeSet<&String> =
        releases.iter().map(|(sig, _, _)| *sig).collect();
    assert_eq!(
        release_txs.len(),
        1,
        "{receipt}: one transaction released every buy: {releases:?}"
    );
    // the first buyer's envelope (each names its buyer)
    let envelope_of = |id: &str| -> serde_json::Value {
        let file = buyer.path(&format!("envelope-{id}.json"));
        buyer.ok(&["storage", "get", id, "-o", file.to_str().unwrap()]);
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
    };
    let (release_sig, envelope_id, receipt_address) = releases
        .iter()
        .find(|(_, id, _)| envelope_of(id)["buyer_pubkey"] == buyer_pks[0].to_string())
        .expect("the first buyer's envelope");
    let mut outputs = rt
        .block_on(node::mint::light::minted_outputs(
            &chain,
            &release_sig.parse().unwrap(),
        ))
        .unwrap();
    outputs.sort_by_key(|o| o.owner.to_string());
    let receipt_mint: node::chain::Pubkey = receipt_address.parse().unwrap();
    let manifest_file = buyer.path("listing.json");
    buyer.ok(&[
        "storage",
        "get",
        &manifest,
        "-o",
        manifest_file.to_str().unwrap(),
    ]);
    let listing: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_file).unwrap()).unwrap();
    match receipt {
        "none" => {
            assert_eq!(receipt_address, "11111111111111111111111111111111");
            assert!(outputs.is_empty(), "no token: {outputs:?}");
        }
        _ => {
            let mut each: Vec<node::mint::light::TokenOutput> = buyer_pks
                .iter()
                .map(|owner| node::mint::light::TokenOutput {
                    mint: receipt_mint,
                    owner: *owner,
                    amount: 1,
                    delegate: None,
                })
                .collect();
            each.sort_by_key(|o| o.owner.to_string());
            assert_eq!(
                outputs, each,
                "{receipt}: one compressed unit of the named mint to each buyer"
            );
            let state = rt
                .block_on(node::mint::token2022::read_mint(&chain, &receipt_mint))
                .unwrap();
            let authority = (receipt == "listing").then_some(seller_pk);
            assert_eq!(
                (state.mint_authority, state.supply),
                (authority, buyers.len() as u64),
                "{receipt}: the listing's mint stays open to its next buyers; a buy's own is closed"
            );
            assert_eq!(state.uri, listing["metadata_uri"].as_str().unwrap());
        }
    }

    // the reference's buyer opens it with the buyer's wallet file, and
    // imports it into its own brain.db
    let brain = e2e::RefBrain::init(&buyer.path("ref-brain"));
    // the agent its ingest writes as, registered as the reference's CLI does
    brain.json(&[
        "agent",
        "register",
        "marketplace-buyer",
        "Marketplace buyer",
        "marketplace",
    ]);
    let script = r#"
import json, sys
from agentmemory import marketplace_buy as mb
gateway, envelope, uri, keystore, listing_id = sys.argv[1:6]
mb.ARWEAVE_GATEWAY = gateway
# brainctl 2.8.0's own ingest hands memory_add `agent_id` where it reads
# `agent`, and none of its optional flags: given as its CLI's parser would
class Args(mb._SimpleArgs):
    def __getattr__(self, name):
        return self.__dict__.get("agent_id") if name == "agent" else None
mb._SimpleArgs = Args
opened = mb.post_release_pipeline(envelope_arweave_id=envelope, encrypted_bundle_uri=uri, keystore_path=keystore)
ingested = mb.ingest_into_quarantine(opened["bundle"], listing_id=listing_id)
print(json.dumps({"bundle": opened["bundle"], "ingested": ingested}))
"#;
    let out = std::process::Command::new(e2e::ref_python())
        .arg("-c")
        .arg(script)
        .arg(&gw.url)
        .arg(envelope_id)
        .arg(listing["encrypted_bundle_uri"].as_str().unwrap())
        .arg(buyer.path(".brainctl/wallet.json"))
        .arg(&listing_id)
        .env("BRAINCTL_DB", &brain.db)
        .env("BRAINCTL_HOME", &brain.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{receipt}: the reference's pipeline: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // its memory_add prints a line per memory; ours is the last
    let stdout = String::from_utf8_lossy(&out.stdout);
    let opened: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    let contents: Vec<&str> = opened["bundle"]["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents.len(), 2, "{opened}");
    assert!(contents.contains(&"One lesson") && contents.contains(&"Another lesson"));
    assert_eq!(
        (
            &opened["ingested"]["ingested"],
            &opened["ingested"]["errors"]
        ),
        (&serde_json::json!(2), &serde_json::json!([])),
        "{opened}"
    );
}

#[test]
fn listen_killed_at_each_step_releases_exactly_once_with_a_mint_per_buy() {
    listen_killed_at_each_step("per-buy");
}

#[test]
fn listen_killed_at_each_step_releases_exactly_once_with_the_listings_receipt() {
    listen_killed_at_each_step("listing");
}

#[test]
fn listen_killed_at_each_step_releases_exactly_once_with_no_receipt() {
    listen_killed_at_each_step("none");
}

#[test]
fn cancelled_listing_is_not_paid_for() {
    let m = market(&["A lesson"], "1", "100");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let id = listed["listing"]["listing_id"].as_str().unwrap();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let c = ok(seller, &["marketplace", "cancel", id, "--json"]);
    assert!(c["slot"].as_u64().unwrap() > 0);
    let again = onchain(seller, &["marketplace", "cancel", id]);
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("already cancelled"),
        "{}",
        again.stderr
    );
    let before = ok(buyer, &["wallet", "balance", "--json"])["lamports"]
        .as_u64()
        .unwrap();
    let r = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            dir,
            "--timeout",
            "5",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("cancelled by the seller"), "{}", r.stderr);
    assert_eq!(
        ok(buyer, &["wallet", "balance", "--json"])["lamports"]
            .as_u64()
            .unwrap(),
        before,
        "nothing paid"
    );
    let unknown = onchain(seller, &["marketplace", "cancel", "20261123-ffffffffffff"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("not one of this wallet's listings"),
        "{}",
        unknown.stderr
    );
}

/// A buy whose release comes after the buyer gave up is finished by `fetch`.
#[test]
fn interrupted_buy_finishes_with_fetch() {
    let m = market(&["Late lesson"], "1", "100");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let r = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            dir,
            "--timeout",
            "1",
        ],
    );
    assert_eq!(r.code, 1);
    let sig = r
        .stderr
        .split("--buy-signature ")
        .nth(1)
        .expect("the error names the resume command")
        .trim()
        .to_string();
    let pass = ok(
        seller,
        &[
            "marketplace",
            "listen",
            "--once",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(pass["pass"]["released"], 1);
    let done = ok(
        buyer,
        &[
            "marketplace",
            "fetch",
            manifest,
            "--buy-signature",
            &sig,
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(done["import"]["ids"].as_array().unwrap().len(), 1);

    // the same release into the agent's own Python brainctl brain.db: the
    // reference's CLI lists the bought memory in scope imported:<listing>
    let brain = e2e::RefBrain::init(&buyer.path("agent"));
    let db = &brain.db;
    let into = ok(
        buyer,
        &[
            "marketplace",
            "fetch",
            manifest,
            "--buy-signature",
            &sig,
            "--storage-dir",
            dir,
            "--into-brainctl-db",
            db.to_str().unwrap(),
            "--json",
        ],
    );
    let scope = format!(
        "imported:{}",
        listed["listing"]["listing_id"].as_str().unwrap()
    );
    assert_eq!(into["import"]["scope"], scope.as_str());
    assert_eq!(into["import"]["inserted"].as_array().unwrap().len(), 1);
    let rows = brain.json(&[
        "--agent",
        "marketplace-buyer",
        "memory",
        "list",
        "--scope",
        &scope,
    ]);
    let contents: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["Late lesson"]);
}

/// offer → counter → accept → buy at the counter price → release → import.
/// The final buy names only the offer: the buyer's client finds the
/// seller's counter on chain and pays its terms.
#[test]
fn negotiated_trade_at_the_counter_price() {
    let m = market(&["Negotiated lesson"], "15", "150"); // list price 0.1 SOL
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let offer = ok(
        buyer,
        &[
            "marketplace",
            "offer",
            manifest,
            "--price-usd",
            "9",
            "--sol-usd",
            "150",
            "--message",
            "would you take nine?",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(offer["price_lamports"], 60_000_000u64);
    let offer_item = offer["offer_item_id"].as_str().unwrap();
    let counter = ok(
        seller,
        &[
            "marketplace",
            "counter",
            offer_item,
            "--price-usd",
            "12",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(counter["price_lamports"], 80_000_000u64);
    let counter_item = counter["counter_item_id"].as_str().unwrap();

    // before the seller accepts, the buyer refuses to pay the negotiated price
    let early = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--offer",
            offer_item,
            "--counter",
            counter_item,
            "--storage-dir",
            dir,
            "--timeout",
            "1",
        ],
    );
    assert_eq!(early.code, 1, "{}", early.stderr);
    assert!(
        early.stderr.contains("has not accepted"),
        "{}",
        early.stderr
    );

    // the seller confirms what the accept binds: another price posts nothing
    let unconfirmed = onchain(
        seller,
        &[
            "marketplace",
            "accept",
            offer_item,
            "--expect-lamports",
            "60000000",
            "--storage-dir",
            dir,
        ],
    );
    assert_eq!(unconfirmed.code, 2, "{}", unconfirmed.stderr);
    assert!(
        unconfirmed
            .stderr
            .contains("binds 80000000 lamports, not the 60000000 confirmed"),
        "{}",
        unconfirmed.stderr
    );
    let accepted = ok(
        seller,
        &[
            "marketplace",
            "accept",
            offer_item,
            "--expect-lamports",
            "80000000",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(
        (
            accepted["state"].as_str(),
            accepted["price_lamports"].as_u64()
        ),
        (Some("accepted"), Some(80_000_000))
    );
    let twice = onchain(
        seller,
        &["marketplace", "accept", offer_item, "--storage-dir", dir],
    );
    assert_eq!(twice.code, 2);
    // a counter the seller posts after the accept (as a dishonest seller's
    // own tooling would; our CLI refuses to counter an accepted offer) is
    // never what `buy --offer` pays: the accept answered the 12 USD counter
    {
        use node::arweave::{FsStore, Source, Uploader};
        use node::market::negotiate::{fetch_offer, make_counter, OfferTerms};
        let rt = e2e::runtime();
        let wallet = node::wallet::Wallet::load(&seller.path(".brainctl/wallet.json")).unwrap();
        let store = FsStore::new(dir);
        let offer = rt
            .block_on(fetch_offer(&Source::Fs(store.clone()), offer_item, false))
            .unwrap();
        let pay_to: node::chain::Pubkey = wallet.address().parse().unwrap();
        rt.block_on(make_counter(
            &e2e::validator().chain(),
            &wallet,
            &Uploader::Fs(store),
            &offer,
            &pay_to,
            &OfferTerms {
                price_usd: 14.0,
                price_units: 93_333_333,
                currency: node::settle::Currency::Sol,
                message: "raised after the accept",
                ttl_hours: 2.0,
            },
        ))
        .unwrap();
    }

    // someone else cannot use this offer
    let mallory = Env::new();
    mallory.ok(&["wallet", "new"]);
    ok(&mallory, &["wallet", "airdrop", "1", "--json"]);
    let stolen = onchain(
        &mallory,
        &[
            "marketplace",
            "buy",
            manifest,
            "--offer",
            offer_item,
            "--storage-dir",
            dir,
            "--timeout",
            "1",
        ],
    );
    assert_eq!(stolen.code, 1);
    assert!(
        stolen.stderr.contains("not this wallet's offer"),
        "{}",
        stolen.stderr
    );

    let before = ok(buyer, &["wallet", "balance", "--json"])["lamports"]
        .as_u64()
        .unwrap();
    let out = buy_while_listening(
        buyer,
        seller,
        dir,
        &[
            "marketplace",
            "buy",
            manifest,
            "--offer",
            offer_item,
            "--storage-dir",
            dir,
            "--timeout",
            "60",
            "--json",
        ],
        "the buyer found the accepted counter itself; listen applied its price",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = ok(buyer, &["wallet", "balance", "--json"])["lamports"]
        .as_u64()
        .unwrap();
    let spent = before - after;
    assert!(
        (80_000_000..80_100_000).contains(&spent),
        "paid the counter price plus fees, spent {spent}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["import"]["ids"].as_array().unwrap().len(), 1);

    let status = ok(seller, &["marketplace", "status", "--json"]);
    let l = &status["listings"][0];
    assert_eq!(
        l["chain"],
        serde_json::json!({"buy": 1, "offer": 1, "release": 1})
    );
    assert_eq!(l["buys"], serde_json::json!([["released", 1]]));
    assert_eq!(l["offers"][0]["state"], "accepted");
    assert_eq!(l["offers"][0]["price_lamports"], 80_000_000u64);
    let mine = ok(buyer, &["marketplace", "status", "--json"]);
    assert_eq!(mine["purchases"].as_array().unwrap().len(), 1);
    assert_eq!(
        mine["purchases"][0]["source"],
        listed["listing"]["listing_id"]
    );
}

#[test]
fn withdrawn_offer_cannot_be_accepted() {
    let m = market(&["A lesson"], "15", "150");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let offer = ok(
        buyer,
        &[
            "marketplace",
            "offer",
            manifest,
            "--price-usd",
            "9",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    let offer_item = offer["offer_item_id"].as_str().unwrap();
    // only the offer's buyer may withdraw it
    let r = onchain(
        seller,
        &[
            "marketplace",
            "withdraw",
            offer_item,
            "--listing",
            manifest,
            "--storage-dir",
            dir,
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    ok(
        buyer,
        &[
            "marketplace",
            "withdraw",
            offer_item,
            "--listing",
            manifest,
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    let r = onchain(
        seller,
        &["marketplace", "accept", offer_item, "--storage-dir", dir],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("withdrew"), "{}", r.stderr);
}

/// The daemon, running with a 60 s polling interval, releases a buy within
/// seconds (logsSubscribe wake-up), and stops cleanly on SIGTERM.
#[test]
fn listen_wakes_on_logs_and_stops_on_sigterm() {
    let m = market(&["Fast lesson"], "1", "100");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let v = e2e::validator();
    let daemon = seller
        .cmd()
        .args([
            "-u",
            v.rpc_url.as_str(),
            "--commitment",
            "confirmed",
            "marketplace",
            "listen",
            "--interval",
            "60",
            "--storage-dir",
            &dir,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2)); // first pass + subscription
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let t = std::time::Instant::now();
    let bought = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            &dir,
            "--timeout",
            "30",
            "--json",
        ],
    );
    assert_eq!(
        bought.code, 0,
        "released without waiting for the 60 s tick: {}",
        bought.stderr
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(30));
    eprintln!(
        "buy -> imported in {:.1} s with a 60 s polling interval",
        t.elapsed().as_secs_f64()
    );
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = daemon.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "graceful exit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopping"));
}

/// A stop never waits for what is in flight: with another process holding
/// the seller's state database's write lock, `listen` is stuck in a
/// synchronous wait (SQLite's busy timeout, 10 s) when SIGTERM comes, and
/// still ends within its stop grace (2 s), cleanly. Restarted, it resumes
/// and releases a buy paid meanwhile.
#[test]
fn listen_stops_within_its_grace_whatever_it_waits_for() {
    use std::time::{Duration, Instant};
    let m = market(&["Stuck lesson"], "1", "100");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let v = e2e::validator();
    let work = tempfile::tempdir().unwrap();
    let mut daemon = util::services::listen(seller, &v.rpc_url, &dir, work.path(), &[], "info");
    std::thread::sleep(Duration::from_secs(3)); // first rounds
    assert!(daemon.alive(), "listen started: {}", daemon.tail());
    let (locked, unlock) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let path = seller.path(".brainctl/listen.db");
    let holder = std::thread::spawn(move || {
        let mut db = node::listen::ListenDb::open(&path).unwrap();
        db.in_one_commit(|_| {
            locked.send(()).unwrap();
            let _ = released.recv_timeout(Duration::from_secs(30));
            Ok(())
        })
        .unwrap();
    });
    unlock.recv().unwrap();
    // the next rounds (every second) wait on the lock
    std::thread::sleep(Duration::from_secs(2));
    let asked = Instant::now();
    let status = daemon.stop();
    let took = asked.elapsed();
    release.send(()).unwrap();
    holder.join().unwrap();
    let log = std::fs::read_to_string(work.path().join("listen.log")).unwrap();
    assert!(status.success(), "a stop is clean: {status:?}\n{log}");
    assert!(
        took < Duration::from_secs(4),
        "stopped {took:?} after SIGTERM\n{log}"
    );
    assert!(
        log.contains("still running after the stop's grace"),
        "the watchdog ended it (the daemon was stuck on the lock):\n{log}"
    );
    // nothing lost: restarted, it resumes and releases a buy
    let daemon = util::services::listen(seller, &v.rpc_url, &dir, work.path(), &[], "info");
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let bought = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            &dir,
            "--timeout",
            "60",
            "--json",
        ],
    );
    assert_eq!(
        bought.code, 0,
        "released after the restart: {}",
        bought.stderr
    );
    assert!(daemon.stop().success());
}

/// Escrow settlement where the program is not deployed (localnet: no SBF
/// build): `list --escrow` and `refund` refuse before anything is uploaded
/// or paid, and `buy --escrow` of a direct-payment listing pays nothing.
#[test]
fn escrow_refuses_cleanly_without_the_program_and_never_pays_directly() {
    let m = market(&["A lesson"], "1", "100");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let balance = |e: &Env| {
        ok(e, &["wallet", "balance", "--json"])["lamports"]
            .as_u64()
            .unwrap()
    };
    let (seller_before, buyer_before) = (balance(seller), balance(buyer));
    let items_before = std::fs::read_dir(dir).unwrap().count();
    let list = onchain(
        seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "1",
            "--sol-usd",
            "100",
            "--escrow",
            "--stake-lamports",
            "1000",
            "--storage-dir",
            dir,
        ],
    );
    assert_eq!(list.code, 2, "{}", list.stderr);
    assert!(
        list.stderr.contains("is not deployed on this cluster")
            && list.stderr.contains("without --escrow"),
        "{}",
        list.stderr
    );
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        items_before,
        "nothing uploaded"
    );
    let buy = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--escrow",
            "--storage-dir",
            dir,
        ],
    );
    assert_eq!(buy.code, 2, "{}", buy.stderr);
    assert!(
        buy.stderr.contains("settles by direct payment"),
        "{}",
        buy.stderr
    );
    let refund = onchain(
        buyer,
        &["marketplace", "refund", manifest, "--storage-dir", dir],
    );
    assert_eq!(refund.code, 2, "{}", refund.stderr);
    assert!(
        refund.stderr.contains("is not deployed"),
        "{}",
        refund.stderr
    );
    assert_eq!(
        (balance(seller), balance(buyer)),
        (seller_before, buyer_before),
        "no fee, no payment"
    );
}

/// `marketplace listen` as sellers run it (a service, not `--once`):
/// the seller's own commands work beside it, a listing made after it
/// started is sold, the transaction that used to stop it is rejected with
/// its reason while it keeps serving, and SIGTERM stops it cleanly.
#[test]
fn listen_runs_as_a_service_beside_the_sellers_commands() {
    use node::chain::instructions::{discovery, memo, registry_from_env, transfer};
    use node::chain::Signer;
    let v = e2e::validator();
    let m = market(&["First lesson"], "1", "100");
    let (seller, buyer) = (&m.seller, &m.buyer);
    let dir = m.dir();
    let dir = dir.as_str();
    let mut daemon = seller
        .cmd()
        .args(["-u", v.rpc_url.as_str(), "--commitment", "confirmed"])
        .args([
            "marketplace",
            "listen",
            "--interval",
            "1",
            "--storage-dir",
            dir,
            "--json",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));

    // the seller works while the daemon runs: status, export, a new listing
    let status = ok(seller, &["marketplace", "status", "--json"]);
    assert_eq!(status["listings"].as_array().unwrap().len(), 1);
    seller.ok(&["memory", "add", "Second lesson", "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "c.signed.json"]);
    let second = ok(
        seller,
        &[
            "marketplace",
            "list",
            "c.signed.json",
            "--price-usd",
            "1",
            "--sol-usd",
            "100",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    let listing_id = second["listing"]["listing_id"].as_str().unwrap();
    let pay_to: node::chain::Pubkey = second["listing"]["payment_address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // the attack: failed, references the payment address and the registry,
    // a buy memo and a memo the RPC cannot decode
    let mallory = v.funded_keypair(1);
    let buy_memo = node::market::MemoOp::Buy {
        listing_id: listing_id.into(),
        buyer_x25519: node::wallet::Wallet::generate().x25519_address(),
    }
    .to_string();
    let mut not_utf8 = memo("x", &mallory.pubkey());
    not_utf8.data = vec![0xff, 0xfe];
    let attack = vec![
        discovery(&registry_from_env().unwrap(), 200_000),
        transfer(&mallory.pubkey(), &pay_to, 1),
        memo(&buy_memo, &mallory.pubkey()),
        not_utf8,
    ];
    let attack_sig = e2e::runtime()
        .block_on(v.chain().send_skip_preflight(&attack, &[&mallory]))
        .unwrap()
        .signature
        .to_string();

    // an honest buy of the listing made after the daemon started
    let manifest = second["listing"]["manifest_id"].as_str().unwrap();
    let bought = onchain(
        buyer,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            dir,
            "--timeout",
            "90",
            "--json",
        ],
    );
    assert_eq!(bought.code, 0, "{}\n{}", bought.stdout, bought.stderr);
    // the second export holds both memories
    assert_eq!(bought.json()["import"]["ids"].as_array().unwrap().len(), 2);
    assert!(
        daemon.try_wait().unwrap().is_none(),
        "the daemon is still serving"
    );

    // the attack is on record with its typed reason, per buy signature; the
    // release is recorded once its transaction is confirmed (the buyer may
    // see it a moment earlier)
    let buy_rows = || -> Vec<serde_json::Value> {
        let status = ok(seller, &["marketplace", "status", "--json"]);
        status["listings"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["buy_details"].as_array().unwrap().clone())
            .collect()
    };
    let mut rows = buy_rows();
    for _ in 0..60 {
        if rows.iter().any(|b| b["state"] == "released") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        rows = buy_rows();
    }
    let hostile = rows
        .iter()
        .find(|b| b["signature"] == attack_sig.as_str())
        .expect("the attack is recorded");
    assert_eq!(hostile["state"], "rejected");
    assert_eq!(hostile["reason"]["reason"], "tx_failed");
    assert_eq!(
        rows.iter().filter(|b| b["state"] == "released").count(),
        1,
        "{rows:?}"
    );

    // a second daemon on the same state is refused; SIGTERM stops the first
    let second_daemon = onchain(
        seller,
        &["marketplace", "listen", "--once", "--storage-dir", dir],
    );
    assert_ne!(second_daemon.code, 0);
    assert!(
        second_daemon.stderr.contains("lock held"),
        "{}",
        second_daemon.stderr
    );
    let term = std::process::Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = daemon.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "stopped cleanly: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// offer → seller counter → buyer counter → accept: the accept binds the
/// buyer's counter, the newest before it, in the seller's node exactly as
/// in the indexer's fold, so the buyer pays it, `listen` releases it and
/// the indexer shows the sale released (before, the seller bound its own
/// counter: the indexer's `/settle` payment was stranded).
#[test]
fn a_buyer_counter_last_binds_in_listen_and_the_indexer() {
    let m = market(&["Counter-countered lesson"], "15", "150");
    let (seller, buyer, listed) = (&m.seller, &m.buyer, &m.listed);
    let dir = m.dir();
    let dir = dir.as_str();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let listing_id = listed["listing"]["listing_id"].as_str().unwrap();
    let offer = ok(
        buyer,
        &[
            "marketplace",
            "offer",
            manifest,
            "--price-usd",
            "9",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    let offer_item = offer["offer_item_id"].as_str().unwrap();
    ok(
        seller,
        &[
            "marketplace",
            "counter",
            offer_item,
            "--price-usd",
            "12",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    // the buyer answers with 10.5 USD on its own offer
    let countered = ok(
        buyer,
        &[
            "marketplace",
            "counter",
            offer_item,
            "--listing",
            manifest,
            "--price-usd",
            "10.5",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(countered["price_lamports"], 70_000_000u64);
    // a stranger cannot counter on the buyer's offer
    let mallory = Env::new();
    mallory.ok(&["wallet", "new"]);
    ok(&mallory, &["wallet", "airdrop", "1", "--json"]);
    let stray = onchain(
        &mallory,
        &[
            "marketplace",
            "counter",
            offer_item,
            "--listing",
            manifest,
            "--price-usd",
            "1",
            "--sol-usd",
            "150",
            "--storage-dir",
            dir,
        ],
    );
    assert_eq!(stray.code, 2, "{}", stray.stderr);
    assert!(
        stray.stderr.contains("not this wallet's offer"),
        "{}",
        stray.stderr
    );
    let own_price = onchain(
        seller,
        &[
            "marketplace",
            "accept",
            offer_item,
            "--expect-lamports",
            "80000000",
            "--storage-dir",
            dir,
        ],
    );
    assert_eq!(own_price.code, 2, "{}", own_price.stderr);
    assert!(
        own_price
            .stderr
            .contains("binds 70000000 lamports, not the 80000000 confirmed"),
        "the seller is shown the buyer's counter: {}",
        own_price.stderr
    );
    let accepted = ok(
        seller,
        &[
            "marketplace",
            "accept",
            offer_item,
            "--expect-lamports",
            "70000000",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(accepted["price_lamports"], 70_000_000u64);

    let (indexer, base, _work) = indexer_on(dir, &[]);

    let before = ok(buyer, &["wallet", "balance", "--json"])["lamports"]
        .as_u64()
        .unwrap();
    let out = buy_while_listening(
        buyer,
        seller,
        dir,
        &[
            "marketplace",
            "buy",
            manifest,
            "--offer",
            offer_item,
            "--storage-dir",
            dir,
            "--timeout",
            "60",
            "--json",
        ],
        "listen released at the buyer's counter price",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spent = before
        - ok(buyer, &["wallet", "balance", "--json"])["lamports"]
            .as_u64()
            .unwrap();
    assert!(
        (70_000_000..70_100_000).contains(&spent),
        "paid the buyer's own counter plus fees, spent {spent}"
    );
    let shown = util::services::listing_with_releases(&base, listing_id, 1);
    assert_eq!(
        (&shown["listing"]["sales"], &shown["listing"]["releases"]),
        (&serde_json::json!(1), &serde_json::json!(1)),
        "the indexer binds the same counter: {shown}\n{}",
        indexer.tail()
    );
    indexer.stop();
}

/// Every action an agent can cause spends inside the policy: an offer's
/// fee is reserved against the 24 h budget like a buy, and the action that
/// would go over it is refused before anything is sent.
#[test]
fn actions_spend_inside_the_24h_budget() {
    let m = market(&["Budgeted lesson"], "15", "150");
    let (buyer, listed) = (&m.buyer, &m.listed);
    let dir = m.dir();
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    node::spend::SpendPolicy {
        max_per_buy_lamports: Some(1),
        budget_24h_lamports: Some(9_000),
        sellers: Some(vec![]),
        tokens: Default::default(),
        priority_fee_max_lamports: None,
    }
    .write(&node::spend::policy_path(
        &buyer.path(".brainctl/wallet.json"),
    ))
    .unwrap();
    let offer = |usd: &str| {
        onchain(
            buyer,
            &[
                "marketplace",
                "offer",
                manifest,
                "--price-usd",
                usd,
                "--sol-usd",
                "150",
                "--storage-dir",
                &dir,
                "--json",
            ],
        )
    };
    let first = offer("9");
    assert_eq!(first.code, 0, "an action is no buy: {}", first.stdout);
    let before = ok(buyer, &["wallet", "balance", "--json"])["lamports"].clone();
    let second = offer("10");
    assert_eq!(second.code, 1, "{}", second.stdout);
    assert!(
        second.stdout.contains("24 h budget is 9000"),
        "{}",
        second.stdout
    );
    assert_eq!(
        ok(buyer, &["wallet", "balance", "--json"])["lamports"],
        before,
        "nothing was sent"
    );
    let budget = ok(buyer, &["marketplace", "budget", "--json"]);
    assert_eq!(budget["standing"]["spent_24h_lamports"], 5_000);
    let spends = budget["spends"].as_array().unwrap();
    assert_eq!(spends.len(), 1, "{budget}");
    assert_eq!(
        (spends[0]["kind"].as_str(), spends[0]["state"].as_str()),
        (Some("offer"), Some("paid"))
    );
}

/// A listing priced under what one release costs the seller (its
/// signature and the default receipt: a unit of the listing's mint, about
/// 10,000 lamports) is refused unless the seller says --below-cost: every
/// junk `buy` would cost the seller more than it pays. A cent is above it.
#[test]
fn a_below_cost_listing_needs_to_be_asked_for() {
    let seller = funded_with_memory("Cheap lesson", "lesson");
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let items = tempfile::tempdir().unwrap();
    let dir = items.path().display().to_string();
    let list = |usd: &str, extra: &[&str]| {
        let mut args = vec![
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            usd,
            "--sol-usd",
            "150",
            "--storage-dir",
            &dir,
        ];
        args.extend_from_slice(extra);
        onchain(&seller, &args)
    };
    let refused = list("0.001", &[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "a listing at 6667 lamports earns less than the 10300 lamports each release costs you"
        ) && refused.stderr.contains("--below-cost"),
        "{}",
        refused.stderr
    );
    let status = ok(&seller, &["marketplace", "status", "--json"]);
    assert_eq!(status["listings"].as_array().map(Vec::len), Some(0));
    let listed = list("0.001", &["--below-cost", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(listed.json()["listing"]["price_lamports"], 6_667);
    // a cent needs no flag; under a spend policy, the listing's own receipt
    // mint (made by `list`, its rent never returned) is counted with it
    ok(
        &seller,
        &[
            "marketplace",
            "budget",
            "--set-budget-24h-lamports",
            "1000000000",
            "--json",
        ],
    );
    let cent = list("0.01", &["--json"]);
    assert_eq!(cent.code, 0, "{}", cent.stderr);
    assert_eq!(cent.json()["listing"]["price_lamports"], 66_667);
    let budget = ok(&seller, &["marketplace", "budget", "--json"]);
    let list_spend = budget["spends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "list")
        .unwrap_or_else(|| panic!("no list spend: {budget}"))
        .clone();
    let counted = list_spend["lamports"].as_u64().unwrap();
    assert!(
        counted > 1_000_000,
        "the receipt mint's rent is counted: {list_spend}"
    );
}

/// The buyer judges time by the chain's clock with a margin, and sees the
/// seller's cancel at `confirmed` even when it reads at `finalized`: a buy
/// that `listen` would refuse (money gone) is never sent.
#[test]
fn a_buyer_never_pays_for_a_listing_about_to_expire_or_just_cancelled() {
    let (seller, buyer) = (
        funded_with_memory("Short-lived lesson", "lesson"),
        Env::new(),
    );
    buyer.ok(&["wallet", "new"]);
    ok(&buyer, &["wallet", "airdrop", "1", "--json"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let items = tempfile::tempdir().unwrap();
    let dir = items.path().display().to_string();
    let list = |hours: &str| {
        ok(
            &seller,
            &[
                "marketplace",
                "list",
                "b.signed.json",
                "--price-usd",
                "1",
                "--sol-usd",
                "100",
                "--duration-hours",
                hours,
                "--storage-dir",
                &dir,
                "--json",
            ],
        )
    };
    let buy = |listing: &serde_json::Value, commitment: &str| {
        let v = e2e::validator();
        buyer.run(&[
            "-u",
            v.rpc_url.as_str(),
            "--commitment",
            commitment,
            "marketplace",
            "buy",
            listing["listing"]["manifest_id"].as_str().unwrap(),
            "--storage-dir",
            &dir,
            "--timeout",
            "1",
        ])
    };
    let before = ok(&buyer, &["wallet", "balance", "--json"])["lamports"].clone();
    // 18 s left: under the 30 s a buy must have to spare
    let short = list("0.005");
    let late = buy(&short, "confirmed");
    assert_eq!(late.code, 1, "{}", late.stderr);
    assert!(
        late.stderr
            .contains("expires within 30 s by the chain's clock"),
        "{}",
        late.stderr
    );
    // cancelled a moment ago: not yet final, seen all the same
    let gone = list("24");
    let id = gone["listing"]["listing_id"].as_str().unwrap();
    ok(&seller, &["marketplace", "cancel", id, "--json"]);
    let cancelled = buy(&gone, "finalized");
    assert_eq!(cancelled.code, 1, "{}", cancelled.stderr);
    assert!(
        cancelled.stderr.contains("was cancelled by the seller"),
        "{}",
        cancelled.stderr
    );
    assert_eq!(
        ok(&buyer, &["wallet", "balance", "--json"])["lamports"],
        before,
        "nothing was paid"
    );
}

/// With fees switched on (`BRAINCTL_PROTOCOL_FEE_FORCE=1`, as on
/// mainnet-beta), the price is what the buyer pays in all and the
/// reference's `split_with_fee` divides it: 2.5 % to the treasury, the rest
/// to the seller, for a direct and a negotiated buy; the quote says so,
/// `listen` releases both.
#[test]
fn forced_fees_split_the_price_as_the_reference_does() {
    let v = e2e::validator();
    let treasury = node::wallet::Wallet::generate().address();
    // the treasury must exist (rent) before op fees of 500,000 reach it
    v.fund(&treasury.parse().unwrap(), 1);
    let fees = [
        ("BRAINCTL_PROTOCOL_FEE_FORCE", "1"),
        ("BRAINCTL_TREASURY_PUBKEY", treasury.as_str()),
    ];
    let (seller, buyer) = (Env::new().with_vars(&fees), Env::new().with_vars(&fees));
    for e in [&seller, &buyer] {
        e.ok(&["wallet", "new"]);
        ok(e, &["wallet", "airdrop", "2", "--json"]);
    }
    seller.ok(&["memory", "add", "Fee-split lesson", "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let items = tempfile::tempdir().unwrap();
    let dir = items.path().display().to_string();
    let listed = ok(
        &seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "15",
            "--sol-usd",
            "150",
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let seller_pk = listed["listing"]["payment_address"].as_str().unwrap();
    let (indexer, base, _work) = indexer_on(&dir, &fees);
    let quote = ok(
        &buyer,
        &[
            "marketplace",
            "quote",
            manifest,
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let q = &quote["quote"];
    assert_eq!(
        (
            &q["price_lamports"],
            &q["protocol_fee_lamports"],
            &q["total_lamports"]
        ),
        (
            &serde_json::json!(100_000_000u64),
            &serde_json::json!(2_500_000u64),
            &serde_json::json!(100_005_000u64)
        ),
        "the fee is the treasury's share of the price: {quote}"
    );
    // the buy's own transfers: the seller's share and the treasury's
    let split_of = |out: &std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let sig = r["buy_signature"].as_str().unwrap().parse().unwrap();
        let tx = e2e::runtime()
            .block_on(v.chain().transaction(&sig))
            .unwrap()
            .unwrap();
        (
            tx.paid(&tx.signers[0], seller_pk),
            tx.paid(&tx.signers[0], &treasury),
        )
    };
    let balance = || {
        ok(&buyer, &["wallet", "balance", "--json"])["lamports"]
            .as_u64()
            .unwrap()
    };
    let before = balance();
    let direct = buy_while_listening(
        &buyer,
        &seller,
        &dir,
        &[
            "marketplace",
            "buy",
            manifest,
            "--storage-dir",
            &dir,
            "--timeout",
            "60",
            "--json",
        ],
        "listen releases a buy that pays the split",
    );
    assert_eq!(split_of(&direct), (97_500_000, 2_500_000));
    assert_eq!(before - balance(), 100_005_000, "the quote is what it cost");

    // negotiated: the agreed price is split the same way
    let offer = ok(
        &buyer,
        &[
            "marketplace",
            "offer",
            manifest,
            "--price-usd",
            "9",
            "--sol-usd",
            "150",
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let offer_item = offer["offer_item_id"].as_str().unwrap();
    ok(
        &seller,
        &[
            "marketplace",
            "accept",
            offer_item,
            "--expect-lamports",
            "60000000",
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    let negotiated = buy_while_listening(
        &buyer,
        &seller,
        &dir,
        &[
            "marketplace",
            "buy",
            manifest,
            "--offer",
            offer_item,
            "--storage-dir",
            &dir,
            "--timeout",
            "60",
            "--json",
        ],
        "listen releases the negotiated split",
    );
    assert_eq!(split_of(&negotiated), (58_500_000, 1_500_000));
    // the indexer, with the same fee setting, settles both as released
    let listing_id = listed["listing"]["listing_id"].as_str().unwrap();
    let shown = util::services::listing_with_releases(&base, listing_id, 2);
    assert_eq!(
        (&shown["listing"]["sales"], &shown["listing"]["releases"]),
        (&serde_json::json!(2), &serde_json::json!(2)),
        "{shown}\n{}",
        indexer.tail()
    );
    indexer.stop();
}

/// `bundle decrypt`: a bundle the wallet minted comes back from its
/// ciphertext and key file, the same bytes that were signed; `bundle pin`
/// pins an existing signed bundle once (again: reported, not re-posted),
/// only by its signer, and `verify --check-onchain` finds it.
#[test]
fn bundle_decrypt_and_pin_an_existing_bundle() {
    let e = funded_with_memory("Pin the toolchain", "lesson");
    let ex = ok(
        &e,
        &[
            "export",
            "--sign",
            "--mint",
            "--token-standard",
            "token2022",
            "-o",
            "m.signed.json",
            "--json",
        ],
    );
    let m = &ex["mint"];
    let uri = format!("ar://{}", m["blob_id"].as_str().unwrap());
    let dec = ok(
        &e,
        &[
            "bundle",
            "decrypt",
            m["mint"].as_str().unwrap(),
            "--ciphertext-uri",
            &uri,
            "-o",
            "plain.json",
            "--json",
        ],
    );
    assert_eq!(dec["memories_count"], 1, "{dec}");
    let plain = std::fs::read(e.path("plain.json")).unwrap();
    assert_eq!(
        hex::encode(node::crypto::sha256(&plain)),
        ex["bundle_hash"].as_str().unwrap()
    );
    let stranger = Env::new();
    stranger.ok(&["wallet", "new"]);
    let nokey = onchain(
        &stranger,
        &[
            "bundle",
            "decrypt",
            m["mint"].as_str().unwrap(),
            "--ciphertext-uri",
            &uri,
            "--storage-dir",
            e.path(".brainctl/items").to_str().unwrap(),
        ],
    );
    assert_eq!(nokey.code, 2, "{}", nokey.stderr);
    assert!(nokey.stderr.contains("holds its key"), "{}", nokey.stderr);

    e.ok(&["export", "--sign", "-o", "p.signed.json"]);
    let pinned = ok(&e, &["bundle", "pin", "p.signed.json", "--json"]);
    assert_eq!(pinned["pinned_now"], true, "{pinned}");
    let again = ok(&e, &["bundle", "pin", "p.signed.json", "--json"]);
    assert_eq!(again["pinned_now"], false);
    assert_eq!(again["pin"]["signature"], pinned["pin"]["signature"]);
    let check = onchain(&e, &["verify", "--check-onchain", "p.signed.json"]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    std::fs::copy(e.path("p.signed.json"), stranger.path("p.signed.json")).unwrap();
    let foreign = onchain(&stranger, &["bundle", "pin", "p.signed.json"]);
    assert_eq!(foreign.code, 2, "{}", foreign.stderr);
    assert!(
        foreign.stderr.contains("only its signer's pin counts"),
        "{}",
        foreign.stderr
    );
}

/// Negotiation on a listing that settles in a token (issue 31): offers and
/// counters carry `settlement {mint, price_units}` and no lamports; the
/// seller's accept binds the counter's base units; the buyer pays them in
/// the token with `buy --offer --counter`; `listen` releases the buy at
/// the negotiated price, and the indexer binds the same counter (the
/// settlement names its offer and price).
#[test]
fn a_token_listing_trades_at_a_counter_in_test_dollars() {
    let v = e2e::validator();
    let dollar = node::chain::test_dollar::ADDRESS.to_string();
    let (seller, buyer) = (Env::new(), Env::new());
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().join("items").display().to_string();
    let dir = dir.as_str();
    for e in [&seller, &buyer] {
        e.ok(&["wallet", "new"]);
        ok(e, &["wallet", "airdrop", "1", "--json"]);
    }
    let address = |e: &Env| -> node::chain::Pubkey {
        e.ok(&["wallet", "address"]).stdout.trim().parse().unwrap()
    };
    v.fund_dollars(&address(&buyer), 10);
    seller.ok(&["memory", "add", "Haggled in dollars", "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let (indexer, base, _work) = indexer_on(dir, &[]);
    let listed = ok(
        &seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "5",
            "--sol-usd",
            "150",
            "--mint",
            &dollar,
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    let manifest = listed["listing"]["manifest_id"].as_str().unwrap();
    let listing_id = listed["listing"]["listing_id"].as_str().unwrap();
    // no --sol-usd: the terms are in the listing's token
    let offer = ok(
        &buyer,
        &[
            "marketplace",
            "offer",
            manifest,
            "--price-usd",
            "3",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(
        (&offer["price_units"], &offer["mint"]),
        (&serde_json::json!(3_000_000u64), &serde_json::json!(dollar)),
        "{offer}"
    );
    assert!(offer.get("price_lamports").is_none(), "{offer}");
    let offer_item = offer["offer_item_id"].as_str().unwrap();
    let counter = ok(
        &seller,
        &[
            "marketplace",
            "counter",
            offer_item,
            "--price-usd",
            "4",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(counter["price_units"], 4_000_000u64, "{counter}");
    let counter_item = counter["counter_item_id"].as_str().unwrap();
    seller.ok(&[
        "storage",
        "get",
        counter_item,
        "--storage-dir",
        dir,
        "-o",
        "counter.json",
    ]);
    let signed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(seller.path("counter.json")).unwrap()).unwrap();
    assert_eq!(
        signed["settlement"],
        serde_json::json!({"mint": dollar, "price_units": "4000000"})
    );
    assert!(signed.get("price_lamports").is_none(), "{signed}");
    let accepted = ok(
        &seller,
        &[
            "marketplace",
            "accept",
            offer_item,
            "--expect-lamports",
            "4000000",
            "--storage-dir",
            dir,
            "--json",
        ],
    );
    assert_eq!(
        (&accepted["state"], &accepted["price_lamports"]),
        (
            &serde_json::json!("accepted"),
            &serde_json::json!(4_000_000u64)
        ),
        "{accepted}"
    );
    let out = buy_while_listening(
        &buyer,
        &seller,
        dir,
        &[
            "marketplace",
            "buy",
            manifest,
            "--offer",
            offer_item,
            "--counter",
            counter_item,
            "--storage-dir",
            dir,
            "--timeout",
            "60",
            "--json",
        ],
        "listen released the negotiated token buy",
    );
    assert!(
        out.status.success(),
        "buy failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let held = |e: &Env| {
        let b = ok(e, &["token", "balance", "--mint", &dollar, "--json"]);
        b["units"].as_u64().unwrap()
    };
    assert_eq!(
        (held(&seller), held(&buyer)),
        (4_000_000, 6_000_000),
        "paid the counter's price in the token"
    );
    assert_eq!(report["listing_id"], listing_id, "{report}");
    let shown = util::services::listing_with_releases(&base, listing_id, 1);
    assert_eq!(shown["listing"]["sales"], 1, "{shown}\n{}", indexer.tail());
    let offer_view = &shown["offers"][0];
    assert_eq!(offer_view["status"], "accepted", "{offer_view}");
    assert_eq!(offer_view["price_units"], 4_000_000u64, "{offer_view}");
    let settled = util::services::get(&format!(
        "{base}/settlements/{listing_id}?buyer={}",
        address(&buyer)
    ))
    .expect("the indexer shows the settlement");
    assert_eq!(settled["price_lamports"], 4_000_000u64, "{settled}");
    assert_eq!(settled["offer_id"], offer["offer_id"], "{settled}");
}
