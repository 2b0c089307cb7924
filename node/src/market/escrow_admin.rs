//! The escrow program's one operator action: `init_settings`, sent by
//! the program's upgrade authority (the program refuses anyone else), and
//! made safe to repeat: a cluster already configured with the same
//! settings is left alone, one configured otherwise is refused with the
//! field that differs (the program has no way to change a config).
//!
//! Checks before sending: the program is deployed, the wallet is its
//! upgrade authority (read from its ProgramData account), the settings are
//! in the program's bounds. Never touches listings or escrows.

use crate::chain::{Chain, ChainError, Keypair, Pubkey, Signer};
use crate::escrow::{self, NewSettings as NewConfig, SettingsAccount as ConfigAccount};
use crate::market::escrow_trade::{read_account, EscrowPlanError, EscrowReadError};

/// The program's largest claim fee (`MAX_FEE_BPS` of `programs/escrow`).
pub const MAX_FEE_BPS: u16 = 1_000;
/// The program's shortest release window (`MIN_RELEASE_WINDOW_SECS`).
pub const MIN_RELEASE_WINDOW_SECS: i64 = 120;
/// The shortest dispute window any build of the program takes (its
/// `localnet` build's; every other build takes 6 hours,
/// `MAINNET_MIN_WINDOW_SECS`, and refuses a shorter one itself).
pub const MIN_WINDOW_SECS: i64 = 10;
/// The program's longest window (`MAX_WINDOW_SECS`, 30 days).
pub const MAX_WINDOW_SECS: i64 = 30 * 86_400;

/// Why the config was not written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigureError {
    /// A setting outside the program's bounds.
    #[error("{field} = {value}: {why}")]
    Setting {
        /// The flag's field.
        field: &'static str,
        /// Its value.
        value: String,
        /// The bound.
        why: &'static str,
    },
    /// The program is not deployed (or not upgradeable).
    #[error("escrow program {} is not deployed as an upgradeable program on this cluster; deploy its SBF build first (localnet/up does)", escrow::PROGRAM_ID)]
    NotDeployed,
    /// The wallet cannot configure it.
    #[error("wallet {wallet} is not the escrow program's upgrade authority ({authority}); run this with that wallet")]
    NotAuthority {
        /// This wallet.
        wallet: Pubkey,
        /// The program's authority (`none` if immutable).
        authority: String,
    },
    /// Configured before, differently.
    #[error("the escrow program is already configured with {field} = {onchain} (asked: {asked}); a config is set once and never changed")]
    Differs {
        /// The first field that differs.
        field: &'static str,
        /// On chain.
        onchain: String,
        /// Asked.
        asked: String,
    },
    /// The treasury holds less than rent exemption: the program refuses it
    /// (every fee that left it under rent would be waived).
    #[error("treasury {treasury} holds {lamports} lamports, under the rent-exempt minimum of {minimum}; fund it first (e.g. `solana transfer {treasury} 0.01`, or `brainctl wallet airdrop` as the treasury on a test cluster)")]
    TreasuryNotRentExempt {
        /// The treasury.
        treasury: Pubkey,
        /// What it holds.
        lamports: u64,
        /// Rent exemption of an empty account.
        minimum: u64,
    },
    /// Reading the program's accounts.
    #[error(transparent)]
    Read(#[from] EscrowReadError),
    /// Sending.
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// What [`configure`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Configured {
    /// `initialize_config` landed.
    Initialized {
        /// Its signature.
        signature: String,
        /// Its slot.
        slot: u64,
    },
    /// The same settings were already on chain: nothing sent.
    AlreadyConfigured,
}

