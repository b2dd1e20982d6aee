//! The harness's host side: one [`Session`] per worker process.
//!
//! A session sends requests as the published host does (numeric ids counting from 1,
//! `paperclipInvocation` on every `environment*` method but `environmentValidateConfig`),
//! services worker→host calls (`log` and `config.get`; anything else gets
//! `-32601 Host does not handle method "<m>"`), collects notifications, and judges every stdout
//! line through the protocol crate's [`parse_line`]. Waiting is event-driven: a call returns as
//! soon as its answer, a malformed answer for its id, an answer with the wrong id type, or the
//! end of the worker's stdout arrives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::{
    parse_line, trim_line, ErrorObject, FrameError, Id, Invocation, InvocationScope, Message,
    Outcome, Request, Response, HOST_MAX_LINE_UNITS,
};
use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Map, Value};

use crate::error::HarnessError;
use crate::process::{ProcEvent, WorkerCommand, WorkerProcess};
use crate::transcript::Transcript;

/// The published host's initialize timeout.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(15);

/// How many notifications one session keeps; later ones are counted (a flood).
pub const MAX_NOTICES: usize = 20_000;

/// The published host's default per-call timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The company a run scopes its invocations to unless `--company` names another.
pub const DEFAULT_COMPANY_ID: &str = "company-conformance";

/// Timeouts and scope of a session.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The company every invocation is scoped to.
    pub company_id: String,
    /// Timeout of `initialize`.
    pub init_timeout: Duration,
    /// Timeout of every other call.
    pub call_timeout: Duration,
    /// The run's write-ahead lease ledger, when it keeps one: acquires are written to it before
    /// they are sent, leases and destroys when they are answered.
    pub ledger_file: Option<crate::ledger_file::LedgerFile>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            company_id: DEFAULT_COMPANY_ID.into(),
            init_timeout: INITIALIZE_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            ledger_file: None,
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A success response (`result`, possibly `null`).
    Result(Value),
    /// An error response.
    Error(ErrorObject),
    /// A JSON-RPC line carrying this call's id that is not a valid response (for example no
    /// `result` and no `error`); the published host would ignore it and time out.
    Malformed {
        /// The line as received.
        line: String,
        /// What the protocol crate found wrong.
        detail: String,
    },
    /// A response whose id equals the sent id only after changing its JSON type.
    WrongIdType {
        /// The id sent.
        sent: Value,
        /// The id answered.
        got: Value,
    },
    /// No answer within the timeout.
    Timeout(Duration),
    /// The worker's stdout closed before an answer.
    Exited,
}

impl Reply {
    /// A one-line description for failure reports.
    pub fn describe(&self) -> String {
        match self {
            Reply::Result(v) => format!("result {}", clip(&v.to_string())),
            Reply::Error(e) => format!("error {} {:?}", e.code, clip(&e.message)),
            Reply::Malformed { line, detail } => {
                format!("malformed answer ({detail}): {}", clip(line))
            }
            Reply::WrongIdType { sent, got } => {
                format!("answer with id {got} to request id {sent}")
            }
            Reply::Timeout(t) => format!("no answer within {} ms", t.as_millis()),
            Reply::Exited => "the worker exited without answering".into(),
        }
    }

    /// The result, or the description of anything else.
    pub fn into_result(self) -> Result<Value, String> {
        match self {
            Reply::Result(v) => Ok(v),
            other => Err(other.describe()),
        }
    }

    /// The error code of an error response.
    pub fn error_code(&self) -> Option<i64> {
        match self {
            Reply::Error(e) => Some(e.code),
            _ => None,
        }
    }
}

/// Shortens a text for reports.
pub fn clip(text: &str) -> String {
    const MAX: usize = 300;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        format!("{}… ({} bytes)", text.chars().take(MAX).collect::<String>(), text.len())
    }
}

/// A notification the worker sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// Its method (`log`, `execute.log`, …).
    pub method: String,
    /// Its params (`null` when absent).
    pub params: Value,
    /// Its `paperclipInvocationId`.
    pub invocation_id: Option<String>,
}

/// An error object the worker sent, with the method of the request it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenError {
    /// The label of the session.
    pub session: String,
    /// The method answered, or `None` for an answer to no known request.
    pub method: Option<String>,
    /// The error object.
    pub error: ErrorObject,
}

