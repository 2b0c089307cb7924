//! `with-postgres [--standby] -- COMMAND [ARGS...]`: runs COMMAND beside a
//! throwaway PostgreSQL server (the tests' [`e2e::postgres`]: initdb in a
//! scratch dir, a free loopback port, stopped and removed afterwards) with
//! its URL in `BRAINCTL_BENCH_PG` (and, with `--standby`, a hot standby of
//! it in `BRAINCTL_BENCH_PG_STANDBY`); exits with COMMAND's status. For
//! benchmarks that need a database (`brainctl-indexer-bench scale`,
//! `tables`).
//!
//! The servers are sized as an operator would size a dedicated one
//! ([`server_settings`]: a quarter of memory as shared buffers, checkpoints
//! spaced for bulk loads), not with PostgreSQL's 128 MB defaults; more
//! settings in `WITH_POSTGRES_SETTINGS`. SIGINT
//! and SIGTERM are passed on to COMMAND; the servers stop once it exits.

use std::process::{Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The last SIGINT/SIGTERM received, not yet passed on (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
}

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
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
    let pg = e2e::postgres::start_with(&server_settings());
    let replica = standby.then(|| pg.standby());
    let mut command = Command::new(program);
    command.args(rest).env("BRAINCTL_BENCH_PG", &pg.url);
    if let Some(r) = &replica {
        command.env("BRAINCTL_BENCH_PG_STANDBY", &r.url);
    }
    // a signal while the servers started: stop them, run nothing
    let pending = PENDING.swap(0, Ordering::SeqCst);
    if pending != 0 {
        drop(replica);
        drop(pg);
        eprintln!("with-postgres: signal {pending} during start-up; {program} not run");
        return ExitCode::from(128 + pending as u8);
    }
    let status = command.spawn().and_then(wait_passing_signals);
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

/// Waits for `child`, passing on each SIGINT/SIGTERM this process gets.
fn wait_passing_signals(mut child: std::process::Child) -> std::io::Result<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        let sig = PENDING.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: signals our own child, which we have not reaped
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Settings for a server that has the machine to itself: shared buffers a
/// quarter of memory (at most 4 GiB), the planner told half is page cache,
/// checkpoints no more often than every 2 GiB of WAL or 30 minutes (each
/// of the two servers keeps up to that much WAL on disk).
/// `WITH_POSTGRES_SETTINGS` (space-separated `NAME=VALUE`, e.g.
/// `log_min_duration_statement=20`) come last and win.
fn server_settings() -> Vec<String> {
    let mib = total_memory_mib().unwrap_or(4096);
    let mut settings = vec![
        format!("shared_buffers={}MB", (mib / 4).clamp(128, 4096)),
        format!("effective_cache_size={}MB", (mib / 2).max(256)),
        "max_wal_size=2GB".into(),
        "checkpoint_timeout=30min".into(),
    ];
    let extra = std::env::var("WITH_POSTGRES_SETTINGS").unwrap_or_default();
    settings.extend(extra.split_whitespace().map(str::to_string));
    settings
}

/// `MemTotal` from /proc/meminfo, in MiB.
fn total_memory_mib() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}
