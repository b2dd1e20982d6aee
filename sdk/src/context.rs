//! The per-call [`Context`] a hook receives, and the worker's [`CancellationToken`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Id, Invocation};
use paperclip_sandbox_protocol::methods::{
    self, name, ConfigGetParams, JsonObject, LogLevel, LogParams, Method, OutputStream, RpcMethod,
    RpcNotification,
};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::watch;

use crate::deadline::Deadline;
use crate::runtime::peer::Peer;

/// Cancellation of a call: set when the worker shuts down (the host never cancels a single
/// call).
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

/// What a hook knows about the call it serves, and its way back to the host.
///
/// Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    method: Cow<'static, str>,
    request_id: Option<Id>,
    invocation: Option<Invocation>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    call_deadline: Option<Deadline>,
    peer: Arc<Peer>,
    /// The identity of the call's wire config, set when its params are read (it holds the
    /// config's secrets: never printed).
    config_key: std::sync::OnceLock<crate::backend::ConfigKey>,
}

/// The deadlines of a call as the runtime reads them with the request ([`deadline_for`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Deadlines {
    /// The command's own timeout ([`Context::deadline`]).
    command: Option<Instant>,
    /// The host's timer less a margin ([`Context::call_deadline`]).
    call: Option<Deadline>,
}

impl From<Option<Instant>> for Deadlines {
    fn from(command: Option<Instant>) -> Self {
        Deadlines { command, call: None }
    }
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
    /// `deadline` comes from [`deadline_for`], taken when the request was read.
    pub(crate) fn new(
        method: Cow<'static, str>,
        request_id: Option<Id>,
        invocation: Option<Invocation>,
        deadlines: impl Into<Deadlines>,
        cancel: CancellationToken,
        peer: Arc<Peer>,
    ) -> Self {
        let Deadlines { command: deadline, call: call_deadline } = deadlines.into();
        Context {
            inner: Arc::new(Inner {
                method,
                request_id,
                invocation,
                cancel,
                deadline,
                call_deadline,
                peer,
                config_key: std::sync::OnceLock::new(),
            }),
        }
    }

    /// This context with another cancellation (the idle-drain hook's is the hold's end).
    pub(crate) fn with_cancellation(&self, cancel: CancellationToken) -> Context {
        let i = &self.inner;
        Context::new(
            i.method.clone(),
            i.request_id.clone(),
            i.invocation.clone(),
            Deadlines { command: i.deadline, call: i.call_deadline },
            cancel,
            i.peer.clone(),
        )
    }

    /// The host profile the worker serves: what `--profile` chose on the worker's command
    /// line (the SDK's [`cli`](crate::cli); [`run_plugin`](crate::run_plugin) and
    /// [`Worker::profile`](crate::Worker::profile) hand it to the runtime), else
    /// `paperclip-2026-11`.
    pub fn profile(&self) -> paperclip_sandbox_protocol::HostProfile {
        self.inner.peer.profile()
    }

    /// Notes the identity of the call's wire config (once; the runtime does it when it
    /// reads the params).
    pub(crate) fn note_config(&self, config: &JsonObject) {
        let _ = self.inner.config_key.get_or_init(|| crate::backend::ConfigKey::of(config));
    }

    /// The identity of the call's wire config, when its params carry one.
    pub(crate) fn config_key(&self) -> Option<&crate::backend::ConfigKey> {
        self.inner.config_key.get()
    }

