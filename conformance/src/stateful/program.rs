//! The alphabet of stateful programs and the case file that keeps one.
//!
//! Operations name *logical* lease handles (`L0`…`L3`), never provider ids: a program replays
//! against any worker, and its ids are learnt as it runs.

use serde::{Deserialize, Serialize};

/// How a worker restart ends the old process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Restart {
    /// stdin reaches end of file.
    Eof,
    /// A `shutdown` request.
    Shutdown,
    /// SIGTERM to its process group.
    Sigterm,
    /// SIGKILL to its process group.
    Sigkill,
}

/// A fault the chaos proxy injects between the provider and its backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum FaultKind {
    /// Every chunk is delayed this long.
    Latency {
        /// The delay in ms.
        ms: u32,
    },
    /// Connections stay open and nothing more is forwarded, either way.
    Hang,
    /// Connections are closed at once (TCP: with a reset).
    Reset,
    /// A response is cut after this many bytes and its connection closed.
    Truncate {
        /// Bytes of the response let through.
        bytes: u32,
    },
    /// New connections are refused (accepted and closed before any byte).
    Refuse,
}

/// One step of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "op")]
pub enum Op {
    /// `environmentAcquireLease` into handle `h`.
    Acquire {
        /// The handle.
        h: u8,
    },
    /// `environmentRealizeWorkspace`.
    Realize {
        /// The handle.
        h: u8,
    },
    /// An execute that writes a fresh nonce to file `file` of the lease's cwd with `mode`.
    Write {
        /// The handle.
        h: u8,
        /// The file number.
        file: u8,
        /// Its mode (octal digits as a number, e.g. 0o644).
        mode: u32,
    },
    /// An execute that reads file `file` back with its mode.
    Read {
        /// The handle.
        h: u8,
        /// The file number.
        file: u8,
    },
    /// An execute of `exit code`.
    Exit {
        /// The handle.
        h: u8,
        /// The exit code.
        code: u8,
    },
    /// `environmentSyncIn` of the files in `files` (a bit set: bit `n` is file `n`), each a
    /// fresh nonce in a file mapping with `mode`, straight into the lease's cwd.
    SyncIn {
        /// The handle.
        h: u8,
        /// The files (bit set).
        files: u8,
        /// Their mode (octal digits as a number, e.g. 0o644).
        mode: u32,
    },
    /// `environmentSyncOut` of the files in `files` (a bit set) to a host temp dir.
    SyncOut {
        /// The handle.
        h: u8,
        /// The files (bit set).
        files: u8,
    },
    /// `environmentReleaseLease`.
    Release {
        /// The handle.
        h: u8,
    },
    /// `environmentResumeLease`.
    Resume {
        /// The handle.
        h: u8,
    },
    /// `environmentStopLease` (stop and retain).
    Stop {
        /// The handle.
        h: u8,
    },
    /// `environmentDestroyLease`.
    Destroy {
        /// The handle.
        h: u8,
    },
    /// Two writes in one lease, both sent before either is awaited.
    PairWrite {
        /// The handle.
        h: u8,
        /// The first file.
        a: u8,
        /// The second file.
        b: u8,
    },
    /// Two destroys of one lease, both sent before either is awaited.
    PairDestroy {
        /// The handle.
        h: u8,
    },
    /// The worker process is ended and a new one started.
    Restart {
        /// How the old one ends.
        how: Restart,
    },
    /// `environmentProbe`.
    Probe,
    /// Chaos: arm a fault that starts with the `after`-th backend request from now.
    Fault {
        /// The fault.
        fault: FaultKind,
        /// Requests let through first.
        after: u8,
    },
    /// Chaos: end the fault; hung connections are closed.
    Heal,
}

impl Op {
    /// The handle the operation acts on, if any.
    pub fn handle(&self) -> Option<u8> {
        match *self {
            Op::Acquire { h }
            | Op::Realize { h }
            | Op::Write { h, .. }
            | Op::Read { h, .. }
            | Op::Exit { h, .. }
            | Op::SyncIn { h, .. }
            | Op::SyncOut { h, .. }
            | Op::Release { h }
            | Op::Resume { h }
            | Op::Stop { h }
            | Op::Destroy { h }
            | Op::PairWrite { h, .. }
            | Op::PairDestroy { h } => Some(h),
            Op::Restart { .. } | Op::Probe | Op::Fault { .. } | Op::Heal => None,
        }
    }

