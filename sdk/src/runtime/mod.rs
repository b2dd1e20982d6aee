//! The runtime, as small layers: bytes → frames ([`codec`]) → messages → dispatch
//! ([`dispatch`]) → handler, and back through one writer task; worker→host calls ([`peer`]);
//! the worker's life ([`lifecycle`]); and the process-level guards and stdio streams
//! ([`stdout_guard`], [`stdio`]).

pub mod codec;
pub mod dispatch;
pub mod lifecycle;
pub mod peer;
pub mod stdio;
pub mod stdout_guard;
