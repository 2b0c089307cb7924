//! USD at settle time (issue 31) on a validator with the escrow program
//! (its `quote_usd`) and the localnet's SOL/USD Pyth account (150 USD):
//! a listing priced at 15 USD signs the price account and rule and fixes
//! no lamports; a listing whose rule the price cannot meet is refused; the
//! buyer's quote shows the source, the price and its age; the buy runs
//! `quote_usd` beside its payment, `listen` releases it by the quote in its
//! logs, and the indexer (live and rebuilt) counts it. Hostile buys while
//! the daemon runs: no quote, a quote with an unbounded `max_units` and
//! half the payment, another price account: all rejected, none released.

mod util;

use node::chain::{Keypair, Pubkey, Signer};
use serde_json::Value;

use std::time::{Duration, Instant};
use util::services::Running;
use util::Env;

fn run(v: &e2e::TestValidator, e: &Env, args: &[&str]) -> util::Run {
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    e.run(&full)
}

fn ok(v: &e2e::TestValidator, e: &Env, args: &[&str]) -> Value {
    let r = run(v, e, args);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
}

/// `marketplace quote` of `manifest` by `buyer`, as JSON.
fn quote_of(v: &e2e::TestValidator, buyer: &Env, manifest: &str, dir: &str) -> Value {
    ok(
        v,
        buyer,
        &[
            "marketplace",
            "quote",
            manifest,
            "--storage-dir",
            dir,
            "--json",
        ],
    )
}

fn address(e: &Env) -> Pubkey {
    e.ok(&["wallet", "address"]).stdout.trim().parse().unwrap()
}

