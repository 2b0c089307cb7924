//! `initialize_config`: the one Config (treasury, fee, slash share,
//! release window, minimum stake), set by the program's upgrade authority
//! only: whoever deploys the program chooses the treasury, and nobody can
//! front-run the first call with their own.

use crate::constants::{BPS, CONFIG_SEED, MAX_FEE_BPS};
use crate::error::EscrowError;
use crate::state::Config;
use anchor_lang::prelude::*;

/// Accounts of `initialize_config`.
#[derive(Accounts)]
pub struct InitializeConfig<'info> {
    /// The config PDA, created here.
    #[account(init, payer = admin, space = 8 + Config::INIT_SPACE, seeds = [CONFIG_SEED], bump)]
    pub config: Account<'info, Config>,
    /// Pays and is recorded as admin: must be the upgrade authority.
    #[account(mut)]
    pub admin: Signer<'info>,
    /// This program's ProgramData (upgradeable loader), whose upgrade
    /// authority is the only admin.
    #[account(
        seeds = [crate::ID.as_ref()],
        bump,
        seeds::program = anchor_lang::solana_program::bpf_loader_upgradeable::ID,
        constraint = program_data.upgrade_authority_address == Some(admin.key())
            @ EscrowError::NotUpgradeAuthority
    )]
    pub program_data: Account<'info, ProgramData>,
    /// System program.
    pub system_program: Program<'info, System>,
}

impl InitializeConfig<'_> {
    /// Checks the limits and writes the config.
    pub fn handler(
        ctx: Context<InitializeConfig>,
        treasury: Pubkey,
        fee_bps: u16,
        slash_bps: u16,
        release_window_secs: i64,
        min_stake: u64,
    ) -> Result<()> {
        require!(fee_bps <= MAX_FEE_BPS, EscrowError::FeeTooHigh);
        require!(slash_bps as u64 <= BPS, EscrowError::SlashTooHigh);
        require!(release_window_secs > 0, EscrowError::ZeroWindow);
        ctx.accounts.config.set_inner(Config {
            admin: ctx.accounts.admin.key(),
            treasury,
            fee_bps,
            slash_bps,
            release_window_secs,
            min_stake,
            bump: ctx.bumps.config,
        });
        Ok(())
    }
}
