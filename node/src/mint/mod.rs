//! Token minting for bundles and sales: one fresh mint per export or sale,
//! supply 1, 0 decimals, mint authority revoked in the minting transaction.
//! Both backends mint from a Token-2022 mint carrying its own metadata
//! (MetadataPointer + TokenMetadata → `ar://` URI): `light` as a Light
//! compressed token (default), `token2022` as a plain NFT. `bundle_mint`
//! runs the export flow (encrypt, upload, mint); `account_setup`
//! creates the accounts around lamports a stranger parked at their address.

pub mod account_setup;
pub mod bundle_mint;
pub mod light;
pub mod light_programs;
pub mod output_room;
pub mod receipt;
pub mod token2022;

/// What one release costs the seller (lamports): the rent of the fresh
/// Token-2022 mint with its metadata (a bundle's name and an `ar://` URI),
/// of the buyer's token account for a plain NFT, two signatures, and the
/// protocol's mint fee where due. A buy paying less than this costs the
/// seller more than it earns.
pub async fn release_cost(
    chain: &crate::chain::Chain,
    standard: bundle_mint::TokenStandard,
) -> Result<u64, crate::chain::ChainError> {
    let spec = token2022::NftSpec {
        name: "brainctl bundle 0123456789ab".into(),
        symbol: bundle_mint::SYMBOL.into(),
        uri: format!("ar://{}", "A".repeat(43)),
    };
    let key = crate::chain::Pubkey::new_unique();
    let (_, mint_total) = token2022::mint_sizes(&key, &key, &spec)?;
    let mut cost = chain.rent_exemption(mint_total).await?;
    if standard == bundle_mint::TokenStandard::Token2022 {
        cost += chain.rent_exemption(token2022::TOKEN_ACCOUNT_LEN).await?;
    }
    let fees = crate::chain::FeePolicy::from_env(chain.cluster_kind().await?)?;
    if fees.enabled {
        cost += fees.mint_fee;
    }
    Ok(cost + 2 * crate::chain::fees::LAMPORTS_PER_SIGNATURE)
}
