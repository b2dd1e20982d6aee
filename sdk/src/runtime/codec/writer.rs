//! The writing half: one shared output buffer, one writer task.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Id, Message};
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

use super::{KEEP_CAPACITY, OUTBOX_HARD_LIMIT, OUTBOX_HIGH_WATER};
use crate::runtime::result_json::{ResultJson, SPLICE_MIN};

/// The output buffer shared by every [`FrameSink`] and the writer task.
#[derive(Debug, Default)]
struct Outbox {
    state: Mutex<OutboxState>,
    /// Wakes the writer: data after an empty buffer, a flush request, or the last sink gone.
    wake: Notify,
    /// Wakes producers waiting for room: the writer took a batch, or output closed.
    room: Notify,
    /// Resolved once output has failed (the host is gone).
    failed: Notify,
    /// The longest frame queued, in UTF-16 code units (the host's line limit).
    line_limit: usize,
    /// Notifications and requests dropped for being over `line_limit`.
    oversize_dropped: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct OutboxState {
    /// Whole frames, `\n` included, not yet taken by the writer.
    buf: Vec<u8>,
    /// Large parts of frames queued as they are, without a copy into `buf`: each goes out
    /// right before the byte of `buf` at its offset (offsets in order).
    spliced: Vec<(usize, Bytes)>,
    /// The bytes of `spliced`.
    spliced_len: usize,
    /// Flush requests: answered once everything queued before them is written and flushed.
    waiters: Vec<oneshot::Sender<()>>,
    /// Live [`FrameSink`]s; the writer ends when none is left.
    senders: usize,
    /// The writer has stopped (output failed): frames are refused.
    closed: bool,
}

impl OutboxState {
    /// Bytes queued and not yet taken by the writer.
    fn queued(&self) -> usize {
        self.buf.len() + self.spliced_len
    }
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, OutboxState> {
        // A panic while a frame was being appended is rolled back by `FrameSink::append`, so a
        // poisoned state is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The sending side of the writer task; cheap to clone.
///
/// Every method appends one whole frame to the shared output buffer (serializing straight into
/// it, under a short lock) and wakes the writer if it may be idle.
#[derive(Debug)]
pub(crate) struct FrameSink {
    outbox: Arc<Outbox>,
}

impl Clone for FrameSink {
    fn clone(&self) -> Self {
        self.outbox.lock().senders += 1;
        FrameSink { outbox: self.outbox.clone() }
    }
}

impl Drop for FrameSink {
    fn drop(&mut self) {
        let last = {
            let mut state = self.outbox.lock();
            state.senders -= 1;
            state.senders == 0
        };
        if last {
            self.outbox.wake.notify_one();
        }
    }
}

/// Large parts of a frame being appended, queued without a copy.
struct Splicer {
    parts: Vec<(usize, Bytes)>,
}

impl Splicer {
    /// Queues `part` as the next bytes of the frame, after what `buf` (the frame's buffer)
    /// holds so far.
    fn splice(&mut self, buf: &[u8], part: Bytes) {
        self.parts.push((buf.len(), part));
    }
}

/// Truncates a half-written frame away unless the frame was completed.
struct Rollback<'a> {
    buf: &'a mut Vec<u8>,
    start: usize,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        self.buf.truncate(self.start);
    }
}

impl FrameSink {
    /// Appends one frame written by `write` (without its `\n`). Returns `false` when the writer
    /// has stopped or `write` failed (nothing is appended then).
    /// A frame over the host's line limit is not queued: it is dropped and counted in a log
    /// line (for answers, see [`send_result`](Self::send_result)).
    pub(super) fn append<E: std::fmt::Display>(
        &self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> bool {
        match self.append_spliced(|buf, _| write(buf)) {
            Appended::Queued => true,
            Appended::Refused => false,
            Appended::TooLong => {
                self.count_oversize();
                false
            }
        }
    }

    fn count_oversize(&self) {
        use std::sync::atomic::Ordering;
        let dropped = self.outbox.oversize_dropped.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(
            dropped,
            limit = self.outbox.line_limit,
            "outbound frame longer than the host's line limit dropped (the host would drop it)"
        );
    }

    /// [`append`](Self::append) where `write` may also hand over large parts of the frame
    /// as they are, without a copy ([`Splicer::splice`]). A frame longer than the host's line
    /// limit is rolled back ([`Appended::TooLong`]).
    fn append_spliced<E: std::fmt::Display>(
        &self,
        write: impl FnOnce(&mut Vec<u8>, &mut Splicer) -> Result<(), E>,
    ) -> Appended {
        let wake = {
            let mut state = self.outbox.lock();
            if state.closed {
                return Appended::Refused;
            }
            let was_empty = state.queued() == 0;
            let limit = self.outbox.line_limit;
            let OutboxState { buf, spliced, spliced_len, .. } = &mut *state;
            let start = buf.len();
            let mut frame = Rollback { buf, start };
            let mut splicer = Splicer { parts: Vec::new() };
            if let Err(e) = write(&mut *frame.buf, &mut splicer) {
                tracing::error!(error = %e, "outbound frame does not serialize; dropped");
                return Appended::Refused;
            }
            if frame_too_long(&frame.buf[start..], &splicer.parts, limit) {
                return Appended::TooLong;
            }
            frame.buf.push(b'\n');
            // Complete: keep it.
            frame.start = frame.buf.len();
            for (at, part) in splicer.parts {
                *spliced_len += part.len();
                spliced.push((at, part));
            }
            was_empty
        };
        if wake {
            self.outbox.wake.notify_one();
        }
        Appended::Queued
    }

    /// Waits while more than [`OUTBOX_HIGH_WATER`] bytes are queued (the host is not reading
    /// fast enough); returns at once when output has closed.
    pub async fn wait_for_room(&self) {
        loop {
            let room = self.outbox.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let state = self.outbox.lock();
                if state.closed || state.queued() < OUTBOX_HIGH_WATER {
                    return;
                }
            }
            room.await;
        }
    }

