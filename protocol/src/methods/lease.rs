//! Lease lifecycle: validateConfig, probe, acquire, resume, release, destroy, stop
//!.
//!
//! # Null versus absent
//!
//! Where the wire gives `null` and an absent key different meanings, the field is an
//! `Option<Option<T>>`: `None` is an absent key, `Some(None)` is `null`, `Some(Some(v))` is a
//! value. This applies to [`EnvironmentBaseParams::issue_id`] and [`Lease::expires_at`]; each
//! has an accessor that folds both to `Option<&str>`. A required nullable field such as
//! [`Lease::provider_lease_id`] is an `Option<T>` that is always serialized (`null` for `None`).
//! Every other optional field reads `null` as absent and is omitted when `None`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

/// A JSON object kept verbatim, key order preserved (`config`, `metadata`, `details`, …).
pub type JsonObject = Map<String, Value>;

pub(crate) mod wire;
use wire::nullable;
pub(crate) use wire::open_enum;

/// The params every `environment*` method but `environmentValidateConfig` starts with
/// (`PluginEnvironmentDriverBaseParams`, D.1). Other params types embed it with
/// `#[serde(flatten)]`, so its keys sit at the top level of the params object.
#[skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[serde(bound(deserialize = "C: Deserialize<'de> + Default", serialize = "C: Serialize"))]
#[schemars(bound = "C: JsonSchema + Default + Serialize")]
pub struct EnvironmentBaseParams<C = JsonObject> {
    /// The driver key of the manifest's environment driver.
    pub driver_key: String,
    /// The company the call acts for.
    pub company_id: String,
    /// The environment.
    pub environment_id: String,
    /// The issue, when the call belongs to one: absent, `null` or a string (see module docs).
    #[serde(default, deserialize_with = "nullable")]
    pub issue_id: Option<Option<String>>,
    /// The environment config with secrets resolved and host keys stripped (C.5).
    #[serde(default)]
    pub config: C,
    /// Params keys this crate does not know (D.1, D.14), preserved verbatim. When embedded in
    /// a method's params, this holds the keys neither the base nor that method knows.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `config` is printed as `[redacted]`: it carries resolved secrets.
impl<C> std::fmt::Debug for EnvironmentBaseParams<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentBaseParams")
            .field("driver_key", &self.driver_key)
            .field("company_id", &self.company_id)
            .field("environment_id", &self.environment_id)
            .field("issue_id", &self.issue_id)
            .field("config", &crate::secret::Redacted)
            .field("extra", &self.extra)
            .finish()
    }
}

map_config!(config EnvironmentBaseParams { driver_key, company_id, environment_id, issue_id, extra });

impl EnvironmentBaseParams {
    /// Base params with an empty config and no issue.
    pub fn new(
        driver_key: impl Into<String>,
        company_id: impl Into<String>,
        environment_id: impl Into<String>,
    ) -> Self {
        EnvironmentBaseParams {
            driver_key: driver_key.into(),
            company_id: company_id.into(),
            environment_id: environment_id.into(),
            issue_id: None,
            config: JsonObject::new(),
            extra: JsonObject::new(),
        }
    }

    /// Sets the config.
    pub fn with_config(mut self, config: JsonObject) -> Self {
        self.config = config;
        self
    }

    /// The issue id, `None` when absent or `null`.
    pub fn issue_id(&self) -> Option<&str> {
        self.issue_id.as_ref().and_then(|i| i.as_deref())
    }
}

/// A provider lease (`PluginEnvironmentLease`, D.1): the result of acquire and resume, and the
/// `lease` the host passes back to later calls.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Lease {
    /// The provider's id of the allocation; `null` from resume means "not resumable" (D.5).
    /// Always serialized.
    #[serialize_always]
    pub provider_lease_id: Option<String>,
    /// Provider metadata the host persists (secret-ref paths removed) and passes back.
    pub metadata: Option<JsonObject>,
    /// The real expiry as an ISO 8601 string: absent, `null` or a string (see module docs).
    /// Both absent and `null` mean "no expiry"; the host passes leases back with `null`.
    #[serde(default, deserialize_with = "nullable")]
    pub expires_at: Option<Option<String>>,
    /// Keys this crate does not know, preserved verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The host sent no lease id (absent, `null` or empty) where the call needs one. Its message
