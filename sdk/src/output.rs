//! Command output for any backend: [`OutputCollector`] turns the byte chunks a command writes
//! (read from a pipe, a Docker attach stream, an HTTP body…) into the `execute.log` stream and
//! the `environmentExecute` result, by the contract's rules:
//!
//! * **UTF-8 across chunk boundaries.** A character split between two chunks is kept whole;
//!   bytes that are not UTF-8 become U+FFFD (and only those: output that is valid UTF-8 never
//!   gains one).
//! * **Streaming with backpressure.** Each decoded piece goes to an [`OutputSink`] as it
//!   arrives: the [`Context`](crate::Context) streams it as `execute.log` when the call is an
//!   `environmentExecute` (and drops it otherwise), waiting while the host does not read.
//! * **A result that always fits the host's line limit.** stdout and stderr are kept for the
//!   result up to a bound on their *JSON-encoded* size in UTF-16 code units (what the host's
//!   line limit, [`HOST_MAX_LINE_UNITS`], counts; `\u0001` takes six units for one byte): by
//!   default [`DEFAULT_MAX_OUTPUT_UNITS`] each. Past it the text is cut on a character
//!   boundary and the result's metadata says `stdoutTruncated` / `stderrTruncated`; streaming
//!   goes on.
//! * **How the command ended**: [`mark_timed_out`](OutputCollector::mark_timed_out) and
//!   [`mark_cancelled`](OutputCollector::mark_cancelled) set `timedOut` and the `cancelled`
//!   metadata (output read after either is still kept, no longer streamed).
//!
//! ```
//! use paperclip_sandbox_sdk::output::OutputCollector;
//! use paperclip_sandbox_sdk::process::sink_fn;
//! use paperclip_sandbox_sdk::OutputStream;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut streamed = String::new();
//! let mut sink = sink_fn(|_, text: &str| streamed.push_str(text));
//! let mut output = OutputCollector::new();
//! let euro = "€".as_bytes();
//! // A character split across two chunks, as a pipe or a socket may deliver it.
//! output.feed(&mut sink, OutputStream::Stdout, &[b'a', euro[0]]).await;
//! output.feed(&mut sink, OutputStream::Stdout, &euro[1..]).await;
//! let result = output.finish(&mut sink).await.into_execute_result(Some(0), None);
//! assert_eq!(result.stdout, "a€");
//! assert_eq!(streamed, "a€");
//! # });
//! ```
//!
//! [`LocalCommand`](crate::process::LocalCommand) collects through the same type.
//!
//! [`HOST_MAX_LINE_UNITS`]: paperclip_sandbox_protocol::jsonrpc::HOST_MAX_LINE_UNITS

use paperclip_sandbox_protocol::jsonrpc::HOST_MAX_LINE_UNITS;
use paperclip_sandbox_protocol::methods::{ExecuteResult, JsonObject, OutputStream};
use serde_json::Value;

use crate::process::output::Collected;
pub use crate::process::sink::{sink_fn, OutputSink, SinkFn};

/// Room kept in the host's line limit for everything of the answer but stdout and stderr
/// (envelope, id, exit code, signal, metadata).
pub const RESULT_RESERVE_UNITS: usize = 1 << 20;

/// The default bound on each of stdout and stderr in the result, in JSON-encoded UTF-16 code
/// units: half of the host's line limit less [`RESULT_RESERVE_UNITS`].
pub const DEFAULT_MAX_OUTPUT_UNITS: usize = (HOST_MAX_LINE_UNITS - RESULT_RESERVE_UNITS) / 2;

/// The largest piece one [`OutputCollector::feed`] decodes and streams at once: a large
/// chunk (a whole HTTP body) is taken in pieces of this size.
pub(crate) const FEED_PIECE: usize = 512 * 1024;

/// The output of one command, collected and streamed (see the [module docs](self)).
#[derive(Debug)]
pub struct OutputCollector {
    stdout: Collected,
    stderr: Collected,
    timed_out: bool,
    cancelled: bool,
}

impl Default for OutputCollector {
    fn default() -> Self {
        Self::new()
    }
}

impl OutputCollector {
    /// A collector keeping at most [`DEFAULT_MAX_OUTPUT_UNITS`] of each stream.
    pub fn new() -> Self {
        Self::with_max_units(DEFAULT_MAX_OUTPUT_UNITS)
    }

