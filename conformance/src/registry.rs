//! The check registry: every check in running order ([`CHECKS`]), the gates and the printed
//! skip reasons. Gating comes from here (and from [`crate::hostmodel`]), never from inside a
//! check. A new check is a function in a module of [`crate::checks`] plus one row in
//! [`CHECKS`].

use paperclip_sandbox_protocol::methods::Method;
use paperclip_sandbox_protocol::HostProfile;

use crate::check::{
    check,
    Need::{Manifest, Oversize},
    Scope::{Fresh, Main, Offline},
    EXECUTE_IN_LEASE as LEASE,
};
pub use crate::check::{Check, Need, Scope};
use crate::checks::{
    envelopes, execute, framing, handshake, ledger, lifecycle, lints, manifest, newer, runtime,
    shutdown, stop, sync,
};
use crate::context::{RunEnv, WorkerFacts};
use crate::hostmodel::{host_makes, HostCall};

const ACQUIRE: Need = Need::Method(Method::EnvironmentAcquireLease);
const NOVEMBER: Need = Need::Profile(HostProfile::Paperclip2026_11);
/// The needs of a stop check that runs commands in the lease: acquire and execute advertised,
/// the host stops leases of this worker, and the lease the run acquired.
const STOP_IN_LEASE: &[Need] =
    &[ACQUIRE, Need::Method(Method::EnvironmentExecute), Need::Host(HostCall::Stop), Need::Lease];

