//! Releasing a verified buy, exactly once (DESIGN.md §Settlement):
//! 1. `verified`: the mint address is derived from the seller and the buy
//!    signature; the signed envelope (sealed key, naming that mint) is
//!    uploaded and recorded → `envelope_uploaded`;
//! 2. `envelope_uploaded`: ONE transaction creates the mint, mints 1 to the
//!    buyer, revokes the authority and posts `release:<listing>:<envelope>:<mint>`
//!    → `released`. If that mint already exists the release landed before a
//!    crash: it is recorded, never sent again; a re-sent release fails on
//!    chain because the mint account exists.

use super::state::{ListenDb, StateError, Step};
use crate::arweave::Uploader;
use crate::chain::instructions::{discovery, memo, registry_from_env, DEFAULT_CU_LIMIT};
use crate::chain::{Chain, ChainError, Pubkey, Signature, Signer};
use crate::market::envelope::seal_envelope;
use crate::market::MemoOp;
use crate::mint::bundle_mint::TokenStandard;
use crate::mint::token2022::{mint_address, mint_nft, seed_from, NftSpec};
use crate::wallet::Wallet;
use std::str::FromStr;

/// Release errors.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// State machine.
    #[error(transparent)]
    State(#[from] StateError),
    /// Chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Upload.
    #[error(transparent)]
    Storage(#[from] crate::arweave::StorageError),
    /// Envelope.
    #[error(transparent)]
    Envelope(#[from] crate::market::envelope::EnvelopeError),
    /// The buy's X25519 key is not 32 bytes of base58.
    #[error("buy {0} carries an invalid X25519 key")]
    BadBuyerKey(String),
    /// The escrow program refused or could not be read.
    #[error("escrow release: {0}")]
    Escrow(#[from] crate::market::escrow_trade::EscrowReadError),
}

/// The escrow `release` for `row` (its envelope, the listing's bundle
/// hash; the fee to the program's treasury), after checking the escrow is
/// still deposited: a refunded one can never be released.
async fn escrow_release(
    chain: &Chain,
    seller: &Wallet,
    row: &super::state::BuyRow,
    buyer: &Pubkey,
    goods: &Goods<'_>,
) -> Result<solana_sdk::instruction::Instruction, ReleaseError> {
    use crate::escrow::{escrow_address, listing_address, EscrowAccount, EscrowStatus};
    use crate::market::escrow_trade::{
        read_account, read_config, release_instruction, EscrowPlanError,
    };
    let me = seller.solana_keypair().pubkey();
    let config = read_config(chain).await?;
    let at = escrow_address(&listing_address(&me, &row.listing_id), buyer);
    if let Some(e) = read_account(chain, &at, EscrowAccount::decode).await? {
        if e.status != EscrowStatus::Deposited {
            return Err(EscrowPlanError::Settled(e.status).into());
        }
    }
    let envelope = row.envelope_id.as_deref().unwrap_or_default();
    Ok(release_instruction(
        &me,
        &row.listing_id,
        buyer,
        &config.treasury,
        envelope,
        goods.bundle_hash,
    )?)
}

/// What a listing sells, as the seller knows it.
#[derive(Debug, Clone)]
pub struct Goods<'a> {
    /// Bundle hash.
    pub bundle_hash: &'a str,
    /// The blob key.
    pub key: &'a [u8; 32],
    /// Token name/symbol/URI for the buyer's token.
    pub token: NftSpec,
    /// Light compressed token (default) or Token-2022 NFT.
    pub standard: TokenStandard,
    /// Settled through the escrow program: the release transaction also
    /// releases the buyer's escrow (the seller is paid there).
    pub escrow: bool,
}

/// The mint a release of `buy_signature` creates (derived, so a second
/// release of the same buy names the same mint and cannot land).
pub fn release_mint(
    seller: &Wallet,
    buy_signature: &str,
    standard: TokenStandard,
) -> Result<(Pubkey, String), ChainError> {
    let seed = seed_from(format!("release:{buy_signature}").as_bytes());
    let mint = match standard {
        TokenStandard::Token2022 => mint_address(&seller.solana_keypair().pubkey(), &seed)?,
        TokenStandard::LightCompressed => crate::mint::light::mint_keypair(seller, &seed).pubkey(),
    };
    Ok((mint, seed))
}

async fn mint_exists(chain: &Chain, mint: &Pubkey) -> Result<bool, ChainError> {
    let acct = crate::chain::client::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(mint, chain.commitment())
    })
    .await?;
    Ok(acct.value.is_some())
}

