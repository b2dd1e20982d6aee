//! Flow control of inbound requests: what the worker holds is bounded in bytes, and input to
//! a byte stream never holds up any other call.
//!
//! * **Pending request bytes, per worker.** Every request served in a task (all but the
//!   runtime's own `initialize`, `health`, `shutdown`, `configChanged` and `prepareIdleSleep`)
//!   holds the bytes of its params until its answer is queued. A request that would take the
//!   total past [`RuntimeConfig::max_pending_request_bytes`](super::RuntimeConfig) is refused
//!   at once, in line, with `-32002` saying so; one request is always admitted when nothing
//!   else is pending, so a single request up to the frame cap is still served.
//! * **Stream input, per stream.** `duplexChannelWrite` and `loginPtyInput` of one stream (one
//!   worker session id) run one at a time, in arrival order, in a task of the stream's own,
//!   and take **no hook permit**: a command that does not read its input holds up only the
//!   writes queued behind it on the same stream, never a call on another stream or lease.
//!   The bytes queued on one stream are bounded by
//!   [`RuntimeConfig::max_pending_stream_bytes`](super::RuntimeConfig); a write past the bound
//!   is refused at once with `-32002` (never queued without bound, never dropped unanswered).
//! * **Stream control.** `duplexChannelStop`/`Close` and `loginPtyStop`/`Close` take no hook
//!   permit either, so a channel's close is answered while its writes are pending and while
//!   every permit is in use.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::methods::Method;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

/// The default bound on the params bytes of the requests a worker holds unanswered: 32 MiB.
pub const DEFAULT_MAX_PENDING_REQUEST_BYTES: usize = 32 * 1024 * 1024;

/// The default bound on the params bytes queued on one byte stream (its writes not yet
/// answered): 8 MiB.
pub const DEFAULT_MAX_PENDING_STREAM_BYTES: usize = 8 * 1024 * 1024;

/// A unit of work queued on a stream: the request's whole task.
pub(crate) type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// True for the methods that take no hook permit: the runtime's own, and the control calls
/// of byte streams (so that a close is answered whatever else runs).
pub(crate) fn permit_free(method: Method) -> bool {
    matches!(
        method,
        Method::Initialize
            | Method::Health
            | Method::Shutdown
            | Method::ConfigChanged
            | Method::PrepareIdleSleep
            | Method::DuplexChannelStop
            | Method::DuplexChannelClose
            | Method::LoginPtyStop
            | Method::LoginPtyClose
    )
}

/// True for the runtime's own methods, which the byte bound never refuses.
pub(crate) fn runtime_owned(method: Method) -> bool {
    matches!(
        method,
        Method::Initialize
            | Method::Health
            | Method::Shutdown
            | Method::ConfigChanged
            | Method::PrepareIdleSleep
    )
}

/// One byte stream: its kind and worker session id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct StreamKey {
    pty: bool,
    session: String,
}

/// The stream a stream-input request writes to; `None` for any other request, or when the
/// params do not name a session (the hook's own params check answers those).
pub(crate) fn stream_key(method: Method, params: Option<&RawValue>) -> Option<StreamKey> {
    #[derive(Deserialize)]
    struct Session<'a> {
        #[serde(rename = "workerSessionId", borrow)]
        session: std::borrow::Cow<'a, str>,
    }
    let pty = match method {
        Method::DuplexChannelWrite => false,
        Method::LoginPtyInput => true,
        _ => return None,
    };
    let parsed: Session<'_> = serde_json::from_str(params?.get()).ok()?;
    Some(StreamKey { pty, session: parsed.session.into_owned() })
}

/// The refusal of a request past a byte bound.
fn refusal(method: Method, what: &str, held: usize, limit: usize) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::WorkerError,
        format!(
            "{method} refused: {held} bytes of {what} are pending (bound {limit} bytes); \
             send it again once earlier calls are answered"
        ),
    )
}

/// The worker-wide count of pending request bytes.
#[derive(Debug)]
pub(crate) struct Budget {
    held: Arc<AtomicUsize>,
    limit: usize,
}

/// Bytes held against the [`Budget`] until dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    held: Arc<AtomicUsize>,
    bytes: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Self {
        Budget { held: Arc::default(), limit }
    }

    /// Holds `bytes` for `method`, or refuses it (see the module docs).
    pub(crate) fn reserve(&self, method: Method, bytes: usize) -> Result<Ticket, ErrorObject> {
        let mut held = self.held.load(Ordering::Acquire);
        loop {
            if held > 0 && held.saturating_add(bytes) > self.limit {
                return Err(refusal(method, "requests", held, self.limit));
            }
            match self.held.compare_exchange_weak(
                held,
                held + bytes,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Ticket { held: self.held.clone(), bytes }),
                Err(now) => held = now,
            }
        }
    }

    /// Bytes held right now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// One stream's queue: the sender to its task, the jobs and bytes in it.
struct Queue {
    tx: mpsc::UnboundedSender<(Job, usize)>,
    jobs: usize,
    bytes: usize,
}

/// The queues of the streams with input pending.
#[derive(Clone)]
pub(crate) struct Streams {
    queues: Arc<Mutex<HashMap<StreamKey, Queue>>>,
    limit: usize,
}

