//! What a check sees: the run's environment (options, manifest, config), the facts learnt at
//! initialize (advertised methods, declared and effective capabilities), the main session, a
//! [`Ledger`] for leases, and a way to spawn fresh workers.

use std::path::PathBuf;
use std::time::Duration;

use paperclip_sandbox_protocol::capabilities::resolve::{
    resolve, DeclaredCapabilities, Narrowing, REUSE_BY_ENVIRONMENT,
};
use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::methods::name;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Map, Value};

use crate::host::{Observations, Reply, Session, SessionConfig};
use crate::hostmodel;
use crate::ledger::{Lease, LeaseState, Ledger};
use crate::process::WorkerCommand;
use crate::transcript::Transcript;

/// The options of `sandbox-conformance run` that shape how checks talk to the worker.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The worker command.
    pub command: WorkerCommand,
    /// `--manifest FILE`.
    pub manifest_path: Option<PathBuf>,
    /// `--config FILE` (the environment config; `{}` when absent).
    pub config_path: Option<PathBuf>,
    /// `--driver KEY`.
    pub driver: Option<String>,
    /// `--profile`.
    pub profile: HostProfile,
    /// `--filter`: a substring, or a glob with `*` and `?`.
    pub filter: Option<String>,
    /// `--baseline FILE`.
    pub baseline: Option<PathBuf>,
    /// `--artifacts DIR`.
    pub artifacts: Option<PathBuf>,
    /// `--oversize-bytes`: the length of the oversize frame.
    pub oversize_bytes: usize,
    /// `--skip-oversize`.
    pub skip_oversize: bool,
    /// `--timeout-ms`: per-call timeout (initialize keeps 15 s).
    pub call_timeout: Duration,
    /// `--shutdown-timeout-ms`: how long a worker gets to exit after `shutdown` or EOF.
    pub shutdown_timeout: Duration,
    /// `--secret-field`: the config key that receives the sentinel secret.
    pub secret_field: String,
    /// Print a progress line per check to stderr.
    pub progress: bool,
    /// `--acquire-params FILE`: fields added to (or, with `null`, removed from) the acquire
    /// params the harness sends.
    pub acquire_params_path: Option<PathBuf>,
    /// `--require-cli`: the CLIs the operator's runs need on the sandbox's PATH.
    pub required_clis: Vec<String>,
    /// `--jobs`: how many checks run at once, each on a worker of its own (1: one after
    /// another, on one main worker); when not given, the machine's cores, at most 4.
    pub jobs: usize,
    /// The write-ahead lease ledger the run's sessions journal to (`run --run-dir`); `None`:
    /// the run keeps its ledger in memory only.
    pub ledger_file: Option<crate::ledger_file::LedgerFile>,
    /// `--company`: the company every invocation is scoped to (`companyId`); default
    /// `company-conformance`. Runs that share one backend can tell their resources apart by it.
    pub company_id: String,
}

/// The default `--jobs`: the machine's cores, at most 4, so that the worker under test (and
/// its sandboxes) is not overloaded.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4)
}

impl RunOptions {
    /// Options with the documented defaults for `command`.
    pub fn new(command: WorkerCommand) -> Self {
        RunOptions {
            command,
            manifest_path: None,
            config_path: None,
            driver: None,
            profile: HostProfile::default(),
            filter: None,
            baseline: None,
            artifacts: None,
            oversize_bytes: DEFAULT_OVERSIZE_BYTES,
            skip_oversize: false,
            call_timeout: crate::host::DEFAULT_CALL_TIMEOUT,
            shutdown_timeout: Duration::from_secs(10),
            secret_field: "apiKey".into(),
            progress: true,
            acquire_params_path: None,
            required_clis: vec![],
            jobs: default_jobs(),
            ledger_file: None,
            company_id: crate::host::DEFAULT_COMPANY_ID.into(),
        }
    }
}

/// The default length of the oversize frame: 65 MiB, just above the 64 MiB default cap (D10).
pub const DEFAULT_OVERSIZE_BYTES: usize = 65 * 1024 * 1024;

