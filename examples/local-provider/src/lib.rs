//! The local provider: each lease is a private directory on this machine.
//!
//! This crate is the `local-provider` example worker. Its core is plain async Rust, so
//! every piece is testable without the JSON-RPC runtime; [`worker`] puts it on the wire:
//!
//! | Module | Role |
//! |---|---|
//! | [`config`] | the typed provider config (`root`, `syncTimeoutMs`) |
//! | [`leases`] | acquire / resume / release / destroy / stop / realize over lease directories |
//! | [`exec`] | run one command in a lease: process group, timeout, cancellation, streaming |
//! | [`provider`] | the `environment*` hooks on the protocol's typed params and results, and the derived plugin manifest |
//! | [`sync`] | `environmentSyncIn` / `environmentSyncOut` operations and post-upload commands |
//! | [`duplex`] | duplex channels: a live command in a lease, its stdin written by the host, its output streamed back |
//! | [`copy`] | bounded, atomic file and directory copies used by [`sync`] |
//! | [`confine`] | path confinement to a lease directory (no `..`, no symlink escape) |
//! | [`glob`] | the small glob matcher behind sync `exclude` patterns |
//! | [`timeutil`] | RFC 3339 timestamps (lease expiry) without a date-time dependency |
//! | [`error`] | the error type shared by the modules |
//! | [`worker`] | the SDK `SandboxProvider` impl: wire errors, streaming, shutdown |
//!
//! # Security model
//!
//! A lease directory is private to the user running the worker (mode `0700`), and every path the
//! host names inside a lease is confined to it (see [`confine`]). The commands the host runs in
//! a lease, however, run as that same user with no further isolation: the local provider is a
//! development and conformance tool, not a security boundary against the code it executes.

pub mod beneath;
pub mod config;
pub mod confine;
pub mod copy;
pub mod duplex;
pub mod error;
pub mod exec;
pub mod glob;
pub mod leases;
pub mod provider;
pub mod sync;
pub mod timeutil;
pub mod worker;

pub use error::{ErrorKind, LocalError};

/// Fills `buf` from the kernel's random source: one `getrandom(2)` call (a sync stages every
/// file under a fresh name, so this is on the per-file path), `/dev/urandom` where the call is
/// refused (a seccomp filter, an old kernel). False when neither filled it.
fn fill_from_kernel(buf: &mut [u8]) -> bool {
    use rustix::rand::{getrandom, GetRandomFlags};
    let want = buf.len();
    match getrandom(&mut *buf, GetRandomFlags::empty()) {
        Ok(n) => n == want,
        Err(rustix::io::Errno::INTR) => {
            getrandom(&mut *buf, GetRandomFlags::empty()).is_ok_and(|n| n == want)
        }
        Err(_) => {
            use std::io::Read;
            std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf)).is_ok()
        }
    }
}

/// A random lowercase hex string of `bytes * 2` characters, from the kernel's random source.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if !fill_from_kernel(&mut buf) {
        // Fall back to a time-and-counter mix; uniqueness, not secrecy, is what callers need.
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
    #[test]
    fn random_hex_is_lowercase_hex_of_twice_the_bytes_and_fresh_each_call() {
        let names: std::collections::HashSet<String> =
            (0..1_000).map(|_| super::random_hex(8)).collect();
        assert_eq!(names.len(), 1_000, "64-bit names repeat");
        for name in &names {
            assert_eq!(name.len(), 16);
            assert!(name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
        assert!(names.iter().any(|n| n.bytes().any(|b| b.is_ascii_alphabetic())));
        let mut buf = [0u8; 32];
        assert!(super::fill_from_kernel(&mut buf));
        assert_ne!(buf, [0u8; 32]);
    }
}
