//! The kit's error: a kind and a message for the host's operator.
//!
//! Each error has a [`ErrorKind`] that the wire layer maps to a code (for example
//! [`ErrorKind::InvalidParams`] to `-32602`; [`super::sync_error`] for the sync-error envelope).
//! Messages never contain config values.

use std::fmt;

/// What went wrong, coarsely; decides the wire error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed: a bad path, a bad id, a bad `minimumTimeoutMs`.
    InvalidParams,
    /// A path escapes the lease directory (`..`, or a symlink that leads outside).
    Confinement,
    /// The lease does not exist (any more).
    NotFound,
    /// The lease is stopped; resume it before running commands in it.
    Stopped,
    /// The lease has passed its expiry.
    Expired,
    /// The operation ran out of time.
    Timeout,
    /// A post-upload command failed.
    CommandFailed,
    /// The operation was cancelled.
    Cancelled,
    /// A filesystem or process error.
    Io,
}

/// An error of a provider built on the kit: a kind and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KitError {
    /// The kind, for the wire code.
    pub kind: ErrorKind,
    /// The message, for the operator.
    pub message: String,
    /// The OS error number behind an [`ErrorKind::Io`] error, when there is one.
    pub os_error: Option<i32>,
    /// The exit code of a failed command ([`ErrorKind::CommandFailed`]), when it exited.
    pub exit_code: Option<i32>,
}

impl KitError {
    /// An error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), os_error: None, exit_code: None }
    }

    /// The same error with `prefix: ` before its message.
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }

    /// A malformed request.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }

    /// A filesystem or process error, with what was being done (which names a file by its
    /// role, never by its path). Of `err`, the message keeps the OS's description (for
    /// example `No such file or directory (os error 2)`) or, for an error a library made, only
    /// its kind: a library's own text may quote a path (the `tar` crate's does).
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        let os_error = err.raw_os_error();
        let detail = match os_error {
            Some(_) => err.to_string(),
            None => err.kind().to_string(),
        };
        Self { os_error, ..Self::new(ErrorKind::Io, format!("{what}: {detail}")) }
    }
}

impl fmt::Display for KitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KitError {}

/// Shorthand for results with a [`KitError`].
pub type Result<T, E = KitError> = std::result::Result<T, E>;
