//! The chain layer: cluster selection, RPC access with retries, memo and
//! fee instruction builders, strict decoding of fetched transactions, and
//! pin memos.
//!
//! Owns every RPC call of the node. It never decides settlement rules
//! (that is `listen`'s) and never holds keys beyond the signer it is handed.

pub mod anchor;
pub mod client;
pub mod cluster;
pub mod fees;
pub mod instructions;
mod landing;
pub mod lookup;
pub mod memo_field;
pub mod parsed_tx;
pub mod pin;
pub mod priority;
pub mod retry;
pub mod test_dollar;
pub mod test_price;
pub mod token;

pub use client::{Budget, Chain, LandingOf, RecordSend, Sent, SigInfo};
pub use cluster::{parse_commitment, ClusterKind, Endpoint};
pub use fees::{FeeOp, FeePolicy};
pub use parsed_tx::{ParsedTx, ProgramCall};
pub use solana_sdk::pubkey::Pubkey;
pub use solana_sdk::signature::{Keypair, Signature};
pub use solana_sdk::signer::Signer;

/// Chain errors.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// Bad `-u` / commitment.
    #[error("{0}")]
    BadUrl(String),
    /// Bad configuration (env var, address).
    #[error("{0}")]
    Config(String),
    /// An RPC call failed (after retries for transient errors). Shown
    /// without the RPC's URL, which may hold an API key
    /// ([`retry::described`]); the client's error is not chained as a
    /// source for the same reason.
    #[error("RPC {what} failed: {}", retry::described(.error))]
    Rpc {
        /// The call.
        what: String,
        /// The client's error (its `Display` names the URL: never shown).
        error: Box<solana_rpc_client_api::client_error::Error>,
    },
    /// The transaction landed but failed.
    #[error("transaction {signature} failed on chain: {error}")]
    TxFailed {
        /// Its signature.
        signature: String,
        /// The error.
        error: String,
    },
    /// The blockhash expired three times without the transaction landing.
    #[error("transaction did not land before its blockhash expired (3 attempts); is the cluster reachable and the fee payer funded?")]
    Expired,
    /// A sent transaction neither landed nor expired within the handle's
    /// landing budget ([`Chain::with_landing_budget`]); it may still land.
    #[error("transaction {signature} has not reached our commitment within {seconds} s (it may still land); retried later")]
    NotLandedYet {
        /// Its signature.
        signature: String,
        /// The budget.
        seconds: u64,
    },
    /// An account is already at an address a transaction would create
    /// (a mint made before: the chain would refuse the transaction, and its
    /// fee be spent for nothing), so it was not sent.
    #[error("an account already exists at {address}; not created again")]
    AccountExists {
        /// The address.
        address: String,
    },
    /// A fetched transaction had an unexpected shape.
    #[error(transparent)]
    Shape(#[from] parsed_tx::TxShapeError),
    /// The RPC node answered with another transaction than the one asked
    /// for (a faulty or lying node): never used, retried later.
    #[error("RPC answered getTransaction({asked}) with transaction {got}; ignored")]
    WrongTransaction {
        /// The signature asked for.
        asked: String,
        /// The one answered.
        got: String,
    },
}

impl ChainError {
    /// Whether this is the RPC node refusing a transaction in preflight
    /// (its simulation failed), so it was never forwarded and cannot land.
    /// A preflight refusal because the transaction was *already processed*
    /// (a retried send whose first copy got through) does not count.
    pub fn is_preflight_refusal(&self) -> bool {
        use solana_rpc_client_api::client_error::ErrorKind;
        use solana_rpc_client_api::request::{RpcError, RpcResponseErrorData};
        let ChainError::Rpc {
            what,
            error: source,
        } = self
        else {
            return false;
        };
        if what != "sendTransaction" {
            return false;
        }
        match source.kind() {
            ErrorKind::RpcError(RpcError::RpcResponseError {
                data: RpcResponseErrorData::SendTransactionPreflightFailure(sim),
                ..
            }) => {
                !format!("{:?}", sim.err).contains("AlreadyProcessed")
                    && !source.to_string().contains("already been processed")
            }
            _ => false,
        }
    }
}
