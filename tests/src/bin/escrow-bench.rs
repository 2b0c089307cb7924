//! Benchmark (not a test): the sealed escrow's trade on a local validator
//! with the SBF program deployed, through `brainctl marketplace listen`
//! exactly as sellers run it (the real binary, as a service), the buyers
//! through the node's `plan_buy` + `execute` (what `marketplace buy` runs):
//! - sequential buys: slots and ms from the deposit's confirmation to the
//!   reveal landing (the key on chain, only for that buyer), then ms for
//!   the buyer to open k = s − b, check every chunk and import;
//! - concurrent buys (M buyers deposit at once): the same, and reveals per
//!   second over the burst;
//! - claims: seconds from the last reveal to every payment claimed (the
//!   dispute window plus the daemon's pass);
//! - costs: what one trade takes from the buyer (price, rent held until it
//!   closes its escrow, network fee) and what the seller's reveal and
//!   claim transactions cost.
//!
//! `cargo run -p e2e --bin escrow-bench -- [--sequential N] [--concurrent M]
//! [--brainctl PATH]` (defaults 5, 20). Prints one JSON line per phase.

use e2e::cli_seller::{fund_all, Seller};
use e2e::percentile;
use node::arweave::{FsStore, Source};
use node::chain::{Chain, Keypair, Pubkey, Signature, Signer};
use node::escrow::{self, EscrowAccount, EscrowStatus};
use node::listen::ListenDb;
use node::market::buy::{execute, fetch_and_import, plan_buy, ImportTarget, Terms};
use node::market::escrow_trade::read_account;
use node::market::manifest::Listing;
use node::wallet::Wallet;
use serde_json::json;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

const DISPUTE_SECS: i64 = 10;

struct Args {
    sequential: usize,
    concurrent: usize,
    brainctl: PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        sequential: 5,
        concurrent: 20,
        brainctl: std::env::var_os("BRAINCTL_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::current_exe()
                    .expect("current exe")
                    .with_file_name("brainctl")
            }),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--sequential" | "--concurrent" => {
                let n = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{flag} takes a number"));
                if flag == "--sequential" {
                    a.sequential = n;
                } else {
                    a.concurrent = n;
                }
            }
            "--brainctl" => a.brainctl = it.next().expect("--brainctl takes a path").into(),
            other => panic!("unknown argument {other} (see the module doc)"),
        }
    }
    assert!(
        a.brainctl.exists(),
        "{} not found: `cargo build -p brainctl-cli` first, or pass --brainctl",
        a.brainctl.display()
    );
    a
}

/// One buy: its escrow account, deposit slot, when it was confirmed.
struct Deposit {
    buyer: Wallet,
    escrow: Pubkey,
    slot: u64,
    confirmed: Instant,
}

async fn deposit(chain: &Chain, src: &Source, l: &Listing, buyer: Wallet) -> Deposit {
    let plan = plan_buy(chain, src, &buyer, l, Terms::Listed)
        .await
        .expect("plan");
    let sig = execute(chain, &buyer, &plan, None).await.expect("deposit");
    let confirmed = Instant::now();
    let slot = chain
        .transaction(&Signature::from_str(&sig).expect("sig"))
        .await
        .expect("rpc")
        .expect("landed")
        .slot;
    let seller: Pubkey = l.seller_pubkey.parse().expect("seller");
    let account = escrow::listing_address(&seller, &l.listing_id);
    Deposit {
        escrow: escrow::escrow_address(&account, &buyer.solana_keypair().pubkey()),
        buyer,
        slot,
        confirmed,
    }
}

fn status(rt: &tokio::runtime::Runtime, chain: &Chain, at: &Pubkey) -> Option<EscrowStatus> {
    rt.block_on(read_account(chain, at, EscrowAccount::decode))
        .expect("rpc")
        .map(|e| e.status)
}

