//! Dispatch: messages → the [`Handler`], responses → the writer.
//!
//! * Requests are parsed once, without a `Value` tree ([`parse_line_raw`]): the params stay
//!   raw JSON text until the hook's own params type is deserialized from it
//!   ([`Handler::call_raw`]), and the hook's result is serialized once, straight into the
//!   response frame.
//! * **Answers that call no handler are given by the reader itself**, in line, with no task,
//!   permit or [`Context`]: `health` and `configChanged` when the handler does not list them
//!   (`{"status":"ok"}` and `null`), `-32601` for an unknown method, `-32004` for a known one
//!   the handler does not list, and the `-32700`/`-32600` answers to unusable lines. They cost
//!   about as much as parsing the line, so they cannot hold the reader up.
//! * Every other request runs in its own task. Hooks share a bounded number of permits
//!   ([`DEFAULT_MAX_CONCURRENCY`] by default); a request past the bound waits for a permit in
//!   its own task, never in the reader. The runtime's own methods (`initialize`, `health`,
//!   `shutdown`) take no permit, so a saturated worker still answers them.
//! * Notifications go, in arrival order, to one task that handles them one at a time.
//! * Responses from the host go to the [`super::peer::Peer`] (worker→host calls).
//! * Routing follows the published SDK: a name outside [`methods::METHODS`] is `-32601`; a
//!   known method the handler does not list in [`Handler::implemented_methods`] is `-32004`,
//!   without calling the handler. A listed method is exactly an advertised one, so what the
//!   worker serves and what `supportedMethods` says cannot drift apart.
//! * A panicking hook is answered `-32603 Internal error: the <method> handler panicked` and
//!   the worker keeps serving. The panic payload is not sent: it may quote data the provider
//!   holds (configs carry resolved secrets). The default panic hook still prints it to stderr.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use std::borrow::Cow;

use async_trait::async_trait;
use paperclip_sandbox_protocol::error_code::ErrorCode;
#[cfg(doc)]
use paperclip_sandbox_protocol::jsonrpc::parse_line_raw;
use paperclip_sandbox_protocol::jsonrpc::{
    raw_to_value, ErrorObject, Notification, RawRequest, Request, Response,
};
use paperclip_sandbox_protocol::methods::{self, name};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{mpsc, watch, Semaphore};

use super::codec::FrameSink;
use super::lifecycle;
use super::peer::Peer;
use crate::context::{deadline_for, deadline_for_raw, CancellationSource, Context};

/// The default bound on hooks running at once.
pub const DEFAULT_MAX_CONCURRENCY: usize = 64;

/// The low-level, object-safe interface the runtime drives.
///
/// [`SandboxProvider`](crate::SandboxProvider) is a typed adapter over it; implement it
/// directly only for tests or unusual workers.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// The wire names of the hooks this handler implements. Only these are called; they (with
    /// `health` and `shutdown`, minus `initialize`) are the `supportedMethods` of the handshake.
    /// `initialize`, `health`, `shutdown` and `configChanged` may be listed to override the
    /// runtime's defaults.
    fn implemented_methods(&self) -> &'static [&'static str];

    /// Serves one listed host→worker request. For `initialize` the result is ignored (the
    /// runtime answers `{ok:true, supportedMethods}`), for `shutdown` it is answered as `null`.
    async fn call(
        &self,
        method: &str,
        params: Option<Value>,
        cx: Context,
    ) -> Result<Value, ErrorObject>;

    /// Serves one listed environment hook from its raw params, answering its result as
    /// serialized JSON. The runtime calls this for every hook but the runtime-owned methods
    /// (`initialize`, `health`, `shutdown`, `configChanged`, which go through
    /// [`call`](Self::call)).
    ///
    /// The default parses the params into a [`Value`] and serializes what
    /// [`call`](Self::call) answers; [`SandboxProvider`](crate::SandboxProvider)'s adapter
    /// overrides it to deserialize the hook's params type straight from the raw text and to
    /// serialize its result type once. Either way the answer must be what `call` would answer.
    async fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cx: Context,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let result = self.call(method, params.map(raw_to_value), cx).await?;
        serde_json::value::to_raw_value(&result).map_err(|e| {
            ErrorObject::new(
                ErrorCode::InternalError,
                format!("Internal error: the {method} result does not serialize: {e}"),
            )
        })
    }

    /// Handles one host→worker notification (`onEvent`, or any other: unknown ones should be
    /// ignored). Notifications are delivered one at a time, in arrival order.
    async fn notify(&self, method: &str, params: Option<Value>, cx: Context) {
        let _ = (method, params, cx);
    }
}

