//! The checks, one module per family. Each check is a plain function over a [`Ctx`]; the
//! registry decides whether it runs.
//!
//! [`Ctx`]: crate::context::Ctx

pub mod envelopes;
pub mod execute;
pub mod framing;
pub mod handshake;
pub mod lifecycle;
pub mod manifest;
pub mod newer;
pub mod shutdown;
pub mod sync;