/// Everything fixed before the first check runs.
#[derive(Debug, Clone)]
pub struct RunEnv {
    /// The options.
    pub options: RunOptions,
    /// The manifest, when one was given or printed by `<worker> --manifest`.
    pub manifest: Option<Value>,
    /// Where the manifest came from, for reports.
    pub manifest_source: String,
    /// The driver under test.
    pub driver_key: String,
    /// Its declaration in the manifest.
    pub driver: Option<Value>,
    /// The environment config sent to the worker (with the sentinel secret planted).
    pub config: Value,
    /// The config sent to `environmentValidateConfig`: the sentinel field holds a secret id
    /// instead of the secret, as the host flattens secret bindings to bare ids before validation
    /// so a `normalizedConfig` that echoes it leaks nothing.
    pub validate_config: Value,
    /// The secrets the run watches for in worker output: the sentinels planted in the config
    /// (under `--secret-field` and every field the driver's `configSchema` marks
    /// `format: "secret-ref"`), and the values `--config` gives to such fields.
    pub secrets: Vec<String>,
    /// The environment id of every call.
    pub environment_id: String,
    /// The session configuration.
    pub session: SessionConfig,
    /// What `--acquire-params` adds to (or removes from) the acquire params.
    pub acquire_overrides: Map<String, Value>,
    /// Why the worker's manifest could not be read cleanly, if it could not.
    pub manifest_problem: Option<String>,
    /// The first non-JSON line `<worker> --manifest` printed around its manifest, if any.
    pub manifest_impure_line: Option<String>,
    /// How much `<worker> --manifest` printed when it went past the probe's bound.
    pub manifest_overflow: Option<usize>,
    /// Processes `<worker> --manifest` left running after it exited (`pid "name"`; the harness
    /// ended them).
    pub manifest_leftovers: Vec<String>,
}

/// What initialize taught the harness about the worker.
#[derive(Debug, Clone)]
pub struct WorkerFacts {
    /// The initialize answer.
    pub init: Reply,
    /// How long initialize took.
    pub init_elapsed: Duration,
    /// `supportedMethods` when it is an array of strings.
    pub supported: Vec<String>,
    /// The `sandboxCapabilities` of the driver (with the legacy `supportsReusableLeases`).
    pub declared: Map<String, Value>,
    /// Capabilities that are verified and declared (or defaulted) true.
    pub effective: Vec<Capability>,
    /// The driver declares `supportsLoginPty: true` (or its deprecated alias
    /// `supportsSetupTokenLogin: true`): the host may open login terminals on it.
    pub login_pty: bool,
}

impl WorkerFacts {
    /// Learns the facts from an initialize answer and the driver declaration.
    pub fn learn(
        init: Reply,
        init_elapsed: Duration,
        driver: Option<&Value>,
        profile: HostProfile,
    ) -> Self {
        let supported: Vec<String> = match &init {
            Reply::Result(v) => v
                .get("supportedMethods")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|m| m.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
            _ => vec![],
        };
        let declared = declared_capabilities(driver);
        let effective = effective_capabilities(driver, &supported, profile);
        let login_pty = driver
            .and_then(|d| d.get("supportsLoginPty").or_else(|| d.get("supportsSetupTokenLogin")))
            == Some(&Value::Bool(true));
        WorkerFacts { init, init_elapsed, supported, declared, effective, login_pty }
    }

    /// True when initialize answered `ok: true`.
    pub fn initialized(&self) -> bool {
        matches!(&self.init, Reply::Result(v) if v.get("ok") == Some(&Value::Bool(true)))
    }

    /// True when `supportedMethods` lists `method`.
    pub fn advertises(&self, method: &str) -> bool {
        self.supported.iter().any(|m| m == method)
    }

    /// True when `capability` is effective.
    pub fn has(&self, capability: Capability) -> bool {
        self.effective.contains(&capability)
    }
}

