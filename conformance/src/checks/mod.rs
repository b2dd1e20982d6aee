//! The checks, one module per group. Each check is a plain function over a [`Ctx`]; each
//! module ends with its `GROUP` table, and the registry decides whether a check runs. The
//! tables keep one check a line (`#[rustfmt::skip]`), so a group reads as a table.
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
pub mod sync;