/// What the runtime shares between the reader, the request tasks and the notification task.
pub(crate) struct Shared {
    pub handler: Arc<dyn Handler>,
    pub sink: FrameSink,
    pub peer: Arc<Peer>,
    pub cancel: CancellationSource,
    pub permits: Arc<Semaphore>,
    pub initialized: AtomicBool,
    /// Set (after the shutdown answer is flushed) to stop the reader.
    pub stop: watch::Sender<bool>,
}

impl Shared {
    /// True when the handler lists `method`.
    pub fn implements(&self, method: &str) -> bool {
        self.handler.implemented_methods().contains(&method)
    }

    fn context(&self, method: &str, id: Option<&Request>, n: Option<&Notification>) -> Context {
        let (request_id, invocation, params) = match (id, n) {
            (Some(r), _) => (Some(r.id.clone()), r.invocation.clone(), r.params.as_ref()),
            (None, Some(n)) => (None, n.invocation.clone(), n.params.as_ref()),
            (None, None) => (None, None, None),
        };
        let method_name = match methods::lookup(method) {
            Some(info) => Cow::Borrowed(info.name),
            None => Cow::Owned(method.to_owned()),
        };
        Context::new(
            method_name,
            request_id,
            invocation,
            deadline_for(method, params),
            self.cancel.token(),
            self.peer.clone(),
        )
    }

    /// A context for a hook the runtime calls on its own (the `shutdown` hook when a signal,
    /// stdin EOF or a closed stdout ends the worker): no request id, no invocation.
    pub fn runtime_context(&self, method: &'static str) -> Context {
        Context::new(
            Cow::Borrowed(method),
            None,
            None,
            None,
            self.cancel.token(),
            self.peer.clone(),
        )
    }

    /// Calls a listed hook, turning a panic into `-32603`.
    pub async fn call_hook(
        &self,
        method: &str,
        params: Option<Value>,
        cx: Context,
    ) -> Result<Value, ErrorObject> {
        match CatchUnwind(self.handler.call(method, params, cx)).await {
            Ok(answer) => answer,
            Err(payload) => {
                drop(payload);
                tracing::error!(method, "hook panicked; answering -32603");
                Err(panicked(method))
            }
        }
    }
}

/// `{"status":"ok"}`, the runtime's `health` answer.
const HEALTH_OK: &str = r#"{"status":"ok"}"#;

/// Serves one request read by the reader: answers it in line when no handler is involved (see
/// the module docs), otherwise starts its task. `guard` is cloned into the task and held until
/// its response is queued.
pub(crate) fn dispatch_request<G: Clone + Send + 'static>(
    shared: &Arc<Shared>,
    request: RawRequest<'_>,
    guard: &G,
) {
    let sink = &shared.sink;
    match &*request.method {
        name::HEALTH if !shared.implements(name::HEALTH) => {
            sink.send_result_json(&request.id, HEALTH_OK);
        }
        name::CONFIG_CHANGED if !shared.implements(name::CONFIG_CHANGED) => {
            sink.send_result_json(&request.id, "null");
        }
        name::INITIALIZE | name::HEALTH | name::SHUTDOWN | name::CONFIG_CHANGED => {
            spawn_request(shared.clone(), request.into_request(), guard.clone());
        }
        m => match methods::lookup(m) {
            None => {
                sink.send_error(Some(&request.id), &ErrorObject::method_not_found(m));
            }
            Some(info) if !shared.implements(info.name) => {
                sink.send_error(Some(&request.id), &ErrorObject::method_not_implemented(m));
            }
            Some(info) => spawn_hook(shared.clone(), info.name, request, guard.clone()),
        },
    }
}