/// The driver's `sandboxCapabilities`, with a legacy `supportsReusableLeases` folded in when the
/// nested key is absent (a nested value always wins).
pub fn declared_capabilities(driver: Option<&Value>) -> Map<String, Value> {
    let mut declared = driver
        .and_then(|d| d.get("sandboxCapabilities"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(legacy) = driver.and_then(|d| d.get("supportsReusableLeases")) {
        declared.entry("reusableLeases").or_insert_with(|| legacy.clone());
    }
    declared
}

/// The effective capabilities of a fresh lease, resolved by the protocol crate as the host
/// resolves them: the lease policy is `reuse_by_environment` exactly when the
/// driver declares `reusableLeases: true` (the host's acquire path), with no metadata narrowing.
/// Without a driver declaration nothing is effective (an identity failure).
pub fn effective_capabilities(
    driver: Option<&Value>,
    supported: &[String],
    profile: HostProfile,
) -> Vec<Capability> {
    let declared = driver.map(DeclaredCapabilities::from_declaration);
    let reuse = declared.as_ref().and_then(|d| d.get(Capability::ReusableLeases)) == Some(true);
    let policy = if reuse { REUSE_BY_ENVIRONMENT } else { "ephemeral" };
    let narrowing = Narrowing::for_lease(policy, &json!({}), false);
    resolve(profile, declared.as_ref(), Some(supported), &narrowing)
        .iter()
        .filter(|(_, on)| *on)
        .map(|(c, _)| c)
        .collect()
}

/// Why a check did not pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// The worker broke the requirement.
    Fail {
        /// What the contract expects.
        expected: String,
        /// What the worker did.
        actual: String,
    },
    /// The check could not judge (a precondition the registry cannot see beforehand).
    Skip(String),
}

/// A failure finding.
pub fn fail(expected: impl Into<String>, actual: impl Into<String>) -> Finding {
    Finding::Fail { expected: expected.into(), actual: actual.into() }
}

/// Passes when a check found no `problems`; else fails with `expected` and the problems,
/// joined with `; `.
pub fn no_problems(problems: &[String], expected: impl Into<String>) -> CheckResult {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(fail(expected, problems.join("; ")))
    }
}

/// What a check returns: `Ok(())` passes.
pub type CheckResult = Result<(), Finding>;

/// The context of one check.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The run's environment.
    pub env: &'a RunEnv,
    /// The facts learnt at initialize.
    pub facts: &'a WorkerFacts,
    /// Everything seen so far, across sessions.
    pub observations: &'a Observations,
    /// The id of the running check.
    pub check_id: &'static str,
    session: Option<&'a mut Session>,
    pool: Option<&'a mut Vec<Session>>,
    /// The run's lease ledger.
    pub ledger: Ledger,
    /// Remarks for the report (cleanup trouble, tolerated deviations).
    pub notes: Vec<String>,
    /// Transcripts of the fresh workers this check spawned.
    pub fresh: Vec<Transcript>,
}

impl<'a> Ctx<'a> {
    /// A context for check `check_id`; `session` is the main session.
    pub fn new(
        env: &'a RunEnv,
        facts: &'a WorkerFacts,
        observations: &'a Observations,
        session: Option<&'a mut Session>,
        check_id: &'static str,
        ledger: Ledger,
    ) -> Self {
        Ctx {
            env,
            facts,
            observations,
            check_id,
            session,
            pool: None,
            ledger,
            notes: vec![],
            fresh: vec![],
        }
    }

