//! Interactive setup and template methods.
//!
//! `environmentStartInteractiveSetup` and `environmentGetInteractiveSetup` answer an
//! [`InteractiveSetupSession`]; `environmentCaptureTemplate`,
//! `environmentCancelInteractiveSetup` and `environmentDeleteTemplate` have their own results.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::lease::wire::lenient_count;
use super::lease::{open_enum, JsonObject};
use crate::secret::Secret;

/// Status of an interactive setup session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InteractiveSetupStatus {
    /// The sandbox is starting.
    Starting,
    /// Waiting for the user to connect and finish.
    WaitingForUser,
    /// A template is being captured.
    Capturing,
    /// The template was promoted.
    Promoted,
    /// Cancelled.
    Cancelled,
    /// Timed out.
    TimedOut,
    /// Failed.
    Failed,
    /// The session no longer exists.
    Missing,
}

/// The final status of a cancelled session (a subset of [`InteractiveSetupStatus`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CancelStatus {
    /// Cancelled.
    Cancelled,
    /// Had already timed out.
    TimedOut,
    /// Had already failed.
    Failed,
    /// Did not exist.
    Missing,
}

open_enum! {
    /// The connection type of a setup session (`ssh`, or a provider string).
    pub enum ConnectionType {
        /// SSH.
        Ssh = "ssh",
    }
}

open_enum! {
    /// The kind of a template reference.
    pub enum TemplateKind {
        /// A provider snapshot.
        Snapshot = "snapshot",
        /// A container image.
        Image = "image",
        /// A provider template.
        ProviderTemplate = "provider_template",
        /// Unknown.
        Unknown = "unknown",
    }
}

/// What the operator sees about a connection, with secrets redacted.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionSummary {
    /// Connection type.
    #[serde(rename = "type")]
    pub connection_type: ConnectionType,
    /// Login user (`null` reads as absent).
    pub username: Option<String>,
    /// Whether the host name is redacted.
    pub host_redacted: bool,
    /// Whether the port is redacted.
    pub port_redacted: bool,
    /// Whether the command is redacted.
    pub command_redacted: Option<bool>,
    /// Connection expiry, ISO 8601 (`null` reads as absent).
    pub expires_at: Option<String>,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl ConnectionSummary {
    /// A summary of `connection_type` with the given redaction flags.
    pub fn new(connection_type: ConnectionType, host_redacted: bool, port_redacted: bool) -> Self {
        ConnectionSummary {
            connection_type,
            username: None,
            host_redacted,
            port_redacted,
            command_redacted: None,
            expires_at: None,
            metadata: None,
        }
    }
}

/// The clear connection details (sent only when asked for). The token crosses the wire in
/// clear but is redacted in `Debug`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionPayload {
    /// Connection type.
    #[serde(rename = "type")]
    pub connection_type: ConnectionType,
    /// The command to connect (`null` reads as absent).
    pub command: Option<String>,
    /// An access token (`null` reads as absent).
    #[serde(
        default,
        serialize_with = "Secret::serialize_exposed_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub token: Option<Secret>,
    /// Expiry, ISO 8601 (`null` reads as absent).
    pub expires_at: Option<String>,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl ConnectionPayload {
    /// A payload of `connection_type` with every optional field absent.
    pub fn new(connection_type: ConnectionType) -> Self {
        ConnectionPayload {
            connection_type,
            command: None,
            token: None,
            expires_at: None,
            metadata: None,
        }
    }
}

/// Result of Start and Get (`PluginEnvironmentInteractiveSetupSession`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InteractiveSetupSession {
    /// The setup sandbox; always serialized (`null` when none).
    #[serialize_always]
    pub provider_lease_id: Option<String>,
    /// Status.
    pub status: InteractiveSetupStatus,
    /// Redacted connection summary; always serialized (`null` when none).
    #[serialize_always]
    pub connection_summary: Option<ConnectionSummary>,
    /// Clear connection details (`null` reads as absent).
    pub connection_payload: Option<ConnectionPayload>,
    /// Session expiry, ISO 8601 (`null` reads as absent).
    pub expires_at: Option<String>,
    /// Provider metadata (the host passes it back as `setupMetadata`).
    pub metadata: Option<JsonObject>,
}

