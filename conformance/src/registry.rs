//! The check registry: every check with its stable id, its requirement, the session it uses and
//! what it needs. Gating and the printed skip reason come from here, never from inside a check.

use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::methods::Method as M;
use paperclip_sandbox_protocol::HostProfile;

use crate::checks::{
    envelopes, execute, framing, handshake, lifecycle, manifest, newer, shutdown, sync,
};
use crate::context::{CheckResult, Ctx, RunEnv, WorkerFacts};
use crate::requirements::{requirement, Level, Requirement};

/// A check function.
pub type CheckFn = fn(&mut Ctx<'_>) -> CheckResult;

/// Which worker process a check talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The shared, initialized main worker (respawned if an earlier check killed it).
    Main,
    /// Fresh workers the check spawns itself.
    Fresh,
    /// No worker: the check judges the manifest or what the run has seen so far.
    Offline,
}

/// A precondition of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The worker advertises this method in `supportedMethods` (a row of the protocol's
    /// method table).
    Method(M),
    /// This capability is effective.
    Capability(Capability),
    /// The run targets this host profile.
    Profile(HostProfile),
    /// A manifest is available.
    Manifest,
    /// The oversize-frame check is not disabled.
    Oversize,
}

/// One check.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// Stable id, `family.name`.
    pub id: &'static str,
    /// The requirement it judges (see [`crate::requirements`]).
    pub requirement: &'static str,
    /// What it does, in a few words.
    pub title: &'static str,
    /// The worker process it uses.
    pub scope: Scope,
    /// Its preconditions.
    pub needs: &'static [Need],
    /// The check itself.
    pub run: CheckFn,
}

impl Check {
    /// The requirement row.
    pub fn requirement(&self) -> &'static Requirement {
        requirement(self.requirement)
    }

    /// MUST or SHOULD, from the requirement.
    pub fn level(&self) -> Level {
        self.requirement().level
    }

    /// The family: the id up to the first dot.
    pub fn family(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }
}

const fn check(
    id: &'static str,
    requirement: &'static str,
    title: &'static str,
    scope: Scope,
    needs: &'static [Need],
    run: CheckFn,
) -> Check {
    Check { id, requirement, title, scope, needs, run }
}

use Need::{Capability as Cap, Manifest, Method, Oversize, Profile};
use Scope::{Fresh, Main, Offline};

const ACQUIRE: Need = Method(M::EnvironmentAcquireLease);
const EXECUTE: Need = Method(M::EnvironmentExecute);