    /// Bytes queued and not yet taken by the writer.
    pub fn queued(&self) -> usize {
        self.outbox.lock().queued()
    }

    /// True once the output has failed (a write error such as `EPIPE`: the host is gone).
    pub fn is_closed(&self) -> bool {
        self.outbox.lock().closed
    }

    /// Resolves once the output has failed (see [`is_closed`](Self::is_closed)).
    pub async fn closed(&self) {
        loop {
            let failed = self.outbox.failed.notified();
            tokio::pin!(failed);
            failed.as_mut().enable();
            if self.is_closed() {
                return;
            }
            failed.await;
        }
    }

    /// Queues an `execute.log` notification for `chunk` (at most
    /// [`EXECUTE_LOG_MAX_CHUNK_CHARS`](paperclip_sandbox_protocol::methods::EXECUTE_LOG_MAX_CHUNK_CHARS)
    /// UTF-16 code units; the caller splits), serialized straight from the borrowed text: the
    /// line [`Notification`](paperclip_sandbox_protocol::jsonrpc::Notification) gives for it.
    pub(crate) fn send_execute_log(
        &self,
        stream: paperclip_sandbox_protocol::methods::OutputStream,
        chunk: &str,
        invocation_id: Option<&str>,
    ) -> bool {
        use paperclip_sandbox_protocol::json_text::push_json_string;
        use paperclip_sandbox_protocol::jsonrpc::INVOCATION_ID_KEY;
        use paperclip_sandbox_protocol::methods::name;

        // The keys in the order `Notification` writes them; the chunk (the only large part)
        // is escaped once, straight into the output buffer.
        self.append_bounded(|buf| {
            buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
            push_json_string(buf, name::EXECUTE_LOG);
            buf.extend_from_slice(b",\"params\":{\"stream\":");
            serde_json::to_writer(&mut *buf, &stream)?;
            buf.extend_from_slice(b",\"chunk\":");
            push_json_string(buf, chunk);
            buf.push(b'}');
            if let Some(id) = invocation_id {
                buf.push(b',');
                push_json_string(buf, INVOCATION_ID_KEY);
                buf.push(b':');
                push_json_string(buf, id);
            }
            buf.push(b'}');
            Ok::<(), serde_json::Error>(())
        })
    }

