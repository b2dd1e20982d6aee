//! The requirement catalogue: every requirement the harness judges, with its level, statement
//! and contract reference. Checks name a requirement id; their level comes from here, so this
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
    /// Where the contract says so (`protocol.md A.2`, `decisions.md D9`, …).
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
    req("WIRE-NDJSON-1", Must, "Blank lines are ignored and a trailing CR is tolerated; neither gets an answer.", "protocol.md A.2"),
    req("WIRE-PARSE-1", Must, "A line that is not JSON gets an error answer with id null and code -32700, and the worker keeps serving.", "protocol.md A.2; decisions.md D9"),
    req("WIRE-PARSE-2", Should, "The parse-error answer is exactly the published SDK's (P3: message `Parse error: Invalid JSON: <line>`).", "protocol.md A.2, I (P3); decisions.md D9"),
    req("WIRE-INVALID-1", Should, "A JSON-RPC object that is neither a request nor a notification (`\"id\": null` with a method) gets no success answer, and the worker keeps serving.", "protocol.md A.2"),
    req("WIRE-ID-1", Must, "Every request id is echoed with its exact JSON type and value, numbers and strings alike.", "protocol.md A.2; decisions.md D9"),
    req("WIRE-VOID-1", Must, "A void method is answered with `\"result\": null`, never with a response lacking `result`.", "protocol.md A.2, I (P1); decisions.md D9"),
    req("WIRE-METHOD-1", Must, "A method the worker does not know at all gets -32601.", "protocol.md B; decisions.md D9"),
    req("WIRE-METHOD-2", Must, "A known method without a hook gets -32004 (`<method> is not implemented by this plugin`).", "protocol.md B, I (P2); decisions.md D9"),
    req("WIRE-FRAME-1", Must, "An oversize line gets an error answer or is ignored, and the worker keeps serving.", "decisions.md D10; protocol.md A.2"),
    req("WIRE-STDOUT-1", Must, "stdout carries only protocol lines, over the whole life of the worker.", "protocol.md A.4; decisions.md D9"),
    req("INIT-1", Must, "initialize is answered within 15 s with `ok: true`.", "protocol.md A.3"),
    req("INIT-2", Must, "`supportedMethods` is an array of strings.", "protocol.md A.3"),
    req("INIT-3", Must, "A second initialize on the same worker is answered with an error.", "protocol.md A.3"),
    req("CAP-HONEST-1", Must, "Every advertised environment method is implemented (answers something other than -32004/-32601).", "protocol.md A.3, H.4"),
    req("CAP-HONEST-2", Must, "Every known environment method that is not advertised answers -32004 (-32601 tolerated for November-only methods), never success.", "protocol.md B, D.14, H.4"),
    req("CAP-VERIFY-1", Must, "A capability declared true is verified by `supportedMethods`; otherwise it would never be granted.", "protocol.md E.1"),
    req("SYNC-PAIR-1", Must, "environmentSyncIn and environmentSyncOut are advertised both or neither.", "decisions.md D4; protocol.md D.10"),
    req("SYNC-PAIR-2", Should, "nativeSyncIn and nativeSyncOut are not declared with different values.", "decisions.md D4"),
    req("MAN-1", Must, "The manifest is valid for the chosen host profile.", "protocol.md C; decisions.md D1–D3"),
    req("MAN-REMOVED-1", Must, "The manifest declares no sandbox capability key that the profile removed (concurrentSyncOperations, concurrentSyncAndExec under paperclip-2026-11).", "decisions.md D1; protocol.md C.3"),
    req("LIFE-VALIDATE-1", Must, "environmentValidateConfig answers `{ok: boolean, warnings?, errors?, normalizedConfig?}` and accepts the given config.", "protocol.md D.2"),
    req("LIFE-PROBE-1", Must, "environmentProbe answers `{ok: true, …}` for the given config.", "protocol.md D.3"),
    req("LIFE-ACQUIRE-1", Must, "environmentAcquireLease answers a lease with a non-empty providerLeaseId.", "protocol.md D.1, D.4"),
    req("LIFE-REALIZE-1", Must, "environmentRealizeWorkspace answers a non-empty `cwd`.", "protocol.md D.8"),
    req("EXEC-1", Must, "environmentExecute reports the command's exit code and `timedOut: false`.", "protocol.md D.9"),
    req("EXEC-2", Must, "environmentExecute returns the command's stdout and stderr.", "protocol.md D.9"),
    req("EXEC-3", Must, "environmentExecute feeds `stdin` to the command.", "protocol.md D.9"),
    req("EXEC-4", Must, "environmentExecute passes `env` to the command.", "protocol.md D.9"),
    req("EXEC-5", Must, "environmentExecute runs the command in `cwd`.", "protocol.md D.9"),
    req("EXEC-6", Must, "environmentExecute ends a command at `timeoutMs` and answers `timedOut: true`.", "protocol.md D.9"),
    req("EXEC-STREAM-1", Must, "With incrementalSessionOutput effective, output streams as `execute.log` notifications carrying the request's invocation id, and the final result still holds the full output.", "protocol.md A.6, D.9"),
    req("SYNC-1", Must, "environmentSyncIn/environmentSyncOut transfer files and directories with their bytes and modes, honour excludes, and run postUploadCommands in order.", "protocol.md D.10"),
    req("LIFE-RELEASE-1", Must, "environmentReleaseLease answers null or a termination receipt naming the lease.", "protocol.md D.1, D.6"),
    req("LIFE-RESUME-1", Must, "environmentResumeLease of a live lease returns that lease.", "protocol.md D.5"),
    req("LIFE-RESUME-2", Must, "environmentResumeLease of a destroyed lease returns `{providerLeaseId: null, metadata}`.", "protocol.md D.5"),
    req("LIFE-DESTROY-1", Must, "environmentDestroyLease is idempotent: destroying twice succeeds, and receipts name the lease.", "protocol.md D.6"),
    req("LIFE-STOP-1", Must, "environmentStopLease answers a receipt with state `stopped` naming the lease, and keeps the lease's files.", "decisions.md D6; protocol.md D.7"),
    req("ENV-ALLOW-1", Must, "Every `error.data` is an allowlisted envelope (creation-cleanup, sync-error, stop-error) with no other keys.", "protocol.md B, F.2; decisions.md D6"),
    req("SECRET-1", Must, "Secrets planted in the config never appear in any stdout or stderr byte, error message or envelope.", "protocol.md A.7, H.4"),
    req("IDLE-SEAL-1", Must, "After `prepareIdleSleep` answers `none`, every other call is refused until `releaseIdleSleep` names the same owner; another owner's release changes nothing.", "decisions.md D12 (worker-rpc-host.ts, idle-drain.ts)"),
    req("IDLE-BUSY-1", Must, "While a command runs, `prepareIdleSleep` never answers `none`.", "decisions.md D12 (idle-drain.ts)"),
    req("TASK-PAIR-1", Must, "environmentTask refuses an operation outside its union and answers each operation with its result kind and the request's taskId.", "decisions.md D12 (environment-tasks.ts)"),
    req("DUPLEX-1", Must, "A duplex channel runs its command in the lease: written bytes reach it, its output arrives as `duplexChannel.data` (base64, bound to the route and session), its exit as one `duplexChannel.exit`, and close acknowledges the route.", "decisions.md D12 (protocol.ts)"),
    req("SHUT-1", Must, "The worker exits within 10 s of `shutdown`.", "protocol.md A.4"),
    req("SHUT-2", Must, "The worker exits when stdin reaches end of file.", "protocol.md A.4"),
    req("SHUT-3", Must, "No process the worker started survives it: neither its process group nor a command still running at shutdown.", "protocol.md A.4, K (item 4)"),
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
    fn ids_are_unique_and_references_point_into_the_contract() {
        let mut ids: Vec<_> = REQUIREMENTS.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), REQUIREMENTS.len());
        for r in REQUIREMENTS {
            assert!(r.reference.contains("protocol.md") || r.reference.contains("decisions.md"));
        }
    }
}
