//! The deposits the escrow program holds for one of our listings, read
//! from the program's own state: `getProgramAccounts` over the program's
//! `Escrow` accounts filtered by the listing account and the `Deposited`
//! status. Not from memos: a deposit sent without a `buy` memo (or with
//! another X25519 key in one, an extra signer or account, without the
//! payment address) is the buyer's money held all the same, and its
//! escrow account says whom to seal the key to. Left unreleased it would
//! be refunded after the window and the seller's stake slashed.
//!
//! It only reads; [`super::pass`] records what it finds and releases it.

use crate::chain::{Chain, ChainError, Pubkey};
use crate::escrow::{discriminator, escrow_address, program_id, EscrowAccount, EscrowStatus};
use solana_rpc_client_api::config::{
    RpcAccountInfoConfig, RpcProgramAccountsConfig, UiAccountEncoding,
};
use solana_rpc_client_api::filter::{Memcmp, RpcFilterType};

/// Byte offset of `Escrow.listing` (after the 8-byte discriminator).
const LISTING_OFFSET: usize = 8;
/// Byte offset of `Escrow.status`: listing, buyer, X25519 key (32 each),
/// amount, deposited_at (8 each).
const STATUS_OFFSET: usize = 8 + 32 * 3 + 8 * 2;
/// `EscrowStatus::Deposited`'s Borsh tag.
const DEPOSITED: u8 = 0;

/// One deposit held for a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldDeposit {
    /// The escrow account (one per listing and buyer, ever).
    pub escrow: Pubkey,
    /// What it holds.
    pub account: EscrowAccount,
}

/// The filters selecting `listing_account`'s held escrows.
fn filters(listing_account: &Pubkey) -> Vec<RpcFilterType> {
    vec![
        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(
            0,
            discriminator("account", "Escrow").to_vec(),
        )),
        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(
            LISTING_OFFSET,
            listing_account.to_bytes().to_vec(),
        )),
        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(STATUS_OFFSET, vec![DEPOSITED])),
    ]
}

/// Keeps the accounts that decode as a `Deposited` escrow of
/// `listing_account` at the address the program derives for its buyer
/// (anything else the node returns is skipped with a warning).
pub fn held_of(
    listing_account: &Pubkey,
    accounts: impl IntoIterator<Item = (Pubkey, Pubkey, Vec<u8>)>,
) -> Vec<HeldDeposit> {
    let mut held = Vec::new();
    for (address, owner, data) in accounts {
        match EscrowAccount::decode(&owner, &data) {
            Ok(e)
                if e.listing == *listing_account
                    && e.status == EscrowStatus::Deposited
                    && escrow_address(listing_account, &e.buyer) == address =>
            {
                held.push(HeldDeposit {
                    escrow: address,
                    account: e,
                })
            }
            Ok(_) => tracing::warn!(%address, "not a held escrow of this listing; skipped"),
            Err(e) => tracing::warn!(%address, error = %e, "not an escrow account; skipped"),
        }
    }
    held.sort_by_key(|h| (h.account.deposited_at, h.escrow));
    held
}

/// Every deposit the program holds for `listing_account`, oldest first.
pub async fn held_deposits(
    chain: &Chain,
    listing_account: &Pubkey,
) -> Result<Vec<HeldDeposit>, ChainError> {
    let program = program_id();
    let config = RpcProgramAccountsConfig {
        filters: Some(filters(listing_account)),
        account_config: RpcAccountInfoConfig {
            encoding: Some(UiAccountEncoding::Base64),
            commitment: Some(chain.commitment()),
            ..RpcAccountInfoConfig::default()
        },
        with_context: None,
        sort_results: None,
    };
    let accounts = crate::chain::client::with_retry("getProgramAccounts", || {
        chain
            .rpc()
            .get_program_ui_accounts_with_config(&program, config.clone())
    })
    .await?;
    Ok(held_of(
        listing_account,
        accounts.into_iter().filter_map(|(address, a)| {
            let owner = a.owner.parse().ok()?;
            Some((address, owner, a.data.decode()?))
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Escrow` account's bytes as the program writes them.
    fn escrow_bytes(listing: &Pubkey, buyer: &Pubkey, status: u8) -> Vec<u8> {
        let mut d = discriminator("account", "Escrow").to_vec();
        d.extend_from_slice(listing.as_ref());
        d.extend_from_slice(buyer.as_ref());
        d.extend_from_slice(&[7; 32]);
        d.extend_from_slice(&250u64.to_le_bytes());
        d.extend_from_slice(&1_700_000_000i64.to_le_bytes());
        assert_eq!(d.len(), STATUS_OFFSET, "the filter's status offset");
        d.push(status);
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&[0, 254]);
        d
    }

    #[test]
    fn held_deposits_are_this_listings_deposited_escrows_at_their_address() {
        let (listing, other) = (Pubkey::new_unique(), Pubkey::new_unique());
        let (a, b) = (Pubkey::new_unique(), Pubkey::new_unique());
        let p = program_id();
        let at = |l: &Pubkey, buyer: &Pubkey| escrow_address(l, buyer);
        let held = held_of(
            &listing,
            [
                (at(&listing, &a), p, escrow_bytes(&listing, &a, DEPOSITED)),
                // released, another listing's, at the wrong address, wrong
                // owner, garbage: none is a held deposit of this listing
                (at(&listing, &b), p, escrow_bytes(&listing, &b, 1)),
                (at(&other, &b), p, escrow_bytes(&other, &b, DEPOSITED)),
                (
                    Pubkey::new_unique(),
                    p,
                    escrow_bytes(&listing, &b, DEPOSITED),
                ),
                (
                    at(&listing, &b),
                    Pubkey::new_unique(),
                    escrow_bytes(&listing, &b, DEPOSITED),
                ),
                (at(&listing, &b), p, vec![1, 2, 3]),
            ],
        );
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].escrow, at(&listing, &a));
        assert_eq!(held[0].account.buyer, a);
        assert_eq!(held[0].account.buyer_x25519, [7; 32]);
        // the filters select exactly those bytes
        let f = filters(&listing);
        assert_eq!(f.len(), 3);
    }
}
