//! The write-ahead lease ledger of a run: a file that lists every lease the run may have
//! created, written *before* each acquire is sent and again when its answer arrives, so that a
//! run that is interrupted (SIGINT, SIGTERM) or killed (SIGKILL) leaves behind a list of what to
//! destroy — and the worker command and config needed to destroy it.
//!
//! One JSON object per line, appended and flushed one `write` at a time (a killed run leaves
//! every line it wrote whole, but the last may be cut; the reader skips a cut last line):
//!
//! | `record` | Written | Fields |
//! |---|---|---|
//! | `run` | when the file is created | `version`, `harness`, `pid`, `command` (`program`, `args`, `env`, `cwd`) |
//! | `manifest` | at the first `initialize` | `manifest` |
//! | `acquiring` | before an acquire is sent | `attempt`, `environmentId` |
//! | `lease` | when an acquire or resume answers a lease, or an acquire fails with a creation-cleanup envelope | `attempt`, `providerLeaseId`, `metadata`, `params` (`driverKey`, `companyId`, `environmentId`, `config`) |
//! | `answered` | when an acquire answers without a lease | `attempt` |
//! | `destroyed` | when a destroy of a lease succeeds | `providerLeaseId` |
//!
//! The file is created with mode `0600` (it holds the run's config, secrets included, as the
//! worker needs it to destroy) and locked (`flock`) while its run lives, so `sweep` never
//! touches the ledger of a running harness. A run that ends normally removes its file when
//! nothing in it is left to destroy.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::envelope::read_creation_cleanup;
use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Map, Value};

use crate::host::Reply;
use crate::process::{RedactedValues, WorkerCommand};

/// The version of the ledger's line format.
pub(crate) const LEDGER_VERSION: u64 = 1;

/// The file name prefix of ledger files inside a run directory.
pub(crate) const FILE_PREFIX: &str = "ledger-";

/// The run directory used when `--run-dir` is not given: `$XDG_STATE_HOME/sandbox-conformance`,
/// else `$HOME/.local/state/sandbox-conformance`, else `sandbox-conformance` in the temp dir.
pub(crate) fn default_run_dir() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("XDG_STATE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("sandbox-conformance")
}

/// A lease a ledger lists as possibly live: what `sweep` destroys. Its `Debug` shows the
/// config's keys, not their values (they may be secrets).
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct LedgerLease {
    /// The provider lease id.
    pub provider_lease_id: String,
    /// The lease metadata to send back (`leaseMetadata`).
    pub metadata: Value,
    /// `driverKey`, `companyId`, `environmentId` and `config` of the call that made it.
    pub params: Map<String, Value>,
}

/// What a ledger file holds, folded: the worker, and what may still exist. Its `Debug` shows
/// no config or environment value (they may be secrets).
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub(crate) struct LedgerContents {
    /// The worker command of the run.
    pub command: Option<WorkerCommand>,
    /// The pid of the run that wrote the file.
    pub pid: Option<u64>,
    /// The manifest the run initialized its workers with.
    pub manifest: Option<Value>,
    /// The leases not known to be destroyed, in the order they were made.
    pub leases: Vec<LedgerLease>,
    /// Acquires sent and never answered: whatever they made, if anything, the ledger cannot name.
    pub unanswered: usize,
}

/// The keys of a JSON object whose values may be secrets (`<redacted>` when not an object).
fn redacted(v: &Value) -> Box<dyn fmt::Debug + '_> {
    match v.as_object() {
        Some(m) => Box::new(RedactedValues(m.keys().map(String::as_str).collect())),
        None => Box::new(RedactedValues(vec![])),
    }
}

impl fmt::Debug for LedgerLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Params<'a>(&'a Map<String, Value>);
        impl fmt::Debug for Params<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut m = f.debug_map();
                for (k, v) in self.0 {
                    match k.as_str() {
                        "config" => m.entry(k, &redacted(v)),
                        _ => m.entry(k, v),
                    };
                }
                m.finish()
            }
        }
        f.debug_struct("LedgerLease")
            .field("provider_lease_id", &self.provider_lease_id)
            .field("metadata", &self.metadata)
            .field("params", &Params(&self.params))
            .finish()
    }
}

