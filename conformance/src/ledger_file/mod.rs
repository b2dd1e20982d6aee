//! The write-ahead lease ledger of a run: a file that lists every lease the run may have
//! created, written *before* each acquire is sent and again when its answer arrives, so that a
//! run that is interrupted (SIGINT, SIGTERM) or killed (SIGKILL) leaves behind a list of what to
//! destroy — and the worker command and config needed to destroy it.
//!
//! The line format and its reading are in [`records`]; where ledgers live and which run
//! directories are trusted, in [`run_dir`]; this module is the live file of a running harness.
//!
//! The file is created with mode `0600` (it holds the run's config, secrets included, as the
//! worker needs it to destroy) and locked (`flock`) while its run lives, so `sweep` never
//! touches the ledger of a running harness. A run that ends normally removes its file when
//! nothing in it is left to destroy.

mod records;
mod run_dir;

pub use records::LedgerLease;
pub(crate) use records::{removable, LedgerContents, Unanswered, FILE_PREFIX};
use run_dir::prepare_run_dir;
pub(crate) use run_dir::{check_trusted, default_run_dir};

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
use records::{command_to_json, LEDGER_VERSION};

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
    /// Creates a new ledger file in `dir` for a run of `command`, and locks it for this
    /// process. `dir` is created with mode `0700` when absent; a `dir` that is a symbolic link,
    /// belongs to another user or is writable by its group or by others is refused
    /// ([`io::ErrorKind::PermissionDenied`], naming the rule) and nothing is written there: a
    /// ledger names the program `sweep` runs.
    pub fn create(dir: &Path, command: &WorkerCommand) -> io::Result<LedgerFile> {
        use std::os::unix::fs::OpenOptionsExt as _;
        prepare_run_dir(dir)?;
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
        let manifest = self.manifest_value();
        let end = || {
            let leases = self.live();
            crate::sweep::end_leases(&self.0.command, &manifest, &leases, |id| self.destroyed(id))
        };
        let mut out = end();
        if !out.failed.is_empty() {
            // A command the run's own workers still run in a lease can race its destroy (a
            // file written while the directory is removed): end those workers' trees, then
            // try what failed once more.
            crate::reaper::end_every_worker_tree();
            let again = end();
            out.destroyed.extend(again.destroyed);
            out.failed = again.failed;
            out.skipped = out.skipped.or(again.skipped);
        }
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