    /// Queues one message unless [`OUTBOX_HARD_LIMIT`] bytes are already queued (then it is
    /// dropped and `false` returned). For notifications that may be lost (logs); never for
    /// answers.
    pub fn send_bounded(&self, message: impl Into<Message>) -> bool {
        let message = message.into();
        self.append_bounded(|buf| serde_json::to_writer(buf, &message))
    }

    fn append_bounded<E: std::fmt::Display>(
        &self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> bool {
        if self.outbox.lock().queued() >= OUTBOX_HARD_LIMIT {
            tracing::debug!("protocol output queue full; notification dropped");
            return false;
        }
        self.append(write)
    }

    /// Queues one message. Returns `false` when the writer has stopped (output closed).
    pub(crate) fn send(&self, message: impl Into<Message>) -> bool {
        let message = message.into();
        self.append(|buf| serde_json::to_writer(buf, &message))
    }

    /// Queues one already serialized line (`\n` included).
    #[cfg(test)]
    pub(crate) fn send_line(&self, line: String) -> bool {
        let body = line.strip_suffix('\n').unwrap_or(&line);
        self.append(|buf| {
            buf.extend_from_slice(body.as_bytes());
            Ok::<(), io::Error>(())
        })
    }

    /// Queues the success response `{"jsonrpc":"2.0","id":<id>,"result":<result>}` with an
    /// already serialized result: exactly the line [`Response::success`](paperclip_sandbox_protocol::jsonrpc::Response::success) gives for it. Parts
    /// of the result of [`SPLICE_MIN`] bytes or more (megabytes of command output) are queued
    /// as they are, not copied.
    ///
    /// A result longer than the host's line limit is answered with an error that says so
    /// instead (the host would drop the line, and the call would time out).
    pub(crate) fn send_result(&self, id: &Id, result: ResultJson) -> bool {
        let appended = self.append_spliced(|buf, splicer| {
            result_prefix(buf, id)?;
            for part in result.parts() {
                if part.len() >= SPLICE_MIN {
                    splicer.splice(buf, part.clone());
                } else {
                    buf.extend_from_slice(part);
                }
            }
            buf.push(b'}');
            Ok::<(), serde_json::Error>(())
        });
        self.answered(id, appended)
    }

    /// [`send_result`](Self::send_result) with result text the runtime knows is JSON.
    pub(crate) fn send_result_json(&self, id: &Id, result: &str) -> bool {
        let appended = self.append_spliced(|buf, _| {
            result_prefix(buf, id)?;
            buf.extend_from_slice(result.as_bytes());
            buf.push(b'}');
            Ok::<(), serde_json::Error>(())
        });
        self.answered(id, appended)
    }

    /// Answers `id` with an error when its result was too long for the host's line limit.
    fn answered(&self, id: &Id, appended: Appended) -> bool {
        match appended {
            Appended::Queued => true,
            Appended::Refused => false,
            Appended::TooLong => {
                tracing::error!(
                    limit = self.outbox.line_limit,
                    "a result longer than the host's line limit was replaced by an error"
                );
                self.send_error(Some(id), &oversize_result_error(self.outbox.line_limit))
            }
        }
    }

    /// Queues the error response `{"jsonrpc":"2.0","id":<id or null>,"error":<error>}`:
    /// exactly the line [`Response::error`](paperclip_sandbox_protocol::jsonrpc::Response::error) gives for it.
    pub(crate) fn send_error(&self, id: Option<&Id>, error: &ErrorObject) -> bool {
        self.append(|buf| {
            buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            id.serialize(&mut serde_json::Serializer::new(&mut *buf))?;
            buf.extend_from_slice(b",\"error\":");
            error.serialize(&mut serde_json::Serializer::new(&mut *buf))?;
            buf.push(b'}');
            Ok::<(), serde_json::Error>(())
        })
    }

    /// Waits until everything queued so far has been written and flushed (or the writer has
    /// stopped).
    pub(crate) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.outbox.lock();
            if state.closed {
                return;
            }
            state.waiters.push(tx);
        }
        self.outbox.wake.notify_one();
        let _ = rx.await;
    }
}

/// What [`FrameSink::append_spliced`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Appended {
    Queued,
    /// The writer has stopped, or the frame did not serialize.
    Refused,
    /// Longer than the host's line limit: not queued.
    TooLong,
}

