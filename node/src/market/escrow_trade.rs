//! Sealed-escrow settlement, the trade side: the transactions `marketplace
//! list --escrow`, `buy` of an escrow listing, `refund`, `dispute` and
//! `cancel` send, and the seller's `reveal`/`decline`/`claim`, each built
//! only after the program's accounts (as the chain holds them) agree with
//! the signed manifest and, for a buy, with the blob on Arweave. The plans
//! are pure, so the same functions run against the program in
//! `solana-program-test`; the async wrappers read the accounts over RPC.
//!
//! Never moves money on a mismatch: a listing whose on-chain terms differ
//! from its signed manifest (seller, bundle hash, price, expiry, key
//! commitment, blob root, length, seller key), whose blob does not hash to
//! its root, or whose key commitment is not a prime-order point is
//! refused with the field that differs.

use crate::chain::instructions::{discovery, memo, DEFAULT_CU_LIMIT};
use crate::chain::token::{create_associated_account, read_held_mint, MintRefusal, TokenMint};
use crate::chain::{Chain, ChainError, Pubkey};
use crate::escrow::{
    self, AccountError, EscrowAccount, EscrowStatus, ListingAccount, ListingStatus,
    SettingsAccount, Terms,
};
use crate::market::manifest::{EscrowCommitments, Listing};
use crate::market::MemoOp;
use escrow_math::blob::{Blob, BlobError};
use escrow_math::client::{blind_scalar, is_prime_order, point_of, x25519_shared, ClientError};
use solana_sdk::instruction::{AccountMeta, Instruction};
use zeroize::Zeroizing;

