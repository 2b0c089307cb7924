//! The seller's release lookup table (`marketplace listen --lookup-table`):
//! one address lookup table holding the accounts every release with the
//! listing's receipt names beside its signer, buyers and listing mint (the
//! compressed-token program's authorities, the compression programs, the
//! output trees, the discovery registry), so a v0 release transaction
//! names each in one byte and holds one more release than a legacy one.
//!
//! Owns choosing those accounts, creating the table once (its address kept
//! in the state before the create is sent, so a crash leaves no table the
//! daemon forgets), extending it, and handing it to the chain handle once
//! it is active. It never delays a release (a release compiles against
//! whatever the handle holds when it is built) and never moves money but
//! the table's rent, which stays the seller's (a table can be closed).

use crate::chain::lookup::{self, AddressLookupTableAccount, ADDRESSES_PER_EXTEND};
use crate::chain::{Chain, ChainError, Pubkey, Signer};
use crate::mint::light;
use crate::seller::{ListenDb, StateError};
use crate::wallet::Wallet;
use std::str::FromStr;

/// How often the daemon reads its table back from the chain.
pub const RECHECK: std::time::Duration = std::time::Duration::from_secs(300);

/// Why the table could not be kept up (the daemon logs it and releases
/// without the table: legacy transactions, fewer releases each).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The chain.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// The state database.
    #[error(transparent)]
    State(#[from] StateError),
}

/// The accounts a release with the listing's receipt names on every
/// listing: `mint_to_many`'s that do not depend on the mint, each output
/// tree, the discovery registry; not the seller, buyers, the mint, its
/// token pool, or a program a transaction calls (those stay in the
/// message).
pub fn release_accounts(me: &Pubkey, registry: &Pubkey) -> Vec<Pubkey> {
    let accounts_for = |mint: &Pubkey, tree: &Pubkey| {
        let ix = light::mint_to_many(me, me, mint, &[(Pubkey::new_unique(), 1)], tree, true);
        ix.accounts
            .into_iter()
            .filter(|a| !a.is_signer)
            .map(|a| a.pubkey)
            .filter(move |k| *k != ix.program_id)
            .collect::<Vec<_>>()
    };
    let (one, other) = (Pubkey::new_unique(), Pubkey::new_unique());
    let mut out = vec![*registry];
    // the state tree a release is built with, then each output queue it
    // may be sent to
    let trees = std::iter::once(&light::LOCALNET_STATE_TREE).chain(&light::LOCALNET_OUTPUT_TREES);
    for tree in trees {
        let theirs = accounts_for(&other, tree);
        for k in accounts_for(&one, tree) {
            if theirs.contains(&k) && !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// Brings the seller's table up to [`release_accounts`] (the discovery
/// registry in force: `BRAINCTL_REGISTRY` or the default) and hands it to
/// `chain` once active: read back from the state and the chain, created
/// when there is none (or the one recorded never landed, or was
/// deactivated), extended with what it lacks. With `recheck` false and a
/// complete table in the handle it makes no network call; the daemon
/// rechecks every [`RECHECK`] (a table closed meanwhile fails releases
/// until then; they are retried).
pub async fn keep_up(
    chain: &Chain,
    seller: &Wallet,
    db: &mut ListenDb,
    recheck: bool,
) -> Result<(), TableError> {
    let payer = seller.solana_keypair();
    let me = payer.pubkey();
    let slot = || crate::chain::retry::with_retry("getSlot", || chain.rpc().get_slot());
    let wanted = release_accounts(&me, &crate::chain::instructions::registry_from_env()?);
    let held = chain.lookup_tables();
    if !recheck && held.first().is_some_and(|t| wanted.iter().all(|k| t.addresses.contains(k))) {
        return Ok(());
    }
    let mut table = match db.lookup_table()? {
        Some(address) => match Pubkey::from_str(&address) {
            Ok(address) => lookup::read(chain, &address).await?,
            Err(_) => None,
        },
        None => None,
    };
    let missing: Vec<Pubkey> = wanted
        .iter()
        .filter(|k| !table.as_ref().is_some_and(|t| t.addresses.contains(k)))
        .copied()
        .collect();
    if let (Some(t), true) = (&table, missing.is_empty()) {
        chain.set_lookup_tables(vec![t.clone()]);
        return Ok(());
    }
    // no usable table: releases go legacy until one is
    chain.set_lookup_tables(Vec::new());
    let mut chunks = missing.chunks(ADDRESSES_PER_EXTEND);
    let address = match &table {
        Some(t) => t.key,
        None => {
            // a slot the cluster holds among its recent slot hashes
            let recent = slot().await?;
            let (address, ixs) =
                lookup::create(&me, recent, chunks.next().unwrap_or(&[]).to_vec());
            // kept before it is sent: a crash leaves no table unknown
            db.set_lookup_table(&address.to_string())?;
            chain.send(&ixs, &[&payer]).await?;
            tracing::info!(table = %address, "release lookup table created");
            address
        }
    };
    for chunk in chunks {
        chain
            .send(&[lookup::extend(&address, &me, chunk.to_vec())], &[&payer])
            .await?;
    }
    // what was added is usable from the slot after it landed
    let landed = slot().await?;
    while slot().await? <= landed {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    table = lookup::read(chain, &address).await?;
    let table: AddressLookupTableAccount = table.ok_or_else(|| {
        ChainError::Config(format!("the lookup table {address} is not on chain"))
    })?;
    tracing::info!(table = %address, addresses = table.addresses.len(), "release lookup table in use");
    chain.set_lookup_tables(vec![table]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_table_holds_what_every_listing_shares_and_nothing_else() {
        let (me, registry) = (Pubkey::new_unique(), Pubkey::new_unique());
        let accounts = release_accounts(&me, &registry);
        assert!(accounts.contains(&registry));
        for tree in light::LOCALNET_OUTPUT_TREES.iter() {
            assert!(accounts.contains(tree), "{tree}");
        }
        assert!(!accounts.contains(&me));
        assert!(!accounts.contains(&light::COMPRESSED_TOKEN));
        // distinct, and far below a table's 256
        let mut sorted = accounts.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), accounts.len());
        assert!(accounts.len() < 64, "{}", accounts.len());
    }
}
