//! Line framing: NDJSON frames in, NDJSON frames out (protocol.md A.2, decisions.md D10).
//!
//! * [`LineReader`] reads `\n`-terminated lines from any [`AsyncRead`] with a frame cap. A line
//!   longer than the cap is reported as [`Frame::Oversize`] as soon as the cap is passed, and
//!   the rest of it is discarded as it arrives (never buffered) up to the next `\n`; the reader
//!   then goes on with the next line. A trailing `\r` is dropped, blank lines are skipped, and
//!   a final line without `\n` before EOF is still returned (Node readline does the same).
//! * [`spawn_writer`] runs the one task that owns the output: it writes every queued frame, then
//!   flushes once, so pipelined answers cost one flush per batch rather than one per frame.

use std::io;

use paperclip_sandbox_protocol::jsonrpc::{trim_line, ErrorObject, Message, Response};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The default inbound frame cap: 64 MiB (decisions.md D10).
pub const DEFAULT_FRAME_LIMIT: usize = 64 * 1024 * 1024;

/// One inbound frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A non-blank line, without its `\n` and trailing `\r`. Invalid UTF-8 is replaced with
    /// U+FFFD, as Node's decoder does.
    Line(String),
    /// A line longer than the cap; the reader has started discarding it.
    Oversize {
        /// The cap in force, in bytes.
        limit: usize,
    },
}

impl Frame {
    /// The answer a worker sends for an oversize frame: `-32600`, id `null`.
    pub fn oversize_response(limit: usize) -> Response {
        Response::error(
            None,
            ErrorObject::invalid_request(format_args!("frame exceeds the {limit}-byte limit")),
        )
    }
}

/// A cancellation-safe NDJSON line reader with a frame cap.
///
/// All progress lives in the reader itself (bytes are moved out of the underlying buffer only
/// after they are copied into the pending line), so dropping a [`next_frame`](Self::next_frame)
/// future at any `.await` loses nothing.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    limit: usize,
    discarding: bool,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader with the given frame cap in bytes (`\n` and a trailing `\r` not counted).
    pub fn new(reader: R, limit: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            limit,
            discarding: false,
            eof: false,
        }
    }

    /// The next frame, or `None` at EOF. Blank lines are skipped.
    pub async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            match self.next_raw().await? {
                None => return Ok(None),
                Some(Frame::Line(line)) if trim_line(&line).is_empty() => continue,
                Some(frame) => return Ok(Some(frame)),
            }
        }
    }

    async fn next_raw(&mut self) -> io::Result<Option<Frame>> {
        if self.eof {
            return Ok(None);
        }
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.eof = true;
                if self.discarding || self.line.is_empty() {
                    self.discarding = false;
                    self.line.clear();
                    return Ok(None);
                }
                return Ok(Some(self.take_line()));
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..newline.unwrap_or(available.len())];
            if self.discarding {
                self.inner.consume(take);
                if newline.is_some() {
                    self.discarding = false;
                }
                continue;
            }
            // One byte of slack for a trailing `\r` that is not counted.
            if self.line.len() + chunk.len() > self.limit.saturating_add(1) {
                self.inner.consume(take);
                self.line = Vec::new();
                self.discarding = newline.is_none();
                return Ok(Some(Frame::Oversize { limit: self.limit }));
            }
            self.line.extend_from_slice(chunk);
            self.inner.consume(take);
            if newline.is_some() {
                return Ok(Some(self.take_line()));
            }
        }
    }

    fn take_line(&mut self) -> Frame {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.len() > self.limit {
            self.line.clear();
            return Frame::Oversize { limit: self.limit };
        }
        let bytes = std::mem::take(&mut self.line);
        let line = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Frame::Line(line)
    }
}

/// An item for the writer task.
#[derive(Debug)]
pub enum Outgoing {
    /// A serialized frame, `\n` included.
    Frame(String),
    /// Flush everything queued before this marker, then signal the sender.
    Flush(oneshot::Sender<()>),
}

/// The sending side of the writer task; cheap to clone.
#[derive(Debug, Clone)]
pub struct FrameSink {
    tx: mpsc::UnboundedSender<Outgoing>,
}

impl FrameSink {
    /// Queues one message. Returns `false` when the writer has stopped (output closed).
    pub fn send(&self, message: impl Into<Message>) -> bool {
        self.send_line(message.into().to_line())
    }

    /// Queues one already serialized line (`\n` included).
    pub fn send_line(&self, line: String) -> bool {
        self.tx.send(Outgoing::Frame(line)).is_ok()
    }

    /// Waits until everything queued so far has been written and flushed (or the writer has
    /// stopped).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Outgoing::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// Starts the writer task over `writer`. It ends, after a final flush, when every
/// [`FrameSink`] is dropped, or on the first write error (returned).
pub fn spawn_writer<W>(writer: W) -> (FrameSink, JoinHandle<io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(write_loop(writer, rx));
    (FrameSink { tx }, task)
}

async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) -> io::Result<()> {
    let mut out = tokio::io::BufWriter::with_capacity(256 * 1024, writer);
    let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        // Write the whole batch that is queued right now, then flush once.
        while let Some(item) = next {
            match item {
                Outgoing::Frame(line) => {
                    if let Err(e) = out.write_all(line.as_bytes()).await {
                        tracing::error!(error = %e, "protocol output failed; dropping frames");
                        return Err(e);
                    }
                }
                Outgoing::Flush(done) => waiters.push(done),
            }
            next = rx.try_recv().ok();
        }
        if let Err(e) = out.flush().await {
            tracing::error!(error = %e, "protocol output flush failed");
            return Err(e);
        }
        for done in waiters.drain(..) {
            let _ = done.send(());
        }
    }
    out.flush().await?;
    out.into_inner().shutdown().await.or(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

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
        let line = Message::from(Frame::oversize_response(DEFAULT_FRAME_LIMIT)).to_line();
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
