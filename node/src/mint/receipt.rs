//! What a release gives the buyer beside the key: the receipt, in one of
//! three modes the seller picks (`listen --receipt`), and what each costs.
//!
//! - [`ReceiptMode::Listing`] (default): one Light compressed mint per
//!   listing (Token-2022, its metadata the listing's `ar://` URI, its mint
//!   authority kept by the seller), made by `list` before the listing is
//!   posted (or by its first release, for a listing made without it);
//!   each release mints one compressed unit of it to the buyer. A release
//!   costs its signature and Light's fees for one output.
//! - [`ReceiptMode::PerBuy`]: a fresh mint per buy, supply 1, authority
//!   revoked (what the reference does; about 5.8M lamports of rent each).
//! - [`ReceiptMode::None`]: no token; the seller-signed `release` memo is
//!   the record. Its `minted_token_address` is [`NO_RECEIPT`].
//!
//! Exactly once: a per-buy release is refused on chain when repeated (its
//! derived mint exists). The other two are not, so their releases are
//! kept durably before they are sent (`listen::journal`) and, after a
//! crash, finished from what was kept ([`crate::chain::Chain::finish_recorded`])
//! before anything is signed anew.
//!
//! It never sends a release itself: `release` does.

use crate::chain::{Chain, ChainError, Pubkey, Signer};
use crate::mint::bundle_mint::TokenStandard;
use crate::mint::token2022::NftSpec;
use crate::wallet::Wallet;

/// The `minted_token_address` of a release with no receipt: the System
/// Program's id, which no mint can have.
pub const NO_RECEIPT: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");

/// Light's fees for one compressed output of a release, at most: the
/// network fee (5,000 lamports a transaction) and the output tree's
/// rollover share (a few lamports on the trees in use; 1 on the localnet's).
pub const LIGHT_OUTPUT_FEES: u64 = 5_300;

/// Which receipt the seller's releases carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReceiptMode {
    /// One mint per listing; a compressed unit of it per release.
    #[default]
    Listing,
    /// A fresh mint per buy (of the daemon's token standard).
    PerBuy,
    /// No token: the release memo alone.
    None,
}

impl ReceiptMode {
    /// The name used in flags and output.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptMode::Listing => "listing",
            ReceiptMode::PerBuy => "per-buy",
            ReceiptMode::None => "none",
        }
    }
}

/// The receipt of one buy's release, as recorded with its envelope (the
/// envelope names its address, so a release after a restart keeps it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receipt {
    /// A fresh mint for this buy: its address, seed and standard.
    PerBuy {
        /// The mint.
        mint: Pubkey,
        /// Its seed (secret-derived).
        seed: String,
        /// Light or Token-2022.
        standard: TokenStandard,
    },
    /// A unit of the listing's mint.
    Listing {
        /// The listing's mint.
        mint: Pubkey,
    },
    /// None.
    None,
}

/// How a [`Receipt`] is recorded (the buy row's `token_standard`).
pub const LISTING_KIND: &str = "light-listing";
/// How [`Receipt::None`] is recorded.
pub const NONE_KIND: &str = "none";

impl Receipt {
    /// The address the `release` memo and the envelope name.
    pub fn address(&self) -> Pubkey {
        match self {
            Receipt::PerBuy { mint, .. } | Receipt::Listing { mint } => *mint,
            Receipt::None => NO_RECEIPT,
        }
    }

    /// How it is recorded: `light` | `token2022` (per buy),
    /// `light-listing`, `none`.
    pub fn kind(&self) -> &'static str {
        match self {
            Receipt::PerBuy { standard, .. } => standard.as_str(),
            Receipt::Listing { .. } => LISTING_KIND,
            Receipt::None => NONE_KIND,
        }
    }

    /// Whether a repeat of this release would land (no derived account
    /// refuses it), so it must be kept before it is sent.
    pub fn needs_journal(&self) -> bool {
        !matches!(self, Receipt::PerBuy { .. })
    }
}

/// The seed of `listing_id`'s receipt mint (its key derives from the
/// seller's secret and this, as every mint of ours).
pub fn listing_seed(listing_id: &str) -> String {
    crate::mint::token2022::seed_from(
        format!("brainctl/listing-receipt/v1:{listing_id}").as_bytes(),
    )
}

/// The receipt mint of `listing_id` for `seller`.
pub fn listing_mint(seller: &Wallet, listing_id: &str) -> Pubkey {
    crate::mint::light::mint_keypair(seller, &listing_seed(listing_id)).pubkey()
}

