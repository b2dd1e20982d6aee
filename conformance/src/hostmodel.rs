//! The host model: how the Paperclip host drives a sandbox-provider worker, in one place.
//!
//! Every check talks to the worker through these rules, so that the harness never demands
//! behaviour the real host does not rely on, and never misses behaviour it does:
//!
//! - **Acquire** with the fields the host sends ([`acquire_params`]): `runId`, `issueId`,
//!   `agentId`, `adapterType`, `executionWorkspaceId`, `workspaceMode`,
//!   `executionWorkspaceSettings` and `requestedExpiresAt`, overridable with
//!   `--acquire-params FILE`.
//! - **Working directory** ([`remote_cwd`]): every `environmentExecute` carries a `cwd`: the
//!   command's own, else the lease's `metadata.remoteCwd` (trimmed, non-empty), else `/tmp`. A
//!   realize result's `cwd` only feeds the host's realization record.
//! - **Runtime files** ([`runtime_root`]): uploads and bridge files live under
//!   `<remoteCwd>/.paperclip-runtime/<adapter>`.
//! - **Which calls the host makes** ([`HostCall`], [`host_makes`]): a method only where the
//!   host's capability resolution and its own flow would call it.
//! - **Transfers without native sync** ([`upload_steps`], [`download_steps`]): base64 over
//!   `environmentExecute` stdin and stdout, chunked as the host chunks it.
//!
//! The book's chapter "Conformance in CI", section "How the harness plays the host", lists
//! these rules for users, each with the upstream file it comes from.

use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::methods::name;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Map, Value};

use crate::context::{RunEnv, WorkerFacts};
use crate::ledger::Lease;

// Upstream paperclipai/paperclip server/src/services/environment-execution-target.ts
// (`DEFAULT_SANDBOX_REMOTE_CWD`): the cwd of a sandbox target without `metadata.remoteCwd`.
/// The working directory the host uses when a lease names none.
pub const DEFAULT_REMOTE_CWD: &str = "/tmp";

/// The adapter type the harness acquires for, unless `--acquire-params` says otherwise.
pub const DEFAULT_ADAPTER_TYPE: &str = "claude_local";

// Upstream adapter-utils execution-target (the process-session bridge, `writeTextFile`): stdin
// of the bridge goes in 32 KiB base64 chunks; the command-managed runtime's chunked upload path
// (npm @paperclipai/adapter-utils dist/command-managed-runtime.js) sends 4 MiB of base64
// (3 MiB decoded) per `environmentExecute` for workspace files. The harness uses the larger
// one: it is the one that stresses a provider's stdin handling.
/// Decoded bytes per upload chunk (4 MiB of base64).
pub const UPLOAD_CHUNK_BYTES: usize = 3 * 1024 * 1024;

// npm @paperclipai/adapter-utils dist/command-managed-runtime.js, reads:
// `wc -c < path`, then `dd if=<path> bs=3145728 skip=<i> count=1 2>/dev/null | base64`.
/// Decoded bytes per download chunk.
pub const DOWNLOAD_CHUNK_BYTES: usize = 3 * 1024 * 1024;

/// The lease's working directory as the host computes it.
///
// Upstream environment-execution-target.ts: `remoteCwd = typeof leaseMetadata.remoteCwd ===
// "string" && trim().length > 0 ? trim() : DEFAULT_SANDBOX_REMOTE_CWD`, and every execute sends
// `cwd: commandInput.cwd ?? remoteCwd`.
pub fn remote_cwd(lease: &Lease) -> String {
    lease
        .metadata
        .get(paperclip_sandbox_protocol::methods::Lease::REMOTE_CWD)
        .and_then(Value::as_str)
        .map(paperclip_sandbox_protocol::jsonrpc::js_trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_REMOTE_CWD)
        .to_owned()
}

/// True when the lease names its working directory in `metadata.remoteCwd`.
pub fn names_remote_cwd(lease: &Lease) -> bool {
    lease
        .metadata
        .get(paperclip_sandbox_protocol::methods::Lease::REMOTE_CWD)
        .and_then(Value::as_str)
        .is_some_and(|s| !paperclip_sandbox_protocol::jsonrpc::js_trim(s).is_empty())
}

