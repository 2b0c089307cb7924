//! A Token-2022 NFT: MetadataPointer (to the mint itself) + TokenMetadata
//! with the `ar://` metadata URI, supply 1, 0 decimals, no freeze
//! authority, mint authority revoked in the same transaction.
//!
//! The mint address is `create_with_seed(payer, seed, Token-2022)`: callers
//! derive the seed from what makes the mint unique (the buy signature for a
//! sale), so the address is known before sending and a retried mint fails
//! on chain (the account exists) instead of minting twice.

use crate::chain::{Chain, ChainError, Sent};
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signature::Keypair;
use solana_sdk::signer::Signer;
use spl_token_2022_interface::extension::{
    BaseStateWithExtensions, ExtensionType, StateWithExtensions,
};
use spl_token_2022_interface::state::{Account as TokenAccount, Mint};
use spl_token_metadata_interface::state::TokenMetadata;

/// The Token-2022 program.
pub const TOKEN_2022: Pubkey = spl_token_2022_interface::ID;

/// Name, symbol and URI of the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftSpec {
    /// Token name.
    pub name: String,
    /// Token symbol.
    pub symbol: String,
    /// `ar://<metadata id>`.
    pub uri: String,
}

/// The mint address for `payer` and `seed` (≤ 32 bytes).
pub fn mint_address(payer: &Pubkey, seed: &str) -> Result<Pubkey, ChainError> {
    Pubkey::create_with_seed(payer, seed, &TOKEN_2022)
        .map_err(|e| ChainError::Config(format!("mint seed: {e}")))
}

/// A 32-character seed from arbitrary bytes (base58 of their SHA-256, cut).
pub fn seed_from(bytes: &[u8]) -> String {
    bs58::encode(crate::crypto::sha256(bytes))
        .into_string()
        .chars()
        .take(32)
        .collect()
}

/// The recipient's token account for a mint made with `seed`: another
/// account derived from the payer (the ATA program is not in every
/// cluster's genesis; a seeded account owned by the recipient works alike).
pub fn token_account_address(
    payer: &Pubkey,
    seed: &str,
    recipient: &Pubkey,
) -> Result<(Pubkey, String), ChainError> {
    let acct_seed = seed_from(format!("{seed}:{recipient}:token-account").as_bytes());
    let addr = Pubkey::create_with_seed(payer, &acct_seed, &TOKEN_2022)
        .map_err(|e| ChainError::Config(format!("token account seed: {e}")))?;
    Ok((addr, acct_seed))
}

/// Size of a plain Token-2022 token account.
pub const TOKEN_ACCOUNT_LEN: usize = 165;

/// Bytes of the mint account before metadata, and the total after it.
pub fn mint_sizes(
    payer: &Pubkey,
    mint: &Pubkey,
    spec: &NftSpec,
) -> Result<(usize, usize), ChainError> {
    let base = ExtensionType::try_calculate_account_len::<Mint>(&[ExtensionType::MetadataPointer])
        .map_err(|e| ChainError::Config(format!("mint size: {e}")))?;
    let meta = TokenMetadata {
        update_authority: Some(*payer)
            .try_into()
            .map_err(|_| ChainError::Config("update authority".into()))?,
        mint: *mint,
        name: spec.name.clone(),
        symbol: spec.symbol.clone(),
        uri: spec.uri.clone(),
        additional_metadata: vec![],
    };
    let extra = meta
        .tlv_size_of()
        .map_err(|e| ChainError::Config(format!("metadata size: {e}")))?;
    Ok((base, base + extra))
}