/// Checks `c` against the program's bounds (`initialize_config` refuses
/// the same, after the fee is paid).
pub fn check_settings(c: &NewConfig) -> Result<(), ConfigureError> {
    let bad = |field, value: String, why| Err(ConfigureError::Setting { field, value, why });
    if c.fee_bps > MAX_FEE_BPS {
        return bad("fee_bps", c.fee_bps.to_string(), "at most 1000 (10 %)");
    }
    if c.slash_bps == 0 || c.slash_bps > 10_000 {
        return bad(
            "slash_bps",
            c.slash_bps.to_string(),
            "1 to 10000 (the whole stake)",
        );
    }
    let windows = [
        ("release_window_secs", c.release_window_secs, MIN_RELEASE_WINDOW_SECS, "120 s to 30 days (2592000): longer than a transaction lives, so a reveal never lands late"),
        ("dispute_window_secs", c.dispute_window_secs, MIN_WINDOW_SECS, "6 h (21600) to 30 days (2592000); 10 s only on the program's localnet build"),
    ];
    for (field, w, min, why) in windows {
        if !(min..=MAX_WINDOW_SECS).contains(&w) {
            return bad(field, w.to_string(), why);
        }
    }
    if c.min_stake == 0 {
        return bad(
            "min_stake",
            "0".into(),
            "must be above 0: the stake is the bond",
        );
    }
    if escrow_math::slash_share(c.min_stake, c.slash_bps) == 0 {
        return bad(
            "min_stake",
            c.min_stake.to_string(),
            "with this --slash-bps its slash share rounds to 0 lamports (a missed reveal or a proven lie would cost the seller nothing): raise --min-stake-lamports or --slash-bps",
        );
    }
    Ok(())
}

