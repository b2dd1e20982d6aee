//! Nothing is left behind when a run is interrupted: a run sent SIGTERM (stateful or fixed
//! checks) destroys what its write-ahead lease ledger lists and exits 143; a run killed with
//! SIGKILL leaves its ledger, and `sandbox-conformance sweep` destroys what it lists. The same
//! holds for `replay` of a kept stateful case. A run directory someone else could write is
//! refused before anything is written there.
//!
//! The worker is the official-SDK fixture `stateful-worker.mjs`, whose leases are directories
//! `lease-*` under `$PAPERCLIP_FIXTURE_ROOT`: a lease left behind is a directory left there.

mod support;

use std::path::{Path, PathBuf};
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
        let worker = fixture.join("stateful-worker.mjs");
        let mut args: Vec<String> = vec!["run".into()];
        args.extend(mode.iter().map(|s| (*s).to_owned()));
        args.push("--env".into());
        args.push(format!("PAPERCLIP_FIXTURE_ROOT={}", self.root.display()));
        args.push("--env".into());
        args.push(format!("TMPDIR={}", self.root.display()));
        args.extend(["--".into(), "node".into(), worker.display().to_string()]);
        self.spawn(&args)
    }

    /// Starts `sandbox-conformance replay CASE` against the fixture worker (`replay` has no
    /// `--env`: the worker command is `env … node stateful-worker.mjs`).
    fn start_replay(&self, case: &Path) -> Child {
        let fixture = support::tests_dir().join("fixtures/official-sdk-worker");
        let worker = fixture.join("stateful-worker.mjs");
        let args = [
            "replay".into(),
            case.display().to_string(),
            "--".into(),
            "env".into(),
            format!("PAPERCLIP_FIXTURE_ROOT={}", self.root.display()),
            format!("TMPDIR={}", self.root.display()),
            "node".into(),
            worker.display().to_string(),
        ];
        self.spawn(&args)
    }

    /// Starts the harness with `args` (a subcommand, its options, `--` and the worker), adding
    /// `--run-dir` and the fixture's `--manifest` after the subcommand.
    fn spawn(&self, args: &[String]) -> Child {
        let fixture = support::tests_dir().join("fixtures/official-sdk-worker");
        let manifest = fixture.join("stateful-manifest.json");
        let out = std::fs::File::create(self.dir.join("stdout")).unwrap();
        let err = std::fs::File::create(self.dir.join("stderr")).unwrap();
        let (command, rest) = args.split_first().unwrap();
        Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
            .arg(command)
            .arg("--run-dir")
            .arg(&self.run_dir)
            .arg("--manifest")
            .arg(manifest)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap()
    }

    /// A kept stateful case that holds one lease for a long time: an acquire, then `writes`
    /// executes in it. `company`, when given, is the company the case records.
    fn long_case(&self, writes: usize, company: Option<&str>) -> PathBuf {
        let mut ops = vec![serde_json::json!({"op": "acquire", "h": 0})];
        for i in 0..writes {
            ops.push(serde_json::json!({"op": "write", "h": 0, "file": i % 8, "mode": 420}));
        }
        let mut case = serde_json::json!({
            "kind": "paperclip-sandbox-stateful-case", "harness": "test", "seed": "0x0",
            "case": 0, "invariant": "stateful.resume-destroyed", "requirement": "LIFE-RESUME-2",
            "expected": "", "actual": "", "ops": ops,
        });
        if let Some(company) = company {
            case["company"] = company.into();
        }
        let path = self.dir.join("long.case.json");
        std::fs::write(&path, case.to_string()).unwrap();
        path
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
    let child = run.start(mode);
    sigterm_leaves_nothing_of(&run, child);
}

fn sigterm_leaves_nothing_of(run: &Run, mut child: Child) {
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

/// A replay of a kept case holds real leases: SIGTERM destroys them through its ledger.
#[test]
fn a_replay_sent_sigterm_leaves_nothing() {
    let Some(run) = Run::new("replay-term") else { return };
    let case = run.long_case(5_000, None);
    let child = run.start_replay(&case);
    sigterm_leaves_nothing_of(&run, child);
}

#[test]
fn a_killed_run_leaves_a_ledger_that_sweep_empties() {
    let Some(run) = Run::new("killed") else { return };
    let child = run.start(&["-q", "--stateful", "--cases", "500"]);
    killed_leaves_a_ledger_that_sweep_empties(&run, child);
}

/// A replay killed with SIGKILL leaves its ledger, which names the company the case records
/// (the replay's calls were scoped to it), and `sweep` empties it.
#[test]
fn a_killed_replay_leaves_a_ledger_that_sweep_empties() {
    let Some(run) = Run::new("replay-killed") else { return };
    let case = run.long_case(5_000, Some("company-kept-case"));
    let child = run.start_replay(&case);
    let ledger = killed_leaves_a_ledger_that_sweep_empties(&run, child);
    let companies: Vec<Value> = ledger
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["record"] == "lease")
        .map(|v| v["params"]["companyId"].clone())
        .collect();
    assert!(!companies.is_empty(), "{ledger}");
    assert!(companies.iter().all(|c| c == "company-kept-case"), "{companies:?}");
}

