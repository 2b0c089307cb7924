//! Protocol fees (PROTOCOL.md §8): only on mainnet-beta, each a System
//! transfer to the treasury, atomic with its memo.
//!
//! Owns the amounts, the env overrides and the kill switch. Pure: reads
//! the environment through a closure so tests can pass their own.

use super::ChainError;
use super::ClusterKind;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

/// Lamports per transaction signature (no priority fee is set).
pub const LAMPORTS_PER_SIGNATURE: u64 = 5_000;

/// Default treasury.
pub const DEFAULT_TREASURY: &str = "AYyx94RdL4LpBozqZahQ37Q3ziKEoiGZnypp8h9WwW4D";
/// Default op fee (pin and every negotiation memo).
pub const DEFAULT_OP_FEE_LAMPORTS: u64 = 500_000;
/// Default mint fee.
pub const DEFAULT_MINT_FEE_LAMPORTS: u64 = 2_500_000;
/// Fee cap in basis points.
pub const MAX_FEE_BPS: u64 = 1_000;

/// ceil(price × fee_bps / 10,000) (PROTOCOL.md §8): the protocol fee on a
/// settled price, as buyers pay it and the settlement rules check it.
pub fn settle_fee(price_lamports: u64, fee_bps: u64) -> u64 {
    (price_lamports as u128 * fee_bps as u128).div_ceil(10_000) as u64
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
    /// Whether fees apply at all (mainnet-beta and not disabled).
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
        Ok(FeePolicy {
            enabled: cluster == ClusterKind::MainnetBeta && !disabled,
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

    /// Settle fee: ceil(price × fee_bps / 10,000), 0 when fees don't apply.
    pub fn settle_fee(&self, price_lamports: u64, fee_bps: u64) -> Result<u64, ChainError> {
        if fee_bps > MAX_FEE_BPS {
            return Err(ChainError::Config(format!(
                "fee_bps {fee_bps} is above the cap of {MAX_FEE_BPS}"
            )));
        }
        if !self.enabled {
            return Ok(0);
        }
        Ok(settle_fee(price_lamports, fee_bps))
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
            assert_eq!(p.settle_fee(1_000_000, 250).unwrap(), 0);
        }
        let p = FeePolicy::for_cluster(ClusterKind::MainnetBeta, env_none).unwrap();
        let ix = p.fee_instruction(FeeOp::Op, &payer).unwrap();
        assert_eq!(ix.program_id, solana_system_interface::program::ID);
        assert_eq!(ix.accounts[1].pubkey.to_string(), DEFAULT_TREASURY);
        assert_eq!(&ix.data[4..12], &DEFAULT_OP_FEE_LAMPORTS.to_le_bytes());
        let mint = p.fee_instruction(FeeOp::Mint, &payer).unwrap();
        assert_eq!(&mint.data[4..12], &DEFAULT_MINT_FEE_LAMPORTS.to_le_bytes());
        assert_eq!(p.settle_fee(1_000_001, 250).unwrap(), 25_001, "rounds up");
        assert!(p.settle_fee(1, 1_001).is_err());
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
