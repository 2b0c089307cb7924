//! Escrow settlement, the trade side: the transactions `marketplace list
//! --escrow`, `buy` of an escrow listing and `refund` send, each built only
//! after the program's accounts (as the chain holds them) agree with the
//! signed manifest. The plans are pure, so the same functions run against
//! the program in `solana-program-test`; the async wrappers read the
//! accounts over RPC and send.
//!
//! Never moves money on a mismatch: a listing whose on-chain terms differ
//! from its signed manifest (seller, bundle hash, price, expiry) or that
//! names another program is refused with the field that differs.

use crate::chain::instructions::{discovery, memo, DEFAULT_CU_LIMIT};
use crate::chain::{Chain, ChainError, Pubkey};
use crate::escrow::{
    self, AccountError, ConfigAccount, EscrowAccount, EscrowListing, EscrowStatus, ListingAccount,
    ListingStatus,
};
use crate::market::manifest::Listing;
use crate::market::MemoOp;
use solana_sdk::instruction::{AccountMeta, Instruction};

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
    #[error("escrow program {prog} is not deployed on this cluster (needs an SBF build and `anchor deploy`); list or buy without --escrow", prog = escrow::PROGRAM_ID)]
    NotDeployed,
    /// The program's config was never initialized.
    #[error(
        "escrow program has no config on this cluster (its admin must run initialize_config first)"
    )]
    NoConfig,
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
    /// Cancelled or expired.
    #[error("escrow listing {0} takes no deposits: {1}")]
    Closed(String, &'static str),
    /// A stake under the program's minimum.
    #[error("--stake-lamports {stake} is under the program's minimum stake of {min}")]
    StakeTooLow {
        /// Asked.
        stake: u64,
        /// Minimum.
        min: u64,
    },
    /// Nothing to refund.
    #[error("no escrow of this wallet on listing {0}")]
    NoEscrow(String),
    /// Already settled.
    #[error("the escrow is already {0:?}; nothing to refund")]
    Settled(EscrowStatus),
    /// Refund asked before the release window ends.
    #[error("the seller may still release until unix time {opens_at}; refund after that")]
    WindowOpen {
        /// First second a refund is allowed.
        opens_at: i64,
    },
    /// Bad manifest values.
    #[error("manifest: {0}")]
    Manifest(String),
    /// The buyer already has an escrow on this listing (one per buyer and
    /// listing, ever: the program would refuse a second deposit).
    #[error("this wallet already deposited into listing {listing_id} (escrow {escrow}, {status:?}); one deposit per buyer and listing")]
    AlreadyDeposited {
        /// Listing id.
        listing_id: String,
        /// The escrow account.
        escrow: String,
        /// Its status.
        status: EscrowStatus,
    },
    /// Cancel of an escrow listing that still holds deposits or owes slashes.
    #[error("escrow listing {listing_id} still holds {open_escrows} deposit(s) and owes {unslashed_refunds} slash(es) on chain; keep `brainctl marketplace listen` running so every deposit is released (refunded buyers slash with `brainctl marketplace refund`), then cancel again")]
    StillHeld {
        /// Listing id.
        listing_id: String,
        /// Deposits neither released nor refunded.
        open_escrows: u32,
        /// Refunds not yet slashed.
        unslashed_refunds: u32,
    },
}

fn hash_bytes(hex_hash: &str) -> Result<[u8; 32], EscrowPlanError> {
    hex::decode(hex_hash)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| EscrowPlanError::Manifest("bundle_hash is not 32 bytes of hex".into()))
}

/// The `create_listing` a seller sends with the `list` memo.
pub fn list_instruction(
    seller: &Pubkey,
    listing: &Listing,
    stake: u64,
    config: &ConfigAccount,
) -> Result<Instruction, EscrowPlanError> {
    if stake < config.min_stake {
        return Err(EscrowPlanError::StakeTooLow {
            stake,
            min: config.min_stake,
        });
    }
    let price_lamports = listing.price_lamports.filter(|p| *p > 0).ok_or_else(|| {
        EscrowPlanError::Manifest("an escrow listing needs a price above 0 lamports".into())
    })?;
    Ok(escrow::create_listing(
        seller,
        &EscrowListing {
            listing_id: &listing.listing_id,
            bundle_hash: hash_bytes(&listing.bundle_hash)?,
            price_lamports,
            stake,
            expires_at: listing.expires_at,
        },
    ))
}

fn mismatch(field: &'static str, chain: impl ToString, manifest: impl ToString) -> EscrowPlanError {
    EscrowPlanError::Mismatch {
        field,
        chain: chain.to_string(),
        manifest: manifest.to_string(),
    }
}