    /// The worker's open backends.
    pub(crate) fn backends(&self) -> &crate::backend::Backends {
        self.inner.peer.backends()
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
    /// this; a provider that honours this deadline
    /// answers `timedOut: true` in time.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// The call's deadline: the host's timer for this call (its timeout for the method, from
    /// the call's `timeoutMs` and `config`), counted from when the request was read, less a
    /// margin for the answer (see [`Deadline`]). Bound every backend request by it
    /// ([`Deadline::run`]), so a backend that never answers yields an error the host receives,
    /// not the host's own timeout.
    ///
    /// `None` for `environmentAcquireLease` and `environmentResumeLease`, whose budget depends
    /// on the host profile and the driver's declared `defaultAcquireTimeoutMs` (a creation
    /// attempt owns it), and for notifications.
    pub fn call_deadline(&self) -> Option<Deadline> {
        self.inner.call_deadline
    }

    /// Streams a chunk of the running command's output to the host as `execute.log`
    /// notifications, without waiting.
    ///
    /// Only while serving `environmentExecute`; elsewhere the chunk is dropped (the host would
    /// drop it too). Empty chunks are dropped; chunks longer than
    /// [`EXECUTE_LOG_MAX_CHUNK_CHARS`](methods::EXECUTE_LOG_MAX_CHUNK_CHARS) are split on
    /// character boundaries. The final result must still carry the full output.
    ///
    /// While the host does not read, chunks are dropped once the output queue holds
    /// [`OUTBOX_HARD_LIMIT`](crate::OUTBOX_HARD_LIMIT) bytes. Prefer
    /// [`send_execute_log`](Self::send_execute_log), which waits for room instead (what the
    /// SDK's command runner, [`crate::process`], does).
    pub fn execute_log(&self, stream: OutputStream, chunk: &str) {
        if !self.streams_output() {
            return;
        }
        let inv = self.invocation_id();
        for piece in split_chunk(chunk) {
            let sink = self.inner.peer.sink();
            if sink.is_closed() {
                return;
            }
            if sink.queued() >= crate::runtime::codec::OUTBOX_HARD_LIMIT {
                tracing::debug!("protocol output queue full; execute.log chunk dropped");
                return;
            }
            sink.send_execute_log(stream, piece, inv);
        }
    }

    /// Streams a chunk as [`execute_log`](Self::execute_log) does, but first waits while the
    /// output queue is full (more than
    /// [`OUTBOX_HIGH_WATER`](crate::OUTBOX_HIGH_WATER) bytes queued because
    /// the host is not reading). A producer that awaits this stops reading its command's
    /// output meanwhile, so the command blocks on its pipe and memory stays flat. Returns at
    /// once when the host is gone (the chunk is dropped).
    pub async fn send_execute_log(&self, stream: OutputStream, chunk: &str) {
        if !self.streams_output() {
            return;
        }
        let inv = self.invocation_id();
        let sink = self.inner.peer.sink();
        for piece in split_chunk(chunk) {
            sink.wait_for_room().await;
            sink.send_execute_log(stream, piece, inv);
        }
    }

    fn streams_output(&self) -> bool {
        if self.inner.method != name::ENVIRONMENT_EXECUTE {
            tracing::debug!(method = %self.inner.method, "execute.log outside environmentExecute dropped");
            return false;
        }
        true
    }

    /// Sends a `log` notification to the host, which logs it under the plugin's name.
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.notify_typed::<methods::LogNotification>(&LogParams::new(level, message));
    }

    /// Reads the company's plugin config from the host (`config.get`, for this call's company).
    pub async fn config_get(&self) -> Result<JsonObject, ErrorObject> {
        let params = ConfigGetParams::new(self.company_id().map(str::to_owned));
        self.request::<methods::ConfigGet>(&params).await
    }

    /// Calls a typed worker→host method, tagged with this call's invocation id. A result that
    /// does not fit `M::Result` is `-32602`.
    pub async fn request<M: RpcMethod>(
        &self,
        params: &M::Params,
    ) -> Result<M::Result, ErrorObject> {
        let params = serde_json::to_value(params).map_err(ErrorObject::invalid_params)?;
        let result = self.call_host(M::NAME, params).await?;
        crate::error::params_from_value(result).map_err(|e| {
            let detail = e.message.strip_prefix("Invalid params: ").unwrap_or(&e.message);
            ErrorObject::invalid_params(format_args!("{} result from the host: {detail}", M::NAME))
        })
    }

    /// Calls any worker→host method, tagged with this call's invocation id.
    pub async fn call_host(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let inv = self.invocation_id().map(str::to_owned);
        self.inner.peer.call(method, Some(params), inv).await
    }

    /// Sends a typed worker→host notification, tagged with this call's invocation id.
    pub fn notify_typed<N: RpcNotification>(&self, params: &N::Params) {
        match serde_json::to_value(params) {
            Ok(v) => self.notify(N::NAME, v),
            Err(e) => tracing::error!(method = N::NAME, error = %e, "notification not sent"),
        }
    }

    /// Sends any worker→host notification, tagged with this call's invocation id.
    pub fn notify(&self, method: &str, params: Value) {
        let inv = self.invocation_id().map(str::to_owned);
        self.inner.peer.notify(method, Some(params), inv);
    }

    /// The worker's way back to the host, for senders that outlive this call.
    pub(crate) fn peer(&self) -> &Arc<Peer> {
        &self.inner.peer
    }
}

