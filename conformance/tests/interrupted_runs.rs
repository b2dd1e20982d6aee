//! Nothing is left behind when a run is interrupted: a run sent SIGTERM (stateful or fixed
//! checks) destroys what its write-ahead lease ledger lists and exits 143; a run killed with
//! SIGKILL leaves its ledger, and `sandbox-conformance sweep` destroys what it lists.
//!
//! The worker is the official-SDK fixture `stateful-worker.mjs`, whose leases are directories
//! `lease-*` under `$PAPERCLIP_FIXTURE_ROOT`: a lease left behind is a directory left there.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Generous: the suite must pass on a loaded machine.
const GUARD: Duration = Duration::from_secs(300);

struct Run {
    dir: support::TempDir,
    root: PathBuf,
    run_dir: PathBuf,
}

impl Run {
    fn new(name: &str) -> Option<Run> {
        if !support::node_available() {
            eprintln!("skipped: `node` is not on PATH");
            return None;
        }
        let fixture = support::tests_dir().join("fixtures/official-sdk-worker");
        support::ensure_npm_project(&fixture, "@paperclipai/plugin-sdk");
        let dir = support::temp_dir("interrupted", name);
        let root = dir.join("root");
        std::fs::create_dir_all(&root).unwrap();
        Some(Run { run_dir: dir.join("run"), root, dir })
    }

    /// Starts `sandbox-conformance run <mode…>` against the fixture worker.
    fn start(&self, mode: &[&str]) -> Child {
        let fixture = support::tests_dir().join("fixtures/official-sdk-worker");
        let manifest = fixture.join("stateful-manifest.json");
        let worker = fixture.join("stateful-worker.mjs");
        let out = std::fs::File::create(self.dir.join("stdout")).unwrap();
        let err = std::fs::File::create(self.dir.join("stderr")).unwrap();
        Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
            .arg("run")
            .args(mode)
            .arg("--run-dir")
            .arg(&self.run_dir)
            .arg("--env")
            .arg(format!("PAPERCLIP_FIXTURE_ROOT={}", self.root.display()))
            .arg("--env")
            .arg(format!("TMPDIR={}", self.root.display()))
            .arg("--manifest")
            .arg(manifest)
            .args(["--", "node"])
            .arg(worker)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// The lease directories the worker has made and not removed.
    fn leases(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("lease-"))
            .collect();
        names.sort();
        names
    }

    fn ledgers(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(&self.run_dir) {
            Ok(d) => d.filter_map(Result::ok).map(|e| e.path()).collect(),
            Err(_) => vec![],
        }
    }

