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
/// `chain` once usable, without ever waiting for it: each call does the
/// next step and returns. No table (none recorded, the one recorded never
/// landed, or it was deactivated): create it. Some address missing:
/// extend it. Complete: handed to `chain` once a finalized read holds it
/// all (a leader loads tables from its root bank and drops a transaction
/// naming one it does not hold there); until then releases go legacy.
/// With `recheck` false and a complete table in the handle it makes no
/// network call; the daemon calls it every round while no table is in
/// use, then every [`RECHECK`] (a table closed meanwhile fails releases
/// until then; they are retried).
pub async fn keep_up(
    chain: &Chain,
    seller: &Wallet,
    db: &mut ListenDb,
    recheck: bool,
) -> Result<(), TableError> {
    use solana_commitment_config::CommitmentConfig;
    // the handle only ever holds a table found complete and finalized
    if !recheck && !chain.lookup_tables().is_empty() {
        return Ok(());
    }
    let payer = seller.solana_keypair();
    let me = payer.pubkey();
    let wanted = release_accounts(&me, &crate::chain::instructions::registry_from_env()?);
    let complete = |t: &AddressLookupTableAccount| wanted.iter().all(|k| t.addresses.contains(k));
    let recorded = db.lookup_table()?.and_then(|a| Pubkey::from_str(&a).ok());
    let table = match recorded {
        Some(address) => lookup::read(chain, &address, chain.commitment()).await?,
        None => None,
    };
    let Some(table) = table else {
        // no usable table: releases go legacy until one is
        chain.set_lookup_tables(Vec::new());
        // a slot the cluster holds among its recent slot hashes (the bank
        // running the create holds only older ones: a finalized slot, as
        // Solana's own CLI takes)
        let recent = crate::chain::retry::with_retry("getSlot", || {
            chain
                .rpc()
                .get_slot_with_commitment(CommitmentConfig::finalized())
        })
        .await?;
        let first = wanted.iter().take(ADDRESSES_PER_EXTEND).copied().collect();
        let (address, ixs) = lookup::create(&me, recent, first);
        // kept before it is sent: a crash leaves no table unknown
        db.set_lookup_table(&address.to_string())?;
        chain.send(&ixs, &[&payer]).await?;
        tracing::info!(table = %address, "release lookup table created");
        return Ok(());
    };
    let missing: Vec<Pubkey> = wanted
        .iter()
        .filter(|k| !table.addresses.contains(k))
        .copied()
        .collect();
    if !missing.is_empty() {
        for chunk in missing.chunks(ADDRESSES_PER_EXTEND) {
            let ix = lookup::extend(&table.key, &me, chunk.to_vec());
            chain.send(&[ix], &[&payer]).await?;
        }
        tracing::info!(table = %table.key, added = missing.len(), "release lookup table extended");
        return Ok(());
    }
    match lookup::read(chain, &table.key, CommitmentConfig::finalized()).await? {
        Some(rooted) if complete(&rooted) => {
            if chain
                .lookup_tables()
                .first()
                .is_none_or(|t| t.key != rooted.key)
            {
                tracing::info!(table = %rooted.key, addresses = rooted.addresses.len(), "release lookup table in use");
            }
            chain.set_lookup_tables(vec![rooted]);
        }
        // not finalized yet: legacy meanwhile
        _ => chain.set_lookup_tables(Vec::new()),
    }
    Ok(())
}

/// [`keep_up`] every half second until the table is in use in `chain`
/// (made, complete and finalized) or `within` passed: whether it is.
/// For a caller that must start with the table (a benchmark, a test);
/// the daemon never waits for it.
pub async fn until_in_use(
    chain: &Chain,
    seller: &Wallet,
    db: &mut ListenDb,
    within: std::time::Duration,
) -> Result<bool, TableError> {
    let started = std::time::Instant::now();
    loop {
        keep_up(chain, seller, db, true).await?;
        if !chain.lookup_tables().is_empty() {
            return Ok(true);
        }
        if started.elapsed() >= within {
            return Ok(false);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
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
