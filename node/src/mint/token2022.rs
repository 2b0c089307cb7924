//! A Token-2022 NFT: MetadataPointer (to the mint itself) + TokenMetadata
//! with the `ar://` metadata URI, supply 1, 0 decimals, no freeze
//! authority, mint authority revoked in the same transaction.
//!
//! The mint address is `create_with_seed(payer, seed, Token-2022)`: callers
//! derive the seed from what makes the mint unique (the buy signature for a
//! sale), so the address is known before sending and a retried mint fails
//! on chain (the account exists) instead of minting twice.

use crate::chain::{Chain, ChainError, Sent};
use crate::mint::account_setup::{self, address_state, AddressState, Derivation};
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
/// `states` are what is at the mint and the token account addresses
/// (`[AddressState::Empty; 2]` for fresh ones); see [`account_setup`].
///
/// [`account_setup`]: crate::mint::account_setup
pub fn nft_instructions(
    payer: &Pubkey,
    at: &NftAddresses,
    recipient: &Pubkey,
    spec: &NftSpec,
    rents: [u64; 2],
    states: [AddressState; 2],
) -> Result<Vec<Instruction>, ChainError> {
    let [mut ixs, account] = at.setup(payer, rents, states);
    ixs.extend(metadata_mint_instructions(payer, &at.mint, spec)?);
    ixs.extend(account);
    use spl_token_2022_interface::instruction as ti;
    ixs.extend([
        ti::initialize_account3(&TOKEN_2022, &at.token_account, &at.mint, recipient)
            .map_err(err)?,
        ti::mint_to(&TOKEN_2022, &at.mint, &at.token_account, payer, &[], 1).map_err(err)?,
        ti::set_authority(
            &TOKEN_2022,
            &at.mint,
            None,
            ti::AuthorityType::MintTokens,
            payer,
            &[],
        )
        .map_err(err)?,
    ]);
    Ok(ixs)
}

/// The two accounts of an NFT minted with a seed, and their sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftAddresses {
    /// The mint.
    pub mint: Pubkey,
    /// The mint's seed.
    pub mint_seed: String,
    /// Bytes of the mint before its metadata.
    pub mint_space: u64,
    /// Bytes of the mint with its metadata (what its rent is for).
    pub mint_total: u64,
    /// The recipient's token account.
    pub token_account: Pubkey,
    /// The token account's seed.
    pub account_seed: String,
}

impl NftAddresses {
    /// The addresses and sizes for `payer`, `seed`, `recipient`, `spec`.
    pub fn derive(
        payer: &Pubkey,
        seed: &str,
        recipient: &Pubkey,
        spec: &NftSpec,
    ) -> Result<NftAddresses, ChainError> {
        let mint = mint_address(payer, seed)?;
        let (token_account, account_seed) = token_account_address(payer, seed, recipient)?;
        let (base, total) = mint_sizes(payer, &mint, spec)?;
        Ok(NftAddresses {
            mint,
            mint_seed: seed.to_string(),
            mint_space: base as u64,
            mint_total: total as u64,
            token_account,
            account_seed,
        })
    }

    /// The set-up instructions of the mint and of the token account.
    pub fn setup(
        &self,
        payer: &Pubkey,
        rents: [u64; 2],
        states: [AddressState; 2],
    ) -> [Vec<Instruction>; 2] {
        [
            account_setup::instructions(
                payer,
                &self.mint,
                Derivation::Seeded(&self.mint_seed),
                rents[0],
                self.mint_space,
                states[0],
            ),
            account_setup::instructions(
                payer,
                &self.token_account,
                Derivation::Seeded(&self.account_seed),
                rents[1],
                TOKEN_ACCOUNT_LEN as u64,
                states[1],
            ),
        ]
    }
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
/// instructions, e.g. a release memo). Where a stranger parked lamports at
/// the mint or token account address, those accounts are first prepared
/// in a transaction of their own (both prepared in the release would not
/// fit a packet); a crash between the two is resumed from the prepared
/// accounts.
pub async fn mint_nft(
    chain: &Chain,
    payer: &Keypair,
    seed: &str,
    recipient: &Pubkey,
    spec: &NftSpec,
    extra: Vec<Instruction>,
) -> Result<Minted, ChainError> {
    let p = payer.pubkey();
    let at = NftAddresses::derive(&p, seed, recipient, spec)?;
    let rents = [
        chain.rent_exemption(at.mint_total as usize).await?,
        chain.rent_exemption(TOKEN_ACCOUNT_LEN).await?,
    ];
    let mut states = [
        address_state(chain, &at.mint, at.mint_space).await?,
        address_state(chain, &at.token_account, TOKEN_ACCOUNT_LEN as u64).await?,
    ];
    account_setup::refuse_taken(&at.mint, states[0])?;
    if states.iter().any(|s| s.is_parked()) {
        tracing::warn!(mint = %at.mint, token_account = %at.token_account, ?states,
            "lamports were parked at a derived address; preparing the accounts around them first");
        let prepare: Vec<Instruction> = states
            .into_iter()
            .zip(at.setup(&p, rents, states))
            .filter(|(state, _)| state.is_parked())
            .flat_map(|(_, ixs)| ixs)
            .collect();
        chain.send(&prepare, &[payer]).await?;
        states = [
            states[0].after_setup(rents[0]),
            states[1].after_setup(rents[1]),
        ];
    }
    let mut ixs = nft_instructions(&p, &at, recipient, spec, rents, states)?;
    ixs.extend(extra);
    let sent = chain.send(&ixs, &[payer]).await?;
    Ok(Minted {
        mint: at.mint,
        token_account: at.token_account,
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

/// The base state of the Token-2022 mint at `mint`, read at the chain's
/// commitment: `None` if no initialized Token-2022 mint is there (nothing,
/// another owner, lamports a stranger parked).
pub async fn mint_base(chain: &Chain, mint: &Pubkey) -> Result<Option<Mint>, ChainError> {
    let acct = crate::chain::retry::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(mint, chain.commitment())
    })
    .await?;
    Ok(acct
        .value
        .filter(|a| a.owner == TOKEN_2022)
        .and_then(|a| {
            StateWithExtensions::<Mint>::unpack(&a.data)
                .ok()
                .map(|m| m.base)
        })
        .filter(|m| m.is_initialized))
}

/// Reads a Token-2022 mint and its TokenMetadata back from the chain.
pub async fn read_mint(chain: &Chain, mint: &Pubkey) -> Result<MintState, ChainError> {
    let bad = |w: &str| ChainError::Config(format!("mint {mint}: {w}"));
    let acct =
        crate::chain::retry::with_retry("getAccountInfo", || chain.rpc().get_account(mint)).await?;
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
    let acct = crate::chain::retry::with_retry("getAccountInfo", || {
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
