//! Client side of the escrow program's sealed escrow
//! (`programs/escrow/src/sealed`, protocol in `docs/escrow-protocol.md`):
//! PDAs, instruction builders (Anchor discriminators + Borsh arguments +
//! account metas in each `Accounts` struct's order, as anchor-client would
//! build them), decoders of its accounts (Settings, SealedListing,
//! SealedEscrow: what `buy --escrow` and `listen` check before money
//! moves), of its `deposit_sealed` calls in a transaction ([`deposits_in`])
//! and of its events in transaction logs, for the indexer. The protocol's
//! math is `escrow_math`'s.
//!
//! Owns the wire shape only; it never sends anything. The builders are
//! tested against the program in `solana-program-test`, and end to end on
//! a validator with the SBF build (`cli/tests/escrow_chain.rs`).

mod accounts;
mod builders;
mod events;

pub use crate::chain::anchor::discriminator;
pub use accounts::{
    status_tag, AccountError, EscrowAccount, EscrowStatus, ListingAccount, ListingStatus,
    SettingsAccount, Terms, ESCROW_LISTING_OFFSET, ESCROW_STATUS_OFFSET, REVEAL_GRACE_SECS,
};
pub use builders::{
    claim, claim_token, decline, deposit, deposit_token, dispute, dispute_token, expire,
    init_settings, list_sealed, list_sealed_token, refund, refund_token, retire, reveal,
    FraudProof, NewSettings,
};
/// The protocol's math (`programs/escrow-math`), for callers of this module.
pub use escrow_math as math;
pub use events::{decode_event, events_in_logs, EscrowEvent, UsdQuote};

/// A `deposit_sealed` instruction seen in a transaction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Deposit {
    /// The listing account deposited into (base58).
    pub listing: String,
    /// The depositing buyer (base58).
    pub buyer: String,
}

/// The deposits a transaction's top-level calls into this program make
/// (the chain reader keeps them when asked to watch [`PROGRAM_ID`]), then
/// those an older build recorded in its log, in order.
pub fn deposits_in(tx: &crate::chain::ParsedTx) -> Vec<Deposit> {
    let called = tx
        .calls
        .iter()
        .filter(|c| c.program_id == PROGRAM_ID)
        .filter_map(|c| deposit_of(&c.account_keys(), &c.data));
    let recorded = tx.legacy_deposits.iter().map(|d| Deposit {
        listing: d.listing.clone(),
        buyer: d.buyer.clone(),
    });
    called.chain(recorded).collect()
}

/// Bytes of `deposit_sealed`'s (and `deposit_sealed_token`'s) arguments:
/// the terms (3 × 8 + 4 × 32), B and the buyer's X25519 key.
const DEPOSIT_ARGS_LEN: usize = 3 * 8 + 4 * 32 + 32 + 32;

/// The deposit an escrow-program instruction makes, if it is a
/// `deposit_sealed` (discriminator, its argument bytes, its five accounts)
/// or a `deposit_sealed_token` (its ten).
pub fn deposit_of(accounts: &[Pubkey], data: &[u8]) -> Option<Deposit> {
    let (disc, args) = data.split_at_checked(8)?;
    if args.len() != DEPOSIT_ARGS_LEN {
        return None;
    }
    let accounts_of_call = if disc == discriminator("global", "deposit_sealed") {
        5
    } else if disc == discriminator("global", "deposit_sealed_token") {
        10
    } else {
        return None;
    };
    match accounts {
        [_settings, listing, _escrow, buyer, ..] if accounts.len() == accounts_of_call => {
            Some(Deposit {
                listing: listing.to_string(),
                buyer: buyer.to_string(),
            })
        }
        _ => None,
    }
}
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

/// Bytes of the program's `SealedEscrow` account (discriminator +
/// `INIT_SPACE`: listing, buyer, X25519 key, B, amount, deposited_at,
/// status, s, revealed_at, bump, share); checked against the program in
/// its tests.
pub const ESCROW_ACCOUNT_SPACE: usize = 8 + 32 * 4 + 8 + 8 + 1 + 32 + 8 + 1 + 8;

/// The program id (`declare_id!` of `programs/escrow`).
pub const PROGRAM_ID: &str = "GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq";
pub(crate) const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");

/// The program id as a key.
pub fn program_id() -> Pubkey {
    Pubkey::from_str(PROGRAM_ID).expect("valid program id")
}

/// The Settings PDA.
pub fn settings_address() -> Pubkey {
    Pubkey::find_program_address(&[b"settings"], &program_id()).0
}