impl fmt::Debug for LedgerContents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LedgerContents")
            .field("command", &self.command)
            .field("pid", &self.pid)
            .field("manifest", &self.manifest)
            .field("leases", &self.leases)
            .field("unanswered", &self.unanswered)
            .finish()
    }
}

impl LedgerContents {
    /// Folds the lines of a ledger file; a line that is not a JSON object (a cut last line) is
    /// skipped.
    pub(crate) fn parse(text: &str) -> LedgerContents {
        let mut c = LedgerContents::default();
        let mut attempts = BTreeSet::new();
        for v in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            match v.get("record").and_then(Value::as_str) {
                Some("run") => {
                    c.pid = v.get("pid").and_then(Value::as_u64);
                    c.command = v.get("command").and_then(command_from_json);
                }
                Some("manifest") => c.manifest = v.get("manifest").cloned(),
                Some("acquiring") => {
                    attempts.extend(s("attempt"));
                }
                Some("answered") => {
                    attempts.remove(&s("attempt").unwrap_or_default());
                }
                Some("lease") => {
                    attempts.remove(&s("attempt").unwrap_or_default());
                    let Some(id) = s("providerLeaseId") else { continue };
                    c.leases.retain(|l| l.provider_lease_id != id);
                    c.leases.push(LedgerLease {
                        provider_lease_id: id,
                        metadata: v.get("metadata").cloned().unwrap_or(json!({})),
                        params: v
                            .get("params")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                    });
                }
                Some("destroyed") => {
                    let id = s("providerLeaseId").unwrap_or_default();
                    c.leases.retain(|l| l.provider_lease_id != id);
                }
                _ => {}
            }
        }
        c.unanswered = attempts.len();
        c
    }
}

/// What an acquire that was sent and never answered means for removing a ledger file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// It keeps the file: what it made, if anything, may still be learned or cleaned up from
    /// the file (the run itself, at its end or on an interrupt).
    KeepFile,
    /// It was reported to the user, who is told the ledger cannot name what it made: it no
    /// longer keeps the file. Only `sweep` of a killed run's file, which can never learn more
    /// about such an acquire than the file says, removes a file so.
    Reported,
}

/// The one rule for removing a ledger file: every lease it lists has ended — destroyed (it is
/// no longer in `live`) or released (its id is in `released`; a worker without destroy ends its
/// leases so) — and no acquire is unanswered, unless `unanswered` says they were
/// [reported](Unanswered::Reported).
pub(crate) fn removable(
    live: &[LedgerLease],
    released: &BTreeSet<String>,
    unanswered: usize,
    policy: Unanswered,
) -> bool {
    live.iter().all(|l| released.contains(&l.provider_lease_id))
        && (unanswered == 0 || policy == Unanswered::Reported)
}

fn command_to_json(c: &WorkerCommand) -> Value {
    json!({"program": c.program, "args": c.args, "env": c.env, "cwd": c.cwd})
}

fn command_from_json(v: &Value) -> Option<WorkerCommand> {
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array()?.iter().map(|s| s.as_str().map(str::to_owned)).collect()
    };
    let env = v
        .get("env")?
        .as_array()?
        .iter()
        .map(|p| Some((p.get(0)?.as_str()?.to_owned(), p.get(1)?.as_str()?.to_owned())))
        .collect::<Option<Vec<_>>>()?;
    Some(WorkerCommand {
        program: v.get("program")?.as_str()?.to_owned(),
        args: strings(v.get("args"))?,
        env,
        cwd: v.get("cwd").and_then(Value::as_str).map(PathBuf::from),
    })
}

