//! SPL Token and Token-2022 as the escrow uses them, by hand over the
//! layouts both programs share (a mint's first 82 bytes, a token account's
//! first 165, Token-2022's account-type byte after them): a mint's
//! decimals, a token account's mint, owner, amount and state, the escrow's
//! vault (the escrow PDA's associated token account of the mint) and the
//! three calls it makes (the ATA program's `CreateIdempotent`,
//! `TransferChecked`, `CloseAccount`). Decides nothing about who is paid.

use crate::error::EscrowError;
use anchor_lang::prelude::*;
use anchor_lang::solana_program::instruction::{AccountMeta, Instruction};
use anchor_lang::solana_program::program::invoke_signed;

/// The SPL Token program.
pub const TOKEN_PROGRAM: Pubkey =
    Pubkey::from_str_const("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
/// The Token-2022 program.
pub const TOKEN_2022_PROGRAM: Pubkey =
    Pubkey::from_str_const("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
/// The associated-token-account program.
pub const ATA_PROGRAM: Pubkey =
    Pubkey::from_str_const("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");

/// Bytes of a mint without extensions.
const MINT_LEN: usize = 82;
/// Bytes of a token account without extensions (and where Token-2022's
/// account-type byte sits in an extended mint or account).
const ACCOUNT_LEN: usize = 165;
/// Bytes of a multisig (never a mint or an account).
const MULTISIG_LEN: usize = 355;
/// Token-2022's account-type bytes.
const TYPE_MINT: u8 = 1;
const TYPE_ACCOUNT: u8 = 2;
/// A token account's `state`: initialized (not frozen).
pub const INITIALIZED: u8 = 1;

/// A token account's `state`: frozen by the mint's freeze authority.
pub const FROZEN: u8 = 2;

/// Token-2022 extension types (`ExtensionType` numbers) a mint may carry
/// and still settle an escrow: none of them can move, freeze, tax or
/// block what a vault holds (a close authority closes only a mint of no
/// supply; the others are metadata and display).
pub const MINT_EXTENSIONS_TAKEN: [u16; 9] = [
    3,  // MintCloseAuthority
    10, // InterestBearingConfig (display)
    18, // MetadataPointer
    19, // TokenMetadata
    20, // GroupPointer
    21, // TokenGroup
    22, // GroupMemberPointer
    23, // TokenGroupMember
    25, // ScaledUiAmount (display)
];
/// `ImmutableOwner`: what an associated Token-2022 account carries.
pub const IMMUTABLE_OWNER: u16 = 7;

/// Whether every Token-2022 extension in `data` (a mint's or an
/// account's) is one of `taken`; an unextended one has none, a TLV area
/// that does not read is refused.
pub fn extensions_within(data: &[u8], taken: &[u16]) -> bool {
    let mut at = ACCOUNT_LEN + 1;
    while at + 4 <= data.len() {
        let kind = u16::from_le_bytes([data[at], data[at + 1]]);
        if kind == 0 {
            return true; // uninitialized: the rest is padding
        }
        if !taken.contains(&kind) {
            return false;
        }
        let len = usize::from(u16::from_le_bytes([data[at + 2], data[at + 3]]));
        at += 4 + len;
        if at > data.len() {
            return false;
        }
    }
    true
}

/// Checks `mint` can settle an escrow: an initialized mint of a token
/// program ([`mint_decimals`]) whose extensions are all
/// [`MINT_EXTENSIONS_TAKEN`] ([`EscrowError::MintExtension`]: a permanent
/// delegate, a pause, a transfer hook or fee, non-transferable tokens, a
/// default account state, confidential transfers).
pub fn check_escrow_mint(mint: &AccountInfo<'_>) -> Result<()> {
    mint_decimals(mint)?;
    require!(
        extensions_within(&mint.try_borrow_data()?, &MINT_EXTENSIONS_TAKEN),
        EscrowError::MintExtension
    );
    Ok(())
}

/// Whether `program` is SPL Token or Token-2022.
pub fn is_token_program(program: &Pubkey) -> bool {
    *program == TOKEN_PROGRAM || *program == TOKEN_2022_PROGRAM
}

/// Whether `data` (of a token program's account) is of the kind whose
/// unextended length is `base`, Token-2022's type byte `kind`.
fn is_kind(data: &[u8], base: usize, kind: u8) -> bool {
    data.len() == base
        || (data.len() > ACCOUNT_LEN && data.len() != MULTISIG_LEN && data[ACCOUNT_LEN] == kind)
}

/// The decimals of `mint`, an initialized mint of a token program, or
/// [`EscrowError::NotAMint`].
pub fn mint_decimals(mint: &AccountInfo<'_>) -> Result<u8> {
    require!(is_token_program(mint.owner), EscrowError::NotAMint);
    let data = mint.try_borrow_data()?;
    // mint authority (36), supply (8), decimals @44, is_initialized @45
    require!(
        is_kind(&data, MINT_LEN, TYPE_MINT) && data[45] == 1,
        EscrowError::NotAMint
    );
    Ok(data[44])
}

/// A token account's fields the escrow reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenAccount {
    /// Its mint.
    pub mint: Pubkey,
    /// Its owner (the authority of transfers out).
    pub owner: Pubkey,
    /// Base units held.
    pub amount: u64,
    /// 0 uninitialized, 1 initialized, 2 frozen.
    pub state: u8,
}

/// `info` as a token account of a token program, if it is one.
pub fn token_account(info: &AccountInfo<'_>) -> Option<TokenAccount> {
    if !is_token_program(info.owner) {
        return None;
    }
    let data = info.try_borrow_data().ok()?;
    if !is_kind(&data, ACCOUNT_LEN, TYPE_ACCOUNT) {
        return None;
    }
    let key = |at: usize| Pubkey::new_from_array(data[at..at + 32].try_into().expect("32"));
    Some(TokenAccount {
        mint: key(0),
        owner: key(32),
        amount: u64::from_le_bytes(data[64..72].try_into().expect("8")),
        state: data[108],
    })
}

/// `owner`'s associated token account of `mint` under `token_program`:
/// an escrow's vault (owner: the escrow PDA), the treasury's fee account.
pub fn associated(owner: &Pubkey, mint: &Pubkey, token_program: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(
        &[owner.as_ref(), token_program.as_ref(), mint.as_ref()],
        &ATA_PROGRAM,
    )
    .0
}

/// What the vault holds: its balance, if it is `escrow`'s token account
/// of `mint`.
pub fn vault_balance(vault: &AccountInfo<'_>, escrow: &Pubkey, mint: &Pubkey) -> Result<u64> {
    token_account(vault)
        .filter(|t| t.owner == *escrow && t.mint == *mint)
        .map(|t| t.amount)
        .ok_or_else(|| error!(EscrowError::WrongVault))
}

/// The accounts of a token move: the token program and the mint.
pub struct Token<'a, 'info> {
    /// The mint's token program.
    pub program: &'a AccountInfo<'info>,
    /// The mint.
    pub mint: &'a AccountInfo<'info>,
    /// Its decimals.
    pub decimals: u8,
}

impl<'a, 'info> Token<'a, 'info> {
    /// `mint` under `program`, its decimals read ([`mint_decimals`]).
    pub fn new(program: &'a AccountInfo<'info>, mint: &'a AccountInfo<'info>) -> Result<Self> {
        Ok(Token {
            program,
            mint,
            decimals: mint_decimals(mint)?,
        })
    }

    /// Creates `owner`'s associated account of the mint (`vault`), paid by
    /// `payer`, unless it exists.
    pub fn create_associated(
        &self,
        payer: &AccountInfo<'info>,
        vault: &AccountInfo<'info>,
        owner: &AccountInfo<'info>,
        system_program: &AccountInfo<'info>,
        ata_program: &AccountInfo<'info>,
    ) -> Result<()> {
        let ix = Instruction {
            program_id: ATA_PROGRAM,
            accounts: vec![
                AccountMeta::new(payer.key(), true),
                AccountMeta::new(vault.key(), false),
                AccountMeta::new_readonly(owner.key(), false),
                AccountMeta::new_readonly(self.mint.key(), false),
                AccountMeta::new_readonly(system_program.key(), false),
                AccountMeta::new_readonly(self.program.key(), false),
            ],
            data: vec![1], // CreateIdempotent
        };
        let infos = [
            payer.clone(),
            vault.clone(),
            owner.clone(),
            self.mint.clone(),
            system_program.clone(),
            self.program.clone(),
            ata_program.clone(),
        ];
        invoke_signed(&ix, &infos, &[]).map_err(Into::into)
    }

    /// `TransferChecked` of `amount` from `from` to `to`, authorized by
    /// `authority` (a signer, or the PDA of `seeds`).
    pub fn transfer(
        &self,
        from: &AccountInfo<'info>,
        to: &AccountInfo<'info>,
        authority: &AccountInfo<'info>,
        amount: u64,
        seeds: &[&[&[u8]]],
    ) -> Result<()> {
        let mut data = vec![12];
        data.extend_from_slice(&amount.to_le_bytes());
        data.push(self.decimals);
        let ix = Instruction {
            program_id: self.program.key(),
            accounts: vec![
                AccountMeta::new(from.key(), false),
                AccountMeta::new_readonly(self.mint.key(), false),
                AccountMeta::new(to.key(), false),
                AccountMeta::new_readonly(authority.key(), true),
            ],
            data,
        };
        let infos = [
            from.clone(),
            self.mint.clone(),
            to.clone(),
            authority.clone(),
            self.program.clone(),
        ];
        invoke_signed(&ix, &infos, seeds).map_err(Into::into)
    }
}

/// `CloseAccount` of `account` (empty) to `destination` under `program`,
/// authorized by the PDA of `seeds`. Reads no mint: an empty vault closes
/// even once its mint is closed.
pub fn close_account<'info>(
    program: &AccountInfo<'info>,
    account: &AccountInfo<'info>,
    destination: &AccountInfo<'info>,
    authority: &AccountInfo<'info>,
    seeds: &[&[&[u8]]],
) -> Result<()> {
    let ix = Instruction {
        program_id: program.key(),
        accounts: vec![
            AccountMeta::new(account.key(), false),
            AccountMeta::new(destination.key(), false),
            AccountMeta::new_readonly(authority.key(), true),
        ],
        data: vec![9],
    };
    let infos = [
        account.clone(),
        destination.clone(),
        authority.clone(),
        program.clone(),
    ];
    invoke_signed(&ix, &infos, seeds).map_err(Into::into)
}

/// Whether `program` is the token program of an escrow's `vault` of
/// `mint`: a token program that owns the vault and, while the mint exists,
/// the mint (a mint closed once its supply reached zero leaves the
/// vault's program the only one to name: its empty vault still closes).
pub fn is_vault_program(
    program: &AccountInfo<'_>,
    vault: &AccountInfo<'_>,
    mint: &AccountInfo<'_>,
) -> bool {
    let mint_closed =
        mint.owner == &anchor_lang::solana_program::system_program::ID && mint.data_is_empty();
    is_token_program(program.key)
        && vault.owner == program.key
        && (mint.owner == program.key || mint_closed)
}