/// Why an escrow action is refused before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscrowPlanError {
    /// The manifest names a program this client does not know.
    #[error("listing settles through escrow program {0}, not {prog}; refusing to deposit into an unknown program", prog = escrow::PROGRAM_ID)]
    UnknownProgram(String),
    /// The listing settles by direct payment.
    #[error("listing {0} settles by direct payment, not escrow; buy it without --escrow")]
    NotEscrow(String),
    /// The program is not deployed on this cluster.
    #[error("escrow program {prog} is not deployed on this cluster (the localnet deploys it: ./localnet/up); list or buy without --escrow", prog = escrow::PROGRAM_ID)]
    NotDeployed,
    /// The program's settings were never initialized.
    #[error("escrow program has no settings on this cluster (its upgrade authority runs `brainctl escrow configure` first)")]
    NoSettings,
    /// An account did not decode.
    #[error(transparent)]
    Account(#[from] AccountError),
    /// No escrow listing account for this listing.
    #[error("no escrow listing account for {0} on chain; the seller did not list it through the program")]
    NoListingAccount(String),
    /// On-chain terms differ from the signed manifest.
    #[error("escrow listing `{field}` on chain is {chain}, the signed manifest says {manifest}; refusing")]
    Mismatch {
        /// Field.
        field: &'static str,
        /// On chain.
        chain: String,
        /// In the manifest.
        manifest: String,
    },
    /// Retired or expired.
    #[error("escrow listing {0} takes no deposits: {1}")]
    Closed(String, &'static str),
    /// A stake under the program's floor.
    #[error("--stake-lamports {stake} is under the program's minimum stake of {min}")]
    StakeTooLow {
        /// Asked.
        stake: u64,
        /// Minimum.
        min: u64,
    },
    /// A cap on open escrows of zero.
    #[error("--max-open-escrows must be at least 1")]
    ZeroMaxOpen,
    /// The listing takes no deposit now: as many escrows open as its
    /// seller allows, or no unreserved stake left for another's share.
    #[error("escrow listing {listing_id} takes no deposit now: {why}; try again when one of its escrows settles")]
    Busy {
        /// Listing id.
        listing_id: String,
        /// Which limit.
        why: &'static str,
    },
    /// The listing's stake fell under the floor (slashed): no deposits.
    #[error("escrow listing {listing_id} holds a stake of {stake}, under the program's floor of {min}: it takes no deposits")]
    StakeBelowFloor {
        /// Listing id.
        listing_id: String,
        /// Held.
        stake: u64,
        /// Floor.
        min: u64,
    },
    /// Nothing to refund.
    #[error("no escrow of this wallet on listing {0}")]
    NoEscrow(String),
    /// Revealed: the buyer has the key; nothing to refund (dispute if it lies).
    #[error("the seller revealed the key for this escrow; open it with `brainctl marketplace buy` again, or prove a misdelivery with `brainctl marketplace dispute` before unix time {closes_at}")]
    Revealed {
        /// End of the dispute window.
        closes_at: i64,
    },
    /// Refund asked before the release window ends.
    #[error("the seller may still reveal until unix time {opens_at}; refund after that")]
    WindowOpen {
        /// First second a refund is allowed.
        opens_at: i64,
    },
    /// Bad manifest values.
    #[error("manifest: {0}")]
    Manifest(String),
    /// The buyer already has an escrow on this listing.
    #[error("this wallet already deposited into listing {listing_id} (escrow {escrow}, {status:?}); one deposit per buyer and listing at a time")]
    AlreadyDeposited {
        /// Listing id.
        listing_id: String,
        /// The escrow account.
        escrow: String,
        /// Its status.
        status: EscrowStatus,
    },
    /// Retire of a listing that still holds deposits.
    #[error("escrow listing {listing_id} still holds {open_escrows} deposit(s) on chain; keep `brainctl marketplace listen` running until each is revealed and claimed, declined or refunded, then cancel again")]
    StillHeld {
        /// Listing id.
        listing_id: String,
        /// Deposits not yet settled.
        open_escrows: u32,
    },
    /// The blob on Arweave is not an escrow blob or not the committed one.
    #[error("the listing's blob: {0}")]
    Blob(#[from] BlobError),
    /// The blob hashes to another root than the listing commits to.
    #[error("the blob on Arweave hashes to root {blob}, the listing commits to {chain}: not the committed ciphertext; refusing to pay")]
    BlobRoot {
        /// Committed.
        chain: String,
        /// Recomputed.
        blob: String,
    },
    /// The manifest promises a blob format whose proofs the blob on
    /// Arweave does not commit (a v1 blob under a v2 promise, a v2 one
    /// under v3): the protection it names is not there.
    #[error("the manifest's escrow_terms.blob_format promises format {promised} and the blob on Arweave is format {found}: what the promised format proves (2: the bundle hash, 3: and the memory count) could not be proven; refusing to pay")]
    BlobFormat {
        /// `escrow_terms.blob_format`.
        promised: u8,
        /// The blob's.
        found: u8,
    },
    /// A v3 blob states another memory count than the manifest's preview.
    #[error("the manifest's preview.memories_count is {manifest} and the blob on Arweave states {blob} memories (the count the program holds its plaintext to): the listing misstates what it sells; refusing to pay")]
    MemoryCount {
        /// `preview.memories_count`.
        manifest: u64,
        /// The blob's public tally.
        blob: u16,
    },
    /// A v3 blob (or a manifest promising one) whose manifest states no
    /// memory count as an integer: the count the proofs hold the blob to
    /// could not be compared with what the listing shows.
    #[error("the manifest's preview.memories_count is missing or not an integer, and its escrow blob (format 3) states {blob:?} memories: what the listing shows could not be checked against what the program proves; refusing to pay")]
    MemoryCountUnstated {
        /// The blob's public tally (`None`: the blob is older).
        blob: Option<u16>,
    },
    /// The key commitment is not a prime-order point.
    #[error("the listing's key commitment is not a prime-order point: no reveal could ever open it; refusing to pay")]
    BadKeyPoint,
    /// A key the client cannot use.
    #[error(transparent)]
    Key(#[from] ClientError),
    /// The revealed key opened a chunk to something other than its
    /// commitment: provable.
    #[error("chunk {index} of the blob does not open, under the key the seller revealed, to what the seller committed (its plaintext hash, its SHA-256 states, the bundle_hash it promised): prove it with `brainctl marketplace dispute <manifest>` inside the dispute window (your deposit comes back with a share of the seller's stake)")]
    Misdelivery {
        /// The first lying chunk.
        index: u32,
    },
    /// The revealed key opened a chunk to something other than its
    /// commitment, and the buyer's client proved it on chain itself.
    #[error("chunk {index} of the blob does not open, under the key the seller revealed, to what the seller committed (its plaintext hash, its SHA-256 states, the bundle_hash it promised): the fraud proof was sent and held ({signature}); your deposit is back with a share of the seller's stake, and the listing is convicted")]
    Disputed {
        /// The lying chunk.
        index: u32,
        /// The dispute transaction.
        signature: String,
    },
    /// The simulated deposit takes more than the quote (and the spend
    /// ledger's reservation).
    #[error("the deposit would take {simulated} lamports from this wallet, more than the {quoted} quoted and reserved; refusing")]
    CostsMore {
        /// Quoted (price + rent + network fee).
        quoted: u64,
        /// What the simulation took.
        simulated: u64,
    },
    /// A dispute outside the window, or of an escrow not revealed.
    #[error("nothing to dispute on this escrow: {0}")]
    NotDisputable(String),
    /// No misdelivery to prove.
    #[error("every chunk of the blob opens to its commitment under the revealed key: there is no misdelivery to prove")]
    NothingToDispute,
    /// The program's settings do not protect a buyer on this cluster: a
    /// dispute window too short for a client that is offline a while to
    /// prove a lie, or no slash share to pay a missed reveal.
    #[error("the escrow program's settings on this cluster do not protect a buyer: {0}; refusing to pay")]
    Unprotected(String),
    /// The blob cannot prove on chain what its manifest promises (a v1
    /// blob: the bundle hash; a v2 blob under a stated memory count: the
    /// count): a seller could be paid for another plaintext.
    #[error("the listing's escrow blob is format {format}: {gap}, so its seller could be paid for a plaintext other than the one the listing promises and no fraud proof would convict it; refusing to pay. `brainctl marketplace show` and `quote` say what each listing proves; a person who accepts that risk buys with `--allow-unproven-blob` (a spend policy never allows it)")]
    Unproven {
        /// The blob's format (1 or 2).
        format: u8,
        /// What it cannot prove.
        gap: &'static str,
    },
}

fn hash_bytes(hex_hash: &str) -> Result<[u8; 32], EscrowPlanError> {
    hex::decode(hex_hash)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| EscrowPlanError::Manifest("bundle_hash is not 32 bytes of hex".into()))
}

/// The terms a manifest signs for its escrow listing.
pub fn manifest_terms(listing: &Listing) -> Result<Terms, EscrowPlanError> {
    let c: EscrowCommitments = listing.escrow_terms.ok_or_else(|| {
        EscrowPlanError::Manifest(
            "an escrow listing without `escrow_terms` (listed by an older brainctl, for a program that is gone)".into(),
        )
    })?;
    let price_lamports = listing.price_units().filter(|p| *p > 0).ok_or_else(|| {
        EscrowPlanError::Manifest(
            "an escrow listing needs a price above 0 (lamports, or its token's base units)".into(),
        )
    })?;
    Ok(Terms {
        price_lamports,
        key_point: c.key_point,
        blob_root: c.blob_root,
        plain_len: c.plain_len,
        bundle_hash: hash_bytes(&listing.bundle_hash)?,
        seller_x25519: c.seller_x25519,
        expires_at: listing.expires_at,
    })
}

/// The mint an escrow listing's deposits are in, as its manifest signs it
/// (`settlement`); `None`: lamports.
pub fn manifest_mint(listing: &Listing) -> Option<Pubkey> {
    listing
        .settlement
        .as_ref()
        .map(|t| Pubkey::new_from_array(t.mint))
}

/// The slash share each deposit reserves from its listing's stake (the
/// program's `deposit_share`): the settings' share of the stake floor.
pub fn deposit_share(settings: &SettingsAccount) -> u64 {
    escrow_math::slash_share(settings.min_stake, settings.slash_bps)
}

/// The `list_sealed` (or `list_sealed_token`, for a listing in a token) a
/// seller sends with the `list` memo, at most `max_open` escrows open at
/// once.
pub fn list_instruction(
    seller: &Pubkey,
    listing: &Listing,
    (stake, max_open): (u64, u32),
    settings: &SettingsAccount,
) -> Result<Instruction, EscrowPlanError> {
    if max_open == 0 {
        return Err(EscrowPlanError::ZeroMaxOpen);
    }
    if stake < settings.min_stake {
        return Err(EscrowPlanError::StakeTooLow {
            stake,
            min: settings.min_stake,
        });
    }
    let terms = manifest_terms(listing)?;
    let id = &listing.listing_id;
    Ok(match &listing.settlement {
        None => escrow::list_sealed(seller, id, &terms, stake, max_open),
        Some(t) => {
            let mint = TokenMint {
                address: Pubkey::new_from_array(t.mint),
                program: Pubkey::new_from_array(t.token_program),
                decimals: t.decimals,
            };
            let treasury = &settings.treasury;
            escrow::list_sealed_token(seller, id, &terms, stake, max_open, &mint, treasury)
        }
    })
}

fn mismatch(field: &'static str, chain: impl ToString, manifest: impl ToString) -> EscrowPlanError {
    EscrowPlanError::Mismatch {
        field,
        chain: chain.to_string(),
        manifest: manifest.to_string(),
    }
}

/// Checks the on-chain listing account against the signed manifest: every
/// committed field, the status, expiry and the stake floor.
pub fn check_listing(
    listing: &Listing,
    onchain: &ListingAccount,
    settings: &SettingsAccount,
    now: i64,
) -> Result<(), EscrowPlanError> {
    match listing.escrow_program.as_deref() {
        None => return Err(EscrowPlanError::NotEscrow(listing.listing_id.clone())),
        Some(p) if p != escrow::PROGRAM_ID => {
            return Err(EscrowPlanError::UnknownProgram(p.into()))
        }
        Some(_) => {}
    }
    let want = manifest_terms(listing)?;
    if onchain.seller.to_string() != listing.seller_pubkey {
        return Err(mismatch("seller", onchain.seller, &listing.seller_pubkey));
    }
    if onchain.listing_id != listing.listing_id {
        return Err(mismatch(
            "listing_id",
            &onchain.listing_id,
            &listing.listing_id,
        ));
    }
    let currency = |m: Option<Pubkey>| m.map_or_else(|| "lamports".into(), |m| m.to_string());
    if onchain.mint != manifest_mint(listing) {
        return Err(mismatch(
            "mint",
            currency(onchain.mint),
            currency(manifest_mint(listing)),
        ));
    }
    let (got, hex32) = (&onchain.terms, hex::encode::<&[u8; 32]>);
    let fields: [(&'static str, String, String); 7] = [
        (
            "price_lamports",
            got.price_lamports.to_string(),
            want.price_lamports.to_string(),
        ),
        (
            "bundle_hash",
            hex32(&got.bundle_hash),
            hex32(&want.bundle_hash),
        ),
        (
            "expires_at",
            got.expires_at.to_string(),
            want.expires_at.to_string(),
        ),
        ("key_point", hex32(&got.key_point), hex32(&want.key_point)),
        ("blob_root", hex32(&got.blob_root), hex32(&want.blob_root)),
        (
            "plain_len",
            got.plain_len.to_string(),
            want.plain_len.to_string(),
        ),
        (
            "seller_x25519",
            hex32(&got.seller_x25519),
            hex32(&want.seller_x25519),
        ),
    ];
    if let Some((field, chain, manifest)) = fields.into_iter().find(|(_, c, m)| c != m) {
        return Err(mismatch(field, chain, manifest));
    }
    match onchain.status {
        ListingStatus::Live => {}
        ListingStatus::Retired => {
            return Err(EscrowPlanError::Closed(
                listing.listing_id.clone(),
                "retired",
            ))
        }
        ListingStatus::Convicted => {
            return Err(EscrowPlanError::Closed(
                listing.listing_id.clone(),
                "convicted of fraud by a buyer's proof",
            ))
        }
    }
    if now >= got.expires_at {
        return Err(EscrowPlanError::Closed(
            listing.listing_id.clone(),
            "expired",
        ));
    }
    if onchain.stake < settings.min_stake {
        return Err(EscrowPlanError::StakeBelowFloor {
            listing_id: listing.listing_id.clone(),
            stake: onchain.stake,
            min: settings.min_stake,
        });
    }
    // what the program checks at the deposit, before anything is paid
    let busy = |why| EscrowPlanError::Busy {
        listing_id: listing.listing_id.clone(),
        why,
    };
    if onchain.open_escrows >= onchain.max_open {
        return Err(busy("as many escrows open as its seller allows"));
    }
    let share = deposit_share(settings);
    if onchain.stake.saturating_sub(onchain.reserved) < share {
        return Err(busy(
            "its unreserved stake cannot cover another deposit's slash share",
        ));
    }
    if !is_prime_order(&got.key_point) {
        return Err(EscrowPlanError::BadKeyPoint);
    }
    Ok(())
}

/// What a listing's signed manifest promises about its escrow blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobPromise {
    /// The format `escrow_terms.blob_format` names: the blob must commit
    /// at least what it proves.
    pub format: escrow_math::blob::Format,
    /// `preview.memories_count`, when the manifest states one.
    pub memories: Option<u64>,
}

impl BlobPromise {
    /// What `listing`'s manifest promises.
    pub fn of(listing: &Listing) -> BlobPromise {
        BlobPromise {
            format: listing
                .escrow_terms
                .map_or(escrow_math::blob::Format::V1, |t| t.blob_format),
            memories: listing
                .raw
                .get("preview")
                .and_then(|p| p.get("memories_count"))
                .and_then(serde_json::Value::as_u64),
        }
    }
}

/// Whether a buy pays for an escrow blob that cannot prove on chain what
/// its manifest promises ([`BlobProof::gap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unproven {
    /// Refused before paying ([`EscrowPlanError::Unproven`]): what every
    /// client does unless a person names the risk.
    #[default]
    Refuse,
    /// Paid anyway (`buy --allow-unproven-blob`; never under a spend
    /// policy, never through MCP or `/settle`).
    Allow,
}

/// What an escrow blob lets the program prove about what its manifest
/// promises: a plaintext other than the bundle `bundle_hash` names (v2 and
/// v3 blobs), and one holding another memory count than the preview
/// states (v3 blobs). What `quote` shows and the buy judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct BlobProof {
    /// The blob's format (1, 2 or 3), read from the blob itself.
    pub blob_format: u8,
    /// A plaintext other than the bundle `bundle_hash` names is fraud the
    /// program convicts.
    pub proves_bundle_hash: bool,
    /// A plaintext holding another memory count than the preview states
    /// is fraud the program convicts (`None`: the manifest states none).
    pub proves_memory_count: Option<bool>,
}

