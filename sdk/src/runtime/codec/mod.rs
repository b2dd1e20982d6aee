//! Line framing: NDJSON frames in, NDJSON frames out.
//!
//! * [`LineReader`] reads `\n`-terminated lines from any [`AsyncRead`](tokio::io::AsyncRead) with a frame cap. A line
//!   longer than the cap is reported as [`FrameRef::Oversize`] as soon as the cap is passed, and
//!   the rest of it is discarded as it arrives (never buffered) up to the next `\n`; the reader
//!   then goes on with the next line. A trailing `\r` is dropped, blank lines are skipped, and
//!   a final line without `\n` before EOF is still returned (Node readline does the same).
//!   [`LineReader::next_frame_ref`] lends the line instead of allocating it: straight out of
//!   the read buffer when the whole line is there, which is the usual case.
//! * [`spawn_writer`] runs the one task that owns the output. Senders ([`FrameSink`]) serialize
//!   each frame straight into one shared output buffer (no per-frame string, no channel); the
//!   writer swaps that buffer out, writes the whole batch, then flushes once, so pipelined
//!   answers cost one write and one flush per batch rather than one per frame. A frame is
//!   appended whole or not at all (a failed or panicking serialization is rolled back).

mod reader;
#[cfg(test)]
mod tests;
mod writer;

#[cfg(test)]
pub(crate) use reader::Frame;
pub(crate) use reader::{oversize_response, FrameRef, LineReader};
pub(crate) use writer::{spawn_writer, FrameSink};

/// The default inbound frame cap: 64 MiB.
pub const DEFAULT_FRAME_LIMIT: usize = 64 * 1024 * 1024;

/// Buffers above this capacity are given back after use rather than kept for the next frame.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// Output queued beyond this many bytes makes a producer that waits for room wait (the SDK's
/// command runner, [`Context::send_execute_log`](crate::Context::send_execute_log)) then stops reading its command's output, so
/// a host that stops reading stdout leaves the worker's memory flat.
pub const OUTBOX_HIGH_WATER: usize = 4 * 1024 * 1024;

/// Notifications sent without waiting for room ([`Context::execute_log`](crate::Context::execute_log),
/// [`Context::log`](crate::Context::log)) are dropped once
/// this many bytes are queued, so even a provider that never waits cannot grow the queue
/// without bound while the host does not read.
pub const OUTBOX_HARD_LIMIT: usize = 64 * 1024 * 1024;
