//! Line framing: NDJSON frames in, NDJSON frames out.
//!
//! * [`LineReader`] reads `\n`-terminated lines from any [`AsyncRead`] with a frame cap. A line
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

use std::borrow::Cow;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use paperclip_sandbox_protocol::jsonrpc::{trim_line, ErrorObject, Id, Message, Response};
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

use super::result_json::{ResultJson, SPLICE_MIN};

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

/// One inbound frame, owned (what the tests compare).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A non-blank line, without its `\n` and trailing `\r`. Invalid UTF-8 is replaced with
    /// U+FFFD, as Node's decoder does.
    Line(String),
    /// A line longer than the cap; the reader has started discarding it.
    Oversize {
        /// The cap in force, in bytes.
        limit: usize,
    },
}

/// The answer a worker sends for an oversize frame: `-32600`, id `null`.
pub(crate) fn oversize_response(limit: usize) -> Response {
    Response::error(
        None,
        ErrorObject::invalid_request(format_args!("frame exceeds the {limit}-byte limit")),
    )
}

/// One inbound frame, lent by the reader until its next read ([`LineReader::next_frame_ref`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameRef<'a> {
    /// A non-blank line, without its `\n` and trailing `\r` (invalid UTF-8 replaced with
    /// U+FFFD, as Node's decoder does); borrowed unless it had to be repaired (invalid
    /// UTF-8).
    Line(Cow<'a, str>),
    /// A line longer than the cap; the reader has started discarding it.
    Oversize {
        /// The cap in force, in bytes.
        limit: usize,
    },
}

#[cfg(test)]
impl FrameRef<'_> {
    /// The owned frame.
    pub(crate) fn into_owned(self) -> Frame {
        match self {
            FrameRef::Line(line) => Frame::Line(line.into_owned()),
            FrameRef::Oversize { limit } => Frame::Oversize { limit },
        }
    }
}

/// Where the line just read lives.
#[derive(Debug, Clone, Copy)]
enum Located {
    Eof,
    Oversize,
    /// The first `n` bytes of the read buffer.
    InBuffer(usize),
    /// The pending-line buffer.
    Assembled,
}

/// What to undo before the next read: the lent line is released only then.
#[derive(Debug, Clone, Copy)]
enum Release {
    Nothing,
    Consume(usize),
    ClearLine,
}