impl BlobProof {
    /// What `blob` proves of `promise`.
    pub fn of(promise: &BlobPromise, blob: &Blob<'_>) -> BlobProof {
        BlobProof {
            blob_format: blob.format.number(),
            proves_bundle_hash: blob.format.has_midstates(),
            proves_memory_count: promise
                .memories
                .map(|_| blob.format == escrow_math::blob::Format::V3),
        }
    }

    /// What the blob cannot prove of the promise, if anything.
    pub fn gap(&self) -> Option<&'static str> {
        if !self.proves_bundle_hash {
            return Some("it commits no SHA-256 states, so nothing proves its plaintext is the bundle the manifest's bundle_hash names");
        }
        if self.proves_memory_count == Some(false) {
            return Some("it commits no memory tallies, so nothing proves its plaintext holds the memory count the preview states");
        }
        None
    }

    /// Refuses (unless `unproven` allows it) a blob that cannot prove
    /// what its manifest promises.
    pub fn judge(&self, unproven: Unproven) -> Result<(), EscrowPlanError> {
        match (self.gap(), unproven) {
            (Some(gap), Unproven::Refuse) => Err(EscrowPlanError::Unproven {
                format: self.blob_format,
                gap,
            }),
            _ => Ok(()),
        }
    }
}

/// Checks `blob` as [`check_blob`] does and judges what it proves
/// ([`BlobProof::judge`]): what every buyer runs before paying an escrow
/// listing (`buy`, MCP, the indexer's `/settle`).
pub fn check_blob_before_paying(
    terms: &Terms,
    promise: &BlobPromise,
    blob: &[u8],
    unproven: Unproven,
) -> Result<BlobProof, EscrowPlanError> {
    check_blob(terms, promise, blob)?;
    let proof = BlobProof::of(promise, &Blob::parse(blob)?);
    proof.judge(unproven)?;
    Ok(proof)
}