/// Result of `environmentStartInteractiveSetup`.
pub type StartInteractiveSetupResult = InteractiveSetupSession;
/// Result of `environmentGetInteractiveSetup`.
pub type GetInteractiveSetupResult = InteractiveSetupSession;

impl InteractiveSetupSession {
    /// A session in `status` without summary or payload.
    pub fn new(provider_lease_id: Option<String>, status: InteractiveSetupStatus) -> Self {
        InteractiveSetupSession {
            provider_lease_id,
            status,
            connection_summary: None,
            connection_payload: None,
            expires_at: None,
            metadata: None,
        }
    }
}

params_struct! {
    /// Params of `environmentStartInteractiveSetup`.
    pub struct StartInteractiveSetupParams {
        /// The host's session id.
        pub session_id: String,
        /// Template to start from (`null` reads as absent).
        pub source_template_ref: Option<String>,
        /// Its kind (`null` reads as absent).
        pub source_template_kind: Option<TemplateKind>,
        /// Lifetime of the connection details, minutes.
        #[serde(default, deserialize_with = "lenient_count")]
        pub connection_expires_in_minutes: Option<u64>,
        /// Session expiry, ISO 8601 (`null` reads as absent).
        pub expires_at: Option<String>,
    }
}

params_struct! {
    /// Params of `environmentGetInteractiveSetup`.
    pub struct GetInteractiveSetupParams {
        /// The setup sandbox; always serialized.
        #[serialize_always]
        pub provider_lease_id: Option<String>,
        /// The session's metadata.
        pub setup_metadata: Option<JsonObject>,
        /// Whether to include the clear connection payload.
        pub include_connection_payload: Option<bool>,
        /// Lifetime of the connection details, minutes.
        #[serde(default, deserialize_with = "lenient_count")]
        pub connection_expires_in_minutes: Option<u64>,
    }
}

params_struct! {
    /// Params of `environmentCaptureTemplate`.
    pub struct CaptureTemplateParams {
        /// The setup sandbox; always serialized.
        #[serialize_always]
        pub provider_lease_id: Option<String>,
        /// The session's metadata.
        pub setup_metadata: Option<JsonObject>,
        /// The template the session started from.
        pub source_template_ref: Option<String>,
        /// The template this capture replaces.
        pub previous_template_ref: Option<String>,
        /// A label for the new template.
        pub template_label: Option<String>,
        /// Requested timeout, ms.
        #[serde(default, deserialize_with = "lenient_count")]
        pub timeout_ms: Option<u64>,
    }
}

/// Result of `environmentCaptureTemplate`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CaptureTemplateResult {
    /// The new template.
    pub template_ref: String,
    /// Its kind.
    pub template_kind: TemplateKind,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl CaptureTemplateResult {
    /// A captured template.
    pub fn new(template_ref: impl Into<String>, template_kind: TemplateKind) -> Self {
        CaptureTemplateResult { template_ref: template_ref.into(), template_kind, metadata: None }
    }
}

params_struct! {
    /// Params of `environmentCancelInteractiveSetup`.
    pub struct CancelInteractiveSetupParams {
        /// The setup sandbox; always serialized.
        #[serialize_always]
        pub provider_lease_id: Option<String>,
        /// The session's metadata.
        pub setup_metadata: Option<JsonObject>,
        /// Why (`null` reads as absent).
        pub reason: Option<String>,
    }
}

/// Result of `environmentCancelInteractiveSetup`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelInteractiveSetupResult {
    /// Final status.
    pub status: CancelStatus,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl CancelInteractiveSetupResult {
    /// `{status}`.
    pub fn new(status: CancelStatus) -> Self {
        CancelInteractiveSetupResult { status, metadata: None }
    }
}

params_struct! {
    /// Params of `environmentDeleteTemplate`.
    pub struct DeleteTemplateParams {
        /// The template to delete.
        pub template_ref: String,
        /// Its kind.
        pub template_kind: Option<TemplateKind>,
        /// Template metadata.
        pub metadata: Option<JsonObject>,
        /// Why (`null` reads as absent).
        pub reason: Option<String>,
    }
}

