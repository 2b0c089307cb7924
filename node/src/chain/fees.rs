//! Protocol fees (PROTOCOL.md §8): only on mainnet-beta (or where an
//! operator forces them, e.g. a localnet under test), each a System
//! transfer to the treasury, atomic with its memo. The settle fee is the
//! reference's `split_with_fee` of the price the buyer pays in all, at the
//! deployment's rate ([`SETTLE_FEE_BPS`]): the seller gets the rest.
//!
//! Owns the amounts, the env overrides and the kill switch. Pure: reads
//! the environment through a closure so tests can pass their own.

use super::ChainError;
use super::ClusterKind;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

/// Lamports per transaction signature (the priority fee, set per
/// transaction by `chain::priority`, comes on top).
pub const LAMPORTS_PER_SIGNATURE: u64 = 5_000;

/// Default treasury.
pub const DEFAULT_TREASURY: &str = "AYyx94RdL4LpBozqZahQ37Q3ziKEoiGZnypp8h9WwW4D";
/// Default op fee (pin and every negotiation memo).
pub const DEFAULT_OP_FEE_LAMPORTS: u64 = 500_000;
/// Default mint fee.
pub const DEFAULT_MINT_FEE_LAMPORTS: u64 = 2_500_000;
/// Fee cap in basis points.
pub const MAX_FEE_BPS: u64 = 1_000;

/// The deployment's settle fee rate (the reference's hard-coded
/// `MARKETPLACE_FEE_BPS`): the same for every listing; a manifest's
/// `fee_bps` informs, it never sets the rate.
pub const SETTLE_FEE_BPS: u64 = 250;

/// ceil(price × fee_bps / 10,000) (PROTOCOL.md §8): the protocol fee on a
/// settled price, before the cap at the price ([`split_with_fee`]).
pub fn settle_fee(price_lamports: u64, fee_bps: u64) -> u64 {
    (price_lamports as u128 * fee_bps as u128).div_ceil(10_000) as u64
}

/// The reference's `split_with_fee`: `price` (what the buyer pays in all)
/// as (seller, treasury), the fee rounded up and capped at the price
/// (1,000,000 at 250 bps: 975,000 + 25,000; 1: 0 + 1).
pub fn split_with_fee(price_lamports: u64, fee_bps: u64) -> (u64, u64) {
    let fee = settle_fee(price_lamports, fee_bps).min(price_lamports);
    (price_lamports - fee, fee)
}

/// What kind of action a fee is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeeOp {
    /// Pin and every negotiation memo.
    Op,
    /// Minting.
    Mint,
}

/// The fee rules in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeePolicy {
    /// Whether fees apply at all (mainnet-beta, or forced with
    /// `BRAINCTL_PROTOCOL_FEE_FORCE=1`; never with the kill switch).
    pub enabled: bool,
    /// Where fees go.
    pub treasury: Pubkey,
    /// Op fee.
    pub op_fee: u64,
    /// Mint fee.
    pub mint_fee: u64,
}

