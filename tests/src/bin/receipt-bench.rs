//! Benchmark (not a test): what a release costs the chain, the route issue
//! 29 names for releases that batch. Today each release is one
//! transaction creating a fresh Light compressed mint for its buy (mint,
//! metadata, token pool, `mint_to` 1, authority revoked, the `release` memo).
//! The alternative measured here keeps one mint per listing (created once,
//! its authority kept) and puts several buyers' receipts in one
//! transaction: one compressed `mint_to` to many buyers and each buyer's
//! `release` memo beside it. For each shape, on a local validator:
//! - how many releases fit a packet (1232 bytes, a legacy message, and a
//!   v0 one against the seller's lookup table: `listen --lookup-table`);
//! - bytes and compute units per transaction;
//! - the validator's CPU per release beyond its idle (its CPU over the
//!   phase minus its idle rate over the same time) and the rent per release;
//! - wall time for N releases sent at once, and the slots from the first
//!   to the last landing.
//!
//! `cargo run -p e2e --bin receipt-bench -- [--releases N]` (default 96).
//! Prints one JSON line per shape; the shared shape is built by the very
//! function `listen` sends (`shared_release_instructions`), at 1, 2, 3 and
//! the most releases a transaction holds (`releases_per_transaction`).

use e2e::cpu_seconds;
use node::chain::instructions::{default_registry, discovery, memo, DEFAULT_CU_LIMIT};
use node::chain::{Chain, Keypair, Pubkey, Signature, Signer};
use node::market::MemoOp;
use node::mint::light::{self, send_compressed_mint, send_to_open_tree};
use node::mint::receipt::Receipt;
use node::mint::token2022::NftSpec;
use node::wallet::Wallet;
use serde_json::json;
use solana_sdk::instruction::Instruction;
use std::time::{Duration, Instant};

const PACKET: usize = 1232;

fn releases_arg() -> usize {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--releases") {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("--releases takes a number")),
        None => 96,
    }
}

/// The listing the bench's releases name.
const LISTING_ID: &str = "20261126-0123456789ab";

/// A `release` memo's text as `listen` writes it, ids at their real lengths.
fn release_text(mint: &Pubkey, i: usize) -> String {
    MemoOp::Release {
        listing_id: LISTING_ID.into(),
        envelope_arweave_id: format!("{i:0>43}"),
        minted_token_address: mint.to_string(),
    }
    .to_string()
}

/// That memo as an instruction.
fn release_memo(seller: &Pubkey, mint: &Pubkey, i: usize) -> Instruction {
    memo(&release_text(mint, i), seller)
}

/// A legacy transaction's wire size (one signer paying, as `listen`'s).
fn wire_size(ixs: &[Instruction], payer: &Pubkey) -> usize {
    node::chain::lookup::wire_size(ixs, payer, 1, &[])
}

/// The instructions of one shared release, as `listen` builds them:
/// `buyers` get one receipt each of the listing's `mint`, with their
/// `release` memos.
fn batch(seller: &Pubkey, mint: &Pubkey, buyers: &[Pubkey], first: usize) -> Vec<Instruction> {
    let buys: Vec<(Pubkey, String)> = buyers
        .iter()
        .enumerate()
        .map(|(i, b)| (*b, release_text(mint, first + i)))
        .collect();
    node::listen::release::shared_release_instructions(
        seller,
        &Receipt::Listing { mint: *mint },
        &buys,
        &default_registry(),
    )
}

