//! The localnet's test dollar: a 6-decimals SPL Token mint at devnet
//! USDC's address (so x402 clients that know only public clusters' assets
//! pay in it), loaded into a local validator's genesis with a mint
//! authority of the operator's choosing, and minting it to wallets.
//!
//! Owns the mint's genesis account and the mint-to instructions. Never
//! used against a public cluster: there the address is Circle's mint and
//! nobody here holds its authority (a mint-to would simply fail).

use super::token::{associated_account, create_associated_account, TokenMint};
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey::Pubkey;

/// The test dollar's address (devnet USDC's).
pub const ADDRESS: Pubkey = super::token::DOLLAR_MINTS[2];
/// Its decimals (USDC's).
pub const DECIMALS: u8 = 6;
/// Base units per dollar.
pub const UNITS_PER_DOLLAR: u64 = 1_000_000;
/// An SPL Token mint's size.
const MINT_LEN: usize = 82;

/// The test dollar as payments name it.
pub fn mint() -> TokenMint {
    TokenMint {
        address: ADDRESS,
        program: super::token::TOKEN_PROGRAM_ID,
        decimals: DECIMALS,
    }
}

/// The mint account's bytes: `authority` mints, no freeze authority,
/// nothing minted yet.
pub fn mint_data(authority: &Pubkey) -> Vec<u8> {
    let mut data = Vec::with_capacity(MINT_LEN);
    data.extend_from_slice(&1u32.to_le_bytes()); // mint_authority: Some
    data.extend_from_slice(authority.as_ref());
    data.extend_from_slice(&0u64.to_le_bytes()); // supply
    data.push(DECIMALS);
    data.push(1); // is_initialized
    data.extend_from_slice(&[0u8; 36]); // freeze_authority: None
    data
}

/// The mint as a `solana-test-validator --account ADDRESS FILE` file:
/// rent-exempt, owned by the SPL Token program.
pub fn genesis_account_json(authority: &Pubkey) -> serde_json::Value {
    use base64::Engine as _;
    // the rent-exempt minimum: (128 + len) bytes × 3,480 lamports × 2 years
    let lamports = (128 + MINT_LEN as u64) * 3_480 * 2;
    serde_json::json!({
        "pubkey": ADDRESS.to_string(),
        "account": {
            "lamports": lamports,
            "data": [base64::engine::general_purpose::STANDARD.encode(mint_data(authority)), "base64"],
            "owner": super::parsed_tx::TOKEN_PROGRAM,
            "executable": false,
            "rentEpoch": u64::MAX,
            "space": MINT_LEN,
        }
    })
}

/// Mints `units` to `owner`'s associated account (created first where
/// missing, paid by `authority`): `MintToChecked`.
pub fn mint_to_instructions(authority: &Pubkey, owner: &Pubkey, units: u64) -> Vec<Instruction> {
    mint_to(authority, owner, &mint(), units)
}

/// Mints `units` of `mint` (whose authority is `authority`) to `owner`'s
/// associated account, created first where missing: `MintToChecked`.
pub fn mint_to(
    authority: &Pubkey,
    owner: &Pubkey,
    mint: &TokenMint,
    units: u64,
) -> Vec<Instruction> {
    let mut data = vec![14]; // MintToChecked
    data.extend_from_slice(&units.to_le_bytes());
    data.push(mint.decimals);
    vec![
        create_associated_account(authority, owner, mint),
        Instruction {
            program_id: mint.program,
            accounts: vec![
                AccountMeta::new(mint.address, false),
                AccountMeta::new(associated_account(owner, mint), false),
                AccountMeta::new_readonly(*authority, true),
            ],
            data,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The genesis bytes are a mint the interface crate reads, and one a
    /// listing may settle in; the mint-to is the interface crate's.
    #[test]
    fn the_genesis_mint_reads_and_mints_as_the_interface_crate_says() {
        use spl_token_2022_interface::state::Mint;
        let authority = Pubkey::new_unique();
        let data = mint_data(&authority);
        let state = spl_token_2022_interface::extension::StateWithExtensions::<Mint>::unpack(&data)
            .unwrap();
        assert_eq!(
            Option::<Pubkey>::from(state.base.mint_authority),
            Some(authority)
        );
        assert_eq!((state.base.decimals, state.base.supply), (6, 0));
        assert_eq!(
            super::super::token::mint_from_account(&ADDRESS, &mint().program, &data).unwrap(),
            mint()
        );
        assert!(super::super::token::is_dollar(&ADDRESS));
        let owner = Pubkey::new_unique();
        let ours = &mint_to_instructions(&authority, &owner, 5_000_000)[1];
        let theirs = spl_token_2022_interface::instruction::mint_to_checked(
            &mint().program,
            &ADDRESS,
            &associated_account(&owner, &mint()),
            &authority,
            &[],
            5_000_000,
            6,
        )
        .unwrap();
        assert_eq!(ours, &theirs);
        let json = genesis_account_json(&authority);
        assert_eq!(json["account"]["lamports"], 1_461_600);
    }
}
