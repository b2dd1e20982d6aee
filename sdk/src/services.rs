//! Typed worker→host service calls on [`Context`]: secrets, spans, plugin state, HTTP,
//! metrics, telemetry, activity and events.
//!
//! Each is a request tagged with the call's invocation id, so the host checks it against the
//! company the call acts for and the manifest's `capabilities`; a refusal is the host's
//! JSON-RPC error. The params and results are the protocol crate's
//! ([`paperclip_sandbox_protocol::methods::services`]). For any other worker→host method use
//! [`Context::request`] or [`Context::call_host`].

use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::methods::{
    self, ActivityLogParams, EventsEmitParams, HttpFetchParams, HttpFetchResult,
    MetricsWriteParams, SecretsResolveParams, SpanRecordParams, StateKey, StateSetParams,
    TelemetryTrackParams,
};
use paperclip_sandbox_protocol::secret::Secret;
use serde_json::Value;

use crate::context::Context;

impl Context {
    /// Resolves a secret reference through the host (`secrets.resolve`). The value comes back
    /// as a [`Secret`]: never printed, never logged.
    pub async fn resolve_secret(
        &self,
        params: &SecretsResolveParams,
    ) -> Result<Secret, ErrorObject> {
        self.request::<methods::SecretsResolve>(params).await.map(Secret::new)
    }

    /// Records a finished provider span (`span.record`).
    ///
    /// As in the upstream SDK, a span is recorded only while the host traces the call (the
    /// call carries a `traceparent`); otherwise this sends nothing and answers `Ok`.
    pub async fn record_span(&self, params: &SpanRecordParams) -> Result<(), ErrorObject> {
        if self.traceparent().is_none() {
            return Ok(());
        }
        self.request::<methods::SpanRecord>(params).await
    }

    /// Reads a plugin state entry (`state.get`); `null` when it is not set.
    pub async fn state_get(&self, key: &StateKey) -> Result<Value, ErrorObject> {
        self.request::<methods::StateGet>(key).await
    }

    /// Writes a plugin state entry (`state.set`).
    pub async fn state_set(&self, key: StateKey, value: Value) -> Result<(), ErrorObject> {
        self.request::<methods::StateSet>(&StateSetParams::new(key, value)).await
    }

    /// Deletes a plugin state entry (`state.delete`).
    pub async fn state_delete(&self, key: &StateKey) -> Result<(), ErrorObject> {
        self.request::<methods::StateDelete>(key).await
    }

    /// Makes an HTTP request through the host (`http.fetch`).
    pub async fn http_fetch(
        &self,
        params: &HttpFetchParams,
    ) -> Result<HttpFetchResult, ErrorObject> {
        self.request::<methods::HttpFetch>(params).await
    }

    /// Writes a metric (`metrics.write`).
    pub async fn write_metric(&self, params: &MetricsWriteParams) -> Result<(), ErrorObject> {
        self.request::<methods::MetricsWrite>(params).await
    }

    /// Tracks a telemetry event (`telemetry.track`).
    pub async fn track(&self, params: &TelemetryTrackParams) -> Result<(), ErrorObject> {
        self.request::<methods::TelemetryTrack>(params).await
    }

    /// Adds an entry to the company's activity log (`activity.log`).
    pub async fn log_activity(&self, params: &ActivityLogParams) -> Result<(), ErrorObject> {
        self.request::<methods::ActivityLog>(params).await
    }

    /// Emits a plugin event on the host's bus (`events.emit`).
    pub async fn emit_event(&self, params: &EventsEmitParams) -> Result<(), ErrorObject> {
        self.request::<methods::EventsEmit>(params).await
    }
}