/// The signature that created `mint` (the release transaction).
async fn creating_signature(chain: &Chain, mint: &Pubkey) -> Result<String, ChainError> {
    let history = chain.signatures_for(mint, None).await?;
    history
        .last()
        .map(|s| s.signature.clone())
        .ok_or_else(|| ChainError::Config(format!("mint {mint} exists but has no history yet")))
}

/// Step 1: seal and upload the envelope (idempotent per buy).
pub async fn upload_envelope(
    db: &mut ListenDb,
    seller: &Wallet,
    uploader: &Uploader,
    signature: &str,
    goods: &Goods<'_>,
) -> Result<Step, ReleaseError> {
    let row = db.get(signature)?;
    let (Some(buyer), Some(buyer_x25519)) = (&row.buyer, &row.buyer_x25519) else {
        return Err(StateError::WrongState {
            signature: signature.into(),
            state: row.state,
            step: "upload the envelope",
        }
        .into());
    };
    let x25519 = crate::crypto::b58_array::<32>(buyer_x25519)
        .ok_or_else(|| ReleaseError::BadBuyerKey(signature.into()))?;
    let (mint, _) = release_mint(seller, signature, goods.standard)?;
    let env = seal_envelope(
        seller,
        &row.listing_id,
        buyer,
        &x25519,
        signature,
        goods.bundle_hash,
        &mint.to_string(),
        goods.key,
    )?;
    let id = uploader
        .put_signed(
            seller,
            serde_json::to_vec(&env).expect("serializes"),
            "application/json",
            crate::market::envelope::ENVELOPE_SCHEMA,
        )
        .await?;
    Ok(db.mark_envelope_uploaded(signature, &id, &mint.to_string())?)
}

/// Step 2: the one release transaction (or recording one that landed).
/// Returns the release transaction's signature.
pub async fn send_release(
    db: &mut ListenDb,
    chain: &Chain,
    seller: &Wallet,
    buy_signature: &str,
    goods: &Goods<'_>,
) -> Result<String, ReleaseError> {
    let row = db.get(buy_signature)?;
    if let Some(sig) = row.release_sig {
        return Ok(sig);
    }
    let sig = land_release(chain, seller, &row, goods).await?;
    db.mark_released(buy_signature, &sig)?;
    Ok(sig)
}

/// Lands the release of `row` (state `envelope_uploaded`) without touching
/// the state database, so several can be in flight at once: if its mint
/// already exists the release landed before (its creating signature is
/// returned); otherwise ONE transaction mints and posts `release`.
pub async fn land_release(
    chain: &Chain,
    seller: &Wallet,
    row: &super::state::BuyRow,
    goods: &Goods<'_>,
) -> Result<String, ReleaseError> {
    let (Some(envelope_id), Some(buyer)) = (row.envelope_id.clone(), row.buyer.clone()) else {
        return Err(StateError::WrongState {
            signature: row.signature.clone(),
            state: row.state.clone(),
            step: "release",
        }
        .into());
    };
    let payer = seller.solana_keypair();
    let (mint, seed) = release_mint(seller, &row.signature, goods.standard)?;
    if mint_exists(chain, &mint).await? {
        return Ok(creating_signature(chain, &mint).await?);
    }
    let buyer = Pubkey::from_str(&buyer)
        .map_err(|_| ChainError::Config(format!("buyer {buyer} is not a pubkey")))?;
    let op = MemoOp::Release {
        listing_id: row.listing_id.clone(),
        envelope_arweave_id: envelope_id,
        minted_token_address: mint.to_string(),
    };
    let mut extra = vec![
        memo(&op.to_string(), &payer.pubkey()),
        discovery(&registry_from_env()?, DEFAULT_CU_LIMIT),
    ];
    if goods.escrow {
        extra.push(escrow_release(chain, seller, row, &buyer, goods).await?);
    }
    let minted = match goods.standard {
        TokenStandard::Token2022 => mint_nft(chain, &payer, &seed, &buyer, &goods.token, extra)
            .await
            .map(|m| m.sent),
        TokenStandard::LightCompressed => crate::mint::light::mint_compressed(
            chain,
            seller,
            &seed,
            &buyer,
            1,
            &goods.token,
            extra,
        )
        .await
        .map(|m| m.sent),
    };
    let sig = match minted {
        Ok(sent) => {
            super::fault::maybe_abort("release_sent");
            sent.signature.to_string()
        }
        // landed concurrently or before a crash: the chain refused a second mint
        Err(e) if mint_exists(chain, &mint).await? => {
            tracing::info!(error = %e, %mint, "release already on chain; recording it");
            creating_signature(chain, &mint).await?
        }
        Err(e) => return Err(e.into()),
    };
    Signature::from_str(&sig).map_err(|_| ChainError::Config("bad release signature".into()))?;
    Ok(sig)
}
