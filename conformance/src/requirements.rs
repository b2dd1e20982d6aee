//! The requirement catalogue: every requirement the harness judges, with its level, statement
//! and public reference. Checks name a requirement id; their level comes from here, so this
//! table is the single source for reports and for the book's catalogue page.

use std::fmt;

use serde::Serialize;

/// How binding a requirement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Level {
    /// A failure fails the run (exit code 1).
    #[serde(rename = "MUST")]
    Must,
    /// A failure is reported but does not fail the run.
    #[serde(rename = "SHOULD")]
    Should,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        })
    }
}

/// One requirement of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// Stable id, e.g. `WIRE-VOID-1`.
    pub id: &'static str,
    /// MUST or SHOULD.
    pub level: Level,
    /// What a worker must (or should) do.
    pub statement: &'static str,
    /// The upstream public document (and section) that states it, e.g.
    /// `SANDBOX_PROVIDER_CAPABILITIES.md, "Failure behavior"`; the book chapter comes from
    /// [`crate::catalogue::chapter_of`].
    pub reference: &'static str,
}

const fn req(
    id: &'static str,
    level: Level,
    statement: &'static str,
    reference: &'static str,
) -> Requirement {
    Requirement { id, level, statement, reference }
}

use Level::{Must, Should};

/// Every requirement, grouped as the checks are.
pub const REQUIREMENTS: &[Requirement] = &[
    req("WIRE-NDJSON-1", Must, "Blank lines are ignored and a trailing CR is tolerated; neither gets an answer.", "@paperclipai/plugin-sdk worker-rpc-host (NDJSON over stdio)"),
    req("WIRE-PARSE-1", Must, "A line that is not JSON gets an error answer with id null and code -32700, and the worker keeps serving.", "JSON-RPC 2.0 Specification, \"Error object\"; @paperclipai/plugin-sdk worker-rpc-host"),
    req("WIRE-PARSE-2", Should, "The parse-error answer is exactly the published SDK's (message `Parse error: Invalid JSON: <line>`).", "@paperclipai/plugin-sdk worker-rpc-host (parse errors)"),
    req("WIRE-INVALID-1", Should, "A JSON-RPC object that is neither a request nor a notification (`\"id\": null` with a method) gets no success answer, and the worker keeps serving.", "JSON-RPC 2.0 Specification, \"Request object\""),
    req("WIRE-ID-1", Must, "Every request id is echoed with its exact JSON type and value, numbers and strings alike.", "JSON-RPC 2.0 Specification, \"Response object\""),
    req("WIRE-VOID-1", Must, "A void method is answered with `\"result\": null`, never with a response lacking `result`.", "JSON-RPC 2.0 Specification, \"Response object\"; @paperclipai/plugin-sdk worker-rpc-host"),
    req("WIRE-METHOD-1", Must, "A method the worker does not know at all gets -32601.", "JSON-RPC 2.0 Specification, \"Error object\"; @paperclipai/plugin-sdk worker-rpc-host"),
    req("WIRE-METHOD-2", Must, "A known method without a hook gets -32004 (the upstream SDK says `<method> is not implemented by this plugin`; another message is noted, not failed).", "@paperclipai/plugin-sdk protocol.ts (PLUGIN_RPC_ERROR_CODES); @paperclipai/plugin-sdk worker-rpc-host"),
    req("WIRE-FRAME-1", Must, "An oversize line gets an error answer or is ignored, and the worker keeps serving.", "@paperclipai/plugin-sdk worker-rpc-host (line reader)"),
    req("WIRE-STDOUT-1", Must, "stdout carries only protocol lines, over the whole life of the worker.", "PLUGIN_SPEC.md (worker processes); @paperclipai/plugin-sdk worker-rpc-host"),
    req("WIRE-BOUND-1", Must, "The worker's output stays within what the host takes: no stdout line over the host's line limit, no flood of frames or of stderr, and a bounded `--manifest` output.", "@paperclipai/plugin-sdk worker-rpc-host; plugin-worker-manager (MAX_WORKER_MESSAGE_CHARS)"),
    req("INIT-1", Must, "initialize is answered within 15 s with `ok: true`.", "@paperclipai/plugin-sdk protocol.ts (initialize); @paperclipai/plugin-sdk worker-rpc-host"),
    req("INIT-2", Must, "`supportedMethods` is an array of strings.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("INIT-3", Must, "A second initialize on the same worker is answered with an error.", "@paperclipai/plugin-sdk worker-rpc-host (initialize)"),
    req("CAP-HONEST-1", Must, "Every advertised environment method is implemented (answers something other than -32004/-32601).", "SANDBOX_PROVIDER_CAPABILITIES.md, \"How the host resolves an effective capability\""),
    req("CAP-HONEST-2", Must, "Every known environment method that is not advertised answers -32004 (-32601 tolerated for November-only methods), never success.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"How the host resolves an effective capability\"; @paperclipai/plugin-sdk worker-rpc-host"),
    req("CAP-VERIFY-1", Must, "A capability declared true is verified by `supportedMethods`; otherwise it would never be granted.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("CAP-LINT-1", Should, "A config schema offers `reuseLease` only when the driver declares `reusableLeases: true`: the host never resumes other leases, so a provider that keeps them alive on release strands them.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Reusable leases need an explicit opt-in\""),
    req("SYNC-PAIR-1", Must, "environmentSyncIn and environmentSyncOut are advertised both or neither.", "SANDBOX_FILE_SYNC_HOOKS.md; SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("SYNC-PAIR-2", Should, "nativeSyncIn and nativeSyncOut are not declared with different values.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("MAN-1", Must, "The manifest is valid for the chosen host profile.", "PLUGIN_SPEC.md (manifest); @paperclipai/shared validators/plugin"),
    req("MAN-REMOVED-1", Must, "The manifest declares no sandbox capability key that the profile removed (concurrentSyncOperations, concurrentSyncAndExec under paperclip-2026-11).", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Concurrency capabilities are not part of the contract\""),
    req("LIFE-HOOKS-1", Must, "A sandbox provider implements and advertises the lease lifecycle every run needs: environmentAcquireLease, environmentExecute and environmentReleaseLease.", "@paperclipai/plugin-sdk protocol.ts (environmentAcquireLease, environmentExecute, environmentReleaseLease); SANDBOX_PROVIDER_CAPABILITIES.md"),
    req("LIFE-VALIDATE-1", Must, "environmentValidateConfig answers `{ok: boolean, warnings?, errors?, normalizedConfig?}` and accepts the given config.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentValidateConfigResult)"),
    req("LIFE-PROBE-1", Must, "environmentProbe answers `{ok: boolean, summary?, diagnostics?, metadata?}`; `ok: false` reports an unreachable backend and is a conforming answer.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentProbeResult)"),
    req("LIFE-ACQUIRE-1", Must, "environmentAcquireLease, called with the params the host sends, answers a lease with a non-empty providerLeaseId.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentAcquireLeaseParams); SANDBOX_PROVIDER_CAPABILITIES.md, \"Fresh lease acquisition timeout\""),
    req("LIFE-CWD-1", Should, "The lease names its workspace in `metadata.remoteCwd`; without it the host runs every command in `/tmp`.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentLease); SANDBOX-REQUIREMENTS.md, \"Runtime dependencies\""),
    req("LIFE-REALIZE-1", Must, "environmentRealizeWorkspace answers an object whose `cwd`, when present, is a string (it only feeds the host's realization record).", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentRealizeWorkspaceResult)"),
    req("EXEC-1", Must, "environmentExecute reports the command's exit code and `timedOut: false`.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentExecuteResult)"),
    req("EXEC-2", Must, "environmentExecute returns the command's stdout and stderr, whole (multi-byte UTF-8 written in pieces included).", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentExecuteResult)"),
    req("EXEC-3", Must, "environmentExecute feeds `stdin` to the command, also the host's chunked base64 upload (`base64 -d >>`, 4 MiB of base64 per execute).", "SANDBOX_FILE_SYNC_HOOKS.md; SANDBOX-REQUIREMENTS.md, \"Runtime dependencies\""),
    req("EXEC-4", Must, "environmentExecute passes `env` to the command.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentExecuteParams)"),
    req("EXEC-5", Must, "environmentExecute runs the command in the `cwd` the host sends: the command's own, else the lease's `metadata.remoteCwd`, else `/tmp`.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentExecuteParams)"),
    req("EXEC-6", Must, "environmentExecute ends a command at `timeoutMs`, answers `timedOut: true`, and the command really stops.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("EXEC-OUT-1", Must, "The host's base64-over-exec download of a 4 MiB file comes back byte-exact; with native sync effective a cut output carries `stdoutTruncated: true`.", "SANDBOX_FILE_SYNC_HOOKS.md; SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("EXEC-STREAM-1", Must, "With incrementalSessionOutput effective, `execute.log` chunks carry the request's invocation id, arrive before the answer, in order and without duplicates, and the final result holds the full output.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Incremental session output needs an explicit opt-in\""),
    req("EXEC-CTRL-1", Must, "With independentControlCommands effective, a one-shot control command (`bypassSession: true`) answers while a long command runs (a session command when incrementalSessionOutput is effective), not after it.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("EXEC-SESSION-1", Must, "With persistentProcessSessions effective, commands on the session (`bypassSession: false`) run with their env, exit code and output, again and again.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("SYNC-1", Must, "environmentSyncIn/environmentSyncOut transfer files and directories with their bytes and modes, honour excludes, and run postUploadCommands in order.", "SANDBOX_FILE_SYNC_HOOKS.md"),
    req("RT-SHELL-1", Must, "The sandbox has a POSIX `sh`, `tar`, and writable workspace, home, cache and temp directories.", "SANDBOX-REQUIREMENTS.md, \"Runtime dependencies\""),
    req("RT-NODE-1", Should, "`node` resolves on the sandbox's starting PATH (`command -v node`).", "SANDBOX-REQUIREMENTS.md, \"Required on PATH\""),
    req("RT-CLI-1", Must, "Every CLI the operator's runs use (`--require-cli`) resolves with `command -v <cmd> || exit 1`.", "SANDBOX-REQUIREMENTS.md, \"Required on PATH\", \"Detection contract\""),
    req("RT-PROFILE-1", Must, "No login profile or rc file appears or changes in the sandbox home across a lease lifecycle, acquire included.", "SANDBOX-REQUIREMENTS.md, \"Firm rule\""),
    req("LIFE-RELEASE-1", Must, "environmentReleaseLease answers null or a termination receipt naming the lease.", "@paperclipai/plugin-sdk protocol.ts (PluginEnvironmentReleaseLeaseParams, termination receipt)"),
    req("LIFE-RESUME-1", Must, "With reusableLeases effective, environmentResumeLease of a live lease returns that lease.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Reusable leases need an explicit opt-in\""),
    req("LIFE-RESUME-2", Must, "With reusableLeases effective, environmentResumeLease of a destroyed lease returns `{providerLeaseId: null, metadata}`.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Reusable leases need an explicit opt-in\""),
    req("LIFE-DESTROY-1", Must, "environmentDestroyLease is idempotent: destroying twice succeeds, and receipts name the lease; a command on a destroyed lease is answered with an error, not a command result.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("LIFE-STOP-1", Must, "environmentStopLease answers a receipt with state `stopped` naming the lease, and keeps the lease's files.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Preserving an unexported workspace\""),
    req("LIFE-STOP-2", Must, "A stop that fails or cannot be confirmed answers an error and keeps the lease and its files; it never falls back to deletion (judged on a stop sent while a command runs).", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Preserving an unexported workspace\""),
    req("LIFE-STOP-3", Must, "A second environmentStopLease of a stopped lease answers a receipt with state `stopped` again and deletes nothing.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Preserving an unexported workspace\""),
    req("LIFE-STOP-4", Must, "A worker process started after the lease was acquired stops it: leases are found from their id and metadata, not from one process's memory.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Preserving an unexported workspace\""),
    req("LIFE-STOP-5", Must, "A stopped lease resumes for its export: environmentResumeLease returns it, a command runs in it, its files export, and a stop after the export answers `stopped`.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Preserving an unexported workspace\""),
    req("LEDGER-1", Must, "Every lease the run created can be ended (destroyed, or released): nothing is left billing after a run.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("ENV-ALLOW-1", Must, "Every `error.data` is an allowlisted envelope (creation-cleanup, sync-error, stop-error) with no other keys.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\"; @paperclipai/plugin-sdk protocol.ts"),
    req("SECRET-1", Must, "Secrets planted in the config never appear in any stdout or stderr byte, error message or envelope.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\"; PLUGIN_SPEC.md (secrets)"),
    req("SECRET-3", Must, "A command's `env` values never appear on a command line of a process the worker starts.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\"; PLUGIN_SPEC.md (secrets)"),
    req("IDLE-SEAL-1", Must, "After `prepareIdleSleep` answers `none`, every other call is refused until `releaseIdleSleep` names the same owner; another owner's release changes nothing.", "paperclipai/paperclip packages/plugins/sdk/src/worker-rpc-host.ts (prepareIdleSleep, releaseIdleSleep); idle-drain.ts"),
    req("IDLE-BUSY-1", Must, "While a command runs, `prepareIdleSleep` never answers `none`.", "paperclipai/paperclip packages/plugins/sdk/src/idle-drain.ts; worker-rpc-host.ts (prepareIdleSleep)"),
    req("TASK-PAIR-1", Must, "environmentTask refuses an operation outside its union and answers each operation with its result kind and the request's taskId.", "paperclipai/paperclip packages/plugins/sdk/src/environment-tasks.ts (operation and result unions)"),
    req("DUPLEX-1", Must, "A duplex channel runs its command in the lease: written bytes reach it, its output arrives as `duplexChannel.data` (base64, bound to the route and session), its exit as one `duplexChannel.exit`, and close acknowledges the route.", "paperclipai/paperclip packages/plugins/sdk/src/protocol.ts (duplexChannelOpen, duplexChannel.data, duplexChannel.exit); SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("LOGIN-PTY-1", Must, "A driver that declares `supportsLoginPty` runs a login terminal in the lease: `loginPtyOpen` answers a `workerSessionId`, input is answered, output arrives as `loginPty.output` and the end as one `loginPty.exit` (both bound to the route and session, after Ctrl-C or `loginPtyStop`), and close acknowledges the route.", "paperclipai/paperclip packages/plugins/sdk/src/protocol.ts (loginPtyOpen, loginPty.output, loginPty.exit); server/src/services/plugin-worker-manager.ts (openLoginPtySession)"),
    req("SHUT-1", Must, "The worker exits within 10 s of `shutdown`.", "@paperclipai/plugin-sdk worker-rpc-host (shutdown)"),
    req("SHUT-2", Must, "The worker exits when stdin reaches end of file.", "@paperclipai/plugin-sdk worker-rpc-host (stdin end of file)"),
    req("STATE-DEAD-1", Should, "Nothing of a destroyed lease can be read: a command sent to it never finds a file written before the destroy.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("STATE-PERSIST-1", Should, "Files written in a lease keep their bytes and mode across executes, and across release or stop and resume when the same lease comes back.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Reusable leases need an explicit opt-in\", \"Preserving an unexported workspace\""),
    req("STATE-ISOLATE-1", Should, "No lease reads what was written in another lease.", "SANDBOX-REQUIREMENTS.md, \"Firm rule\""),
    req("STATE-LINEAR-1", Should, "Two executes in flight in one lease leave the lease as some serial order of the two would.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("STATE-RESTART-1", Should, "After a worker restart, resuming a lease it served answers the lease or `{providerLeaseId: null}`, never an error.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Reusable leases need an explicit opt-in\""),
    req("STATE-SYNC-1", Should, "Files synced into a lease with environmentSyncIn are what its commands read, bytes and mode, and environmentSyncOut brings back what the lease holds, whether synced in or written by a command, also after release or stop and resume of the same lease.", "SANDBOX_FILE_SYNC_HOOKS.md; SANDBOX_PROVIDER_CAPABILITIES.md, \"The capabilities and their worker-method prerequisites\""),
    req("STATE-LEAK-1", Should, "Every lease a sequence of calls created can be destroyed afterwards, and nothing of it is left on the backend.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("CHAOS-BUDGET-1", Should, "While the backend hangs, resets, refuses or truncates, every call is answered within its budget (the per-call timeout; for an execute its `timeoutMs` plus that).", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\", \"Fresh lease acquisition timeout\""),
    req("CHAOS-CLEANUP-1", Should, "An acquire that failed under a backend fault allocated nothing, or returned the creation-cleanup envelope, and the resource can be destroyed from it.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("CHAOS-IDEMP-1", Should, "A destroy after a destroy that failed under a backend fault succeeds.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("CHAOS-RECOVER-1", Should, "After a backend fault heals, probe, resume and execute work again without a worker restart.", "SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""),
    req("SHUT-3", Must, "Nothing the worker started survives it: neither its process group nor a command still running at shutdown.", "@paperclipai/plugin-sdk worker-rpc-host (shutdown); SANDBOX-REQUIREMENTS.md, \"Firm rule\""),
];

/// The requirement with this id.
///
/// # Panics
///
/// When the id is not in [`REQUIREMENTS`] (a bug in the check registry, caught by its tests).
pub fn requirement(id: &str) -> &'static Requirement {
    REQUIREMENTS.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("unknown requirement {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_references_are_public() {
        let mut ids: Vec<_> = REQUIREMENTS.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), REQUIREMENTS.len());
        for r in REQUIREMENTS {
            assert!(!r.reference.is_empty());
            assert!(!r.reference.contains("protocol.md") && !r.reference.contains("decisions.md"));
        }
    }
}
