//! The worker's life: the runtime-owned methods (`initialize`, `health`, `shutdown`,
//! `configChanged`) and the serve loop with its two endings (protocol.md A.3, A.4).
//!
//! * `initialize` is answered by the runtime: `{ok:true, supportedMethods}`, where
//!   `supportedMethods` is exactly the handler's listed hooks plus `health` and `shutdown`, in
//!   registry order. The provider's own `initialize` hook, if listed, runs first with the
//!   params (missing fields tolerated). A second `initialize` fails with `-32002 Worker already
//!   initialized`, as in the published SDK.
//! * `health` answers `{status:"ok"}` unless the provider lists it.
//! * `configChanged` runs the provider's hook if listed and otherwise answers `null`: the
//!   published SDK accepts it without a hook (and advertises it only with one).
//! * `shutdown` runs the provider's hook if listed, answers (`null`, or the hook's error),
//!   flushes, cancels every in-flight context and ends the serve loop: [`ServeEnd::Shutdown`].
//! * The host is gone when stdin reaches EOF ([`ServeEnd::Eof`]) or writing stdout fails
//!   (`EPIPE`: [`ServeEnd::HostGone`]); a stdio worker also stops on `SIGTERM` or `SIGINT`
//!   ([`ServeEnd::Signal`]), which is what it gets when its parent dies. Each of these runs
//!   the same shutdown as the `shutdown` request, without an answer: every in-flight context
//!   is cancelled at once, the provider's `shutdown` hook runs if listed, in-flight hooks get
//!   [`RuntimeConfig::shutdown_grace`] to end (their answers are still written if the host
//!   reads), pending worker→host calls fail at once (no answer can come any more), and every
//!   process group the SDK's command runner started is ended
//!   ([`end_all_groups`](crate::process::end_all_groups)). The serve loop then returns within
//!   the grace, whatever the host does.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::{
    parse_line_raw, replace_lone_surrogate_escapes, ErrorObject, FrameError, Id, ParseErrorDetail,
    RawMessage, Response,
};
use paperclip_sandbox_protocol::methods::{self, name};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch, Semaphore};

use super::codec::{spawn_writer, Frame, FrameRef, LineReader, DEFAULT_FRAME_LIMIT};
use super::dispatch::DEFAULT_MAX_CONCURRENCY;
use super::dispatch::{dispatch_request, spawn_notification_task, Handler, Shared};
use super::peer::{Peer, DEFAULT_HOST_CALL_TIMEOUT};
use crate::context::{CancellationSource, Context};

/// How long, after `shutdown` is answered and every in-flight context cancelled, the runtime
/// waits for in-flight hooks to end (so they can kill the commands they started) before the
/// serve loop returns. The host waits 10 s for the worker to exit (protocol.md A.4).
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Tunables of the runtime.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// Hooks running at once (at least 1).
    pub max_concurrency: usize,
    /// Inbound frame cap in bytes (decisions.md D10).
    pub frame_limit: usize,
    /// Timeout of a worker→host call.
    pub host_call_timeout: Duration,
    /// After `shutdown`: how long cancelled in-flight hooks get to end ([`DEFAULT_SHUTDOWN_GRACE`]).
    pub shutdown_grace: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            frame_limit: DEFAULT_FRAME_LIMIT,
            host_call_timeout: DEFAULT_HOST_CALL_TIMEOUT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

/// Why the serve loop ended. In every case the process should exit with code 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeEnd {
    /// The host sent `shutdown`; its answer is flushed, in-flight calls are cancelled.
    Shutdown,
    /// Stdin reached EOF: the host is gone. In-flight calls were cancelled and given the
    /// shutdown grace.
    Eof,
    /// Writing stdout failed (`EPIPE`): the host is gone. As for [`ServeEnd::Eof`].
    HostGone,
    /// The stop signal (`SIGTERM`/`SIGINT` for a stdio worker) arrived. As for
    /// [`ServeEnd::Eof`].
    Signal,
}