/// Whether `mint` is an open receipt mint of `seller`'s: a Token-2022
/// mint of 0 decimals whose mint authority is the seller (lamports parked
/// at the address by a stranger are not).
async fn is_open_mint(chain: &Chain, mint: &Pubkey, seller: &Pubkey) -> Result<bool, ChainError> {
    Ok(crate::mint::token2022::mint_base(chain, mint)
        .await?
        .is_some_and(|m| {
            m.decimals == 0 && Option::<Pubkey>::from(m.mint_authority) == Some(*seller)
        }))
}

/// Makes sure `listing_id`'s receipt mint exists (created with `spec`,
/// its pool beside it, if it does not). Two releases creating it at once
/// are fine: the second is refused and finds it made.
pub async fn ensure_listing_mint(
    chain: &Chain,
    seller: &Wallet,
    listing_id: &str,
    spec: &NftSpec,
) -> Result<Pubkey, ChainError> {
    // once seen made, a mint stays made: releases after the first read nothing
    static MADE: std::sync::Mutex<Vec<Pubkey>> = std::sync::Mutex::new(Vec::new());
    let made = |mint: Pubkey| {
        let mut m = MADE.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= 4_096 {
            m.clear();
        }
        m.push(mint);
        mint
    };
    let me = seller.solana_keypair().pubkey();
    let mint = listing_mint(seller, listing_id);
    if MADE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&mint)
    {
        return Ok(mint);
    }
    if is_open_mint(chain, &mint, &me).await? {
        return Ok(made(mint));
    }
    match crate::mint::light::create_open_mint(chain, seller, &listing_seed(listing_id), spec).await
    {
        Ok(sent) => {
            tracing::info!(listing = listing_id, %mint, signature = %sent.signature, "created the listing's receipt mint");
            Ok(made(mint))
        }
        Err(_) if is_open_mint(chain, &mint, &me).await? => Ok(made(mint)),
        Err(e) => Err(e),
    }
}

/// What one release costs the seller in `mode` (lamports): for a mint per
/// buy, [`crate::mint::release_cost`]; for a listing's mint, the release's
/// signature and Light's output fees (the mint's rent is paid once per
/// listing, at its first release); with no receipt, the signature. The
/// What listing costs its seller beyond the memo for receipts of `mode`:
/// the listing's own mint (its rent and fees, made once by `list`) for
/// [`ReceiptMode::Listing`], nothing otherwise (an escrow listing's
/// receipts are a mint per buy, made by `listen`). The spend policy
/// reserves it with the listing.
pub async fn listing_setup_cost(
    chain: &Chain,
    mode: ReceiptMode,
    escrow: bool,
) -> Result<u64, ChainError> {
    if escrow || mode != ReceiptMode::Listing {
        return Ok(0);
    }
    crate::mint::release_cost(chain, TokenStandard::LightCompressed).await
}

/// protocol's mint fee is added where due.
pub async fn release_cost(
    chain: &Chain,
    mode: ReceiptMode,
    standard: TokenStandard,
) -> Result<u64, ChainError> {
    let signature = crate::chain::fees::LAMPORTS_PER_SIGNATURE;
    let base = match mode {
        ReceiptMode::PerBuy => return crate::mint::release_cost(chain, standard).await,
        ReceiptMode::Listing => signature + LIGHT_OUTPUT_FEES,
        ReceiptMode::None => signature,
    };
    let fees = crate::chain::FeePolicy::from_env(chain.cluster_kind().await?)?;
    Ok(base + if fees.enabled { fees.mint_fee } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_mints_are_per_listing_secret_derived_and_no_receipt_is_no_mint() {
        let (a, b) = (Wallet::generate(), Wallet::generate());
        let id = "20261128-0123456789ab";
        assert_eq!(listing_mint(&a, id), listing_mint(&a, id));
        assert_ne!(listing_mint(&a, id), listing_mint(&b, id));
        assert_ne!(
            listing_mint(&a, id),
            listing_mint(&a, "20261128-0123456789ac")
        );
        assert_eq!(
            Receipt::None.address().to_string(),
            "11111111111111111111111111111111"
        );
        assert!(Receipt::None.needs_journal());
        let m = listing_mint(&a, id);
        assert!(Receipt::Listing { mint: m }.needs_journal());
        assert_eq!(Receipt::Listing { mint: m }.kind(), LISTING_KIND);
    }
}
