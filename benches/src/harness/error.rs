//! The orchestrator's error type.

use std::io;

/// Why a benchmark step failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A child process did not start, misbehaved, failed or timed out.
    #[error("{what}: {detail}")]
    Process {
        /// Which process.
        what: String,
        /// What went wrong, with the tail of its output when useful.
        detail: String,
    },
    /// Output of a tool or endpoint could not be understood.
    #[error("cannot parse {what}: {detail}")]
    Parse {
        /// What was being parsed.
        what: String,
        /// Why it failed.
        detail: String,
    },
    /// Invalid settings.
    #[error("invalid settings: {0}")]
    Config(String),
}

/// Attaches a context message to I/O errors.
pub trait IoContext<T> {
    /// Maps an `io::Error` to [`HarnessError::Io`] with `context`.
    fn context(self, context: impl FnOnce() -> String) -> Result<T, HarnessError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, HarnessError> {
        self.map_err(|source| HarnessError::Io {
            context: context(),
            source,
        })
    }
}
