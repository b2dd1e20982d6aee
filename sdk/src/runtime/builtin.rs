//! The methods the runtime answers itself (the handshake, health, shutdown and the idle-sleep
//! pair).
//!
//! * `initialize` is answered by the runtime: `{ok:true, supportedMethods}`, where
//!   `supportedMethods` is the handler's listed hooks (see below), in registry order. The
//!   provider's own `initialize` hook, if listed, runs first with the params (missing fields
//!   tolerated). A second `initialize` fails with `-32002 Worker already
//!   initialized`, as in the published SDK.
//! * `health` answers `{status:"ok"}` unless the provider lists it.
//! * `configChanged` runs the provider's hook if listed and otherwise answers `null`: the
//!   published SDK accepts it without a hook (and advertises it only with one).
//! * `shutdown` runs the provider's hook if listed, answers (`null`, or the hook's error),
//!   flushes, cancels every in-flight context and stops the reader.
//! * `prepareIdleSleep` echoes its params with `backgroundWork` (see [`crate::idle`]):
//!   `"present"` before `initialize` and without an `idle_drain` hook, otherwise the gate's
//!   verdict, the hook running as the drain check with a `Context` cancelled when the hold
//!   ends. `releaseIdleSleep` ends the hold of its owner and answers `null`.
//! * `supportedMethods` lists the hooks written, in table order, as the upstream SDK does:
//!   `health` and `shutdown` only with their hooks (they are answered either way), and
//!   `releaseIdleSleep` together with `prepareIdleSleep` (the `idle_drain` hook).

use std::sync::atomic::Ordering;

use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Id};
use paperclip_sandbox_protocol::methods::{
    self, BackgroundWork, Method, PrepareIdleSleepParams, ReleaseIdleSleepParams,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::result_json::ResultJson;
use super::shared::{Handler, Shared};
use crate::context::{CancellationToken, Context};

/// `{"status":"ok"}`, the runtime's `health` answer.
pub(crate) const HEALTH_OK: &str = r#"{"status":"ok"}"#;

/// The answer of a void method.
const NULL: &str = "null";

/// The `supportedMethods` of a handler: its listed hooks minus `initialize`, plus
/// `releaseIdleSleep` when `prepareIdleSleep` is listed, in registry order; names outside the
/// registry are not advertised.
pub(crate) fn supported_methods(handler: &dyn Handler) -> Vec<&'static str> {
    let listed = handler.implemented_methods();
    let idle = listed.contains(&Method::PrepareIdleSleep.as_str());
    methods::METHODS
        .iter()
        .map(|m| m.name)
        .filter(|m| *m != Method::Initialize.as_str())
        .filter(|m| listed.contains(m) || (idle && *m == Method::ReleaseIdleSleep.as_str()))
        .collect()
}

/// `releaseIdleSleep`: ends the hold of `params.ownerId`; anything else is ignored, as in the
/// upstream SDK.
pub(crate) fn release_idle_sleep(shared: &Shared, params: Option<&RawValue>) {
    let owner = params
        .and_then(|p| serde_json::from_str::<ReleaseIdleSleepParams>(p.get()).ok())
        .map(|p| p.owner_id);
    if let Some(owner) = owner {
        shared.idle.release(&owner);
    }
}

/// `prepareIdleSleep`: the request's params with `backgroundWork` (see the module docs).
pub(crate) async fn prepare_idle_sleep(
    shared: &Shared,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<ResultJson, ErrorObject> {
    let echo = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok());
    let request = params.and_then(|p| serde_json::from_str::<PrepareIdleSleepParams>(p.get()).ok());
    let verdict = if !shared.initialized.load(Ordering::SeqCst) {
        BackgroundWork::Present
    } else if let Some(request) = &request {
        // The drain check: the provider's hook, whose context is cancelled when the hold ends.
        let hook = shared.implements(Method::PrepareIdleSleep).then_some(
            move |signal: CancellationToken| async move {
                let cx = cx.with_cancellation(signal);
                let raw =
                    shared.call_hook(Method::PrepareIdleSleep, params, cx).await.map_err(|e| {
                        tracing::debug!(code = e.code, "idle_drain failed; answering unknown");
                    })?;
                serde_json::from_str::<BackgroundWork>(&raw.text()).map_err(|_| ())
            },
        );
        shared.idle.prepare(request, hook).await
    } else {
        BackgroundWork::Unknown
    };
    // Echo the params as they came (the upstream SDK spreads them), with the verdict.
    let mut answer = match echo {
        Some(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    answer.insert("backgroundWork".into(), Value::String(verdict.as_str().into()));
    Ok(raw(&Value::Object(answer).to_string()))
}

fn raw(text: &str) -> ResultJson {
    RawValue::from_string(text.to_owned()).expect("a JSON literal").into()
}

pub(crate) async fn initialize(
    shared: &Shared,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<ResultJson, ErrorObject> {
    if shared.initialized.swap(true, Ordering::SeqCst) {
        return Err(ErrorObject::new(ErrorCode::WorkerError, "Worker already initialized"));
    }
    if shared.implements(Method::Initialize) {
        if let Err(e) = shared.call_hook(Method::Initialize, params, cx).await {
            // As in the published SDK, a failed setup leaves the worker uninitialized.
            shared.initialized.store(false, Ordering::SeqCst);
            return Err(e);
        }
    }
    let answer =
        json!({ "ok": true, "supportedMethods": supported_methods(shared.handler.as_ref()) });
    Ok(raw(&answer.to_string()))
}

pub(crate) async fn health(
    shared: &Shared,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<ResultJson, ErrorObject> {
    if shared.implements(Method::Health) {
        return shared.call_hook(Method::Health, params, cx).await;
    }
    Ok(raw(HEALTH_OK))
}

pub(crate) async fn config_changed(
    shared: &Shared,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<ResultJson, ErrorObject> {
    // The backends opened from the old config go; the next call opens one from the new.
    shared.peer.backends().clear();
    if shared.implements(Method::ConfigChanged) {
        shared.call_hook(Method::ConfigChanged, params, cx).await?;
    }
    Ok(raw(NULL))
}

/// Answers `shutdown`, flushes, cancels in-flight work and stops the reader.
pub(crate) async fn shutdown(shared: &Shared, params: Option<&RawValue>, cx: Context, id: Id) {
    let answer = if shared.implements(Method::Shutdown) {
        shared.call_hook(Method::Shutdown, params, cx).await.map(|_| ())
    } else {
        Ok(())
    };
    match answer {
        Ok(()) => shared.sink.send_result_json(&id, NULL),
        Err(e) => shared.sink.send_error(Some(&id), &e),
    };
    shared.sink.flush().await;
    shared.cancel.cancel();
    shared.stop.send_replace(true);
}
