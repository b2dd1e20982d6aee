//! The runtime, as small layers: bytes → frames ([`codec`]) → messages → dispatch
//! ([`dispatch`]) → handler, and back through one writer task; worker→host calls ([`peer`]);
//! the worker's life ([`lifecycle`]); and the process-level guards ([`stdout_guard`]).

pub mod codec;
pub mod dispatch;
pub mod lifecycle;
pub mod peer;
pub mod stdout_guard;
