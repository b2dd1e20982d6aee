//! The provider kit: the contract rules a provider needs beyond one hook, written once for
//! any backend.
//!
//! * [`KitError`] and its [`ErrorKind`]: an error with a message for the host's operator, which
//!   [`sync_error`] turns into the sync-error envelope (`errorCode` from the OS error,
//!   `ETIMEDOUT` for a timeout, `transferStep: sandbox_guard` for a confinement refusal…).
//! * [`Excludes`]: the sync `exclude` patterns, applied as `tar --exclude` does.
//! * [`effective_sync_timeout_ms`]: the transfer timeout of a sync call, with the host's
//!   `minimumTimeoutMs` read only from hosts of the profile that sends it.
//! * [`acquire`]: the host's requested expiry ([`acquire::RequestedExpiry`]) and the
//!   acquisition budget kept inside the call's deadline ([`acquire::acquire_budget`]).
//! * [`config`]: `deserialize_with` validators for a typed config (whole numbers in a range,
//!   CPU counts, `uid:gid`, image references…) that answer with the expected form, never the
//!   value.
//! * [`creation`]: creation attempts — the creation name, ownership labels, the bounded
//!   create over a [`creation::CreationBackend`], the cleanup envelope, `destroy_failed_create`.
//! * [`tar`]: tar streams packed from, and unpacked into, the host's files with the sync
//!   rules (modes, excludes, symlinks, confinement of entries), through channels.
//! * [`transfer`]: the order, confinement and deadline rules of a sync call
//!   ([`transfer::run_operations`], [`transfer::confine_lexically`], post-upload commands).
//! * [`random_hex`]: fresh names from the kernel's random source.
//!
//! Command output is [`crate::output`]; the call's deadline [`Deadline`](crate::Deadline); wire
//! timestamps [`crate::protocol::wire_time`].

pub mod acquire;
pub mod config;
pub mod creation;
mod error;
mod glob;
pub mod tar;
pub mod transfer;

pub use error::{ErrorKind, KitError, Result};
pub use glob::{Excludes, Glob, MAX_PATTERNS, MAX_PATTERN_LEN};

use paperclip_sandbox_protocol::envelope::sync_error::{
    SyncErrorCode, TransferFailureKind, TransferStep,
};
use paperclip_sandbox_protocol::envelope::SyncDiagnostic;
use paperclip_sandbox_protocol::methods::sync::{self as psync, InvalidMinimumTimeout, SyncParams};
use paperclip_sandbox_protocol::HostProfile;

use crate::ProviderError;

/// The sync-error code of an OS error number.
pub fn os_error_code(errno: i32) -> SyncErrorCode {
    match errno {
        libc::ENOENT => SyncErrorCode::Enoent,
        libc::EACCES => SyncErrorCode::Eacces,
        libc::EPERM => SyncErrorCode::Eperm,
        libc::ENOSPC => SyncErrorCode::Enospc,
        libc::EIO => SyncErrorCode::Eio,
        libc::EXDEV => SyncErrorCode::Exdev,
        libc::ENOTDIR => SyncErrorCode::Enotdir,
        libc::EISDIR => SyncErrorCode::Eisdir,
        libc::EPIPE => SyncErrorCode::Epipe,
        libc::ETIMEDOUT => SyncErrorCode::Etimedout,
        _ => SyncErrorCode::Unknown,
    }
}

/// The sync diagnostic of a failed transfer: `ETIMEDOUT` for [`ErrorKind::Timeout`], `EACCES`
/// at `sandbox_guard` for [`ErrorKind::Confinement`], `command_failed` with the exit code for
/// [`ErrorKind::CommandFailed`], `ENOENT` at `sandbox_access` for [`ErrorKind::NotFound`], the
/// OS error's code otherwise.
pub fn sync_diagnostic(e: &KitError) -> SyncDiagnostic {
    match e.kind {
        ErrorKind::Timeout => SyncDiagnostic::new(SyncErrorCode::Etimedout),
        ErrorKind::Confinement => SyncDiagnostic::new(SyncErrorCode::Eacces)
            .with_transfer_step(TransferStep::SandboxGuard),
        ErrorKind::CommandFailed => {
            let d = SyncDiagnostic::new(SyncErrorCode::Unknown)
                .with_transfer_failure_kind(TransferFailureKind::CommandFailed);
            match e.exit_code {
                Some(code) => d.with_exit_code(i64::from(code)).unwrap_or(d),
                None => d,
            }
        }
        ErrorKind::NotFound => SyncDiagnostic::new(SyncErrorCode::Enoent)
            .with_transfer_step(TransferStep::SandboxAccess),
        _ => SyncDiagnostic::new(e.os_error.map_or(SyncErrorCode::Unknown, os_error_code)),
    }
}

