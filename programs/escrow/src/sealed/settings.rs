//! `init_settings`: the sealed escrow's one Settings account, set by the
//! program's upgrade authority only, every value bounded: a fee of at most
//! 1000 bps, a slash share of 1 to 10,000 bps, a release window of 120 s
//! to 30 days and a dispute window of 10 s to 30 days,
//! a positive stake floor and a treasury that is a rent-exempt system
//! account.

use crate::constants::{
    BPS, MAX_FEE_BPS, MAX_WINDOW_SECS, MIN_RELEASE_WINDOW_SECS, MIN_WINDOW_SECS, SETTINGS_SEED,
};
use crate::error::EscrowError;
use crate::sealed::state::Settings;
use anchor_lang::prelude::*;

/// The values `init_settings` takes.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct SettingsArgs {
    /// Fee on each claim, in basis points.
    pub fee_bps: u16,
    /// Stake share paid on a refund for a missed reveal or proven fraud.
    pub slash_bps: u16,
    /// Seconds the seller has to reveal after a deposit.
    pub release_window_secs: i64,
    /// Seconds the buyer has to prove fraud after a reveal.
    pub dispute_window_secs: i64,
    /// Stake floor at every deposit.
    pub min_stake: u64,
}

/// Accounts of `init_settings`.
#[derive(Accounts)]
pub struct InitSettings<'info> {
    /// The settings PDA, created here.
    #[account(init, payer = admin, space = 8 + Settings::INIT_SPACE, seeds = [SETTINGS_SEED], bump)]
    pub settings: Account<'info, Settings>,
    /// Where fees go: a system account.
    pub treasury: SystemAccount<'info>,
    /// Pays and is recorded as admin: must be the upgrade authority.
    #[account(mut)]
    pub admin: Signer<'info>,
    /// This program's ProgramData, whose upgrade authority is the only admin.
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

/// Checks every bound of `a`.
pub fn check_settings(a: &SettingsArgs) -> Result<()> {
    require!(a.fee_bps <= MAX_FEE_BPS, EscrowError::FeeTooHigh);
    require!(a.slash_bps > 0, EscrowError::ZeroSlash);
    require!(a.slash_bps as u64 <= BPS, EscrowError::SlashTooHigh);
    for (w, min) in [
        (a.release_window_secs, MIN_RELEASE_WINDOW_SECS),
        (a.dispute_window_secs, MIN_WINDOW_SECS),
    ] {
        require!(
            (min..=MAX_WINDOW_SECS).contains(&w),
            EscrowError::WindowOutOfRange
        );
    }
    require!(a.min_stake > 0, EscrowError::ZeroMinStake);
    require!(
        escrow_math::slash_share(a.min_stake, a.slash_bps) > 0,
        EscrowError::ZeroShare
    );
    Ok(())
}

impl InitSettings<'_> {
    /// Checks the bounds and writes the settings.
    pub fn handler(ctx: Context<InitSettings>, args: SettingsArgs) -> Result<()> {
        check_settings(&args)?;
        // a treasury under rent exemption would silently waive every fee
        // that leaves it there (claims pay the seller instead)
        let treasury = &ctx.accounts.treasury;
        require!(
            Rent::get()?.is_exempt(treasury.lamports(), treasury.data_len()),
            EscrowError::TreasuryNotRentExempt
        );
        ctx.accounts.settings.set_inner(Settings {
            admin: ctx.accounts.admin.key(),
            treasury: ctx.accounts.treasury.key(),
            fee_bps: args.fee_bps,
            slash_bps: args.slash_bps,
            release_window_secs: args.release_window_secs,
            dispute_window_secs: args.dispute_window_secs,
            min_stake: args.min_stake,
            bump: ctx.bumps.settings,
        });
        Ok(())
    }
}