/// Checks the blob on Arweave is the committed ciphertext: an escrow blob
/// of the committed length hashing to the committed root, committing at
/// least what the manifest's `blob_format` promises (a newer format under
/// an older promise is fine: more than promised), and, when it is v3,
/// stating the memory count the manifest's preview does.
pub fn check_blob(
    terms: &Terms,
    promise: &BlobPromise,
    blob: &[u8],
) -> Result<(), EscrowPlanError> {
    let parsed = Blob::parse(blob)?;
    if parsed.format.number() < promise.format.number() {
        return Err(EscrowPlanError::BlobFormat {
            promised: promise.format.number(),
            found: parsed.format.number(),
        });
    }
    if parsed.plain_len != terms.plain_len {
        return Err(mismatch("plain_len", terms.plain_len, parsed.plain_len));
    }
    let root = parsed.root();
    if root != terms.blob_root {
        return Err(EscrowPlanError::BlobRoot {
            chain: hex::encode(terms.blob_root),
            blob: hex::encode(root),
        });
    }
    // the count the proofs hold a v3 blob to must be the one shown
    let stated = parsed.stated_memories();
    match (promise.memories, stated) {
        (Some(manifest), Some(blob)) if manifest != u64::from(blob) => {
            Err(EscrowPlanError::MemoryCount { manifest, blob })
        }
        (None, Some(_)) => Err(EscrowPlanError::MemoryCountUnstated { blob: stated }),
        (None, None) if promise.format == escrow_math::blob::Format::V3 => {
            Err(EscrowPlanError::MemoryCountUnstated { blob: None })
        }
        _ => Ok(()),
    }
}

/// The blinding scalar b of `buyer`'s escrow on `listing_account`, from
/// the buyer's X25519 secret and the seller's committed X25519 key.
pub fn buyer_blinding(
    buyer_x25519_secret: &[u8; 32],
    seller_x25519: &[u8; 32],
    listing_account: &Pubkey,
    buyer: &Pubkey,
) -> Result<Zeroizing<[u8; 32]>, EscrowPlanError> {
    let shared = x25519_shared(buyer_x25519_secret, seller_x25519)?;
    let at = escrow::escrow_address(listing_account, buyer);
    Ok(blind_scalar(&shared, &at.to_bytes()))
}

/// The same b as the seller derives it, from its X25519 secret and the
/// escrow's recorded buyer key.
pub fn seller_blinding(
    seller_x25519_secret: &[u8; 32],
    escrow_account: &Pubkey,
    buyer_x25519: &[u8; 32],
) -> Result<Zeroizing<[u8; 32]>, EscrowPlanError> {
    let shared = x25519_shared(seller_x25519_secret, buyer_x25519)?;
    Ok(blind_scalar(&shared, &escrow_account.to_bytes()))
}

/// An escrow buy, signed by the buyer alone: the discovery reference (with
/// the payment address read-only, so the seller's `listen` sees the buy in
/// that address's history), the `deposit_sealed` of the committed terms
/// binding `blind_point` (`deposit_sealed_token` from the buyer's account
/// of `token`, the listing's mint, for a listing in a token), and
/// `buy:<listing>:<buyer x25519>`.
pub fn buy_instructions(
    buyer: &Pubkey,
    buyer_x25519: &[u8; 32],
    blind_point: &[u8; 32],
    listing: &Listing,
    onchain: &ListingAccount,
    registry: &Pubkey,
    token: Option<&TokenMint>,
) -> Result<Vec<Instruction>, EscrowPlanError> {
    let pay_to: Pubkey = listing
        .payment_address
        .parse()
        .map_err(|_| EscrowPlanError::Manifest("bad payment_address".into()))?;
    let mut reference = discovery(registry, DEFAULT_CU_LIMIT);
    reference
        .accounts
        .push(AccountMeta::new_readonly(pay_to, false));
    let account = escrow::listing_address(&onchain.seller, &listing.listing_id);
    let op = MemoOp::Buy {
        listing_id: listing.listing_id.clone(),
        buyer_x25519: bs58::encode(buyer_x25519).into_string(),
    };
    let (terms, x25519) = (&onchain.terms, buyer_x25519);
    let deposit = match token {
        None => escrow::deposit(&account, buyer, terms, blind_point, x25519),
        Some(mint) => escrow::deposit_token(&account, buyer, terms, blind_point, x25519, mint),
    };
    Ok(vec![reference, deposit, memo(&op.to_string(), buyer)])
}

/// The program's listing account of `listing` and its decoded state,
/// checked against the manifest, with the settings.
pub async fn checked_listing(
    chain: &Chain,
    listing: &Listing,
    now: i64,
) -> Result<(Pubkey, ListingAccount, SettingsAccount), EscrowReadError> {
    let seller: Pubkey = listing
        .seller_pubkey
        .parse()
        .map_err(|_| EscrowPlanError::Manifest("bad seller_pubkey".into()))?;
    let settings = read_settings(chain).await?;
    let account = escrow::listing_address(&seller, &listing.listing_id);
    let onchain = read_account(chain, &account, ListingAccount::decode)
        .await?
        .ok_or_else(|| EscrowPlanError::NoListingAccount(listing.listing_id.clone()))?;
    check_listing(listing, &onchain, &settings, now)?;
    Protection::of(&settings).judge(chain.cluster_kind().await?)?;
    Ok((account, onchain, settings))
}

/// The shortest dispute window a buyer pays into off a local cluster: a
/// buyer whose client is offline a few hours still proves a lie when it
/// comes back (the program's own floor outside its `localnet` build).
pub const BUYER_MIN_DISPUTE_WINDOW_SECS: i64 = 6 * 3_600;

/// What the program's settings guarantee a buyer, as `quote` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Protection {
    /// Seconds the seller has to reveal or decline.
    pub release_window_secs: i64,
    /// Seconds after a reveal in which a lie is proven.
    pub dispute_window_secs: i64,
    /// What a missed reveal or a proven lie pays the buyer from the
    /// seller's stake (lamports).
    pub slash_share_lamports: u64,
}

impl Protection {
    /// What `settings` guarantee.
    pub fn of(settings: &SettingsAccount) -> Protection {
        Protection {
            release_window_secs: settings.release_window_secs,
            dispute_window_secs: settings.dispute_window_secs,
            slash_share_lamports: deposit_share(settings),
        }
    }

