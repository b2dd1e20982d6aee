//! Stateful and chaos runs against real workers on the official SDK: the correct fixture never
//! fails, and each seeded defect of `official-sdk-worker/stateful-worker.mjs` is found, shrunk
//! to at most 6 steps, kept as a case file, and replayed to the same verdict.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use paperclip_sandbox_conformance::stateful::invariants as inv;
use paperclip_sandbox_conformance::stateful::StatefulOptions;
use paperclip_sandbox_conformance::{chaos, RunOptions, Status, WorkerCommand};
use serde_json::Value;

/// The official-SDK fixture project, installed; `None` without `node`.
fn fixture_dir() -> Option<PathBuf> {
    if !support::node_available() {
        eprintln!("skipped: `node` is not on PATH");
        return None;
    }
    let dir = support::tests_dir().join("fixtures/official-sdk-worker");
    support::ensure_npm_project(&dir, "@paperclipai/plugin-sdk");
    Some(dir)
}

fn path(dir: &std::path::Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

/// `run --stateful --format json` against `stateful-worker.mjs [defect]`.
fn stateful(dir: &std::path::Path, defect: Option<&str>, extra: &[&str]) -> Value {
    let manifest = path(dir, "stateful-manifest.json");
    let worker = path(dir, "stateful-worker.mjs");
    let mut args = vec!["run", "-q", "--stateful", "--format", "json", "--manifest", &manifest];
    args.extend_from_slice(extra);
    args.extend(["--", "node", &worker]);
    args.extend(defect);
    let out = support::harness(&args);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", support::lossy(&out.stderr)))
}

fn outcome<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap()
}

/// The numbered steps of a failure's program.
fn steps(actual: &str) -> usize {
    actual
        .lines()
        .filter(|l| l.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()))
        .count()
}

#[test]
fn the_correct_official_sdk_worker_never_fails() {
    let Some(dir) = fixture_dir() else { return };
    let report = stateful(&dir, None, &["--cases", "10", "--seed", "1"]);
    assert_eq!(report["summary"]["fail"], 0, "{report:#}");
    assert_eq!(outcome(&report, inv::RESUME_DESTROYED)["status"], "PASS");
    // Never-reached invariants are SKIP with the count, never PASS.
    for c in report["checks"].as_array().unwrap() {
        let note = c["notes"][0].as_str().unwrap();
        if note.starts_with("reached 0 times") {
            assert_eq!(c["status"], "SKIP", "{c}");
        }
    }
}

#[test]
fn each_stateful_defect_is_found_shrunk_kept_and_replayed() {
    let Some(dir) = fixture_dir() else { return };
    let artifacts = support::temp_dir("stateful", "cases");
    let a = artifacts.display().to_string();
    let manifest = path(&dir, "stateful-manifest.json");
    let worker = path(&dir, "stateful-worker.mjs");
    for (defect, invariant) in [
        ("resumes-destroyed", inv::RESUME_DESTROYED),
        ("second-destroy-errors", inv::DESTROY),
        ("interleaves-stdin", inv::LINEAR),
    ] {
        let extra = ["--cases", "12", "--seed", "5", "--shrink-runs", "24", "--artifacts", &a];
        let report = stateful(&dir, Some(defect), &extra);
        let o = outcome(&report, invariant);
        assert_eq!(o["status"], "FAIL", "{defect}: {report:#}");
        let n = steps(o["actual"].as_str().unwrap());
        assert!((1..=6).contains(&n), "{defect}: {n} steps: {}", o["actual"]);
        let case = o["artifact"].as_str().expect("a case file").to_owned();
        // The kept case replays to the same verdict against the defect, not against the
        // correct worker (which --expect-fixed confirms).
        let replay = |defect: Option<&str>, fixed: bool| {
            let mut args = vec!["replay", &case, "--manifest", &manifest];
            if fixed {
                args.push("--expect-fixed");
            }
            args.extend(["--", "node", &worker]);
            args.extend(defect);
            support::harness(&args).status.code()
        };
        assert_eq!(replay(Some(defect), false), Some(0), "{defect}: the case reproduces");
        assert_eq!(replay(None, false), Some(1), "{defect}: not against the correct worker");
        assert_eq!(replay(None, true), Some(0), "{defect}: --expect-fixed on the correct worker");
    }
    // --regressions runs the kept cases first: each fails again.
    let report = stateful(&dir, Some("resumes-destroyed"), &["--cases", "0", "--regressions", &a]);
    assert_eq!(outcome(&report, inv::RESUME_DESTROYED)["status"], "FAIL", "{report:#}");
}

/// The fake backend (`stateful-backend.mjs`) and its port.
struct Backend(Child, u16);

impl Backend {
    fn start(dir: &std::path::Path) -> Backend {
        let mut child = Command::new("node")
            .arg(path(dir, "stateful-backend.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        Backend(child, line.trim().parse().unwrap())
    }

    /// The sandboxes of environment `env` (the leak oracle).
    fn sandboxes(port: u16, env: &str) -> Result<Vec<String>, String> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(s, "GET /sandboxes?environmentId={env} HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).map_err(|e| e.to_string())?;
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        serde_json::from_str(body).map_err(|e| e.to_string())
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chaos_run(
    dir: &std::path::Path,
    defect: Option<&str>,
    seed: u64,
    cases: u64,
) -> paperclip_sandbox_conformance::RunReport {
    let backend = Backend::start(dir);
    let config_dir = support::temp_dir("chaos", defect.unwrap_or("correct"));
    let config = config_dir.join("config.json");
    std::fs::write(&config, format!("{{\"apiUrl\": \"http://127.0.0.1:{}\"}}", backend.1)).unwrap();
    let mut argv = vec!["node".to_owned(), path(dir, "stateful-worker.mjs")];
    argv.extend(defect.map(str::to_owned));
    let mut options = RunOptions::new(WorkerCommand::from_argv(&argv).unwrap());
    options.manifest_path = Some(dir.join("stateful-manifest.json"));
    options.config_path = Some(config);
    options.call_timeout = Duration::from_secs(3);
    options.progress = false;
    let s = StatefulOptions {
        cases,
        seed: Some(seed),
        shrink_runs: 16,
        progress: false,
        ..StatefulOptions::default()
    };
    let port = backend.1;
    let oracle: chaos::Oracle = Box::new(move |env: &str| Backend::sandboxes(port, env));
    chaos::run_with_oracle(options, s, None, Some(oracle)).unwrap().report
}

#[test]
fn chaos_finds_a_leak_and_a_late_answer_and_not_in_the_correct_worker() {
    let Some(dir) = fixture_dir() else { return };
    let report = chaos_run(&dir, None, 9, 8);
    let fails: Vec<&str> =
        report.checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.id.as_str()).collect();
    assert!(fails.is_empty(), "{fails:?}: {report:#?}");
    for (defect, invariant) in
        [("leaks-on-failure", inv::CLEANUP), ("no-backend-deadline", inv::BUDGET)]
    {
        let report = chaos_run(&dir, Some(defect), 9, 16);
        let o = report.checks.iter().find(|c| c.id == invariant).unwrap();
        assert_eq!(o.status, Status::Fail, "{defect}: {report:#?}");
        let n = steps(o.actual.as_deref().unwrap());
        assert!((1..=6).contains(&n), "{defect}: {n} steps: {:?}", o.actual);
    }
}