    /// Lets [`Ctx::spawn`] take workers started ahead of time (their start-up then overlaps
    /// with earlier checks).
    pub fn with_pool(mut self, pool: &'a mut Vec<Session>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The main session.
    pub fn session(&mut self) -> &mut Session {
        self.session.as_deref_mut().expect("the runner gives every check the main session")
    }

    /// Calls `method` on the main session; an answer other than a result fails the check with
    /// `expected` (and what came instead).
    pub fn call_ok(
        &mut self,
        method: &str,
        params: Value,
        expected: impl Into<String>,
    ) -> Result<Value, Finding> {
        self.session().call(method, params).into_result().map_err(|a| fail(expected, a))
    }

    /// True when the main session is there and its worker still serves.
    pub fn has_session(&self) -> bool {
        self.session.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Spawns a fresh worker (not initialized).
    pub fn spawn(&mut self, label: &str) -> Result<Session, Finding> {
        if let Some(session) = self.pool.as_mut().and_then(|p| p.pop()) {
            self.fresh.push(session.transcript().clone());
            return Ok(session);
        }
        let session = Session::spawn(
            &self.env.options.command,
            label,
            self.env.session.clone(),
            self.observations.clone(),
        )
        .map_err(|e| fail("the worker starts", e.to_string()))?;
        self.fresh.push(session.transcript().clone());
        Ok(session)
    }

    /// Spawns a fresh worker and initializes it.
    pub fn spawn_initialized(&mut self, label: &str) -> Result<Session, Finding> {
        let mut session = self.spawn(label)?;
        let manifest = self.env.manifest.clone().unwrap_or_else(|| json!({}));
        match session.initialize(&manifest).0 {
            Reply::Result(v) if v.get("ok") == Some(&Value::Bool(true)) => Ok(session),
            other => Err(Finding::Skip(format!(
                "a fresh worker did not initialize ({}); see handshake.initialize",
                other.describe()
            ))),
        }
    }

    /// The base params of every environment method but validateConfig.
    pub fn base_params(&self) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("driverKey".into(), json!(self.env.driver_key));
        p.insert("companyId".into(), json!(self.env.session.company_id));
        p.insert("environmentId".into(), json!(self.env.environment_id));
        p.insert("config".into(), self.env.config.clone());
        p
    }

    /// Base params plus `lease`.
    pub fn lease_params(&self, lease: &Lease) -> Map<String, Value> {
        let mut p = self.base_params();
        p.insert("lease".into(), lease.to_value());
        p
    }

    /// Base params plus `providerLeaseId` and `leaseMetadata` (resume, release, destroy, stop).
    pub fn lease_id_params(&self, lease: &Lease) -> Map<String, Value> {
        let mut p = self.base_params();
        p.insert("providerLeaseId".into(), json!(lease.id));
        p.insert("leaseMetadata".into(), lease.metadata.clone());
        p
    }

    /// Acquires a fresh lease on the main worker, with the params the host sends, and records
    /// it in the ledger.
    pub fn acquire(&mut self) -> Result<Lease, Finding> {
        let params = hostmodel::acquire_params(self.env, self.base_params());
        let reply = self.session().call(name::ENVIRONMENT_ACQUIRE_LEASE, Value::Object(params));
        self.lease_from(reply, "main")
    }

    /// Acquires a fresh lease on `session` (a fresh worker) and records it in the ledger.
    pub fn acquire_on(&mut self, session: &mut Session) -> Result<Lease, Finding> {
        let params = hostmodel::acquire_params(self.env, self.base_params());
        let reply = session.call(name::ENVIRONMENT_ACQUIRE_LEASE, Value::Object(params));
        let label = session.label().to_owned();
        self.lease_from(reply, &label)
    }

    fn lease_from(&mut self, reply: Reply, session: &str) -> Result<Lease, Finding> {
        let value = reply.into_result().map_err(|actual| {
            let why = self.observations.lock().backend_down.clone();
            let actual = match why {
                Some(summary) => format!(
                    "{actual} (environmentProbe reported the backend unreachable: {summary})"
                ),
                None => actual,
            };
            fail("a lease from environmentAcquireLease", actual)
        })?;
        let lease = Lease::from_result(&value).ok_or_else(|| {
            fail("a lease with a non-empty providerLeaseId", crate::host::clip(&value.to_string()))
        })?;
        self.ledger.track(self.check_id, session, lease.clone());
        Ok(lease)
    }

    /// Records a lease handed back by the worker (a resume) in the ledger.
    pub fn track(&mut self, lease: &Lease) {
        self.ledger.track(self.check_id, "main", lease.clone());
    }

    /// Realizes a workspace in the lease when the worker realizes workspaces, as the host does
    /// before a run. The result's `cwd` is optional (the host then falls back to the lease's
    /// `metadata.remoteCwd`, then to the workspace path) and only feeds the realization record:
    /// commands still run in [`hostmodel::remote_cwd`].
    ///
    // Upstream environment-runtime.ts realizeWorkspace: `result.cwd` trimmed wins when
    // non-empty, else `lease.metadata.remoteCwd`, else `workspace.remotePath ?? localPath`;
    // environment-execution-target.ts never reads it for execution.
    pub fn realize(&mut self, lease: &Lease) -> Result<Option<String>, Finding> {
        if !self.facts.advertises(name::ENVIRONMENT_REALIZE_WORKSPACE) {
            return Ok(None);
        }
        let mut params = self.lease_params(lease);
        params.insert(
            "workspace".into(),
            json!({"mode": "isolated", "remotePath": hostmodel::remote_cwd(lease)}),
        );
        let reply = self.session().call(name::ENVIRONMENT_REALIZE_WORKSPACE, Value::Object(params));
        let value = reply.into_result().map_err(|a| fail("a realized workspace", a))?;
        match value.get("cwd") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(cwd)) => Ok(Some(cwd.trim().to_owned()).filter(|c| !c.is_empty())),
            Some(_) if !value.is_object() => Err(fail(
                "a realize result object {cwd?: string, metadata?}",
                crate::host::clip(&value.to_string()),
            )),
            Some(other) => {
                Err(fail("`cwd`, when present, a string", crate::host::clip(&other.to_string())))
            }
        }
    }

    /// Runs `exec` in `lease` on the main worker as the host sends it; `Ok` is the result
    /// object (whatever its exit code).
    pub fn exec(&mut self, lease: &Lease, exec: &hostmodel::Exec) -> Result<Value, Finding> {
        self.exec_traced(lease, exec).map(|(v, _)| v)
    }

    /// As [`Ctx::exec`], also returning the invocation id the request carried.
    pub fn exec_traced(
        &mut self,
        lease: &Lease,
        exec: &hostmodel::Exec,
    ) -> Result<(Value, Option<String>), Finding> {
        let params = exec.params(self.facts, lease, self.lease_params(lease));
        let (reply, invocation) = self.session().call_traced(name::ENVIRONMENT_EXECUTE, params);
        let result = reply.into_result().map_err(|a| {
            fail(format!("a result for `sh -c {:?}`", crate::host::clip(&exec.script)), a)
        })?;
        if !result.is_object() {
            return Err(fail("an execute result object", crate::host::clip(&result.to_string())));
        }
        Ok((result, invocation))
    }

    /// Ends every lease this check still holds; problems become notes (and the ledger keeps
    /// the lease for the run's final sweep).
    pub fn finish(&mut self) {
        let leases = self.ledger.live(Some(self.check_id));
        if leases.is_empty() || !self.has_session() {
            return;
        }
        for lease in leases {
            if let Err(problem) = self.end_lease(&lease) {
                self.notes.push(format!("cleanup of lease {}: {problem}", lease.id));
            }
        }
    }

    /// Ends `lease` for good with the main worker and records the outcome in the ledger.
    pub fn end_lease(&mut self, lease: &Lease) -> Result<(), String> {
        let Some(method) = hostmodel::end_method(self.facts) else {
            self.ledger.set_state(&lease.id, LeaseState::Unendable);
            return Err("the worker advertises neither destroy nor release".into());
        };
        let params = Value::Object(self.lease_id_params(lease));
        match self.session().call(method, params) {
            Reply::Result(_) => {
                self.ledger.ended(&lease.id);
                Ok(())
            }
            Reply::Exited => Err("the main worker exited; left for the final sweep".into()),
            other => {
                let why = format!("{method}: {}", other.describe());
                self.ledger.set_state(&lease.id, LeaseState::Stuck(why.clone()));
                Err(why)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_follows_declaration_and_verification() {
        let supported: Vec<String> =
            ["environmentExecute", "environmentResumeLease", "environmentReleaseLease"]
                .map(String::from)
                .to_vec();
        let driver = json!({"supportsReusableLeases": true, "sandboxCapabilities": {"incrementalSessionOutput": true}});
        let effective = effective_capabilities(Some(&driver), &supported, HostProfile::default());
        assert!(effective.contains(&Capability::IncrementalSessionOutput));
        assert!(effective.contains(&Capability::PersistentProcessSessions));
        // reusableLeases needs environmentDestroyLease too.
        assert!(!effective.contains(&Capability::ReusableLeases));
        assert!(!effective.contains(&Capability::NativeSyncIn));
        let mut all = supported.clone();
        all.push("environmentDestroyLease".into());
        let effective = effective_capabilities(Some(&driver), &all, HostProfile::default());
        assert!(effective.contains(&Capability::ReusableLeases));
        assert!(effective_capabilities(None, &all, HostProfile::default()).is_empty());
    }
}