    /// Refuses, on any cluster but a local one (`kind`, by genesis hash),
    /// a dispute window under [`BUYER_MIN_DISPUTE_WINDOW_SECS`] (a program
    /// built with its `localnet` feature looks like any other) or a zero
    /// slash share.
    pub fn judge(&self, kind: crate::chain::cluster::ClusterKind) -> Result<(), EscrowPlanError> {
        if kind == crate::chain::cluster::ClusterKind::Local {
            return Ok(());
        }
        if self.dispute_window_secs < BUYER_MIN_DISPUTE_WINDOW_SECS {
            return Err(EscrowPlanError::Unprotected(format!(
                "its dispute window is {} s, under the {BUYER_MIN_DISPUTE_WINDOW_SECS} s (6 h) a buyer's client needs to prove a lie after being offline (a program built for a localnet?)",
                self.dispute_window_secs
            )));
        }
        if self.slash_share_lamports == 0 {
            return Err(EscrowPlanError::Unprotected(
                "its slash share is 0 lamports: a missed reveal or a proven lie costs the seller nothing".into(),
            ));
        }
        Ok(())
    }
}

/// The mint a deposit into an escrow listing in a token pays in, as the
/// chain has it (`None`: lamports): refused as a direct buy refuses a
/// mint (transfer fees, hooks, frozen accounts) and as the program would
/// refuse the deposit (a permanent delegate, a pause, confidential
/// transfers: [`crate::chain::token::escrow_mint_refusal`]), before
/// paying, and held to the program and decimals the signed manifest states.
pub async fn escrow_mint(
    chain: &Chain,
    onchain: &ListingAccount,
    listing: &Listing,
) -> Result<Option<TokenMint>, EscrowReadError> {
    let Some(address) = onchain.mint else {
        return Ok(None);
    };
    let mint = match crate::chain::token::read_escrow_mint(chain, &address).await {
        Ok(mint) => mint,
        Err(MintRefusal::Chain(e)) => return Err(e.into()),
        Err(refusal) => return Err(EscrowReadError::Mint(refusal)),
    };
    if let Some((field, listed, onchain)) = listing.token().and_then(|t| t.differs_from(&mint)) {
        return Err(mismatch(field, onchain, listed).into());
    }
    Ok(Some(mint))
}

/// The mint an escrow's vault holds, as the chain has it (`None`:
/// lamports), whatever its extensions: what a claim, a refund or a
/// dispute moves (tokens already held; the program took the mint when the
/// listing opened).
pub async fn vault_mint(
    chain: &Chain,
    onchain: &ListingAccount,
) -> Result<Option<TokenMint>, EscrowReadError> {
    let Some(address) = onchain.mint else {
        return Ok(None);
    };
    match read_held_mint(chain, &address).await {
        Ok(mint) => Ok(Some(mint)),
        Err(MintRefusal::Chain(e)) => Err(e.into()),
        Err(refusal) => Err(EscrowReadError::Mint(refusal)),
    }
}

/// [`vault_mint`] for `buyer`'s refund on the listing at `account`: a mint
/// closed since (its supply reached zero, so the vault is empty: a claimed
/// escrow's) is named by the token program that owns the vault, its
/// decimals unread (closing an empty vault states none), so a closed mint
/// never keeps an escrow's rent.
pub async fn exit_mint(
    chain: &Chain,
    account: &Pubkey,
    onchain: &ListingAccount,
    buyer: &Pubkey,
) -> Result<Option<TokenMint>, EscrowReadError> {
    let missing = match vault_mint(chain, onchain).await {
        Err(EscrowReadError::Mint(MintRefusal::Missing(address))) => address,
        other => return other,
    };
    let escrow_at = escrow::escrow_address(account, buyer);
    for program in [
        crate::chain::token::TOKEN_PROGRAM_ID,
        spl_token_2022_interface::ID,
    ] {
        let mint = TokenMint {
            address: missing,
            program,
            decimals: 0,
        };
        if crate::chain::token::has_associated(chain, &escrow_at, &mint).await? {
            return Ok(Some(mint));
        }
    }
    Err(EscrowReadError::Mint(MintRefusal::Missing(missing)))
}

/// The claim of `buyer`'s revealed escrow on `seller`'s listing
/// `account`: the program's `claim`, or in a token (`token`) the seller's
/// associated account of the mint (created if missing, paid by `payer`)
/// and `claim_token` into it.
pub fn claim_instructions(
    payer: &Pubkey,
    account: &Pubkey,
    buyer: &Pubkey,
    seller: &Pubkey,
    treasury: &Pubkey,
    token: Option<&TokenMint>,
) -> Vec<Instruction> {
    match token {
        None => vec![escrow::claim(account, buyer, seller, treasury)],
        Some(mint) => vec![
            create_associated_account(payer, seller, mint),
            escrow::claim_token(account, buyer, seller, treasury, mint),
        ],
    }
}

/// `buyer`'s `dispute` (or step or link form) with `proof`, or on a
/// listing in a token (`in_token`) `dispute_token`, which convicts without
/// moving a token: the deposit is withdrawn after it with
/// [`refund_instructions`] (the escrow is then expired).
pub fn dispute_instruction(
    buyer: &Pubkey,
    account: &Pubkey,
    proof: &escrow::FraudProof,
    in_token: bool,
) -> Instruction {
    if in_token {
        escrow::dispute_token(account, buyer, proof)
    } else {
        escrow::dispute(account, buyer, proof)
    }
}

/// A deposit planned by [`deposit_plan`].
#[derive(Debug, Clone)]
pub struct DepositPlan {
    /// What the buyer signs and sends.
    pub instructions: Vec<Instruction>,
    /// The mint it pays in, as the chain has it (`None`: lamports).
    pub token: Option<TokenMint>,
}

/// The deposit `buyer` would send for `listing` now, from the accounts as
/// the chain holds them: the listing account must match the signed
/// manifest and take deposits, and the buyer must not hold an escrow on it.
/// The caller derived `blind_point` (B = b·G) and checked the blob. What
/// `marketplace buy` sends and the indexer's `/settle` returns.
pub async fn deposit_plan(
    chain: &Chain,
    buyer: &Pubkey,
    buyer_x25519: &[u8; 32],
    blind_point: &[u8; 32],
    listing: &Listing,
    registry: &Pubkey,
    now: i64,
) -> Result<DepositPlan, EscrowReadError> {
    let (account, onchain, _) = checked_listing(chain, listing, now).await?;
    let at = escrow::escrow_address(&account, buyer);
    if let Some(e) = read_account(chain, &at, EscrowAccount::decode).await? {
        return Err(EscrowPlanError::AlreadyDeposited {
            listing_id: listing.listing_id.clone(),
            escrow: at.to_string(),
            status: e.status,
        }
        .into());
    }
    let token = escrow_mint(chain, &onchain, listing).await?;
    let instructions = buy_instructions(
        buyer,
        buyer_x25519,
        blind_point,
        listing,
        &onchain,
        registry,
        token.as_ref(),
    )?;
    Ok(DepositPlan {
        instructions,
        token,
    })
}

