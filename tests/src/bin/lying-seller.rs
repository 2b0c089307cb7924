//! The demo's lying seller (a test helper, never part of the product):
//! lists a sealed-escrow listing through the program whose blob lies
//! (`--lie chunk`, the default: chunk 0's ciphertext altered, the Merkle
//! root recomputed over it; `--lie bundle`: a blob sealed consistently,
//! every chunk opening to its hashes and states, of another plaintext than
//! the bundle the manifest's `bundle_hash` names; either way the buyer's
//! check of the blob against the root before paying passes; `--lie
//! downgrade`: another plaintext sealed consistently as an old format 1
//! blob under a manifest naming no format, which proves nothing about the
//! bundle hash: the buyer refuses it before paying), then
//! reveals the listing's true key to each deposit as an honest `listen`
//! would, and so would be paid after the dispute window for a blob that
//! does not open, unless the buyer proves it.
//!
//! `lying-seller --rpc URL --home DIR --gateway URL [--stake LAMPORTS]
//! [--reveals N] [--timeout SECS] [--lie chunk|bundle|downgrade]`: the wallet is `DIR/.brainctl/wallet.json`
//! (funded), the Arweave key `DIR/.brainctl/arweave-wallet.pkcs8`. Prints
//! `{"manifest": …, "listing_id": …}` once listed, then a line per reveal,
//! and exits after N reveals (default 1) or the timeout (default 120 s).

use node::arweave::gateway::Gateway;
use node::arweave::Uploader;
use node::chain::{Chain, Endpoint, Pubkey};
use node::escrow::math::blob::{seal, seal_v1, Blob, Format};
use node::escrow::{self, EscrowStatus};
use node::market::manifest::{build_listing, EscrowCommitments, Listing, NewListing};
use node::wallet::Wallet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Args {
    rpc: String,
    home: PathBuf,
    gateway: String,
    stake: u64,
    reveals: usize,
    timeout: Duration,
    /// `chunk` or `bundle`.
    lie: String,
}

fn usage(why: &str) -> ! {
    eprintln!("lying-seller: {why}\nusage: lying-seller --rpc URL --home DIR --gateway URL [--stake LAMPORTS] [--reveals N] [--timeout SECS] [--lie chunk|bundle|downgrade]");
    std::process::exit(2)
}

fn args() -> Args {
    let (mut rpc, mut home, mut gateway) = (None, None, None);
    let (mut stake, mut reveals, mut timeout) = (2_000_000u64, 1usize, 120u64);
    let mut lie = String::from("chunk");
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let number = |v: &str| -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{flag} {v}: not a number")))
        };
        match flag.as_str() {
            "--rpc" => rpc = Some(value),
            "--home" => home = Some(PathBuf::from(value)),
            "--gateway" => gateway = Some(value),
            "--stake" => stake = number(&value),
            "--reveals" => reveals = number(&value) as usize,
            "--timeout" => timeout = number(&value),
            "--lie" if ["chunk", "bundle", "downgrade"].contains(&value.as_str()) => lie = value,
            "--lie" => usage(&format!("--lie {value}: chunk, bundle or downgrade")),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    Args {
        rpc: rpc.unwrap_or_else(|| usage("--rpc is required")),
        home: home.unwrap_or_else(|| usage("--home is required")),
        gateway: gateway.unwrap_or_else(|| usage("--gateway is required")),
        stake,
        reveals,
        timeout: Duration::from_secs(timeout),
        lie,
    }
}

