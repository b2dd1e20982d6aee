//! The harness's own errors: the ones that stop a run before any check can judge the worker
//! (exit code 2 of `sandbox-conformance run`).

use std::path::PathBuf;

/// Why the harness could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The worker command could not be started.
    #[error("cannot spawn worker `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A file the options name could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A file the options name is not what it should be.
    #[error("{path}: {message}")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and what would be right.
        message: String,
    },
    /// The options contradict each other or miss something.
    #[error("{0}")]
    Usage(String),
}

impl HarnessError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HarnessError::Io { path: path.into(), source }
    }
}
