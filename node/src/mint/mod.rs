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
pub mod token2022;