/// Every check, in running order (run-wide checks last).
pub const CHECKS: &[Check] = &[
    check(
        "manifest.valid",
        "MAN-1",
        "manifest valid for the profile",
        Offline,
        &[Manifest],
        manifest::valid,
    ),
    check(
        "manifest.removed-keys",
        "MAN-REMOVED-1",
        "no removed capability keys",
        Offline,
        &[Manifest],
        manifest::removed_keys,
    ),
    check(
        "manifest.capabilities-verified",
        "CAP-VERIFY-1",
        "declared capabilities are verifiable",
        Offline,
        &[Manifest],
        manifest::capabilities_verified,
    ),
    check(
        "manifest.sync-flags-agree",
        "SYNC-PAIR-2",
        "nativeSyncIn and nativeSyncOut agree",
        Offline,
        &[Manifest],
        manifest::sync_flags_agree,
    ),
    check(
        "handshake.initialize",
        "INIT-1",
        "initialize answers ok within 15 s",
        Main,
        &[],
        handshake::initialize,
    ),
    check(
        "handshake.supported-methods",
        "INIT-2",
        "supportedMethods is an array of strings",
        Main,
        &[],
        handshake::supported_methods,
    ),
    check(
        "handshake.second-initialize",
        "INIT-3",
        "a second initialize errors",
        Main,
        &[],
        handshake::second_initialize,
    ),
    check(
        "handshake.advertised-implemented",
        "CAP-HONEST-1",
        "advertised methods are implemented",
        Main,
        &[],
        handshake::advertised_implemented,
    ),
    check(
        "handshake.unadvertised-not-implemented",
        "CAP-HONEST-2",
        "unadvertised methods answer -32004",
        Main,
        &[],
        handshake::unadvertised_not_implemented,
    ),
    check(
        "handshake.sync-pair",
        "SYNC-PAIR-1",
        "sync verbs advertised both or neither",
        Main,
        &[],
        handshake::sync_pair,
    ),
    check(
        "framing.blank-and-crlf",
        "WIRE-NDJSON-1",
        "blank lines and CRLF tolerated",
        Main,
        &[],
        framing::blank_and_crlf,
    ),
    check(
        "framing.parse-error",
        "WIRE-PARSE-1",
        "invalid JSON answered -32700 with id null",
        Main,
        &[],
        framing::parse_error,
    ),
    check(
        "framing.parse-error-exact",
        "WIRE-PARSE-2",
        "parse-error answer exactly as P3",
        Main,
        &[],
        framing::parse_error_exact,
    ),
    check(
        "framing.invalid-request",
        "WIRE-INVALID-1",
        "id-null request not answered with success",
        Main,
        &[],
        framing::invalid_request,
    ),
    check(
        "framing.id-echo",
        "WIRE-ID-1",
        "ids echoed with exact JSON type",
        Main,
        &[],
        framing::id_echo,
    ),
    check(
        "framing.method-not-found",
        "WIRE-METHOD-1",
        "unknown method answered -32601",
        Main,
        &[],
        framing::method_not_found,
    ),
    check(
        "framing.not-implemented",
        "WIRE-METHOD-2",
        "known unimplemented method answered -32004",
        Main,
        &[],
        framing::not_implemented,
    ),
    check(
        "framing.oversize",
        "WIRE-FRAME-1",
        "worker survives an oversize frame",
        Main,
        &[Oversize],
        framing::oversize,
    ),
    check(
        "framing.void-result-null",
        "WIRE-VOID-1",
        "void answer carries result: null",
        Fresh,
        &[],
        framing::void_result_null,
    ),
    check(
        "lifecycle.validate-config",
        "LIFE-VALIDATE-1",
        "validateConfig accepts the config",
        Main,
        &[Method(M::EnvironmentValidateConfig)],
        lifecycle::validate_config,
    ),
    check(
        "lifecycle.probe",
        "LIFE-PROBE-1",
        "probe answers ok",
        Main,
        &[Method(M::EnvironmentProbe)],
        lifecycle::probe,
    ),
    check(
        "lifecycle.acquire",
        "LIFE-ACQUIRE-1",
        "acquire answers a lease",
        Main,
        &[ACQUIRE],
        lifecycle::acquire,
    ),
    check(
        "lifecycle.realize",
        "LIFE-REALIZE-1",
        "realize answers a cwd",
        Main,
        &[ACQUIRE, Method(M::EnvironmentRealizeWorkspace)],
        lifecycle::realize,
    ),
    check(
        "execute.exit-code",
        "EXEC-1",
        "exit code reported",
        Main,
        &[ACQUIRE, EXECUTE],
        execute::exit_code,
    ),
    check(
        "execute.output",
        "EXEC-2",
        "stdout and stderr returned",
        Main,
        &[ACQUIRE, EXECUTE],
        execute::output,
    ),
    check(
        "execute.stdin",
        "EXEC-3",
        "stdin fed to the command",
        Main,
        &[ACQUIRE, EXECUTE],
        execute::stdin,
    ),
    check(
        "execute.env",
        "EXEC-4",
        "env passed to the command",
        Main,
        &[ACQUIRE, EXECUTE],
        execute::env,
    ),
    check("execute.cwd", "EXEC-5", "command runs in cwd", Main, &[ACQUIRE, EXECUTE], execute::cwd),
    check(
        "execute.timeout",
        "EXEC-6",
        "timeoutMs ends the command with timedOut",
        Main,
        &[ACQUIRE, EXECUTE],
        execute::timeout,
    ),
    check(
        "execute.incremental-output",
        "EXEC-STREAM-1",
        "execute.log streams with the invocation id",
        Main,
        &[ACQUIRE, EXECUTE, Cap(Capability::IncrementalSessionOutput)],
        execute::incremental_output,
    ),
    check(
        "sync.round-trip",
        "SYNC-1",
        "syncIn then syncOut keep bytes, modes, excludes, order",
        Main,
        &[ACQUIRE, Method(M::EnvironmentSyncIn), Method(M::EnvironmentSyncOut)],
        sync::round_trip,
    ),
    check(
        "lifecycle.release",
        "LIFE-RELEASE-1",
        "release answers null or a receipt naming the lease",
        Main,
        &[ACQUIRE, Method(M::EnvironmentReleaseLease)],
        lifecycle::release,
    ),
    check(
        "lifecycle.resume-live",
        "LIFE-RESUME-1",
        "resume of a live lease returns it",
        Main,
        &[ACQUIRE, Method(M::EnvironmentResumeLease)],
        lifecycle::resume_live,
    ),
    check(
        "lifecycle.resume-destroyed",
        "LIFE-RESUME-2",
        "resume of a destroyed lease returns providerLeaseId null",
        Main,
        &[ACQUIRE, Method(M::EnvironmentResumeLease), Method(M::EnvironmentDestroyLease)],
        lifecycle::resume_destroyed,
    ),
    check(
        "lifecycle.destroy-idempotent",
        "LIFE-DESTROY-1",
        "destroy twice succeeds",
        Main,
        &[ACQUIRE, Method(M::EnvironmentDestroyLease)],
        lifecycle::destroy_idempotent,
    ),
    check(
        "lifecycle.stop-keeps-files",
        "LIFE-STOP-1",
        "stop answers a stopped receipt and keeps files",
        Main,
        &[Profile(HostProfile::Paperclip2026_11), ACQUIRE, Method(M::EnvironmentStopLease)],
        lifecycle::stop_keeps_files,
    ),
    // The newest upstream methods (checks::newer), each gated by what the worker advertises.
    check(
        "newer.not-implemented",
        "WIRE-METHOD-2",
        "environmentTask, routeAiConnection, loginPtyOpen, duplexChannelOpen: -32004 unless advertised",
        Main,
        &[Profile(HostProfile::Paperclip2026_11)],
        newer::not_implemented,
    ),
    check(
        "newer.idle-seal",
        "IDLE-SEAL-1",
        "prepareIdleSleep none seals until the owner releases; a stale release does not",
        Fresh,
        &[Profile(HostProfile::Paperclip2026_11), Method(M::PrepareIdleSleep)],
        newer::seal,
    ),
    check(
        "newer.idle-busy",
        "IDLE-BUSY-1",
        "no idle sleep while a command runs",
        Main,
        &[Profile(HostProfile::Paperclip2026_11), Method(M::PrepareIdleSleep), ACQUIRE, EXECUTE],
        newer::busy,
    ),
    check(
        "newer.task-pairing",
        "TASK-PAIR-1",
        "environmentTask refuses a foreign operation and answers status with status",
        Main,
        &[Profile(HostProfile::Paperclip2026_11), Method(M::EnvironmentTask)],
        newer::pairing,
    ),
    check(
        "newer.duplex-roundtrip",
        "DUPLEX-1",
        "duplex channel: open, data, exit, close",
        Main,
        &[
            ACQUIRE,
            Method(M::DuplexChannelOpen),
            Method(M::DuplexChannelWrite),
            Method(M::DuplexChannelClose),
        ],
        newer::duplex,
    ),
    check(
        "shutdown.on-request",
        "SHUT-1",
        "exit within 10 s of shutdown",
        Fresh,
        &[],
        shutdown::on_request,
    ),
    check(
        "shutdown.on-stdin-eof",
        "SHUT-2",
        "exit on stdin EOF",
        Fresh,
        &[],
        shutdown::on_stdin_eof,
    ),
    check(
        "shutdown.no-orphans",
        "SHUT-3",
        "no process of the group survives",
        Fresh,
        &[],
        shutdown::no_orphans,
    ),
    check(
        "framing.stdout-purity",
        "WIRE-STDOUT-1",
        "only protocol lines on stdout, whole run",
        Offline,
        &[],
        framing::stdout_purity,
    ),
    check(
        "envelopes.allowlisted",
        "ENV-ALLOW-1",
        "error.data only allowlisted envelopes, whole run",
        Offline,
        &[],
        envelopes::allowlisted,
    ),
    check(
        "secrets.no-leak",
        "SECRET-1",
        "planted secrets never echoed, whole run",
        Offline,
        &[],
        envelopes::no_secret_leak,
    ),
];

