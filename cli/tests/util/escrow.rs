//! What the sealed-escrow tests set up the same way: a validator with the
//! program deployed and configured by its upgrade authority, and a seller
//! with one memory listed through the program.
#![allow(dead_code)] // each test binary uses a different subset

use super::Env;
use node::chain::{Keypair, Pubkey, Signer};
use serde_json::Value;

/// The configured stake floor (each open escrow reserves half of it:
/// slash 5000 bps).
pub const STAKE: u64 = 10_000_000;

/// What [`escrow_seller`] stakes: the floor 16 times, so 32 escrows can be
/// open at once (each reserves a share of half the floor).
pub const LISTING_STAKE: u64 = 16 * STAKE;

/// `brainctl -u <v> --commitment confirmed args`; asserts it succeeds.
pub fn ok(v: &e2e::TestValidator, e: &Env, args: &[&str]) -> Value {
    let mut full = vec!["-u", v.rpc_url.as_str(), "--commitment", "confirmed"];
    full.extend_from_slice(args);
    let r = e.run(&full);
    assert_eq!(r.code, 0, "brainctl {args:?}: {}\n{}", r.stdout, r.stderr);
    r.json()
}

/// A new buyer (a wallet with 2 SOL) running `marketplace buy <manifest>
/// --json` to its end, waiting at most `timeout_secs` for an answer: the
/// buyer and the run (not asserted: a buy may be refused on purpose).
pub fn buyer_buys(
    v: &e2e::TestValidator,
    manifest: &str,
    dir: &str,
    timeout_secs: u64,
) -> (Env, super::Run) {
    buyer_buys_with(v, manifest, dir, timeout_secs, &[])
}

/// [`buyer_buys`] with `extra` flags for `buy` (e.g. `--allow-unproven-blob`).
pub fn buyer_buys_with(
    v: &e2e::TestValidator,
    manifest: &str,
    dir: &str,
    timeout_secs: u64,
    extra: &[&str],
) -> (Env, super::Run) {
    let buyer = Env::new();
    buyer.ok(&["wallet", "new"]);
    ok(v, &buyer, &["wallet", "airdrop", "2", "--json"]);
    let args = buy_args(v, manifest, dir, timeout_secs, extra);
    let run = buyer.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    (buyer, run)
}