/// CU a landed transaction consumed, from its metadata.
fn compute_units(rt: &tokio::runtime::Runtime, chain: &Chain, sig: &Signature) -> u64 {
    let tx = rt
        .block_on(chain.transaction_json(sig))
        .expect("rpc")
        .expect("landed");
    tx.pointer("/meta/computeUnitsConsumed")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

struct Phase {
    started: Instant,
    cpu: f64,
}

fn main() {
    let n = releases_arg();
    let v = e2e::validator();
    let rt = e2e::multi_thread_runtime();
    let chain = v.chain();
    let seller = Wallet::generate();
    let kp = seller.solana_keypair();
    let me = kp.pubkey();
    v.fund(&me, 50);

    // the validator's idle CPU rate, to count only what releases add
    let idle = {
        let (c0, t0) = (cpu_seconds(v.pid), Instant::now());
        std::thread::sleep(Duration::from_secs(5));
        (cpu_seconds(v.pid) - c0) / t0.elapsed().as_secs_f64()
    };
    let begin = || Phase {
        started: Instant::now(),
        cpu: cpu_seconds(v.pid),
    };
    let marginal_ms = |p: &Phase, releases: usize| {
        let spent = cpu_seconds(v.pid) - p.cpu - idle * p.started.elapsed().as_secs_f64();
        (spent.max(0.0) * 1e3 / releases as f64 * 10.0).round() / 10.0
    };
    let slot_span = |sigs: &[Signature]| {
        let slots: Vec<u64> = sigs
            .iter()
            .map(|s| {
                rt.block_on(chain.transaction(s))
                    .expect("rpc")
                    .expect("landed")
                    .slot
            })
            .collect();
        slots.iter().max().unwrap_or(&0) - slots.iter().min().unwrap_or(&0)
    };
    let balance = |who: &Pubkey| rt.block_on(chain.balance(who)).expect("balance");

    // today: one fresh mint per release
    let spec = NftSpec {
        name: "brainctl bundle 0123456789ab".into(),
        symbol: node::mint::bundle_mint::SYMBOL.into(),
        uri: format!("ar://{}", "x".repeat(43)),
    };
    let buyers: Vec<Pubkey> = (0..n).map(|_| Keypair::new().pubkey()).collect();
    let before = balance(&me);
    let phase = begin();
    let sends = buyers.iter().enumerate().map(|(i, buyer)| {
        let (chain, seller, spec) = (&chain, &seller, &spec);
        async move {
            let seed = format!("receipt-bench-{i}");
            let mint = light::mint_keypair(seller, &seed).pubkey();
            let extra = vec![
                release_memo(&seller.solana_keypair().pubkey(), &mint, i),
                discovery(&default_registry(), DEFAULT_CU_LIMIT),
            ];
            send_compressed_mint(chain, seller, &seed, buyer, 1, spec, extra)
                .await
                .expect("release")
                .sent
                .signature
        }
    });
    let sigs: Vec<Signature> = rt.block_on(futures_util::future::join_all(sends));
    let wall = phase.started.elapsed();
    let cpu = marginal_ms(&phase, n);
    let spent = before - balance(&me);
    let one_mint = light::mint_keypair(&seller, "receipt-bench-0").pubkey();
    let mut sample =
        light::compressed_mint_instructions(&me, &one_mint, &buyers[0], 1, &spec, vec![])
            .expect("instructions");
    sample.push(release_memo(&me, &one_mint, 0));
    sample.push(discovery(&default_registry(), DEFAULT_CU_LIMIT));
    println!(
        "{}",
        json!({
            "shape": "a mint per release (today)",
            "releases": n,
            "releases_per_tx": 1,
            "tx_bytes": wire_size(&sample, &me) + 64, // the mint's own signature
            "cu_per_tx": compute_units(&rt, &chain, &sigs[0]),
            "validator_cpu_ms_per_release": cpu,
            "lamports_per_release": spent / n as u64,
            "wall_ms": wall.as_millis() as u64,
            "slots_first_to_last": slot_span(&sigs),
        })
    );

    // one mint for the listing, created once, its authority kept: what
    // `listen --receipt listing` makes with the listing
    let mint = rt
        .block_on(node::mint::receipt::ensure_listing_mint(
            &chain, &seller, LISTING_ID, &spec,
        ))
        .expect("listing mint");
    let most = node::listen::release::releases_per_transaction(
        &me,
        &Receipt::Listing { mint },
        LISTING_ID,
        &[],
    );
    assert!(
        wire_size(&batch(&me, &mint, &buyers[..most], 0), &me) <= PACKET,
        "the most listen puts in one transaction fits a packet"
    );
    // legacy transactions of 1, 2, 3 and the most; then v0 ones against
    // the seller's lookup table (`listen --lookup-table`), the most they
    // hold (known once the table is made)
    let mut sizes: Vec<(usize, bool)> = (1..=3.min(most)).map(|k| (k, false)).collect();
    if most > 3 {
        sizes.push((most, false));
    }
    sizes.push((0, true));
    let state = tempfile::tempdir().expect("tempdir");
    for (k, table) in sizes {
        let k = match table {
            false => k,
            true => {
                let mut db =
                    node::listen::ListenDb::open(&state.path().join("listen.db")).expect("state");
                let in_use = rt
                    .block_on(node::listen::tables::until_in_use(
                        &chain,
                        &seller,
                        &mut db,
                        Duration::from_secs(120),
                    ))
                    .expect("lookup table");
                assert!(in_use, "the seller's lookup table in use within 120 s");
                node::listen::release::releases_per_transaction(
                    &me,
                    &Receipt::Listing { mint },
                    LISTING_ID,
                    &chain.lookup_tables(),
                )
            }
        };
        let buyers: Vec<Pubkey> = (0..n).map(|_| Keypair::new().pubkey()).collect();
        let txs: Vec<Vec<Instruction>> = buyers
            .chunks(k)
            .enumerate()
            .map(|(j, group)| batch(&me, &mint, group, j * k))
            .collect();
        let before = balance(&me);
        let phase = begin();
        let sends = txs.iter().zip(buyers.chunks(k)).map(|(ixs, group)| {
            let (chain, kp) = (&chain, &kp);
            async move {
                send_to_open_tree(chain, ixs, &[kp], group.len() as u64)
                    .await
                    .expect("batched release")
                    .signature
            }
        });
        let sigs: Vec<Signature> = rt.block_on(futures_util::future::join_all(sends));
        let wall = phase.started.elapsed();
        let cpu = marginal_ms(&phase, n);
        let spent = before - balance(&me);
        println!(
            "{}",
            json!({
                "shape": if table {
                    "one mint per listing, one mint_to to many buyers, v0 with the seller's lookup table"
                } else {
                    "one mint per listing, one mint_to to many buyers"
                },
                "releases": n,
                "releases_per_tx": k,
                "most_that_fit_a_packet": if table { k } else { most },
                "tx_bytes": node::chain::lookup::wire_size(&txs[0], &me, 1, &chain.lookup_tables()),
                "cu_per_tx": compute_units(&rt, &chain, &sigs[0]),
                "validator_cpu_ms_per_release": cpu,
                "lamports_per_release": spent / n as u64,
                "wall_ms": wall.as_millis() as u64,
                "slots_first_to_last": slot_span(&sigs),
            })
        );
    }
}
