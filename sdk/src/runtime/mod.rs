//! The runtime, as small layers: bytes → frames ([`codec`]) → messages → dispatch
//! ([`dispatch`]) → handler ([`shared`]), and back through one writer task; the four methods the
//! runtime answers itself ([`builtin`]); worker→host calls ([`peer`]); the serve loop with its
//! endings ([`serve`], polled through [`woken`]); results in parts on their way out
//! ([`result_json`]); and the process-level guards and stdio streams ([`stdout_guard`],
//! [`stdio`]). Everything here is internal; the crate root re-exports the tunables.
//!
//! Layering (no module uses one above it): `result_json`, `woken` → `codec`, `flow`, `stdio`,
//! `stdout_guard` → `peer` → `shared` → `builtin` → `dispatch` → `serve`.

pub(crate) mod builtin;
pub(crate) mod codec;
pub(crate) mod dispatch;
pub(crate) mod flow;
pub(crate) mod peer;
pub(crate) mod result_json;
pub(crate) mod serve;
pub(crate) mod shared;
pub(crate) mod stdio;
pub(crate) mod stdout_guard;
pub(crate) mod woken;

pub use codec::{DEFAULT_FRAME_LIMIT, OUTBOX_HARD_LIMIT, OUTBOX_HIGH_WATER};
pub use dispatch::DEFAULT_MAX_CONCURRENCY;
pub use flow::{DEFAULT_MAX_PENDING_REQUEST_BYTES, DEFAULT_MAX_PENDING_STREAM_BYTES};
pub use peer::DEFAULT_HOST_CALL_TIMEOUT;
pub use result_json::ResultJson;
pub use serve::{RuntimeConfig, ServeEnd, DEFAULT_SHUTDOWN_GRACE};
pub(crate) use shared::Handler;
