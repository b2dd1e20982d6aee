//! The serve loop and its two endings (protocol.md A.4).
//!
//! * `shutdown` (answered by [`super::builtin`]) ends the serve loop: [`ServeEnd::Shutdown`].
//! * Stdin EOF ends reading; in-flight requests finish, their responses are flushed, pending
//!   worker→host calls fail at once (no answer can come any more): [`ServeEnd::Eof`].

use std::io;
use std::sync::Arc;
use std::time::Duration;

use paperclip_sandbox_protocol::jsonrpc::{
    parse_line_raw, replace_lone_surrogate_escapes, FrameError, ParseErrorDetail, RawMessage,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch, Semaphore};

use super::codec::{oversize_response, spawn_writer, FrameRef, LineReader, DEFAULT_FRAME_LIMIT};
use super::dispatch::{dispatch_request, spawn_notification_task, DEFAULT_MAX_CONCURRENCY};
use super::peer::{Peer, DEFAULT_HOST_CALL_TIMEOUT};
use super::shared::{Handler, Shared};
use crate::context::CancellationSource;
use crate::idle::{Admission, IdleGate};

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

/// Why the serve loop ended. Either way the process should exit with code 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// The host sent `shutdown`; its answer is flushed, in-flight calls are cancelled.
    Shutdown,
    /// Stdin reached EOF; every in-flight request was answered and flushed.
    Eof,
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

/// Serves `handler` over `reader`/`writer` until `shutdown` or EOF.
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
    let (sink, writer_task) = spawn_writer(writer);
    let idle = Arc::new(IdleGate::default());
    let peer = Arc::new(Peer::new(sink.clone(), config.host_call_timeout, idle.clone()));
    let (stop, mut stopped) = watch::channel(false);
    let shared = Arc::new(Shared {
        handler,
        sink: sink.clone(),
        peer: peer.clone(),
        cancel: CancellationSource::new(),
        permits: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
        initialized: false.into(),
        idle: idle.clone(),
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
                sink.send(oversize_response(limit));
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

    peer.close();
    idle.close();
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