/// names the params path (`lease.providerLeaseId is required`); the SDK answers it `-32602`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingLeaseId {
    path: &'static str,
}

impl MissingLeaseId {
    /// The params path of the missing id (`lease.providerLeaseId` or `providerLeaseId`).
    pub fn path(&self) -> &'static str {
        self.path
    }
}

impl std::fmt::Display for MissingLeaseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is required", self.path)
    }
}

impl std::error::Error for MissingLeaseId {}

/// The one rule of every lease-id accessor: an id the host sent absent, `null` or empty is no
/// id.
fn present_id(id: Option<&str>) -> Option<&str> {
    id.filter(|id| !id.is_empty())
}

/// The id in `id` when it is present ([`present_id`]), else [`MissingLeaseId`] at `path`.
fn required_id<'a>(id: Option<&'a str>, path: &'static str) -> Result<&'a str, MissingLeaseId> {
    present_id(id).ok_or(MissingLeaseId { path })
}

impl Lease {
    /// The lease's `providerLeaseId` as the params of `environmentExecute`, sync and
    /// `environmentRealizeWorkspace` carry it (`params.lease`): [`MissingLeaseId`] naming
    /// `lease.providerLeaseId` when the host sent none or an empty one.
    pub fn required_id(&self) -> Result<&str, MissingLeaseId> {
        required_id(self.provider_lease_id.as_deref(), "lease.providerLeaseId")
    }

    /// A lease on the allocation `provider_lease_id`, without metadata or expiry.
    pub fn new(provider_lease_id: impl Into<String>) -> Self {
        Lease { provider_lease_id: Some(provider_lease_id.into()), ..Lease::default() }
    }

    /// The "not resumable" answer of `environmentResumeLease`:
    /// `{providerLeaseId: null, metadata}` (D.5).
    pub fn not_resumable(metadata: JsonObject) -> Self {
        Lease { provider_lease_id: None, metadata: Some(metadata), ..Lease::default() }
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Sets `metadata.remoteCwd`, the directory inside the sandbox where the host runs commands
    /// that name no `cwd` and under which it places its sync targets (other metadata keys are
    /// kept). Without it the host falls back to `/tmp`.
    pub fn with_remote_cwd(mut self, remote_cwd: impl Into<String>) -> Self {
        self.metadata
            .get_or_insert_with(JsonObject::new)
            .insert(Self::REMOTE_CWD.into(), serde_json::Value::String(remote_cwd.into()));
        self
    }

    /// `metadata.remoteCwd` as the host reads it: a string, trimmed as JavaScript trims
    /// ([`js_trim`](crate::jsonrpc::js_trim)), `None` when absent, not a string or blank.
    pub fn remote_cwd(&self) -> Option<&str> {
        let cwd = crate::jsonrpc::js_trim(self.metadata.as_ref()?.get(Self::REMOTE_CWD)?.as_str()?);
        (!cwd.is_empty()).then_some(cwd)
    }

    /// The metadata key of the lease's working directory: `remoteCwd`.
    pub const REMOTE_CWD: &'static str = "remoteCwd";

    /// Sets the expiry (an ISO 8601 timestamp).
    pub fn with_expires_at(mut self, expires_at: impl Into<String>) -> Self {
        self.expires_at = Some(Some(expires_at.into()));
        self
    }

    /// The expiry, `None` when absent or `null`.
    pub fn expires_at(&self) -> Option<&str> {
        self.expires_at.as_ref().and_then(|e| e.as_deref())
    }
}

wire_enum! {
    /// The state a termination receipt confirms.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[non_exhaustive]
    pub enum TerminationState {
        /// Execution ended; the allocation (and its files) still exist.
        Stopped = "stopped",
        /// The allocation is gone.
        Destroyed = "destroyed",
    }
}

impl TerminationState {
    /// The state of a wire value.
    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "stopped" => Some(TerminationState::Stopped),
            "destroyed" => Some(TerminationState::Destroyed),
            _ => None,
        }
    }
}

