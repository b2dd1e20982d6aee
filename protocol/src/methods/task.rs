//! `environmentTask` (`paperclip-2026-11`): one provider-run Runner execution attempt.
//!
//! The host drives a task through one method with an operation union: `submit` starts the
//! Runner (with its identity and a one-time bootstrap ticket), `status` and `connection` read
//! it, `complete` and `stop` end it. The result union answers each operation with one kind:
//! `status` → `status`, `connection` → `connection`, every other operation → `accepted`; the
//! result's `taskId` is always the request's. An accepted `stop` does not prove the process
//! ended: only a `status` result with `executionStopped: true` does.
//!
//! Both unions are strict (an unknown key is an error) and carry value rules, checked by
//! [`TaskOperation::validate`], [`TaskResult::validate`] and, for the pairing,
//! [`TaskResult::check_answers`]. A driver offers tasks by declaring `supportsTasks: true`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::lease::{JsonObject, Lease};
use super::workspace::SecretHeader;
use crate::envelope::ingress::{is_credential_free_wss, is_header_name};
use crate::secret::Secret;

/// The most project ids a `submit` may carry.
pub const MAX_TASK_PROJECT_IDS: usize = 64;
/// The longest bootstrap ticket, in UTF-16 code units.
pub const MAX_BOOTSTRAP_TICKET_LEN: usize = 65_536;
/// The most secret headers of a task connection endpoint.
pub const MAX_TASK_SECRET_HEADERS: usize = 16;
/// The longest secret header value, in UTF-16 code units.
pub const MAX_TASK_HEADER_VALUE_LEN: usize = 65_536;
/// The largest protocol version (JavaScript's largest safe integer).
pub const MAX_PROTOCOL_VERSION: u64 = 9_007_199_254_740_991;
/// The message of a result that does not answer its operation.
pub const TASK_RESPONSE_MISMATCH_MESSAGE: &str =
    "Invalid plugin-provided Runner execution response";

/// Params of `environmentTask`.
#[skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EnvironmentTaskParams {
    /// The driver.
    pub driver_key: String,
    /// The company.
    pub company_id: String,
    /// The environment; `null` during cleanup after the environment was deleted.
    #[serde(default)]
    #[serialize_always]
    pub environment_id: Option<String>,
    /// The issue, when the run has one (`null` reads as absent).
    pub issue_id: Option<String>,
    /// The environment config.
    #[serde(default)]
    pub config: JsonObject,
    /// The lease the task runs in.
    pub lease: Lease,
    /// The provider-issued task id, stable across ambiguous submission retries.
    pub task_id: String,
    /// The run; `null` during cleanup after the run was deleted.
    #[serde(default)]
    #[serialize_always]
    pub run_id: Option<String>,
    /// The agent, or `null`.
    #[serde(default)]
    #[serialize_always]
    pub agent_id: Option<String>,
    /// The company-validated projects to prepare on submit; empty during cleanup.
    #[serde(default)]
    pub project_ids: Vec<String>,
    /// What to do.
    pub operation: TaskOperation,
}

/// `config` is printed as `[redacted]`: it carries resolved secrets.
impl std::fmt::Debug for EnvironmentTaskParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentTaskParams")
            .field("driver_key", &self.driver_key)
            .field("company_id", &self.company_id)
            .field("environment_id", &self.environment_id)
            .field("issue_id", &self.issue_id)
            .field("config", &crate::secret::Redacted)
            .field("lease", &self.lease)
            .field("task_id", &self.task_id)
            .field("run_id", &self.run_id)
            .field("agent_id", &self.agent_id)
            .field("project_ids", &self.project_ids)
            .field("operation", &self.operation)
            .finish()
    }
}

impl EnvironmentTaskParams {
    /// Params for `operation` on `task_id` in `lease`, with no environment, run, agent or
    /// project.
    pub fn new(
        driver_key: impl Into<String>,
        company_id: impl Into<String>,
        lease: Lease,
        task_id: impl Into<String>,
        operation: TaskOperation,
    ) -> Self {
        EnvironmentTaskParams {
            driver_key: driver_key.into(),
            company_id: company_id.into(),
            environment_id: None,
            issue_id: None,
            config: JsonObject::new(),
            lease,
            task_id: task_id.into(),
            run_id: None,
            agent_id: None,
            project_ids: Vec::new(),
            operation,
        }
    }
}