/// True when the frame (`head` with `parts` spliced in) is longer than `limit` UTF-16 code
/// units. A UTF-8 byte never stands for more than one unit but a 4-byte character is 2, so
/// bytes are only counted as units when the byte length is over the limit.
fn frame_too_long(head: &[u8], parts: &[(usize, Bytes)], limit: usize) -> bool {
    let bytes = head.len() + parts.iter().map(|(_, p)| p.len()).sum::<usize>();
    if bytes <= limit {
        return false;
    }
    let units = |b: &[u8]| {
        b.iter().map(|&c| usize::from(c & 0xC0 != 0x80) + usize::from(c >= 0xF0)).sum::<usize>()
    };
    units(head) + parts.iter().map(|(_, p)| units(p)).sum::<usize>() > limit
}

/// The error answering a call whose result is longer than the host's line limit: it says so
/// and quotes nothing of the result.
fn oversize_result_error(limit: usize) -> ErrorObject {
    ErrorObject::new(
        paperclip_sandbox_protocol::error_code::ErrorCode::InternalError,
        format!(
            "The result is longer than the host's line limit ({limit} UTF-16 code units) and \
             was not sent; the provider must bound what it answers"
        ),
    )
}

/// `{"jsonrpc":"2.0","id":<id>,"result":`, the start of a success response.
fn result_prefix(buf: &mut Vec<u8>, id: &Id) -> serde_json::Result<()> {
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    id.serialize(&mut serde_json::Serializer::new(&mut *buf))?;
    buf.extend_from_slice(b",\"result\":");
    Ok(())
}

/// Starts the writer task over `writer`. It ends, after a final flush, when every
/// [`FrameSink`] is dropped, or on the first write error (returned).
pub(crate) fn spawn_writer<W>(writer: W) -> (FrameSink, JoinHandle<io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    spawn_writer_with_limit(writer, paperclip_sandbox_protocol::jsonrpc::HOST_MAX_LINE_UNITS)
}

/// [`spawn_writer`] refusing frames over `line_limit` UTF-16 code units.
pub(crate) fn spawn_writer_with_limit<W>(
    writer: W,
    line_limit: usize,
) -> (FrameSink, JoinHandle<io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let outbox = Arc::new(Outbox { line_limit, ..Outbox::default() });
    outbox.lock().senders = 1;
    let sink = FrameSink { outbox: outbox.clone() };
    let task = tokio::spawn(write_loop(writer, outbox));
    (sink, task)
}

async fn write_loop<W: AsyncWrite + Unpin>(mut out: W, outbox: Arc<Outbox>) -> io::Result<()> {
    let mut batch: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        // Take the whole batch queued right now (and the flush requests behind it).
        let (spliced, waiters, last) = {
            let mut state = outbox.lock();
            std::mem::swap(&mut state.buf, &mut batch);
            state.spliced_len = 0;
            let spliced = std::mem::take(&mut state.spliced);
            (spliced, std::mem::take(&mut state.waiters), state.senders == 0)
        };
        let wrote = !batch.is_empty() || !spliced.is_empty();
        if wrote {
            outbox.room.notify_waiters();
        }
        let result = async {
            let mut at = 0;
            for (to, part) in &spliced {
                out.write_all(&batch[at..*to]).await?;
                out.write_all(part).await?;
                at = *to;
            }
            if at < batch.len() {
                out.write_all(&batch[at..]).await?;
            }
            if wrote || !waiters.is_empty() {
                out.flush().await?;
            }
            Ok::<(), io::Error>(())
        }
        .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "protocol output failed; dropping frames");
            let mut state = outbox.lock();
            state.closed = true;
            state.buf = Vec::new();
            state.spliced = Vec::new();
            state.spliced_len = 0;
            state.waiters.clear();
            drop(state);
            outbox.room.notify_waiters();
            outbox.failed.notify_waiters();
            return Err(e);
        }
        for done in waiters {
            let _ = done.send(());
        }
        if batch.capacity() > KEEP_CAPACITY {
            batch = Vec::with_capacity(64 * 1024);
        } else {
            batch.clear();
        }
        if last {
            // No sink is left, so nothing can be queued after the batch just written.
            break;
        }
        if !wrote {
            outbox.wake.notified().await;
        }
    }
    out.flush().await?;
    out.shutdown().await.or(Ok(()))
}