/// The answer of a sync hook that failed with `e`: `-32602` for
/// [`ErrorKind::InvalidParams`], otherwise the sync-error envelope ([`sync_diagnostic`]).
pub fn sync_error(e: KitError) -> ProviderError {
    if e.kind == ErrorKind::InvalidParams {
        return ProviderError::invalid_params(e.message);
    }
    let diagnostic = sync_diagnostic(&e);
    ProviderError::sync(e.message, diagnostic)
}

/// The transfer timeout of a sync call in milliseconds: max(`minimumTimeoutMs`, validated and
/// read only from hosts of `profile` when it is `paperclip-2026-11`, `configured_ms`).
/// `SyncParams::effective_timeout_ms` for params of any config type.
pub fn effective_sync_timeout_ms<C>(
    params: &SyncParams<C>,
    profile: HostProfile,
    configured_ms: u64,
) -> std::result::Result<u64, InvalidMinimumTimeout> {
    let minimum = match profile.is_november() {
        true => psync::validate_minimum_timeout_ms(params.minimum_timeout_ms.as_ref())?,
        false => None,
    };
    Ok(psync::effective_sync_timeout_ms(minimum, configured_ms))
}

/// Fills `buf` from the kernel's random source: one `getrandom(2)` call, `/dev/urandom` where
/// the call is refused (a seccomp filter, an old kernel). False when neither filled it.
fn fill_from_kernel(buf: &mut [u8]) -> bool {
    let want = buf.len();
    for _ in 0..2 {
        // SAFETY: getrandom(2) writes at most `want` bytes into `buf`, which it owns mutably.
        let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), want, 0) };
        if n >= 0 {
            return n as usize == want;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    use std::io::Read;
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf)).is_ok()
}

/// A random lowercase hex string of `bytes * 2` characters, from the kernel's random source
/// (a time-and-counter mix where there is none: uniqueness, not secrecy, is what names need).
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if !fill_from_kernel(&mut buf) {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut x = nanos
            ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_left(32)
            ^ u64::from(std::process::id());
        for b in &mut buf {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    buf.iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)] as char, HEX[usize::from(b & 15)] as char])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_hex_is_lowercase_hex_of_twice_the_bytes_and_fresh_each_call() {
        let names: std::collections::HashSet<String> = (0..1_000).map(|_| random_hex(8)).collect();
        assert_eq!(names.len(), 1_000, "64-bit names repeat");
        for name in &names {
            assert_eq!(name.len(), 16);
            assert!(name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
        let mut buf = [0u8; 32];
        assert!(fill_from_kernel(&mut buf));
        assert_ne!(buf, [0u8; 32]);
    }

    #[test]
    fn sync_errors_carry_the_envelope_and_bad_params_do_not() {
        let e = KitError::io("write", std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(sync_diagnostic(&e), SyncDiagnostic::new(SyncErrorCode::Enospc));
        assert_eq!(sync_error(KitError::invalid("bad")).code(), -32602);
        assert_eq!(sync_error(KitError::new(ErrorKind::Timeout, "slow")).code(), -32002);
    }

    /// A library's I/O error may quote a path (the `tar` crate's "… when setting path for
    /// <path>"): only its kind is kept; the OS's description is kept whole.
    #[test]
    fn io_errors_keep_the_os_description_and_drop_a_librarys_text() {
        let made = std::io::Error::other("too long when setting path for /home/sentinel-6d02");
        assert_eq!(KitError::io("packing", made).message, "packing: other error");
        let os = KitError::io("writing", std::io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(os.message, "writing: No such file or directory (os error 2)");
    }
}