/// What the harness saw across every session of a run (for the run-wide checks).
#[derive(Debug, Default)]
pub struct Seen {
    /// Non-protocol stdout lines: (session label, line).
    pub impure_lines: Vec<(String, String)>,
    /// Every error object received.
    pub errors: Vec<SeenError>,
    /// The transcripts of every session.
    pub transcripts: Vec<Transcript>,
    /// The probe's summary when `environmentProbe` answered `ok: false` (the backend is
    /// unreachable), so that later failures name the one root cause.
    pub backend_down: Option<String>,
    /// stdout lines too long to keep: (session label, what was measured, over the host's
    /// limit).
    pub long_lines: Vec<(String, String, bool)>,
    /// Floods the harness stopped keeping: (session label, what).
    pub floods: Vec<(String, String)>,
}

/// [`Seen`], shared between sessions.
#[derive(Debug, Clone, Default)]
pub struct Observations(Arc<Mutex<Seen>>);

impl Observations {
    /// Locks the observations.
    pub fn lock(&self) -> MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A stray response: one whose id names no unanswered request.
#[derive(Debug, Clone, PartialEq)]
pub struct Stray {
    /// The id as sent by the worker (`null` included).
    pub id: Value,
    /// The whole message.
    pub value: Value,
}

/// One worker process driven as a host drives it.
#[derive(Debug)]
pub struct Session {
    proc: WorkerProcess,
    config: SessionConfig,
    next_id: u64,
    sent: HashMap<Id, String>,
    answers: HashMap<Id, Reply>,
    answered_at: HashMap<Id, usize>,
    /// Responses that matched no unanswered request, in arrival order.
    pub strays: Vec<Stray>,
    /// Notifications, in arrival order (the first [`MAX_NOTICES`]).
    pub notices: Vec<Notice>,
    notices_dropped: u64,
    stdout_closed: bool,
    observations: Observations,
    label: String,
    /// Calls the ledger file records the answer of: id → (attempt, method, params).
    journaled: HashMap<Id, (String, String, Value)>,
}

/// The `id` of a JSON-RPC object from the first bytes of its line (an over-long line is not
/// parsed whole): the value after the first top-level-looking `"id":`.
fn leading_id(prefix: &str) -> Option<Id> {
    let at = prefix.find("\"id\"")? + 4;
    let rest = prefix[at..].trim_start().strip_prefix(':')?;
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match values.next()?.ok()? {
        v @ (Value::Number(_) | Value::String(_)) => serde_json::from_value(v).ok(),
        _ => None,
    }
}

fn loose(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

impl Session {
    /// Spawns a worker and records its transcript under `label`.
    pub fn spawn(
        command: &WorkerCommand,
        label: &str,
        config: SessionConfig,
        observations: Observations,
    ) -> Result<Session, HarnessError> {
        let transcript = Transcript::new(label);
        let proc = WorkerProcess::spawn(command, transcript.clone())?;
        observations.lock().transcripts.push(transcript);
        Ok(Session {
            proc,
            config,
            next_id: 1,
            sent: HashMap::new(),
            answers: HashMap::new(),
            answered_at: HashMap::new(),
            strays: vec![],
            notices: vec![],
            notices_dropped: 0,
            stdout_closed: false,
            observations,
            label: label.to_owned(),
            journaled: HashMap::new(),
        })
    }

    /// The session's transcript.
    pub fn transcript(&self) -> &Transcript {
        self.proc.transcript()
    }

    /// The worker process.
    pub fn process(&mut self) -> &mut WorkerProcess {
        &mut self.proc
    }

    /// The session's configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The label the session records under (`main`, `fresh-1`, …).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// True once the worker's stdout closed (it exited or closed its output).
    pub fn is_closed(&self) -> bool {
        self.stdout_closed
    }

    /// The next numeric id.
    pub fn next_id(&mut self) -> Id {
        let id = Id::from(self.next_id);
        self.next_id += 1;
        id
    }

    /// Sends `initialize` as HOST-2026-09 does and waits up to the initialize timeout.
    pub fn initialize(&mut self, manifest: &Value) -> (Reply, Duration) {
        let params = json!({
            "manifest": manifest,
            "config": {},
            "instanceInfo": {"instanceId": "default", "hostVersion": "2026.916.1",
                             "deploymentMode": "", "deploymentExposure": ""},
            "apiVersion": manifest.get("apiVersion").cloned().unwrap_or(json!(1)),
            "databaseNamespace": null,
        });
        if let Some(ledger) = &self.config.ledger_file {
            ledger.manifest(manifest);
        }
        let started = Instant::now();
        let id = self.next_id();
        let timeout = self.config.init_timeout;
        let reply = self.call_with(id, name::INITIALIZE, params, false, timeout).0;
        (reply, started.elapsed())
    }

    /// Calls `method` with a fresh numeric id and the default timeout. Environment methods
    /// (except `environmentValidateConfig`) carry a `paperclipInvocation`.
    pub fn call(&mut self, method: &str, params: Value) -> Reply {
        self.call_traced(method, params).0
    }

    /// As [`Session::call`], also returning the invocation id sent (if any).
    pub fn call_traced(&mut self, method: &str, params: Value) -> (Reply, Option<String>) {
        let id = self.next_id();
        let invocation =
            method.starts_with("environment") && method != name::ENVIRONMENT_VALIDATE_CONFIG;
        let timeout = self.config.call_timeout;
        self.call_with(id, method, params, invocation, timeout)
    }

    /// Sends one request with an explicit id and timeout, and waits for its answer.
    pub fn call_with(
        &mut self,
        id: Id,
        method: &str,
        params: Value,
        invocation: bool,
        timeout: Duration,
    ) -> (Reply, Option<String>) {
        let invocation_id = self.send_request(id.clone(), method, params, invocation);
        (self.await_reply(&id, timeout), invocation_id)
    }

    /// Sends `method` with a fresh id without waiting (the host keeps several calls in flight on
    /// one worker); collect the answer with [`Session::await_reply`]. Environment methods but
    /// `environmentValidateConfig` carry an invocation. Returns the id and the invocation id.
    pub fn start_call(&mut self, method: &str, params: Value) -> (Id, Option<String>) {
        let id = self.next_id();
        let invocation =
            method.starts_with("environment") && method != name::ENVIRONMENT_VALIDATE_CONFIG;
        let invocation_id = self.send_request(id.clone(), method, params, invocation);
        (id, invocation_id)
    }

    /// How many notifications had arrived when the answer to `id` arrived (`None` while it is
    /// unanswered): notifications past that index came after the answer.
    pub fn notices_before_answer(&self, id: &Id) -> Option<usize> {
        self.answered_at.get(id).copied()
    }

    fn send_request(
        &mut self,
        id: Id,
        method: &str,
        params: Value,
        invocation: bool,
    ) -> Option<String> {
        let invocation = invocation.then(|| Invocation {
            id: crate::ids::uuid(),
            scope: InvocationScope {
                company_id: self.config.company_id.clone(),
                extra: Map::new(),
            },
            traceparent: None,
            extra: Map::new(),
        });
        let invocation_id = invocation.as_ref().map(|i| i.id.clone());
        self.journal(&id, method, &params);
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(params),
            invocation,
            invocation_id: None,
        };
        self.sent.insert(id, method.to_owned());
        self.send_raw(Message::from(request).to_line().into_bytes());
        invocation_id
    }

    /// Queues raw bytes for the worker (include the `\n`). `id`s inside are not tracked unless
    /// registered with [`Session::expect_id`].
    pub fn send_raw(&mut self, bytes: Vec<u8>) {
        self.proc.send(bytes);
    }

    /// Registers an id sent in a raw line so that its answer is matched.
    pub fn expect_id(&mut self, id: Id, method: &str) {
        self.sent.insert(id, method.to_owned());
    }

    /// [`Session::expect_id`] for a raw request about to be sent, journaled to the run's lease
    /// ledger as [`Session::call`]'s requests are (an acquire is written before it is sent).
    pub fn expect_request(&mut self, id: Id, method: &str, params: &Value) {
        self.journal(&id, method, params);
        self.expect_id(id, method);
    }

    /// Writes a lease request to the ledger file (when the run keeps one) before it is sent, and
    /// remembers it so that its answer is journaled too.
    fn journal(&mut self, id: &Id, method: &str, params: &Value) {
        let Some(ledger) = &self.config.ledger_file else { return };
        if matches!(
            method,
            name::ENVIRONMENT_ACQUIRE_LEASE
                | name::ENVIRONMENT_RESUME_LEASE
                | name::ENVIRONMENT_RELEASE_LEASE
                | name::ENVIRONMENT_DESTROY_LEASE
        ) {
            let attempt = format!("{}/{}", self.label, id.to_value());
            if method == name::ENVIRONMENT_ACQUIRE_LEASE {
                ledger.before_acquire(&attempt, params);
            }
            self.journaled.insert(id.clone(), (attempt, method.to_owned(), params.clone()));
        }
    }

    /// Waits for the answer to `id`.
    pub fn await_reply(&mut self, id: &Id, timeout: Duration) -> Reply {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(reply) = self.answers.remove(id) {
                return reply;
            }
            let sent = id.to_value();
            if let Some(stray) =
                self.strays.iter().find(|s| s.id != sent && loose(&s.id) == loose(&sent))
            {
                return Reply::WrongIdType { sent, got: stray.id.clone() };
            }
            if self.stdout_closed {
                return Reply::Exited;
            }
            // The deadline holds also while events keep coming (a worker flooding frames).
            if Instant::now() >= deadline {
                return Reply::Timeout(timeout);
            }
            self.pump(deadline);
        }
    }