/// Why `check` cannot run for this worker, or `None` when it can.
pub fn skip_reason(check: &Check, env: &RunEnv, facts: &WorkerFacts) -> Option<String> {
    for need in check.needs {
        let missing = match *need {
            Need::Method(m) if !facts.advertises(m.as_str()) => {
                format!("the worker does not advertise {m} in supportedMethods")
            }
            Need::Capability(c) if !facts.has(c) => {
                let declared =
                    facts.declared.get(c.key()).map_or("absent".into(), |v| v.to_string());
                format!(
                    "capability {c} is not effective (declared: {declared}; opt-in: {})",
                    c.spec().opt_in
                )
            }
            Need::Profile(p) if env.options.profile != p => format!("only under {p}"),
            Need::Manifest if env.manifest.is_none() => {
                "no manifest (pass --manifest FILE, or make `<worker> --manifest` print it)".into()
            }
            Need::Oversize if env.options.skip_oversize => "disabled by --skip-oversize".into(),
            _ => continue,
        };
        return Some(missing);
    }
    None
}

/// True when `id` matches `--filter`: a glob when the filter has `*` or `?`, else a substring.
pub fn matches_filter(id: &str, filter: Option<&str>) -> bool {
    match filter {
        None => true,
        Some(f) if f.contains(['*', '?']) => glob(f.as_bytes(), id.as_bytes()),
        Some(f) => id.contains(f),
    }
}

