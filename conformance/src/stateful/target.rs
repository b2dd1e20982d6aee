//! What a program runs against: a [`Target`] answers calls, keeps two in flight, and restarts.
//! [`WorkerTarget`] is a real worker process driven through [`Session`] (sync, like the rest of
//! the harness); the model's own tests use an in-process fake.

use std::time::Duration;

use paperclip_sandbox_protocol::timeouts::{
    acquire_rpc_timeout_ms, sandbox_rpc_timeout_ms, ResumeDeadline, PROBE_TIMEOUT_MS,
};
use serde_json::{json, Map, Value};

use crate::context::RunEnv;
use crate::host::{Observations, Reply, Session};
use crate::hostmodel;
use crate::ledger::Lease;
use crate::process::WorkerCommand;
use crate::transcript::Transcript;

use super::program::Restart;

/// Something a program runs against.
pub trait Target {
    /// Sends `method` and waits up to `wait` for its answer.
    fn call(&mut self, method: &str, params: Value, wait: Duration) -> Reply;
    /// Sends both calls before awaiting either; answers in the order sent.
    fn pair(&mut self, a: (&str, Value), b: (&str, Value), wait: Duration) -> (Reply, Reply);
    /// Ends the worker as `how` says and starts (and initializes) a new one.
    fn restart(&mut self, how: Restart) -> Result<(), String>;
}

/// The params of a program's calls, as the host builds them.
#[derive(Debug, Clone)]
pub struct Calls<'a> {
    /// The run's environment.
    pub env: &'a RunEnv,
    /// The environment id of this case (unique per case, so a backend listing can tell its
    /// resources apart).
    pub environment_id: String,
}

impl Calls<'_> {
    /// The base params.
    pub fn base(&self) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("driverKey".into(), json!(self.env.driver_key));
        p.insert("companyId".into(), json!(self.env.session.company_id));
        p.insert("environmentId".into(), json!(self.environment_id));
        p.insert("config".into(), self.env.config.clone());
        p
    }

    /// How long the host waits for an acquire: its acquisition budget (under
    /// paperclip-2026-11 the driver's `defaultAcquireTimeoutMs`, or the config's `timeoutMs`,
    /// plus 30 s), never less than the harness's per-call `call_wait`.
    pub fn acquire_wait(&self, call_wait: Duration) -> Duration {
        let config = self.config();
        let declared = self.declared_acquire_ms();
        let host = acquire_rpc_timeout_ms(&config, declared, self.env.options.profile);
        host.map_or(call_wait, |ms| call_wait.max(Duration::from_millis(ms)))
    }

    /// How long the host waits for one resume attempt when the config or the driver sets a
    /// budget: under paperclip-2026-11 the acquisition budget when one is configured or
    /// declared, otherwise the config's sandbox-call budget capped by the 60 s resume
    /// deadline. Without either, the harness's per-call `call_wait` (`--timeout-ms`, by
    /// default the host's 30 s default timer); never less than it.
    pub fn resume_wait(&self, call_wait: Duration) -> Duration {
        let config = self.config();
        let declared = self.declared_acquire_ms().filter(|ms| *ms > 0);
        let profile = self.env.options.profile;
        let budgeted = profile.is_november() && declared.is_some();
        if !budgeted && sandbox_rpc_timeout_ms(&config).is_none() {
            return call_wait;
        }
        let deadline = ResumeDeadline::new(profile, 0, &config, declared);
        call_wait.max(Duration::from_millis(deadline.attempt_timeout_ms(0)))
    }

    /// How long the host waits for a release, stop, destroy, realize or sync: the config's
    /// sandbox-call budget (`timeoutMs` + 30 s) when it sets one, else the harness's per-call
    /// `call_wait` (`--timeout-ms`, by default the host's 30 s default timer); never less
    /// than `call_wait`.
    pub fn sandbox_wait(&self, call_wait: Duration) -> Duration {
        let config = self.config();
        sandbox_rpc_timeout_ms(&config)
            .map_or(call_wait, |ms| call_wait.max(Duration::from_millis(ms)))
    }

    /// How long the host waits for a probe: its explicit probe timer (120 s in both host
    /// paths, whatever the config says), never less than `call_wait`. A provider that answers
    /// a probe after 30 s while its backend hangs is within the contract.
    pub fn probe_wait(&self, call_wait: Duration) -> Duration {
        call_wait.max(Duration::from_millis(PROBE_TIMEOUT_MS))
    }

    /// The run's config object (empty when the config is not an object).
    fn config(&self) -> Map<String, Value> {
        self.env.config.as_object().cloned().unwrap_or_default()
    }

    /// The driver's declared `defaultAcquireTimeoutMs`.
    fn declared_acquire_ms(&self) -> Option<u64> {
        let driver = self.env.driver.as_ref()?;
        driver.get("defaultAcquireTimeoutMs").and_then(Value::as_u64)
    }

    /// Acquire params.
    pub fn acquire(&self) -> Value {
        Value::Object(hostmodel::acquire_params(self.env, self.base()))
    }

    /// Base params plus `lease`.
    pub fn with_lease(&self, lease: &Lease) -> Map<String, Value> {
        let mut p = self.base();
        p.insert("lease".into(), lease.to_value());
        p
    }

    /// Resume, release, destroy and stop params.
    pub fn by_id(&self, id: &str, metadata: &Value) -> Value {
        let mut p = self.base();
        p.insert("providerLeaseId".into(), json!(id));
        p.insert("leaseMetadata".into(), metadata.clone());
        Value::Object(p)
    }

    /// Stop params (stop and retain).
    pub fn stop(&self, lease: &Lease) -> Value {
        let mut p = self.by_id(&lease.id, &lease.metadata);
        p["cancelActiveWork"] = json!(true);
        p["resourceDisposition"] = json!("stop_and_retain");
        p
    }

    /// Realize params.
    pub fn realize(&self, lease: &Lease) -> Value {
        let mut p = self.with_lease(lease);
        p.insert(
            "workspace".into(),
            json!({"mode": "isolated", "remotePath": hostmodel::remote_cwd(lease)}),
        );
        Value::Object(p)
    }

    /// Execute params of `exec` in `lease`.
    pub fn execute(
        &self,
        facts: &crate::context::WorkerFacts,
        lease: &Lease,
        exec: &hostmodel::Exec,
    ) -> Value {
        exec.params(facts, lease, self.with_lease(lease))
    }
}