    /// A short line for programs in reports: `L0 write f1 0644`.
    pub fn describe(&self) -> String {
        let l = |h: u8| format!("L{h}");
        match *self {
            Op::Acquire { h } => format!("{} = acquire", l(h)),
            Op::Realize { h } => format!("realize {}", l(h)),
            Op::Write { h, file, mode } => format!("write {} f{file} (mode {mode:o})", l(h)),
            Op::Read { h, file } => format!("read {} f{file}", l(h)),
            Op::Exit { h, code } => format!("execute {} `exit {code}`", l(h)),
            Op::SyncIn { h, files, mode } => {
                format!("syncIn {} {} (mode {mode:o})", l(h), file_set(files))
            }
            Op::SyncOut { h, files } => format!("syncOut {} {}", l(h), file_set(files)),
            Op::Release { h } => format!("release {}", l(h)),
            Op::Resume { h } => format!("resume {}", l(h)),
            Op::Stop { h } => format!("stop {}", l(h)),
            Op::Destroy { h } => format!("destroy {}", l(h)),
            Op::PairWrite { h, a, b } => format!("write {0} f{a} || write {0} f{b}", l(h)),
            Op::PairDestroy { h } => format!("destroy {0} || destroy {0}", l(h)),
            Op::Restart { how } => format!("restart the worker ({how:?})"),
            Op::Probe => "probe".into(),
            Op::Fault { fault, after } => format!("fault {fault:?} after {after} requests"),
            Op::Heal => "heal".into(),
        }
    }
}

/// The file numbers of a bit set, lowest first.
pub fn files_of(set: u8) -> impl Iterator<Item = u8> {
    (0..8).filter(move |f| set & (1 << f) != 0)
}

/// `{f0,f2}`.
fn file_set(set: u8) -> String {
    let names: Vec<String> = files_of(set).map(|f| format!("f{f}")).collect();
    format!("{{{}}}", names.join(","))
}

/// The `kind` of a case file.
pub const CASE_KIND: &str = "paperclip-sandbox-stateful-case";

/// A kept case: the program, what it found, and where it came from. Replayed by
/// `sandbox-conformance replay CASE.json -- <worker>` and by `run --stateful --regressions DIR`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Case {
    /// Always [`CASE_KIND`].
    pub kind: String,
    /// The harness version that wrote it.
    pub harness: String,
    /// The run seed (hex) and the case index it was drawn from.
    pub seed: String,
    /// The case index within the run.
    pub case: u64,
    /// The invariant that failed (a check id, `stateful.*` or `chaos.*`).
    pub invariant: String,
    /// Its requirement.
    pub requirement: String,
    /// What the contract expects, and what the worker did.
    pub expected: String,
    /// What the worker did.
    pub actual: String,
    /// The program, shrunk.
    pub ops: Vec<Op>,
    /// Whether chaos faults were part of the run (the proxy is needed to replay it).
    #[serde(default)]
    pub chaos: bool,
    /// The steps as they ran: one line per call and answer.
    #[serde(default)]
    pub history: Vec<String>,
    /// The company the run scoped its calls to (`run --company`); `replay` scopes its calls to
    /// it unless `--company` names another. Absent in older files: the default company.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company: Option<String>,
}

/// A numbered program, one step a line.
pub fn listing(ops: &[Op]) -> String {
    ops.iter()
        .enumerate()
        .map(|(i, op)| format!("{}. {}", i + 1, op.describe()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_as_json() {
        let ops = vec![
            Op::Acquire { h: 0 },
            Op::Write { h: 0, file: 1, mode: 0o644 },
            Op::SyncIn { h: 0, files: 0b101, mode: 0o600 },
            Op::SyncOut { h: 0, files: 0b10 },
            Op::Restart { how: Restart::Sigkill },
            Op::Fault { fault: FaultKind::Truncate { bytes: 7 }, after: 1 },
            Op::Heal,
        ];
        let text = serde_json::to_string(&ops).unwrap();
        assert!(text.contains(r#"{"op":"write","h":0,"file":1,"mode":420}"#), "{text}");
        assert!(text.contains(r#""fault":{"kind":"truncate","bytes":7}"#), "{text}");
        assert!(text.contains(r#"{"op":"syncIn","h":0,"files":5,"mode":384}"#), "{text}");
        assert!(text.contains(r#"{"op":"syncOut","h":0,"files":2}"#), "{text}");
        let back: Vec<Op> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ops);
        assert_eq!(listing(&ops[..2]), "1. L0 = acquire\n2. write L0 f1 (mode 644)");
        assert_eq!(ops[2].describe(), "syncIn L0 {f0,f2} (mode 600)");
        assert_eq!(ops[3].describe(), "syncOut L0 {f1}");
    }
}
