//! The harness against hostile workers (`tests/fixtures/hostile/`): each run ends within 60 s
//! (a generous hang guard), the harness's peak RSS (its own `VmHWM`, sampled until it exits)
//! stays under 256 MiB, the exit code is 1 with a FAIL of the expected check naming the cause,
//! and no process the worker started is left afterwards.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn hostile(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile")
        .join(name)
        .display()
        .to_string()
}

fn node_available() -> bool {
    let ok = Command::new("node").arg("--version").stdout(Stdio::null()).status();
    if ok.is_ok_and(|s| s.success()) {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI needs `node`");
    eprintln!("skipped: `node` is not on PATH");
    false
}

/// `VmHWM` of `pid` in KiB, while it runs.
fn high_water_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Processes whose command line mentions `marker` (the fixtures put one in every process they
/// start).
fn processes_mentioning(marker: &str) -> Vec<String> {
    let mut found = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() || name == std::process::id().to_string() {
            continue;
        }
        let cmdline: PathBuf = entry.path().join("cmdline");
        if let Ok(bytes) = std::fs::read(cmdline) {
            let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{name}: {text}"));
            }
        }
    }
    found
}

struct Outcome {
    code: i32,
    report: Value,
    peak_mib: u64,
    took: Duration,
}

fn run(filter: &str, worker: &[String]) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"));
    cmd.args(["run", "-q", "--format", "json", "--filter", filter, "--"]).args(worker);
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(hwm) = high_water_kib(child.id()) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the harness did not end within 60 s against {worker:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    let text = reader.join().unwrap();
    let report: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    Outcome { code: status.code().unwrap_or(-1), report, peak_mib: peak / 1024, took }
}

fn assert_contained(fixture: &[&str], filter: &str, check: &str, cause: &str, marker: &str) {
    if !node_available() {
        return;
    }
    let mut worker: Vec<String> = fixture.iter().map(|s| s.to_string()).collect();
    let last = worker.len() - 1;
    worker[last] = hostile(&worker[last]);
    let out = run(filter, &worker);
    assert_eq!(out.code, 1, "{fixture:?}: {}", out.report);
    let failed = out.report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == check && c["status"] == "FAIL")
        .unwrap_or_else(|| panic!("{fixture:?}: no FAIL of {check}: {}", out.report));
    let actual = failed["actual"].as_str().unwrap_or_default();
    assert!(actual.contains(cause), "{fixture:?}: {check} does not name {cause:?}: {actual}");
    assert!(out.peak_mib < 256, "{fixture:?}: peak RSS {} MiB", out.peak_mib);
    // The harness ended everything before it exited; give the kernel a moment to reap.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = processes_mentioning(marker);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_mentioning(marker);
    }
    assert!(left.is_empty(), "{fixture:?}: left behind: {left:?}");
    eprintln!("{fixture:?}: {} ms, peak {} MiB", out.took.as_millis(), out.peak_mib);
}

#[test]
fn an_endless_line() {
    let cause = "over the host's limit";
    assert_contained(
        &["endless-line.sh"],
        "framing.bounded-output",
        "framing.bounded-output",
        cause,
        "a-3076",
    );
}

#[test]
fn a_frame_flood() {
    let cause = "notifications from one worker";
    assert_contained(
        &["frame-flood.sh"],
        "framing.bounded-output",
        "framing.bounded-output",
        cause,
        "flood-3075",
    );
}

#[test]
fn a_stderr_flood() {
    let cause = "on stderr";
    assert_contained(
        &["stderr-flood.sh"],
        "framing.bounded-output",
        "framing.bounded-output",
        cause,
        "noise 3077",
    );
}

#[test]
fn an_endless_manifest() {
    let cause = "`<worker> --manifest` printed more than";
    assert_contained(
        &["endless-manifest.sh"],
        "framing.bounded-output",
        "framing.bounded-output",
        cause,
        "endless-3078",
    );
}

#[test]
fn a_100_mb_result() {
    let cause = "a line of";
    assert_contained(
        &["node", "huge-result.cjs"],
        "handshake.initialize",
        "handshake.initialize",
        cause,
        "huge-result.cjs",
    );
}

#[test]
fn a_setsid_child_holding_stdin() {
    let cause = "outside it";
    assert_contained(
        &["holds-stdin.sh"],
        "shutdown.no-orphans",
        "shutdown.no-orphans",
        cause,
        "sleep 3071",
    );
}

#[test]
fn a_daemon_holding_stdout_after_the_worker_exits() {
    let cause = "exited without answering";
    assert_contained(
        &["holds-stdout-after-exit.sh"],
        "handshake.second-initialize",
        "handshake.second-initialize",
        cause,
        "sleep 3072",
    );
}

#[test]
fn a_daemon_holding_the_manifest_probes_stdout() {
    let cause = "`<worker> --manifest` left 1 process(es)";
    assert_contained(
        &["holds-manifest-stdout.sh"],
        "shutdown.no-orphans",
        "shutdown.no-orphans",
        cause,
        "sleep 3073",
    );
}

#[test]
fn setsid_daemons() {
    let cause = "2 outside it";
    assert_contained(
        &["setsid-daemons.sh"],
        "shutdown.no-orphans",
        "shutdown.no-orphans",
        cause,
        "sleep 3074",
    );
}