/// The point B a buyer binds, from its X25519 secret.
pub fn blind_point_for(
    buyer_x25519_secret: &[u8; 32],
    onchain: &ListingAccount,
    listing_account: &Pubkey,
    buyer: &Pubkey,
) -> Result<[u8; 32], EscrowPlanError> {
    let b = buyer_blinding(
        buyer_x25519_secret,
        &onchain.terms.seller_x25519,
        listing_account,
        buyer,
    )?;
    Ok(point_of(&b))
}

/// The buyer's `refund_sealed`: a declined deposit (all of it), one never
/// revealed inside the window or revealed on a listing since convicted of
/// fraud (all of it and the stake share), or a claimed escrow's rent. In
/// a token (`token`, the listing's mint), `refund_sealed_token` into the
/// buyer's associated account, created first if it was closed since.
#[allow(clippy::too_many_arguments)]
pub fn refund_instructions(
    buyer: &Pubkey,
    listing_account: &Pubkey,
    listing_id: &str,
    escrow_state: Option<&EscrowAccount>,
    listing_status: Option<ListingStatus>,
    settings: &SettingsAccount,
    now: i64,
    token: Option<&TokenMint>,
) -> Result<Vec<Instruction>, EscrowPlanError> {
    let e = escrow_state
        .filter(|e| e.buyer == *buyer && e.listing == *listing_account)
        .ok_or_else(|| EscrowPlanError::NoEscrow(listing_id.into()))?;
    match e.status {
        EscrowStatus::Declined | EscrowStatus::Claimed | EscrowStatus::Expired => {}
        EscrowStatus::Revealed if listing_status == Some(ListingStatus::Convicted) => {}
        EscrowStatus::Revealed => {
            return Err(EscrowPlanError::Revealed {
                closes_at: settings.dispute_closes(e.revealed_at),
            })
        }
        EscrowStatus::Deposited => {
            let opens_at = settings.answer_deadline(e.deposited_at);
            if now < opens_at {
                return Err(EscrowPlanError::WindowOpen { opens_at });
            }
        }
    }
    Ok(match token {
        None => vec![escrow::refund(listing_account, buyer)],
        // a claimed escrow's vault is empty: nothing reaches the buyer's
        // account (and its mint may be closed: nothing could create one)
        Some(mint) if e.status == EscrowStatus::Claimed => {
            vec![escrow::refund_token(listing_account, buyer, mint)]
        }
        Some(mint) => vec![
            create_associated_account(buyer, buyer, mint),
            escrow::refund_token(listing_account, buyer, mint),
        ],
    })
}

/// What cancelling an escrow listing sends beside the `cancel` memo: the
/// program's `retire_sealed` (what stake is left back to the seller) while
/// it is live or convicted; nothing once retired (or never created). Refused while the program
/// holds deposits: the program would refuse it too.
pub fn cancel_instructions(
    seller: &Pubkey,
    listing_id: &str,
    onchain: Option<&ListingAccount>,
) -> Result<Vec<Instruction>, EscrowPlanError> {
    let Some(l) = onchain.filter(|l| l.status != ListingStatus::Retired) else {
        return Ok(vec![]);
    };
    if l.seller != *seller {
        return Err(mismatch("seller", l.seller, seller));
    }
    if l.open_escrows > 0 {
        return Err(EscrowPlanError::StillHeld {
            listing_id: listing_id.into(),
            open_escrows: l.open_escrows,
        });
    }
    Ok(vec![escrow::retire(seller, listing_id)])
}

/// The fraud proof for the first chunk (or link) of `blob` that `k` does
/// not open to its commitments, `bundle_hash` the listing's: a v1 blob's
/// lying chunk, a v2 blob's lying step or link.
pub fn fraud_proof(
    blob: &[u8],
    k: &[u8; 32],
    bundle_hash: &[u8; 32],
) -> Result<escrow::FraudProof, EscrowPlanError> {
    use escrow_math::blob::Format;
    let parsed = Blob::parse(blob)?;
    match (parsed.open(k, bundle_hash), parsed.format) {
        (Ok(_), _) => Err(EscrowPlanError::NothingToDispute),
        (Err(BlobError::Misdelivery { index }), Format::V1) => {
            let (cipher, plain_hash, path) = parsed.proof_parts(index);
            Ok(escrow::FraudProof::Chunk {
                k: *k,
                index,
                cipher: cipher.to_vec(),
                plain_hash,
                path,
            })
        }
        (Err(BlobError::Misdelivery { index }), Format::V2 | Format::V3) => {
            let p = parsed.step_parts(index);
            Ok(escrow::FraudProof::Step {
                k: *k,
                index,
                cipher: p.cipher.to_vec(),
                plain_hash: p.plain_hash,
                states: (p.before, p.after),
                path: p.path,
                tallies: p.tallies,
            })
        }
        (Err(BlobError::BrokenLink { index }), _) => {
            let (left, right, path, next) = parsed.link_parts(index);
            Ok(escrow::FraudProof::Link {
                k: *k,
                index,
                leaves: [left, right],
                path,
                next,
            })
        }
        (Err(e), _) => Err(e.into()),
    }
}

/// Reads and decodes one of the program's accounts (`None`: no account).
pub async fn read_account<T>(
    chain: &Chain,
    address: &Pubkey,
    decode: fn(&Pubkey, &[u8]) -> Result<T, AccountError>,
) -> Result<Option<T>, EscrowReadError> {
    let got = crate::chain::retry::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(address, chain.commitment())
    })
    .await?;
    match got.value {
        None => Ok(None),
        Some(a) => Ok(Some(decode(&a.owner, &a.data)?)),
    }
}

/// Whether the escrow program is deployed on `chain`'s cluster.
pub async fn program_deployed(chain: &Chain) -> Result<bool, crate::chain::ChainError> {
    let id = escrow::program_id();
    let program = crate::chain::retry::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(&id, chain.commitment())
    })
    .await?;
    Ok(program.value.is_some_and(|a| a.executable))
}

/// The settings, after checking the program is deployed.
pub async fn read_settings(chain: &Chain) -> Result<SettingsAccount, EscrowReadError> {
    if !program_deployed(chain).await? {
        return Err(EscrowPlanError::NotDeployed.into());
    }
    read_account(chain, &escrow::settings_address(), SettingsAccount::decode)
        .await?
        .ok_or(EscrowPlanError::NoSettings.into())
}