/// The instructions minting one NFT to `recipient` (payer = mint authority
/// and metadata update authority), ending with the mint authority revoked.
pub fn nft_instructions(
    payer: &Pubkey,
    seed: &str,
    recipient: &Pubkey,
    spec: &NftSpec,
    rent_lamports: u64,
    account_rent_lamports: u64,
) -> Result<(Pubkey, Pubkey, Vec<Instruction>), ChainError> {
    let mint = mint_address(payer, seed)?;
    let (token_account, acct_seed) = token_account_address(payer, seed, recipient)?;
    let (base, _) = mint_sizes(payer, &mint, spec)?;
    let mut ixs = vec![
        solana_system_interface::instruction::create_account_with_seed(
            payer,
            &mint,
            payer,
            seed,
            rent_lamports,
            base as u64,
            &TOKEN_2022,
        ),
    ];
    ixs.extend(metadata_mint_instructions(payer, &mint, spec)?);
    use spl_token_2022_interface::instruction as ti;
    ixs.extend([
        solana_system_interface::instruction::create_account_with_seed(
            payer,
            &token_account,
            payer,
            &acct_seed,
            account_rent_lamports,
            TOKEN_ACCOUNT_LEN as u64,
            &TOKEN_2022,
        ),
        ti::initialize_account3(&TOKEN_2022, &token_account, &mint, recipient).map_err(err)?,
        ti::mint_to(&TOKEN_2022, &mint, &token_account, payer, &[], 1).map_err(err)?,
        ti::set_authority(
            &TOKEN_2022,
            &mint,
            None,
            ti::AuthorityType::MintTokens,
            payer,
            &[],
        )
        .map_err(err)?,
    ]);
    Ok((mint, token_account, ixs))
}

/// The instructions that make the account at `address` (derived from
/// `payer` with `seed`) a Token-2022 account of `space` bytes holding
/// `rent`: `create_account_with_seed` when it is empty; top-up +
/// `allocate_with_seed` + `assign_with_seed` (which need the payer's
/// signature, so nobody else can) when `prefunded` lamports were parked.
pub fn seeded_account_instructions(
    payer: &Pubkey,
    address: &Pubkey,
    seed: &str,
    rent: u64,
    space: u64,
    prefunded: u64,
) -> Vec<Instruction> {
    use solana_system_interface::instruction as system;
    if prefunded == 0 {
        return vec![system::create_account_with_seed(
            payer,
            address,
            payer,
            seed,
            rent,
            space,
            &TOKEN_2022,
        )];
    }
    let mut ixs = Vec::new();
    if rent > prefunded {
        ixs.push(system::transfer(payer, address, rent - prefunded));
    }
    ixs.push(system::allocate_with_seed(
        address,
        payer,
        seed,
        space,
        &TOKEN_2022,
    ));
    ixs.push(system::assign_with_seed(address, payer, seed, &TOKEN_2022));
    ixs
}

fn err(e: solana_sdk::program_error::ProgramError) -> ChainError {
    ChainError::Config(format!("token instruction: {e}"))
}

/// What turns a created (`mint_sizes().0` bytes, rent for the total),
/// Token-2022-owned account into a mint carrying its own metadata:
/// MetadataPointer → the mint, InitializeMint2 (0 decimals, `authority`
/// mints and updates the metadata, no freeze authority), TokenMetadata
/// with `spec`. Shared by the NFT and the Light compressed backends.
pub fn metadata_mint_instructions(
    authority: &Pubkey,
    mint: &Pubkey,
    spec: &NftSpec,
) -> Result<Vec<Instruction>, ChainError> {
    Ok(vec![
        spl_token_2022_interface::extension::metadata_pointer::instruction::initialize(
            &TOKEN_2022,
            mint,
            Some(*authority),
            Some(*mint),
        )
        .map_err(err)?,
        spl_token_2022_interface::instruction::initialize_mint2(
            &TOKEN_2022,
            mint,
            authority,
            None,
            0,
        )
        .map_err(err)?,
        spl_token_metadata_interface::instruction::initialize(
            &TOKEN_2022,
            mint,
            authority,
            mint,
            authority,
            spec.name.clone(),
            spec.symbol.clone(),
            spec.uri.clone(),
        ),
    ])
}

/// A minted NFT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    /// Mint address.
    pub mint: Pubkey,
    /// The recipient's token account.
    pub token_account: Pubkey,
    /// The transaction.
    pub sent: Sent,
}

