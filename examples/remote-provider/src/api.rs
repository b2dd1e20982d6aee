//! The HTTP sandbox API this provider drives, and its client.
//!
//! The API is shaped like Daytona's. Every request carries `Authorization: Bearer <apiKey>`
//! and nothing else secret; bodies are JSON.
//!
//! | Request | Body | Answer |
//! |---|---|---|
//! | `GET /health` | | `200` when the API is up |
//! | `POST /sandbox` | `{name, labels, autoDeleteInterval?, snapshot?}` | `{id, name, state, labels, autoDeleteInterval, recoverable}` |
//! | `GET /sandbox/{id}` | | the sandbox, or `404` |
//! | `GET /sandbox/by-name/{name}` | | the sandbox with that creation name, or `404` |
//! | `POST /sandbox/{id}/start` | | `2xx` once accepted |
//! | `POST /sandbox/{id}/stop` | | `2xx` once accepted |
//! | `POST /sandbox/{id}/recover` | | `2xx` once accepted (recovers an `error` state) |
//! | `PATCH /sandbox/{id}/autodelete` | `{autoDeleteInterval: -1}` | `2xx`; disables auto-delete |
//! | `DELETE /sandbox/{id}` | | `2xx` once accepted, `404` when already gone |
//! | `POST /sandbox/{id}/exec` | `{command, args, cwd?, env?, stdin?, timeoutMs?}` | `{exitCode, stdout, stderr}` |
//!
//! `autoDeleteInterval` is the lifetime in minutes after which the API deletes the sandbox on
//! its own; `-1` (or absent) means never. A `POST` that is accepted does not mean it is done:
//! callers re-read the sandbox until it reaches the state they need.
//!
//! States ([`SandboxState`]): `creating`; the snapshot-preparation states `pending_build`,
//! `building_snapshot`, `pulling_snapshot`; `starting`, `started`, `stopping`, `stopped`,
//! `destroying`, `destroyed`; the failures `error` (recoverable when the record says so) and
//! `build_failed`; and `unknown` for anything else.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use paperclip_sandbox_sdk::protocol::secret::Secret;
use paperclip_sandbox_sdk::Deadline;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The lifecycle state of a sandbox, as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// Being created.
    Creating,
    /// Waiting for an image build (snapshot preparation).
    PendingBuild,
    /// Building its snapshot (snapshot preparation).
    BuildingSnapshot,
    /// Pulling its snapshot (snapshot preparation).
    PullingSnapshot,
    /// Starting.
    Starting,
    /// Running.
    Started,
    /// Stopping.
    Stopping,
    /// Stopped; files kept.
    Stopped,
    /// Being deleted.
    Destroying,
    /// Deleted.
    Destroyed,
    /// Failed; see [`Sandbox::recoverable`].
    Error,
    /// The image build failed.
    BuildFailed,
    /// A state this client does not know.
    #[serde(other)]
    Unknown,
}

impl SandboxState {
    /// The snapshot-preparation states, in which a fresh acquisition keeps waiting inside its
    /// cap even past the lookup delay.
    pub fn is_preparing_snapshot(self) -> bool {
        matches!(
            self,
            SandboxState::PendingBuild
                | SandboxState::BuildingSnapshot
                | SandboxState::PullingSnapshot
        )
    }
}

/// The wire value (`pending_build`): the serde name, so there is one list of names.
impl fmt::Display for SandboxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_value(self) {
            Ok(Value::String(name)) => f.write_str(&name),
            _ => Err(fmt::Error),
        }
    }
}

/// A sandbox record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    /// The API's id: the lease's `providerLeaseId`.
    pub id: String,
    /// The creation name (`paperclip-create-<id>`).
    #[serde(default)]
    pub name: String,
    /// The state.
    pub state: SandboxState,
    /// Labels set at creation.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Lifetime in minutes before the API deletes it; `-1` or absent: never.
    #[serde(default)]
    pub auto_delete_interval: Option<i64>,
    /// Whether an `error` state can be recovered with `POST /sandbox/{id}/recover`.
    #[serde(default)]
    pub recoverable: bool,
    /// The sandbox's working directory, when the API names one: the lease's
    /// `metadata.remoteCwd`, so the host runs commands there instead of `/tmp`.
    #[serde(default)]
    pub work_dir: Option<String>,
}

