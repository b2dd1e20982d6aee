//! Dispatch: messages → the [`Handler`](super::shared::Handler), answers → the writer. One path
//! for every request.
//!
//! * Requests are parsed once, without a `Value` tree: the params stay raw JSON text until the
//!   hook's own params type is deserialized from it, and the hook's result is serialized once,
//!   straight into the response frame.
//! * **Answers that call no handler are given by the reader itself**, in line, with no task,
//!   permit or [`Context`]: `health` and `configChanged` when the handler does not list them
//!   (`{"status":"ok"}` and `null`), `-32601` for an unknown method, `-32004` for a known one
//!   the handler does not list, and the `-32700`/`-32600` answers to unusable lines. They cost
//!   about as much as parsing the line, so they cannot hold the reader up.
//! * Every other request runs in its own task. Hooks share a bounded number of permits
//!   ([`DEFAULT_MAX_CONCURRENCY`] by default); a request past the bound waits for a permit in
//!   its own task, never in the reader. The runtime's own methods (`initialize`, `health`,
//!   `shutdown`, `configChanged`) take no permit, so a saturated worker still answers them;
//!   nor do the byte streams' input and control calls ([`flow`]).
//! * **Flow control** ([`flow`]): the params bytes of the requests held unanswered are bounded
//!   per worker, the input queued on one byte stream per stream; past a bound a request is
//!   refused in line (`-32002`), never queued without bound or dropped.
//! * Notifications go, in arrival order, to one task that handles them one at a time.
//! * Routing follows the published SDK: a name outside the method table is `-32601`; a known
//!   method the handler does not list is `-32004`, without calling the handler. A listed method
//!   is exactly an advertised one, so what the worker serves and what `supportedMethods` says
//!   cannot drift apart.
//! * A panicking hook is answered `-32603 Internal error: the <method> handler panicked` and
//!   the worker keeps serving.
//! * **Admission** ([`crate::idle`]): every request but `prepareIdleSleep`,
//!   `releaseIdleSleep` and `shutdown` passes the idle gate before anything else; while the
//!   worker is sealed for idle sleep it is refused in line with `-32002 Plugin is held for
//!   idle sleep` (unknown methods included, as in the upstream SDK). One that runs in a task
//!   is admitted and counts as running work until its answer is queued; one answered in line
//!   only checks the gate is open. `releaseIdleSleep` is answered in line (`null`), `prepareIdleSleep` by the
//!   runtime in its own task.

use std::borrow::Cow;
use std::sync::Arc;

use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Notification, RawRequest};
use paperclip_sandbox_protocol::methods::Method;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::shared::{CatchUnwind, Shared};
use super::{builtin, flow};
use crate::context::{deadline_for, Context};
use crate::idle::Admission;

/// The default bound on hooks running at once.
pub const DEFAULT_MAX_CONCURRENCY: usize = 64;

