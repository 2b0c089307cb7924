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

/// The SPL Token program (`parsed_tx::TOKEN_PROGRAM` as a key).
pub const TOKEN_PROGRAM_ID: Pubkey =
    solana_sdk::pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");

/// Mints whose unit is a US dollar (a listing priced in USD settles in
/// them 1:1 without a price feed): USDC and USDT on mainnet, USDC on
/// devnet (whose address the localnet's test mint shares, so that x402
/// clients that know only public clusters' assets pay in it).
pub const DOLLAR_MINTS: [Pubkey; 3] = [
    solana_sdk::pubkey!("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"),
    solana_sdk::pubkey!("Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB"),
    solana_sdk::pubkey!("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"),
];

/// Whether `mint`'s unit is a dollar ([`DOLLAR_MINTS`]).
pub fn is_dollar(mint: &Pubkey) -> bool {
    DOLLAR_MINTS.contains(mint)
}

/// Why a mint cannot settle a listing.
#[derive(Debug, thiserror::Error)]
pub enum MintRefusal {
    /// No account at the address.
    #[error("mint {0}: no such account on this cluster")]
    Missing(Pubkey),
    /// The account is not a token program's.
    #[error("mint {mint}: owned by {owner}, not by the SPL Token or Token-2022 program")]
    NotTokenProgram {
        /// The address.
        mint: Pubkey,
        /// Its owner.
        owner: Pubkey,
    },
    /// The account is not an initialized mint.
    #[error("mint {0}: not an initialized mint")]
    NotAMint(Pubkey),
    /// A Token-2022 extension would change what a payment delivers.
    #[error("mint {mint}: its Token-2022 extension {extension} {why}; settling in it is refused (choose a mint without it)")]
    Extension {
        /// The mint.
        mint: Pubkey,
        /// The extension.
        extension: &'static str,
        /// What it would do.
        why: &'static str,
    },
    /// A freeze authority this client does not know could freeze an
    /// escrow's vault (holding a refund or a conviction's payout hostage).
    #[error("mint {mint}: its freeze authority {authority} could freeze an escrow's vault and hold a refund or a proven lie's payout hostage; escrow buys are taken only in mints with no freeze authority or issued by a known issuer (USDC, USDT, the localnet's test dollar)")]
    FreezeAuthority {
        /// The mint.
        mint: Pubkey,
        /// Its freeze authority.
        authority: Pubkey,
    },
    /// Reading the account failed.
    #[error(transparent)]
    Chain(#[from] crate::chain::ChainError),
}

/// Reads `address` as a mint a listing can settle in: its program,
/// decimals and extensions (see [`mint_from_account`]).
pub async fn read_mint(
    chain: &crate::chain::Chain,
    address: &Pubkey,
) -> Result<TokenMint, MintRefusal> {
    let (owner, data) = fetch_mint(chain, address).await?;
    mint_from_account(address, &owner, &data)
}

/// Reads `address` as a mint an escrow vault may hold: [`read_mint`]'s
/// refusals, and every Token-2022 extension the escrow program refuses
/// at each deposit ([`escrow_mint_refusal`]), checked before paying.
pub async fn read_escrow_mint(
    chain: &crate::chain::Chain,
    address: &Pubkey,
) -> Result<TokenMint, MintRefusal> {
    let (owner, data) = fetch_mint(chain, address).await?;
    let mint = mint_from_account(address, &owner, &data)?;
    match escrow_mint_refusal(address, &data).or_else(|| freeze_refusal(address, &data)) {
        Some(refusal) => Err(refusal),
        None => Ok(mint),
    }
}

/// Why an escrow refuses `data`'s mint for its freeze authority (`None`:
/// it has none, or it is one of [`DOLLAR_MINTS`], whose issuers' freeze
/// authorities are known): a seller holding, or colluding with, a mint's
/// freeze authority could freeze a vault through a dispute window.
pub fn freeze_refusal(address: &Pubkey, data: &[u8]) -> Option<MintRefusal> {
    use spl_token_2022_interface::extension::StateWithExtensions;
    use spl_token_2022_interface::state::Mint;
    if DOLLAR_MINTS.contains(address) {
        return None;
    }
    let state = StateWithExtensions::<Mint>::unpack(data).ok()?;
    let authority: Option<Pubkey> = state.base.freeze_authority.into();
    authority.map(|a| MintRefusal::FreezeAuthority {
        mint: *address,
        authority: Pubkey::new_from_array(a.to_bytes()),
    })
}

/// Why the escrow program would refuse `data`'s mint (`None`: it takes
/// it): only the extensions of its `MINT_EXTENSIONS_TAKEN` (a close
/// authority, metadata, groups, display-only interest and scaling) are
/// taken; a permanent delegate could pull a vault, a pause stop a refund,
/// confidential transfers hide what a vault holds, and the rest change
/// what a transfer delivers.
pub fn escrow_mint_refusal(address: &Pubkey, data: &[u8]) -> Option<MintRefusal> {
    use spl_token_2022_interface::extension::{
        BaseStateWithExtensions, ExtensionType as E, StateWithExtensions,
    };
    use spl_token_2022_interface::state::Mint;
    let state = StateWithExtensions::<Mint>::unpack(data).ok()?;
    let types = state.get_extension_types().unwrap_or_default();
    let taken = [
        E::MintCloseAuthority,
        E::InterestBearingConfig,
        E::MetadataPointer,
        E::TokenMetadata,
        E::GroupPointer,
        E::TokenGroup,
        E::GroupMemberPointer,
        E::TokenGroupMember,
        E::ScaledUiAmount,
    ];
    let refused = types.into_iter().find(|t| !taken.contains(t))?;
    let (extension, why) = match refused {
        E::PermanentDelegate => (
            "PermanentDelegate",
            "lets its delegate move any holder's tokens, an escrow's vault too",
        ),
        E::Pausable => (
            "Pausable",
            "lets its authority stop every transfer, a refund too",
        ),
        E::ConfidentialTransferMint => (
            "ConfidentialTransferMint",
            "hides what a transfer moves, so a vault's holding cannot be checked",
        ),
        _ => (
            "Token-2022 extension",
            "is none the escrow program takes (see its MINT_EXTENSIONS_TAKEN)",
        ),
    };
    Some(MintRefusal::Extension {
        mint: *address,
        extension,
        why,
    })
}

/// Reads `address` as a mint whatever its extensions: its program and
/// decimals, what a transfer out of tokens already held (an escrow's
/// vault) states. Never for a new payment: that is [`read_mint`].
pub async fn read_held_mint(
    chain: &crate::chain::Chain,
    address: &Pubkey,
) -> Result<TokenMint, MintRefusal> {
    use spl_token_2022_interface::extension::StateWithExtensions;
    use spl_token_2022_interface::state::Mint;
    let (owner, data) = fetch_mint(chain, address).await?;
    if owner != TOKEN_PROGRAM_ID && owner != spl_token_2022_interface::ID {
        return Err(MintRefusal::NotTokenProgram {
            mint: *address,
            owner,
        });
    }
    let state = StateWithExtensions::<Mint>::unpack(&data)
        .ok()
        .filter(|s| s.base.is_initialized)
        .ok_or(MintRefusal::NotAMint(*address))?;
    Ok(TokenMint {
        address: *address,
        program: owner,
        decimals: state.base.decimals,
    })
}

/// The owner and bytes of the account at `address`.
async fn fetch_mint(
    chain: &crate::chain::Chain,
    address: &Pubkey,
) -> Result<(Pubkey, Vec<u8>), MintRefusal> {
    let account = crate::chain::retry::with_retry("getAccountInfo", || async {
        chain
            .rpc()
            .get_account_with_commitment(address, chain.commitment())
            .await
            .map(|r| r.value)
    })
    .await?
    .ok_or(MintRefusal::Missing(*address))?;
    Ok((account.owner, account.data))
}

/// The mint an account holds, if a payment in it delivers what it says
/// and stays paid: Token-2022 mints with a transfer fee (in force or
/// scheduled), a transfer hook, non-transferable tokens or accounts frozen
/// by default are refused (a buyer's payment would arrive short, run
/// foreign code or fail), and so are a permanent delegate (it can take a
/// payment back), a pause (a checked payment can fail as it lands) and a
/// UI amount other than the raw one (interest-bearing or scaled: a wallet
/// would show the buyer another price than the one paid). Other
/// extensions (metadata, groups, a close or freeze authority) leave a
/// checked transfer's amount intact.
pub fn mint_from_account(
    address: &Pubkey,
    owner: &Pubkey,
    data: &[u8],
) -> Result<TokenMint, MintRefusal> {
    use spl_token_2022_interface::extension::{
        default_account_state::DefaultAccountState, transfer_fee::TransferFeeConfig,
        transfer_hook::TransferHook, BaseStateWithExtensions, StateWithExtensions,
    };
    use spl_token_2022_interface::state::{AccountState, Mint};
    let legacy = TOKEN_PROGRAM_ID;
    if *owner != legacy && *owner != spl_token_2022_interface::ID {
        return Err(MintRefusal::NotTokenProgram {
            mint: *address,
            owner: *owner,
        });
    }
    let state = StateWithExtensions::<Mint>::unpack(data)
        .ok()
        .filter(|s| s.base.is_initialized)
        .ok_or(MintRefusal::NotAMint(*address))?;
    let refuse = |extension, why| MintRefusal::Extension {
        mint: *address,
        extension,
        why,
    };
    if let Ok(fee) = state.get_extension::<TransferFeeConfig>() {
        let bps = |f: &spl_token_2022_interface::extension::transfer_fee::TransferFee| {
            u16::from(f.transfer_fee_basis_points)
        };
        if bps(&fee.older_transfer_fee) > 0 || bps(&fee.newer_transfer_fee) > 0 {
            return Err(refuse(
                "TransferFeeConfig",
                "withholds a fee from every transfer, so a payment arrives short",
            ));
        }
    }
    if let Ok(hook) = state.get_extension::<TransferHook>() {
        if Option::<Pubkey>::from(hook.program_id).is_some() {
            return Err(refuse(
                "TransferHook",
                "runs another program on every transfer",
            ));
        }
    }
    if state
        .get_extension::<spl_token_2022_interface::extension::non_transferable::NonTransferable>()
        .is_ok()
    {
        return Err(refuse("NonTransferable", "makes its tokens unmovable"));
    }
    if let Ok(default) = state.get_extension::<DefaultAccountState>() {
        if default.state == AccountState::Frozen as u8 {
            return Err(refuse(
                "DefaultAccountState",
                "freezes new token accounts, so a payment to one fails",
            ));
        }
    }
    use spl_token_2022_interface::extension::ExtensionType as E;
    for kind in state.get_extension_types().unwrap_or_default() {
        let why = match kind {
            E::PermanentDelegate
                if state
                    .get_extension::<spl_token_2022_interface::extension::permanent_delegate::PermanentDelegate>()
                    .is_ok_and(|d| Option::<Pubkey>::from(d.delegate).is_some()) =>
            (
                "PermanentDelegate",
                "lets its delegate take any holder's tokens back, so a payment is never final",
            ),
            E::Pausable => (
                "Pausable",
                "lets its authority stop every transfer, so a payment checked now can fail when it lands",
            ),
            E::ScaledUiAmount => (
                "ScaledUiAmount",
                "shows holders a scaled amount, so the price a wallet shows is not the amount paid",
            ),
            E::InterestBearingConfig => (
                "InterestBearingConfig",
                "shows holders an amount accruing interest, so the price a wallet shows is not the amount paid",
            ),
            _ => continue,
        };
        return Err(refuse(why.0, why.1));
    }
    Ok(TokenMint {
        address: *address,
        program: *owner,
        decimals: state.base.decimals,
    })
}

/// `owner`'s associated account of `mint`, if it exists.
async fn fetch_associated(
    chain: &crate::chain::Chain,
    owner: &Pubkey,
    mint: &TokenMint,
) -> Result<Option<solana_sdk::account::Account>, crate::chain::ChainError> {
    let address = associated_account(owner, mint);
    crate::chain::retry::with_retry("getAccountInfo", || async {
        chain
            .rpc()
            .get_account_with_commitment(&address, chain.commitment())
            .await
            .map(|r| r.value)
    })
    .await
}

/// Whether `owner`'s associated account of `mint` exists.
pub async fn has_associated(
    chain: &crate::chain::Chain,
    owner: &Pubkey,
    mint: &TokenMint,
) -> Result<bool, crate::chain::ChainError> {
    Ok(fetch_associated(chain, owner, mint).await?.is_some())
}

/// What `owner`'s associated account of `mint` holds, in base units (0
/// when it does not exist).
pub async fn balance(
    chain: &crate::chain::Chain,
    owner: &Pubkey,
    mint: &TokenMint,
) -> Result<u64, crate::chain::ChainError> {
    use spl_token_2022_interface::extension::StateWithExtensions;
    use spl_token_2022_interface::state::Account;
    let account = fetch_associated(chain, owner, mint).await?;
    Ok(account
        .and_then(|a| {
            StateWithExtensions::<Account>::unpack(&a.data)
                .ok()
                .map(|s| s.base.amount)
        })
        .unwrap_or(0))
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

    /// A mint's account bytes with `extensions` set up by `init`.
    fn mint_bytes(
        extensions: &[spl_token_2022_interface::extension::ExtensionType],
        init: impl FnOnce(
            &mut spl_token_2022_interface::extension::StateWithExtensionsMut<
                spl_token_2022_interface::state::Mint,
            >,
        ),
    ) -> Vec<u8> {
        use spl_token_2022_interface::extension::{
            BaseStateWithExtensionsMut, ExtensionType, StateWithExtensionsMut,
        };
        use spl_token_2022_interface::state::Mint;
        let len = ExtensionType::try_calculate_account_len::<Mint>(extensions).unwrap();
        let mut data = vec![0u8; len];
        let mut state = StateWithExtensionsMut::<Mint>::unpack_uninitialized(&mut data).unwrap();
        init(&mut state);
        state.base = Mint {
            decimals: 6,
            is_initialized: true,
            ..Mint::default()
        };
        state.pack_base();
        if !extensions.is_empty() {
            state.init_account_type().unwrap();
        }
        data
    }

    /// A mint whose freeze authority could freeze a vault is
    /// refused for an escrow buy, naming the authority, unless it is a
    /// known dollar (its issuer's authority); one without passes.
    #[test]
    fn a_mint_a_stranger_can_freeze_is_refused_for_an_escrow() {
        let address = Pubkey::new_unique();
        assert!(freeze_refusal(&address, &mint_bytes(&[], |_| {})).is_none());
        let freezer = Pubkey::new_unique();
        let mut frozen = mint_bytes(&[], |_| {});
        {
            use spl_token_2022_interface::extension::StateWithExtensionsMut;
            let mut state =
                StateWithExtensionsMut::<spl_token_2022_interface::state::Mint>::unpack(
                    &mut frozen,
                )
                .unwrap();
            state.base.freeze_authority = Some(freezer).into();
            state.pack_base();
        }
        match freeze_refusal(&address, &frozen) {
            Some(MintRefusal::FreezeAuthority { mint, authority }) => {
                assert_eq!((mint, authority), (address, freezer));
            }
            other => panic!("not refused for its freeze authority: {other:?}"),
        }
        assert!(MintRefusal::FreezeAuthority {
            mint: address,
            authority: freezer
        }
        .to_string()
        .contains(&freezer.to_string()));
        // USDC's issuer may freeze; the client knows it
        assert!(freeze_refusal(&DOLLAR_MINTS[0], &frozen).is_none());
    }

    /// An escrow vault's mint: what the program takes (a close authority,
    /// metadata) passes; a permanent delegate, a pause or confidential
    /// transfers are refused before paying, each named; a plain mint and
    /// an SPL Token one pass.
    #[test]
    fn escrow_mints_are_refused_as_the_program_refuses_them() {
        use spl_token_2022_interface::extension::{
            mint_close_authority::MintCloseAuthority, pausable::PausableConfig,
            permanent_delegate::PermanentDelegate, BaseStateWithExtensionsMut, ExtensionType,
        };
        let address = Pubkey::new_unique();
        assert!(escrow_mint_refusal(&address, &mint_bytes(&[], |_| {})).is_none());
        let closable = mint_bytes(&[ExtensionType::MintCloseAuthority], |s| {
            s.init_extension::<MintCloseAuthority>(true).unwrap();
        });
        assert!(escrow_mint_refusal(&address, &closable).is_none());
        let delegated = mint_bytes(&[ExtensionType::PermanentDelegate], |s| {
            let d = s.init_extension::<PermanentDelegate>(true).unwrap();
            d.delegate = Some(Pubkey::new_unique()).try_into().unwrap();
        });
        let pausable = mint_bytes(&[ExtensionType::Pausable], |s| {
            s.init_extension::<PausableConfig>(true).unwrap();
        });
        for (bytes, named) in [(&delegated, "PermanentDelegate"), (&pausable, "Pausable")] {
            match escrow_mint_refusal(&address, bytes) {
                Some(MintRefusal::Extension { extension, .. }) => assert_eq!(extension, named),
                other => panic!("{named}: {other:?}"),
            }
        }
    }

    /// Which mints settle: SPL Token and Token-2022 mints whose transfers
    /// deliver what they say; refused with the extension named otherwise.
    #[test]
    fn mints_whose_transfers_change_what_arrives_are_refused() {
        use spl_token_2022_interface::extension::{
            metadata_pointer::MetadataPointer, transfer_fee::TransferFeeConfig,
            transfer_hook::TransferHook, BaseStateWithExtensionsMut, ExtensionType,
        };
        let address = Pubkey::new_unique();
        let legacy = TOKEN_PROGRAM_ID;
        assert_eq!(legacy.to_string(), crate::chain::parsed_tx::TOKEN_PROGRAM);
        let t22 = spl_token_2022_interface::ID;
        let plain = mint_bytes(&[], |_| {});
        assert_eq!(plain.len(), 82);
        for program in [legacy, t22] {
            assert_eq!(
                mint_from_account(&address, &program, &plain).unwrap(),
                TokenMint {
                    address,
                    program,
                    decimals: 6
                }
            );
        }
        let pointer = mint_bytes(&[ExtensionType::MetadataPointer], |s| {
            s.init_extension::<MetadataPointer>(true).unwrap();
        });
        assert!(mint_from_account(&address, &t22, &pointer).is_ok());
        let zero_fee = mint_bytes(&[ExtensionType::TransferFeeConfig], |s| {
            s.init_extension::<TransferFeeConfig>(true).unwrap();
        });
        assert!(
            mint_from_account(&address, &t22, &zero_fee).is_ok(),
            "a zero fee delivers all"
        );
        let scheduled_fee = mint_bytes(&[ExtensionType::TransferFeeConfig], |s| {
            let fee = s.init_extension::<TransferFeeConfig>(true).unwrap();
            fee.newer_transfer_fee.transfer_fee_basis_points = 100u16.into();
            fee.newer_transfer_fee.epoch = 500u64.into();
        });
        let hooked = mint_bytes(&[ExtensionType::TransferHook], |s| {
            let hook = s.init_extension::<TransferHook>(true).unwrap();
            hook.program_id = Some(Pubkey::new_unique()).try_into().unwrap();
        });
        let unhooked = mint_bytes(&[ExtensionType::TransferHook], |s| {
            s.init_extension::<TransferHook>(true).unwrap();
        });
        assert!(mint_from_account(&address, &t22, &unhooked).is_ok());
        for (bytes, named) in [
            (&scheduled_fee, "TransferFeeConfig"),
            (&hooked, "TransferHook"),
        ] {
            match mint_from_account(&address, &t22, bytes) {
                Err(MintRefusal::Extension { extension, .. }) => assert_eq!(extension, named),
                other => panic!("{named}: {other:?}"),
            }
        }
        // a payment that could be taken back, fail as it lands, or show
        // the buyer another price
        use spl_token_2022_interface::extension::{
            interest_bearing_mint::InterestBearingConfig, pausable::PausableConfig,
            permanent_delegate::PermanentDelegate, scaled_ui_amount::ScaledUiAmountConfig,
        };
        let delegated = mint_bytes(&[ExtensionType::PermanentDelegate], |s| {
            let d = s.init_extension::<PermanentDelegate>(true).unwrap();
            d.delegate = Some(Pubkey::new_unique()).try_into().unwrap();
        });
        let undelegated = mint_bytes(&[ExtensionType::PermanentDelegate], |s| {
            s.init_extension::<PermanentDelegate>(true).unwrap();
        });
        assert!(
            mint_from_account(&address, &t22, &undelegated).is_ok(),
            "no delegate set"
        );
        let pausable = mint_bytes(&[ExtensionType::Pausable], |s| {
            s.init_extension::<PausableConfig>(true).unwrap();
        });
        let scaled = mint_bytes(&[ExtensionType::ScaledUiAmount], |s| {
            s.init_extension::<ScaledUiAmountConfig>(true).unwrap();
        });
        let interest = mint_bytes(&[ExtensionType::InterestBearingConfig], |s| {
            s.init_extension::<InterestBearingConfig>(true).unwrap();
        });
        for (bytes, named) in [
            (&delegated, "PermanentDelegate"),
            (&pausable, "Pausable"),
            (&scaled, "ScaledUiAmount"),
            (&interest, "InterestBearingConfig"),
        ] {
            match mint_from_account(&address, &t22, bytes) {
                Err(MintRefusal::Extension { extension, .. }) => assert_eq!(extension, named),
                other => panic!("{named}: {other:?}"),
            }
        }
        assert!(matches!(
            mint_from_account(&address, &Pubkey::new_unique(), &plain),
            Err(MintRefusal::NotTokenProgram { .. })
        ));
        assert!(matches!(
            mint_from_account(&address, &legacy, &[0u8; 82]),
            Err(MintRefusal::NotAMint(_))
        ));
        assert!(matches!(
            mint_from_account(&address, &legacy, &[1u8; 7]),
            Err(MintRefusal::NotAMint(_))
        ));
    }

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