/// Where the host puts its runtime files for this lease.
///
// Upstream adapter-utils execution-target (process-session bridge): the runtime root defaults
// to `<remoteCwd>/.paperclip-runtime/<adapterKey>`; sandbox-managed-runtime puts its upload
// tars (`workspace-upload.tar`, `<assetKey>-upload.tar`) under that root.
pub fn runtime_root(env: &RunEnv, lease: &Lease) -> String {
    let adapter = env
        .acquire_overrides
        .get("adapterType")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_ADAPTER_TYPE);
    format!("{}/.paperclip-runtime/{adapter}", remote_cwd(lease).trim_end_matches('/'))
}

/// `requestedExpiresAt`: one hour from now, as an RFC 3339 UTC instant with milliseconds.
pub fn requested_expires_at() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    rfc3339_ms(now + 3_600_000)
}

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil-from-days (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The params of `environmentAcquireLease` as the host sends them: the base params, the run's
/// identity and workspace, then whatever `--acquire-params` sets (a `null` there removes a
/// field).
///
// Upstream packages/plugins/sdk/src/protocol.ts `PluginEnvironmentAcquireLeaseParams`
// (base + runId, workspaceMode?, requestedCwd?, agentId?, executionWorkspaceId?, adapterType?,
// executionWorkspaceSettings?, requestedExpiresAt?) and environment-runtime.ts
// `EnvironmentDriverAcquireInput` (companyId, issueId, agentId, heartbeatRunId,
// executionWorkspaceId, executionWorkspaceMode, executionWorkspaceSettings, adapterType,
// requestedExpiresAt). A provider that needs any of them (a Kubernetes provider labels its pods
// with them) fails when they are missing, so the harness always sends them.
pub fn acquire_params(env: &RunEnv, base: Map<String, Value>) -> Map<String, Value> {
    let mut p = base;
    p.insert("issueId".into(), json!(crate::ids::uuid()));
    p.insert("runId".into(), json!(crate::ids::uuid()));
    p.insert("agentId".into(), json!(crate::ids::uuid()));
    p.insert("adapterType".into(), json!(DEFAULT_ADAPTER_TYPE));
    p.insert("executionWorkspaceId".into(), json!(crate::ids::uuid()));
    p.insert("workspaceMode".into(), json!("isolated"));
    p.insert("executionWorkspaceSettings".into(), Value::Null);
    p.insert("requestedExpiresAt".into(), json!(requested_expires_at()));
    for (k, v) in &env.acquire_overrides {
        if v.is_null() {
            p.remove(k);
        } else {
            p.insert(k.clone(), v.clone());
        }
    }
    p
}

/// A command as the host sends it: `sh -c <script>`.
#[derive(Debug, Clone)]
pub struct Exec {
    /// The script.
    pub script: String,
    /// The command's own cwd; `None` sends the lease's remote cwd.
    pub cwd: Option<String>,
    /// Environment variables.
    pub env: Option<Map<String, Value>>,
    /// Stdin.
    pub stdin: Option<String>,
    /// `timeoutMs`.
    pub timeout_ms: u64,
    /// A command on the lease's persistent session (the host's `useSession`); otherwise a
    /// one-shot (`bypassSession: true`).
    pub session: bool,
}

impl Exec {
    /// A one-shot `sh -c script` in the remote cwd with a 20 s timeout.
    pub fn sh(script: impl Into<String>) -> Exec {
        Exec {
            script: script.into(),
            cwd: None,
            env: None,
            stdin: None,
            timeout_ms: 20_000,
            session: false,
        }
    }

    /// With stdin.
    pub fn stdin(mut self, stdin: impl Into<String>) -> Exec {
        self.stdin = Some(stdin.into());
        self
    }

    /// With one environment variable.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Exec {
        self.env.get_or_insert_with(Map::new).insert(key.into(), json!(value.into()));
        self
    }

    /// With `timeoutMs`.
    pub fn timeout(mut self, ms: u64) -> Exec {
        self.timeout_ms = ms;
        self
    }

    /// With the command's own cwd.
    pub fn cwd(mut self, cwd: impl Into<String>) -> Exec {
        self.cwd = Some(cwd.into());
        self
    }

    /// On the persistent session.
    pub fn on_session(mut self) -> Exec {
        self.session = true;
        self
    }

    /// The `environmentExecute` params, on top of `lease_params` (base params plus `lease`).
    ///
    // Upstream environment-execution-target.ts: `cwd: commandInput.cwd ?? remoteCwd`,
    // `forceSession: persistentSessionsAllowed ? useSession : false`, `bypassSession` passed
    // through; environment-runtime.ts then always sends `bypassSession = input.bypassSession ===
    // true || (activeStep === null && input.forceSession !== true)`. A session command on a
    // lease without effective persistentProcessSessions therefore goes out one-shot.
    pub fn params(
        &self,
        facts: &WorkerFacts,
        lease: &Lease,
        lease_params: Map<String, Value>,
    ) -> Value {
        let mut p = lease_params;
        p.insert("command".into(), json!("sh"));
        p.insert("args".into(), json!(["-c", self.script]));
        p.insert("cwd".into(), json!(self.cwd.clone().unwrap_or_else(|| remote_cwd(lease))));
        if let Some(env) = &self.env {
            p.insert("env".into(), Value::Object(env.clone()));
        }
        if let Some(stdin) = &self.stdin {
            p.insert("stdin".into(), json!(stdin));
        }
        p.insert("timeoutMs".into(), json!(self.timeout_ms));
        let on_session = self.session && facts.has(Capability::PersistentProcessSessions);
        p.insert("bypassSession".into(), json!(!on_session));
        Value::Object(p)
    }
}