/// Mints one NFT to `recipient` in one transaction (plus `extra` trailing
/// instructions, e.g. a release memo).
pub async fn mint_nft(
    chain: &Chain,
    payer: &Keypair,
    seed: &str,
    recipient: &Pubkey,
    spec: &NftSpec,
    extra: Vec<Instruction>,
) -> Result<Minted, ChainError> {
    let mint = mint_address(&payer.pubkey(), seed)?;
    let (_, total) = mint_sizes(&payer.pubkey(), &mint, spec)?;
    let rent = |n: usize| {
        crate::chain::client::with_retry("getMinimumBalanceForRentExemption", move || {
            chain.rpc().get_minimum_balance_for_rent_exemption(n)
        })
    };
    let (mint_rent, acct_rent) = (rent(total).await?, rent(TOKEN_ACCOUNT_LEN).await?);
    let (mint, token_account, mut ixs) =
        nft_instructions(&payer.pubkey(), seed, recipient, spec, mint_rent, acct_rent)?;
    // lamports parked at either derived address (public once an envelope
    // names the mint) would make create_account_with_seed fail: build
    // around them
    let (base, _) = mint_sizes(&payer.pubkey(), &mint, spec)?;
    let (_, acct_seed) = token_account_address(&payer.pubkey(), seed, recipient)?;
    for (addr, addr_seed, rent, space) in [
        (mint, seed.to_string(), mint_rent, base as u64),
        (
            token_account,
            acct_seed,
            acct_rent,
            TOKEN_ACCOUNT_LEN as u64,
        ),
    ] {
        let parked = crate::mint::light::parked_lamports(chain, &addr).await?;
        if parked == 0 {
            continue;
        }
        tracing::warn!(%addr, parked, "lamports were parked at a derived address; creating it around them");
        let at = ixs.iter().position(|ix| {
            ix.program_id == solana_system_interface::program::ID
                && ix.accounts.get(1).is_some_and(|a| a.pubkey == addr)
        });
        if let Some(i) = at {
            let around = seeded_account_instructions(
                &payer.pubkey(),
                &addr,
                &addr_seed,
                rent,
                space,
                parked,
            );
            ixs.splice(i..=i, around);
        }
    }
    ixs.extend(extra);
    let sent = chain.send(&ixs, &[payer]).await?;
    Ok(Minted {
        mint,
        token_account,
        sent,
    })
}

/// What the chain says about a Token-2022 mint carrying its own metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintState {
    /// Supply.
    pub supply: u64,
    /// Decimals.
    pub decimals: u8,
    /// Mint authority (None once revoked).
    pub mint_authority: Option<Pubkey>,
    /// Where the MetadataPointer points (the mint itself for ours).
    pub metadata_address: Option<Pubkey>,
    /// Metadata URI.
    pub uri: String,
    /// Metadata name.
    pub name: String,
}

/// What the chain says about an NFT mint and one holder of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftState {
    /// The mint.
    pub mint: MintState,
    /// Units in the token account read.
    pub holder_amount: u64,
    /// Owner of that token account.
    pub holder: Pubkey,
}

/// Reads a Token-2022 mint and its TokenMetadata back from the chain.
pub async fn read_mint(chain: &Chain, mint: &Pubkey) -> Result<MintState, ChainError> {
    let bad = |w: &str| ChainError::Config(format!("mint {mint}: {w}"));
    let acct = crate::chain::client::with_retry("getAccountInfo", || chain.rpc().get_account(mint))
        .await?;
    if acct.owner != TOKEN_2022 {
        return Err(bad("not a Token-2022 account"));
    }
    let state = StateWithExtensions::<Mint>::unpack(&acct.data).map_err(|_| bad("not a mint"))?;
    let pointer = state
        .get_extension::<spl_token_2022_interface::extension::metadata_pointer::MetadataPointer>()
        .map_err(|_| bad("no metadata pointer"))?;
    let meta = state
        .get_variable_len_extension::<TokenMetadata>()
        .map_err(|_| bad("no token metadata"))?;
    Ok(MintState {
        supply: state.base.supply,
        decimals: state.base.decimals,
        mint_authority: Option::<Pubkey>::from(state.base.mint_authority),
        metadata_address: Option::<Pubkey>::from(pointer.metadata_address),
        uri: meta.uri,
        name: meta.name,
    })
}

/// Reads a mint and a token account of it back from the chain.
pub async fn read_nft(
    chain: &Chain,
    mint: &Pubkey,
    token_account: &Pubkey,
) -> Result<NftState, ChainError> {
    let bad = |w: &str| ChainError::Config(format!("mint {mint}: {w}"));
    let state = read_mint(chain, mint).await?;
    let acct = crate::chain::client::with_retry("getAccountInfo", || {
        chain.rpc().get_account(token_account)
    })
    .await?;
    let held = StateWithExtensions::<TokenAccount>::unpack(&acct.data)
        .map_err(|_| bad("holder account"))?;
    if held.base.mint != *mint {
        return Err(bad("token account is for another mint"));
    }
    Ok(NftState {
        mint: state,
        holder_amount: held.base.amount,
        holder: held.base.owner,
    })
}