/// A minimal glob: `*` any run, `?` any one byte.
pub fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match (pattern.first(), text.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], text) || (!text.is_empty() && glob(pattern, &text[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &text[1..]),
        (Some(p), Some(t)) if p == t => glob(&pattern[1..], &text[1..]),
        _ => false,
    }
}

/// A human description of what a check needs, for `--list`.
pub fn describe_needs(check: &Check) -> String {
    let parts: Vec<String> = check
        .needs
        .iter()
        .map(|n| match n {
            Need::Method(m) => m.as_str().to_owned(),
            Need::Capability(c) => format!("capability {c}"),
            Need::Profile(p) => p.to_string(),
            Need::Manifest => "manifest".into(),
            Need::Oversize => "oversize enabled".into(),
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_requirements_exist() {
        let mut ids: Vec<_> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
        for c in CHECKS {
            let _ = c.level();
            assert!(c.id.starts_with(c.family()));
        }
    }

    #[test]
    fn filters_take_substrings_and_globs() {
        assert!(matches_filter("framing.id-echo", Some("id-echo")));
        assert!(matches_filter("framing.id-echo", Some("framing.*")));
        assert!(matches_filter("framing.id-echo", Some("*.id-ech?")));
        assert!(!matches_filter("framing.id-echo", Some("lifecycle.*")));
        assert!(matches_filter("x", None));
    }
}
