//! Worker→host traffic: outbound requests with their own id counter, response routing by id,
//! and notifications.
//!
//! The two id spaces are independent: the worker numbers its calls from 1 whatever ids the host
//! uses, and a line from the host is routed here only when it classifies as a *response*, never
//! as a request. Every message carries the `paperclipInvocationId` it is given (the context
//! passes the id of the host request being served).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::{
    ErrorObject, Id, Notification, Outcome, Request, Response,
};
use serde_json::Value;
use tokio::sync::oneshot;

use super::codec::FrameSink;
use crate::idle::{Admission, IdleGate};

/// The default timeout of a worker→host call, as in the published SDK.
pub const DEFAULT_HOST_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The published SDK wraps its counter before `Number.MAX_SAFE_INTEGER - 1`.
const MAX_OUTBOUND_ID: u64 = (1 << 53) - 2;

type Pending = oneshot::Sender<Result<Value, ErrorObject>>;

/// The worker's side of worker→host calls.
#[derive(Debug)]
pub(crate) struct Peer {
    sink: FrameSink,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Pending>>,
    closed: AtomicBool,
    timeout: Duration,
    /// Admission of worker→host calls: refused while the worker is sealed for idle sleep.
    idle: Arc<IdleGate>,
    /// Calls the host has not answered yet, timed out ones included: each counts as running
    /// work for idle sleep until the host's answer arrives (only it proves the host is done).
    unsettled: Mutex<HashMap<u64, Admission>>,
    /// The host profile the worker serves (`Context::profile`).
    profile: paperclip_sandbox_protocol::HostProfile,
    /// The provider's open backends, by config (`crate::backend`).
    backends: crate::backend::Backends,
}

impl Peer {
    /// A peer writing through `sink`, with the given per-call timeout.
    pub(crate) fn new(sink: FrameSink, timeout: Duration, idle: Arc<IdleGate>) -> Self {
        Peer {
            sink,
            next_id: AtomicU64::new(1),
            pending: Mutex::default(),
            closed: AtomicBool::new(false),
            timeout,
            idle,
            unsettled: Mutex::default(),
            profile: paperclip_sandbox_protocol::HostProfile::default(),
            backends: crate::backend::Backends::default(),
        }
    }

    /// This peer serving hosts of `profile`.
    pub(crate) fn with_profile(mut self, profile: paperclip_sandbox_protocol::HostProfile) -> Self {
        self.profile = profile;
        self
    }

    /// The host profile the worker serves.
    pub(crate) fn profile(&self) -> paperclip_sandbox_protocol::HostProfile {
        self.profile
    }

    /// The provider's open backends.
    pub(crate) fn backends(&self) -> &crate::backend::Backends {
        &self.backends
    }

