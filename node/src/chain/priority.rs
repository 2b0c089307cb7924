//! The compute budget of every transaction the node signs, as Solana's
//! own tools set it: a compute-unit limit from the transaction's
//! simulation with a margin (simulated once per shape of transaction and
//! reused), and a compute-unit price from `getRecentPrioritizationFees`
//! over the accounts it writes (a percentile of the recent slots), capped
//! so the priority fee never exceeds what the user allows a transaction
//! ([`PriorityPolicy::max_lamports`]); a fixed price (`--priority-fee`)
//! overrides the estimate, never the cap.
//!
//! Pure functions here; [`super::Chain`] reads the chain and applies them
//! before it signs. It never changes what a transaction does: only its
//! `SetComputeUnitLimit` (kept where the discovery reference carries it)
//! and `SetComputeUnitPrice` instructions.

use super::ChainError;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;

/// The compute budget program.
pub const COMPUTE_BUDGET: Pubkey =
    solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111");
/// The most compute units a transaction may ask for.
pub const MAX_CU_LIMIT: u32 = 1_400_000;
/// The limit when a simulation cannot say (it failed): the marketplace's
/// default.
pub const FALLBACK_CU_LIMIT: u32 = super::instructions::DEFAULT_CU_LIMIT;
/// Most accounts `getRecentPrioritizationFees` takes.
const MAX_FEE_ACCOUNTS: usize = 128;
/// A packet (bytes a transaction may take on the wire).
pub const PACKET: usize = 1232;

/// Env: a fixed price (micro-lamports per compute unit).
pub const FIXED_ENV: &str = "BRAINCTL_PRIORITY_FEE";
/// Env: the most priority fee a transaction may pay (lamports).
pub const CAP_ENV: &str = "BRAINCTL_PRIORITY_FEE_CAP_LAMPORTS";
/// Env: the percentile of recent slots' fees the estimate takes.
pub const PERCENTILE_ENV: &str = "BRAINCTL_PRIORITY_FEE_PERCENTILE";

/// How the price is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityPolicy {
    /// A fixed price (micro-lamports per compute unit) instead of the
    /// estimate; still capped.
    pub fixed_micro_lamports: Option<u64>,
    /// The percentile (0–100) of the recent slots' fees for the accounts
    /// written.
    pub percentile: u8,
    /// How many of the most recent slots the estimate reads (the node
    /// answers for 150).
    pub window_slots: usize,
    /// The most priority fee one transaction may pay, in lamports (price ×
    /// limit / 1,000,000).
    pub max_lamports: u64,
}

impl Default for PriorityPolicy {
    fn default() -> Self {
        PriorityPolicy {
            fixed_micro_lamports: None,
            percentile: 75,
            window_slots: 50,
            max_lamports: 10_000,
        }
    }
}

impl PriorityPolicy {
    /// The policy from `BRAINCTL_PRIORITY_FEE*` settings read by `env`
    /// (defaults otherwise).
    pub fn from(env: impl Fn(&str) -> Option<String>) -> Result<PriorityPolicy, ChainError> {
        let num = |k: &str| -> Result<Option<u64>, ChainError> {
            env(k)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| ChainError::Config(format!("{k}={v} is not a whole number")))
                })
                .transpose()
        };
        let mut p = PriorityPolicy {
            fixed_micro_lamports: num(FIXED_ENV)?,
            ..Default::default()
        };
        if let Some(cap) = num(CAP_ENV)? {
            p.max_lamports = cap;
        }
        if let Some(pct) = num(PERCENTILE_ENV)? {
            p.percentile = u8::try_from(pct)
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| {
                    ChainError::Config(format!(
                        "{PERCENTILE_ENV}={pct} is not a percentile (0-100)"
                    ))
                })?;
        }
        Ok(p)
    }

    /// From the process environment.
    pub fn from_env() -> Result<PriorityPolicy, ChainError> {
        Self::from(|k| std::env::var(k).ok())
    }

    /// The most price a transaction of `limit` units may carry.
    pub fn max_price(&self, limit: u32) -> u64 {
        self.max_lamports.saturating_mul(1_000_000) / u64::from(limit.max(1))
    }

    /// The price for a transaction of `limit` units, given the recent
    /// `(slot, micro-lamports)` fees of what it writes: the fixed price, or
    /// the percentile of the newest [`Self::window_slots`] slots
    /// (nearest rank); at most [`Self::max_price`].
    pub fn price(&self, recent: &[(u64, u64)], limit: u32) -> u64 {
        let estimate = match self.fixed_micro_lamports {
            Some(fixed) => fixed,
            None => {
                let mut newest: Vec<(u64, u64)> = recent.to_vec();
                newest.sort_unstable_by_key(|&(slot, _)| std::cmp::Reverse(slot));
                newest.truncate(self.window_slots.max(1));
                let mut fees: Vec<u64> = newest.into_iter().map(|(_, f)| f).collect();
                fees.sort_unstable();
                match fees.len() {
                    0 => 0,
                    n => {
                        let rank = (usize::from(self.percentile) * n).div_ceil(100);
                        fees[rank.clamp(1, n) - 1]
                    }
                }
            }
        };
        estimate.min(self.max_price(limit))
    }
}