impl From<String> for Exec {
    fn from(script: String) -> Exec {
        Exec::sh(script)
    }
}

/// A call (or a way of calling) the host makes only under conditions; checks are gated on
/// these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCall {
    /// `environmentResumeLease` of a lease it kept.
    Resume,
    /// `environmentSyncIn`/`environmentSyncOut` instead of base64 over execute.
    NativeSync,
    /// `execute.log` streaming: the host listens for chunks.
    StreamedOutput,
    /// One-shot control commands while a long session command runs.
    ControlCommands,
    /// Commands on the lease's persistent session (`bypassSession: false`).
    SessionCommands,
    /// `environmentStopLease` (stop and retain).
    Stop,
    /// A duplex command channel (`duplexChannelOpen` and the rest).
    Duplex,
    /// A login terminal (`loginPtyOpen` and the rest) in a fresh lease.
    LoginPty,
}

/// Whether the host makes `call` to this worker; `Err` says why not, for the skip reason.
///
// Upstream rules, each from the host's own code:
// - Resume: environment-runtime.ts resumes only a lease whose policy is `reuse_by_environment`,
//   which the capability narrowing (`buildSandboxCapabilityNarrowing`: `reusableLeases =
//   leasePolicy === "reuse_by_environment"`) ties to an effective `reusableLeases`; a worker
//   without it is never resumed.
// - NativeSync: environment-execution-target.ts `nativeSyncAllowed` needs the snapshot's
//   nativeSyncIn AND nativeSyncOut and `supportsSync` (both verbs advertised); otherwise the
//   byte-identical base64 fallback is used.
// - StreamedOutput: the execute.log sink is consumed when incrementalSessionOutput is
//   effective (opt-in key, SANDBOX_PROVIDER_CAPABILITIES.md).
// - ControlCommands: gated on independentControlCommands only, NOT on
//   incrementalSessionOutput. Upstream adapter-utils execution-target.ts
//   `startAdapterExecutionTargetProcessSessionBridge` runs a long *session* command
//   (`useSession: true`) with concurrent one-shot stdin/shutdown execs only in its streamed
//   mode (`streamOutputViaSession`), which acpx-engine/execute.ts turns on exactly when
//   `effectiveCapabilities.incrementalSessionOutput === true` (`streamAgentSessionOutput`);
//   older hosts also required persistentProcessSessions and independentControlCommands
//   (server environment-execution-target tests, "drops session output streaming when the
//   snapshot removes independent control commands"). But one-shot execs beside a long
//   command happen for every sandbox target whatever its output capability:
//   `runAdapterExecutionTargetProcess` runs the adapter command as one long
//   `runner.execute` while the callback bridge (`startAdapterExecutionTargetPaperclipBridge`,
//   used for every remote target: `adapterExecutionTargetUsesPaperclipBridge`) polls its
//   queue, and the run-log tail (`streamRunLogs`, on by default) reads log files, each with
//   one-shot execs. A provider that runs a lease's commands one at a time stalls those, so
//   the check runs whenever independentControlCommands is effective; only the long
//   command's shape follows incrementalSessionOutput ([`control_long_on_session`]).
// - SessionCommands: `forceSession` is honoured only with persistentProcessSessions.
// - Stop: `environmentStopLease` exists from paperclip-2026-11 and needs advertisement; the
//   host requires a receipt with state "stopped".
// - Duplex: environment-execution-target.ts opens a duplex channel only when the snapshot's
//   duplexCommandStream (opt-in, needs duplexChannelOpen advertised) is effective.
// - LoginPty: server/src/routes/agents.ts `resolveProviderSupportsLoginPty` reads the
//   provider driver's manifest flag, `resolved?.driver.supportsLoginPty === true` (the
//   validator folds the alias `supportsSetupTokenLogin` into it), and both login flows refuse
//   to start without it (`assertCodexLoginProviderCapability`,
//   `assertSetupTokenLoginProviderCapability`); services/device-login-service.ts
//   `createProductionLoginSessionRuntime` checks it again, then acquires a fresh lease and
//   opens the terminal in it. services/plugin-worker-manager.ts `openLoginPtySession` then
//   calls `loginPtyOpen` without consulting supportedMethods: the flag alone decides, so a
//   driver that declares it must answer the methods.
pub fn host_makes(call: HostCall, facts: &WorkerFacts, profile: HostProfile) -> Result<(), String> {
    let need_cap = |c: Capability| {
        if facts.has(c) {
            Ok(())
        } else {
            let declared = facts.declared.get(c.key()).map_or("absent".into(), |v| v.to_string());
            Err(format!(
                "the host would not rely on this: capability {c} is not effective (declared: \
                 {declared}; opt-in: {})",
                c.spec().opt_in
            ))
        }
    };
    match call {
        HostCall::Resume => need_cap(Capability::ReusableLeases),
        HostCall::NativeSync => {
            need_cap(Capability::NativeSyncIn).and_then(|()| need_cap(Capability::NativeSyncOut))
        }
        HostCall::StreamedOutput => need_cap(Capability::IncrementalSessionOutput),
        HostCall::ControlCommands => need_cap(Capability::IndependentControlCommands),
        HostCall::SessionCommands => need_cap(Capability::PersistentProcessSessions),
        HostCall::Duplex => need_cap(Capability::DuplexCommandStream),
        HostCall::LoginPty if facts.login_pty => Ok(()),
        HostCall::LoginPty => Err("the host would not open a login terminal: the driver does not \
             declare supportsLoginPty: true"
            .into()),
        HostCall::Stop => {
            if !profile.is_november() {
                Err(format!("only under {}", HostProfile::Paperclip2026_11))
            } else if !facts.advertises(name::ENVIRONMENT_STOP_LEASE) {
                Err(format!("the worker does not advertise {}", name::ENVIRONMENT_STOP_LEASE))
            } else {
                Ok(())
            }
        }
    }
}

