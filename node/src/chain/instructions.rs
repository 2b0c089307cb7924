//! Instruction builders: SPL Memo (v3) signed by the actor, and the
//! discovery reference (DESIGN.md §Settlement): a ComputeBudget
//! `SetComputeUnitLimit` carrying the marketplace registry address as an
//! extra read-only account, so `getSignaturesForAddress(registry)` finds
//! every marketplace transaction without write-locking anything.

use crate::crypto::sha256;
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

/// SPL Memo v3 (what we post).
pub const MEMO_V3: Pubkey = spl_memo::id();
/// SPL Memo v1 (readers accept it).
pub const MEMO_V1: &str = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
/// Env var overriding the registry address.
pub const REGISTRY_ENV: &str = "BRAINCTL_REGISTRY";
/// Default compute-unit limit of marketplace transactions.
pub const DEFAULT_CU_LIMIT: u32 = 200_000;

/// The default registry: SHA-256 of `brainctl-marketplace/v1/registry` as
/// an address. Nobody holds its key (it need not be on the curve); it is
/// only ever referenced read-only.
pub fn default_registry() -> Pubkey {
    Pubkey::new_from_array(sha256(b"brainctl-marketplace/v1/registry"))
}

/// The registry in force (`BRAINCTL_REGISTRY` or the default).
pub fn registry_from_env() -> Result<Pubkey, super::ChainError> {
    match std::env::var(REGISTRY_ENV) {
        Ok(s) if !s.trim().is_empty() => Pubkey::from_str(s.trim()).map_err(|_| {
            super::ChainError::Config(format!("{REGISTRY_ENV}={s} is not a base58 pubkey"))
        }),
        _ => Ok(default_registry()),
    }
}

/// A memo instruction with `text`, requiring `signer`'s signature.
pub fn memo(text: &str, signer: &Pubkey) -> Instruction {
    // What spl_memo::build_memo does, without its deprecation.
    Instruction {
        program_id: MEMO_V3,
        accounts: vec![AccountMeta::new_readonly(*signer, true)],
        data: text.as_bytes().to_vec(),
    }
}

/// The discovery reference: `SetComputeUnitLimit(cu_limit)` with the
/// registry appended read-only.
pub fn discovery(registry: &Pubkey, cu_limit: u32) -> Instruction {
    let mut ix =
        solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(cu_limit);
    ix.accounts
        .push(AccountMeta::new_readonly(*registry, false));
    ix
}

/// A System transfer of `lamports` from `from` to `to`.
pub fn transfer(from: &Pubkey, to: &Pubkey, lamports: u64) -> Instruction {
    solana_system_interface::instruction::transfer(from, to, lamports)
}

/// Whether `program_id` is an SPL Memo program (v1 or v3).
pub fn is_memo_program(program_id: &str) -> bool {
    program_id == MEMO_V1 || program_id == MEMO_V3.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memo_and_discovery_shapes() {
        let signer = Pubkey::new_unique();
        let m = memo("hello", &signer);
        assert_eq!(
            m.program_id.to_string(),
            "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
        );
        assert_eq!(m.data, b"hello");
        assert!(m.accounts[0].is_signer && m.accounts[0].pubkey == signer);
        let reg = default_registry();
        let d = discovery(&reg, 1000);
        assert_eq!(d.data, [&[2u8][..], &1000u32.to_le_bytes()].concat());
        assert_eq!(d.accounts, vec![AccountMeta::new_readonly(reg, false)]);
        assert!(is_memo_program(MEMO_V1));
    }
}