impl Sandbox {
    /// True when auto-delete is off (`-1` or absent).
    pub fn auto_delete_disabled(&self) -> bool {
        self.auto_delete_interval.is_none_or(|m| m < 0)
    }
}

/// The body of `POST /sandbox`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSandbox {
    /// The creation name.
    pub name: String,
    /// Ownership labels.
    pub labels: BTreeMap<String, String>,
    /// Lifetime in minutes (from config `ttlMinutes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_delete_interval: Option<i64>,
    /// The snapshot to create from (config `snapshot`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

/// The body of `POST /sandbox/{id}/exec`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRequest {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Extra environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Standard input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Command timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// The answer of `POST /sandbox/{id}/exec`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecResponse {
    /// Exit code; `null` when killed.
    pub exit_code: Option<i64>,
    /// Standard output.
    #[serde(default)]
    pub stdout: String,
    /// Standard error.
    #[serde(default)]
    pub stderr: String,
    /// Whether the command hit its timeout.
    #[serde(default)]
    pub timed_out: bool,
}

/// A failed API call. Its text never contains the API key (the key only ever travels in the
/// `Authorization` header, which no error reports).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The API answered with a non-success status.
    #[error("sandbox API answered {status} to {operation}{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Status {
        /// What was asked (`"GET /sandbox/{id}"`).
        operation: String,
        /// The HTTP status.
        status: u16,
        /// The API's `message` field, shortened.
        detail: Option<String>,
    },
    /// The request did not complete (connection, timeout).
    #[error("sandbox API request {operation} failed: {reason}")]
    Transport {
        /// What was asked.
        operation: String,
        /// Why.
        reason: String,
    },
    /// The answer is not the expected JSON.
    #[error("sandbox API answered {operation} with an unreadable body: {reason}")]
    Decode {
        /// What was asked.
        operation: String,
        /// Why.
        reason: String,
    },
}

impl ApiError {
    /// The HTTP status, when the API answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for `404`.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// True when the API refused the request outright (a `4xx` other than 404, 408, 409 and
    /// 429): nothing was done.
    pub fn is_refusal(&self) -> bool {
        matches!(self.status(), Some(s) if (400..500).contains(&s) && ![404, 408, 409, 429].contains(&s))
    }
}

/// The HTTP client of the API: rustls, trusting the system's root certificates and, when
/// `ca_pem` is given (the contents of `config.caFile`), the certificate authorities it holds.
/// There is no way to skip certificate verification. The error names the config key, never
/// the file's contents.
pub fn http_client(ca_pem: Option<&[u8]>) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder().use_rustls_tls();
    if let Some(pem) = ca_pem {
        let certificates = reqwest::Certificate::from_pem_bundle(pem)
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| "config.caFile: expected a file of PEM certificates".to_owned())?;
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder.build().map_err(|_| "the TLS client could not be set up".to_owned())
}

/// The HTTP client for a config: `shared` (system roots) without `caFile`, else one that also
/// trusts the file's CAs, built once per distinct file contents and then reused (its
/// connection pool with it).
pub fn http_client_for(
    shared: &reqwest::Client,
    ca_file: Option<&str>,
) -> Result<reqwest::Client, String> {
    use std::sync::{Mutex, OnceLock};
    /// The clients built so far, by the PEM contents they trust.
    type ByCa = Vec<(Vec<u8>, reqwest::Client)>;
    static WITH_CA: OnceLock<Mutex<ByCa>> = OnceLock::new();
    let Some(path) = ca_file else { return Ok(shared.clone()) };
    let pem = std::fs::read(path).map_err(|_| "config.caFile: cannot read the file".to_owned())?;
    let mut clients = WITH_CA.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, client)) = clients.iter().find(|(known, _)| *known == pem) {
        return Ok(client.clone());
    }
    let client = http_client(Some(&pem))?;
    clients.push((pem, client.clone()));
    Ok(client)
}

/// A client of the sandbox API for one account (base URL and API key).
#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Secret,
    request_timeout: Duration,
    deadline: Option<Deadline>,
}