/// Proof that execution on a lease has ended (`PluginEnvironmentTerminationReceipt`, D.1).
/// Return it only after the provider confirmed the end; a queued stop is not a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TerminationReceipt {
    /// Must equal the lease's `providerLeaseId`, or the host rejects the receipt.
    pub provider_lease_id: String,
    /// What was confirmed.
    pub state: TerminationState,
}

impl TerminationReceipt {
    /// A receipt for `provider_lease_id` in `state`.
    pub fn new(provider_lease_id: impl Into<String>, state: TerminationState) -> Self {
        TerminationReceipt { provider_lease_id: provider_lease_id.into(), state }
    }

    /// `{providerLeaseId, state: "stopped"}`.
    pub fn stopped(provider_lease_id: impl Into<String>) -> Self {
        Self::new(provider_lease_id, TerminationState::Stopped)
    }

    /// `{providerLeaseId, state: "destroyed"}`.
    pub fn destroyed(provider_lease_id: impl Into<String>) -> Self {
        Self::new(provider_lease_id, TerminationState::Destroyed)
    }

    /// The wire result `{providerLeaseId, state}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"providerLeaseId": self.provider_lease_id, "state": self.state.as_str()})
    }

    /// True when the receipt settles a stop-and-retain intent: only `stopped` does; a
    /// `destroyed` receipt leaves that cleanup pending.
    pub fn settles_stop_and_retain(&self) -> bool {
        self.state == TerminationState::Stopped
    }
}

/// Params of `environmentValidateConfig` (D.2): no company, so no base params.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[serde(bound(deserialize = "C: Deserialize<'de> + Default", serialize = "C: Serialize"))]
#[schemars(bound = "C: JsonSchema + Default + Serialize")]
pub struct ValidateConfigParams<C = JsonObject> {
    /// The driver key.
    pub driver_key: String,
    /// The config to validate.
    #[serde(default)]
    pub config: C,
    /// Keys this crate does not know, preserved verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `config` is printed as `[redacted]`: it carries resolved secrets.
impl<C> std::fmt::Debug for ValidateConfigParams<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidateConfigParams")
            .field("driver_key", &self.driver_key)
            .field("config", &crate::secret::Redacted)
            .field("extra", &self.extra)
            .finish()
    }
}

map_config!(config ValidateConfigParams { driver_key, extra });

impl ValidateConfigParams {
    /// Params for `driver_key` and `config`.
    pub fn new(driver_key: impl Into<String>, config: JsonObject) -> Self {
        ValidateConfigParams { driver_key: driver_key.into(), config, extra: JsonObject::new() }
    }
}

/// Result of `environmentValidateConfig` (D.2). With `ok: false` the host answers HTTP 422
/// with `errors[0]`; otherwise it persists `normalizedConfig` (or the original config).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ValidateConfigResult {
    /// Whether the config is valid.
    pub ok: bool,
    /// Warnings shown to the operator.
    pub warnings: Option<Vec<String>>,
    /// Errors; the first one becomes the host's message.
    pub errors: Option<Vec<String>>,
    /// The config to persist instead of the submitted one.
    pub normalized_config: Option<JsonObject>,
}

impl ValidateConfigResult {
    /// `{ok: true}`.
    pub fn valid() -> Self {
        ValidateConfigResult { ok: true, ..Default::default() }
    }

    /// `{ok: false, errors}`.
    pub fn invalid<I: IntoIterator<Item = S>, S: Into<String>>(errors: I) -> Self {
        ValidateConfigResult {
            ok: false,
            errors: Some(errors.into_iter().map(Into::into).collect()),
            ..Default::default()
        }
    }