/// The first field where the chain's config differs from `c`.
pub fn first_difference(onchain: &ConfigAccount, c: &NewConfig) -> Option<ConfigureError> {
    let fields: [(&'static str, String, String); 6] = [
        (
            "treasury",
            onchain.treasury.to_string(),
            c.treasury.to_string(),
        ),
        (
            "fee_bps",
            onchain.fee_bps.to_string(),
            c.fee_bps.to_string(),
        ),
        (
            "slash_bps",
            onchain.slash_bps.to_string(),
            c.slash_bps.to_string(),
        ),
        (
            "release_window_secs",
            onchain.release_window_secs.to_string(),
            c.release_window_secs.to_string(),
        ),
        (
            "dispute_window_secs",
            onchain.dispute_window_secs.to_string(),
            c.dispute_window_secs.to_string(),
        ),
        (
            "min_stake",
            onchain.min_stake.to_string(),
            c.min_stake.to_string(),
        ),
    ];
    fields
        .into_iter()
        .find(|(_, onchain, asked)| onchain != asked)
        .map(|(field, onchain, asked)| ConfigureError::Differs {
            field,
            onchain,
            asked,
        })
}

/// The upgrade authority recorded in an upgradeable loader ProgramData
/// account (tag 3, slot, `Option<Pubkey>`), or `None` when the bytes are
/// not one; `Some(None)` for an immutable program.
pub fn upgrade_authority(program_data: &[u8]) -> Option<Option<Pubkey>> {
    let tag = u32::from_le_bytes(program_data.get(..4)?.try_into().ok()?);
    if tag != 3 {
        return None;
    }
    match program_data.get(12)? {
        0 => Some(None),
        1 => Some(Some(Pubkey::try_from(program_data.get(13..45)?).ok()?)),
        _ => None,
    }
}

/// Writes the program's config as `admin` (its upgrade authority), or
/// confirms the same config is there.
pub async fn configure(
    chain: &Chain,
    admin: &Keypair,
    c: &NewConfig,
) -> Result<Configured, ConfigureError> {
    check_settings(c)?;
    match crate::market::escrow_trade::read_settings(chain).await {
        Ok(onchain) => {
            return match first_difference(&onchain, c) {
                Some(e) => Err(e),
                None => Ok(Configured::AlreadyConfigured),
            }
        }
        Err(EscrowReadError::Plan(EscrowPlanError::NoSettings)) => {}
        Err(EscrowReadError::Plan(EscrowPlanError::NotDeployed)) => {
            return Err(ConfigureError::NotDeployed)
        }
        Err(e) => return Err(e.into()),
    }
    let data = read_account(
        chain,
        &escrow::program_data_address(),
        |_, d| Ok(d.to_vec()),
    )
    .await?
    .ok_or(ConfigureError::NotDeployed)?;
    let authority = upgrade_authority(&data).ok_or(ConfigureError::NotDeployed)?;
    if authority != Some(admin.pubkey()) {
        return Err(ConfigureError::NotAuthority {
            wallet: admin.pubkey(),
            authority: authority.map_or("none: immutable".into(), |a| a.to_string()),
        });
    }
    let (lamports, minimum) = (
        chain.balance(&c.treasury).await?,
        chain.rent_exemption(0).await?,
    );
    if lamports < minimum {
        return Err(ConfigureError::TreasuryNotRentExempt {
            treasury: c.treasury,
            lamports,
            minimum,
        });
    }
    let sent = chain
        .send(&[escrow::init_settings(&admin.pubkey(), c)], &[admin])
        .await?;
    Ok(Configured::Initialized {
        signature: sent.signature.to_string(),
        slot: sent.slot,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> NewConfig {
        NewConfig {
            treasury: Pubkey::new_unique(),
            fee_bps: 100,
            slash_bps: 5_000,
            release_window_secs: 120,
            dispute_window_secs: 60,
            min_stake: 1_000,
        }
    }

    #[test]
    fn settings_out_of_the_programs_bounds_name_their_field() {
        assert!(check_settings(&config()).is_ok());
        for (c, field) in [
            (
                NewConfig {
                    fee_bps: 1_001,
                    ..config()
                },
                "fee_bps",
            ),
            (
                NewConfig {
                    slash_bps: 10_001,
                    ..config()
                },
                "slash_bps",
            ),
            (
                NewConfig {
                    release_window_secs: 119,
                    ..config()
                },
                "release_window_secs",
            ),
            (
                NewConfig {
                    dispute_window_secs: 31 * 86_400,
                    ..config()
                },
                "dispute_window_secs",
            ),
            (
                NewConfig {
                    min_stake: 0,
                    ..config()
                },
                "min_stake",
            ),
            // a share that rounds to nothing
            (
                NewConfig {
                    min_stake: 1,
                    slash_bps: 9_999,
                    ..config()
                },
                "min_stake",
            ),
        ] {
            let e = check_settings(&c).unwrap_err();
            assert!(e.to_string().starts_with(field), "{e}");
        }
    }

    #[test]
    fn the_same_config_is_no_difference_and_another_names_the_field() {
        let c = config();
        let onchain = ConfigAccount {
            admin: Pubkey::new_unique(),
            treasury: c.treasury,
            fee_bps: c.fee_bps,
            slash_bps: c.slash_bps,
            release_window_secs: c.release_window_secs,
            dispute_window_secs: c.dispute_window_secs,
            min_stake: c.min_stake,
        };
        assert!(first_difference(&onchain, &c).is_none());
        let other = NewConfig { min_stake: 7, ..c };
        let e = first_difference(&onchain, &other).unwrap();
        assert!(e.to_string().contains("min_stake = 1000 (asked: 7)"), "{e}");
    }

    #[test]
    fn the_upgrade_authority_reads_from_program_data_bytes() {
        let who = Pubkey::new_unique();
        let mut data = vec![3, 0, 0, 0];
        data.extend_from_slice(&42u64.to_le_bytes());
        data.push(1);
        data.extend_from_slice(who.as_ref());
        data.extend_from_slice(&[0xAA; 16]); // the program's bytes follow
        assert_eq!(upgrade_authority(&data), Some(Some(who)));
        data[12] = 0;
        assert_eq!(upgrade_authority(&data[..13]), Some(None));
        assert_eq!(upgrade_authority(&[2, 0, 0, 0]), None);
        assert_eq!(upgrade_authority(&[3, 0]), None);
        data[12] = 1;
        assert_eq!(upgrade_authority(&data[..20]), None, "truncated key");
    }
}