/// Locks `file` for this process (`flock`, exclusive, not waiting): false when another
/// process holds it.
pub(crate) fn try_lock(file: &File) -> bool {
    // SAFETY: flock on a file descriptor this `File` owns; no memory is passed.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

struct State {
    file: File,
    manifest: Option<Value>,
    /// Config keys whose value the ledger records as the original (a chaos run routes them
    /// through its proxy, which is gone once the run is).
    restore: Map<String, Value>,
    /// Folded as the reader folds the file.
    leases: Vec<LedgerLease>,
    /// Leases a release ended (kept in `leases`: the host's release may keep the resource).
    released: BTreeSet<String>,
    pending: BTreeSet<String>,
    failed: Option<String>,
    /// Set by [`LedgerFile::interrupt`]; read and set only under the lock, together with
    /// `pending`, so that no acquire can be admitted after the interrupt counted the acquires
    /// in flight.
    interrupted: bool,
    /// Set by [`LedgerFile::finish`]: the run ended normally, and its main thread owns the
    /// file and the exit; an interrupt after this point leaves both alone.
    finished: bool,
}

struct Inner {
    path: PathBuf,
    /// The worker command of the run (what an interrupt destroys with; kept in memory, so
    /// the cleanup does not depend on the file).
    command: WorkerCommand,
    state: Mutex<State>,
    answered: Condvar,
}

/// A run's write-ahead lease ledger: a file (mode `0600`, locked while the run lives) that
/// lists every lease the run may have created, written before each acquire is sent and again
/// when its answer arrives, so that an interrupted or killed run leaves behind what to destroy
/// (`sandbox-conformance sweep`). Cloned handles share one file. Its
/// `Debug` shows no config or environment value (they may be secrets).
#[derive(Clone)]
pub struct LedgerFile(Arc<Inner>);

impl fmt::Debug for LedgerFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LedgerFile");
        d.field("path", &self.0.path).field("command", &self.0.command);
        // Not waiting: a Debug call must not block on (or deadlock with) the ledger's user.
        match self.0.state.try_lock() {
            Ok(s) => d
                .field("leases", &s.leases)
                .field("restore", &RedactedValues(s.restore.keys().map(String::as_str).collect()))
                .field("released", &s.released)
                .field("pending", &s.pending)
                .field("interrupted", &s.interrupted)
                .field("finished", &s.finished)
                .field("failed", &s.failed),
            Err(_) => d.field("state", &"<locked>"),
        };
        d.finish_non_exhaustive()
    }
}

impl LedgerFile {
    /// Creates a new ledger file in `dir` (created when absent) for a run of `command`, and
    /// locks it for this process.
    pub fn create(dir: &Path, command: &WorkerCommand) -> io::Result<LedgerFile> {
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let path = dir.join(format!(
            "{FILE_PREFIX}{started}-{}-{}.jsonl",
            std::process::id(),
            crate::ids::hex(4)
        ));
        let file =
            std::fs::OpenOptions::new().append(true).create_new(true).mode(0o600).open(&path)?;
        if !try_lock(&file) {
            return Err(io::Error::other("the new ledger file is locked by another process"));
        }
        let ledger = LedgerFile(Arc::new(Inner {
            path,
            command: command.clone(),
            state: Mutex::new(State {
                file,
                manifest: None,
                restore: Map::new(),
                leases: vec![],
                released: BTreeSet::new(),
                pending: BTreeSet::new(),
                failed: None,
                interrupted: false,
                finished: false,
            }),
            answered: Condvar::new(),
        }));
        let header = json!({
            "record": "run", "version": LEDGER_VERSION, "harness": env!("CARGO_PKG_VERSION"),
            "pid": std::process::id(), "command": command_to_json(command),
        });
        ledger.write(&mut ledger.lock(), &header);
        let failed = ledger.lock().failed.take();
        match failed {
            Some(e) => Err(io::Error::other(e)),
            None => Ok(ledger),
        }
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self, state: &mut State, record: &Value) {
        let mut line = record.to_string();
        line.push('\n');
        if let Err(e) = state.file.write_all(line.as_bytes()) {
            state.failed.get_or_insert_with(|| e.to_string());
        }
    }

    /// Records `original` as the value of config key `key` (a chaos run rewrites it to its
    /// proxy's address, which does not outlive the run).
    pub(crate) fn restore_config(&self, key: &str, original: Value) {
        self.lock().restore.insert(key.to_owned(), original);
    }