/// Checks the on-chain listing account against the signed manifest.
pub fn check_listing(
    listing: &Listing,
    onchain: &ListingAccount,
    now: i64,
) -> Result<(), EscrowPlanError> {
    match listing.escrow_program.as_deref() {
        None => return Err(EscrowPlanError::NotEscrow(listing.listing_id.clone())),
        Some(p) if p != escrow::PROGRAM_ID => {
            return Err(EscrowPlanError::UnknownProgram(p.into()))
        }
        Some(_) => {}
    }
    let price = listing
        .price_lamports
        .ok_or_else(|| EscrowPlanError::Manifest("no price_lamports".into()))?;
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
    if hex::encode(onchain.bundle_hash) != listing.bundle_hash {
        return Err(mismatch(
            "bundle_hash",
            hex::encode(onchain.bundle_hash),
            &listing.bundle_hash,
        ));
    }
    if onchain.price_lamports != price {
        return Err(mismatch("price_lamports", onchain.price_lamports, price));
    }
    if onchain.expires_at != listing.expires_at {
        return Err(mismatch(
            "expires_at",
            onchain.expires_at,
            listing.expires_at,
        ));
    }
    if onchain.status == ListingStatus::Cancelled {
        return Err(EscrowPlanError::Closed(
            listing.listing_id.clone(),
            "cancelled",
        ));
    }
    if now >= onchain.expires_at {
        return Err(EscrowPlanError::Closed(
            listing.listing_id.clone(),
            "expired",
        ));
    }
    Ok(())
}

/// An escrow buy, signed by the buyer alone: the discovery reference (with
/// the payment address read-only, so the seller's `listen` sees the buy in
/// that address's history), the `deposit` of the listed price, and
/// `buy:<listing>:<buyer x25519>`.
pub fn buy_instructions(
    buyer: &Pubkey,
    buyer_x25519: &[u8; 32],
    listing: &Listing,
    onchain: &ListingAccount,
    registry: &Pubkey,
    now: i64,
) -> Result<Vec<Instruction>, EscrowPlanError> {
    check_listing(listing, onchain, now)?;
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
    Ok(vec![
        reference,
        escrow::deposit(&account, buyer, buyer_x25519),
        memo(&op.to_string(), buyer),
    ])
}

/// The deposit `buyer` would send for `listing` now, from the accounts as
/// the chain holds them: the listing account must match the signed
/// manifest and take deposits, and the buyer must not hold an escrow on it
/// yet. What `marketplace buy` sends and the indexer's `/settle` returns.
pub async fn deposit_plan(
    chain: &Chain,
    buyer: &Pubkey,
    buyer_x25519: &[u8; 32],
    listing: &Listing,
    registry: &Pubkey,
    now: i64,
) -> Result<Vec<Instruction>, EscrowReadError> {
    let seller: Pubkey = listing
        .seller_pubkey
        .parse()
        .map_err(|_| EscrowPlanError::Manifest("bad seller_pubkey".into()))?;
    let account = escrow::listing_address(&seller, &listing.listing_id);
    let onchain = read_account(chain, &account, ListingAccount::decode)
        .await?
        .ok_or_else(|| EscrowPlanError::NoListingAccount(listing.listing_id.clone()))?;
    let at = escrow::escrow_address(&account, buyer);
    if let Some(e) = read_account(chain, &at, EscrowAccount::decode).await? {
        return Err(EscrowPlanError::AlreadyDeposited {
            listing_id: listing.listing_id.clone(),
            escrow: at.to_string(),
            status: e.status,
        }
        .into());
    }
    Ok(buy_instructions(
        buyer,
        buyer_x25519,
        listing,
        &onchain,
        registry,
        now,
    )?)
}

/// The buyer's way out when no release came: `refund` after the window,
/// then `slash` (the buyer asks) for the configured share of the stake.
pub fn refund_instructions(
    buyer: &Pubkey,
    listing_account: &Pubkey,
    listing_id: &str,
    escrow_state: Option<&EscrowAccount>,
    config: &ConfigAccount,
    now: i64,
) -> Result<Vec<Instruction>, EscrowPlanError> {
    let e = escrow_state
        .filter(|e| e.buyer == *buyer && e.listing == *listing_account)
        .ok_or_else(|| EscrowPlanError::NoEscrow(listing_id.into()))?;
    if e.status != EscrowStatus::Deposited {
        return Err(EscrowPlanError::Settled(e.status));
    }
    let opens_at = e.deposited_at.saturating_add(config.release_window_secs);
    if now < opens_at {
        return Err(EscrowPlanError::WindowOpen { opens_at });
    }
    Ok(vec![
        escrow::refund(listing_account, buyer),
        escrow::slash(listing_account, buyer, buyer),
    ])
}

/// What cancelling an escrow listing sends beside the `cancel` memo:
/// the program's `cancel_listing` (stake and rent back to the seller)
/// while its account is open; nothing once it is closed (or was never
/// created). Refused while the program holds deposits or owes slashes:
/// the program would refuse it too, and those buyers must be served first.
pub fn cancel_instructions(
    seller: &Pubkey,
    listing_id: &str,
    onchain: Option<&ListingAccount>,
) -> Result<Vec<Instruction>, EscrowPlanError> {
    let Some(l) = onchain else {
        return Ok(vec![]);
    };
    if l.seller != *seller {
        return Err(mismatch("seller", l.seller, seller));
    }
    if l.open_escrows > 0 || l.unslashed_refunds > 0 {
        return Err(EscrowPlanError::StillHeld {
            listing_id: listing_id.into(),
            open_escrows: l.open_escrows,
            unslashed_refunds: l.unslashed_refunds,
        });
    }
    Ok(vec![escrow::cancel_listing(seller, listing_id)])
}

