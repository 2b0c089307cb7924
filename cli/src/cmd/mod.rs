//! One module per command group; [`run`] dispatches.

mod browse;
mod bundle;
mod docs;
mod doctor;
mod escrow;
mod export;
mod files;
mod import;
mod marketplace;
mod mcp;
mod mcp_allow;
mod mcp_http;
mod memory;
mod quarantine;
mod storage;
mod token;
mod verify;
mod wallet;

use crate::args::Command;
use crate::context::Context;
use crate::failure::CliResult;

/// Runs a command; returns the process exit code.
pub fn run(command: Command, ctx: &Context) -> CliResult<u8> {
    match command {
        Command::Wallet(c) => wallet::run(c, ctx),
        Command::Memory(c) => memory::run(c, ctx),
        Command::Export(a) => export::run(a, ctx),
        Command::Verify(a) => verify::run(&a, ctx),
        Command::Import(a) => import::run(&a, ctx),
        Command::Quarantine(c) => quarantine::run(c, ctx),
        Command::Bundle(c) => bundle::run(c, ctx),
        Command::Storage(c) => storage::run(c, ctx),
        Command::Marketplace(c) => marketplace::run(c, ctx),
        Command::Escrow(c) => escrow::run(c, ctx),
        Command::Token(c) => token::run(c, ctx),
        Command::Mcp(a) => mcp::run(a, ctx),
        Command::Doctor(a) => doctor::run(a, ctx),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { out_dir } => docs::man(out_dir.as_deref(), ctx),
    }
}
