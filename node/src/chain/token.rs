//! Paying in an SPL Token or Token-2022 mint: the payee's associated token
//! account (derived, created idempotently by the payer when missing) and a
//! checked transfer into it. Builds instructions only; what counts as paid
//! is `settle`'s (what arrived, by the node's token balances).

use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey::Pubkey;

/// The associated-token-account program.
pub const ATA_PROGRAM: Pubkey = solana_sdk::pubkey!("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");

/// A mint as a payment names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenMint {
    /// The mint.
    pub address: Pubkey,
    /// Its token program (SPL Token or Token-2022).
    pub program: Pubkey,
    /// Its decimals (a checked transfer states them; the program refuses
    /// one that does not match the mint).
    pub decimals: u8,
}

/// `owner`'s associated token account of `mint`.
pub fn associated_account(owner: &Pubkey, mint: &TokenMint) -> Pubkey {
    Pubkey::find_program_address(
        &[owner.as_ref(), mint.program.as_ref(), mint.address.as_ref()],
        &ATA_PROGRAM,
    )
    .0
}

/// Creates `owner`'s associated token account of `mint`, paid by `payer`,
/// unless it exists (the program's `CreateIdempotent`).
pub fn create_associated_account(payer: &Pubkey, owner: &Pubkey, mint: &TokenMint) -> Instruction {
    Instruction {
        program_id: ATA_PROGRAM,
        accounts: vec![
            AccountMeta::new(*payer, true),
            AccountMeta::new(associated_account(owner, mint), false),
            AccountMeta::new_readonly(*owner, false),
            AccountMeta::new_readonly(mint.address, false),
            AccountMeta::new_readonly(solana_system_interface::program::ID, false),
            AccountMeta::new_readonly(mint.program, false),
        ],
        data: vec![1],
    }
}

/// A checked transfer of `amount` base units from `from`'s associated
/// account to `to`'s, authorized by `from`.
pub fn transfer_to(from: &Pubkey, to: &Pubkey, mint: &TokenMint, amount: u64) -> Instruction {
    // TransferChecked: tag 12, amount, decimals (the SPL Token and
    // Token-2022 layout)
    let mut data = vec![12];
    data.extend_from_slice(&amount.to_le_bytes());
    data.push(mint.decimals);
    Instruction {
        program_id: mint.program,
        accounts: vec![
            AccountMeta::new(associated_account(from, mint), false),
            AccountMeta::new_readonly(mint.address, false),
            AccountMeta::new(associated_account(to, mint), false),
            AccountMeta::new_readonly(*from, true),
        ],
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-built transfer is the interface crate's `transfer_checked`.
    #[test]
    fn transfer_is_the_interface_crates_transfer_checked() {
        for program in [
            spl_token_2022_interface::ID,
            crate::chain::parsed_tx::TOKEN_PROGRAM.parse().unwrap(),
        ] {
            let mint = TokenMint {
                address: Pubkey::new_unique(),
                program,
                decimals: 6,
            };
            let (from, to) = (Pubkey::new_unique(), Pubkey::new_unique());
            let ours = transfer_to(&from, &to, &mint, 1_500_000);
            let theirs = spl_token_2022_interface::instruction::transfer_checked(
                &program,
                &associated_account(&from, &mint),
                &mint.address,
                &associated_account(&to, &mint),
                &from,
                &[],
                1_500_000,
                6,
            )
            .unwrap();
            assert_eq!(ours, theirs);
        }
    }
}
