//! How our long-running processes stop (`brainctl marketplace listen`,
//! `brainctl mcp`, `brainctl-indexer run` and `serve`): the first SIGINT or
//! SIGTERM completes every [`Stop::signalled`] future (a service's shutdown
//! future: it stops taking work and returns), and from then on the process
//! has [`Stop::grace`] to end. Past it, a watchdog thread ends the process
//! itself, as does a second signal.
//!
//! Why a stop may cut work short: every service keeps its durable state in
//! SQLite transactions (the seller's buys, the indexer's log, the paid-call
//! ledger), so an exit at any instant is a crash its state machine already
//! survives without repeating a mint or release. So a stop never waits for
//! in-flight sends, RPC retries, HTTP requests held open, or a database
//! another process has locked; a service that answers its shutdown future
//! promptly simply exits before the watchdog fires.
//!
//! The signals are received on the watchdog's own thread, so a service
//! thread busy in synchronous work (a SQLite busy wait, an fsync) cannot
//! delay either the shutdown future or the forced exit.
//!
//! It owns the signal handlers and the watchdog; it never touches a
//! service's state.

use std::time::Duration;
use tokio::sync::watch;

/// How long a process may take to end after its first signal.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Environment variable overriding [`DEFAULT_GRACE`] in milliseconds (for
/// diagnosing what a stop waits for; 0 is refused).
pub const GRACE_ENV: &str = "BRAINCTL_STOP_GRACE_MS";

/// The exit status of a stop the watchdog ended: the stop was asked for
/// and the state is durable, so it is a clean stop.
pub const FORCED_EXIT_CODE: i32 = 0;

/// Why the stop handler could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    /// The signal handlers or the watchdog thread could not be set up.
    #[error("installing the SIGINT/SIGTERM handlers: {0}")]
    Install(#[from] std::io::Error),
    /// [`GRACE_ENV`] is not a positive number of milliseconds.
    #[error("{GRACE_ENV}={0:?}: expected a positive number of milliseconds")]
    BadGrace(String),
}

/// The installed stop handler: clone its [`Stop::signalled`] futures into
/// every part of the service that must stop.
#[derive(Debug, Clone)]
pub struct Stop {
    signalled: watch::Receiver<Option<&'static str>>,
    grace: Duration,
}

impl Stop {
    /// Installs the handlers (before this returns, so a signal sent once
    /// the service is up is never the default action) and the watchdog,
    /// with the grace [`GRACE_ENV`] sets or [`DEFAULT_GRACE`].
    pub fn install() -> Result<Stop, StopError> {
        let grace = match std::env::var(GRACE_ENV) {
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(StopError::BadGrace(v)),
            },
            Err(_) => DEFAULT_GRACE,
        };
        Self::install_with(grace)
    }

    /// [`Stop::install`] with `grace`.
    pub fn install_with(grace: Duration) -> Result<Stop, StopError> {
        let (tx, signalled) = watch::channel(None);
        let (ready_tx, ready) = std::sync::mpsc::sync_channel::<std::io::Result<()>>(1);
        std::thread::Builder::new()
            .name("stop-watchdog".into())
            .spawn(move || watchdog(tx, grace, ready_tx))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(Stop { signalled, grace }),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(StopError::Install(std::io::Error::other(
                "the watchdog thread ended before installing the handlers",
            ))),
        }
    }

    /// The grace a stop has.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Whether a signal has come.
    pub fn is_signalled(&self) -> bool {
        self.signalled.borrow().is_some()
    }

    /// Completes once a stop signal has come (at once if one already
    /// has); any runtime may await it.
    pub fn signalled(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.signalled.clone();
        async move {
            // a dropped sender means the watchdog is gone: never a stop
            if rx.wait_for(|s| s.is_some()).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The watchdog thread: installs the handlers, reports them ready, waits
/// for a signal, tells the service, then ends the process after `grace`
/// (or at a second signal) unless the process has ended first.
fn watchdog(
    tx: watch::Sender<Option<&'static str>>,
    grace: Duration,
    ready: std::sync::mpsc::SyncSender<std::io::Result<()>>,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let which = rt.block_on(async {
        let (mut int, mut term) = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(i), Ok(t)) => (i, t),
            (Err(e), _) | (_, Err(e)) => {
                let _ = ready.send(Err(e));
                return None;
            }
        };
        let _ = ready.send(Ok(()));
        let which = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        tracing::info!(
            signal = which,
            grace_ms = grace.as_millis() as u64,
            "stopping"
        );
        let _ = tx.send(Some(which));
        let again = tokio::select! {
            () = tokio::time::sleep(grace) => false,
            _ = int.recv() => true,
            _ = term.recv() => true,
        };
        Some((which, again))
    });
    let Some((which, again)) = which else {
        return;
    };
    if again {
        tracing::warn!("a second signal: exiting now (state is durable; a restart resumes)");
    } else {
        tracing::warn!(
            signal = which,
            grace_ms = grace.as_millis() as u64,
            "still running after the stop's grace: exiting now (state is durable; a restart resumes)"
        );
    }
    end_now(FORCED_EXIT_CODE);
}

/// Ends the process at once: `_exit`, never `exit`. `exit` runs the
/// process's exit handlers and flushes its streams under their locks, and
/// a service whose main thread is returning at the same instant (its
/// graceful stop finishing just at the grace) runs them too: two `exit`s
/// in one process can wait on each other forever (seen: `brainctl-indexer
/// run` alive 4 s after the watchdog's "exiting now"). Durable state is
/// SQLite transactions, so skipping the handlers loses nothing.
fn end_now(code: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: `_exit` takes no pointers and never returns; it ends every
    // thread of the process without running any handler.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}