fn main() {
    let a = args();
    let dir = a.home.join(".brainctl");
    let seller = Wallet::load(&dir.join("wallet.json")).expect("the seller's wallet");
    let key = Gateway::load_or_create_key(&dir.join("arweave-wallet.pkcs8")).expect("Arweave key");
    let uploader = Uploader::Gateway(Gateway::new(&a.gateway, key));
    let chain = Chain::new(
        Endpoint::parse(&a.rpc).expect("--rpc"),
        node::chain::parse_commitment("confirmed").expect("commitment"),
        &[escrow::PROGRAM_ID],
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let seller_pk: Pubkey = seller.address().parse().expect("address");

    // the lie: chunk 0's ciphertext altered after sealing, the root
    // recomputed over the altered blob; or another plaintext sealed whole
    let id = node::market::list::new_listing_id();
    let plain: Vec<u8> = br#"{"memories":[{"content":"a lesson that was never written"}]}"#
        .iter()
        .copied()
        .cycle()
        .take(1_500)
        .collect();
    let bundle_hash = hex::encode(escrow::math::sha256(&[&plain]));
    let k = escrow::listing_scalar(&seller, &id);
    // the same length, one memory's words changed
    let mut shipped = plain.clone();
    shipped[40..47].copy_from_slice(b"NOTHING");
    let (sealed, format) = match a.lie.as_str() {
        "bundle" => (seal(&k, &shipped).expect("seal"), Format::V3),
        "downgrade" => (seal_v1(&k, &shipped).expect("seal"), Format::V1),
        _ => (seal(&k, &plain).expect("seal"), Format::V3),
    };
    let mut bytes = sealed.bytes;
    if a.lie == "chunk" {
        let at = Blob::parse(&bytes).expect("blob").cipher_offset();
        bytes[at + 3] ^= 0x20;
    }
    let lying_root = Blob::parse(&bytes).expect("blob").root();
    // the preview states the count the blob states (the buyer checks it
    // before paying): the lie is the bundle, not the count
    let stated = Blob::parse(&bytes).expect("blob").stated_memories();
    let blob_id = rt
        .block_on(uploader.put_signed(
            &seller,
            bytes,
            node::publish::BLOB_CONTENT_TYPE,
            node::publish::ESCROW_BLOB_SCHEMA,
        ))
        .expect("uploading the blob");
    let settings = rt
        .block_on(node::market::escrow_trade::read_settings(&chain))
        .expect("the escrow program's settings");
    let now = rt.block_on(chain.cluster_time()).expect("cluster time");
    let manifest_json = build_listing(
        &seller,
        &NewListing {
            listing_id: &id,
            bundle_hash: &bundle_hash,
            payment_address: None,
            price_usd: 1.0,
            price_lamports: 6_666_667,
            duration_hours: 1.0,
            visibility: "auction",
            encrypted_bundle_uri: &format!("ar://{blob_id}"),
            metadata_uri: "ar://metadata",
            preview: serde_json::json!({"memories_count": stated.unwrap_or(30)}),
            now,
            escrow_program: Some(escrow::PROGRAM_ID),
            escrow_terms: Some(EscrowCommitments {
                key_point: escrow::math::client::point_of(&k),
                blob_root: lying_root,
                plain_len: sealed.plain_len,
                seller_x25519: seller.x25519_public(),
                blob_format: format,
            }),
            settlement: None,
            usd_at_settle: None,
        },
    )
    .expect("manifest");
    let manifest = rt
        .block_on(uploader.put_signed(
            &seller,
            serde_json::to_vec(&manifest_json).expect("json"),
            "application/json",
            node::market::manifest::LISTING_SCHEMA,
        ))
        .expect("uploading the manifest");
    let listing = Listing::from_value(manifest_json).expect("listing");
    let list_ix = node::market::escrow_trade::list_instruction(
        &seller_pk,
        &listing,
        (a.stake, u32::MAX),
        &settings,
    )
    .expect("list_sealed");
    let op = node::market::MemoOp::List {
        listing_arweave_id: manifest.clone(),
        bundle_hash,
    };
    rt.block_on(node::market::tx::post_memo_with(
        &chain,
        &seller,
        &op,
        &seller_pk,
        vec![list_ix],
    ))
    .expect("listing");
    println!(
        "{}",
        serde_json::json!({"manifest": manifest, "listing_id": id})
    );

    // reveal the true key to each deposit, as an honest daemon would
    let account = escrow::listing_address(&seller_pk, &id);
    let (started, mut revealed) = (Instant::now(), 0);
    while revealed < a.reveals && started.elapsed() < a.timeout {
        let held = rt
            .block_on(node::listen::deposits::held_deposits(
                &chain,
                &account,
                EscrowStatus::Deposited,
            ))
            .unwrap_or_default();
        for h in held {
            let b = node::market::escrow_trade::seller_blinding(
                &seller.x25519_secret(),
                &h.escrow,
                &h.account.buyer_x25519,
            )
            .expect("blinding");
            let s = escrow::math::client::reveal(&k, &b);
            let ix = escrow::reveal(&account, &h.account.buyer, &seller_pk, &s);
            match rt.block_on(chain.send(&[ix], &[&seller.solana_keypair()])) {
                Ok(sent) => {
                    revealed += 1;
                    println!(
                        "{}",
                        serde_json::json!({"revealed": h.escrow.to_string(), "signature": sent.signature.to_string()})
                    );
                }
                Err(e) => eprintln!("lying-seller: reveal to {}: {e}", h.escrow),
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    if revealed < a.reveals {
        eprintln!(
            "lying-seller: {revealed} of {} reveals within {:?}",
            a.reveals, a.timeout
        );
        std::process::exit(1);
    }
}