/// The limit for a transaction that simulated at `consumed` units: 15%
/// and 1,000 units more, within [`MAX_CU_LIMIT`].
pub fn limit_for(consumed: u64) -> u32 {
    let with_margin = consumed + consumed * 15 / 100 + 1_000;
    u32::try_from(with_margin)
        .unwrap_or(MAX_CU_LIMIT)
        .min(MAX_CU_LIMIT)
}

fn is_budget(ix: &Instruction, tag: u8) -> bool {
    ix.program_id == COMPUTE_BUDGET && ix.data.first() == Some(&tag)
}

/// The compute-unit limit a `SetComputeUnitLimit` among `ixs` sets.
pub fn limit_set(ixs: &[Instruction]) -> Option<u32> {
    ixs.iter()
        .find(|ix| is_budget(ix, 2))
        .and_then(|ix| ix.data.get(1..5))
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
}

/// `ixs` with a compute-unit limit of `limit` (the existing
/// `SetComputeUnitLimit` rewritten in place, keeping the accounts the
/// discovery reference appends, else one added) and a price of `price`
/// (any existing `SetComputeUnitPrice` replaced; none at 0).
pub fn with_budget(ixs: &[Instruction], limit: u32, price: u64) -> Vec<Instruction> {
    use solana_compute_budget_interface::ComputeBudgetInstruction as Cb;
    let mut out: Vec<Instruction> = ixs.iter().filter(|ix| !is_budget(ix, 3)).cloned().collect();
    let set_limit = Cb::set_compute_unit_limit(limit).data;
    match out.iter_mut().find(|ix| is_budget(ix, 2)) {
        Some(ix) => ix.data = set_limit,
        None => out.push(Cb::set_compute_unit_limit(limit)),
    }
    if price > 0 {
        out.push(set_price(price));
    }
    out
}

/// `SetComputeUnitPrice` of `micro_lamports` per unit.
pub fn set_price(micro_lamports: u64) -> Instruction {
    solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_price(
        micro_lamports,
    )
}

/// The accounts `ixs` write that no signer of theirs holds (the ones
/// others contend for: a tree, a pool, a listing, a payee; a signer's own
/// account is rarely anyone else's), sorted, as many as the fee query
/// takes. Sends that write the same shared accounts share one reading.
pub fn written(ixs: &[Instruction]) -> Vec<Pubkey> {
    let mut out: Vec<Pubkey> = Vec::new();
    for meta in ixs.iter().flat_map(|ix| &ix.accounts) {
        if meta.is_writable && !meta.is_signer && !out.contains(&meta.pubkey) {
            out.push(meta.pubkey);
        }
    }
    out.sort_unstable();
    out.truncate(MAX_FEE_ACCOUNTS);
    out
}