/// The seller's `release` of `buyer`'s escrow, appended to the release
/// transaction (same transaction as the token and the `release` memo).
pub fn release_instruction(
    seller: &Pubkey,
    listing_id: &str,
    buyer: &Pubkey,
    treasury: &Pubkey,
    envelope_id: &str,
    bundle_hash_hex: &str,
) -> Result<Instruction, EscrowPlanError> {
    Ok(escrow::release(
        &escrow::listing_address(seller, listing_id),
        buyer,
        seller,
        treasury,
        envelope_id,
        &hash_bytes(bundle_hash_hex)?,
    ))
}

/// Reads and decodes one of the program's accounts (`None`: no account).
pub async fn read_account<T>(
    chain: &Chain,
    address: &Pubkey,
    decode: fn(&Pubkey, &[u8]) -> Result<T, AccountError>,
) -> Result<Option<T>, EscrowReadError> {
    let got = crate::chain::client::with_retry("getAccountInfo", || {
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

/// The config, after checking the program is deployed.
pub async fn read_config(chain: &Chain) -> Result<ConfigAccount, EscrowReadError> {
    let id = escrow::program_id();
    let program = crate::chain::client::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(&id, chain.commitment())
    })
    .await?;
    if !program.value.is_some_and(|a| a.executable) {
        return Err(EscrowPlanError::NotDeployed.into());
    }
    read_account(chain, &escrow::config_address(), ConfigAccount::decode)
        .await?
        .ok_or(EscrowPlanError::NoConfig.into())
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

    const HASH: &str = "8e1f1b2b4a3c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";
    const NOW: i64 = 1_795_000_000;

    fn manifest(seller: &Wallet, price: u64) -> Listing {
        let v = build_listing(
            seller,
            &NewListing {
                listing_id: "20261123-0123456789ab",
                bundle_hash: HASH,
                payment_address: None,
                price_usd: 1.0,
                price_lamports: price,
                duration_hours: 1.0,
                visibility: "auction",
                encrypted_bundle_uri: "ar://b",
                metadata_uri: "ar://m",
                preview: serde_json::json!({}),
                now: NOW,
                escrow_program: Some(escrow::PROGRAM_ID),
            },
        )
        .unwrap();
        Listing::from_value(v).unwrap()
    }

    fn onchain(seller: &Wallet, l: &Listing) -> ListingAccount {
        ListingAccount {
            seller: seller.address().parse().unwrap(),
            listing_id: l.listing_id.clone(),
            bundle_hash: hash_bytes(HASH).unwrap(),
            price_lamports: l.price_lamports.unwrap(),
            stake: 0,
            expires_at: l.expires_at,
            status: ListingStatus::Live,
            open_escrows: 0,
            unslashed_refunds: 0,
        }
    }

    #[test]
    fn every_on_chain_field_that_differs_from_the_manifest_is_named() {
        let seller = Wallet::generate();
        let l = manifest(&seller, 5_000);
        let good = onchain(&seller, &l);
        assert_eq!(check_listing(&l, &good, NOW), Ok(()));
        let field = |e: Result<(), EscrowPlanError>| match e {
            Err(EscrowPlanError::Mismatch { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let mut a = good.clone();
        a.seller = Wallet::generate().address().parse().unwrap();
        assert_eq!(field(check_listing(&l, &a, NOW)), "seller");
        let mut a = good.clone();
        a.bundle_hash[0] ^= 1;
        assert_eq!(field(check_listing(&l, &a, NOW)), "bundle_hash");
        let mut a = good.clone();
        a.price_lamports += 1;
        assert_eq!(field(check_listing(&l, &a, NOW)), "price_lamports");
        let mut a = good.clone();
        a.expires_at += 1;
        assert_eq!(field(check_listing(&l, &a, NOW)), "expires_at");
        let mut a = good.clone();
        a.listing_id = "20261123-ffffffffffff".into();
        assert_eq!(field(check_listing(&l, &a, NOW)), "listing_id");
        let mut a = good.clone();
        a.status = ListingStatus::Cancelled;
        assert_eq!(
            check_listing(&l, &a, NOW),
            Err(EscrowPlanError::Closed(l.listing_id.clone(), "cancelled"))
        );
    }

    #[test]
    fn a_free_escrow_listing_is_refused_before_anything_is_sent() {
        let seller = Wallet::generate();
        let config = ConfigAccount {
            admin: Pubkey::new_unique(),
            treasury: Pubkey::new_unique(),
            fee_bps: 0,
            slash_bps: 0,
            release_window_secs: 1,
            min_stake: 0,
        };
        let me: Pubkey = seller.address().parse().unwrap();
        assert!(matches!(
            list_instruction(&me, &manifest(&seller, 0), 0, &config),
            Err(EscrowPlanError::Manifest(_))
        ));
        assert!(list_instruction(&me, &manifest(&seller, 1), 0, &config).is_ok());
    }
}
