//! `brainctl`: a thin front end over the `node` library. Parse flags, build
//! one context, run the command, report errors as one line with exit codes
//! documented in `--help`.

mod args;
mod cmd;
mod context;
mod failure;
mod progress;
mod solana_config;
mod terminal;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // the guides' test checks every documented command line parses
    // (cli/tests/docs.rs); nothing runs
    if std::env::var_os("BRAINCTL_PARSE_ONLY").is_some() {
        return ExitCode::SUCCESS;
    }
    quiet_on_closed_stdout();
    init_logging(cli.verbose);
    let json = cli.json;
    match context::Context::new(&cli).and_then(|ctx| cmd::run(cli.command, &ctx)) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            if f.error.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            if json {
                let v = serde_json::json!({"ok": false, "error": f.to_string()});
                let _ = writeln!(std::io::stdout(), "{v}");
            } else {
                let text = f.to_string();
                let _ = writeln!(std::io::stderr(), "error: {}", terminal::safe(&text));
            }
            ExitCode::from(f.code)
        }
    }
}

/// A command line clap refuses: help and version print as usual (exit 0);
/// a usage error exits 2, as one JSON line on stdout when `--json` is
/// among the arguments (a script parsing the output gets an answer).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let wants_json = std::env::args_os().any(|a| a == "--json");
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ if wants_json => {
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ");
            let v = serde_json::json!({"ok": false, "error": first, "usage": true});
            let _ = writeln!(std::io::stdout(), "{v}");
            ExitCode::from(2)
        }
        _ => e.exit(),
    }
}

/// `brainctl memory list | head`: once the reader is gone, a print to the
/// closed pipe ends the command quietly (exit 0, as ripgrep does) instead
/// of a panic's backtrace. SIGPIPE stays ignored (Rust's default): a peer
/// closing a socket must never kill a command mid-payment.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if text.starts_with("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // colours only on a terminal: a service's log file stays plain text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
