//! The reading half: `\n`-terminated frames with a cap, lent when they can be.

use std::borrow::Cow;
use std::io;

use paperclip_sandbox_protocol::jsonrpc::{trim_line, ErrorObject, Response};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::KEEP_CAPACITY;

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
    pub(super) line: Vec<u8>,
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
