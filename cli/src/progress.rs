//! Progress on stderr while a long operation runs (an upload, signing a
//! large store, a listing's uploads and transactions, a wait for a
//! release): a spinner drawn only when stderr is a terminal and output is
//! human, so scripts, agents and `--json` see nothing. Owns no work: the
//! caller keeps the guard alive for as long as the work takes.

use std::io::IsTerminal;
use std::time::Duration;

/// A spinner that ticks by itself until dropped (then it is cleared).
pub struct Spinner(Option<indicatif::ProgressBar>);

impl Spinner {
    /// Starts one saying `message`, if stderr is a terminal and `json` is off.
    pub fn start(json: bool, message: impl Into<String>) -> Spinner {
        if json || !std::io::stderr().is_terminal() {
            return Spinner(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .expect("the template is valid"),
        );
        pb.set_message(crate::terminal::safe(&message.into()).into_owned());
        pb.enable_steady_tick(Duration::from_millis(120));
        Spinner(Some(pb))
    }

    /// Says what is happening now.
    pub fn say(&self, message: impl Into<String>) {
        if let Some(pb) = &self.0 {
            pb.set_message(crate::terminal::safe(&message.into()).into_owned());
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}
