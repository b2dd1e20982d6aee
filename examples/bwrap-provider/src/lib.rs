//! The bwrap provider: the local provider, with each command wrapped by bubblewrap (`bwrap`)
//! when its prerequisites hold.
//!
//! Leases, sync, stop, release and destroy are [`local_provider`]'s hooks, delegated unchanged.
//! Only `environmentExecute` differs: in `bwrap` mode the command runs as
//! `bwrap <sandbox shape> -- <command> <args…>` (or `sudo -n bwrap …`), in `plain` mode exactly
//! as the local provider runs it. A missing prerequisite degrades to `plain`; it never fails a
//! call.
//!
//! | Module | Role |
//! |---|---|
//! | [`config`] | the typed config: the local provider's keys plus `bwrap: "auto" \| "off"` |
//! | [`prereq`] | probing the prerequisites: `command -v bwrap`, root or sudo, user namespaces |
//! | [`wrap`] | the bwrap arguments, the start marker, telling a bwrap failure from a command's |
//! | [`provider`] | [`BwrapProvider`]: mode per call; its hooks (probe, execute with fallback; the rest delegated to the local provider's); its derived plugin manifest (driver key `bwrap`) |
//!
//! # Security model
//!
//! None beyond the local provider's. The wrapper is advisory and best-effort: it keeps
//! well-behaved commands from writing outside their lease by accident, and makes no security
//! claim (see [`wrap`]). The ephemeral sandbox stays the only security posture.

pub mod config;
pub mod prereq;
pub mod provider;
pub mod wrap;

pub use provider::{BwrapProvider, Mode};