/// Result of `environmentDeleteTemplate`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DeleteTemplateResult {
    /// Whether a template was deleted.
    pub deleted: bool,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl DeleteTemplateResult {
    /// `{deleted}`.
    pub fn new(deleted: bool) -> Self {
        DeleteTemplateResult { deleted, metadata: None }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::methods::lease::from_json;

    fn base() -> Value {
        json!({"driverKey": "d", "companyId": "c1", "environmentId": "e1", "config": {}})
    }

    fn with(extra: Value) -> Value {
        let mut v = base();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    #[test]
    fn params_wire() {
        let start = with(
            json!({"sessionId": "s1", "sourceTemplateRef": "img:1", "sourceTemplateKind": "image",
                                "connectionExpiresInMinutes": 30, "expiresAt": "2026-11-01T00:00:00Z"}),
        );
        let p: StartInteractiveSetupParams = from_json(start.clone());
        assert_eq!(p.source_template_kind, Some(TemplateKind::Image));
        assert_eq!(serde_json::to_value(&p).unwrap(), start);

        let get: GetInteractiveSetupParams =
            from_json(with(json!({"providerLeaseId": null, "includeConnectionPayload": true})));
        assert_eq!(get.provider_lease_id, None);
        assert_eq!(serde_json::to_value(&get).unwrap()["providerLeaseId"], Value::Null);

        let cap: CaptureTemplateParams = from_json(with(
            json!({"providerLeaseId": "sbx1", "templateLabel": null, "timeoutMs": 600000}),
        ));
        assert_eq!((cap.template_label, cap.timeout_ms), (None, Some(600_000)));

        let cancel: CancelInteractiveSetupParams =
            from_json(with(json!({"providerLeaseId": "sbx1", "reason": "user"})));
        assert_eq!(cancel.reason.as_deref(), Some("user"));

        let del: DeleteTemplateParams =
            from_json(with(json!({"templateRef": "t1", "templateKind": "warm_pool"})));
        assert_eq!(del.template_kind, Some(TemplateKind::Other("warm_pool".into())));
    }

    #[test]
    fn results_wire() {
        let mut s = InteractiveSetupSession::new(
            Some("sbx1".into()),
            InteractiveSetupStatus::WaitingForUser,
        );
        s.connection_summary = Some(ConnectionSummary::new(ConnectionType::Ssh, true, false));
        let mut payload = ConnectionPayload::new(ConnectionType::Ssh);
        payload.token = Some(Secret::new("tok"));
        s.connection_payload = Some(payload);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            json!({"providerLeaseId": "sbx1", "status": "waiting_for_user",
                   "connectionSummary": {"type": "ssh", "hostRedacted": true, "portRedacted": false},
                   "connectionPayload": {"type": "ssh", "token": "tok"}})
        );
        assert!(!format!("{s:?}").contains("tok\""));
        assert_eq!(from_json::<InteractiveSetupSession>(v), s);

        let none = InteractiveSetupSession::new(None, InteractiveSetupStatus::Missing);
        assert_eq!(
            serde_json::to_value(&none).unwrap(),
            json!({"providerLeaseId": null, "status": "missing", "connectionSummary": null})
        );
        assert_eq!(
            serde_json::to_value(CaptureTemplateResult::new("snap-1", TemplateKind::Snapshot))
                .unwrap(),
            json!({"templateRef": "snap-1", "templateKind": "snapshot"})
        );
        assert_eq!(
            serde_json::to_value(CancelInteractiveSetupResult::new(CancelStatus::TimedOut))
                .unwrap(),
            json!({"status": "timed_out"})
        );
        assert_eq!(
            serde_json::to_value(DeleteTemplateResult::new(true)).unwrap(),
            json!({"deleted": true})
        );
        assert!(serde_json::from_value::<CancelInteractiveSetupResult>(
            json!({"status": "starting"})
        )
        .is_err());
    }
}