impl fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiClient")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("request_timeout", &self.request_timeout)
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl ApiClient {
    /// A client over the shared `http` connection pool. `base_url` has no trailing slash
    /// requirement; `request_timeout` bounds every call except create and exec.
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: Secret,
        request_timeout: Duration,
    ) -> Self {
        ApiClient {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            request_timeout,
            deadline: None,
        }
    }

    /// This client for a call ending at `deadline`: no request outlasts it, and one still
    /// unanswered then fails naming the API unreachable.
    pub fn with_deadline(mut self, deadline: Option<Deadline>) -> Self {
        self.deadline = deadline;
        self
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
    ) -> Result<Vec<u8>, ApiError> {
        let operation = format!("{method} {path}");
        let left = self.deadline.map(|d| d.remaining()).filter(|left| *left < timeout);
        let timeout = left.unwrap_or(timeout);
        let transport_reason = |e: &reqwest::Error| match left {
            Some(_) if e.is_timeout() => {
                "the sandbox API is unreachable: no answer before the call's deadline".to_owned()
            }
            _ => transport_reason(e),
        };
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base_url))
            .bearer_auth(self.api_key.expose())
            .timeout(timeout);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| ApiError::Transport {
            operation: operation.clone(),
            reason: transport_reason(&e),
        })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| ApiError::Transport {
            operation: operation.clone(),
            reason: transport_reason(&e),
        })?;
        if !status.is_success() {
            return Err(ApiError::Status {
                operation,
                status: status.as_u16(),
                detail: api_message(&bytes).map(|m| shorten(&self.redact(&m))),
            });
        }
        Ok(bytes.to_vec())
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let operation = format!("{method} {path}");
        let bytes = self.send(method, path, body, timeout).await?;
        serde_json::from_slice(&bytes).map_err(|e| ApiError::Decode {
            operation,
            // serde's own text quotes what it found in the body, which an API may fill with
            // the request's credentials.
            reason: self.redact(&paperclip_sandbox_sdk::describe_json_error(&e)),
        })
    }

    /// `text` (relayed from the API) with the configured API key replaced by `[REDACTED]`:
    /// an API that echoes the bearer key in an error body must not put it into an error,
    /// a diagnostic or a log line. Applied before any shortening, so no prefix of the key
    /// survives a cut.
    pub fn redact(&self, text: &str) -> String {
        redact_secret(text, self.api_key.expose())
    }

    /// `GET /health`.
    pub async fn health(&self) -> Result<(), ApiError> {
        self.send(Method::GET, "/health", None, self.request_timeout).await.map(|_| ())
    }

    /// `POST /sandbox`, waiting at most `timeout` for the answer.
    pub async fn create(
        &self,
        request: &CreateSandbox,
        timeout: Duration,
    ) -> Result<Sandbox, ApiError> {
        let body = serde_json::to_value(request).expect("a create request serializes");
        self.call(Method::POST, "/sandbox", Some(body), timeout).await
    }

    /// `GET /sandbox/{id}`; `None` on 404.
    pub async fn get(&self, id: &str) -> Result<Option<Sandbox>, ApiError> {
        let path = format!("/sandbox/{}", segment(id));
        not_found_as_none(self.call(Method::GET, &path, None, self.request_timeout).await)
    }

    /// `GET /sandbox/by-name/{name}`; `None` on 404.
    pub async fn find_by_name(&self, name: &str) -> Result<Option<Sandbox>, ApiError> {
        let path = format!("/sandbox/by-name/{}", segment(name));
        not_found_as_none(self.call(Method::GET, &path, None, self.request_timeout).await)
    }

    /// `POST /sandbox/{id}/{action}` for `start`, `stop` and `recover`.
    pub async fn action(&self, id: &str, action: &str) -> Result<(), ApiError> {
        let path = format!("/sandbox/{}/{action}", segment(id));
        self.send(Method::POST, &path, None, self.request_timeout).await.map(|_| ())
    }

    /// `PATCH /sandbox/{id}/autodelete {autoDeleteInterval: -1}`.
    pub async fn disable_auto_delete(&self, id: &str) -> Result<(), ApiError> {
        let path = format!("/sandbox/{}/autodelete", segment(id));
        let body = json!({"autoDeleteInterval": -1});
        self.send(Method::PATCH, &path, Some(body), self.request_timeout).await.map(|_| ())
    }

    /// `DELETE /sandbox/{id}`; `Ok(false)` when it was already gone (404).
    pub async fn delete(&self, id: &str) -> Result<bool, ApiError> {
        let path = format!("/sandbox/{}", segment(id));
        match self.send(Method::DELETE, &path, None, self.request_timeout).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `POST /sandbox/{id}/exec`, waiting at most `timeout`.
    pub async fn exec(
        &self,
        id: &str,
        request: &ExecRequest,
        timeout: Duration,
    ) -> Result<ExecResponse, ApiError> {
        let path = format!("/sandbox/{}/exec", segment(id));
        let body = serde_json::to_value(request).expect("an exec request serializes");
        self.call(Method::POST, &path, Some(body), timeout).await
    }
}