/// Where a request goes: an answer given in line by the reader, or a task.
enum Route {
    /// Not in the method table: `-32601`.
    Unknown,
    /// Known but not listed by the handler: `-32004`.
    NotImplemented(Method),
    /// `releaseIdleSleep`: handled and answered `null` in line.
    ReleaseIdleSleep,
    /// A fixed result, answered in line.
    Result(&'static str),
    /// Served by [`spawn_request`].
    Task(Method),
}

fn route(shared: &Shared, method: &str) -> Route {
    let Some(method) = Method::from_name(method) else { return Route::Unknown };
    match method {
        Method::ReleaseIdleSleep => Route::ReleaseIdleSleep,
        Method::PrepareIdleSleep => Route::Task(method),
        Method::Health if !shared.implements(method) => Route::Result(builtin::HEALTH_OK),
        Method::ConfigChanged if !shared.implements(method) => {
            // Answered in line; the backends of the old config go all the same.
            shared.peer.backends().clear();
            Route::Result("null")
        }
        Method::Initialize | Method::Health | Method::Shutdown | Method::ConfigChanged => {
            Route::Task(method)
        }
        m if !shared.implements(m) => Route::NotImplemented(m),
        m => Route::Task(m),
    }
}

/// Serves one request read by the reader: answers it in line when no handler is involved (see
/// the module docs), otherwise starts its task. `guard` is cloned into the task and held until
/// its response is queued. Returns the method whose task it started, if any.
pub(crate) fn dispatch_request<G: Clone + Send + 'static>(
    shared: &Arc<Shared>,
    request: RawRequest<'_>,
    guard: &G,
) -> Option<Method> {
    let sink = &shared.sink;
    let route = route(shared, &request.method);
    // Admission comes first, as in the upstream SDK: while the worker is sealed for idle
    // sleep every request but the idle pair and `shutdown` is refused, unknown ones included.
    // A task holds its admission until its answer is queued; an answer given in line needs
    // only the gate open (no admission to take and drop, nothing cloned or allocated).
    let admits = !matches!(
        route,
        Route::ReleaseIdleSleep | Route::Task(Method::PrepareIdleSleep | Method::Shutdown)
    );
    let admission = match (admits, &route) {
        (false, _) => None,
        (true, Route::Task(_)) => match shared.idle.admit() {
            Ok(admission) => Some(admission),
            Err(sealed) => {
                sink.send_error(Some(&request.id), &sealed);
                return None;
            }
        },
        (true, _) => match shared.idle.check_open() {
            Ok(()) => None,
            Err(sealed) => {
                sink.send_error(Some(&request.id), &sealed);
                return None;
            }
        },
    };
    match route {
        Route::Unknown => {
            sink.send_error(Some(&request.id), &ErrorObject::method_not_found(&request.method));
        }
        Route::NotImplemented(m) => {
            sink.send_error(Some(&request.id), &ErrorObject::method_not_implemented(m.as_str()));
        }
        Route::ReleaseIdleSleep => {
            builtin::release_idle_sleep(shared, request.params);
            sink.send_result_json(&request.id, "null");
        }
        Route::Result(result) => {
            sink.send_result_json(&request.id, result);
        }
        Route::Task(m) => {
            // The params' bytes are held until the answer is queued; past the worker's bound
            // the request is refused here, in line (see `flow`).
            let bytes = request.params.map_or(0, |p| p.get().len());
            let ticket = if flow::runtime_owned(m) {
                None
            } else {
                match shared.budget.reserve(m, bytes) {
                    Ok(ticket) => Some(ticket),
                    Err(refused) => {
                        tracing::warn!(
                            method = m.as_str(),
                            bytes,
                            "request refused: too many bytes pending"
                        );
                        sink.send_error(Some(&request.id), &refused);
                        return None;
                    }
                }
            };
            let guard = (guard.clone(), admission, ticket);
            // Input to a byte stream runs in the stream's own queue, in order, without a
            // permit; past the stream's bound it is refused here.
            if let Some(key) = flow::stream_key(m, request.params) {
                let id = request.id.clone();
                let queued = shared.streams.enqueue(m, key, bytes, || {
                    Box::pin(request_task(shared.clone(), m, request, guard, false))
                });
                return match queued {
                    Ok(()) => Some(m),
                    Err(refused) => {
                        tracing::warn!(
                            method = m.as_str(),
                            bytes,
                            "stream input refused: too many bytes pending on the stream"
                        );
                        sink.send_error(Some(&id), &refused);
                        None
                    }
                };
            }
            tokio::spawn(request_task(shared.clone(), m, request, guard, !flow::permit_free(m)));
            return Some(m);
        }
    }
    None
}

/// The task serving one request; `guard` is held until its response is queued. With
/// `permit`, the hook waits for one of the shared permits first (in its own task, never in
/// the reader).
fn request_task<G: Send + 'static>(
    shared: Arc<Shared>,
    method: Method,
    request: RawRequest<'_>,
    guard: G,
    permit: bool,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let params: Option<Box<RawValue>> = request.params.map(ToOwned::to_owned);
    let deadline = deadline_for(method, params.as_deref());
    let (id, invocation) = (request.id, request.invocation);
    async move {
        let _permit = if permit { shared.permits.acquire().await.ok() } else { None };
        let cx = Context::new(
            Cow::Borrowed(method.as_str()),
            Some(id.clone()),
            invocation,
            deadline,
            shared.cancel.token(),
            shared.peer.clone(),
        );
        let params = params.as_deref();
        let answer = match method {
            Method::Initialize => builtin::initialize(&shared, params, cx).await,
            Method::Health => builtin::health(&shared, params, cx).await,
            Method::ConfigChanged => builtin::config_changed(&shared, params, cx).await,
            Method::PrepareIdleSleep => builtin::prepare_idle_sleep(&shared, params, cx).await,
            Method::Shutdown => {
                builtin::shutdown(&shared, params, cx, id).await;
                drop(guard);
                return;
            }
            m => shared.call_hook(m, params, cx).await,
        };
        match answer {
            Ok(result) => shared.sink.send_result(&id, result),
            Err(error) => shared.sink.send_error(Some(&id), &error),
        };
        drop(guard);
    }
}

/// Starts the task that handles notifications strictly in arrival order.
pub(crate) fn spawn_notification_task(
    shared: Arc<Shared>,
) -> (mpsc::UnboundedSender<(Notification, Admission)>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Notification, Admission)>();
    let task = tokio::spawn(async move {
        // The admission is held until the notification's handler returns.
        while let Some((note, _admission)) = rx.recv().await {
            let cx = Context::new(
                Cow::Owned(note.method.clone()),
                None,
                note.invocation,
                None,
                shared.cancel.token(),
                shared.peer.clone(),
            );
            let run = shared.handler.notify(&note.method, note.params, cx);
            if CatchUnwind(run).await.is_err() {
                tracing::error!(method = note.method, "notification handler panicked");
            }
        }
    });
    (tx, task)
}