/// The `supportedMethods` of a handler: its listed hooks plus `health` and `shutdown`, minus
/// `initialize`, in registry order; names outside the registry are not advertised.
pub fn supported_methods(handler: &dyn Handler) -> Vec<&'static str> {
    let listed = handler.implemented_methods();
    methods::METHODS
        .iter()
        .map(|m| m.name)
        .filter(|m| *m != name::INITIALIZE)
        .filter(|m| listed.contains(m) || methods::ALWAYS_SUPPORTED.contains(m))
        .collect()
}

pub(crate) async fn initialize(
    shared: &Shared,
    params: Option<Value>,
    cx: Context,
) -> Result<Value, ErrorObject> {
    if shared.initialized.swap(true, Ordering::SeqCst) {
        return Err(ErrorObject::new(ErrorCode::WorkerError, "Worker already initialized"));
    }
    if shared.implements(name::INITIALIZE) {
        if let Err(e) = shared.call_hook(name::INITIALIZE, params, cx).await {
            // As in the published SDK, a failed setup leaves the worker uninitialized.
            shared.initialized.store(false, Ordering::SeqCst);
            return Err(e);
        }
    }
    Ok(json!({ "ok": true, "supportedMethods": supported_methods(shared.handler.as_ref()) }))
}

pub(crate) async fn health(
    shared: &Shared,
    params: Option<Value>,
    cx: Context,
) -> Result<Value, ErrorObject> {
    if shared.implements(name::HEALTH) {
        return shared.call_hook(name::HEALTH, params, cx).await;
    }
    Ok(json!({ "status": "ok" }))
}

pub(crate) async fn config_changed(
    shared: &Shared,
    params: Option<Value>,
    cx: Context,
) -> Result<Value, ErrorObject> {
    if shared.implements(name::CONFIG_CHANGED) {
        return shared.call_hook(name::CONFIG_CHANGED, params, cx).await.map(|_| Value::Null);
    }
    Ok(Value::Null)
}

/// Answers `shutdown`, flushes, cancels in-flight work and stops the reader.
pub(crate) async fn shutdown(shared: &Shared, params: Option<Value>, cx: Context, id: Id) {
    let answer = if shared.implements(name::SHUTDOWN) {
        shared.call_hook(name::SHUTDOWN, params, cx).await.map(|_| Value::Null)
    } else {
        Ok(Value::Null)
    };
    let response = match answer {
        Ok(v) => Response::success(id, v),
        Err(e) => Response::error(Some(id), e),
    };
    shared.sink.send(response);
    shared.sink.flush().await;
    shared.cancel.cancel();
    shared.stop.send_replace(true);
}

/// Serves `handler` over `reader`/`writer` until `shutdown`, EOF or a failed write.
///
/// Returns an error only when reading fails for a reason other than EOF.
pub async fn serve<R, W>(
    handler: Arc<dyn Handler>,
    config: RuntimeConfig,
    reader: R,
    writer: W,
) -> io::Result<ServeEnd>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(handler, config, reader, writer, std::future::pending()).await
}

