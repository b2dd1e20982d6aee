//! The per-call [`Context`] a hook receives, and the worker's [`CancellationToken`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Id, Invocation};
use paperclip_sandbox_protocol::methods::name;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::runtime::peer::Peer;

/// The most characters (UTF-16 code units, as the host counts them) one `execute.log`
/// notification may carry (protocol.md A.6). Longer chunks are split.
pub const EXECUTE_LOG_MAX_CHUNK: usize = 1_000_000;

/// Cancellation of a call: set when the worker shuts down (the host never cancels a single
/// call; protocol.md A.5).
#[derive(Clone)]
pub struct CancellationToken {
    rx: watch::Receiver<bool>,
}

/// The owner side of a [`CancellationToken`].
#[derive(Debug)]
pub struct CancellationSource {
    tx: watch::Sender<bool>,
}

impl CancellationSource {
    /// A fresh, not cancelled source.
    pub fn new() -> Self {
        CancellationSource { tx: watch::Sender::new(false) }
    }

    /// A token observing this source.
    pub fn token(&self) -> CancellationToken {
        CancellationToken { rx: self.tx.subscribe() }
    }

    /// Cancels every token of this source.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }
}

impl Default for CancellationSource {
    fn default() -> Self {
        Self::new()
    }
}

impl CancellationToken {
    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves when the token is cancelled (or its source is dropped).
    pub async fn cancelled(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|c| *c).await;
    }
}

impl fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken").field("cancelled", &self.is_cancelled()).finish()
    }
}

/// The level of a `log` notification to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `warn`
    Warn,
    /// `error`
    Error,
}

/// The stream an `execute.log` chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecuteStream {
    /// `stdout`
    Stdout,
    /// `stderr`
    Stderr,
}

/// What a hook knows about the call it serves, and its way back to the host.
///
/// Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    method: String,
    request_id: Option<Id>,
    invocation: Option<Invocation>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    peer: Arc<Peer>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("method", &self.inner.method)
            .field("request_id", &self.inner.request_id)
            .field("invocation_id", &self.invocation_id())
            .field("deadline", &self.inner.deadline)
            .finish_non_exhaustive()
    }
}

impl Context {
    pub(crate) fn new(
        method: &str,
        request_id: Option<Id>,
        invocation: Option<Invocation>,
        params: Option<&Value>,
        cancel: CancellationToken,
        peer: Arc<Peer>,
    ) -> Self {
        let deadline = deadline_for(method, params);
        Context {
            inner: Arc::new(Inner {
                method: method.to_owned(),
                request_id,
                invocation,
                cancel,
                deadline,
                peer,
            }),
        }
    }

    /// The wire name of the method being served.
    pub fn method(&self) -> &str {
        &self.inner.method
    }

    /// The id of the host request being served (`None` for a notification).
    pub fn request_id(&self) -> Option<&Id> {
        self.inner.request_id.as_ref()
    }

    /// The host invocation id (`paperclipInvocation.id`), when the host sent one.
    pub fn invocation_id(&self) -> Option<&str> {
        self.inner.invocation.as_ref().map(|i| i.id.as_str())
    }

    /// The company the call acts for (`paperclipInvocation.scope.companyId`).
    pub fn company_id(&self) -> Option<&str> {
        self.inner.invocation.as_ref().map(|i| i.scope.company_id.as_str())
    }

    /// The W3C `traceparent` of the host span, when tracing is on.
    pub fn traceparent(&self) -> Option<&str> {
        self.inner.invocation.as_ref().and_then(|i| i.traceparent.as_deref())
    }

