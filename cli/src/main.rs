//! `brainctl`: a thin front end over the `node` library. Parse flags, build
//! one context, run the command, report errors as one line with exit codes
//! documented in `--help`.

mod args;
mod cmd;
mod context;
mod failure;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
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
                let _ = writeln!(std::io::stderr(), "error: {f}");
            }
            ExitCode::from(f.code)
        }
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