impl Streams {
    pub(crate) fn new(limit: usize) -> Self {
        Streams { queues: Arc::default(), limit }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StreamKey, Queue>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job()` (`bytes` of params) behind the input pending on `key`, or refuses it
    /// past the stream's bound (`job` is then not called).
    pub(crate) fn enqueue(
        &self,
        method: Method,
        key: StreamKey,
        bytes: usize,
        job: impl FnOnce() -> Job,
    ) -> Result<(), ErrorObject> {
        let what = if key.pty { "terminal input" } else { "channel input" };
        let mut queues = self.lock();
        let queue = match queues.get_mut(&key) {
            Some(queue) => queue,
            None => {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(self.clone().run(key.clone(), rx));
                queues.entry(key).or_insert(Queue { tx, jobs: 0, bytes: 0 })
            }
        };
        if queue.jobs > 0 && queue.bytes.saturating_add(bytes) > self.limit {
            return Err(refusal(method, what, queue.bytes, self.limit));
        }
        queue.jobs += 1;
        queue.bytes += bytes;
        // The task removes the queue (under this lock) only once it is empty, so it is alive.
        let _ = queue.tx.send((job(), bytes));
        Ok(())
    }

    /// The stream's task: runs its jobs in order; ends, forgetting the stream, once empty.
    async fn run(self, key: StreamKey, mut rx: mpsc::UnboundedReceiver<(Job, usize)>) {
        while let Some((job, bytes)) = rx.recv().await {
            job.await;
            let mut queues = self.lock();
            let Some(queue) = queues.get_mut(&key) else { return };
            queue.jobs -= 1;
            queue.bytes -= bytes;
            if queue.jobs == 0 {
                queues.remove(&key);
                return;
            }
        }
    }

    /// Streams with input pending.
    #[cfg(test)]
    pub(crate) fn pending_streams(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn the_budget_admits_one_request_alone_and_refuses_past_the_bound() {
        let budget = Budget::new(100);
        let big = budget.reserve(Method::EnvironmentExecute, 500).expect("alone: admitted");
        let refused = budget.reserve(Method::EnvironmentExecute, 1).unwrap_err();
        assert_eq!(refused.code, -32002);
        assert!(refused.message.contains("500 bytes of requests are pending (bound 100 bytes)"));
        drop(big);
        assert_eq!(budget.held(), 0);
        let a = budget.reserve(Method::EnvironmentExecute, 60).unwrap();
        assert!(budget.reserve(Method::EnvironmentExecute, 41).is_err());
        let b = budget.reserve(Method::EnvironmentExecute, 40).unwrap();
        assert_eq!(budget.held(), 100);
        drop((a, b));
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn stream_input_is_keyed_by_kind_and_session() {
        let p = raw(r#"{"hostRouteId":"r","workerSessionId":"s","data":"AA=="}"#);
        let duplex = stream_key(Method::DuplexChannelWrite, Some(&p)).unwrap();
        let pty = stream_key(Method::LoginPtyInput, Some(&p)).unwrap();
        assert_ne!(duplex, pty);
        assert_eq!(duplex.session, "s");
        assert_eq!(stream_key(Method::DuplexChannelClose, Some(&p)), None);
        assert_eq!(stream_key(Method::DuplexChannelWrite, Some(&raw("{}"))), None);
        assert_eq!(stream_key(Method::DuplexChannelWrite, None), None);
        assert!(permit_free(Method::DuplexChannelClose) && !permit_free(Method::EnvironmentProbe));
    }

    #[tokio::test]
    async fn a_stream_runs_its_input_in_order_bounded_and_forgets_itself_when_empty() {
        let streams = Streams::new(12);
        let key = StreamKey { pty: false, session: "s".into() };
        let (release, gate) = tokio::sync::watch::channel(false);
        let order = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3 {
            let (order, mut gate) = (order.clone(), gate.clone());
            streams
                .enqueue(Method::DuplexChannelWrite, key.clone(), 4, move || {
                    Box::pin(async move {
                        let _ = gate.wait_for(|open| *open).await;
                        order.lock().unwrap().push(i);
                    })
                })
                .expect("within the bound");
        }
        // 12 bytes queued: a fourth write is refused, and its job never built.
        let refused = streams
            .enqueue(Method::DuplexChannelWrite, key.clone(), 4, || unreachable!())
            .unwrap_err();
        assert!(refused.message.contains("12 bytes of channel input are pending (bound 12"));
        // Another stream is not held up by this one.
        let other = StreamKey { pty: true, session: "s".into() };
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        streams
            .enqueue(Method::LoginPtyInput, other, 4, move || {
                Box::pin(async move {
                    let _ = done_tx.send(());
                })
            })
            .unwrap();
        tokio::time::timeout(Duration::from_secs(60), done_rx).await.unwrap().unwrap();
        release.send(true).unwrap();
        let until = tokio::time::Instant::now() + Duration::from_secs(60);
        while streams.pending_streams() > 0 {
            assert!(tokio::time::Instant::now() < until, "the queues drain");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2], "in arrival order");
    }
}
