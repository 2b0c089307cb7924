//! The escrows the program holds for one of our listings, read from the
//! program's own state: `getProgramAccounts` over the program's
//! `SealedEscrow` accounts filtered by the listing account and a status
//! (`Deposited`: to reveal or decline; `Revealed`: to claim once the
//! dispute window has passed). Not from memos: a deposit sent without a `buy` memo (or with
//! another X25519 key in one, an extra signer or account, without the
//! payment address) is the buyer's money held all the same, and its
//! escrow account says whom to reveal the key to. Left unrevealed it
//! would be refunded after the window and the seller's stake slashed.
//!
//! It only reads; [`super::pass`] records what it finds and releases it.

use crate::chain::{Chain, ChainError, Pubkey};
use crate::escrow::{
    discriminator, escrow_address, program_id, status_tag, EscrowAccount, EscrowStatus,
    ESCROW_LISTING_OFFSET as LISTING_OFFSET, ESCROW_STATUS_OFFSET as STATUS_OFFSET,
};
use solana_rpc_client_api::config::{
    RpcAccountInfoConfig, RpcProgramAccountsConfig, UiAccountEncoding,
};
use solana_rpc_client_api::filter::{Memcmp, RpcFilterType};

/// One deposit held for a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldDeposit {
    /// The escrow account (one per listing and buyer, ever).
    pub escrow: Pubkey,
    /// What it holds.
    pub account: EscrowAccount,
}

/// The filters selecting `listing_account`'s escrows in `status`.
fn filters(listing_account: &Pubkey, status: EscrowStatus) -> Vec<RpcFilterType> {
    vec![
        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(
            0,
            discriminator("account", "SealedEscrow").to_vec(),
        )),
        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(
            LISTING_OFFSET,
            listing_account.to_bytes().to_vec(),
        )),
        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(
            STATUS_OFFSET,
            vec![status_tag(status)],
        )),
    ]
}

/// Keeps the accounts that decode as an escrow of `listing_account` in
/// `status` at the address the program derives for its buyer (anything
/// else the node returns is skipped with a warning).
pub fn held_of(
    listing_account: &Pubkey,
    status: EscrowStatus,
    accounts: impl IntoIterator<Item = (Pubkey, Pubkey, Vec<u8>)>,
) -> Vec<HeldDeposit> {
    let mut held = Vec::new();
    for (address, owner, data) in accounts {
        match EscrowAccount::decode(&owner, &data) {
            Ok(e)
                if e.listing == *listing_account
                    && e.status == status
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

/// Every escrow the program holds for `listing_account` in `status`,
/// oldest first.
pub async fn held_deposits(
    chain: &Chain,
    listing_account: &Pubkey,
    status: EscrowStatus,
) -> Result<Vec<HeldDeposit>, ChainError> {
    let program = program_id();
    let config = RpcProgramAccountsConfig {
        filters: Some(filters(listing_account, status)),
        account_config: RpcAccountInfoConfig {
            encoding: Some(UiAccountEncoding::Base64),
            commitment: Some(chain.commitment()),
            ..RpcAccountInfoConfig::default()
        },
        with_context: None,
        sort_results: None,
    };
    let accounts = crate::chain::retry::with_retry("getProgramAccounts", || {
        chain
            .rpc()
            .get_program_ui_accounts_with_config(&program, config.clone())
    })
    .await?;
    Ok(held_of(
        listing_account,
        status,
        accounts.into_iter().filter_map(|(address, a)| {
            let owner = a.owner.parse().ok()?;
            Some((address, owner, a.data.decode()?))
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPOSITED: u8 = 0;

    /// A `SealedEscrow` account's bytes as the program writes them.
    fn escrow_bytes(listing: &Pubkey, buyer: &Pubkey, status: u8) -> Vec<u8> {
        let mut d = discriminator("account", "SealedEscrow").to_vec();
        d.extend_from_slice(listing.as_ref());
        d.extend_from_slice(buyer.as_ref());
        d.extend_from_slice(&[7; 32]);
        d.extend_from_slice(&[8; 32]);
        d.extend_from_slice(&250u64.to_le_bytes());
        d.extend_from_slice(&1_700_000_000i64.to_le_bytes());
        assert_eq!(d.len(), STATUS_OFFSET, "the filter's status offset");
        d.push(status);
        d.extend_from_slice(&[0; 32]);
        d.extend_from_slice(&0i64.to_le_bytes());
        d.push(254);
        d.extend_from_slice(&5_000u64.to_le_bytes()); // share
        assert_eq!(d.len(), crate::escrow::ESCROW_ACCOUNT_SPACE);
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
            EscrowStatus::Deposited,
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
        let f = filters(&listing, EscrowStatus::Deposited);
        assert_eq!(f.len(), 3);
    }
}