/// Starts the task running one listed environment hook from its raw params.
fn spawn_hook<G: Send + 'static>(
    shared: Arc<Shared>,
    method: &'static str,
    request: RawRequest<'_>,
    guard: G,
) {
    let params: Option<Box<RawValue>> = request.params.map(ToOwned::to_owned);
    let deadline = deadline_for_raw(method, params.as_deref());
    let (id, invocation) = (request.id, request.invocation);
    tokio::spawn(async move {
        // Hooks wait for a permit here, in their own task, never in the reader.
        let _permit = shared.permits.acquire().await.ok();
        let cx = Context::new(
            Cow::Borrowed(method),
            Some(id.clone()),
            invocation,
            deadline,
            shared.cancel.token(),
            shared.peer.clone(),
        );
        let call = shared.handler.call_raw(method, params.as_deref(), cx);
        match CatchUnwind(call).await {
            Ok(Ok(result)) => shared.sink.send_result(&id, &result),
            Ok(Err(error)) => shared.sink.send_error(Some(&id), &error),
            Err(payload) => {
                drop(payload);
                tracing::error!(method, "hook panicked; answering -32603");
                shared.sink.send_error(Some(&id), &panicked(method))
            }
        };
        drop(guard);
    });
}

fn panicked(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::InternalError,
        format!("Internal error: the {method} handler panicked"),
    )
}

/// Starts the task serving one request; `guard` is held until its response is queued.
pub(crate) fn spawn_request<G: Send + 'static>(shared: Arc<Shared>, request: Request, guard: G) {
    tokio::spawn(async move {
        let method = request.method.as_str();
        let runtime_owned = matches!(method, name::INITIALIZE | name::HEALTH | name::SHUTDOWN);
        // Hooks wait for a permit here, in their own task, never in the reader.
        let _permit = if runtime_owned { None } else { shared.permits.acquire().await.ok() };
        let cx = shared.context(method, Some(&request), None);
        let id = request.id.clone();
        let answer = match method {
            name::INITIALIZE => lifecycle::initialize(&shared, request.params, cx).await,
            name::HEALTH => lifecycle::health(&shared, request.params, cx).await,
            name::SHUTDOWN => {
                lifecycle::shutdown(&shared, request.params, cx, id).await;
                drop(guard);
                return;
            }
            name::CONFIG_CHANGED => lifecycle::config_changed(&shared, request.params, cx).await,
            m if !methods::is_known(m) => Err(ErrorObject::method_not_found(m)),
            m if !shared.implements(m) => Err(ErrorObject::method_not_implemented(m)),
            m => shared.call_hook(m, request.params, cx).await,
        };
        let response = match answer {
            Ok(result) => Response::success(id, result),
            Err(error) => Response::error(Some(id), error),
        };
        shared.sink.send(response);
        drop(guard);
    });
}

/// Starts the task that handles notifications strictly in arrival order.
pub(crate) fn spawn_notification_task(
    shared: Arc<Shared>,
) -> (mpsc::UnboundedSender<Notification>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Notification>();
    let task = tokio::spawn(async move {
        while let Some(note) = rx.recv().await {
            let cx = shared.context(&note.method, None, Some(&note));
            let method = note.method.clone();
            let run = shared.handler.notify(&note.method, note.params, cx);
            if CatchUnwind(run).await.is_err() {
                tracing::error!(method, "notification handler panicked");
            }
        }
    });
    (tx, task)
}

/// A future that turns a panic while polling the inner future into `Err(payload)`.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = Pin::new(&mut self.0);
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn catch_unwind_reports_panics_and_passes_values() {
        let ok = CatchUnwind(Box::pin(async { 7 })).await;
        assert_eq!(ok.ok(), Some(7));
        let boom = CatchUnwind(Box::pin(async {
            tokio::task::yield_now().await;
            panic!("secret-in-panic")
        }))
        .await;
        assert!(boom.is_err());
    }
}
