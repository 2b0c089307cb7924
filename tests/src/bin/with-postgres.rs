//! `with-postgres -- COMMAND [ARGS...]`: runs COMMAND beside a throwaway
//! PostgreSQL server (the tests' [`e2e::postgres`]: initdb in a scratch
//! dir, a free loopback port, stopped and removed afterwards) with its URL
//! in `BRAINCTL_BENCH_PG`; exits with COMMAND's status. For benchmarks
//! that need a database (`brainctl-indexer-bench scale`).

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).skip_while(|a| a == "--").collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: with-postgres -- COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let pg = e2e::postgres::start();
    let status = Command::new(program)
        .args(rest)
        .env("BRAINCTL_BENCH_PG", &pg.url)
        .status();
    drop(pg);
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("with-postgres: {program} exited with {s}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("with-postgres: cannot run {program}: {e}");
            ExitCode::FAILURE
        }
    }
}