/// Every check, in running order: one row a check, grouped by the module of
/// [`crate::checks`] that holds its function (`#[rustfmt::skip]` keeps a row on one line).
#[rustfmt::skip]
pub const CHECKS: &[Check] = &[
    // The manifest group.
    check("manifest.valid", "MAN-1", "manifest valid for the profile", Offline, &[Manifest], manifest::valid),
    check("manifest.removed-keys", "MAN-REMOVED-1", "no removed capability keys", Offline, &[Manifest], manifest::removed_keys),
    check("manifest.capabilities-verified", "CAP-VERIFY-1", "declared capabilities are verifiable", Offline, &[Manifest], manifest::capabilities_verified),
    check("manifest.sync-flags-agree", "SYNC-PAIR-2", "nativeSyncIn and nativeSyncOut agree", Offline, &[Manifest], manifest::sync_flags_agree),
    // The contract-lint group.
    check("lint.reuse-lease-offered", "CAP-LINT-1", "config offers reuseLease only with reusableLeases", Offline, &[Manifest], lints::reuse_lease_offered),
    // The handshake group.
    check("handshake.initialize", "INIT-1", "initialize answers ok within 15 s", Main, &[], handshake::initialize),
    check("handshake.supported-methods", "INIT-2", "supportedMethods is an array of strings", Main, &[], handshake::supported_methods),
    check("handshake.second-initialize", "INIT-3", "a second initialize errors", Main, &[], handshake::second_initialize),
    check("handshake.advertised-implemented", "CAP-HONEST-1", "advertised methods are implemented", Main, &[], handshake::advertised_implemented),
    check("handshake.unadvertised-not-implemented", "CAP-HONEST-2", "unadvertised methods answer -32004", Main, &[], handshake::unadvertised_not_implemented),
    check("handshake.sync-pair", "SYNC-PAIR-1", "sync verbs advertised both or neither", Main, &[], handshake::sync_pair),
    // The framing group (on the main worker; `framing.stdout-purity` runs with the run-wide
    // checks).
    check("framing.blank-and-crlf", "WIRE-NDJSON-1", "blank lines and CRLF tolerated", Main, &[], framing::blank_and_crlf),
    check("framing.parse-error", "WIRE-PARSE-1", "invalid JSON answered -32700 with id null", Main, &[], framing::parse_error),
    check("framing.parse-error-exact", "WIRE-PARSE-2", "parse-error answer as the published SDK's", Main, &[], framing::parse_error_exact),
    check("framing.invalid-request", "WIRE-INVALID-1", "id-null request not answered with success", Main, &[], framing::invalid_request),
    check("framing.id-echo", "WIRE-ID-1", "ids echoed with exact JSON type", Main, &[], framing::id_echo),
    check("framing.method-not-found", "WIRE-METHOD-1", "unknown method answered -32601", Main, &[], framing::method_not_found),
    check("framing.not-implemented", "WIRE-METHOD-2", "known unimplemented method answered -32004", Main, &[], framing::not_implemented),
    check("framing.oversize", "WIRE-FRAME-1", "worker survives an oversize frame", Main, &[Oversize], framing::oversize),
    check("framing.void-result-null", "WIRE-VOID-1", "void answer carries result: null", Fresh, &[], framing::void_result_null),
    // The lifecycle group that opens a lease (the hooks a host needs, validate, probe, acquire,
    // remote cwd, realize).
    check("lifecycle.lease-hooks", "LIFE-HOOKS-1", "acquire, execute and release are implemented", Main, &[], lifecycle::lease_hooks),
    check("lifecycle.validate-config", "LIFE-VALIDATE-1", "validateConfig accepts the config", Main, &[Need::Method(Method::EnvironmentValidateConfig)], lifecycle::validate_config),
    check("lifecycle.probe", "LIFE-PROBE-1", "probe answers {ok, summary?, diagnostics?}", Main, &[Need::Method(Method::EnvironmentProbe)], lifecycle::probe),
    check("lifecycle.acquire", "LIFE-ACQUIRE-1", "acquire answers a lease", Main, &[ACQUIRE], lifecycle::acquire),
    check("lifecycle.remote-cwd", "LIFE-CWD-1", "the lease names metadata.remoteCwd", Main, &[ACQUIRE, Need::Lease], lifecycle::remote_cwd),
    check("lifecycle.realize", "LIFE-REALIZE-1", "realize answers {cwd?, metadata?}", Main, &[ACQUIRE, Need::Method(Method::EnvironmentRealizeWorkspace), Need::Lease], lifecycle::realize),
    // The execute group.
    check("execute.exit-code", "EXEC-1", "exit code reported", Main, LEASE, execute::exit_code),
    check("execute.output", "EXEC-2", "stdout and stderr returned", Main, LEASE, execute::output),
    check("execute.stdin", "EXEC-3", "stdin fed, also as the host's base64 upload", Main, LEASE, execute::stdin),
    check("execute.env", "EXEC-4", "env passed to the command", Main, LEASE, execute::env),
    check("execute.env-not-on-command-line", "SECRET-3", "env values never on a command line of the worker's tree", Main, LEASE, execute::env_not_on_command_line),
    check("execute.cwd", "EXEC-5", "runs in the host's cwd (remoteCwd, else /tmp)", Main, LEASE, execute::cwd),
    check("execute.timeout", "EXEC-6", "timeoutMs stops the command (checked after)", Main, LEASE, execute::timeout),
    check("execute.large-output", "EXEC-OUT-1", "the host's 4 MiB base64 download is byte-exact", Main, LEASE, execute::large_output),
    check("execute.incremental-output", "EXEC-STREAM-1", "execute.log streams in order before the answer", Main, &[Need::Method(Method::EnvironmentAcquireLease), Need::Method(Method::EnvironmentExecute), Need::Host(HostCall::StreamedOutput), Need::Lease], execute::incremental_output),
    check("execute.control-commands", "EXEC-CTRL-1", "a control command answers beside a long one", Main, &[Need::Method(Method::EnvironmentAcquireLease), Need::Host(HostCall::ControlCommands), Need::Lease], execute::control_commands),
    check("execute.session-commands", "EXEC-SESSION-1", "session commands (bypassSession: false) run", Main, &[Need::Method(Method::EnvironmentAcquireLease), Need::Host(HostCall::SessionCommands), Need::Lease], execute::session_commands),
    // The native sync group.
    check("sync.round-trip", "SYNC-1", "syncIn then syncOut keep bytes, modes, excludes, order", Main, &[Need::Method(Method::EnvironmentAcquireLease), Need::Host(HostCall::NativeSync), Need::Lease], sync::round_trip),
    // The runtime-requirements group.
    check("runtime.posix-shell", "RT-SHELL-1", "sh -c runs POSIX shell", Main, LEASE, runtime::posix_shell),
    check("runtime.tar", "RT-SHELL-1", "a tar round trip works", Main, LEASE, runtime::tar),
    check("runtime.writable-dirs", "RT-SHELL-1", "workspace, home, cache, tmp writable", Main, LEASE, runtime::writable_dirs),
    check("runtime.node", "RT-NODE-1", "node is on the PATH", Main, LEASE, runtime::node),
    check("runtime.required-clis", "RT-CLI-1", "every --require-cli CLI is on the PATH", Main, &[Need::Method(Method::EnvironmentAcquireLease), Need::Method(Method::EnvironmentExecute), Need::RequiredClis, Need::Lease], runtime::required_clis),
    check("runtime.no-login-profile", "RT-PROFILE-1", "no profile or rc file written", Main, LEASE, runtime::no_login_profile),
    // The lifecycle group that ends leases (release, resume, destroy, stop).
    check("lifecycle.release", "LIFE-RELEASE-1", "release answers null or a receipt naming the lease", Main, &[ACQUIRE, Need::Method(Method::EnvironmentReleaseLease), Need::Lease], lifecycle::release),
    check("lifecycle.resume-live", "LIFE-RESUME-1", "resume of a live lease returns it", Main, &[ACQUIRE, Need::Host(HostCall::Resume), Need::Lease], lifecycle::resume_live),
    check("lifecycle.resume-destroyed", "LIFE-RESUME-2", "resume of a destroyed lease returns providerLeaseId null", Main, &[ACQUIRE, Need::Host(HostCall::Resume), Need::Method(Method::EnvironmentDestroyLease), Need::Lease], lifecycle::resume_destroyed),
    check("lifecycle.destroy-idempotent", "LIFE-DESTROY-1", "destroy twice succeeds", Main, &[ACQUIRE, Need::Method(Method::EnvironmentDestroyLease), Need::Lease], lifecycle::destroy_idempotent),
    check("lifecycle.stop-keeps-files", "LIFE-STOP-1", "stop answers a stopped receipt and keeps files", Main, &[ACQUIRE, Need::Host(HostCall::Stop), Need::Lease], lifecycle::stop_keeps_files),
    check("lifecycle.stop-busy-never-deletes", "LIFE-STOP-2", "a stop while a command runs answers stopped or an error, never deletes", Main, STOP_IN_LEASE, stop::stop_busy_never_deletes),
    check("lifecycle.stop-twice", "LIFE-STOP-3", "a second stop of a stopped lease answers stopped", Main, STOP_IN_LEASE, stop::stop_twice),
    check("lifecycle.stop-from-fresh-worker", "LIFE-STOP-4", "a worker started afresh stops a lease acquired before", Main, STOP_IN_LEASE, stop::stop_from_fresh_worker),
    check("lifecycle.export-resume", "LIFE-STOP-5", "export-only resume: stop, resume, ready, export, stop again", Main, &[ACQUIRE, Need::Method(Method::EnvironmentExecute), Need::Host(HostCall::Stop), Need::Method(Method::EnvironmentResumeLease), Need::Lease], stop::export_resume),
    // The checks of the newest upstream methods, each gated by what the worker advertises and what
    // the host would call.
    check("newer.not-implemented", "WIRE-METHOD-2", "environmentTask, routeAiConnection, loginPtyOpen, duplexChannelOpen: -32004 with upstream's message unless advertised", Main, &[NOVEMBER], newer::not_implemented),
    check("newer.idle-seal", "IDLE-SEAL-1", "prepareIdleSleep none seals until the owner releases; a stale release does not", Fresh, &[NOVEMBER, Need::Method(Method::PrepareIdleSleep)], newer::seal),
    check("newer.idle-busy", "IDLE-BUSY-1", "no idle sleep while a command runs", Main, &[NOVEMBER, Need::Method(Method::PrepareIdleSleep), ACQUIRE, Need::Method(Method::EnvironmentExecute), Need::Lease], newer::busy),
    check("newer.task-pairing", "TASK-PAIR-1", "environmentTask refuses a foreign operation and answers status with status", Main, &[NOVEMBER, Need::Method(Method::EnvironmentTask)], newer::pairing),
    check("newer.duplex-roundtrip", "DUPLEX-1", "duplex channel: open, data, exit, close", Main, &[ACQUIRE, Need::Method(Method::DuplexChannelOpen), Need::Method(Method::DuplexChannelWrite), Need::Method(Method::DuplexChannelClose), Need::Host(HostCall::Duplex), Need::Lease], newer::duplex),
    check("newer.login-pty", "LOGIN-PTY-1", "login terminal: open, output, input, exit, close", Main, &[ACQUIRE, Need::Host(HostCall::LoginPty), Need::Lease], newer::login_pty),
    // The shutdown group.
    check("shutdown.on-request", "SHUT-1", "exit within 10 s of shutdown", Fresh, &[], shutdown::on_request),
    check("shutdown.on-stdin-eof", "SHUT-2", "exit on stdin EOF", Fresh, &[], shutdown::on_stdin_eof),
    check("shutdown.no-orphans", "SHUT-3", "nothing the worker started survives it", Fresh, &[], shutdown::no_orphans),
    // The run-wide checks: judged last, over every worker of the run.
    check("ledger.clean", "LEDGER-1", "every lease the run created is ended", Main, &[], ledger::clean),
    check("framing.stdout-purity", "WIRE-STDOUT-1", "only protocol lines on stdout, whole run", Offline, &[], framing::stdout_purity),
    check("framing.bounded-output", "WIRE-BOUND-1", "no over-limit line, no flood of frames or stderr, bounded --manifest, whole run", Offline, &[], framing::bounded_output),
    check("envelopes.allowlisted", "ENV-ALLOW-1", "error.data only allowlisted envelopes, whole run", Offline, &[], envelopes::allowlisted),
    check("secrets.no-leak", "SECRET-1", "planted secrets never echoed, whole run", Offline, &[], envelopes::no_secret_leak),
];

