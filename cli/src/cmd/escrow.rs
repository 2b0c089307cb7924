//! `brainctl escrow show|configure`: the escrow program's operator view
//! and its one-time `init_settings` (the work is
//! `node::market::escrow_admin`'s; this maps flags and errors).

use crate::args::{EscrowCmd, EscrowConfigArgs};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use node::escrow::{self, NewSettings};
use node::market::escrow_admin::{configure, ConfigureError, Configured};
use node::market::escrow_trade::{read_settings, EscrowPlanError, EscrowReadError};
use serde_json::json;

pub fn run(cmd: EscrowCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        EscrowCmd::Show => show(ctx),
        EscrowCmd::Configure(a) => configure_cmd(a, ctx),
    }
}

fn show(ctx: &Context) -> CliResult<u8> {
    let chain = ctx.chain()?;
    let program = escrow::PROGRAM_ID;
    let (deployed, config) = match ctx.block_on(read_settings(&chain)) {
        Ok(c) => (true, Some(c)),
        Err(EscrowReadError::Plan(EscrowPlanError::NotDeployed)) => (false, None),
        Err(EscrowReadError::Plan(EscrowPlanError::NoSettings)) => (true, None),
        Err(e) => return Err(e.into()),
    };
    let cfg = config.as_ref().map(|c| {
        json!({
            "admin": c.admin.to_string(),
            "treasury": c.treasury.to_string(),
            "fee_bps": c.fee_bps,
            "slash_bps": c.slash_bps,
            "release_window_secs": c.release_window_secs,
            "dispute_window_secs": c.dispute_window_secs,
            "min_stake_lamports": c.min_stake,
        })
    });
    let v = json!({"ok": true, "program_id": program, "deployed": deployed, "config": cfg});
    ctx.emit(&v, || match (&config, deployed) {
        (_, false) => format!("escrow program {program}: not deployed on this cluster"),
        (None, true) => format!(
            "escrow program {program}: deployed, not configured (its upgrade authority runs `brainctl escrow configure`)"
        ),
        (Some(c), true) => format!(
            "escrow program {program}: deployed and configured (sealed escrow)\n  admin                {}\n  treasury             {}\n  fee                  {} bps, on each claim\n  slash                {} bps of the stake per missed reveal or proven fraud\n  release window       {} s (the seller reveals the key)\n  dispute window       {} s (the buyer may prove a misdelivery)\n  minimum stake        {} lamports, at every deposit",
            c.admin, c.treasury, c.fee_bps, c.slash_bps, c.release_window_secs, c.dispute_window_secs, c.min_stake
        ),
    });
    Ok(0)
}

fn configure_cmd(a: EscrowConfigArgs, ctx: &Context) -> CliResult<u8> {
    let treasury = a.treasury.parse().map_err(|_| {
        Failure::bad_input(anyhow::anyhow!(
            "--treasury {:?} is not a base58 public key",
            a.treasury
        ))
    })?;
    let config = NewSettings {
        treasury,
        fee_bps: a.fee_bps,
        slash_bps: a.slash_bps,
        release_window_secs: a.release_window_secs,
        dispute_window_secs: a.dispute_window_secs,
        min_stake: a.min_stake,
    };
    let wallet = ctx.wallet()?;
    let chain = ctx.chain()?;
    let done = ctx
        .block_on(configure(&chain, &wallet.solana_keypair(), &config))
        .map_err(|e| match e {
            ConfigureError::Setting { .. }
            | ConfigureError::Differs { .. }
            | ConfigureError::TreasuryNotRentExempt { .. } => Failure::bad_input(e),
            other => other.into(),
        })?;
    let v = json!({"ok": true, "program_id": escrow::PROGRAM_ID, "result": done});
    ctx.emit(&v, || match &done {
        Configured::Initialized { signature, slot } => format!(
            "configured escrow program {} at slot {slot} ({signature})",
            escrow::PROGRAM_ID
        ),
        Configured::AlreadyConfigured => format!(
            "escrow program {} already has this config; nothing sent",
            escrow::PROGRAM_ID
        ),
    });
    Ok(0)
}
