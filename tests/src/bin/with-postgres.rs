//! `with-postgres [--standby] -- COMMAND [ARGS...]`: runs COMMAND beside a
//! throwaway PostgreSQL server (the tests' [`e2e::postgres`]: initdb in a
//! scratch dir, a free loopback port, stopped and removed afterwards) with
//! its URL in `BRAINCTL_BENCH_PG` (and, with `--standby`, a hot standby of
//! it in `BRAINCTL_BENCH_PG_STANDBY`); exits with COMMAND's status. For
//! benchmarks that need a database (`brainctl-indexer-bench scale`,
//! `tables`).

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let standby = args.first().is_some_and(|a| a == "--standby");
    if standby {
        args.remove(0);
    }
    let args: Vec<String> = args.into_iter().skip_while(|a| a == "--").collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: with-postgres [--standby] -- COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let pg = e2e::postgres::start();
    let replica = standby.then(|| pg.standby());
    let mut command = Command::new(program);
    command.args(rest).env("BRAINCTL_BENCH_PG", &pg.url);
    if let Some(r) = &replica {
        command.env("BRAINCTL_BENCH_PG_STANDBY", &r.url);
    }
    let status = command.status();
    drop(replica);
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