/// Whether the long command beside which the host sends one-shot control commands is a
/// session command: yes where the host streams a process session (incrementalSessionOutput
/// effective: the streamed bridge's `useSession: true` launch), else a one-shot (the adapter
/// command the callback bridge and the run-log tail poll beside). See the ControlCommands
/// rule of [`host_makes`].
pub fn control_long_on_session(facts: &WorkerFacts) -> bool {
    facts.has(Capability::IncrementalSessionOutput)
}

/// The method the host (and the harness's ledger) uses to end a lease for good: destroy when
/// advertised, else release.
pub fn end_method(facts: &WorkerFacts) -> Option<&'static str> {
    [name::ENVIRONMENT_DESTROY_LEASE, name::ENVIRONMENT_RELEASE_LEASE]
        .into_iter()
        .find(|m| facts.advertises(m))
}

/// A path single-quoted for `sh`, as the host quotes every path.
pub fn quote(path: &str) -> String {
    format!("'{}'", path.replace('\'', "'\\''"))
}

/// The host's chunked upload of `bytes` to `path` without native sync: create an empty temp
/// file, append each 4 MiB base64 chunk with `base64 -d >>` (the chunk on stdin), then move it
/// into place. Returns `(script, stdin)` per `environmentExecute`.
///
// npm @paperclipai/adapter-utils dist/command-managed-runtime.js (chunked path, the one a
// provider-backed runner always gets because `supportsSingleStreamStdinProgress` is false in
// upstream environment-execution-target.ts): `mkdir -p <dir> && rm -f <temp> && : > <temp>`,
// then `base64 -d >> <temp>` per chunk, then `mv -f <temp> <path>`.
pub fn upload_steps(path: &str, bytes: &[u8]) -> Vec<(String, Option<String>)> {
    use base64::Engine as _;
    let dir = path.rsplit_once('/').map_or(".", |(d, _)| if d.is_empty() { "/" } else { d });
    let temp = format!("{path}.paperclip-upload.{}", crate::ids::uuid());
    let mut steps =
        vec![(format!("mkdir -p {} && rm -f {t} && : > {t}", quote(dir), t = quote(&temp)), None)];
    for chunk in bytes.chunks(UPLOAD_CHUNK_BYTES) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(chunk);
        steps.push((format!("base64 -d >> {}", quote(&temp)), Some(b64)));
    }
    steps.push((format!("mv -f {} {}", quote(&temp), quote(path)), None));
    steps
}

