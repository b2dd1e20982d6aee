//! The serve loop and its endings.
//!
//! * `shutdown` (answered by [`super::builtin`]) ends the serve loop: [`ServeEnd::Shutdown`].
//! * The host is gone when stdin reaches EOF ([`ServeEnd::Eof`]) or when it closes its end of
//!   stdout ([`ServeEnd::HostGone`]): a write that fails (`EPIPE`), or, for a stdio worker
//!   whose stdout is a pipe or a socket, the closed end seen at once even while nothing is
//!   written (the descriptor's error/hang-up event); a stdio worker also stops on `SIGTERM` or `SIGINT`
//!   ([`ServeEnd::Signal`]), which is what it gets when its parent dies. Each of these runs
//!   the same shutdown as the `shutdown` request, without an answer: every in-flight context
//!   is cancelled at once, the provider's `shutdown` hook runs if listed, in-flight hooks get
//!   [`RuntimeConfig::shutdown_grace`] to end (their answers are still written if the host
//!   reads), pending worker→host calls fail at once (no answer can come any more), and every
//!   process group the SDK's command runner started is ended
//!   ([`end_all_groups`](crate::process::end_all_groups)). The serve loop then returns within
//!   the grace, whatever the host does.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use paperclip_sandbox_protocol::jsonrpc::{
    parse_line_raw, replace_lone_surrogate_escapes, FrameError, Id, ParseErrorDetail, RawMessage,
};
use paperclip_sandbox_protocol::methods::Method;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch, Semaphore};

use super::codec::{oversize_response, spawn_writer, FrameRef, LineReader, DEFAULT_FRAME_LIMIT};
use super::dispatch::{dispatch_request, spawn_notification_task, DEFAULT_MAX_CONCURRENCY};
use super::flow::{
    Budget, Streams, DEFAULT_MAX_PENDING_REQUEST_BYTES, DEFAULT_MAX_PENDING_STREAM_BYTES,
};
use super::peer::{Peer, DEFAULT_HOST_CALL_TIMEOUT};
use super::shared::{Handler, Shared};
use super::woken::WokenOnly;
use crate::context::CancellationSource;
use crate::idle::{Admission, IdleGate};

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
    /// Params bytes of the requests held unanswered, per worker
    /// ([`DEFAULT_MAX_PENDING_REQUEST_BYTES`]); a request past it is refused with `-32002`
    /// (one request alone is always admitted).
    pub max_pending_request_bytes: usize,
    /// Params bytes of the input queued on one byte stream (`duplexChannelWrite`,
    /// `loginPtyInput`; [`DEFAULT_MAX_PENDING_STREAM_BYTES`]); a write past it is refused with
    /// `-32002` (one write alone is always admitted).
    pub max_pending_stream_bytes: usize,
    /// The host profile the worker serves ([`Context::profile`](crate::Context::profile));
    /// default: `paperclip-2026-11`.
    pub profile: paperclip_sandbox_protocol::HostProfile,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            frame_limit: DEFAULT_FRAME_LIMIT,
            host_call_timeout: DEFAULT_HOST_CALL_TIMEOUT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            max_pending_request_bytes: DEFAULT_MAX_PENDING_REQUEST_BYTES,
            max_pending_stream_bytes: DEFAULT_MAX_PENDING_STREAM_BYTES,
            profile: paperclip_sandbox_protocol::HostProfile::default(),
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
    /// The host closed its end of stdout (a write failed with `EPIPE`, or the closed end was
    /// seen while idle): the host is gone. As for [`ServeEnd::Eof`].
    HostGone,
    /// The stop signal (`SIGTERM`/`SIGINT` for a stdio worker) arrived. As for
    /// [`ServeEnd::Eof`].
    Signal,
}

/// A notification the worker accepts, with its admission: `releaseIdleSleep` ends the hold of
/// its owner here and goes no further; any other notification is admitted, or dropped while
/// the worker is sealed for idle sleep (as the upstream SDK does).
fn admit_notification(
    idle: &Arc<IdleGate>,
    note: paperclip_sandbox_protocol::jsonrpc::Notification,
) -> Option<(paperclip_sandbox_protocol::jsonrpc::Notification, Admission)> {
    use paperclip_sandbox_protocol::methods::name;
    if note.method == name::RELEASE_IDLE_SLEEP {
        if let Some(owner) =
            note.params.as_ref().and_then(|p| p.get("ownerId")).and_then(|o| o.as_str())
        {
            idle.release(owner);
        }
        return None;
    }
    match idle.admit() {
        Ok(admission) => Some((note, admission)),
        Err(_) => {
            tracing::debug!(
                method = note.method,
                "notification dropped: the worker is held for idle sleep"
            );
            None
        }
    }
}