    /// Handles one event from the worker, waiting until `deadline`. False when nothing arrived.
    pub fn pump(&mut self, deadline: Instant) -> bool {
        match self.proc.next_event(deadline) {
            Some(ProcEvent::Stdout(bytes)) => {
                self.handle_stdout(&bytes);
                true
            }
            Some(ProcEvent::LongLine { prefix, bytes, units }) => {
                self.handle_long_line(&prefix, bytes, units);
                true
            }
            Some(ProcEvent::StdoutClosed) => {
                self.stdout_closed = true;
                true
            }
            None => {
                if Instant::now() < deadline {
                    // Both readers are gone; nothing will ever arrive.
                    self.stdout_closed = true;
                }
                false
            }
        }
    }

    /// Handles every event that arrives until `deadline` or until `done` holds.
    pub fn pump_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&Session) -> bool,
    ) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if self.stdout_closed || Instant::now() >= deadline {
                return done(self);
            }
            self.pump(deadline);
        }
    }

    fn handle_stdout(&mut self, bytes: &[u8]) {
        let line = String::from_utf8_lossy(bytes).into_owned();
        if trim_line(&line).is_empty() {
            return;
        }
        match parse_line(&line) {
            Err(FrameError::Parse(_)) => {
                let mut seen = self.observations.lock();
                if seen.impure_lines.len() < MAX_NOTICES {
                    seen.impure_lines.push((self.label.clone(), clip(&line)));
                }
            }
            Err(FrameError::Invalid(invalid)) => {
                if let Some(id) = invalid.id.filter(|id| self.is_pending(id)) {
                    self.answers.insert(id, Reply::Malformed { line, detail: invalid.detail });
                }
            }
            Ok(Message::Response(response)) => self.handle_response(response, &line),
            Ok(Message::Request(request)) => self.serve(request),
            Ok(Message::Notification(n)) if self.notices.len() < MAX_NOTICES => {
                self.notices.push(Notice {
                    method: n.method,
                    params: n.params.unwrap_or(Value::Null),
                    invocation_id: n.invocation_id,
                })
            }
            Ok(Message::Notification(_)) => {
                self.notices_dropped += 1;
                if self.notices_dropped == 1 {
                    let what = format!(
                        "more than {MAX_NOTICES} notifications from one worker (the harness \
                         keeps no more)"
                    );
                    self.observations.lock().floods.push((self.label.clone(), what));
                }
            }
        }
    }

    /// A stdout line too long to keep: the call it answers (its id is looked for in the first
    /// bytes) gets a malformed answer naming the length; either way the run-wide observations
    /// record it.
    fn handle_long_line(&mut self, prefix: &[u8], bytes: usize, units: usize) {
        let over_host = units > HOST_MAX_LINE_UNITS;
        let detail = if over_host {
            format!(
                "a line of {bytes} bytes ({units} UTF-16 code units), over the host's limit of \
                 {HOST_MAX_LINE_UNITS}: the host drops it unread and the call times out"
            )
        } else {
            format!(
                "a line of {bytes} bytes, longer than the {} bytes the harness keeps (no check asks \
                 for output this large)",
                crate::process::MAX_KEPT_LINE
            )
        };
        self.observations.lock().long_lines.push((self.label.clone(), detail.clone(), over_host));
        let text = String::from_utf8_lossy(prefix);
        if let Some(id) = leading_id(&text).filter(|id| self.is_pending(id)) {
            let line = format!("{}…", clip(&text));
            self.answers.insert(id, Reply::Malformed { line, detail });
        }
    }

    fn is_pending(&self, id: &Id) -> bool {
        self.sent.contains_key(id) && !self.answers.contains_key(id)
    }

    fn handle_response(&mut self, response: Response, line: &str) {
        let pending = response.id.as_ref().filter(|id| self.is_pending(id)).cloned();
        let method = pending.as_ref().and_then(|id| self.sent.get(id).cloned());
        if let Outcome::Error(error) = &response.outcome {
            let mut seen = self.observations.lock();
            if seen.errors.len() < MAX_NOTICES {
                seen.errors.push(SeenError {
                    session: self.label.clone(),
                    method: method.clone(),
                    error: error.clone(),
                });
            }
        }
        match pending {
            Some(id) => {
                let reply = match response.outcome {
                    Outcome::Result(v) => Reply::Result(v),
                    Outcome::Error(e) => Reply::Error(e),
                };
                self.sent.remove(&id);
                if let (Some(ledger), Some((attempt, method, params))) =
                    (&self.config.ledger_file, self.journaled.remove(&id))
                {
                    ledger.answered(&attempt, &method, &params, &reply);
                }
                self.answered_at.insert(id.clone(), self.notices.len());
                self.answers.insert(id, reply);
            }
            None if self.strays.len() < MAX_NOTICES => {
                let value = serde_json::from_str(trim_line(line)).unwrap_or(Value::Null);
                let id = value.get("id").cloned().unwrap_or(Value::Null);
                self.strays.push(Stray { id, value });
            }
            None => {}
        }
    }

    /// Answers a worker→host request as the published host does for a sandbox provider.
    fn serve(&mut self, request: Request) {
        let response = match request.method.as_str() {
            name::LOG => Response::success(request.id, Value::Null),
            name::CONFIG_GET => Response::success(request.id, json!({})),
            other => Response::error(
                Some(request.id),
                ErrorObject::new(-32601, format!("Host does not handle method \"{other}\"")),
            ),
        };
        self.send_raw(Message::from(response).to_line().into_bytes());
    }

    /// The graceful stop of the published host, with shorter waits: `shutdown`, wait up to
    /// `grace` for the answer and the exit, close stdin, SIGTERM, wait `grace` again, SIGKILL.
    /// Returns the answer and whether the worker exited on its own.
    pub fn shutdown(&mut self, grace: Duration) -> (Reply, bool) {
        let started = Instant::now();
        let id = self.next_id();
        let reply = self.call_with(id, name::SHUTDOWN, json!({}), false, grace).0;
        let left = grace.saturating_sub(started.elapsed());
        let exited = self.proc.wait_exit(left).is_some();
        let (_, on_its_own) = self.proc.stop(if exited { Duration::ZERO } else { left }, grace);
        (reply, exited || on_its_own)
    }
}