/// The host's download of a file of `size` bytes without native sync: one
/// `dd … | base64` per 3 MiB chunk. Returns the scripts; decode each stdout with
/// [`decode_base64`] and concatenate.
pub fn download_steps(path: &str, size: usize) -> Vec<String> {
    let chunks = size.div_ceil(DOWNLOAD_CHUNK_BYTES).max(1);
    (0..chunks)
        .map(|i| {
            format!(
                "dd if={} bs={DOWNLOAD_CHUNK_BYTES} skip={i} count=1 2>/dev/null | base64",
                quote(path)
            )
        })
        .collect()
}

/// Decodes `base64` output (line breaks and other whitespace ignored).
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(metadata: Value) -> Lease {
        Lease { id: "l".into(), metadata, expires_at: Value::Null }
    }

    #[test]
    fn remote_cwd_follows_the_host() {
        assert_eq!(remote_cwd(&lease(json!({"remoteCwd": "  /w/x  "}))), "/w/x");
        assert_eq!(remote_cwd(&lease(json!({"remoteCwd": "   "}))), "/tmp");
        assert_eq!(remote_cwd(&lease(json!({"remoteCwd": "\u{feff}/w\u{85}"}))), "/w\u{85}");
        assert_eq!(remote_cwd(&lease(json!({"remoteCwd": 3}))), "/tmp");
        assert_eq!(remote_cwd(&lease(json!({}))), "/tmp");
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_772_323_200_123), "2026-03-01T00:00:00.123Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn uploads_chunk_as_the_host_does() {
        let bytes = vec![7u8; UPLOAD_CHUNK_BYTES + 10];
        let steps = upload_steps("/w/a b/f'x", &bytes);
        assert_eq!(steps.len(), 4);
        assert!(steps[0]
            .0
            .starts_with("mkdir -p '/w/a b' && rm -f '/w/a b/f'\\''x.paperclip-upload."));
        assert!(steps[1].0.starts_with("base64 -d >> '/w/a b/f'\\''x.paperclip-upload."));
        assert_eq!(steps[1].1.as_ref().unwrap().len(), 4 * 1024 * 1024);
        assert!(steps[3].0.starts_with("mv -f "));
        let back: Vec<u8> = steps[1..3]
            .iter()
            .flat_map(|s| decode_base64(s.1.as_ref().unwrap()).unwrap())
            .collect();
        assert_eq!(back, bytes);
        assert_eq!(download_steps("/f", 0).len(), 1);
        assert_eq!(download_steps("/f", DOWNLOAD_CHUNK_BYTES + 1).len(), 2);
        assert_eq!(decode_base64("aGVs\nbG8=\n").unwrap(), b"hello");
    }
}
