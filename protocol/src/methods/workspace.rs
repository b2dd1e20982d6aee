//! environmentRealizeWorkspace and environmentRunnerIngressEndpoint.
//!
//! Only the types; the host-side validation of an ingress endpoint lives in
//! [`crate::envelope`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::lease::{EnvironmentBaseParams, JsonObject, Lease};
use crate::secret::Secret;

/// The workspace to realize (`workspace` of D.8).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkspaceSpec {
    /// The host-side path.
    pub local_path: Option<String>,
    /// The sandbox-side path.
    pub remote_path: Option<String>,
    /// The workspace mode (host-defined string).
    pub mode: Option<String>,
    /// Host metadata.
    pub metadata: Option<JsonObject>,
    /// Keys this crate does not know, preserved verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

params_struct! {
    /// Params of `environmentRealizeWorkspace` (D.8).
    pub struct RealizeWorkspaceParams {
        /// The lease.
        pub lease: Lease,
        /// The workspace.
        #[serde(default)]
        pub workspace: WorkspaceSpec,
    }
}

impl RealizeWorkspaceParams {
    /// Params for `workspace` in `lease`.
    pub fn new(base: EnvironmentBaseParams, lease: Lease, workspace: WorkspaceSpec) -> Self {
        RealizeWorkspaceParams { base, lease, workspace }
    }
}

/// Result of `environmentRealizeWorkspace` (D.8). Do not return a `workspaceRealization`
/// record; the host builds it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RealizeWorkspaceResult {
    /// The working directory in the sandbox; a blank value makes the host fall back to
    /// `metadata.remoteCwd`, then `remotePath`, then `localPath`.
    pub cwd: String,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl RealizeWorkspaceResult {
    /// `{cwd}`.
    pub fn new(cwd: impl Into<String>) -> Self {
        RealizeWorkspaceResult { cwd: cwd.into(), metadata: None }
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }
}

params_struct! {
    /// Params of `environmentRunnerIngressEndpoint` (D.11).
    pub struct RunnerIngressEndpointParams {
        /// The lease.
        pub lease: Lease,
        /// The sandbox port the runner listens on.
        pub port: u16,
        /// The URL path; the endpoint's pathname must equal it.
        pub path: String,
    }
}

impl RunnerIngressEndpointParams {
    /// Params for `port` and `path` in `lease`.
    pub fn new(
        base: EnvironmentBaseParams,
        lease: Lease,
        port: u16,
        path: impl Into<String>,
    ) -> Self {
        RunnerIngressEndpointParams { base, lease, port, path: path.into() }
    }
}

/// The kind of a runner ingress endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IngressKind {
    /// A `wss:` WebSocket authenticated by secret headers.
    #[default]
    AuthenticatedWebsocket,
}

/// A header the host sends when it connects. The value crosses the wire in clear but is
/// redacted in `Debug`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SecretHeader {
    /// Header name (an HTTP token).
    pub name: String,
    /// Non-empty header value.
    #[serde(serialize_with = "Secret::serialize_exposed")]
    #[schemars(with = "String")]
    pub value: Secret,
}

impl SecretHeader {
    /// A header.
    pub fn new(name: impl Into<String>, value: impl Into<Secret>) -> Self {
        SecretHeader { name: name.into(), value: value.into() }
    }
}

/// Result of `environmentRunnerIngressEndpoint`
/// (`PluginEnvironmentRunnerIngressEndpoint`, D.11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunnerIngressEndpoint {
    /// Always `authenticated_websocket`.
    pub kind: IngressKind,
    /// A `wss:` URL without credentials, query or fragment, whose path is the requested one.
    pub websocket_url: String,
    /// Headers the host sends.
    pub secret_headers: Vec<SecretHeader>,
    /// A non-empty generation; a new value invalidates the previous endpoint.
    pub generation: String,
}

/// Alias naming the result after its method.
pub type RunnerIngressEndpointResult = RunnerIngressEndpoint;

impl RunnerIngressEndpoint {
    /// An endpoint without headers.
    pub fn new(websocket_url: impl Into<String>, generation: impl Into<String>) -> Self {
        RunnerIngressEndpoint {
            kind: IngressKind::AuthenticatedWebsocket,
            websocket_url: websocket_url.into(),
            secret_headers: Vec::new(),
            generation: generation.into(),
        }
    }

    /// Appends a secret header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<Secret>) -> Self {
        self.secret_headers.push(SecretHeader::new(name, value));
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn realize_workspace_wire() {
        let v = json!({
            "driverKey": "d", "companyId": "c1", "environmentId": "e1", "issueId": "i1", "config": {},
            "lease": {"providerLeaseId": "sbx1", "metadata": {"remoteCwd": "/w"}, "expiresAt": null},
            "workspace": {"localPath": "/host/ws", "remotePath": "/w", "mode": "isolated", "metadata": {"k": 1}}
        });
        let p: RealizeWorkspaceParams = from_json(v.clone());
        assert_eq!(p.workspace.remote_path.as_deref(), Some("/w"));
        assert_eq!(p.base.issue_id(), Some("i1"));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let r = RealizeWorkspaceResult::new("/w");
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"cwd": "/w"}));
    }

    #[test]
    fn ingress_wire_carries_header_value_but_debug_hides_it() {
        let p: RunnerIngressEndpointParams = from_json(json!({
            "driverKey": "d", "companyId": "c1", "environmentId": "e1", "config": {},
            "lease": {"providerLeaseId": "sbx1"}, "port": 8080, "path": "/runner"
        }));
        assert_eq!((p.port, p.path.as_str()), (8080, "/runner"));
        let e =
            RunnerIngressEndpoint::new("wss://h.example/runner", "1").with_header("x-token", "t");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"kind": "authenticated_websocket", "websocketUrl": "wss://h.example/runner",
                   "secretHeaders": [{"name": "x-token", "value": "t"}], "generation": "1"})
        );
        assert!(!format!("{e:?}").contains("\"t\""));
        let back: RunnerIngressEndpoint = from_json(serde_json::to_value(&e).unwrap());
        assert_eq!(back, e);
    }
}
