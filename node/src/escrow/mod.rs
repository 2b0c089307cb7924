//! Client side of the escrow program (`programs/escrow`, IDL in
//! `programs/escrow/idl/escrow.json`): PDAs, instruction builders (Anchor
//! discriminators + Borsh arguments + account metas in the IDL's order,
//! as anchor-client would build them), decoders of its accounts (Config,
//! Listing, Escrow: what `buy --escrow` and `listen` check before money
//! moves) and of its events in transaction logs, for the indexer.
//!
//! Owns the wire shape only; it never sends anything. The program cannot
//! be deployed on localnet here (no SBF toolchain), so these builders are
//! tested against the program in `solana-program-test`.

mod accounts;
mod builders;
mod events;

pub use crate::chain::anchor::discriminator;
pub use accounts::{
    AccountError, ConfigAccount, EscrowAccount, EscrowStatus, ListingAccount, ListingStatus,
};
pub use builders::{
    cancel_listing, create_listing, deposit, initialize_config, refund, release, slash,
    EscrowListing, NewConfig,
};
pub use events::{decode_event, events_in_logs, EscrowEvent};

/// A `deposit` instruction seen in a transaction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Deposit {
    /// The listing account deposited into (base58).
    pub listing: String,
    /// The depositing buyer (base58).
    pub buyer: String,
}

/// The deposit an escrow-program instruction makes, if it is a `deposit`
/// (discriminator, 32-byte key argument, the IDL's four accounts).
pub fn deposit_of(accounts: &[Pubkey], data: &[u8]) -> Option<Deposit> {
    let (disc, args) = data.split_at_checked(8)?;
    if disc != discriminator("global", "deposit") || args.len() != 32 {
        return None;
    }
    match accounts {
        [listing, _escrow, buyer, _system] => Some(Deposit {
            listing: listing.to_string(),
            buyer: buyer.to_string(),
        }),
        _ => None,
    }
}
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

/// Bytes of the program's `Escrow` account (discriminator + `INIT_SPACE`:
/// listing, buyer, X25519 key, amount, deposited_at, status, envelope id
/// (4 + 64), slashed, bump); checked against the program in its tests.
pub const ESCROW_ACCOUNT_SPACE: usize = 8 + 32 + 32 + 32 + 8 + 8 + 1 + (4 + 64) + 1 + 1;

/// The program id (`declare_id!` of `programs/escrow`).
pub const PROGRAM_ID: &str = "GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq";
pub(crate) const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");

/// The program id as a key.
pub fn program_id() -> Pubkey {
    Pubkey::from_str(PROGRAM_ID).expect("valid program id")
}

/// The Config PDA.
pub fn config_address() -> Pubkey {
    Pubkey::find_program_address(&[b"config"], &program_id()).0
}

/// The upgradeable loader, which holds the program's ProgramData.
pub const UPGRADEABLE_LOADER: Pubkey =
    solana_sdk::pubkey!("BPFLoaderUpgradeab1e11111111111111111111111");

/// The program's ProgramData account: its upgrade authority is the only
/// one who may initialize the config.
pub fn program_data_address() -> Pubkey {
    Pubkey::find_program_address(&[program_id().as_ref()], &UPGRADEABLE_LOADER).0
}

/// The Listing PDA of (seller, listing id).
pub fn listing_address(seller: &Pubkey, listing_id: &str) -> Pubkey {
    Pubkey::find_program_address(
        &[b"listing", seller.as_ref(), listing_id.as_bytes()],
        &program_id(),
    )
    .0
}

/// The Escrow PDA of (listing account, buyer).
pub fn escrow_address(listing: &Pubkey, buyer: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(
        &[b"escrow", listing.as_ref(), buyer.as_ref()],
        &program_id(),
    )
    .0
}