    /// The call's cancellation (cancelled when the worker shuts down).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// True once the call is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// When the call should be done, where known.
    ///
    /// Set only for `environmentExecute` with a positive `params.timeoutMs`: the command's own
    /// timeout, counted from when the request was read. The host's RPC deadline is later than
    /// this (it adds the config's grace, protocol.md G); a provider that honours this deadline
    /// answers `timedOut: true` in time.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Streams a chunk of the running command's output to the host as `execute.log`
    /// notifications (protocol.md A.6).
    ///
    /// Only while serving `environmentExecute`; elsewhere the chunk is dropped (the host would
    /// drop it too). Empty chunks are dropped; chunks longer than [`EXECUTE_LOG_MAX_CHUNK`] are
    /// split on character boundaries. The final result must still carry the full output.
    pub fn execute_log(&self, stream: ExecuteStream, chunk: &str) {
        if self.inner.method != name::ENVIRONMENT_EXECUTE {
            tracing::debug!(method = %self.inner.method, "execute.log outside environmentExecute dropped");
            return;
        }
        for piece in split_utf16(chunk, EXECUTE_LOG_MAX_CHUNK) {
            self.notify(name::EXECUTE_LOG, json!({ "stream": stream, "chunk": piece }));
        }
    }

    /// Sends a `log` notification to the host, which logs it under the plugin's name.
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.notify(name::LOG, json!({ "level": level, "message": message.into() }));
    }

    /// Reads the company's plugin config from the host (`config.get`).
    pub async fn config_get(&self) -> Result<Value, ErrorObject> {
        let params = match self.company_id() {
            Some(c) => json!({ "companyId": c }),
            None => json!({}),
        };
        self.call_host(name::CONFIG_GET, params).await
    }

    /// Calls any worker→host method (protocol.md A.7), tagged with this call's invocation id.
    pub async fn call_host(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let inv = self.invocation_id().map(str::to_owned);
        self.inner.peer.call(method, Some(params), inv).await
    }

    /// Sends any worker→host notification, tagged with this call's invocation id.
    pub fn notify(&self, method: &str, params: Value) {
        let inv = self.invocation_id().map(str::to_owned);
        self.inner.peer.notify(method, Some(params), inv);
    }
}

/// The deadline of a call: `params.timeoutMs` of `environmentExecute`, nothing otherwise.
fn deadline_for(method: &str, params: Option<&Value>) -> Option<Instant> {
    if method != name::ENVIRONMENT_EXECUTE {
        return None;
    }
    let ms = params?.get("timeoutMs")?.as_f64()?;
    if !(ms.is_finite() && ms > 0.0) {
        return None;
    }
    Instant::now().checked_add(Duration::from_millis(ms.min(u32::MAX as f64) as u64))
}

/// Splits `s` into pieces of at most `max` UTF-16 code units, never inside a character.
fn split_utf16(s: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut units) = (0, 0);
    for (i, c) in s.char_indices() {
        if units + c.len_utf16() > max {
            pieces.push(&s[start..i]);
            start = i;
            units = 0;
        }
        units += c.len_utf16();
    }
    if start < s.len() {
        pieces.push(&s[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_respects_utf16_units_and_char_boundaries() {
        assert!(split_utf16("", 3).is_empty());
        assert_eq!(split_utf16("abcdefg", 3), vec!["abc", "def", "g"]);
        // 😀 is two UTF-16 units: it never straddles a boundary.
        assert_eq!(split_utf16("a😀b😀", 2), vec!["a", "😀", "b", "😀"]);
        let long = "é".repeat(EXECUTE_LOG_MAX_CHUNK + 5);
        let parts = split_utf16(&long, EXECUTE_LOG_MAX_CHUNK);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].chars().count(), EXECUTE_LOG_MAX_CHUNK);
        assert_eq!(parts[1].chars().count(), 5);
    }

    #[test]
    fn deadline_only_for_execute_with_timeout() {
        let p = json!({"timeoutMs": 5000});
        assert!(deadline_for(name::ENVIRONMENT_EXECUTE, Some(&p)).is_some());
        assert!(deadline_for(name::ENVIRONMENT_PROBE, Some(&p)).is_none());
        assert!(deadline_for(name::ENVIRONMENT_EXECUTE, Some(&json!({"timeoutMs": 0}))).is_none());
        assert!(deadline_for(name::ENVIRONMENT_EXECUTE, None).is_none());
    }

    #[tokio::test]
    async fn cancellation_reaches_every_token() {
        let source = CancellationSource::new();
        let (a, b) = (source.token(), source.token());
        assert!(!a.is_cancelled());
        let waiter = tokio::spawn(async move { b.cancelled().await });
        source.cancel();
        waiter.await.unwrap();
        assert!(a.is_cancelled());
    }
}