    fn unsettled(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Admission>> {
        self.unsettled.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The writer this peer sends through.
    pub(crate) fn sink(&self) -> &FrameSink {
        &self.sink
    }

    fn allocate_id(&self) -> u64 {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if id < MAX_OUTBOUND_ID {
                return id;
            }
            // Wrap as the published SDK does; a lost race just retries.
            let _ = self.next_id.compare_exchange(id + 1, 1, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Calls `method` on the host and waits for its answer, at most the peer's timeout
    /// (`-32003` after it; `-32000` when the worker stops first; `-32002 Plugin is held for
    /// idle sleep` while the worker is sealed).
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Option<Value>,
        invocation_id: Option<String>,
    ) -> Result<Value, ErrorObject> {
        let admission = self.idle.admit()?;
        let id = self.allocate_id();
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        if self.closed.load(Ordering::SeqCst) {
            self.lock().remove(&id);
            return Err(unavailable());
        }
        self.unsettled().insert(id, admission);
        let request = Request {
            id: Id::from(id),
            method: method.to_owned(),
            params,
            invocation: None,
            invocation_id,
        };
        if !self.sink.send(request) {
            self.lock().remove(&id);
            self.unsettled().remove(&id);
            return Err(unavailable());
        }
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(unavailable()),
            Err(_) => {
                self.lock().remove(&id);
                Err(ErrorObject::new(
                    ErrorCode::Timeout,
                    format!(
                        "Worker\u{2192}host call \"{method}\" timed out after {}ms",
                        self.timeout.as_millis()
                    ),
                ))
            }
        }
    }

    /// Sends a notification to the host (fire and forget).
    pub(crate) fn notify(
        &self,
        method: &str,
        params: Option<Value>,
        invocation_id: Option<String>,
    ) {
        let note =
            Notification { method: method.to_owned(), params, invocation: None, invocation_id };
        // A notification may be lost; it must not grow the queue without bound while the
        // host does not read.
        if !self.sink.send_bounded(note) {
            tracing::debug!(method, "notification dropped: protocol output closed");
        }
    }

    /// Routes a response from the host to the call waiting for it. Responses with an unknown
    /// or non-numeric id are logged and dropped.
    pub(crate) fn route(&self, response: Response) {
        let id = match &response.id {
            Some(Id::Number(n)) => n.as_u64(),
            _ => None,
        };
        // The host's answer settles the call, even one that timed out here.
        if let Some(n) = id {
            self.unsettled().remove(&n);
        }
        let waiter = id.and_then(|n| self.lock().remove(&n));
        let Some(waiter) = waiter else {
            tracing::warn!(id = ?response.id, "response from the host for an unknown request id");
            return;
        };
        let answer = match response.outcome {
            Outcome::Result(v) => Ok(v),
            Outcome::Error(e) => Err(e),
        };
        let _ = waiter.send(answer);
    }

    /// How many calls are waiting for an answer.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.lock().len()
    }

    /// Fails every call still waiting, and every later one, with `-32000` (the worker is
    /// stopping: no answer can arrive any more).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.lock().clear();
        self.unsettled().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn unavailable() -> ErrorObject {
    ErrorObject::new(ErrorCode::WorkerUnavailable, "Worker RPC host is shutting down")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::codec::{spawn_writer, LineReader};
    use paperclip_sandbox_protocol::jsonrpc::{parse_line, Message};
    use std::sync::Arc;

    #[tokio::test]
    async fn calls_are_numbered_from_one_and_routed_by_id() {
        let (tx, rx) = tokio::io::duplex(1 << 16);
        let (sink, _task) = spawn_writer(tx);
        let peer = Arc::new(Peer::new(sink, Duration::from_secs(30), Arc::default()));
        let p2 = peer.clone();
        let call =
            tokio::spawn(async move { p2.call("config.get", None, Some("inv-9".into())).await });
        let mut reader = LineReader::new(rx, 1 << 20);
        let Some(crate::runtime::codec::Frame::Line(line)) = reader.next_frame().await.unwrap()
        else {
            panic!("expected a line")
        };
        assert_eq!(
            line,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"config.get\",\"paperclipInvocationId\":\"inv-9\"}"
        );
        // A response with another id is not delivered.
        peer.route(Response::success(Id::from(2u64), Value::Null));
        assert_eq!(peer.pending(), 1);
        let Message::Response(r) =
            parse_line("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}").unwrap()
        else {
            panic!()
        };
        peer.route(r);
        assert_eq!(call.await.unwrap(), Ok(serde_json::json!({"a": 1})));
        assert_eq!(peer.allocate_id(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn unanswered_call_times_out_with_32003() {
        let (tx, _rx) = tokio::io::duplex(1 << 16);
        let (sink, _task) = spawn_writer(tx);
        let peer = Peer::new(sink, DEFAULT_HOST_CALL_TIMEOUT, Arc::default());
        let err = peer.call("config.get", None, None).await.unwrap_err();
        assert_eq!(err.code, -32003);
        assert_eq!(err.message, "Worker\u{2192}host call \"config.get\" timed out after 30000ms");
        assert_eq!(peer.pending(), 0);
    }
}