/// A replay of a recorded transcript (not a stateful case) journals the acquire it re-sends, so
/// the lease it makes is listed in its ledger and `sweep` destroys it; before, a transcript's
/// acquire bypassed the ledger and its lease was left where nothing could find it.
#[test]
fn a_transcript_replay_journals_its_acquire_and_sweep_destroys_it() {
    let Some(run) = Run::new("replay-transcript") else { return };
    let fixture = support::tests_dir().join("fixtures/official-sdk-worker");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.join("stateful-manifest.json")).unwrap(),
    )
    .unwrap();
    let invocation = serde_json::json!({
        "id": "6f1c2a9e-0d4b-4c1e-9a57-3b8e2f0d7c11",
        "scope": {"companyId": "company-transcript"},
    });
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"manifest": manifest, "config": {}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "environmentAcquireLease",
            "params": {"driverKey": "stateful-fixture", "companyId": "company-transcript",
                "environmentId": "env-1", "runId": "run-1", "config": {}},
            "invocation": invocation}),
    ];
    let transcript: String = requests
        .iter()
        .map(|r| {
            serde_json::json!({"dir": "send", "t_ms": 0, "line": r.to_string()}).to_string() + "\n"
        })
        .collect();
    let file = run.dir.join("lifecycle.acquire.ndjson");
    std::fs::write(&file, transcript).unwrap();
    let mut child = run.start_replay(&file);
    run.wait_for_recorded_lease(&mut child);
    wait(&mut child);
    let left = run.leases();
    assert!(!left.is_empty(), "the replayed acquire made a lease: {}", run.stderr());
    assert!(left.iter().all(|l| run.recorded().contains(l)), "{left:?} not in the ledger");
    let out = support::harness(&["sweep", &run.run_dir.display().to_string()]);
    let stderr = support::lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(run.leases(), Vec::<String>::new(), "sweep left leases: {stderr}");
}

/// Kills `child` once it holds a lease its ledger records, then sweeps the run directory;
/// returns the text of the ledger the kill left.
fn killed_leaves_a_ledger_that_sweep_empties(run: &Run, mut child: Child) -> String {
    run.wait_for_recorded_lease(&mut child);
    signal(&child, libc::SIGKILL);
    wait(&mut child);
    // The worker tree ends with the harness (its reaper sees the harness go); the leases stay.
    let left = run.leases();
    let recorded = run.recorded();
    let named: Vec<&String> = left.iter().filter(|l| recorded.contains(l)).collect();
    assert!(!named.is_empty(), "the killed run left leases its ledger names: {left:?}");
    assert_eq!(run.ledgers().len(), 1, "the ledger stays");
    let ledger = std::fs::read_to_string(&run.ledgers()[0]).unwrap();

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
    ledger
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

/// `run` and `replay` refuse a run directory that is a symbolic link, belongs to another user
/// or is writable by its group or others (the rule `sweep` applies): exit 2 naming the path and
/// the rule, before the worker starts and without writing there.
#[test]
fn an_untrusted_run_directory_is_refused_before_anything_is_written() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = support::temp_dir("interrupted", "untrusted");
    let marker = dir.join("worker-ran");
    let worker = format!("touch {}", marker.display());
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let private = dir.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    let case = dir.join("x.case.json");
    std::fs::write(&case, "{}").unwrap();
    let mut refusals = vec![
        (open.clone(), "is writable by its group or by others"),
        (link.clone(), "is a symbolic link"),
    ];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let other = dir.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&other, Some(4242), None).unwrap();
        refusals.push((other, "is owned by another user"));
    }
    for (run_dir, problem) in &refusals {
        let d = run_dir.display().to_string();
        let case = case.display().to_string();
        for args in [
            vec!["run", "-q", "--run-dir", &d, "--", "/bin/sh", "-c", &worker],
            vec!["replay", &case, "--run-dir", &d, "--", "/bin/sh", "-c", &worker],
        ] {
            let out = support::harness(&args);
            let stderr = support::lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(&format!("{d}: not used as the run directory")), "{stderr}");
            assert!(stderr.contains(problem), "{args:?}: {stderr}");
            assert!(stderr.contains("must belong to the current user"), "the rule: {stderr}");
            assert!(!marker.exists(), "{args:?}: the worker ran");
        }
    }
    for d in [&open, &private] {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{} was written", d.display());
    }
}

/// A run that creates its default run directory creates it `0700`.
#[test]
fn the_default_run_directory_is_created_private() {
    use std::os::unix::fs::MetadataExt as _;
    let dir = support::temp_dir("interrupted", "default-dir");
    let state = dir.join("state");
    let out = Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
        .args(["run", "-q", "--", "/nonexistent/worker"])
        .env("XDG_STATE_HOME", &state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = support::lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "the worker cannot start: {stderr}");
    let run_dir = state.join("sandbox-conformance");
    let mode = std::fs::metadata(&run_dir).map(|m| m.mode() & 0o777);
    assert_eq!(mode.ok(), Some(0o700), "{stderr}");
    assert_eq!(std::fs::read_dir(&run_dir).unwrap().count(), 0, "the empty ledger is removed");
}