    /// Appends a warning.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.get_or_insert_with(Vec::new).push(warning.into());
        self
    }

    /// Sets the normalized config.
    pub fn with_normalized_config(mut self, config: JsonObject) -> Self {
        self.normalized_config = Some(config);
        self
    }
}

params_struct! {
    /// Params of `environmentProbe` (D.3): the base params.
    pub struct ProbeParams {
    }
}

impl ProbeParams {
    /// Probe params from base params.
    pub fn new(base: EnvironmentBaseParams) -> Self {
        ProbeParams { base }
    }
}

/// Severity of a probe diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DiagnosticSeverity {
    /// Informational.
    Info,
    /// A warning.
    Warning,
    /// An error.
    Error,
}

/// One probe diagnostic (`PluginEnvironmentDiagnostic`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Diagnostic {
    /// Severity.
    pub severity: DiagnosticSeverity,
    /// Human-readable text; never include secrets.
    pub message: String,
    /// A machine-readable code.
    pub code: Option<String>,
    /// Structured details.
    pub details: Option<JsonObject>,
}

impl Diagnostic {
    /// A diagnostic without code or details.
    pub fn new(severity: DiagnosticSeverity, message: impl Into<String>) -> Self {
        Diagnostic { severity, message: message.into(), code: None, details: None }
    }

    /// Sets the code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Sets the details.
    pub fn with_details(mut self, details: JsonObject) -> Self {
        self.details = Some(details);
        self
    }
}

/// Result of `environmentProbe` (D.3).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProbeResult {
    /// Whether the provider is usable.
    pub ok: bool,
    /// A one-line summary.
    pub summary: Option<String>,
    /// Diagnostics.
    pub diagnostics: Option<Vec<Diagnostic>>,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl ProbeResult {
    /// `{ok}`.
    pub fn new(ok: bool) -> Self {
        ProbeResult { ok, ..Default::default() }
    }

    /// `{ok: true}`: the provider is usable.
    pub fn ok() -> Self {
        Self::new(true)
    }

    /// `{ok: false, summary: reason}`: the provider is not usable, and why (the host shows the
    /// summary to the operator; never put a secret in it).
    pub fn failed(reason: impl Into<String>) -> Self {
        Self::new(false).with_summary(reason)
    }

    /// Sets the summary.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// Appends a diagnostic.
    pub fn with_diagnostic(mut self, diagnostic: Diagnostic) -> Self {
        self.diagnostics.get_or_insert_with(Vec::new).push(diagnostic);
        self
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }
}

open_enum! {
    /// The lease policy the host chose for an acquisition (D.4, November tests).
    pub enum LeasePolicy {
        /// A fresh lease per run.
        Ephemeral = "ephemeral",
        /// A lease reused across runs of the environment.
        ReuseByEnvironment = "reuse_by_environment",
    }
}

open_enum! {
    /// What happens to the provider resource on release or stop (D.6, D.7).
    pub enum ResourceDisposition {
        /// Leave it running.
        KeepRunning = "keep_running",
        /// Stop it and keep its files.
        StopAndRetain = "stop_and_retain",
        /// Delete it.
        Destroy = "destroy",
    }
}

/// The host's creation operation: sent on acquire when the
/// driver declares `creationOperationVersion: 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreationOperation {
    /// The creation-operation protocol version (only 1 is known).
    pub version: u64,
    /// The operation id (a UUID).
    pub id: String,
}

impl CreationOperation {
    /// Prefix of the provider creation name.
    pub const NAME_PREFIX: &'static str = "paperclip-create-";
    /// The label key the provider sets to [`CreationOperation::id`].
    pub const ATTEMPT_LABEL: &'static str = "paperclip-create-attempt";

    /// An operation of `version` with `id`.
    pub fn new(version: u64, id: impl Into<String>) -> Self {
        CreationOperation { version, id: id.into() }
    }

    /// The provider creation name `paperclip-create-<id>`.
    pub fn creation_name(&self) -> String {
        format!("{}{}", Self::NAME_PREFIX, self.id)
    }
}

