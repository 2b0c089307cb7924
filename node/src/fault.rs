//! Fault injection for crash tests: with `BRAINCTL_FAULT_ABORT_AFTER=<step>`
//! the process aborts right after that step (no destructors, no flushes:
//! the same as SIGKILL). Steps: `seen` (a new buy recorded, not yet
//! fetched), `verified`, `envelope_uploaded`, `release_signed` (a release
//! the chain would take twice kept in the journal, not yet sent),
//! `release_sent` (the release transaction landed but is not yet recorded)
//! in `listen`; `deposit_landed` (a buyer's escrow deposit landed, the
//! `buy` not yet past it) in the buyer's `execute`.
//!
//! Compiled in only with the `fault-injection` feature (the CLI's tests
//! turn it on through a dev-dependency); every other build has a no-op, so
//! no environment variable can abort a user's daemon.

/// Env var naming the step to die after.
pub const FAULT_ENV: &str = "BRAINCTL_FAULT_ABORT_AFTER";

/// Aborts the process if the fault env names `step`.
#[cfg(feature = "fault-injection")]
pub fn maybe_abort(step: &str) {
    if std::env::var(FAULT_ENV).is_ok_and(|v| v == step) {
        eprintln!("fault injection: aborting after {step}");
        std::process::abort();
    }
}

/// Does nothing: this build has no fault injection.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn maybe_abort(_step: &str) {}