/// Reading escrow accounts.
#[derive(Debug, thiserror::Error)]
pub enum EscrowReadError {
    /// Chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Plan.
    #[error(transparent)]
    Plan(#[from] EscrowPlanError),
    /// The listing's mint cannot settle (transfer fee, hook, frozen accounts).
    #[error("escrow listing's mint: {0}")]
    Mint(MintRefusal),
}

impl From<AccountError> for EscrowReadError {
    fn from(e: AccountError) -> Self {
        EscrowReadError::Plan(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::manifest::{build_listing, NewListing};
    use crate::wallet::Wallet;

    const NOW: i64 = 1_795_000_000;

    fn settings() -> SettingsAccount {
        SettingsAccount {
            admin: Pubkey::new_unique(),
            treasury: Pubkey::new_unique(),
            fee_bps: 0,
            slash_bps: 1,
            release_window_secs: 60,
            dispute_window_secs: 60,
            min_stake: 10,
        }
    }

    fn manifest(seller: &Wallet, price: u64) -> (Listing, Vec<u8>) {
        let plain = b"{\"memories\":[]}".to_vec();
        let k = escrow_math::client::listing_scalar(&[1; 32], &[2; 32]);
        let sealed = escrow_math::blob::seal(&k, &plain).unwrap();
        let v = build_listing(
            seller,
            &NewListing {
                listing_id: "20261123-0123456789ab",
                bundle_hash: &hex::encode(escrow_math::sha256(&[&plain])),
                payment_address: None,
                price_usd: 1.0,
                price_lamports: price,
                duration_hours: 1.0,
                visibility: "auction",
                encrypted_bundle_uri: "ar://b",
                metadata_uri: "ar://m",
                preview: serde_json::json!({"memories_count": 0}),
                now: NOW,
                escrow_program: Some(escrow::PROGRAM_ID),
                escrow_terms: Some(EscrowCommitments {
                    key_point: point_of(&k),
                    blob_root: sealed.root,
                    plain_len: sealed.plain_len,
                    seller_x25519: seller.x25519_public(),
                    blob_format: escrow_math::blob::Format::V3,
                }),
                settlement: None,
                usd_at_settle: None,
            },
        )
        .unwrap();
        (Listing::from_value(v).unwrap(), sealed.bytes)
    }

    fn onchain(seller: &Wallet, l: &Listing) -> ListingAccount {
        ListingAccount {
            seller: seller.address().parse().unwrap(),
            listing_id: l.listing_id.clone(),
            terms: manifest_terms(l).unwrap(),
            stake: 10,
            status: ListingStatus::Live,
            open_escrows: 0,
            mint: None,
            reserved: 0,
            max_open: u32::MAX,
        }
    }

    #[test]
    fn every_on_chain_field_that_differs_from_the_manifest_is_named() {
        let seller = Wallet::generate();
        let (l, _) = manifest(&seller, 5_000);
        let good = onchain(&seller, &l);
        let s = settings();
        assert_eq!(check_listing(&l, &good, &s, NOW), Ok(()));
        let field = |e: Result<(), EscrowPlanError>| match e {
            Err(EscrowPlanError::Mismatch { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        type Edit = (&'static str, fn(&mut ListingAccount));
        let edits: [Edit; 9] = [
            ("seller", |a| a.seller = Pubkey::new_unique()),
            ("listing_id", |a| {
                a.listing_id = "20261123-ffffffffffff".into()
            }),
            ("price_lamports", |a| a.terms.price_lamports *= 4),
            ("bundle_hash", |a| a.terms.bundle_hash[0] ^= 1),
            ("expires_at", |a| a.terms.expires_at += 1),
            ("key_point", |a| a.terms.key_point = point_of(&[3; 32])),
            ("blob_root", |a| a.terms.blob_root[0] ^= 1),
            ("plain_len", |a| a.terms.plain_len += 1),
            ("seller_x25519", |a| a.terms.seller_x25519[0] ^= 1),
        ];
        for (name, edit) in edits {
            let mut a = good.clone();
            edit(&mut a);
            assert_eq!(field(check_listing(&l, &a, &s, NOW)), name);
        }
        let mut a = good.clone();
        a.status = ListingStatus::Retired;
        assert_eq!(
            check_listing(&l, &a, &s, NOW),
            Err(EscrowPlanError::Closed(l.listing_id.clone(), "retired"))
        );
        let mut a = good.clone();
        a.stake = 9;
        assert!(matches!(
            check_listing(&l, &a, &s, NOW),
            Err(EscrowPlanError::StakeBelowFloor { .. })
        ));
        // the seller's cap reached, or no unreserved stake for a share
        let mut a = good.clone();
        a.max_open = a.open_escrows;
        assert!(matches!(
            check_listing(&l, &a, &s, NOW),
            Err(EscrowPlanError::Busy { .. })
        ));
        let s = SettingsAccount {
            slash_bps: 5_000,
            ..s.clone()
        };
        assert_eq!(deposit_share(&s), 5);
        let mut a = good.clone();
        a.reserved = a.stake - deposit_share(&s) + 1;
        assert!(matches!(
            check_listing(&l, &a, &s, NOW),
            Err(EscrowPlanError::Busy { .. })
        ));
        a.reserved -= 1;
        assert!(check_listing(&l, &a, &s, NOW).is_ok());
    }

    #[test]
    fn the_blob_must_be_the_committed_ciphertext() {
        use escrow_math::blob::Format;
        let seller = Wallet::generate();
        let (l, blob) = manifest(&seller, 5_000);
        let terms = manifest_terms(&l).unwrap();
        let promise = BlobPromise::of(&l);
        assert_eq!(promise.format, Format::V3);
        assert_eq!(check_blob(&terms, &promise, &blob), Ok(()));
        let mut other = blob.clone();
        let last = other.len() - 1;
        other[last] ^= 1;
        assert!(matches!(
            check_blob(&terms, &promise, &other),
            Err(EscrowPlanError::BlobRoot { .. })
        ));
        assert!(matches!(
            check_blob(&terms, &promise, b"not a blob"),
            Err(EscrowPlanError::Blob(_))
        ));
        // an older blob under a manifest promising a newer format is
        // refused; under an older manifest it is what was promised
        let plain = vec![7u8; 700];
        for (old, found) in [
            (escrow_math::blob::seal_v1(&[3; 32], &plain).unwrap(), 1),
            (escrow_math::blob::seal_v2(&[3; 32], &plain).unwrap(), 2),
        ] {
            let old_terms = Terms {
                blob_root: old.root,
                plain_len: old.plain_len,
                ..terms
            };
            assert_eq!(
                check_blob(&old_terms, &promise, &old.bytes),
                Err(EscrowPlanError::BlobFormat { promised: 3, found })
            );
            let older = BlobPromise {
                format: Format::V1,
                memories: Some(9),
            };
            assert_eq!(check_blob(&old_terms, &older, &old.bytes), Ok(()));
        }
        // a v3 blob stating another memory count than the preview's
        let more = BlobPromise {
            memories: promise.memories.map(|n| n + 1),
            ..promise
        };
        assert!(matches!(
            check_blob(&terms, &more, &blob),
            Err(EscrowPlanError::MemoryCount { .. })
        ));
        // a count that is no integer (500.0, "500") or none at all
        let unstated = BlobPromise {
            memories: None,
            ..promise
        };
        assert_eq!(
            check_blob(&terms, &unstated, &blob),
            Err(EscrowPlanError::MemoryCountUnstated { blob: Some(0) })
        );
        let mut raw = (*l.raw).clone();
        raw["preview"]["memories_count"] = serde_json::json!(0.0);
        let float = Listing {
            raw: std::sync::Arc::new(raw),
            ..l.clone()
        };
        assert_eq!(BlobPromise::of(&float).memories, None);
    }

    /// Off a local cluster, a short dispute window or a zero
    /// share is refused before paying; a local cluster takes both.
    #[test]
    fn settings_that_do_not_protect_a_buyer_are_refused_off_a_localnet() {
        use crate::chain::cluster::ClusterKind;
        let good = Protection {
            release_window_secs: 3_600,
            dispute_window_secs: BUYER_MIN_DISPUTE_WINDOW_SECS,
            slash_share_lamports: 1,
        };
        for kind in [
            ClusterKind::MainnetBeta,
            ClusterKind::Devnet,
            ClusterKind::Testnet,
        ] {
            assert_eq!(good.judge(kind), Ok(()));
            let short = Protection {
                dispute_window_secs: 10,
                ..good
            };
            assert!(
                matches!(short.judge(kind), Err(EscrowPlanError::Unprotected(w)) if w.contains("10 s"))
            );
            let free = Protection {
                slash_share_lamports: 0,
                ..good
            };
            assert!(
                matches!(free.judge(kind), Err(EscrowPlanError::Unprotected(w)) if w.contains("slash share is 0"))
            );
            assert_eq!(
                Protection {
                    dispute_window_secs: 10,
                    slash_share_lamports: 0,
                    ..good
                }
                .judge(ClusterKind::Local),
                Ok(())
            );
        }
        let settings = SettingsAccount {
            min_stake: 1,
            slash_bps: 1,
            ..settings()
        };
        assert_eq!(Protection::of(&settings).slash_share_lamports, 0);
    }

    /// A blob that cannot prove what its manifest promises
    /// (v1: the bundle hash; v2 under a stated count: the count) is
    /// refused before paying unless the buyer names the risk; one that
    /// proves more than promised is paid.
    #[test]
    fn a_blob_that_cannot_prove_the_promise_is_refused_before_paying() {
        use escrow_math::blob::Format;
        let seller = Wallet::generate();
        let (l, blob) = manifest(&seller, 5_000);
        let terms = manifest_terms(&l).unwrap();
        let promise = BlobPromise::of(&l);
        let proof = check_blob_before_paying(&terms, &promise, &blob, Unproven::Refuse).unwrap();
        assert_eq!(
            proof,
            BlobProof {
                blob_format: 3,
                proves_bundle_hash: true,
                proves_memory_count: Some(true)
            }
        );
        let plain = vec![7u8; 700];
        let v1 = escrow_math::blob::seal_v1(&[3; 32], &plain).unwrap();
        let v2 = escrow_math::blob::seal_v2(&[3; 32], &plain).unwrap();
        // what a downgrading seller's manifest says: no blob_format (v1)
        for (old, memories, format, gap) in [
            (&v1, Some(9), 1, "SHA-256 states"),
            (&v1, None, 1, "SHA-256 states"),
            (&v2, Some(9), 2, "memory tallies"),
        ] {
            let old_terms = Terms {
                blob_root: old.root,
                plain_len: old.plain_len,
                ..terms
            };
            let older = BlobPromise {
                format: Format::V1,
                memories,
            };
            let refused =
                check_blob_before_paying(&old_terms, &older, &old.bytes, Unproven::Refuse)
                    .unwrap_err();
            match &refused {
                EscrowPlanError::Unproven { format: f, gap: g } => {
                    assert_eq!(*f, format);
                    assert!(g.contains(gap), "{g}");
                }
                other => panic!("not refused as unproven: {other}"),
            }
            assert!(refused.to_string().contains("--allow-unproven-blob"));
            let allowed =
                check_blob_before_paying(&old_terms, &older, &old.bytes, Unproven::Allow).unwrap();
            assert_eq!(allowed.blob_format, format);
            assert!(allowed.gap().is_some());
            // the commitment checks run whatever is allowed
            let mut other = old.bytes.clone();
            let last = other.len() - 1;
            other[last] ^= 1;
            assert!(matches!(
                check_blob_before_paying(&old_terms, &older, &other, Unproven::Allow),
                Err(EscrowPlanError::BlobRoot { .. })
            ));
        }
        // a v2 blob where the manifest states no count proves all it promises
        let v2_terms = Terms {
            blob_root: v2.root,
            plain_len: v2.plain_len,
            ..terms
        };
        let no_count = BlobPromise {
            format: Format::V2,
            memories: None,
        };
        let proof =
            check_blob_before_paying(&v2_terms, &no_count, &v2.bytes, Unproven::Refuse).unwrap();
        assert_eq!(
            (proof.proves_bundle_hash, proof.proves_memory_count),
            (true, None)
        );
    }

    #[test]
    fn both_sides_derive_one_blinding() {
        let (seller, buyer) = (Wallet::generate(), Wallet::generate());
        let listing = Pubkey::new_unique();
        let me: Pubkey = buyer.address().parse().unwrap();
        let b = buyer_blinding(
            &buyer.x25519_secret(),
            &seller.x25519_public(),
            &listing,
            &me,
        )
        .unwrap();
        let at = escrow::escrow_address(&listing, &me);
        let s = seller_blinding(&seller.x25519_secret(), &at, &buyer.x25519_public()).unwrap();
        assert_eq!(*b, *s);
        assert_eq!(
            buyer_blinding(&buyer.x25519_secret(), &[0; 32], &listing, &me).unwrap_err(),
            EscrowPlanError::Key(ClientError::LowOrderKey)
        );
    }

    #[test]
    fn a_free_escrow_listing_is_refused_before_anything_is_sent() {
        let seller = Wallet::generate();
        let me: Pubkey = seller.address().parse().unwrap();
        assert!(matches!(
            list_instruction(&me, &manifest(&seller, 0).0, (10, u32::MAX), &settings()),
            Err(EscrowPlanError::Manifest(_))
        ));
        assert!(matches!(
            list_instruction(&me, &manifest(&seller, 1).0, (9, u32::MAX), &settings()),
            Err(EscrowPlanError::StakeTooLow { .. })
        ));
        assert!(
            list_instruction(&me, &manifest(&seller, 1).0, (10, u32::MAX), &settings()).is_ok()
        );
        assert!(matches!(
            list_instruction(&me, &manifest(&seller, 1).0, (10, 0), &settings()),
            Err(EscrowPlanError::ZeroMaxOpen)
        ));
    }
}