params_struct! {
    /// Params of `environmentAcquireLease` (D.4). Result: [`Lease`].
    pub struct AcquireLeaseParams {
        /// The run (a fresh UUID for ad-hoc tests).
        pub run_id: String,
        /// The execution workspace mode (host-defined string).
        pub workspace_mode: Option<String>,
        /// Declared; HOST-2026-09 never sends it.
        pub requested_cwd: Option<String>,
        /// The agent.
        pub agent_id: Option<String>,
        /// The execution workspace (`null` reads as absent).
        pub execution_workspace_id: Option<String>,
        /// The harness of this run.
        pub adapter_type: Option<String>,
        /// Generic plugin-driver path only (`null` reads as absent).
        pub execution_workspace_settings: Option<JsonObject>,
        /// Latest time the lease may stay active (ISO 8601); bound the sandbox at or before it
        /// and return the real expiry, or return none (`null` reads as absent).
        pub requested_expires_at: Option<String>,
        /// The lease policy (November).
        pub lease_policy: Option<LeasePolicy>,
        /// The creation operation.
        pub creation_operation: Option<CreationOperation>,
    }
}

impl AcquireLeaseParams {
    /// Params for `run_id` with every optional field absent.
    pub fn new(base: EnvironmentBaseParams, run_id: impl Into<String>) -> Self {
        AcquireLeaseParams {
            base,
            run_id: run_id.into(),
            workspace_mode: None,
            requested_cwd: None,
            agent_id: None,
            execution_workspace_id: None,
            adapter_type: None,
            execution_workspace_settings: None,
            requested_expires_at: None,
            lease_policy: None,
            creation_operation: None,
        }
    }
}

params_struct! {
    /// Params of `environmentResumeLease` (D.5). Result: [`Lease`], or
    /// [`Lease::not_resumable`].
    pub struct ResumeLeaseParams {
        /// The lease to resume.
        pub provider_lease_id: String,
        /// The full persisted lease metadata, host keys included.
        pub lease_metadata: Option<JsonObject>,
    }
}

impl ResumeLeaseParams {
    /// Params for `provider_lease_id` without metadata.
    pub fn new(base: EnvironmentBaseParams, provider_lease_id: impl Into<String>) -> Self {
        ResumeLeaseParams {
            base,
            provider_lease_id: provider_lease_id.into(),
            lease_metadata: None,
        }
    }
}

params_struct! {
    /// Params of `environmentReleaseLease` and `environmentDestroyLease` (D.6).
    pub struct ReleaseLeaseParams {
        /// The lease; `null` when the host never got one. Always serialized.
        #[serialize_always]
        pub provider_lease_id: Option<String>,
        /// The persisted lease metadata (may hold `failedCreateCleanup`, F.3).
        pub lease_metadata: Option<JsonObject>,
        /// Sent only when true: terminate active work, and return a receipt.
        pub cancel_active_work: Option<bool>,
        /// The run's status (November tests, e.g. "failed").
        pub run_status: Option<String>,
        /// What to do with the resource (November tests).
        pub resource_disposition: Option<ResourceDisposition>,
    }
}

impl ReleaseLeaseParams {
    /// Params for `provider_lease_id` with every optional field absent.
    pub fn new(base: EnvironmentBaseParams, provider_lease_id: Option<String>) -> Self {
        ReleaseLeaseParams {
            base,
            provider_lease_id,
            lease_metadata: None,
            cancel_active_work: None,
            run_status: None,
            resource_disposition: None,
        }
    }

    /// Stop params as the host sends them: `providerLeaseId`, `cancelActiveWork: true`,
    /// `resourceDisposition: "stop_and_retain"`, no metadata.
    pub fn stop(base: EnvironmentBaseParams, provider_lease_id: impl Into<String>) -> Self {
        ReleaseLeaseParams {
            cancel_active_work: Some(true),
            resource_disposition: Some(ResourceDisposition::StopAndRetain),
            ..ReleaseLeaseParams::new(base, Some(provider_lease_id.into()))
        }
    }

