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
use crate::ledger::{Lease, Ledger};
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
    /// (protocol.md C.2), so a `normalizedConfig` that echoes it leaks nothing.
    pub validate_config: Value,
    /// The sentinel secrets planted in the config.
    pub secrets: Vec<String>,
    /// The environment id of every call.
    pub environment_id: String,
    /// The session configuration.
    pub session: SessionConfig,
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
        WorkerFacts { init, init_elapsed, supported, declared, effective }
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
/// nested key is absent (protocol.md E.1: a nested value always wins).
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
/// resolves them (protocol.md E.1): the lease policy is `reuse_by_environment` exactly when the
/// driver declares `reusableLeases: true` (the host's acquire path), with no metadata narrowing.
/// Without a driver declaration nothing is effective (an identity failure, V20).
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
    session: Option<&'a mut Session>,
    pool: Option<&'a mut Vec<Session>>,
    /// Leases this check acquired.
    pub ledger: Ledger,
    /// Remarks for the report (cleanup trouble, tolerated deviations).
    pub notes: Vec<String>,
    /// Transcripts of the fresh workers this check spawned.
    pub fresh: Vec<Transcript>,
}

impl<'a> Ctx<'a> {
    /// A context; `session` is the main session for checks that use it.
    pub fn new(
        env: &'a RunEnv,
        facts: &'a WorkerFacts,
        observations: &'a Observations,
        session: Option<&'a mut Session>,
    ) -> Self {
        Ctx {
            env,
            facts,
            observations,
            session,
            pool: None,
            ledger: Ledger::default(),
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
        self.session.as_deref_mut().expect("the registry gives main-session checks a session")
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

    /// The base params of every environment method but validateConfig (protocol.md D.1).
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

    /// Acquires a fresh lease and records it in the ledger.
    pub fn acquire(&mut self) -> Result<Lease, Finding> {
        let mut params = self.base_params();
        params.insert("runId".into(), json!(crate::ids::uuid()));
        let reply = self.session().call(name::ENVIRONMENT_ACQUIRE_LEASE, Value::Object(params));
        let value = reply
            .into_result()
            .map_err(|actual| fail("a lease from environmentAcquireLease", actual))?;
        let lease = Lease::from_result(&value).ok_or_else(|| {
            fail("a lease with a non-empty providerLeaseId", crate::host::clip(&value.to_string()))
        })?;
        self.ledger.track(lease.clone());
        Ok(lease)
    }

    /// The workspace directory of a lease: the realized `cwd` when the worker realizes
    /// workspaces, else `None`.
    pub fn realize(&mut self, lease: &Lease) -> Result<Option<String>, Finding> {
        if !self.facts.advertises(name::ENVIRONMENT_REALIZE_WORKSPACE) {
            return Ok(None);
        }
        let mut params = self.lease_params(lease);
        params.insert("workspace".into(), json!({"mode": "isolated"}));
        let reply = self.session().call(name::ENVIRONMENT_REALIZE_WORKSPACE, Value::Object(params));
        let value = reply.into_result().map_err(|a| fail("a realized workspace", a))?;
        match value.get("cwd").and_then(Value::as_str).map(str::trim) {
            Some(cwd) if !cwd.is_empty() => Ok(Some(cwd.to_owned())),
            _ => Err(fail("a non-empty `cwd`", value.to_string())),
        }
    }

    /// Releases and destroys what the ledger still holds; problems become notes.
    pub fn finish(&mut self) {
        let leases = self.ledger.take_live();
        if leases.is_empty() || self.session.as_ref().is_none_or(|s| s.is_closed()) {
            return;
        }
        let method = if self.facts.advertises(name::ENVIRONMENT_DESTROY_LEASE) {
            name::ENVIRONMENT_DESTROY_LEASE
        } else if self.facts.advertises(name::ENVIRONMENT_RELEASE_LEASE) {
            name::ENVIRONMENT_RELEASE_LEASE
        } else {
            return;
        };
        for lease in leases {
            let params = Value::Object(self.lease_id_params(&lease));
            if let reply @ (Reply::Error(_)
            | Reply::Timeout(_)
            | Reply::Exited
            | Reply::Malformed { .. }) = self.session().call(method, params)
            {
                self.notes.push(format!("cleanup {method} of {}: {}", lease.id, reply.describe()));
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