/// The Runner identity of a `submit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct TaskRunner {
    /// Oldest Runner protocol version the client speaks (1 or more).
    pub protocol_min: u64,
    /// Newest Runner protocol version the client speaks (at least `protocolMin`).
    pub protocol_max: u64,
    /// The harness (`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,95}$`).
    pub harness: String,
    /// The Runner (a stable id: `^[A-Za-z0-9][A-Za-z0-9._:-]{0,159}$`, as every id below).
    pub runner_id: String,
    /// The Runner lease.
    pub lease_id: String,
    /// The run.
    pub run_id: String,
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item_id: String,
}

/// The operation of an `environmentTask` call (tag `kind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum TaskOperation {
    /// Start the Runner.
    #[serde(rename_all = "camelCase")]
    Submit {
        /// The projects to prepare (UUIDs, unique, at most [`MAX_TASK_PROJECT_IDS`]).
        project_ids: Vec<String>,
        /// The Runner identity (boxed: it is most of the operation's size).
        runner: Box<TaskRunner>,
        /// The one-time ticket the Runner presents; transient input, never stored or logged.
        #[serde(serialize_with = "Secret::serialize_exposed")]
        #[schemars(with = "String")]
        bootstrap_ticket: Secret,
    },
    /// Report the task's phase.
    Status {},
    /// Return the Runner connection endpoint.
    Connection {},
    /// The run is complete: end the task.
    Complete {},
    /// Stop the task.
    Stop {},
}

wire_enum! {
    /// The kind of a [`TaskOperation`] or [`TaskResult`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum TaskKind {
        /// `submit`.
        Submit = "submit",
        /// `status` (an operation and a result kind).
        Status = "status",
        /// `connection` (an operation and a result kind).
        Connection = "connection",
        /// `complete`.
        Complete = "complete",
        /// `stop`.
        Stop = "stop",
        /// `accepted` (a result kind).
        Accepted = "accepted",
    }
}

/// A task operation or result that breaks a rule. `Display` names the field path and the
/// rule, never the value (tickets and header values are secrets).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {rule}")]
#[non_exhaustive]
pub struct TaskRuleError {
    /// The field path, e.g. `operation.runner.runId`.
    pub path: String,
    /// The rule broken.
    pub rule: &'static str,
}

fn rule(path: impl Into<String>, rule: &'static str) -> TaskRuleError {
    TaskRuleError { path: path.into(), rule }
}

fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `^[A-Za-z0-9][A-Za-z0-9._:-]{0,159}$`.
fn is_stable_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 160
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

/// `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,95}$`.
fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 96
        && b[0].is_ascii_alphanumeric()
        && b[1..].iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
}

/// The 8-4-4-4-12 hexadecimal UUID shape.
pub(crate) fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|c| c.is_ascii_hexdigit()))
}

impl TaskOperation {
    /// The operation's kind.
    pub fn kind(&self) -> TaskKind {
        match self {
            TaskOperation::Submit { .. } => TaskKind::Submit,
            TaskOperation::Status {} => TaskKind::Status,
            TaskOperation::Connection {} => TaskKind::Connection,
            TaskOperation::Complete {} => TaskKind::Complete,
            TaskOperation::Stop {} => TaskKind::Stop,
        }
    }

    /// The result kind that answers this operation: `status` and `connection` answer
    /// themselves, every other operation is answered `accepted`.
    pub fn expected_result(&self) -> TaskKind {
        match self {
            TaskOperation::Status {} => TaskKind::Status,
            TaskOperation::Connection {} => TaskKind::Connection,
            _ => TaskKind::Accepted,
        }
    }

