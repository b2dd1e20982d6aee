//! The checks, one module per group. Each check is a plain function over a [`Ctx`]; each
//! check is one row of [`crate::registry::CHECKS`], and the registry decides whether it runs.
//!
//! [`Ctx`]: crate::context::Ctx

pub mod envelopes;
pub mod execute;
pub mod framing;
pub mod handshake;
pub mod ledger;
pub mod lifecycle;
pub mod lints;
pub mod manifest;
pub mod newer;
pub mod runtime;
pub mod shutdown;
pub mod stop;
pub mod sync;