/// [`serve`], also ending ([`ServeEnd::Signal`]) when `stop` completes.
pub(crate) async fn serve_until<R, W>(
    handler: Arc<dyn Handler>,
    config: RuntimeConfig,
    reader: R,
    writer: W,
    stop_signal: impl std::future::Future<Output = ()>,
) -> io::Result<ServeEnd>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut stop_signal = std::pin::pin!(stop_signal);
    let (sink, writer_task) = spawn_writer(writer);
    let peer = Arc::new(Peer::new(sink.clone(), config.host_call_timeout));
    let (stop, mut stopped) = watch::channel(false);
    let shared = Arc::new(Shared {
        handler,
        sink: sink.clone(),
        peer: peer.clone(),
        cancel: CancellationSource::new(),
        permits: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
        initialized: false.into(),
        stop,
    });
    let (notes, notes_task) = spawn_notification_task(shared.clone());
    // Every request task holds a clone; `recv` yields `None` once all are dropped.
    let (drain, mut drained) = mpsc::channel::<()>(1);
    let mut lines = LineReader::new(reader, config.frame_limit);

    let end = loop {
        let frame = tokio::select! {
            biased;
            _ = stopped.wait_for(|s| *s) => break Ok(ServeEnd::Shutdown),
            () = &mut stop_signal => break Ok(ServeEnd::Signal),
            () = sink.closed() => break Ok(ServeEnd::HostGone),
            frame = lines.next_frame_ref() => frame,
        };
        let line = match frame {
            Ok(Some(FrameRef::Line(line))) => line,
            Ok(Some(FrameRef::Oversize { limit })) => {
                tracing::warn!(limit, "inbound frame over the cap discarded");
                sink.send(Frame::oversize_response(limit));
                continue;
            }
            Ok(None) => break Ok(ServeEnd::Eof),
            Err(e) => break Err(e),
        };
        let repaired: String;
        let mut repaired_line = false;
        let parsed = match parse_line_raw(&line) {
            // A lone surrogate escape is JSON to the published SDK; read it as U+FFFD.
            Err(e @ FrameError::Parse(ParseErrorDetail::InvalidJson(_))) => {
                match replace_lone_surrogate_escapes(&line) {
                    Some(fixed) => {
                        repaired = fixed;
                        repaired_line = true;
                        parse_line_raw(&repaired).map_err(|_| e)
                    }
                    None => Err(e),
                }
            }
            other => other,
        };
        match parsed {
            Ok(RawMessage::Request(mut request)) => {
                if repaired_line {
                    // The repair changed the id's text if it held a lone surrogate: answer with
                    // the id exactly as received, or the host would never match the answer.
                    if let Some(id) = Id::verbatim_in_line(&line) {
                        if id.to_string() != request.id.to_string() {
                            request.id = id;
                        }
                    }
                }
                dispatch_request(&shared, request, &drain)
            }
            Ok(RawMessage::Notification(note)) => {
                let _ = notes.send(note.into_notification());
            }
            Ok(RawMessage::Response(response)) => peer.route(response),
            Err(bad) => {
                // The wire answer quotes the line (as the published SDK does); the log does not,
                // since the line may carry a config with resolved secrets.
                let kind = match &bad {
                    FrameError::Parse(ParseErrorDetail::InvalidJson(_)) => "not JSON",
                    FrameError::Parse(_) => "not a JSON-RPC 2.0 object",
                    FrameError::Invalid(_) => "not a request, notification or response",
                };
                tracing::warn!(
                    kind,
                    bytes = line.len(),
                    "unusable inbound line answered with an error"
                );
                sink.send(bad.to_response());
            }
        }
    };

    if !matches!(end, Ok(ServeEnd::Shutdown)) {
        tracing::info!(end = ?end.as_ref().ok(), "the host is gone or asked to stop; shutting down");
    }
    let deadline = tokio::time::Instant::now() + config.shutdown_grace;
    peer.close();
    drop(notes);
    drop(drain);
    if !matches!(end, Ok(ServeEnd::Shutdown)) {
        // The same shutdown as the request, without an answer: cancel first, so commands end
        // at once, then the provider's hook.
        shared.cancel.cancel();
        if shared.implements(name::SHUTDOWN) {
            let cx = shared.runtime_context(name::SHUTDOWN);
            let hook = shared.call_hook(name::SHUTDOWN, None, cx);
            if tokio::time::timeout_at(deadline, hook).await.is_err() {
                tracing::warn!("the shutdown hook did not end within the grace");
            }
        }
    }
    // Every in-flight context is cancelled: give the hooks a bounded moment to observe it
    // and clean up (kill the commands they started) before the process exits.
    let _ = tokio::time::timeout_at(deadline, drained.recv()).await;
    let _ = tokio::time::timeout_at(deadline, notes_task).await;
    let ended = crate::process::end_all_groups();
    if ended > 0 {
        tracing::info!(ended, "ended the process groups still running");
    }
    // A host that stopped reading cannot hold the exit up.
    let flush_by =
        deadline.max(tokio::time::Instant::now() + std::time::Duration::from_millis(200));
    let _ = tokio::time::timeout_at(flush_by, sink.flush()).await;
    drop(writer_task);
    end
}