/// `chunk` cut on character boundaries into non-empty pieces of at most
/// [`EXECUTE_LOG_MAX_CHUNK_CHARS`](methods::EXECUTE_LOG_MAX_CHUNK_CHARS) UTF-16 code units,
/// borrowed (no copy).
pub(crate) fn split_chunk(chunk: &str) -> impl Iterator<Item = &str> {
    let mut rest = chunk;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // A UTF-8 byte never stands for more UTF-16 units than bytes, so a short piece needs
        // no counting.
        let cut = if rest.len() <= methods::EXECUTE_LOG_MAX_CHUNK_CHARS {
            rest.len()
        } else {
            let mut units = 0;
            rest.char_indices()
                .find(|(_, c)| {
                    units += c.len_utf16();
                    units > methods::EXECUTE_LOG_MAX_CHUNK_CHARS
                })
                .map_or(rest.len(), |(i, _)| i)
        };
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// The deadlines of a call: the command's, `params.timeoutMs` of `environmentExecute` (read
/// from the raw params, the last one when the key repeats), and the call's
/// ([`Context::call_deadline`]).
pub(crate) fn deadline_for(method: Method, params: Option<&RawValue>) -> Deadlines {
    let read_at = tokio::time::Instant::now();
    let CallParams { timeout_ms, config } = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(CallParams { timeout_ms: None, config: None });
    let command = if method == Method::EnvironmentExecute {
        timeout_ms.and_then(deadline_after)
    } else {
        None
    };
    let call = crate::deadline::call_deadline(method, timeout_ms, config.as_ref(), read_at);
    Deadlines { command, call }
}

fn deadline_after(ms: f64) -> Option<Instant> {
    if !(ms.is_finite() && ms > 0.0) {
        return None;
    }
    Instant::now().checked_add(Duration::from_millis(ms.min(u32::MAX as f64) as u64))
}

/// `params.timeoutMs` as a number (the last one, as a `Value` keeps the last duplicate key;
/// `None` when params is not an object or `timeoutMs` is absent or not a number) and
/// `params.config` when it is an object.
struct CallParams {
    timeout_ms: Option<f64>,
    config: Option<serde_json::Map<String, Value>>,
}

impl<'de> serde::Deserialize<'de> for CallParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, Visitor};

        /// A value read as `Value::as_f64` reads it.
        struct Number(Option<f64>);
        impl<'de> serde::Deserialize<'de> for Number {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Ok(Number(Value::deserialize(d)?.as_f64()))
            }
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CallParams;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("params")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallParams, A::Error> {
                let mut ms = None;
                let mut config = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "timeoutMs" {
                        ms = Some(map.next_value::<Number>()?.0);
                    } else if key == "config" {
                        config = match map.next_value::<Value>()? {
                            Value::Object(object) => Some(object),
                            _ => None,
                        };
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(CallParams { timeout_ms: ms.flatten(), config })
            }
        }
        // Anything but an object has no `timeoutMs`: the visitor's type error reads as `None`.
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_only_for_execute_with_a_positive_number() {
        for (params, expected) in [
            (r#"{"timeoutMs": 5000}"#, true),
            (r#"{"timeoutMs": 0}"#, false),
            (r#"{"timeoutMs": -1}"#, false),
            (r#"{"timeoutMs": "5000"}"#, false),
            (r#"{"timeoutMs": null}"#, false),
            (r#"{"timeoutMs": 1, "timeoutMs": 2.5, "x": [1, {"timeoutMs": 3}]}"#, true),
            (r#"{"timeoutMs": 1, "timeoutMs": null}"#, false),
            (r#"{"timeout\u004ds": 5}"#, true),
            (r#"{"timeoutMs": 1e300}"#, true),
            (r#"{}"#, false),
            (r#"[1]"#, false),
            (r#"7"#, false),
        ] {
            let raw: Box<RawValue> = serde_json::from_str(params).unwrap();
            let got = deadline_for(Method::EnvironmentExecute, Some(&raw));
            assert_eq!(got.command.is_some(), expected, "{params}");
            assert!(got.call.is_some(), "{params}");
            assert!(deadline_for(Method::EnvironmentProbe, Some(&raw)).command.is_none());
        }
        assert!(deadline_for(Method::EnvironmentExecute, None).command.is_none());
        assert!(deadline_for(Method::EnvironmentAcquireLease, None).call.is_none());
    }

    #[test]
    fn chunks_split_on_char_boundaries_without_copying() {
        let max = methods::EXECUTE_LOG_MAX_CHUNK_CHARS;
        assert_eq!(split_chunk("").count(), 0);
        assert_eq!(split_chunk("abc").collect::<Vec<_>>(), ["abc"]);
        let text = "😀".repeat(max / 2 + 1); // two UTF-16 units each
        let pieces: Vec<&str> = split_chunk(&text).collect();
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| methods::js_length(p) <= max));
        assert_eq!(pieces.concat(), text);
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