/// A cancellation-safe NDJSON line reader with a frame cap.
///
/// All progress lives in the reader itself (bytes are moved out of the underlying buffer only
/// after they are copied into the pending line, or released when the next read starts), so
/// dropping a [`next_frame`](Self::next_frame) or [`next_frame_ref`](Self::next_frame_ref)
/// future at any `.await` loses nothing.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    limit: usize,
    discarding: bool,
    eof: bool,
    release: Release,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader with the given frame cap in bytes (`\n` and a trailing `\r` not counted).
    pub(crate) fn new(reader: R, limit: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            limit,
            discarding: false,
            eof: false,
            release: Release::Nothing,
        }
    }

    /// The next frame, or `None` at EOF. Blank lines are skipped.
    #[cfg(test)]
    pub(crate) async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        Ok(self.next_frame_ref().await?.map(FrameRef::into_owned))
    }

    /// The next frame, lent until the next call, or `None` at EOF. Blank lines are skipped.
    pub(crate) async fn next_frame_ref(&mut self) -> io::Result<Option<FrameRef<'_>>> {
        let located = loop {
            let located = self.locate_next().await?;
            let blank = match self.bytes(located) {
                // Invalid UTF-8 becomes U+FFFD, which is not blank.
                Some(bytes) => std::str::from_utf8(bytes).is_ok_and(|s| trim_line(s).is_empty()),
                None => false,
            };
            if !blank {
                break located;
            }
        };
        Ok(match located {
            Located::Eof => None,
            Located::Oversize => Some(FrameRef::Oversize { limit: self.limit }),
            Located::InBuffer(_) | Located::Assembled => {
                let bytes = self.bytes(located).unwrap_or_default();
                Some(FrameRef::Line(match std::str::from_utf8(bytes) {
                    Ok(s) => Cow::Borrowed(s),
                    Err(_) => String::from_utf8_lossy(bytes),
                }))
            }
        })
    }

    /// The bytes of a located line.
    fn bytes(&self, located: Located) -> Option<&[u8]> {
        match located {
            Located::InBuffer(n) => Some(&self.inner.buffer()[..n]),
            Located::Assembled => Some(&self.line),
            Located::Eof | Located::Oversize => None,
        }
    }

    fn release(&mut self) {
        match std::mem::replace(&mut self.release, Release::Nothing) {
            Release::Nothing => {}
            Release::Consume(n) => self.inner.consume(n),
            Release::ClearLine => {
                if self.line.capacity() > KEEP_CAPACITY {
                    self.line = Vec::new();
                } else {
                    self.line.clear();
                }
            }
        }
    }

    async fn locate_next(&mut self) -> io::Result<Located> {
        self.release();
        if self.eof {
            return Ok(Located::Eof);
        }
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.eof = true;
                if self.discarding || self.line.is_empty() {
                    self.discarding = false;
                    self.line.clear();
                    return Ok(Located::Eof);
                }
                return Ok(self.finish_assembled());
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk_len = newline.unwrap_or(available.len());
            if self.discarding {
                self.inner.consume(take);
                if newline.is_some() {
                    self.discarding = false;
                }
                continue;
            }
            // One byte of slack for a trailing `\r` that is not counted.
            if self.line.len() + chunk_len > self.limit.saturating_add(1) {
                self.inner.consume(take);
                self.line = Vec::new();
                self.discarding = newline.is_none();
                return Ok(Located::Oversize);
            }
            if self.line.is_empty() && newline.is_some() {
                // The whole line is in the read buffer: lend it from there.
                let mut n = chunk_len;
                if n > 0 && available[n - 1] == b'\r' {
                    n -= 1;
                }
                if n > self.limit {
                    self.inner.consume(take);
                    return Ok(Located::Oversize);
                }
                self.release = Release::Consume(take);
                return Ok(Located::InBuffer(n));
            }
            self.line.extend_from_slice(&available[..chunk_len]);
            self.inner.consume(take);
            if newline.is_some() {
                return Ok(self.finish_assembled());
            }
        }
    }

    fn finish_assembled(&mut self) -> Located {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.len() > self.limit {
            self.line.clear();
            return Located::Oversize;
        }
        self.release = Release::ClearLine;
        Located::Assembled
    }
}

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
    fn append<E: std::fmt::Display>(
        &self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> bool {
        self.append_spliced(|buf, _| write(buf))
    }

    /// [`append`](Self::append) where `write` may also hand over large parts of the frame
    /// as they are, without a copy ([`Splicer::splice`]).
    fn append_spliced<E: std::fmt::Display>(
        &self,
        write: impl FnOnce(&mut Vec<u8>, &mut Splicer) -> Result<(), E>,
    ) -> bool {
        let wake = {
            let mut state = self.outbox.lock();
            if state.closed {
                return false;
            }
            let was_empty = state.queued() == 0;
            let OutboxState { buf, spliced, spliced_len, .. } = &mut *state;
            let start = buf.len();
            let mut frame = Rollback { buf, start };
            let mut splicer = Splicer { parts: Vec::new() };
            if let Err(e) = write(&mut *frame.buf, &mut splicer) {
                tracing::error!(error = %e, "outbound frame does not serialize; dropped");
                return false;
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
        true
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
    #[allow(dead_code)] // for the serve loop's EPIPE ending
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
    /// already serialized result: exactly the line [`Response::success`] gives for it. Parts
    /// of the result of [`SPLICE_MIN`] bytes or more (megabytes of command output) are queued
    /// as they are, not copied.
    pub(crate) fn send_result(&self, id: &Id, result: ResultJson) -> bool {
        self.append_spliced(|buf, splicer| {
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
        })
    }

    /// [`send_result`](Self::send_result) with result text the runtime knows is JSON.
    pub(crate) fn send_result_json(&self, id: &Id, result: &str) -> bool {
        self.append(|buf| {
            result_prefix(buf, id)?;
            buf.extend_from_slice(result.as_bytes());
            buf.push(b'}');
            Ok::<(), serde_json::Error>(())
        })
    }

    /// Queues the error response `{"jsonrpc":"2.0","id":<id or null>,"error":<error>}`:
    /// exactly the line [`Response::error`] gives for it.
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
    let outbox = Arc::new(Outbox::default());
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn execute_log_lines_are_the_notification_lines() {
        use paperclip_sandbox_protocol::jsonrpc::Notification;
        use paperclip_sandbox_protocol::methods::OutputStream;
        let (tx, mut rx) = tokio::io::duplex(1 << 20);
        let (sink, task) = spawn_writer(tx);
        let chunk = "a\"b\\c\n\u{1}\u{7f}é😀 ".repeat(40);
        let cases = [
            (OutputStream::Stdout, chunk.as_str(), Some("inv-\"1\"")),
            (OutputStream::Stderr, "x", None),
        ];
        let mut want = String::new();
        for (stream, chunk, inv) in cases {
            assert!(sink.send_execute_log(stream, chunk, inv));
            let note = Notification {
                method: "execute.log".into(),
                params: Some(serde_json::json!({"stream": stream, "chunk": chunk})),
                invocation: None,
                invocation_id: inv.map(str::to_owned),
            };
            want.push_str(&serde_json::to_string(&Message::from(note)).unwrap());
            want.push('\n');
        }
        drop(sink);
        task.await.unwrap().unwrap();
        let mut got = String::new();
        rx.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, want);
    }

    async fn frames(input: &[u8], limit: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(input, limit);
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(s.to_owned())
    }

    #[tokio::test]
    async fn splits_lines_strips_cr_and_skips_blanks() {
        let got = frames(b"a\r\n\n  \r\nb\n\r\nc", 100).await;
        assert_eq!(got, vec![line("a"), line("b"), line("c")]);
    }

    #[tokio::test]
    async fn oversize_line_is_reported_and_the_next_line_still_read() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        input.extend_from_slice(&[b'y'; 11]);
        input.extend_from_slice(b"\r\nlast\n");
        let got = frames(&input, 10).await;
        assert_eq!(
            got,
            vec![
                Frame::Oversize { limit: 10 },
                line("ok"),
                Frame::Oversize { limit: 10 },
                line("last")
            ]
        );
    }

    #[tokio::test]
    async fn exactly_the_cap_passes_and_cr_is_not_counted() {
        let got = frames(b"0123456789\r\n01234567890\n", 10).await;
        assert_eq!(got, vec![line("0123456789"), Frame::Oversize { limit: 10 }]);
    }

    #[tokio::test]
    async fn oversize_is_detected_without_buffering_the_line() {
        // A 1 MiB line against a 1 KiB cap: the reader stops holding bytes at the cap.
        let (mut tx, rx) = tokio::io::duplex(4096);
        let writer = tokio::spawn(async move {
            tx.write_all(&vec![b'z'; 1 << 20]).await.unwrap();
            tx.write_all(b"\n{\"after\":1}\n").await.unwrap();
        });
        let mut reader = LineReader::new(rx, 1024);
        assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Oversize { limit: 1024 }));
        assert!(reader.line.capacity() <= 64 * 1024, "pending line was not kept");
        assert_eq!(reader.next_frame().await.unwrap(), Some(line("{\"after\":1}")));
        writer.await.unwrap();
        assert_eq!(reader.next_frame().await.unwrap(), None);
    }

    #[tokio::test]
    async fn oversize_answer_matches_d10() {
        let line = Message::from(oversize_response(DEFAULT_FRAME_LIMIT)).to_line();
        assert_eq!(
            line,
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request: frame exceeds the 67108864-byte limit\"}}\n"
        );
    }

    #[tokio::test]
    async fn cancelled_reads_lose_nothing() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut reader = LineReader::new(rx, 100);
        tx.write_all(b"hel").await.unwrap();
        // The read is cancelled mid-line by a timeout; the partial line must survive.
        let r = tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_frame());
        assert!(r.await.is_err());
        tx.write_all(b"lo\n").await.unwrap();
        assert_eq!(reader.next_frame().await.unwrap(), Some(line("hello")));
    }

    #[tokio::test]
    async fn writer_batches_and_flushes() {
        let (tx, mut rx) = tokio::io::duplex(1 << 20);
        let (sink, task) = spawn_writer(tx);
        for i in 0..100u64 {
            assert!(sink.send(Response::success(i.into(), serde_json::Value::Null)));
        }
        sink.flush().await;
        drop(sink);
        task.await.unwrap().unwrap();
        let mut all = String::new();
        rx.read_to_string(&mut all).await.unwrap();
        let lines: Vec<_> = all.lines().collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[7], "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":null}");
    }

    #[tokio::test]
    async fn lent_frames_match_owned_frames() {
        let input = b"a\r\n\n  \r\nb\xff\nccc";
        let mut owned = LineReader::new(&input[..], 100);
        let mut lent = LineReader::new(&input[..], 100);
        while let Some(frame) = owned.next_frame().await.unwrap() {
            let got = lent.next_frame_ref().await.unwrap().map(FrameRef::into_owned);
            assert_eq!(got, Some(frame));
        }
        assert_eq!(lent.next_frame_ref().await.unwrap(), None);
    }

    #[tokio::test]
    async fn raw_answers_are_the_lines_of_response_messages() {
        let (tx, mut rx) = tokio::io::duplex(1 << 20);
        let (sink, task) = spawn_writer(tx);
        let small: Box<serde_json::value::RawValue> =
            serde_json::from_str(r#"{"a":[1,"x"]}"#).unwrap();
        // Queued without a copy, between the frames around it.
        let large = serde_json::value::to_raw_value(&"x\"y".repeat(SPLICE_MIN)).unwrap();
        let error = ErrorObject::method_not_found("nope").with_data(serde_json::json!({"k": 1}));
        let ids = [Id::from(7u64), Id::from("host-1"), Id::from(-3i64)];
        let mut want = String::new();
        for (id, result) in ids.iter().zip([&small, &large, &small]) {
            assert!(sink.send_result(id, result.clone().into()));
            assert!(sink.send_error(Some(id), &error));
            let value: serde_json::Value = serde_json::from_str(result.get()).unwrap();
            want += &Message::from(Response::success(id.clone(), value)).to_line();
            want += &Message::from(Response::error(Some(id.clone()), error.clone())).to_line();
        }
        assert!(sink.send_error(None, &error));
        want += &Message::from(Response::error(None, error.clone())).to_line();
        drop(sink);
        task.await.unwrap().unwrap();
        let mut all = String::new();
        rx.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, want);
    }

    #[tokio::test]
    async fn an_execute_result_in_parts_is_the_line_of_its_response() {
        use paperclip_sandbox_protocol::methods::ExecuteResult;
        let (tx, mut rx) = tokio::io::duplex(1 << 20);
        let (sink, task) = spawn_writer(tx);
        let run = "a".repeat(SPLICE_MIN + 1);
        let result = ExecuteResult::exited(0)
            .with_stdout(format!("{run}\n\"{run}"))
            .with_stderr(format!("é\t{run}"));
        let parts = ResultJson::execute(result.clone()).unwrap();
        assert!(parts.parts().len() > 3, "the long runs are parts of their own");
        let id = Id::from(9u64);
        assert!(sink.send_result(&id, parts));
        assert!(sink.send_error(Some(&id), &ErrorObject::method_not_found("after")));
        drop(sink);
        task.await.unwrap().unwrap();
        let value = serde_json::to_value(&result).unwrap();
        let mut want = Message::from(Response::success(id.clone(), value)).to_line();
        let error = ErrorObject::method_not_found("after");
        want += &Message::from(Response::error(Some(id), error)).to_line();
        let mut all = String::new();
        rx.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, want);
    }

    #[tokio::test]
    async fn a_frame_that_fails_to_serialize_leaves_nothing_behind() {
        struct Broken;
        impl Serialize for Broken {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::{Error, SerializeMap};
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("half", &1)?;
                Err(S::Error::custom("broken"))
            }
        }
        let (tx, mut rx) = tokio::io::duplex(1 << 20);
        let (sink, task) = spawn_writer(tx);
        assert!(!sink.append(|buf| serde_json::to_writer(buf, &Broken)));
        assert!(sink.send_line("{\"ok\":1}\n".to_owned()));
        drop(sink);
        task.await.unwrap().unwrap();
        let mut all = String::new();
        rx.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "{\"ok\":1}\n");
    }

    proptest::proptest! {
        #[test]
        fn chunking_does_not_change_lines(
            lines in proptest::collection::vec("[a-z{}\":,\r ]{0,40}", 0..20),
            cuts in proptest::collection::vec(0usize..2000, 0..10),
        ) {
            let input = lines.join("\n").into_bytes();
            let expected = tokio_test_block(frames(&input, 1000));
            // The same bytes delivered in arbitrary chunks through a pipe.
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
            cuts.sort_unstable();
            let got = tokio_test_block(async move {
                let (mut tx, rx) = tokio::io::duplex(16);
                let feeder = tokio::spawn(async move {
                    let mut start = 0;
                    for cut in cuts.into_iter().chain([input.len()]) {
                        tx.write_all(&input[start..cut.max(start)]).await.unwrap();
                        tx.flush().await.unwrap();
                        start = cut.max(start);
                    }
                });
                let mut reader = LineReader::new(rx, 1000);
                let mut out = Vec::new();
                while let Some(f) = reader.next_frame().await.unwrap() {
                    out.push(f);
                }
                feeder.await.unwrap();
                out
            });
            proptest::prop_assert_eq!(&got, &expected);
            let want: Vec<Frame> = lines
                .iter()
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .filter(|l| !trim_line(l).is_empty())
                .map(line)
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }
}