    /// `cancelActiveWork`, false when absent.
    pub fn cancel_active_work(&self) -> bool {
        self.cancel_active_work.unwrap_or(false)
    }
}

impl<C> ReleaseLeaseParams<C> {
    /// The lease id, when the host sent one: `None` when it sent none, `null` or an empty
    /// one — the same rule as [`required_lease_id`](Self::required_lease_id).
    pub fn lease_id(&self) -> Option<&str> {
        present_id(self.provider_lease_id.as_deref())
    }

    /// The lease id for a call that needs one (stop): [`MissingLeaseId`] naming
    /// `providerLeaseId` when the host sent none or an empty one.
    pub fn required_lease_id(&self) -> Result<&str, MissingLeaseId> {
        required_id(self.lease_id(), "providerLeaseId")
    }
}

/// Params of `environmentDestroyLease`: the same shape as release.
pub type DestroyLeaseParams<C = JsonObject> = ReleaseLeaseParams<C>;

/// Result of `environmentAcquireLease`.
pub type AcquireLeaseResult = Lease;
/// Result of `environmentResumeLease`.
pub type ResumeLeaseResult = Lease;
/// What `environmentReleaseLease` and `environmentDestroyLease` answer: `null` (done, no
/// receipt) or a termination receipt confirming how the lease ended.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Released {
    receipt: Option<TerminationReceipt>,
}

/// Built with [`Released::done`], [`Released::destroyed`] or [`Released::stopped`].
impl Released {
    /// `null`: the lease is released (or destroyed), without a receipt.
    pub fn done() -> Self {
        Released { receipt: None }
    }

    /// The receipt `{providerLeaseId, state: "destroyed"}`: the resource is gone.
    pub fn destroyed(provider_lease_id: impl Into<String>) -> Self {
        TerminationReceipt::destroyed(provider_lease_id).into()
    }

    /// The receipt `{providerLeaseId, state: "stopped"}`: stopped, files kept.
    pub fn stopped(provider_lease_id: impl Into<String>) -> Self {
        TerminationReceipt::stopped(provider_lease_id).into()
    }

    /// The receipt, if any.
    pub fn receipt(&self) -> Option<&TerminationReceipt> {
        self.receipt.as_ref()
    }

    /// The receipt, if any, by value.
    pub fn into_receipt(self) -> Option<TerminationReceipt> {
        self.receipt
    }
}

impl_from!(Released {
    TerminationReceipt => |receipt| Released { receipt: Some(receipt) },
    Option<TerminationReceipt> => |receipt| Released { receipt },
});

/// The answer of `environmentDestroyLease` (the same shape as a release's).
pub type Destroyed = Released;

/// Result of `environmentReleaseLease`: see [`Released`].
pub type ReleaseLeaseResult = Released;
/// Result of `environmentDestroyLease`: see [`Released`].
pub type DestroyLeaseResult = Destroyed;
/// Result of `environmentStopLease`.
pub type StopLeaseResult = TerminationReceipt;

/// Params of `environmentStopLease` (`paperclip-2026-11`): the release params type, as
/// upstream (its `providerLeaseId` may be `null`). The host sends `cancelActiveWork: true` and
/// `resourceDisposition: "stop_and_retain"` ([`ReleaseLeaseParams::stop`]). Result: a
/// [`TerminationReceipt`]; a failed or unconfirmed stop (or a stop without a lease id) is an
/// error, which may carry a stop-error envelope with a [`StopErrorReason`], and never deletes
/// anything.
pub type StopLeaseParams<C = JsonObject> = ReleaseLeaseParams<C>;

/// The typed stop error is owned by [`crate::envelope::stop_error`];
/// re-exported here beside the stop params it answers.
pub use crate::envelope::stop_error::{StopErrorReason, STOP_ERROR_SCHEMA};

/// Deserializes `T` from a JSON value (test helper shared by the method modules).
#[cfg(test)]
pub(crate) fn from_json<T: for<'de> Deserialize<'de>>(v: Value) -> T {
    serde_json::from_value(v).expect("deserialize")
}

#[cfg(test)]
mod tests;