    /// A collector keeping at most `units` JSON-encoded UTF-16 code units of each stream. Keep
    /// twice `units` plus [`RESULT_RESERVE_UNITS`] below the host's line limit.
    pub fn with_max_units(units: usize) -> Self {
        Self::with_reads(units, FEED_PIECE)
    }

    /// A collector whose reads (see [`Collected`]) take at most `read_max` bytes.
    pub(crate) fn with_reads(units: usize, read_max: usize) -> Self {
        OutputCollector {
            stdout: Collected::new(units, read_max),
            stderr: Collected::new(units, read_max),
            timed_out: false,
            cancelled: false,
        }
    }

    /// The collection of one stream (for the local runner, which reads into it in place).
    pub(crate) fn stream_mut(&mut self, stream: OutputStream) -> &mut Collected {
        match stream {
            OutputStream::Stdout => &mut self.stdout,
            OutputStream::Stderr => &mut self.stderr,
        }
    }

    /// Both collections (for the local runner, which reads into them in place).
    pub(crate) fn streams_mut(&mut self) -> (&mut Collected, &mut Collected) {
        (&mut self.stdout, &mut self.stderr)
    }

    /// Sets the flags of [`mark_timed_out`](Self::mark_timed_out) and
    /// [`mark_cancelled`](Self::mark_cancelled) that are true.
    pub(crate) fn mark_ended(&mut self, timed_out: bool, cancelled: bool) {
        self.timed_out |= timed_out;
        self.cancelled |= cancelled;
    }

    /// Takes `bytes` the command wrote on `stream`: the complete characters go to `sink`
    /// (unless the command was already ended), and are kept for the result as far as the bound
    /// allows. An incomplete character at the end waits for the next chunk. Awaiting the sink
    /// is the backpressure: while the host does not read, stop reading the backend too.
    pub async fn feed<S: OutputSink>(&mut self, sink: &mut S, stream: OutputStream, bytes: &[u8]) {
        for part in bytes.chunks(FEED_PIECE) {
            let streaming = !self.is_ended();
            let collected = self.stream_mut(stream);
            let (buf, _) = collected.read_target();
            buf.extend_from_slice(part);
            let piece = collected.piece(part.len());
            let text = collected.text(&piece);
            if streaming && !text.is_empty() {
                sink.chunk(stream, text).await;
            }
            collected.commit(piece);
        }
    }

    /// Ends `stream` (its end of file): bytes still held back, never a whole character,
    /// become one U+FFFD, streamed and kept. Further chunks of that stream are not expected.
    pub async fn end<S: OutputSink>(&mut self, sink: &mut S, stream: OutputStream) {
        let streaming = !self.is_ended();
        if self.stream_mut(stream).finish() && streaming {
            sink.chunk(stream, "\u{FFFD}").await;
        }
    }

    /// Notes that the command was ended at its timeout (`timedOut: true`).
    pub fn mark_timed_out(&mut self) {
        self.timed_out = true;
    }

    /// Notes that the command was ended because the call was cancelled (metadata
    /// `cancelled: true`).
    pub fn mark_cancelled(&mut self) {
        self.cancelled = true;
    }

    /// True once the command was ended (timeout or cancellation): output is no longer
    /// streamed.
    pub fn is_ended(&self) -> bool {
        self.timed_out || self.cancelled
    }

    /// True once `stream` was cut to fit the bound.
    pub fn is_truncated(&self, stream: OutputStream) -> bool {
        match stream {
            OutputStream::Stdout => self.stdout.truncated,
            OutputStream::Stderr => self.stderr.truncated,
        }
    }

    /// Ends both streams ([`end`](Self::end)) and returns what was collected.
    pub async fn finish<S: OutputSink>(mut self, sink: &mut S) -> CollectedOutput {
        self.end(sink, OutputStream::Stdout).await;
        self.end(sink, OutputStream::Stderr).await;
        self.into_output()
    }

    /// What was collected, once both streams ended.
    pub(crate) fn into_output(self) -> CollectedOutput {
        CollectedOutput {
            timed_out: self.timed_out,
            cancelled: self.cancelled,
            stdout_truncated: self.stdout.truncated,
            stderr_truncated: self.stderr.truncated,
            stdout: self.stdout.into_text(),
            stderr: self.stderr.into_text(),
        }
    }
}