/// What identifies transactions of one shape for the simulated limit:
/// each instruction's program, the accounts no signer holds, and its data
/// length (the same instruction on another account, e.g. a compressed
/// output to another tree, may take other work; who signs does not
/// change it), so transfers from many payers to one payee simulate once.
pub fn shape(ixs: &[Instruction]) -> Vec<(Pubkey, Vec<Pubkey>, usize)> {
    ixs.iter()
        .filter(|ix| ix.program_id != COMPUTE_BUDGET)
        .map(|ix| {
            let accounts = ix
                .accounts
                .iter()
                .filter(|a| !a.is_signer)
                .map(|a| a.pubkey)
                .collect();
            (ix.program_id, accounts, ix.data.len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_a_caller_set_is_read_back() {
        let registry = Pubkey::new_unique();
        let ixs = vec![crate::chain::instructions::discovery(&registry, 321_000)];
        assert_eq!(limit_set(&ixs), Some(321_000));
        assert_eq!(limit_set(&with_budget(&ixs, 7, 5)), Some(7));
        assert_eq!(limit_set(&[]), None);
    }

    #[test]
    fn the_price_is_the_percentile_of_the_newest_slots_and_stops_at_the_cap() {
        let p = PriorityPolicy::default();
        // 100 slots: the newest 50 at 2,000, the older at 9,000 (outside the window)
        let recent: Vec<(u64, u64)> = (0..100)
            .map(|s| (s, if s >= 50 { 2_000 } else { 9_000 }))
            .collect();
        assert_eq!(p.price(&recent, 100_000), 2_000);
        // the newest slots quiet but a fifth: p75 is 0
        let quiet: Vec<(u64, u64)> = (0..50)
            .map(|s| (s, if s % 5 == 0 { 5_000 } else { 0 }))
            .collect();
        assert_eq!(p.price(&quiet, 100_000), 0);
        assert_eq!(
            PriorityPolicy {
                percentile: 100,
                ..p
            }
            .price(&quiet, 100_000),
            5_000
        );
        // the cap: 10,000 lamports at 100,000 units is 100,000 micro-lamports a unit
        let hot: Vec<(u64, u64)> = (0..50).map(|s| (s, 5_000_000)).collect();
        assert_eq!(p.max_price(100_000), 100_000);
        assert_eq!(p.price(&hot, 100_000), 100_000);
        assert_eq!(p.price(&[], 100_000), 0);
        // a fixed price is taken as is, under the same cap
        let fixed = PriorityPolicy {
            fixed_micro_lamports: Some(7),
            ..p
        };
        assert_eq!(fixed.price(&hot, 100_000), 7);
        let over = PriorityPolicy {
            fixed_micro_lamports: Some(1_000_000),
            ..p
        };
        assert_eq!(over.price(&[], 100_000), 100_000);
    }

    #[test]
    fn settings_are_read_and_bad_ones_named() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            PriorityPolicy::from(env(&[])).unwrap(),
            PriorityPolicy::default()
        );
        let p = PriorityPolicy::from(env(&[
            (FIXED_ENV, "42"),
            (CAP_ENV, "500"),
            (PERCENTILE_ENV, "50"),
        ]))
        .unwrap();
        assert_eq!(
            (p.fixed_micro_lamports, p.max_lamports, p.percentile),
            (Some(42), 500, 50)
        );
        let bad = PriorityPolicy::from(env(&[(PERCENTILE_ENV, "101")])).unwrap_err();
        assert!(bad.to_string().contains(PERCENTILE_ENV), "{bad}");
        let bad = PriorityPolicy::from(env(&[(CAP_ENV, "lots")])).unwrap_err();
        assert!(bad.to_string().contains(CAP_ENV), "{bad}");
    }

    #[test]
    fn the_budget_rewrites_the_discovery_limit_in_place_and_sets_one_price() {
        let (payer, registry) = (Pubkey::new_unique(), Pubkey::new_unique());
        let memo = super::super::instructions::memo("hi", &payer);
        let discovery = super::super::instructions::discovery(&registry, 200_000);
        let old_price =
            solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_price(9);
        let ixs = with_budget(&[memo.clone(), discovery, old_price], 31_000, 1_234);
        assert_eq!(ixs.len(), 3);
        assert_eq!(ixs[0], memo);
        assert!(
            is_budget(&ixs[1], 2) && ixs[1].accounts.len() == 1,
            "the registry stays"
        );
        assert_eq!(ixs[1].data[1..5], 31_000u32.to_le_bytes());
        assert!(is_budget(&ixs[2], 3));
        assert_eq!(ixs[2].data[1..9], 1_234u64.to_le_bytes());
        // none to rewrite: one added; no price at 0
        let bare = with_budget(std::slice::from_ref(&memo), 5_000, 0);
        assert_eq!(bare.len(), 2);
        assert!(is_budget(&bare[1], 2));
        assert_eq!(limit_for(100_000), 116_000);
        assert_eq!(limit_for(2_000_000), MAX_CU_LIMIT);
        assert!(
            written(&[memo]).is_empty(),
            "the payer's own account is not asked about"
        );
        let to = Pubkey::new_unique();
        let pay = super::super::instructions::transfer(&payer, &to, 1);
        assert_eq!(written(std::slice::from_ref(&pay)), vec![to]);
        let other = super::super::instructions::transfer(&Pubkey::new_unique(), &to, 1);
        assert_eq!(
            shape(&[pay]),
            shape(&[other]),
            "who pays does not change the shape"
        );
    }
}
