//! The sealed escrow: trades that need no trust in the seller
//! (`docs/escrow-protocol.md`). The listing commits to its key (K = k·G),
//! to its public ciphertext and to its plaintext (a Merkle root over the
//! chunks); the buyer's deposit binds the terms it checked and a blinding
//! point B; the seller is paid only through `reveal`, whose scalar s
//! satisfies s·G = K + B and gives that buyer, and nobody else, k. The
//! payment waits out a dispute window in which a buyer whose k does not
//! open the committed ciphertext to the committed plaintext proves it
//! (`dispute`) and is refunded with a share of the stake.
//!
//! Every lamport a buyer receives moves in an instruction the buyer signs
//! (`refund`, `dispute`): nothing the seller or a crank calls depends on an
//! account the buyer controls.
//!
//! The math is `escrow_math`'s, the same the node and indexer run. The
//! first-generation instructions (deposit and release of an envelope,
//! with a separate slash) are gone: the outside review's findings against
//! them are why this exists.

pub mod claim;
pub mod decline;
pub mod dispute;
pub mod events;
pub mod expire;
pub mod list;
pub mod retire;
pub mod reveal;
pub mod sealed_deposit;
pub mod sealed_refund;
pub mod settings;
pub mod state;

pub use claim::*;
pub use decline::*;
pub use dispute::*;
pub use expire::*;
pub use list::*;
pub use retire::*;
pub use reveal::*;
pub use sealed_deposit::*;
pub use sealed_refund::*;
pub use settings::*;
pub use state::SealedTerms;