    /// Checks the value rules of the upstream operation schema (the key set is checked when
    /// deserializing): on `submit`, UUID project ids, unique, at most
    /// [`MAX_TASK_PROJECT_IDS`]; a Runner protocol range of integers from 1 to
    /// [`MAX_PROTOCOL_VERSION`] with `protocolMin <= protocolMax`; a harness identifier and
    /// stable ids; a ticket of 1 to [`MAX_BOOTSTRAP_TICKET_LEN`] code units.
    pub fn validate(&self) -> Result<(), TaskRuleError> {
        let TaskOperation::Submit { project_ids, runner, bootstrap_ticket } = self else {
            return Ok(());
        };
        if project_ids.len() > MAX_TASK_PROJECT_IDS {
            return Err(rule("operation.projectIds", "at most 64 project ids"));
        }
        for (i, id) in project_ids.iter().enumerate() {
            if !is_uuid(id) {
                return Err(rule(format!("operation.projectIds.{i}"), "must be a UUID"));
            }
            if project_ids[..i].contains(id) {
                return Err(rule("operation.projectIds", "Duplicate project IDs"));
            }
        }
        for (field, v) in
            [("protocolMin", runner.protocol_min), ("protocolMax", runner.protocol_max)]
        {
            if !(1..=MAX_PROTOCOL_VERSION).contains(&v) {
                return Err(rule(
                    format!("operation.runner.{field}"),
                    "must be an integer from 1 to 9007199254740991",
                ));
            }
        }
        if !is_identifier(&runner.harness) {
            return Err(rule(
                "operation.runner.harness",
                "must match ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,95}$",
            ));
        }
        for (field, v) in [
            ("runnerId", &runner.runner_id),
            ("leaseId", &runner.lease_id),
            ("runId", &runner.run_id),
            ("sessionId", &runner.session_id),
            ("turnId", &runner.turn_id),
            ("itemId", &runner.item_id),
        ] {
            if !is_stable_id(v) {
                return Err(rule(
                    format!("operation.runner.{field}"),
                    "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,159}$",
                ));
            }
        }
        if runner.protocol_min > runner.protocol_max {
            return Err(rule("operation.runner", "Invalid PRP version range"));
        }
        let n = js_len(bootstrap_ticket.expose());
        if n == 0 || n > MAX_BOOTSTRAP_TICKET_LEN {
            return Err(rule("operation.bootstrapTicket", "must be 1 to 65536 characters"));
        }
        Ok(())
    }
}

/// The phase of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskPhase {
    /// Resources are being prepared.
    Preparing,
    /// The Runner runs.
    Running,
    /// The task ended successfully.
    Completed,
    /// The task failed.
    Failed,
    /// The task was cancelled.
    Cancelled,
    /// The task was interrupted.
    Interrupted,
}

/// The kind of a task connection endpoint (only `authenticated_websocket`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskEndpointKind {
    /// A `wss:` WebSocket authenticated by secret headers.
    #[default]
    AuthenticatedWebsocket,
}

/// The Runner connection endpoint of a `connection` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct TaskEndpoint {
    /// Always `authenticated_websocket`.
    pub kind: TaskEndpointKind,
    /// A `wss:` URL without credentials, query or fragment.
    pub websocket_url: String,
    /// A non-empty generation.
    pub generation: String,
    /// Headers the host sends (at most [`MAX_TASK_SECRET_HEADERS`]); values are secrets.
    pub secret_headers: Vec<SecretHeader>,
}

impl TaskEndpoint {
    /// An endpoint without headers.
    pub fn new(websocket_url: impl Into<String>, generation: impl Into<String>) -> Self {
        TaskEndpoint {
            kind: TaskEndpointKind::AuthenticatedWebsocket,
            websocket_url: websocket_url.into(),
            generation: generation.into(),
            secret_headers: Vec::new(),
        }
    }

    /// Appends a secret header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<Secret>) -> Self {
        self.secret_headers.push(SecretHeader::new(name, value));
        self
    }
}