    /// The lease ids the ledgers record as made (whatever happened to them later).
    fn recorded(&self) -> Vec<String> {
        let mut ids = vec![];
        for file in self.ledgers() {
            let text = std::fs::read_to_string(file).unwrap();
            for v in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
                if v["record"] == "lease" {
                    ids.extend(v["providerLeaseId"].as_str().map(str::to_owned));
                }
            }
        }
        ids
    }

    /// Waits until the worker holds a lease that the ledger already records.
    fn wait_for_recorded_lease(&self, child: &mut Child) {
        let deadline = Instant::now() + GUARD;
        loop {
            let leases = self.leases();
            if self.recorded().iter().any(|id| leases.contains(id)) {
                return;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the run ended before it held a lease ({status}): {}", self.stderr());
            }
            assert!(Instant::now() < deadline, "no lease within {GUARD:?}: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn signal(child: &Child, sig: i32) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

fn wait(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + GUARD;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the run did not exit within {GUARD:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERM mid-run: the run destroys every lease its ledger lists, removes the ledger and
/// exits 143.
fn sigterm_leaves_nothing(name: &str, mode: &[&str]) {
    let Some(run) = Run::new(name) else { return };
    let mut child = run.start(mode);
    run.wait_for_recorded_lease(&mut child);
    signal(&child, libc::SIGTERM);
    let status = wait(&mut child);
    let stderr = run.stderr();
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("interrupted (SIGTERM)"), "{stderr}");
    assert!(stderr.contains("destroyed"), "{stderr}");
    assert_eq!(run.leases(), Vec::<String>::new(), "leases left behind: {stderr}");
    assert_eq!(run.ledgers(), Vec::<PathBuf>::new(), "the ledger is removed: {stderr}");
}

#[test]
fn a_stateful_run_sent_sigterm_leaves_nothing() {
    sigterm_leaves_nothing("stateful-term", &["-q", "--stateful", "--cases", "500"]);
}

#[test]
fn a_fixed_check_run_sent_sigterm_leaves_nothing() {
    sigterm_leaves_nothing("fixed-term", &["-q", "--jobs", "2"]);
}

#[test]
fn a_killed_run_leaves_a_ledger_that_sweep_empties() {
    let Some(run) = Run::new("killed") else { return };
    let mut child = run.start(&["-q", "--stateful", "--cases", "500"]);
    run.wait_for_recorded_lease(&mut child);
    signal(&child, libc::SIGKILL);
    wait(&mut child);
    // The worker tree ends with the harness (its reaper sees the harness go); the leases stay.
    let left = run.leases();
    let recorded = run.recorded();
    let named: Vec<&String> = left.iter().filter(|l| recorded.contains(l)).collect();
    assert!(!named.is_empty(), "the killed run left leases its ledger names: {left:?}");
    assert_eq!(run.ledgers().len(), 1, "the ledger stays");

    let run_dir = run.run_dir.display().to_string();
    let out = support::harness(&["sweep", &run_dir]);
    let stderr = support::lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for id in &named {
        assert!(stderr.contains(id.as_str()), "sweep reports {id}: {stderr}");
    }
    // Whatever is left was made by an acquire the kill cut off before its answer: the ledger
    // cannot name it, and sweep says so.
    let after = run.leases();
    assert!(after.iter().all(|l| !recorded.contains(l)), "{after:?}: {stderr}");
    if !after.is_empty() {
        assert!(stderr.contains("never answered"), "{stderr}");
    }
    assert_eq!(run.ledgers(), Vec::<PathBuf>::new(), "the swept ledger is removed");

    let again = support::harness(&["sweep", &run_dir]);
    assert_eq!(again.status.code(), Some(0));
    assert!(support::lossy(&again.stderr).contains("no ledger file"));
}

/// A ledger whose worker cannot destroy (here: a worker that does not start) is kept, and
/// `sweep` exits 1 naming why.
#[test]
fn sweep_keeps_a_ledger_it_cannot_empty() {
    let dir = support::temp_dir("interrupted", "unsweepable");
    let file = dir.join("ledger-1-1-x.jsonl");
    let lines = [
        r#"{"record":"run","version":1,"pid":1,"command":{"program":"/nonexistent/worker","args":[],"env":[],"cwd":null}}"#,
        r#"{"record":"lease","attempt":"a","providerLeaseId":"l1","metadata":{},"params":{"config":{}}}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = support::harness(&["sweep", &dir.display().to_string()]);
    let stderr = support::lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the worker does not start"), "{stderr}");
    assert!(file.exists(), "the ledger is kept for a later sweep");
}

/// A run that ends normally removes its ledger: every lease was destroyed, or released by a
/// worker that has no destroy.
#[test]
fn a_run_that_ends_normally_leaves_no_ledger() {
    if !support::node_available() {
        eprintln!("skipped: `node` is not on PATH");
        return;
    }
    let fixture = support::tests_dir().join("fixtures/official-sdk-worker");
    support::ensure_npm_project(&fixture, "@paperclipai/plugin-sdk");
    let manifest = fixture.join("stateful-manifest.json").display().to_string();
    let stateful = fixture.join("stateful-worker.mjs").display().to_string();
    let no_destroy = support::tests_dir()
        .join("fixtures/broken/reusable-without-destroy.cjs")
        .display()
        .to_string();
    let dir = support::temp_dir("interrupted", "normal-end");
    for (name, worker, manifest) in
        [("destroys", &stateful, Some(&manifest)), ("releases", &no_destroy, None)]
    {
        let run_dir = dir.join(name).display().to_string();
        let mut args = vec!["run", "-q", "--filter", "lifecycle", "--run-dir", &run_dir];
        if let Some(m) = manifest {
            args.extend(["--manifest", m]);
        }
        args.extend(["--", "node", worker]);
        let out = support::harness(&args);
        let stderr = support::lossy(&out.stderr);
        let left: Vec<_> = std::fs::read_dir(&run_dir).unwrap().filter_map(Result::ok).collect();
        assert!(left.is_empty(), "{name}: the ledger is removed: {left:?}: {stderr}");
        assert!(!stderr.contains("still lists"), "{name}: {stderr}");
    }
}

/// `sweep -- WORKER` applies one worker command to the ledgers it finds: with more than one it
/// refuses (exit 2) and sweeps nothing.
#[test]
fn sweep_with_a_worker_refuses_more_than_one_ledger() {
    let dir = support::temp_dir("interrupted", "two-ledgers");
    let lines = [
        r#"{"record":"run","version":1,"pid":1,"command":{"program":"/nonexistent/worker","args":[],"env":[],"cwd":null}}"#,
        r#"{"record":"lease","attempt":"a","providerLeaseId":"l1","metadata":{},"params":{"config":{}}}"#,
    ];
    let files = [dir.join("ledger-1-1-x.jsonl"), dir.join("ledger-2-2-x.jsonl")];
    for file in &files {
        std::fs::write(file, lines.join("\n") + "\n").unwrap();
    }
    let out = support::harness(&["sweep", &dir.display().to_string(), "--", "/nonexistent/other"]);
    let stderr = support::lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("one worker command, and 2 ledger files"), "{stderr}");
    assert!(!stderr.contains("does not start"), "nothing is swept: {stderr}");
    assert!(files.iter().all(|f| f.exists()));
}
