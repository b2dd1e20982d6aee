//! The worker's life: the runtime-owned methods (`initialize`, `health`, `shutdown`,
//! `configChanged`) and the serve loop with its two endings.
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
//! * Stdin EOF ends reading; in-flight requests finish, their responses are flushed, pending
//!   worker→host calls fail at once (no answer can come any more): [`ServeEnd::Eof`].

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
/// serve loop returns. The host waits 10 s for the worker to exit.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Tunables of the runtime.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// Hooks running at once (at least 1).
    pub max_concurrency: usize,
    /// Inbound frame cap in bytes.
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

/// Why the serve loop ended. Either way the process should exit with code 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// The host sent `shutdown`; its answer is flushed, in-flight calls are cancelled.
    Shutdown,
    /// Stdin reached EOF; every in-flight request was answered and flushed.
    Eof,
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

/// Serves `handler` over `reader`/`writer` until `shutdown` or EOF.
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
        let parsed = match parse_line_raw(&line) {
            // A lone surrogate escape is JSON to the published SDK; read it as U+FFFD.
            Err(e @ FrameError::Parse(ParseErrorDetail::InvalidJson(_))) => {
                match replace_lone_surrogate_escapes(&line) {
                    Some(fixed) => {
                        repaired = fixed;
                        parse_line_raw(&repaired).map_err(|_| e)
                    }
                    None => Err(e),
                }
            }
            other => other,
        };
        match parsed {
            Ok(RawMessage::Request(request)) => dispatch_request(&shared, request, &drain),
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

    peer.close();
    drop(notes);
    drop(drain);
    if matches!(end, Ok(ServeEnd::Shutdown)) {
        // Every in-flight context is cancelled: give the hooks a bounded moment to observe it
        // and clean up (kill the commands they started) before the process exits.
        let _ = tokio::time::timeout(config.shutdown_grace, drained.recv()).await;
    } else {
        // EOF (or a read error): let every in-flight request finish and be answered.
        let _ = drained.recv().await;
        let _ = notes_task.await;
    }
    sink.flush().await;
    drop(writer_task);
    end
}