/// The upgradeable loader, which holds the program's ProgramData.
pub const UPGRADEABLE_LOADER: Pubkey =
    solana_sdk::pubkey!("BPFLoaderUpgradeab1e11111111111111111111111");

/// The program's ProgramData account: its upgrade authority is the only
/// one who may initialize the settings.
pub fn program_data_address() -> Pubkey {
    Pubkey::find_program_address(&[program_id().as_ref()], &UPGRADEABLE_LOADER).0
}

/// The SealedListing PDA of (seller, listing id).
pub fn listing_address(seller: &Pubkey, listing_id: &str) -> Pubkey {
    Pubkey::find_program_address(
        &[b"sealed-listing", seller.as_ref(), listing_id.as_bytes()],
        &program_id(),
    )
    .0
}

/// The vault of `buyer`'s escrow on `listing` in `mint`: the escrow
/// PDA's associated token account of it.
pub fn vault_address(
    listing: &Pubkey,
    buyer: &Pubkey,
    mint: &crate::chain::token::TokenMint,
) -> Pubkey {
    crate::chain::token::associated_account(&escrow_address(listing, buyer), mint)
}

/// The sealed-escrow scalar k of `seller`'s listing `listing_id`.
pub fn listing_scalar(
    seller: &crate::wallet::Wallet,
    listing_id: &str,
) -> zeroize::Zeroizing<[u8; 32]> {
    let me = Pubkey::from(seller.pubkey());
    seller.escrow_listing_scalar(&listing_address(&me, listing_id).to_bytes())
}

/// The SealedEscrow PDA of (listing account, buyer).
pub fn escrow_address(listing: &Pubkey, buyer: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(
        &[b"sealed-escrow", listing.as_ref(), buyer.as_ref()],
        &program_id(),
    )
    .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::ParsedTx;
    use serde_json::{json, Value};

    /// A transaction whose only instruction is `ix`, as the node renders an
    /// instruction it does not parse.
    fn tx_with(accounts: Vec<String>, data: &[u8]) -> Value {
        json!({
            "slot": 1, "blockTime": 1, "meta": {"err": null},
            "transaction": {"signatures": ["s"], "message": {
                "accountKeys": [{"pubkey": "P", "signer": true}],
                "instructions": [{"programId": PROGRAM_ID, "accounts": accounts,
                    "data": bs58::encode(data).into_string(), "stackHeight": null}]}}
        })
    }

    fn read(v: &Value) -> ParsedTx {
        ParsedTx::from_json_watching(v, &[PROGRAM_ID]).unwrap()
    }

    #[test]
    fn deposits_are_decoded_and_hostile_ones_refused() {
        let (listing, buyer) = (Pubkey::new_unique(), Pubkey::new_unique());
        let terms = Terms {
            price_lamports: 5,
            key_point: [1; 32],
            blob_root: [2; 32],
            plain_len: 3,
            bundle_hash: [4; 32],
            seller_x25519: [5; 32],
            expires_at: 6,
        };
        let ix = deposit(&listing, &buyer, &terms, &[8; 32], &[7; 32]);
        let keys: Vec<String> = ix.accounts.iter().map(|m| m.pubkey.to_string()).collect();
        let want = vec![Deposit {
            listing: listing.to_string(),
            buyer: buyer.to_string(),
        }];
        assert_eq!(deposits_in(&read(&tx_with(keys.clone(), &ix.data))), want);
        // not watched: no call, no deposit
        let unwatched = ParsedTx::from_json(&tx_with(keys.clone(), &ix.data)).unwrap();
        assert!(deposits_in(&unwatched).is_empty());
        // another instruction of the program (reveal) is no deposit
        let release = reveal(&listing, &buyer, &buyer, &[0; 32]);
        let release_keys = release
            .accounts
            .iter()
            .map(|m| m.pubkey.to_string())
            .collect();
        assert!(deposits_in(&read(&tx_with(release_keys, &release.data))).is_empty());
        // a deposit with a short argument, or missing accounts, is no deposit
        assert!(deposits_in(&read(&tx_with(keys.clone(), &ix.data[..20]))).is_empty());
        assert!(deposits_in(&read(&tx_with(keys[..4].to_vec(), &ix.data))).is_empty());
        // what an older build recorded still counts
        let mut old = read(&tx_with(vec![], &[]));
        old.legacy_deposits = vec![crate::chain::parsed_tx::LegacyDeposit {
            listing: listing.to_string(),
            buyer: buyer.to_string(),
        }];
        assert_eq!(deposits_in(&old), want);
    }
}