/// `-u <v> --commitment confirmed marketplace buy <manifest> --storage-dir
/// <dir> --timeout <secs> --json` and `extra`.
pub fn buy_args(
    v: &e2e::TestValidator,
    manifest: &str,
    dir: &str,
    timeout_secs: u64,
    extra: &[&str],
) -> Vec<String> {
    let timeout = timeout_secs.to_string();
    let mut args = vec![
        "-u",
        v.rpc_url.as_str(),
        "--commitment",
        "confirmed",
        "marketplace",
        "buy",
        manifest,
        "--storage-dir",
        dir,
        "--timeout",
        &timeout,
        "--json",
    ];
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

/// The address of `e`'s wallet, read without a validator.
pub fn address(e: &Env) -> Pubkey {
    e.ok(&["wallet", "address", "--json"]).json()["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// A validator with the escrow program deployed (and `extra` programs),
/// configured by its upgrade authority: release window 120 s, dispute
/// window `dispute_secs`, stake floor [`STAKE`]; returns it and the treasury.
pub fn configured(extra: &[String], dispute_secs: u64) -> (e2e::TestValidator, Keypair) {
    let admin = Env::new();
    admin.ok(&["wallet", "new"]);
    let admin_pk = address(&admin);
    let v = e2e::start(&[extra.to_vec(), e2e::escrow_args(&admin_pk)].concat());
    let treasury = Keypair::new();
    v.fund(&admin_pk, 2);
    v.fund(&treasury.pubkey(), 1);
    let (treasury_s, stake_s, dispute_s) = (
        treasury.pubkey().to_string(),
        STAKE.to_string(),
        dispute_secs.to_string(),
    );
    ok(
        &v,
        &admin,
        &[
            "escrow",
            "configure",
            "--treasury",
            &treasury_s,
            "--fee-bps",
            "100",
            "--slash-bps",
            "5000",
            "--release-window-secs",
            "120",
            "--dispute-window-secs",
            &dispute_s,
            "--min-stake-lamports",
            &stake_s,
            "--json",
        ],
    );
    (v, treasury)
}

/// A funded seller with `memory` exported, signed and listed through the
/// program at 1 USD (100 USD/SOL) with [`LISTING_STAKE`]; the seller and
/// `list`'s JSON.
pub fn escrow_seller(v: &e2e::TestValidator, dir: &str, memory: &str) -> (Env, Value) {
    escrow_seller_with(v, dir, memory, &[])
}

/// [`escrow_seller`] with `extra` flags for `list` (e.g. `--mint`).
pub fn escrow_seller_with(
    v: &e2e::TestValidator,
    dir: &str,
    memory: &str,
    extra: &[&str],
) -> (Env, Value) {
    let seller = Env::new();
    seller.ok(&["wallet", "new"]);
    ok(v, &seller, &["wallet", "airdrop", "5", "--json"]);
    seller.ok(&["memory", "add", memory, "-c", "lesson"]);
    seller.ok(&["export", "--sign", "-o", "b.signed.json"]);
    let listed = list_escrow(v, &seller, dir, extra);
    (seller, listed)
}

/// `seller` lists its exported `b.signed.json` (again) through the
/// program at a dollar with [`LISTING_STAKE`], items in `dir`, with
/// `extra` flags: `list`'s answer.
pub fn list_escrow(v: &e2e::TestValidator, seller: &Env, dir: &str, extra: &[&str]) -> Value {
    let stake = LISTING_STAKE.to_string();
    let mut args = vec![
        "marketplace",
        "list",
        "b.signed.json",
        "--price-usd",
        "1",
        "--sol-usd",
        "100",
        "--escrow",
        "--stake-lamports",
        &stake,
        "--storage-dir",
        dir,
        "--json",
    ];
    args.extend_from_slice(extra);
    ok(v, seller, &args)
}

/// A funded buyer running `marketplace buy <manifest> --json` in the
/// background (its output piped), waiting up to `timeout_secs` for the key.
pub fn buying(
    v: &e2e::TestValidator,
    manifest: &str,
    dir: &str,
    timeout_secs: u64,
) -> (Env, std::process::Child) {
    buying_with(v, manifest, dir, timeout_secs, &[])
}

/// [`buying`] with `extra` flags for `buy`.
pub fn buying_with(
    v: &e2e::TestValidator,
    manifest: &str,
    dir: &str,
    timeout_secs: u64,
    extra: &[&str],
) -> (Env, std::process::Child) {
    let buyer = Env::new();
    buyer.ok(&["wallet", "new"]);
    ok(v, &buyer, &["wallet", "airdrop", "2", "--json"]);
    let child = buyer
        .cmd()
        .args(buy_args(v, manifest, dir, timeout_secs, extra))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (buyer, child)
}

/// What a cheating seller's listings cost.
pub const CHEAT_PRICE: u64 = 50_000_000;

/// What a cheating seller's own tooling sealed and commits to.
pub struct Sealed {
    pub bytes: Vec<u8>,
    pub plain_len: u64,
    pub root: [u8; 32],
    pub key_point: [u8; 32],
    pub format: node::escrow::math::blob::Format,
}

impl Sealed {
    /// `plain` sealed under `k` in the current format (v3), and the
    /// memory count the blob states.
    pub fn v3(k: &node::escrow::math::point::Scalar, plain: &[u8]) -> (Sealed, u64) {
        use node::escrow::math::blob::{seal, Blob, Format};
        let sealed = seal(k, plain).unwrap();
        let stated = Blob::parse(&sealed.bytes)
            .unwrap()
            .stated_memories()
            .unwrap();
        (
            Sealed {
                root: sealed.root,
                bytes: sealed.bytes,
                plain_len: sealed.plain_len,
                key_point: node::escrow::math::client::point_of(k),
                format: Format::V3,
            },
            u64::from(stated),
        )
    }
}

/// A cheating seller's listing (its own tooling, through the node's
/// library): `sealed` uploaded as the blob, a manifest naming `format`,
/// `bundle_hash` and a preview of `memories_count`, listed in the program
/// with the `list` memo. Returns the manifest's and the blob's item ids.
pub fn list_as_cheater(
    v: &e2e::TestValidator,
    uploader: &node::arweave::Uploader,
    seller: &node::wallet::Wallet,
    id: &str,
    sealed: Sealed,
    bundle_hash: &str,
    memories_count: u64,
) -> (String, String) {
    list_as_cheater_in(
        v,
        uploader,
        seller,
        id,
        sealed,
        bundle_hash,
        memories_count,
        None,
    )
}

/// [`list_as_cheater`] in `mint` (`None`: lamports) at [`CHEAT_PRICE`]
/// base units: the listing's `settlement` and `list_sealed_token`.
#[allow(clippy::too_many_arguments)]
pub fn list_as_cheater_in(
    v: &e2e::TestValidator,
    uploader: &node::arweave::Uploader,
    seller: &node::wallet::Wallet,
    id: &str,
    sealed: Sealed,
    bundle_hash: &str,
    memories_count: u64,
    mint: Option<&node::chain::token::TokenMint>,
) -> (String, String) {
    use node::market::manifest::{
        build_listing, EscrowCommitments, Listing, NewListing, TokenSettlement,
    };
    const PRICE: u64 = CHEAT_PRICE;
    let (rt, chain) = (e2e::runtime(), v.chain());
    let seller_pk: Pubkey = seller.address().parse().unwrap();
    let blob_id = rt
        .block_on(uploader.put_signed(
            seller,
            sealed.bytes,
            node::publish::BLOB_CONTENT_TYPE,
            node::publish::ESCROW_BLOB_SCHEMA,
        ))
        .unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let manifest_json = build_listing(
        seller,
        &NewListing {
            listing_id: id,
            bundle_hash,
            payment_address: None,
            price_usd: 5.0,
            price_lamports: PRICE,
            duration_hours: 1.0,
            visibility: "auction",
            encrypted_bundle_uri: &format!("ar://{blob_id}"),
            metadata_uri: "ar://metadata",
            preview: serde_json::json!({"memories_count": memories_count}),
            now,
            escrow_program: Some(node::escrow::PROGRAM_ID),
            escrow_terms: Some(EscrowCommitments {
                key_point: sealed.key_point,
                blob_root: sealed.root,
                plain_len: sealed.plain_len,
                seller_x25519: seller.x25519_public(),
                blob_format: sealed.format,
            }),
            settlement: mint.map(|m| TokenSettlement {
                mint: m.address.to_bytes(),
                token_program: m.program.to_bytes(),
                decimals: m.decimals,
                price_units: PRICE,
            }),
            usd_at_settle: None,
        },
    )
    .unwrap();
    let manifest = rt
        .block_on(uploader.put_signed(
            seller,
            serde_json::to_vec(&manifest_json).unwrap(),
            "application/json",
            node::market::manifest::LISTING_SCHEMA,
        ))
        .unwrap();
    let listing = Listing::from_value(manifest_json).unwrap();
    let settings = rt
        .block_on(node::market::escrow_trade::read_settings(&chain))
        .unwrap();
    let list_ix = node::market::escrow_trade::list_instruction(
        &seller_pk,
        &listing,
        (STAKE, u32::MAX),
        &settings,
    )
    .unwrap();
    let op = node::market::MemoOp::List {
        listing_arweave_id: manifest.clone(),
        bundle_hash: bundle_hash.to_string(),
    };
    rt.block_on(node::market::tx::post_memo_with(
        &chain,
        seller,
        &op,
        &seller_pk,
        vec![list_ix],
    ))
    .unwrap();
    (manifest, blob_id)
}

/// How a downgrading seller seals: format 1 (`seal_v1`) or 2 (`seal_v2`).
pub type Seal = fn(
    &[u8; 32],
    &[u8],
)
    -> Result<node::escrow::math::blob::Sealed, node::escrow::math::blob::BlobError>;

/// A downgrading seller's listing: `garbage` sealed consistently by
/// `seal` under a manifest that names no format (what a format 1 listing
/// says), promising `bundle_hash` and `memories_count`. Returns its
/// listing id and manifest item id.
pub fn list_downgraded(
    v: &e2e::TestValidator,
    uploader: &node::arweave::Uploader,
    seller: &node::wallet::Wallet,
    seal: Seal,
    garbage: &[u8],
    bundle_hash: &str,
    memories_count: u64,
) -> (String, String) {
    let id = node::market::list::new_listing_id();
    let k = node::escrow::listing_scalar(seller, &id);
    let sealed = seal(&k, garbage).unwrap();
    let root = node::escrow::math::blob::Blob::parse(&sealed.bytes)
        .unwrap()
        .root();
    let (manifest, _) = list_as_cheater(
        v,
        uploader,
        seller,
        &id,
        Sealed {
            bytes: sealed.bytes,
            plain_len: sealed.plain_len,
            root,
            key_point: node::escrow::math::client::point_of(&k),
            format: node::escrow::math::blob::Format::V1,
        },
        bundle_hash,
        memories_count,
    );
    (id, manifest)
}

/// The seller `seller` reveals `k` (its blob's key: a lying blob's, where
/// the test lies) to `buyer`'s escrow on its listing account `account`,
/// by hand, as a seller's own client could.
pub fn reveal_by_hand(
    v: &e2e::TestValidator,
    seller: &node::wallet::Wallet,
    account: &Pubkey,
    buyer: &Pubkey,
    k: &node::escrow::math::point::Scalar,
) {
    use node::escrow;
    // a handle and a runtime of its own (a client's pooled connections
    // belong to the runtime that made them)
    let (rt, chain) = (e2e::runtime(), v.chain());
    let at = escrow::escrow_address(account, buyer);
    // read at the handle's commitment (the deposit just confirmed)
    let a = rt
        .block_on(
            chain
                .rpc()
                .get_account_with_commitment(&at, chain.commitment()),
        )
        .unwrap()
        .value
        .expect("the buyer's escrow");
    let e = escrow::EscrowAccount::decode(&a.owner, &a.data).unwrap();
    let blind =
        node::market::escrow_trade::seller_blinding(&seller.x25519_secret(), &at, &e.buyer_x25519)
            .unwrap();
    let s = escrow::math::client::reveal(k, &blind);
    let seller_pk = seller.solana_keypair().pubkey();
    rt.block_on(chain.send(
        &[escrow::reveal(account, buyer, &seller_pk, &s)],
        &[&seller.solana_keypair()],
    ))
    .unwrap();
}