fn not_found_as_none<T>(result: Result<T, ApiError>) -> Result<Option<T>, ApiError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Percent-encodes a path segment (ids and names are identifiers, but never trust that).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The API's `message` field (the caller redacts, then it is shortened to 200 characters by
/// [`shorten`]).
fn api_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    Some(value.get("message")?.as_str()?.to_owned())
}

/// At most 200 characters of `text`.
fn shorten(text: &str) -> String {
    text.chars().take(200).collect()
}

/// `text` with every occurrence of `secret` (when it is not empty) replaced by `[REDACTED]`.
pub fn redact_secret(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        return text.to_owned();
    }
    text.replace(secret, "[REDACTED]")
}

/// A transport error's kind, without the URL chain (the URL holds no secret, but keep
/// messages short and stable).
fn transport_reason(e: &reqwest::Error) -> String {
    // A rejected server certificate shows in the source chain as rustls's "invalid peer
    // certificate: …" (unknown issuer, wrong name, expired): the fix is the config's CA file.
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        if inner.to_string().contains("certificate") {
            return "the server's TLS certificate is not trusted (add the CA that signed it to \
                    config.caFile, a PEM file)"
                .to_owned();
        }
        source = inner.source();
    }
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else if e.is_body() || e.is_decode() {
        "the answer was cut off".to_owned()
    } else {
        "the connection failed".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_display_as_their_wire_names() {
        assert_eq!(SandboxState::PendingBuild.to_string(), "pending_build");
        let unknown: SandboxState = serde_json::from_value(json!("archived")).unwrap();
        assert_eq!(unknown.to_string(), "unknown");
    }

    #[test]
    fn states_read_and_unknown_falls_back() {
        let s: SandboxState = serde_json::from_value(json!("pulling_snapshot")).unwrap();
        assert!(s.is_preparing_snapshot());
        let s: SandboxState = serde_json::from_value(json!("archived")).unwrap();
        assert_eq!(s, SandboxState::Unknown);
        assert!(!SandboxState::Creating.is_preparing_snapshot());
    }

    #[test]
    fn segment_encodes_and_errors_read() {
        assert_eq!(segment("paperclip-create-1/x y"), "paperclip-create-1%2Fx%20y");
        let e = ApiError::Status { operation: "GET /x".into(), status: 409, detail: None };
        assert!(!e.is_refusal());
        let e = ApiError::Status { operation: "POST /sandbox".into(), status: 422, detail: None };
        assert!(e.is_refusal());
        assert_eq!(e.to_string(), "sandbox API answered 422 to POST /sandbox");
        assert_eq!(api_message(br#"{"message":"no"}"#).as_deref(), Some("no"));
    }

    #[test]
    fn relayed_text_is_redacted_before_it_is_shortened() {
        let key = "sk-live-0123456789";
        let long = format!("{}{key}", "x".repeat(195));
        let out = shorten(&redact_secret(&long, key));
        assert!(!out.contains("sk-live"), "{out}");
        assert_eq!(redact_secret("a sk-live-0123456789 b", key), "a [REDACTED] b");
        assert_eq!(redact_secret("text", ""), "text");
    }

    #[test]
    fn debug_redacts_the_key() {
        let c = ApiClient::new(
            reqwest::Client::new(),
            "http://x/",
            Secret::new("sk-live"),
            Duration::from_secs(1),
        );
        let d = format!("{c:?}");
        assert!(!d.contains("sk-live") && d.contains("http://x"), "{d}");
    }
}
