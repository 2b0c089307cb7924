//! Token minting for bundles and sales. Today: the Token-2022 NFT backend
//! (MetadataPointer + TokenMetadata → `ar://` URI, supply 1, authority
//! revoked). The Light compressed-token backend joins it with the mint issue.

pub mod bundle_mint;
pub mod light;
pub mod token2022;