/// Every check, in running order.
pub fn all() -> impl Iterator<Item = &'static Check> {
    CHECKS.iter()
}

/// The check with this id.
pub fn find(id: &str) -> Option<&'static Check> {
    all().find(|c| c.id == id)
}

/// Whether the worker offers `method` (the one place a method need is decided).
pub fn method_available(facts: &WorkerFacts, method: Method) -> bool {
    facts.advertises(method.as_str())
}

/// Why `check` cannot run for this worker, or `None` when it can.
pub fn skip_reason(check: &Check, env: &RunEnv, facts: &WorkerFacts) -> Option<String> {
    for need in check.needs {
        let missing = match *need {
            Need::Method(m) if !method_available(facts, m) => {
                format!("the worker does not advertise {m} in supportedMethods")
            }
            Need::Host(call) => match host_makes(call, facts, env.options.profile) {
                Ok(()) => continue,
                Err(reason) => reason,
            },
            Need::RequiredClis if env.options.required_clis.is_empty() => {
                "no --require-cli given (name the CLIs your runs use, e.g. --require-cli node,claude)"
                    .into()
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
            Need::Manifest if env.manifest.is_none() => env.manifest_problem.clone().unwrap_or_else(
                || "no manifest (pass --manifest FILE, or make `<worker> --manifest` print it)".into(),
            ),
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

/// The closest check id (or `family.*` glob, when `filter` is a glob) to a `--filter` that
/// matches nothing, when one is close enough to be a likely typo.
pub fn suggest_filter(filter: &str) -> Option<String> {
    let mut candidates: Vec<String> = all().map(|c| c.id.to_owned()).collect();
    if filter.contains(['*', '?']) {
        candidates = all().map(|c| format!("{}.*", c.family())).collect();
        candidates.dedup();
    }
    closest(filter, candidates.iter().map(String::as_str)).map(str::to_owned)
}

/// The candidate most similar to `input` (Jaro-Winkler, as clap's suggestions), when it is
/// similar enough (0.8) to be a likely typo.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(input, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
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
            Need::Host(call) => format!("host {call:?}"),
            Need::Lease => "a lease".into(),
            Need::RequiredClis => "--require-cli".into(),
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
        let mut ids: Vec<_> = all().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all().count());
        assert!(find("ledger.clean").is_some());
        for c in all() {
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

    #[test]
    fn a_mistyped_filter_gets_the_closest_id_or_family() {
        assert_eq!(suggest_filter("lifecycle.porbe").as_deref(), Some("lifecycle.probe"));
        assert_eq!(suggest_filter("lifecyle.*").as_deref(), Some("lifecycle.*"));
        assert_eq!(suggest_filter("zzzzzz"), None);
    }
}