/// Result of `environmentTask` (tag `kind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum TaskResult {
    /// The operation was accepted (`submit`, `complete`, `stop`).
    #[serde(rename_all = "camelCase")]
    Accepted {
        /// The request's task id.
        task_id: String,
    },
    /// The task's phase (`status`).
    #[serde(rename_all = "camelCase")]
    Status {
        /// The request's task id.
        task_id: String,
        /// The phase.
        phase: TaskPhase,
        /// The Runner's exit code, once it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// True once the provider observed the task and all its descendants stopped (a
        /// terminal phase alone does not prove it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_stopped: Option<bool>,
    },
    /// The Runner connection (`connection`).
    #[serde(rename_all = "camelCase")]
    Connection {
        /// The request's task id.
        task_id: String,
        /// The endpoint.
        endpoint: TaskEndpoint,
    },
}

impl TaskResult {
    /// `accepted` for `task_id`.
    pub fn accepted(task_id: impl Into<String>) -> Self {
        TaskResult::Accepted { task_id: task_id.into() }
    }

    /// `status` for `task_id` in `phase`, without exit code or stop proof.
    pub fn status(task_id: impl Into<String>, phase: TaskPhase) -> Self {
        TaskResult::Status {
            task_id: task_id.into(),
            phase,
            exit_code: None,
            execution_stopped: None,
        }
    }

    /// `connection` for `task_id`.
    pub fn connection(task_id: impl Into<String>, endpoint: TaskEndpoint) -> Self {
        TaskResult::Connection { task_id: task_id.into(), endpoint }
    }

    /// The result's kind.
    pub fn kind(&self) -> TaskKind {
        match self {
            TaskResult::Accepted { .. } => TaskKind::Accepted,
            TaskResult::Status { .. } => TaskKind::Status,
            TaskResult::Connection { .. } => TaskKind::Connection,
        }
    }

    /// The result's task id.
    pub fn task_id(&self) -> &str {
        match self {
            TaskResult::Accepted { task_id }
            | TaskResult::Status { task_id, .. }
            | TaskResult::Connection { task_id, .. } => task_id,
        }
    }

    /// Checks the value rules of the upstream result schema: a non-empty task id; on
    /// `connection`, a credential-free `wss:` URL without query or fragment, a non-empty
    /// generation, at most [`MAX_TASK_SECRET_HEADERS`] headers with token names and values
    /// of 1 to [`MAX_TASK_HEADER_VALUE_LEN`] code units without CR or LF.
    pub fn validate(&self) -> Result<(), TaskRuleError> {
        if self.task_id().is_empty() {
            return Err(rule("taskId", "must not be empty"));
        }
        let TaskResult::Connection { endpoint, .. } = self else { return Ok(()) };
        if !is_credential_free_wss(&endpoint.websocket_url) {
            return Err(rule("endpoint.websocketUrl", "Expected a credential-free WSS URL"));
        }
        if endpoint.generation.is_empty() {
            return Err(rule("endpoint.generation", "must not be empty"));
        }
        if endpoint.secret_headers.len() > MAX_TASK_SECRET_HEADERS {
            return Err(rule("endpoint.secretHeaders", "at most 16 headers"));
        }
        for (i, h) in endpoint.secret_headers.iter().enumerate() {
            if !is_header_name(&h.name) {
                return Err(rule(
                    format!("endpoint.secretHeaders.{i}.name"),
                    "must be an HTTP token",
                ));
            }
            let v = h.value.expose();
            let n = js_len(v);
            if n == 0 || n > MAX_TASK_HEADER_VALUE_LEN || v.contains(['\r', '\n']) {
                return Err(rule(
                    format!("endpoint.secretHeaders.{i}.value"),
                    "must be 1 to 65536 characters without CR or LF",
                ));
            }
        }
        Ok(())
    }

    /// Checks that this result answers `operation` on `task_id`: [`validate`](Self::validate)
    /// passes, the task id is the request's and the kind is
    /// [`TaskOperation::expected_result`]. The pairing error's rule is the upstream SDK's
    /// message, [`TASK_RESPONSE_MISMATCH_MESSAGE`].
    pub fn check_answers(
        &self,
        operation: &TaskOperation,
        task_id: &str,
    ) -> Result<(), TaskRuleError> {
        self.validate()?;
        if self.task_id() != task_id || self.kind() != operation.expected_result() {
            return Err(rule("result", TASK_RESPONSE_MISMATCH_MESSAGE));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
