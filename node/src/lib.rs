//! brainctl node: everything a marketplace participant's machine does.
//!
//! # Layout
//! - [`store`]: the memory store (SQLite, FTS5, migrations)
//! - [`wallet`]: keystores, Ed25519 signing, X25519 derivation
//! - [`bundle`]: canonical JSON, signed bundles and manifests
//! - [`arweave`]: ANS-104 data items
//! - [`keys`]: bundle key files (0600, O_EXCL, by blob and by listing)
//! - [`seal`]: AES-256-GCM blobs and sealed-box key envelopes
//! - [`scan`]: secret/PII and prompt-injection scanners
//! - [`spend`]: the buyer's spending policy and its durable ledger
//! - `mint` (feature `chain`): Token-2022 NFT minting
//! - `listen` (feature `chain`): settlement rules for buys
//! - [`market`]: marketplace memo grammar
//! - [`export`] / [`import`]: the signed export and quarantined import flows
//! - [`brainctl_db`]: verified memories written into a Python brainctl `brain.db`
//! - `chain` (feature `chain`): RPC, memos, fees, pins
//! - [`clock`], [`crypto`]: timestamps and small crypto helpers
//!
//! Library code returns typed errors ([`Error`]); binaries add context.
#![deny(missing_docs)]

pub mod arweave;
pub mod brainctl_db;
pub mod bundle;
#[cfg(feature = "chain")]
pub mod chain;
pub mod clock;
pub mod crypto;
#[cfg(feature = "chain")]
pub mod escrow;
pub mod export;
pub mod import;
pub mod keys;
#[cfg(feature = "chain")]
pub mod listen;
pub mod market;
#[cfg(feature = "chain")]
pub mod mint;
pub mod scan;
pub mod seal;
pub mod spend;
pub mod store;
pub mod wallet;

/// Any error of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Store.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// Wallet.
    #[error(transparent)]
    Wallet(#[from] wallet::WalletError),
    /// Manifest.
    #[error(transparent)]
    Manifest(#[from] bundle::ManifestError),
    /// Sealing.
    #[error(transparent)]
    Seal(#[from] seal::SealError),
    /// Export.
    #[error(transparent)]
    Export(#[from] export::ExportError),
    /// Import.
    #[error(transparent)]
    Import(#[from] import::ImportError),
    /// Chain.
    #[cfg(feature = "chain")]
    #[error(transparent)]
    Chain(#[from] chain::ChainError),
}

/// Result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
