//! Where a running command's output goes: [`OutputSink`] and its implementations.

use std::future::Future;

use paperclip_sandbox_protocol::methods::OutputStream;

use crate::Context;

/// Where a running command's output goes as it arrives.
///
/// [`Context`] streams it to the host as `execute.log`, waiting while the host does not read;
/// `()` discards it. A sink that waits holds the command back (it blocks on its pipe).
pub trait OutputSink: Send {
    /// Takes one chunk of text (never empty, at most 64 KiB of output).
    fn chunk<'a>(
        &'a mut self,
        stream: OutputStream,
        text: &'a str,
    ) -> impl Future<Output = ()> + Send + 'a;
}

impl OutputSink for () {
    async fn chunk<'a>(&'a mut self, _stream: OutputStream, _text: &'a str) {}
}

impl OutputSink for Context {
    async fn chunk<'a>(&'a mut self, stream: OutputStream, text: &'a str) {
        self.send_execute_log(stream, text).await;
    }
}

impl OutputSink for &Context {
    async fn chunk<'a>(&'a mut self, stream: OutputStream, text: &'a str) {
        self.send_execute_log(stream, text).await;
    }
}

/// An [`OutputSink`] calling `f` with each chunk, without waiting (so without backpressure):
/// for tests, or to transform output before handing it on.
///
/// ```
/// use paperclip_sandbox_sdk::process::{sink_fn, OutputSink};
/// let mut seen = String::new();
/// let _sink = sink_fn(|_stream, text: &str| seen.push_str(text));
/// ```
pub fn sink_fn<F: FnMut(OutputStream, &str) + Send>(f: F) -> SinkFn<F> {
    SinkFn(f)
}

/// The sink of [`sink_fn`].
#[derive(Debug, Clone)]
pub struct SinkFn<F>(F);

impl<F: FnMut(OutputStream, &str) + Send> OutputSink for SinkFn<F> {
    async fn chunk<'a>(&'a mut self, stream: OutputStream, text: &'a str) {
        (self.0)(stream, text);
    }
}

impl<S: OutputSink> OutputSink for &mut S {
    fn chunk<'a>(
        &'a mut self,
        stream: OutputStream,
        text: &'a str,
    ) -> impl Future<Output = ()> + Send + 'a {
        (**self).chunk(stream, text)
    }
}
