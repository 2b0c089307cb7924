//! brainctl node: everything a marketplace participant's machine does.
//!
//! # Layout
//! In layers, lowest first; a module uses its own layer and those below
//! (checked by `tests/layers.rs`, which lists the one edge left to remove).
//! 1. [`crypto`], [`clock`]: small crypto helpers (strict Ed25519, base58), timestamps
//! 2. the local machine, no network:
//!    - [`wallet`]: keystores, Ed25519 signing, X25519 derivation
//!    - [`bundle`]: canonical JSON, signed bundles and manifests
//!    - [`store`]: the memory store (SQLite, FTS5, migrations)
//!    - [`export`] / [`import`]: the signed export and quarantined import flows
//!    - [`provider_import`]: memories from mem0 or a JSON export, into quarantine
//!    - [`brainctl_db`]: verified memories written into a Python brainctl `brain.db`
//!    - [`seal`], [`keys`]: AES-256-GCM blobs, sealed-box key envelopes, 0600 key files
//!    - `publish`: encrypt → upload → keep the key (shared by `export --mint` and `list`)
//!    - [`scan`]: secret/PII and prompt-injection scanners
//!    - [`arweave`]: ANS-104 data items, storage backends, capped downloads
//!    - [`memo`]: the marketplace memo grammar
//!    - [`spend`]: the buyer's spending policy and its durable ledger
//! 3. `chain` (feature `chain`): RPC with retries, transaction decoding, fees, pins
//! 4. `escrow` (the escrow program's client: PDAs, builders, accounts,
//!    events) and `mint` (Light compressed and Token-2022 tokens)
//! 5. `settle`: the settlement rules (is this a paid buy of this listing?),
//!    shared by `listen`, the indexer's fold and its `/settle`
//! 6. `seller`: the seller's durable state (listings, offer decisions, buys)
//! 7. [`market`]: the trade as participants drive it (manifests, list, offer,
//!    buy, escrow plans, status)
//! 8. `listen`: the seller's settlement daemon (a service with a shutdown future)
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
pub mod fault;
pub mod import;
pub mod keys;
#[cfg(feature = "chain")]
pub mod listen;
pub mod market;
pub mod memo;
#[cfg(feature = "chain")]
pub mod mint;
pub mod provider_import;
#[cfg(feature = "chain")]
pub mod publish;
pub mod scan;
pub mod seal;
#[cfg(feature = "chain")]
pub mod seller;
#[cfg(feature = "chain")]
pub mod settle;
pub mod spend;
#[cfg(feature = "net")]
pub mod stop;
pub mod store;
pub mod wallet;
#[cfg(feature = "chain")]
pub mod watch;
#[cfg(feature = "chain")]
pub mod x402;

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
