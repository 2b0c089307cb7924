//! Fault injection for crash tests: with `BRAINCTL_FAULT_ABORT_AFTER=<step>`
//! the process aborts right after that step (no destructors, no flushes:
//! the same as SIGKILL). Steps: `seen` (a new buy recorded, not yet fetched), `verified`, `envelope_uploaded`,
//! `release_sent` (the release transaction landed but is not yet recorded).
//! Without the variable this does nothing.

/// Env var naming the step to die after.
pub const FAULT_ENV: &str = "BRAINCTL_FAULT_ABORT_AFTER";

/// Aborts the process if the fault env names `step`.
pub fn maybe_abort(step: &str) {
    if std::env::var(FAULT_ENV).is_ok_and(|v| v == step) {
        eprintln!("fault injection: aborting after {step}");
        std::process::abort();
    }
}