    /// Records the manifest workers are initialized with (the first one only).
    pub(crate) fn manifest(&self, manifest: &Value) {
        let mut s = self.lock();
        if s.manifest.is_none() {
            s.manifest = Some(manifest.clone());
            self.write(&mut s, &json!({"record": "manifest", "manifest": manifest}));
        }
    }

    /// The manifest recorded (`{}` before any worker was initialized).
    pub(crate) fn manifest_value(&self) -> Value {
        self.lock().manifest.clone().unwrap_or_else(|| json!({}))
    }

    /// Ends an interrupted run's leases: no acquire is sent any more, the acquires in flight
    /// get up to `wait` to be answered, then every lease the ledger lists is destroyed through
    /// a fresh worker started from the run's command; the file is removed when nothing is left.
    /// `announce` is called once the run is marked interrupted. `None` when the run had already
    /// [finished](Self::finish): its main thread owns the file and the exit, and the interrupt
    /// does nothing.
    pub(crate) fn end_interrupted_run(
        &self,
        wait: Duration,
        announce: impl FnOnce(),
    ) -> Option<crate::sweep::SweepOutcome> {
        let unanswered = self.mark_interrupted(wait, true, announce)?;
        let leases = self.live();
        let manifest = self.manifest_value();
        let mut out =
            crate::sweep::end_leases(&self.0.command, &manifest, &leases, |id| self.destroyed(id));
        out.unanswered = unanswered;
        let s = self.lock();
        if removable(&s.leases, &s.released, unanswered, Unanswered::KeepFile) {
            let _ = std::fs::remove_file(&self.0.path);
        }
        Some(out)
    }

    /// True once the run was interrupted.
    pub fn is_interrupted(&self) -> bool {
        self.lock().interrupted
    }

    /// Written before an acquire with `params` is sent. Once the run is interrupted no acquire
    /// is sent any more: the calling thread waits here until the process exits. The check and
    /// the admission of the acquire (into the acquires in flight the interrupt waits for) are
    /// one step under the lock: an acquire is either counted by the interrupt or never sent.
    pub(crate) fn before_acquire(&self, attempt: &str, params: &Value) {
        let mut s = self.lock();
        if s.interrupted {
            drop(s);
            loop {
                std::thread::park();
            }
        }
        s.pending.insert(attempt.to_owned());
        let env = params.get("environmentId").cloned().unwrap_or(Value::Null);
        self.write(
            &mut s,
            &json!({"record": "acquiring", "attempt": attempt, "environmentId": env}),
        );
    }

    /// Records the answer to `method` (sent with `params` as `attempt`): a lease, a
    /// creation-cleanup envelope, a destroy.
    pub(crate) fn answered(&self, attempt: &str, method: &str, params: &Value, reply: &Reply) {
        let mut s = self.lock();
        let was_pending = s.pending.remove(attempt);
        let lease = match (method, reply) {
            (
                name::ENVIRONMENT_ACQUIRE_LEASE | name::ENVIRONMENT_RESUME_LEASE,
                Reply::Result(v),
            ) => crate::ledger::Lease::from_result(v).map(|l| (l.id, l.metadata)),
            (name::ENVIRONMENT_ACQUIRE_LEASE, Reply::Error(e)) => {
                e.data.as_ref().and_then(read_creation_cleanup).map(|o| {
                    let id = o.provider_lease_id().to_owned();
                    (id, json!({"failedCreateCleanup": o.to_json()}))
                })
            }
            (name::ENVIRONMENT_RELEASE_LEASE, Reply::Result(_)) => {
                if let Some(id) = params.get("providerLeaseId").and_then(Value::as_str) {
                    s.released.insert(id.to_owned());
                }
                None
            }
            (name::ENVIRONMENT_DESTROY_LEASE, Reply::Result(_)) => {
                if let Some(id) = params.get("providerLeaseId").and_then(Value::as_str) {
                    s.leases.retain(|l| l.provider_lease_id != id);
                    let record = json!({"record": "destroyed", "providerLeaseId": id});
                    self.write(&mut s, &record);
                }
                None
            }
            _ => None,
        };
        match lease {
            Some((id, metadata)) => {
                let mut p = Map::new();
                for k in ["driverKey", "companyId", "environmentId", "config"] {
                    p.insert(k.into(), params.get(k).cloned().unwrap_or(Value::Null));
                }
                if let Some(config) = p.get_mut("config").and_then(Value::as_object_mut) {
                    for (k, v) in &s.restore {
                        config.insert(k.clone(), v.clone());
                    }
                }
                let record = json!({"record": "lease", "attempt": attempt,
                    "providerLeaseId": id, "metadata": metadata, "params": p});
                self.write(&mut s, &record);
                s.leases.retain(|l| l.provider_lease_id != id);
                s.leases.push(LedgerLease { provider_lease_id: id, metadata, params: p });
            }
            None if was_pending => {
                self.write(&mut s, &json!({"record": "answered", "attempt": attempt}));
            }
            None => {}
        }
        if was_pending {
            self.0.answered.notify_all();
        }
    }