/// The output of a command as [`OutputCollector::finish`] gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectedOutput {
    /// stdout, bounded.
    pub stdout: String,
    /// stderr, bounded.
    pub stderr: String,
    /// True when stdout was cut to fit the bound.
    pub stdout_truncated: bool,
    /// True when stderr was cut to fit the bound.
    pub stderr_truncated: bool,
    /// True when the command was ended at its timeout.
    pub timed_out: bool,
    /// True when the command was ended because the call was cancelled.
    pub cancelled: bool,
}

impl CollectedOutput {
    /// The `environmentExecute` result: `exit_code` (or `signal`, its name such as `SIGKILL`,
    /// when a signal ended the command), `timedOut`, stdout, stderr, and `metadata` with
    /// `stdoutTruncated`, `stderrTruncated` and `cancelled` when true.
    pub fn into_execute_result(
        self,
        exit_code: Option<i64>,
        signal: Option<String>,
    ) -> ExecuteResult {
        let mut result = match (exit_code, signal) {
            (Some(code), _) => ExecuteResult::exited(code),
            (None, Some(signal)) => ExecuteResult::signaled(signal),
            (None, None) => ExecuteResult::default(),
        };
        result.timed_out = self.timed_out;
        result.stdout = self.stdout;
        result.stderr = self.stderr;
        let mut metadata = JsonObject::new();
        for (key, set) in [
            ("stdoutTruncated", self.stdout_truncated),
            ("stderrTruncated", self.stderr_truncated),
            ("cancelled", self.cancelled),
        ] {
            if set {
                metadata.insert(key.into(), Value::Bool(true));
            }
        }
        if !metadata.is_empty() {
            result.metadata = Some(metadata);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::sink_fn;

    async fn run(max: usize, chunks: &[(OutputStream, &[u8])]) -> (String, CollectedOutput) {
        let mut streamed = String::new();
        let mut sink = sink_fn(|_, t: &str| streamed.push_str(t));
        let mut c = OutputCollector::with_max_units(max);
        for (stream, bytes) in chunks {
            c.feed(&mut sink, *stream, bytes).await;
        }
        let out = c.finish(&mut sink).await;
        (streamed, out)
    }

    #[tokio::test]
    async fn characters_split_at_every_offset_arrive_whole() {
        let text = "a€😀é\u{1}\n".repeat(50);
        let bytes = text.as_bytes();
        for size in [1, 2, 3, 5, 4093] {
            let chunks: Vec<_> = bytes.chunks(size).map(|c| (OutputStream::Stdout, c)).collect();
            let (streamed, out) = run(DEFAULT_MAX_OUTPUT_UNITS, &chunks).await;
            assert_eq!(out.stdout, text, "chunk size {size}");
            assert_eq!(streamed, text);
            assert!(!out.stdout.contains('\u{FFFD}'));
        }
    }

    #[tokio::test]
    async fn the_bound_counts_encoded_units_and_flags_the_cut() {
        // 100 bytes of \x01 are 600 units encoded: 60 fit in 360.
        let (streamed, out) = run(360, &[(OutputStream::Stderr, &[1u8; 100])]).await;
        assert_eq!(streamed.len(), 100, "streaming goes on past the cut");
        assert_eq!(out.stderr.len(), 60);
        assert!(out.stderr_truncated && !out.stdout_truncated);
        let result = out.into_execute_result(Some(0), None);
        let encoded = serde_json::to_string(&result.stderr).unwrap();
        assert!(encoded.len() - 2 <= 360);
        assert_eq!(result.metadata.unwrap()["stderrTruncated"], Value::Bool(true));
    }

    #[tokio::test]
    async fn bad_and_unfinished_bytes_become_one_replacement_each() {
        let (_, out) = run(1000, &[(OutputStream::Stdout, b"a\xffb\xe2\x82")]).await;
        assert_eq!(out.stdout, "a\u{FFFD}b\u{FFFD}");
    }

    #[tokio::test]
    async fn an_ended_command_keeps_output_but_no_longer_streams() {
        let mut streamed = String::new();
        let mut sink = sink_fn(|_, t: &str| streamed.push_str(t));
        let mut c = OutputCollector::new();
        c.feed(&mut sink, OutputStream::Stdout, b"before ").await;
        c.mark_timed_out();
        c.feed(&mut sink, OutputStream::Stdout, b"after").await;
        let result = c.finish(&mut sink).await.into_execute_result(None, Some("SIGKILL".into()));
        assert_eq!(streamed, "before ");
        assert_eq!(result.stdout, "before after");
        assert!(result.timed_out);
        assert_eq!(result.signal.as_deref(), Some("SIGKILL"));
    }
}
