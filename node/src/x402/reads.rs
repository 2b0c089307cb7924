//! The chain reads an x402 request needs, cached briefly so that unpaid
//! requests cost the node no RPC call each: the cluster's clock (read at
//! most every [`CLOCK_TTL`], advanced by the local clock between reads)
//! and mints as a payment in them is screened ([`crate::chain::token`]'s
//! refusals, read again after [`MINT_TTL`], so a transfer fee, a pause
//! or a hook added later is seen within seconds).
//!
//! Owns the caches (bounded). Never decides what a read means for a sale.

use crate::chain::token::{MintRefusal, TokenMint};
use crate::chain::{Chain, ChainError};
use solana_sdk::pubkey::Pubkey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the cluster's clock is taken from the last read.
pub const CLOCK_TTL: Duration = Duration::from_secs(5);
/// How long a mint's screen holds.
pub const MINT_TTL: Duration = Duration::from_secs(10);
/// Mints cached at most (more are read each time).
const MAX_MINTS: usize = 1_024;

type MintRead = Result<TokenMint, Arc<MintRefusal>>;

/// The cached reads of one node (of one cluster).
#[derive(Default)]
pub struct Reads {
    clock: Mutex<Option<(i64, Instant)>>,
    mints: Mutex<HashMap<Pubkey, (MintRead, Instant)>>,
    /// Token accounts that require a memo before each incoming transfer.
    memo_required: Mutex<HashMap<Pubkey, (bool, Instant)>>,
}

impl Reads {
    /// The cluster's unix time now, as of a read at most [`CLOCK_TTL`] old.
    pub async fn now(&self, chain: &Chain) -> Result<i64, ChainError> {
        let cached = *self.clock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, read)) = cached.filter(|(_, read)| read.elapsed() < CLOCK_TTL) {
            return Ok(at + read.elapsed().as_secs() as i64);
        }
        let at = chain.cluster_time().await?;
        *self.clock.lock().unwrap_or_else(|p| p.into_inner()) = Some((at, Instant::now()));
        Ok(at)
    }

    /// Whether the token account `account` requires a memo before every
    /// incoming transfer (Token-2022's `MemoTransfer`: an x402 payment's
    /// memo comes after its transfer, so it would fail), as of a read at
    /// most [`MINT_TTL`] old. A missing account requires none.
    pub async fn requires_memo(&self, chain: &Chain, account: &Pubkey) -> Result<bool, ChainError> {
        if let Some((required, at)) = self
            .memo_required
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(account)
        {
            if at.elapsed() < MINT_TTL {
                return Ok(*required);
            }
        }
        use spl_token_2022_interface::extension::{
            memo_transfer::MemoTransfer, BaseStateWithExtensions, StateWithExtensions,
        };
        let data = crate::chain::retry::with_retry("getAccountInfo", || async {
            chain
                .rpc()
                .get_account_with_commitment(account, chain.commitment())
                .await
                .map(|r| r.value)
        })
        .await?
        .map(|a| a.data)
        .unwrap_or_default();
        let required =
            StateWithExtensions::<spl_token_2022_interface::state::Account>::unpack(&data)
                .ok()
                .and_then(|s| {
                    s.get_extension::<MemoTransfer>()
                        .ok()
                        .map(|m| bool::from(m.require_incoming_transfer_memos))
                })
                .unwrap_or(false);
        let mut cache = self.memo_required.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_MINTS {
            cache.retain(|_, (_, at)| at.elapsed() < MINT_TTL);
        }
        if cache.len() < MAX_MINTS {
            cache.insert(*account, (required, Instant::now()));
        }
        Ok(required)
    }

    /// `address` screened as a mint a new payment may be made in, as of a
    /// read at most [`MINT_TTL`] old (a failed read is not cached).
    pub async fn mint(&self, chain: &Chain, address: &Pubkey) -> MintRead {
        if let Some((read, at)) = self
            .mints
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
        {
            if at.elapsed() < MINT_TTL {
                return read.clone();
            }
        }
        let read = crate::chain::token::read_mint(chain, address)
            .await
            .map_err(Arc::new);
        if !matches!(&read, Err(e) if matches!(**e, MintRefusal::Chain(_))) {
            let mut mints = self.mints.lock().unwrap_or_else(|p| p.into_inner());
            if mints.len() >= MAX_MINTS {
                mints.retain(|_, (_, at)| at.elapsed() < MINT_TTL);
            }
            if mints.len() < MAX_MINTS {
                mints.insert(*address, (read.clone(), Instant::now()));
            }
        }
        read
    }
}