/// Waits until listen's state has `sig` in `state`.
fn wait_state(seller: &Env, sig: &str, state: &str, daemon: &mut Running) -> node::listen::BuyRow {
    let db = node::listen::ListenDb::open(&seller.path(".brainctl/listen.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Ok(row) = db.get(sig) {
            if row.state == state {
                return row;
            }
        }
        assert!(daemon.alive(), "listen exited:\n{}", daemon.tail());
        assert!(
            Instant::now() < deadline,
            "{sig} never reached {state}; listen's log ends:\n{}",
            daemon.tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_listing_priced_in_usd_settles_at_the_slots_pyth_price() {
    let admin = Keypair::new();
    let v = e2e::start(
        &[
            e2e::light_args(),
            e2e::escrow_args(&admin.pubkey()),
            e2e::sol_usd_args(),
        ]
        .concat(),
    );
    let rt = e2e::runtime();
    let chain = v.chain();
    let price_account = node::chain::test_price::ADDRESS.to_string();
    let (seller, buyer) = (Env::new(), Env::new());
    for e in [&seller, &buyer] {
        e.ok(&["wallet", "new"]);
        v.fund(&address(e), 2);
    }
    seller.ok(&[
        "memory",
        "add",
        "Priced in dollars, paid in SOL",
        "-c",
        "lesson",
    ]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let list = |extra: &[&str]| {
        let mut args = vec![
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "15",
            "--usd-at-settle",
            &price_account,
            "--storage-dir",
            &dir,
            "--json",
        ];
        args.extend_from_slice(extra);
        run(&v, &seller, &args)
    };
    // the fixture was published when the validator started: a rule of one
    // second's age cannot be met, and the listing is refused, named
    std::thread::sleep(Duration::from_secs(2));
    let stale = list(&["--price-max-age-secs", "1"]);
    assert_eq!(stale.code, 2, "{}\n{}", stale.stdout, stale.stderr);
    assert!(
        stale
            .stdout
            .contains("s old; the listing takes at most 1 s"),
        "{}",
        stale.stdout
    );
    let wrong = run(
        &v,
        &seller,
        &[
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "15",
            "--usd-at-settle",
            &Keypair::new().pubkey().to_string(),
            "--storage-dir",
            &dir,
            "--json",
        ],
    );
    assert_eq!(wrong.code, 2, "{}", wrong.stdout);
    // an account other than Pyth's push-oracle account of the feed (any
    // receiver-owned update, of any past moment, could be posted there)
    assert!(
        wrong.stdout.contains("is not Pyth's push-oracle account"),
        "{}",
        wrong.stdout
    );

    let listed = list(&["--price-max-age-secs", "86400"]);
    assert_eq!(listed.code, 0, "{}\n{}", listed.stdout, listed.stderr);
    let listed = listed.json();
    let l = &listed["listing"];
    let (listing_id, manifest) = (
        l["listing_id"].as_str().unwrap().to_string(),
        l["manifest_id"].as_str().unwrap().to_string(),
    );
    assert_eq!(l["usd"]["price_account"], price_account.as_str(), "{l}");
    assert_eq!(l["usd"]["usd_micros"], 15_000_000u64);
    assert_eq!(
        l["price_lamports"], 100_000_000u64,
        "15 USD at 150 USD/SOL now"
    );
    seller.ok(&[
        "storage",
        "get",
        &manifest,
        "--storage-dir",
        &dir,
        "-o",
        "listing.json",
    ]);
    let signed: Value =
        serde_json::from_slice(&std::fs::read(seller.path("listing.json")).unwrap()).unwrap();
    assert!(signed.get("price_lamports").is_none(), "{signed}");
    assert_eq!(
        signed["usd_at_settle"]["price_account"],
        price_account.as_str()
    );
    assert_eq!(signed["usd_at_settle"]["max_age_secs"], 86_400);
    assert_eq!(signed["usd_at_settle"]["tolerance_bps"], 100);

    // the quote: the source, the price, its age
    let quote = quote_of(&v, &buyer, &manifest, &dir);
    let q = &quote["quote"];
    assert_eq!(q["price_lamports"], 100_000_000u64, "{quote}");
    assert_eq!(q["usd"]["price_account"], price_account.as_str());
    assert_eq!(q["usd"]["price"], 15_000_000_000i64);
    assert_eq!(q["usd"]["exponent"], -8);
    assert!(q["usd"]["age_secs"].as_i64().unwrap() >= 2, "{quote}");
    assert_eq!(q["terms"], "usd_at_settle");
    // the implied rate, before paying; and the priority fee's cap
    assert_eq!(q["usd"]["usd_per_whole"], "150.00000000", "{quote}");
    assert_eq!(q["priority_fee_max_lamports"], 10_000, "{quote}");
    // the spend policy's cap tightens it, for every transaction and in
    // every quote
    let set = ok(
        &v,
        &buyer,
        &[
            "marketplace",
            "budget",
            "--set-priority-fee-max-lamports",
            "3000",
            "--json",
        ],
    );
    assert_eq!(set["policy"]["priority_fee_max_lamports"], 3_000, "{set}");
    let capped = quote_of(&v, &buyer, &manifest, &dir);
    assert_eq!(
        capped["quote"]["priority_fee_max_lamports"], 3_000,
        "{capped}"
    );
    let human = run(
        &v,
        &buyer,
        &["marketplace", "quote", &manifest, "--storage-dir", &dir],
    );
    assert!(
        human.stdout.contains("at 150.00000000 USD")
            && human.stdout.contains("priority fee at most 3000 lamports"),
        "{}{}",
        human.stdout,
        human.stderr
    );

    let (indexer, base) = util::services::indexer(&v.rpc_url, &dir, work.path());
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        work.path(),
        &[],
        "warn,node::listen=info",
    );

    // hostile buys first, while the daemon runs
    let hostile_wallet = node::wallet::Wallet::from_seed(&[0x4b; 32]);
    let hostile = hostile_wallet.solana_keypair();
    v.fund(&hostile.pubkey(), 2);
    let pay_to: Pubkey = address(&seller);
    let registry = node::chain::instructions::registry_from_env().unwrap();
    let terms = node::settle::UsdTerms {
        price_account: price_account.clone(),
        feed_id: node::market::usd_price::SOL_USD_FEED,
        usd_micros: 15_000_000,
        max_age_secs: 86_400,
        max_conf_bps: 100,
        tolerance_bps: 100,
        decimals: 9,
    };
    let buy = |lamports: u64| {
        node::market::tx::buy_instructions(
            &hostile.pubkey(),
            &pay_to,
            lamports,
            &listing_id,
            &hostile_wallet.x25519_address(),
            &registry,
            None,
        )
    };
    let send = |ixs: Vec<solana_sdk::instruction::Instruction>| {
        rt.block_on(chain.send(&ixs, &[&hostile]))
            .expect("lands")
            .signature
            .to_string()
    };
    // the full price, without the program's quote
    let unquoted = send(buy(100_000_000));
    // a quote bounded by nothing, and half the price
    let mut underpaid_ixs =
        vec![node::market::usd_price::quote_instruction(&terms, u64::MAX / 2).unwrap()];
    underpaid_ixs.extend(buy(50_000_000));
    let underpaid = send(underpaid_ixs);
    // a quote of a looser rule than the listing's (a week-old price)
    let loose = node::settle::UsdTerms {
        max_age_secs: 604_800,
        ..terms.clone()
    };
    let mut loose_ixs =
        vec![node::market::usd_price::quote_instruction(&loose, 100_000_000).unwrap()];
    loose_ixs.extend(buy(100_000_000));
    let loosened = send(loose_ixs);
    for (sig, reason) in [
        (&unquoted, "\"no_usd_quote\""),
        (&underpaid, "\"underpaid\""),
        (&loosened, "\"no_usd_quote\""),
    ] {
        let row = wait_state(&seller, sig, "rejected", &mut daemon);
        assert!(
            row.reason.as_deref().unwrap_or_default().contains(reason),
            "{sig}: {:?}",
            row.reason
        );
    }

    // the honest buy: quote_usd beside the payment, released
    let bought = run(
        &v,
        &buyer,
        &[
            "marketplace",
            "buy",
            &manifest,
            "--storage-dir",
            &dir,
            "--timeout",
            "90",
            "--json",
        ],
    );
    assert_eq!(
        bought.code,
        0,
        "{}\n{}\nlisten:\n{}",
        bought.stdout,
        bought.stderr,
        daemon.tail()
    );
    let report = bought.json();
    let rows = buyer.ok(&[
        "memory",
        "list",
        "-s",
        report["import"]["scope"].as_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        rows.json()["memories"][0]["content"],
        "Priced in dollars, paid in SOL"
    );
    let buy_sig = report["buy_signature"].as_str().unwrap();
    let tx = rt
        .block_on(chain.transaction(&buy_sig.parse().unwrap()))
        .unwrap()
        .unwrap();
    let quoted = terms.quoted(&tx).expect("the buy carries its quote");
    assert_eq!(quoted, 100_000_000);
    assert_eq!(
        tx.paid(&address(&buyer).to_string(), &pay_to.to_string()),
        100_000_000,
        "the buyer paid the quoted lamports to the seller"
    );

    let shown = util::services::listing_with_releases(&base, &listing_id, 1);
    assert_eq!(
        (&shown["listing"]["sales"], &shown["listing"]["releases"]),
        (&serde_json::json!(1), &serde_json::json!(1)),
        "the indexer counts the quoted buy and none of the hostile ones: {shown}\n{}",
        indexer.tail()
    );
    util::services::indexer_matches_rebuild(
        &v.rpc_url,
        &base,
        &dir,
        work.path(),
        "a rebuild prices the buys by their quotes as the live indexer does",
    );
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}

/// A listing priced in USD at settle time paid in a token that is not a
/// dollar (a test token whose USD price the SOL/USD account gives: 150
/// USD a token, as wrapped SOL would be): `list --usd-at-settle --mint`
/// signs the token in the rule and fixes no price; the quote converts 3
/// USD to 20,000 base units (6 decimals); hostile buys (no quote, a quote
/// in SOL's decimals) are rejected while `listen` runs; the CLI's buy and
/// a second buyer's `/settle` pay the quoted units and are released; the
/// indexer, live and rebuilt, counts both.
#[test]
fn a_token_listing_priced_in_usd_converts_at_the_slots_price() {
    let admin = Keypair::new();
    let v = e2e::start(
        &[
            e2e::light_args(),
            e2e::escrow_args(&admin.pubkey()),
            e2e::sol_usd_args(),
        ]
        .concat(),
    );
    let rt = e2e::runtime();
    let chain = v.chain();
    let price_account = node::chain::test_price::ADDRESS.to_string();
    let token = node::chain::token::TokenMint {
        address: v.create_mint(6),
        program: node::chain::token::TOKEN_PROGRAM_ID,
        decimals: 6,
    };
    let mint_s = token.address.to_string();
    let units = |owner: &Pubkey| {
        rt.block_on(node::chain::token::balance(&chain, owner, &token))
            .unwrap()
    };
    let (seller, buyer) = (Env::new(), Env::new());
    for e in [&seller, &buyer] {
        e.ok(&["wallet", "new"]);
        v.fund(&address(e), 2);
    }
    v.mint_tokens(&token, &address(&buyer), 1_000_000);
    seller.ok(&[
        "memory",
        "add",
        "Priced in dollars, paid in a token",
        "-c",
        "lesson",
    ]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("items").display().to_string();
    let list = |extra: &[&str]| {
        let mut args = vec![
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "3",
            "--usd-at-settle",
            &price_account,
            "--mint",
            &mint_s,
            "--price-max-age-secs",
            "86400",
            "--storage-dir",
            &dir,
            "--json",
        ];
        args.extend_from_slice(extra);
        run(&v, &seller, &args)
    };
    // a release's cost is paid in SOL: --sol-usd prices the listing against it
    let no_rate = list(&[]);
    assert_eq!(no_rate.code, 2, "{}", no_rate.stdout);
    assert!(
        no_rate.stdout.contains("pass --sol-usd too"),
        "{}",
        no_rate.stdout
    );
    let listed = list(&["--sol-usd", "150"]);
    assert_eq!(listed.code, 0, "{}\n{}", listed.stdout, listed.stderr);
    let l = &listed.json()["listing"];
    let (listing_id, manifest) = (
        l["listing_id"].as_str().unwrap().to_string(),
        l["manifest_id"].as_str().unwrap().to_string(),
    );
    seller.ok(&[
        "storage",
        "get",
        &manifest,
        "--storage-dir",
        &dir,
        "-o",
        "listing.json",
    ]);
    let signed: Value =
        serde_json::from_slice(&std::fs::read(seller.path("listing.json")).unwrap()).unwrap();
    assert_eq!(
        signed["usd_at_settle"]["token"]["mint"],
        mint_s.as_str(),
        "{signed}"
    );
    assert_eq!(signed["usd_at_settle"]["token"]["decimals"], 6);
    assert!(
        signed.get("price_lamports").is_none() && signed.get("settlement").is_none(),
        "no fixed price: {signed}"
    );

    let quote = quote_of(&v, &buyer, &manifest, &dir);
    let q = &quote["quote"];
    assert_eq!(
        (&q["token"]["mint"], &q["token"]["price_units"]),
        (&Value::from(mint_s.as_str()), &Value::from(20_000u64)),
        "3 USD at 150 USD a token, 6 decimals: {quote}"
    );
    assert_eq!(
        (&q["usd"]["units"], &q["usd"]["decimals"]),
        (&Value::from(20_000u64), &Value::from(6))
    );
    assert_eq!(q["terms"], "usd_at_settle");

    let (indexer, base) = util::services::indexer(&v.rpc_url, &dir, work.path());
    let mut daemon = util::services::listen(
        &seller,
        &v.rpc_url,
        &dir,
        work.path(),
        &[],
        "warn,node::listen=info",
    );

    // hostile buys while the daemon runs: the token paid without the
    // program's quote; a quote in SOL's decimals beside a token payment
    let hostile_wallet = node::wallet::Wallet::from_seed(&[0x4c; 32]);
    let hostile = hostile_wallet.solana_keypair();
    v.fund(&hostile.pubkey(), 2);
    v.mint_tokens(&token, &hostile.pubkey(), 1_000_000);
    let pay_to: Pubkey = address(&seller);
    let registry = node::chain::instructions::registry_from_env().unwrap();
    let pay = |units: u64| {
        node::market::tx::token_buy_instructions(
            &hostile.pubkey(),
            &pay_to,
            &token,
            units,
            &listing_id,
            &hostile_wallet.x25519_address(),
            &registry,
            None,
        )
    };
    let send = |ixs: Vec<solana_sdk::instruction::Instruction>| {
        rt.block_on(chain.send(&ixs, &[&hostile]))
            .expect("lands")
            .signature
            .to_string()
    };
    let unquoted = send(pay(20_000));
    let in_sol = node::settle::UsdTerms {
        price_account: price_account.clone(),
        feed_id: node::market::usd_price::SOL_USD_FEED,
        usd_micros: 3_000_000,
        max_age_secs: 86_400,
        max_conf_bps: 100,
        tolerance_bps: 100,
        decimals: 9,
    };
    let mut sol_quoted =
        vec![node::market::usd_price::quote_instruction(&in_sol, 20_000_000).unwrap()];
    sol_quoted.extend(pay(20_000));
    let sol_quoted = send(sol_quoted);
    for sig in [&unquoted, &sol_quoted] {
        let row = wait_state(&seller, sig, "rejected", &mut daemon);
        assert!(
            row.reason
                .as_deref()
                .unwrap_or_default()
                .contains("\"no_usd_quote\""),
            "{sig}: {:?}",
            row.reason
        );
    }

    // the honest buy through the CLI
    let bought = run(
        &v,
        &buyer,
        &[
            "marketplace",
            "buy",
            &manifest,
            "--storage-dir",
            &dir,
            "--timeout",
            "90",
            "--json",
        ],
    );
    assert_eq!(
        bought.code,
        0,
        "{}\n{}\nlisten:\n{}",
        bought.stdout,
        bought.stderr,
        daemon.tail()
    );
    assert_eq!(units(&address(&buyer)), 1_000_000 - 20_000);

    // a second buyer through the indexer's /settle
    let second = node::wallet::Wallet::from_seed(&[0x5C; 32]);
    let second_kp = second.solana_keypair();
    v.fund(&second_kp.pubkey(), 1);
    v.mint_tokens(&token, &second_kp.pubkey(), 100_000);
    let (code, settle) = util::services::settle(
        &base,
        &second,
        &listing_id,
        serde_json::json!({"buyer_x25519_pubkey": second.x25519_address(),
            "cluster": "localnet", "currency": mint_s}),
    );
    assert_eq!(
        (
            code,
            &settle["price_units"],
            &settle["currency"],
            &settle["usd"]["units"]
        ),
        (
            200,
            &Value::from(20_000u64),
            &Value::from(mint_s.as_str()),
            &Value::from(20_000u64)
        ),
        "{settle}"
    );
    let sig = util::services::sign_and_send(&v, &settle, &second_kp);
    wait_state(&seller, &sig, "released", &mut daemon);
    // both buys, and the two hostile payments (rejected: no key for them)
    assert_eq!(units(&pay_to), 4 * 20_000, "the seller holds every payment");

    let shown = util::services::listing_with_releases(&base, &listing_id, 2);
    assert_eq!(
        (&shown["listing"]["sales"], &shown["listing"]["releases"]),
        (&serde_json::json!(2), &serde_json::json!(2)),
        "the indexer counts the two quoted buys and none of the hostile ones: {shown}\n{}",
        indexer.tail()
    );
    util::services::indexer_matches_rebuild(
        &v.rpc_url,
        &base,
        &dir,
        work.path(),
        "a rebuild prices the token buys by their quotes as the live indexer does",
    );
    assert!(daemon.alive(), "listen died:\n{}", daemon.tail());
    assert!(daemon.stop().success());
}