/// Serves `handler` over `reader`/`writer` until `shutdown`, EOF or a failed write.
///
/// Returns an error only when reading fails for a reason other than EOF.
pub(crate) async fn serve<R, W>(
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

/// Resolves with the first of the endings other than EOF: `shutdown` answered (`stopped`
/// turns true), an outside ending (`outside`: the stop signal, or the host closing its end of
/// the output while nothing is being written), or output failed.
async fn endings(
    mut stopped: watch::Receiver<bool>,
    outside: impl std::future::Future<Output = ServeEnd>,
    sink: super::codec::FrameSink,
) -> ServeEnd {
    tokio::select! {
        biased;
        _ = stopped.wait_for(|s| *s) => ServeEnd::Shutdown,
        end = outside => end,
        () = sink.closed() => ServeEnd::HostGone,
    }
}

/// [`serve`], also ending when `outside` completes, with the ending it gives
/// ([`ServeEnd::Signal`] for the stop signal, [`ServeEnd::HostGone`] when the host closed its
/// end of the output).
pub(crate) async fn serve_until<R, W>(
    handler: Arc<dyn Handler>,
    config: RuntimeConfig,
    reader: R,
    writer: W,
    outside: impl std::future::Future<Output = ServeEnd>,
) -> io::Result<ServeEnd>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sink, writer_task) = spawn_writer(writer);
    let idle = Arc::new(IdleGate::default());
    let peer = Arc::new(
        Peer::new(sink.clone(), config.host_call_timeout, idle.clone())
            .with_profile(config.profile),
    );
    let (stop, stopped) = watch::channel(false);
    let shared = Arc::new(Shared {
        handler,
        sink: sink.clone(),
        peer: peer.clone(),
        cancel: CancellationSource::new(),
        permits: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
        budget: Budget::new(config.max_pending_request_bytes),
        streams: Streams::new(config.max_pending_stream_bytes),
        initialized: false.into(),
        idle: idle.clone(),
        stop,
    });
    let (notes, notes_task) = spawn_notification_task(shared.clone());
    // Every request task holds a clone; `recv` yields `None` once all are dropped.
    let (drain, mut drained) = mpsc::channel::<()>(1);
    let mut lines = LineReader::new(reader, config.frame_limit);
    // The endings other than EOF, looked at before every frame (a host whose frames are
    // always ready cannot hold them off), but polled only after one of their waiters woke:
    // polled with every frame, each waiter took its lock (see `woken`).
    let mut ending = WokenOnly::new(endings(stopped, outside, sink.clone()));
    // A `shutdown` request was dispatched: whatever ends the loop after it, this is that
    // shutdown (its task runs the provider's hook, answers and stops).
    let mut shutdown_requested = false;

    let end = loop {
        let frame = tokio::select! {
            biased;
            end = &mut ending => break Ok(end),
            frame = lines.next_frame_ref() => frame,
        };
        let line = match frame {
            Ok(Some(FrameRef::Line(line))) => line,
            Ok(Some(FrameRef::Oversize { limit })) => {
                tracing::warn!(limit, "inbound frame over the cap discarded");
                sink.send(oversize_response(limit));
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
                let started = dispatch_request(&shared, request, &drain);
                shutdown_requested |= started == Some(Method::Shutdown);
            }
            Ok(RawMessage::Notification(note)) => {
                if let Some(work) = admit_notification(&idle, note.into_notification()) {
                    let _ = notes.send(work);
                }
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

    // Its sink clone would keep the writer open.
    drop(ending);
    // A host that closes stdin right after `shutdown` (before or after reading its answer)
    // can end the loop before the stop is seen: it is still that shutdown, and the hook is not
    // run a second time as the EOF ending's.
    let end = match end {
        Ok(_) if shutdown_requested => Ok(ServeEnd::Shutdown),
        other => other,
    };
    if !matches!(end, Ok(ServeEnd::Shutdown)) {
        tracing::info!(end = ?end.as_ref().ok(), "the host is gone or asked to stop; shutting down");
    }
    let deadline = tokio::time::Instant::now() + config.shutdown_grace;
    peer.close();
    idle.close();
    drop(notes);
    drop(drain);
    if !matches!(end, Ok(ServeEnd::Shutdown)) {
        // The same shutdown as the request, without an answer: cancel first, so commands end
        // at once, then the provider's hook.
        shared.cancel.cancel();
        if shared.implements(Method::Shutdown) {
            let cx = shared.runtime_context(Method::Shutdown);
            let hook = shared.call_hook(Method::Shutdown, None, cx);
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
    let flush_by = deadline.max(tokio::time::Instant::now() + Duration::from_millis(200));
    let _ = tokio::time::timeout_at(flush_by, sink.flush()).await;
    drop(writer_task);
    end
}