impl FeePolicy {
    /// The policy for `cluster`, reading `BRAINCTL_*` settings via `env`.
    pub fn for_cluster(
        cluster: ClusterKind,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<FeePolicy, ChainError> {
        let num = |k: &str, d: u64| -> Result<u64, ChainError> {
            env(k).map_or(Ok(d), |v| {
                v.trim().parse().map_err(|_| {
                    ChainError::Config(format!("{k}={v} is not a whole number of lamports"))
                })
            })
        };
        let treasury_s = env("BRAINCTL_TREASURY_PUBKEY").unwrap_or_else(|| DEFAULT_TREASURY.into());
        let treasury = Pubkey::from_str(treasury_s.trim()).map_err(|_| {
            ChainError::Config(format!(
                "BRAINCTL_TREASURY_PUBKEY={treasury_s} is not a base58 pubkey"
            ))
        })?;
        let disabled = env("BRAINCTL_PROTOCOL_FEE_DISABLE").is_some_and(|v| v.trim() == "1");
        let forced = env("BRAINCTL_PROTOCOL_FEE_FORCE").is_some_and(|v| v.trim() == "1");
        Ok(FeePolicy {
            enabled: (cluster == ClusterKind::MainnetBeta || forced) && !disabled,
            treasury,
            op_fee: num("BRAINCTL_OP_FEE_LAMPORTS", DEFAULT_OP_FEE_LAMPORTS)?,
            mint_fee: num("BRAINCTL_MINT_FEE_LAMPORTS", DEFAULT_MINT_FEE_LAMPORTS)?,
        })
    }

    /// From the process environment.
    pub fn from_env(cluster: ClusterKind) -> Result<FeePolicy, ChainError> {
        Self::for_cluster(cluster, |k| std::env::var(k).ok())
    }

    /// The fee transfer for `op` paid by `payer`, if fees apply.
    pub fn fee_instruction(&self, op: FeeOp, payer: &Pubkey) -> Option<Instruction> {
        let amount = match op {
            FeeOp::Op => self.op_fee,
            FeeOp::Mint => self.mint_fee,
        };
        (self.enabled && amount > 0)
            .then(|| super::instructions::transfer(payer, &self.treasury, amount))
    }

    /// A price paid in all as (seller, treasury): [`split_with_fee`] at
    /// [`SETTLE_FEE_BPS`] where fees apply, all to the seller elsewhere.
    pub fn split(&self, price_lamports: u64) -> (u64, u64) {
        if self.enabled {
            split_with_fee(price_lamports, SETTLE_FEE_BPS)
        } else {
            (price_lamports, 0)
        }
    }

    /// The settle fee terms the settlement rules check: (treasury, rate)
    /// where fees apply.
    pub fn settle_terms(&self) -> Option<(String, u64)> {
        self.enabled
            .then(|| (self.treasury.to_string(), SETTLE_FEE_BPS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn fees_only_on_mainnet() {
        let payer = Pubkey::new_unique();
        for kind in [
            ClusterKind::Devnet,
            ClusterKind::Testnet,
            ClusterKind::Local,
        ] {
            let p = FeePolicy::for_cluster(kind, env_none).unwrap();
            assert!(p.fee_instruction(FeeOp::Op, &payer).is_none(), "{kind:?}");
            assert_eq!(p.split(1_000_000), (1_000_000, 0));
            assert_eq!(p.settle_terms(), None);
        }
        let p = FeePolicy::for_cluster(ClusterKind::MainnetBeta, env_none).unwrap();
        let ix = p.fee_instruction(FeeOp::Op, &payer).unwrap();
        assert_eq!(ix.program_id, solana_system_interface::program::ID);
        assert_eq!(ix.accounts[1].pubkey.to_string(), DEFAULT_TREASURY);
        assert_eq!(&ix.data[4..12], &DEFAULT_OP_FEE_LAMPORTS.to_le_bytes());
        let mint = p.fee_instruction(FeeOp::Mint, &payer).unwrap();
        assert_eq!(&mint.data[4..12], &DEFAULT_MINT_FEE_LAMPORTS.to_le_bytes());
        assert_eq!(p.split(1_000_000), (975_000, 25_000));
        assert_eq!(p.split(1_000_001), (975_000, 25_001), "rounds up");
        assert_eq!(p.split(1), (0, 1), "capped at the price");
        assert_eq!(
            p.settle_terms(),
            Some((DEFAULT_TREASURY.to_string(), SETTLE_FEE_BPS))
        );
    }

    #[test]
    fn fees_can_be_forced_on_a_localnet_and_the_kill_switch_wins() {
        let forced = |k: &str| (k == "BRAINCTL_PROTOCOL_FEE_FORCE").then(|| "1".to_string());
        let p = FeePolicy::for_cluster(ClusterKind::Local, forced).unwrap();
        assert!(p.enabled);
        assert_eq!(p.split(100_000_000), (97_500_000, 2_500_000));
        let both = |k: &str| {
            matches!(
                k,
                "BRAINCTL_PROTOCOL_FEE_FORCE" | "BRAINCTL_PROTOCOL_FEE_DISABLE"
            )
            .then(|| "1".to_string())
        };
        assert!(
            !FeePolicy::for_cluster(ClusterKind::Local, both)
                .unwrap()
                .enabled
        );
    }

    #[test]
    fn env_overrides_and_kill_switch() {
        let env = |k: &str| match k {
            "BRAINCTL_OP_FEE_LAMPORTS" => Some("7".to_string()),
            "BRAINCTL_TREASURY_PUBKEY" => Some("11111111111111111111111111111111".to_string()),
            _ => None,
        };
        let p = FeePolicy::for_cluster(ClusterKind::MainnetBeta, env).unwrap();
        assert_eq!(p.op_fee, 7);
        assert_eq!(p.treasury, Pubkey::default());
        let off = |k: &str| (k == "BRAINCTL_PROTOCOL_FEE_DISABLE").then(|| "1".to_string());
        assert!(
            !FeePolicy::for_cluster(ClusterKind::MainnetBeta, off)
                .unwrap()
                .enabled
        );
        let bad = |k: &str| (k == "BRAINCTL_MINT_FEE_LAMPORTS").then(|| "lots".to_string());
        assert!(FeePolicy::for_cluster(ClusterKind::MainnetBeta, bad).is_err());
    }
}
