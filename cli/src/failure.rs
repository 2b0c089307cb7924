//! The CLI's error: a message chain plus the exit code it maps to.

use std::fmt;

/// Exit code for failures (refusals, tampering, operation errors).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for bad input (malformed files, invalid arguments).
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error with its exit code.
pub struct Failure {
    /// Process exit code.
    pub code: u8,
    /// What went wrong, with context.
    pub error: anyhow::Error,
}

impl Failure {
    /// A bad-input failure.
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: EXIT_BAD_INPUT,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: EXIT_FAILURE,
            error: e.into(),
        }
    }
}

impl fmt::Display for Failure {
    /// One line: the error and its causes joined by `: `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chain: Vec<String> = self.error.chain().map(ToString::to_string).collect();
        let mut line = String::new();
        for part in chain {
            if !line.contains(&part) {
                if !line.is_empty() {
                    line.push_str(": ");
                }
                line.push_str(&part);
            }
        }
        f.write_str(&line)
    }
}

/// CLI result.
pub type CliResult<T = ()> = Result<T, Failure>;
