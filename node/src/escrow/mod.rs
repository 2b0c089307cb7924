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
pub use events::{decode_event, emitted, events_in, EscrowEvent, UsdQuote, EVENT_IX_TAG};

/// A deposit into the program seen in a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deposit {
    /// The listing account deposited into (base58).
    pub listing: String,
    /// The depositing buyer (base58).
    pub buyer: String,
    /// What it holds, as the program's own event says (`None`: a deposit
    /// an older build recorded in its log, which did not say).
    pub held: Option<Held>,
}

/// What a deposit holds, by the program's `SealedDeposited` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Lamports, or base units of `mint`.
    pub amount: u64,
    /// The listing's token (the default key: SOL).
    pub mint: Pubkey,
}

/// The deposits a transaction makes, by the program's own `SealedDeposited`
/// events (so through any caller, and whatever else the transaction
/// logs), then those an older build recorded in its log, in order.
pub fn deposits_in(tx: &crate::chain::ParsedTx) -> Vec<Deposit> {
    let emitted = events_in(tx).into_iter().filter_map(|e| match e {
        EscrowEvent::Deposited {
            listing,
            buyer,
            amount,
            mint,
            ..
        } => Some(Deposit {
            listing: listing.to_string(),
            buyer: buyer.to_string(),
            held: Some(Held { amount, mint }),
        }),
        _ => None,
    });
    let recorded = tx.legacy_deposits.iter().map(|d| Deposit {
        listing: d.listing.clone(),
        buyer: d.buyer.clone(),
        held: None,
    });
    emitted.chain(recorded).collect()
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

/// The program's event authority (`#[event_cpi]`'s PDA of
/// `__event_authority`): it signs each event's self-CPI.
pub fn event_authority_address() -> Pubkey {
    Pubkey::find_program_address(&[b"__event_authority"], &program_id()).0
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

/// The sealed-escrow scalar k of `seller`'s listing `listing_id` by the
/// first derivation (seed and account only): listings made before k was
/// bound to its cluster, and tests that seal by hand.
pub fn listing_scalar(
    seller: &crate::wallet::Wallet,
    listing_id: &str,
) -> zeroize::Zeroizing<[u8; 32]> {
    let me = Pubkey::from(seller.pubkey());
    seller.escrow_listing_scalar(&listing_address(&me, listing_id).to_bytes())
}

/// The sealed-escrow scalar k of `seller`'s listing `listing_id` on the
/// cluster whose genesis hash is `genesis_hash`: what `list --escrow`
/// derives, so the same id on another cluster (same program id, same
/// account address) gets another k.
pub fn cluster_listing_scalar(
    seller: &crate::wallet::Wallet,
    genesis_hash: &[u8; 32],
    listing_id: &str,
) -> zeroize::Zeroizing<[u8; 32]> {
    let me = Pubkey::from(seller.pubkey());
    seller.escrow_cluster_listing_scalar(genesis_hash, &listing_address(&me, listing_id).to_bytes())
}

/// The k whose point is the listing's committed `key_point`: the
/// cluster-bound derivation, else the first one (a listing made before
/// it); `None` when neither is (a listing this wallet did not derive).
pub fn committed_scalar(
    seller: &crate::wallet::Wallet,
    genesis_hash: &[u8; 32],
    listing_id: &str,
    key_point: &[u8; 32],
) -> Option<zeroize::Zeroizing<[u8; 32]>> {
    [
        cluster_listing_scalar(seller, genesis_hash, listing_id),
        listing_scalar(seller, listing_id),
    ]
    .into_iter()
    .find(|k| escrow_math::client::point_of(k) == *key_point)
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

    /// A transaction whose escrow instruction emitted `events` (as the
    /// node renders its inner instructions).
    fn tx_emitting(events: &[crate::chain::ProgramCall]) -> Value {
        let inner: Vec<Value> = events
            .iter()
            .map(|c| {
                json!({"programId": c.program_id, "accounts": c.accounts,
                    "data": bs58::encode(&c.data).into_string(), "stackHeight": 2})
            })
            .collect();
        json!({
            "slot": 1, "blockTime": 1,
            "meta": {"err": null, "innerInstructions": [{"index": 0, "instructions": inner}]},
            "transaction": {"signatures": ["s"], "message": {
                "accountKeys": [{"pubkey": "P", "signer": true}],
                "instructions": []}}
        })
    }

    fn read(v: &Value) -> ParsedTx {
        ParsedTx::from_json_watching(v, &[PROGRAM_ID]).unwrap()
    }

    /// k is bound to its cluster: the same wallet and listing id on two
    /// clusters (same program id, so the same account address) get two
    /// keys; the seller finds the one a listing committed to, a listing
    /// of the first derivation still opens, another wallet's never.
    #[test]
    fn the_listing_key_is_bound_to_its_cluster_and_found_by_its_point() {
        let seller = crate::wallet::Wallet::generate();
        let id = "20261128-0123456789ab";
        let (here, there) = ([1u8; 32], [2u8; 32]);
        let k_here = cluster_listing_scalar(&seller, &here, id);
        let k_there = cluster_listing_scalar(&seller, &there, id);
        assert_ne!(*k_here, *k_there);
        let point = |k: &[u8; 32]| escrow_math::client::point_of(k);
        let found = |genesis: &[u8; 32], key_point: &[u8; 32]| {
            committed_scalar(&seller, genesis, id, key_point).map(|k| *k)
        };
        assert_eq!(found(&here, &point(&k_here)), Some(*k_here));
        assert_eq!(
            found(&there, &point(&k_here)),
            None,
            "another cluster's listing"
        );
        let v1 = listing_scalar(&seller, id);
        assert_eq!(
            found(&here, &point(&v1)),
            Some(*v1),
            "an older listing still opens"
        );
        let stranger = crate::wallet::Wallet::generate();
        let theirs = cluster_listing_scalar(&stranger, &here, id);
        assert_eq!(found(&here, &point(&theirs)), None);
    }

    #[test]
    fn deposits_are_the_programs_events_and_hostile_ones_are_none() {
        let (listing, escrow, buyer, mint) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let mut body = [listing, escrow, buyer]
            .iter()
            .flat_map(|k| k.to_bytes())
            .collect::<Vec<u8>>();
        body.extend_from_slice(&5u64.to_le_bytes());
        body.extend_from_slice(mint.as_ref());
        body.extend_from_slice(&77i64.to_le_bytes());
        let deposited = emitted("SealedDeposited", &body);
        let want = vec![Deposit {
            listing: listing.to_string(),
            buyer: buyer.to_string(),
            held: Some(Held { amount: 5, mint }),
        }];
        assert_eq!(
            deposits_in(&read(&tx_emitting(std::slice::from_ref(&deposited)))),
            want
        );
        // not watched: no event, no deposit
        let unwatched =
            ParsedTx::from_json(&tx_emitting(std::slice::from_ref(&deposited))).unwrap();
        assert!(deposits_in(&unwatched).is_empty());
        // another event of the program is no deposit
        let revealed = emitted("KeyRevealed", &[0; 64]);
        assert!(deposits_in(&read(&tx_emitting(&[revealed]))).is_empty());
        // a short body, or the call made as an instruction to another
        // program, is no deposit
        let mut short = deposited.clone();
        short.data.truncate(short.data.len() - 1);
        assert!(deposits_in(&read(&tx_emitting(&[short]))).is_empty());
        // what an older build recorded still counts, saying nothing held
        let mut old = read(&tx_emitting(&[]));
        old.legacy_deposits = vec![crate::chain::parsed_tx::LegacyDeposit {
            listing: listing.to_string(),
            buyer: buyer.to_string(),
        }];
        assert_eq!(
            deposits_in(&old),
            vec![Deposit {
                held: None,
                ..want[0].clone()
            }]
        );
    }
}