/// Waits for every deposit's reveal; for each (ms from confirmed to the
/// reveal seen, slots from deposit to reveal), and when the last came.
fn wait_reveals(
    rt: &tokio::runtime::Runtime,
    chain: &Chain,
    seller: &Seller,
    deposits: &[Deposit],
) -> (Vec<(f64, f64)>, Instant) {
    let mut seen: Vec<Option<Instant>> = vec![None; deposits.len()];
    let deadline = Instant::now() + Duration::from_secs(300);
    while seen.iter().any(Option::is_none) {
        assert!(
            Instant::now() < deadline,
            "reveals did not come within 300 s"
        );
        for (i, d) in deposits.iter().enumerate() {
            if seen[i].is_none() && status(rt, chain, &d.escrow) != Some(EscrowStatus::Deposited) {
                seen[i] = Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // the daemon records the reveal once the buyer's receipt is minted too
    let state = ListenDb::open(&seller.db()).expect("seller state");
    let recorded = |d: &Deposit| {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(sig) = state
                .get(&d.escrow.to_string())
                .ok()
                .and_then(|r| r.release_sig)
            {
                return sig;
            }
            assert!(
                Instant::now() < until,
                "the daemon never recorded its reveal"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let results = deposits
        .iter()
        .zip(&seen)
        .map(|(d, at)| {
            let reveal = recorded(d);
            let tx = rt
                .block_on(chain.transaction(&Signature::from_str(&reveal).expect("sig")))
                .expect("rpc")
                .expect("reveal landed");
            (
                (at.expect("seen") - d.confirmed).as_secs_f64() * 1e3,
                (tx.slot - d.slot) as f64,
            )
        })
        .collect();
    (results, seen.into_iter().flatten().max().expect("some"))
}

fn stats(v: &mut [f64]) -> serde_json::Value {
    v.sort_by(f64::total_cmp);
    json!({"p50": percentile(v, 0.5).round(), "max": percentile(v, 1.0).round()})
}

fn main() {
    let a = args();
    let admin = Keypair::new();
    let v = e2e::start(&[e2e::light_args(), e2e::escrow_args(&admin.pubkey())].concat());
    let rt = e2e::multi_thread_runtime();
    let chain = v.chain();
    let treasury = Keypair::new();
    v.fund(&admin.pubkey(), 2);
    v.fund(&treasury.pubkey(), 1);
    let settings = escrow::NewSettings {
        treasury: treasury.pubkey(),
        fee_bps: 250,
        slash_bps: 5_000,
        release_window_secs: 120,
        dispute_window_secs: DISPUTE_SECS,
        min_stake: 1_000_000,
    };
    rt.block_on(node::market::escrow_admin::configure(
        &chain, &admin, &settings,
    ))
    .expect("configure");

    let seller = Seller::new(a.brainctl.clone(), &v.rpc_url);
    let seller_pk = seller.new_wallet();
    v.fund(&seller_pk, 50);
    let items = seller.items();
    let listed = seller.list_memory(
        "Escrow pays only through the reveal",
        &["--escrow", "--stake-lamports", "2000000"],
    );
    let manifest = listed["listing"]["manifest_id"]
        .as_str()
        .expect("manifest")
        .to_string();
    let src = Source::Fs(FsStore::new(&items));
    let listing = rt
        .block_on(node::market::buy::fetch_listing(&src, &manifest))
        .expect("listing");
    let daemon = seller.listen();
    std::thread::sleep(Duration::from_secs(2));
    let whale = v.funded_keypair(500);
    let funded = |n: usize| -> Vec<Wallet> {
        let ws: Vec<Wallet> = (0..n).map(|_| Wallet::generate()).collect();
        fund_all(&rt, &chain, &whale, &ws, 200_000_000);
        ws
    };

    // sequential: one deposit at a time, its reveal waited for, the bundle opened
    let mut results = Vec::new();
    let mut open_ms = Vec::new();
    let mut buyer_cost = 0;
    for buyer in funded(a.sequential) {
        let before = rt
            .block_on(chain.balance(&buyer.solana_keypair().pubkey()))
            .expect("rpc");
        let d = rt.block_on(deposit(&chain, &src, &listing, buyer));
        buyer_cost = before
            - rt.block_on(chain.balance(&d.buyer.solana_keypair().pubkey()))
                .expect("rpc");
        let (r, _) = wait_reveals(&rt, &chain, &seller, std::slice::from_ref(&d));
        results.extend(r);
        let dir = tempfile::tempdir().expect("dir");
        let mut store = node::store::Store::open(&dir.path().join("brain.db")).expect("store");
        let t = Instant::now();
        rt.block_on(fetch_and_import(
            &chain,
            &d.buyer,
            &src,
            &listing,
            &d.escrow.to_string(),
            ImportTarget::Store(&mut store),
            None,
            Duration::from_secs(30),
            |_| {},
        ))
        .expect("opened and imported");
        open_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (mut ms, mut slots): (Vec<f64>, Vec<f64>) = results.iter().copied().unzip();
    let rent = rt
        .block_on(chain.rent_exemption(escrow::ESCROW_ACCOUNT_SPACE))
        .expect("rpc");
    println!(
        "{}",
        json!({
            "phase": "sequential",
            "buys": results.len(),
            "reveal_slots_after_deposit": stats(&mut slots),
            "reveal_ms_after_confirmation": stats(&mut ms),
            "buyer_open_and_import_ms": stats(&mut open_ms),
            "buyer_paid_lamports": buyer_cost,
            "of_which_price": listing.price_lamports,
            "of_which_escrow_rent_returned_on_close": rent,
        })
    );

    // concurrent: M buyers deposit at once
    let buyers = funded(a.concurrent);
    let start = Instant::now();
    let deposits: Vec<Deposit> = rt.block_on(futures_util::future::join_all(
        buyers
            .into_iter()
            .map(|b| deposit(&chain, &src, &listing, b)),
    ));
    let (results, last) = wait_reveals(&rt, &chain, &seller, &deposits);
    let span = last - start;
    let (mut ms, mut slots): (Vec<f64>, Vec<f64>) = results.iter().copied().unzip();
    println!(
        "{}",
        json!({
            "phase": "concurrent",
            "buys": results.len(),
            "reveal_slots_after_deposit": stats(&mut slots),
            "reveal_ms_after_confirmation": stats(&mut ms),
            "reveals_per_second": (results.len() as f64 / span.as_secs_f64() * 10.0).round() / 10.0,
        })
    );

    // claims: every revealed escrow paid after the dispute window
    let seller_before = rt.block_on(chain.balance(&seller_pk)).expect("rpc");
    let claim_deadline = Instant::now() + Duration::from_secs(180);
    while deposits
        .iter()
        .any(|d| status(&rt, &chain, &d.escrow) != Some(EscrowStatus::Claimed))
    {
        assert!(
            Instant::now() < claim_deadline,
            "claims did not come within 180 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let fee = listing.price_lamports.unwrap_or(0).div_ceil(40);
    let seller_after = rt.block_on(chain.balance(&seller_pk)).expect("rpc");
    println!(
        "{}",
        json!({
            "phase": "claims",
            "escrows": deposits.len(),
            "dispute_window_s": DISPUTE_SECS,
            "all_claimed_s_after_last_reveal": ((Instant::now() - last).as_secs_f64() * 10.0).round() / 10.0,
            "seller_received_lamports": seller_after.saturating_sub(seller_before),
            "price_less_fee_each": listing.price_lamports.unwrap_or(0) - fee,
        })
    );
    let stopped = daemon.stop();
    assert!(stopped.success(), "listen stopped with {stopped:?}");
}
