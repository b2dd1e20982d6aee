//! The four methods the runtime answers itself (protocol.md A.3, A.4).
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
//!   flushes, cancels every in-flight context and stops the reader.

use std::sync::atomic::Ordering;

use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Id};
use paperclip_sandbox_protocol::methods::{self, Method};
use serde_json::json;
use serde_json::value::RawValue;

use super::shared::{Handler, Shared};
use crate::context::Context;

/// `{"status":"ok"}`, the runtime's `health` answer.
pub(crate) const HEALTH_OK: &str = r#"{"status":"ok"}"#;

/// The answer of a void method.
const NULL: &str = "null";

/// The `supportedMethods` of a handler: its listed hooks plus `health` and `shutdown`, minus
/// `initialize`, in registry order; names outside the registry are not advertised.
pub(crate) fn supported_methods(handler: &dyn Handler) -> Vec<&'static str> {
    let listed = handler.implemented_methods();
    methods::METHODS
        .iter()
        .map(|m| m.name)
        .filter(|m| *m != Method::Initialize.as_str())
        .filter(|m| listed.contains(m) || methods::ALWAYS_SUPPORTED.contains(m))
        .collect()
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("a JSON literal")
}

pub(crate) async fn initialize(
    shared: &Shared,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<Box<RawValue>, ErrorObject> {
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
) -> Result<Box<RawValue>, ErrorObject> {
    if shared.implements(Method::Health) {
        return shared.call_hook(Method::Health, params, cx).await;
    }
    Ok(raw(HEALTH_OK))
}

pub(crate) async fn config_changed(
    shared: &Shared,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<Box<RawValue>, ErrorObject> {
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