/// A real worker process.
#[derive(Debug)]
pub struct WorkerTarget {
    command: WorkerCommand,
    config: crate::host::SessionConfig,
    manifest: Value,
    observations: Observations,
    session: Option<Session>,
    label: String,
    generation: u32,
    /// Every transcript of this target's workers.
    pub transcripts: Vec<Transcript>,
    /// How long a worker gets to exit on EOF or shutdown.
    pub shutdown_grace: Duration,
}

impl WorkerTarget {
    /// Starts and initializes a worker for `env`; `label` names its transcripts.
    pub fn start(env: &RunEnv, observations: &Observations, label: &str) -> Result<Self, String> {
        let mut t = WorkerTarget {
            command: env.options.command.clone(),
            config: env.session.clone(),
            manifest: env.manifest.clone().unwrap_or_else(|| json!({})),
            observations: observations.clone(),
            session: None,
            label: label.to_owned(),
            generation: 0,
            transcripts: vec![],
            shutdown_grace: env.options.shutdown_timeout,
        };
        t.spawn()?;
        Ok(t)
    }

    fn spawn(&mut self) -> Result<(), String> {
        self.generation += 1;
        let label = format!("{}#{}", self.label, self.generation);
        let mut s =
            Session::spawn(&self.command, &label, self.config.clone(), self.observations.clone())
                .map_err(|e| format!("the worker does not start: {e}"))?;
        self.transcripts.push(s.transcript().clone());
        match s.initialize(&self.manifest).0 {
            Reply::Result(v) if v.get("ok") == Some(&Value::Bool(true)) => {
                self.session = Some(s);
                Ok(())
            }
            other => Err(format!("the worker did not initialize: {}", other.describe())),
        }
    }

    fn session(&mut self) -> Result<&mut Session, String> {
        if self.session.as_ref().is_none_or(Session::is_closed) {
            self.spawn()?;
        }
        Ok(self.session.as_mut().expect("spawned"))
    }

    /// Shuts the worker down gracefully.
    pub fn finish(&mut self) {
        if let Some(mut s) = self.session.take() {
            s.shutdown(self.shutdown_grace.min(Duration::from_secs(3)));
        }
    }
}

impl Target for WorkerTarget {
    fn call(&mut self, method: &str, params: Value, wait: Duration) -> Reply {
        let s = match self.session() {
            Ok(s) => s,
            Err(_) => return Reply::Exited,
        };
        let (id, _) = s.start_call(method, params);
        s.await_reply(&id, wait)
    }

    fn pair(&mut self, a: (&str, Value), b: (&str, Value), wait: Duration) -> (Reply, Reply) {
        let s = match self.session() {
            Ok(s) => s,
            Err(_) => return (Reply::Exited, Reply::Exited),
        };
        let (ia, _) = s.start_call(a.0, a.1);
        let (ib, _) = s.start_call(b.0, b.1);
        let ra = s.await_reply(&ia, wait);
        let rb = s.await_reply(&ib, wait);
        (ra, rb)
    }

    fn restart(&mut self, how: Restart) -> Result<(), String> {
        let grace = self.shutdown_grace;
        if let Some(mut s) = self.session.take() {
            match how {
                Restart::Eof => {
                    s.process().close_stdin();
                    if s.process().wait_exit(grace).is_none() {
                        s.process().stop(Duration::ZERO, Duration::from_secs(2));
                    }
                }
                Restart::Shutdown => {
                    s.shutdown(grace);
                }
                Restart::Sigterm => {
                    s.process().signal_group(libc::SIGTERM);
                    if s.process().wait_exit(grace).is_none() {
                        s.process().stop(Duration::ZERO, Duration::from_secs(2));
                    }
                }
                Restart::Sigkill => {
                    s.process().signal_group(libc::SIGKILL);
                    s.process().wait_exit(grace);
                }
            }
        }
        self.spawn()
    }
}

/// The execute wait for a command with `timeout_ms`: the command's own timeout plus the
/// per-call budget (the host waits `timeoutMs` + 30 s by default).
pub fn execute_wait(timeout_ms: u64, call: Duration) -> Duration {
    Duration::from_millis(timeout_ms) + call
}