    /// An acquire that will never be answered (its session ended first): the interrupt no
    /// longer waits for it; the file keeps it as unanswered.
    pub(crate) fn abandoned(&self, attempt: &str) {
        if self.lock().pending.remove(attempt) {
            self.0.answered.notify_all();
        }
    }

    /// The leases not known to be destroyed.
    pub fn live(&self) -> Vec<LedgerLease> {
        self.lock().leases.clone()
    }

    /// Marks the run interrupted (no acquire is sent any more) and waits up to `wait` for the
    /// acquires in flight to be answered, so that the leases they make are listed too. Returns
    /// how many are still unanswered.
    pub fn interrupt(&self, wait: Duration) -> usize {
        self.mark_interrupted(wait, false, || {}).unwrap_or(0)
    }

    /// [`interrupt`](Self::interrupt); with `unless_finished`, nothing is marked and `None`
    /// returned when the run already [finished](Self::finish) (checked under the same lock).
    /// `marked` is called once the run is marked interrupted.
    fn mark_interrupted(
        &self,
        wait: Duration,
        unless_finished: bool,
        marked: impl FnOnce(),
    ) -> Option<usize> {
        let deadline = Instant::now() + wait;
        let mut s = self.lock();
        if unless_finished && s.finished {
            return None;
        }
        s.interrupted = true;
        drop(s);
        marked();
        let mut s = self.lock();
        loop {
            let now = Instant::now();
            if s.pending.is_empty() || now >= deadline {
                return Some(s.pending.len());
            }
            s = self
                .0
                .answered
                .wait_timeout(s, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Records leases destroyed outside a session (by the interrupt's sweep).
    pub(crate) fn destroyed(&self, id: &str) {
        let mut s = self.lock();
        s.leases.retain(|l| l.provider_lease_id != id);
        self.write(&mut s, &json!({"record": "destroyed", "providerLeaseId": id}));
    }

    /// Ends the ledger of a run: the file is removed when every lease it lists was destroyed
    /// or released (a worker without destroy ends its leases so) and no acquire is unanswered;
    /// otherwise it is kept (for `sweep`) and its path returned. A write that failed during the
    /// run is an error (the ledger may be incomplete). Once the run was
    /// [interrupted](Self::interrupt), the interrupt's cleanup owns the file: it is kept and its
    /// path returned.
    pub fn finish(&self) -> io::Result<Option<PathBuf>> {
        let mut s = self.lock();
        if s.interrupted {
            return Ok(Some(self.0.path.clone()));
        }
        s.finished = true;
        if let Some(e) = &s.failed {
            return Err(io::Error::other(format!("a ledger write failed: {e}")));
        }
        if removable(&s.leases, &s.released, s.pending.len(), Unanswered::KeepFile) {
            std::fs::remove_file(&self.0.path)?;
            return Ok(None);
        }
        Ok(Some(self.0.path.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_protocol::jsonrpc::ErrorObject;

    fn command() -> WorkerCommand {
        WorkerCommand {
            program: "w".into(),
            args: vec!["a".into()],
            env: vec![("K".into(), "v".into())],
            cwd: None,
        }
    }

    #[test]
    fn the_file_lists_what_may_be_live_and_is_removed_when_nothing_is() {
        let dir = std::env::temp_dir().join(format!("pcconf-ledger-unit-{}", std::process::id()));
        let l = LedgerFile::create(&dir, &command()).unwrap();
        // A second process cannot lock it (flock is per open file description).
        let other = File::open(l.path()).unwrap();
        assert!(!try_lock(&other));
        l.restore_config("apiUrl", json!("http://backend"));
        l.manifest(&json!({"id": "m"}));
        let params = json!({"driverKey": "d", "companyId": "c", "environmentId": "e",
                            "config": {"apiUrl": "http://proxy", "k": 1}});
        l.before_acquire("main/1", &params);
        l.before_acquire("main/2", &params);
        l.before_acquire("main/3", &params);
        let lease = Reply::Result(json!({"providerLeaseId": "l1", "metadata": {"m": 1}}));
        l.answered("main/1", name::ENVIRONMENT_ACQUIRE_LEASE, &params, &lease);
        let refused = Reply::Error(ErrorObject::new(-32000, "no"));
        l.answered("main/2", name::ENVIRONMENT_ACQUIRE_LEASE, &params, &refused);
        let text = std::fs::read_to_string(l.path()).unwrap();
        let c = LedgerContents::parse(&text);
        assert_eq!(c.command, Some(command()));
        assert_eq!(c.manifest, Some(json!({"id": "m"})));
        assert_eq!(c.unanswered, 1, "main/3 is unanswered");
        assert_eq!(c.leases.len(), 1);
        assert_eq!(c.leases[0].metadata, json!({"m": 1}));
        assert_eq!(c.leases[0].params["config"], json!({"apiUrl": "http://backend", "k": 1}));
        // A cut last line is skipped.
        let cut = LedgerContents::parse(&format!("{text}{{\"record\": \"destr"));
        assert_eq!(cut, c);
        l.abandoned("main/3");
        assert_eq!(l.finish().unwrap().as_deref(), Some(l.path()), "l1 is live: kept");
        // A released lease no longer keeps the file of a run that ends normally, but a sweep
        // of a killed run's file still destroys it (a release may keep the resource).
        let by_id = json!({"providerLeaseId": "l1"});
        l.answered("main/5", name::ENVIRONMENT_RELEASE_LEASE, &by_id, &Reply::Result(json!({})));
        assert_eq!(l.live().len(), 1);
        assert_eq!(l.finish().unwrap(), None);
        assert!(!l.path().exists());
        let l = LedgerFile::create(&dir, &command()).unwrap();
        l.before_acquire("main/1", &params);
        l.answered("main/1", name::ENVIRONMENT_ACQUIRE_LEASE, &params, &lease);
        let by_id = json!({"providerLeaseId": "l1"});
        l.answered("main/4", name::ENVIRONMENT_DESTROY_LEASE, &by_id, &Reply::Result(json!({})));
        assert!(LedgerContents::parse(&std::fs::read_to_string(l.path()).unwrap())
            .leases
            .is_empty());
        assert_eq!(l.finish().unwrap(), None);
        assert!(!l.path().exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An acquire that reaches the ledger as the run is interrupted is either counted among the
    /// acquires in flight or never sent: it cannot pass the check, wait for the lock while the
    /// interrupt finds nothing in flight, and then be sent unrecorded.
    #[test]
    fn an_acquire_waiting_while_the_run_is_interrupted_is_not_sent() {
        let dir = std::env::temp_dir().join(format!("pcconf-ledger-race-{}", std::process::id()));
        let l = LedgerFile::create(&dir, &command()).unwrap();
        let guard = l.lock();
        let (sent, was_sent) = std::sync::mpsc::channel();
        let acquiring = l.clone();
        std::thread::spawn(move || {
            acquiring.before_acquire("main/1", &json!({"environmentId": "e"}));
            let _ = sent.send(());
        });
        // The acquire now waits for the lock; the interrupt marks the run under it.
        std::thread::sleep(Duration::from_millis(300));
        let mut s = guard;
        s.interrupted = true;
        drop(s);
        assert_eq!(l.interrupt(Duration::ZERO), 0, "nothing was admitted");
        let outcome = was_sent.recv_timeout(Duration::from_millis(500));
        assert!(outcome.is_err(), "the acquire went on after the interrupt");
        let text = std::fs::read_to_string(l.path()).unwrap();
        assert!(!text.contains("acquiring"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The interrupt's cleanup and the end of a run exclude each other: a run that finishes
    /// after it was interrupted keeps its file (the cleanup reads and removes it), and an
    /// interrupt after the run finished does nothing.
    #[test]
    fn finish_and_the_interrupt_cleanup_exclude_each_other() {
        let dir = std::env::temp_dir().join(format!("pcconf-ledger-end-{}", std::process::id()));
        let l = LedgerFile::create(&dir, &command()).unwrap();
        l.before_acquire("main/1", &json!({}));
        assert_eq!(l.interrupt(Duration::from_millis(10)), 1, "main/1 is in flight");
        l.abandoned("main/1");
        assert_eq!(l.interrupt(Duration::ZERO), 0);
        assert_eq!(l.finish().unwrap().as_deref(), Some(l.path()), "the cleanup owns it");
        assert!(l.path().exists());
        let l = LedgerFile::create(&dir, &command()).unwrap();
        assert_eq!(l.finish().unwrap(), None);
        let announced = std::cell::Cell::new(false);
        let out = l.end_interrupted_run(Duration::ZERO, || announced.set(true));
        assert!(out.is_none() && !announced.get(), "the run had finished");
        assert!(!l.is_interrupted());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_is_removable_when_every_lease_ended_and_no_acquire_is_unanswered() {
        let lease = |id: &str| LedgerLease {
            provider_lease_id: id.into(),
            metadata: json!({}),
            params: Map::new(),
        };
        let none = BTreeSet::new();
        let released = BTreeSet::from(["l1".to_owned()]);
        let keep = Unanswered::KeepFile;
        assert!(removable(&[], &none, 0, keep), "every lease destroyed");
        assert!(!removable(&[lease("l1")], &none, 0, keep), "l1 is live");
        assert!(removable(&[lease("l1")], &released, 0, keep), "l1 was released");
        assert!(!removable(&[lease("l1"), lease("l2")], &released, 0, keep), "l2 is live");
        assert!(!removable(&[], &none, 1, keep), "an acquire is unanswered");
        assert!(removable(&[], &none, 1, Unanswered::Reported), "sweep reported it");
        assert!(!removable(&[lease("l2")], &none, 1, Unanswered::Reported), "l2 is live");
    }

    /// No config value, restored config value or environment value reaches `Debug`.
    #[test]
    fn debug_output_shows_no_secret() {
        let dir = std::env::temp_dir().join(format!("pcconf-ledger-debug-{}", std::process::id()));
        let mut cmd = command();
        cmd.env.push(("WORKER_TOKEN".into(), "sentinel-env-3f9a".into()));
        let l = LedgerFile::create(&dir, &cmd).unwrap();
        l.restore_config("apiUrl", json!("http://sentinel-restore-3f9a"));
        let params = json!({"driverKey": "d", "companyId": "c", "environmentId": "e",
                            "config": {"apiKey": "sentinel-config-3f9a", "apiUrl": "x"}});
        l.before_acquire("main/1", &params);
        let lease = Reply::Result(json!({"providerLeaseId": "l1", "metadata": {}}));
        l.answered("main/1", name::ENVIRONMENT_ACQUIRE_LEASE, &params, &lease);
        let contents = LedgerContents::parse(&std::fs::read_to_string(l.path()).unwrap());
        assert!(format!("{contents:?}").contains("apiKey"), "{contents:?}");
        for text in [format!("{l:?}"), format!("{:?}", l.live()), format!("{contents:?}")] {
            assert!(!text.contains("sentinel"), "{text}");
            assert!(text.contains("apiKey") && text.contains("l1"), "{text}");
        }
        assert!(format!("{l:?}").contains("WORKER_TOKEN"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