impl Drop for Session {
    /// Acquires this session never got an answer to are abandoned in the ledger file (an
    /// interrupt no longer waits for them; the file keeps them as unanswered).
    fn drop(&mut self) {
        if let Some(ledger) = &self.config.ledger_file {
            for (attempt, _, _) in self.journaled.values() {
                ledger.abandoned(attempt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script_session(script: &str) -> Session {
        let cmd = WorkerCommand::from_argv(&["sh".into(), "-c".into(), script.into()]).unwrap();
        let config = SessionConfig { call_timeout: Duration::from_secs(10), ..Default::default() };
        Session::spawn(&cmd, "test", config, Observations::default()).unwrap()
    }

    #[test]
    fn answers_are_matched_and_strays_detected() {
        // Answers id 1 correctly, then id "2" as the number 2, then prints a banner.
        let mut s = script_session(
            r#"read a; echo '{"jsonrpc":"2.0","id":1,"result":null}';
               read b; echo 'banner'; echo '{"jsonrpc":"2.0","id":2,"result":1}'; read c"#,
        );
        assert_eq!(s.call("health", json!({})), Reply::Result(Value::Null));
        let reply =
            s.call_with(Id::from("2"), "health", json!({}), false, Duration::from_secs(10)).0;
        assert_eq!(reply, Reply::WrongIdType { sent: json!("2"), got: json!(2) });
        assert_eq!(s.observations.lock().impure_lines.len(), 1);
    }

    #[test]
    fn malformed_answers_fail_fast_and_worker_calls_are_served() {
        let mut s = script_session(
            r#"echo '{"jsonrpc":"2.0","id":"w1","method":"config.get","params":{}}';
               echo '{"jsonrpc":"2.0","id":"w2","method":"secrets.resolve","params":{}}';
               read a; read b; read c; echo '{"jsonrpc":"2.0","id":1}'; read d"#,
        );
        let reply = s.call("shutdown", json!({}));
        assert!(matches!(reply, Reply::Malformed { .. }), "{reply:?}");
        let sent: Vec<String> = s
            .transcript()
            .entries()
            .into_iter()
            .filter(|e| e.dir == crate::transcript::Direction::Send)
            .map(|e| e.line)
            .collect();
        assert!(sent.iter().any(|l| l.contains(r#""id":"w1","result":{}"#)), "{sent:?}");
        assert!(sent
            .iter()
            .any(|l| l.contains(r#"Host does not handle method \"secrets.resolve\""#)));
    }

    #[test]
    fn exit_without_answer_is_reported() {
        let mut s = script_session("read a; exit 0");
        assert_eq!(s.call("environmentProbe", json!({})), Reply::Exited);
        let sent = &s.transcript().entries()[0].line;
        assert!(sent.contains("paperclipInvocation"), "{sent}");
    }
}
