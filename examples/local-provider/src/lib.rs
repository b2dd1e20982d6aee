//! The local provider: each lease is a private directory on this machine.
//!
//! This crate is the `local-provider` example worker. Its core is plain async Rust, so
//! every piece is testable without the JSON-RPC runtime; [`provider`] puts it on the wire:
//!
//! | Module | Role |
//! |---|---|
//! | [`config`] | the typed provider config (`root`, `syncTimeoutMs`) |
//! | [`leases`] | acquire / resume / release / destroy / stop / realize over lease directories |
//! | [`exec`] | run one command in a lease: process group, timeout, cancellation, streaming |
//! | [`provider`] | the hooks (the SDK `SandboxProvider` impl: each method written once, on the protocol's typed params and results), the per-config backend, the derived plugin manifest |
//! | [`sync`] | `environmentSyncIn` / `environmentSyncOut` operations and post-upload commands |
//! | [`duplex`] | duplex channels: a live command in a lease, its stdin written by the host, its output streamed back |
//! | [`copy`] | bounded, atomic file and directory copies used by [`sync`] |
//! | [`confine`] | path confinement to a lease directory (no `..`, no symlink escape) |
//! | [`glob`], [`error`], [`random_hex`] | the SDK kit's exclude matcher, error type and names ([`paperclip_sandbox_sdk::kit`]) |
//! | [`timeutil`] | RFC 3339 wire timestamps (lease expiry), from the protocol crate |
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
pub mod exec;
pub mod leases;
pub mod provider;
pub mod sync;

/// The error type shared by the modules: the SDK kit's ([`paperclip_sandbox_sdk::kit`]).
pub mod error {
    pub use paperclip_sandbox_sdk::kit::{ErrorKind, KitError as LocalError, Result};
}
/// The glob matcher behind sync `exclude` patterns: the SDK kit's.
pub use paperclip_sandbox_sdk::kit as glob;
pub use paperclip_sandbox_sdk::kit::random_hex;
/// RFC 3339 timestamps (lease expiry): the protocol's wire timestamps.
pub use paperclip_sandbox_sdk::protocol::wire_time as timeutil;

pub use error::{ErrorKind, LocalError};
