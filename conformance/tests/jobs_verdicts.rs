//! `--jobs` changes how long a run takes, never its verdicts: every broken fixture and the local
//! example get the same checks with the same statuses one check at a time (`--jobs 1`) and
//! several at once (`--jobs 3`, also on a machine whose default would be lower). The fixtures
//! run three at a time, each run with a private TMPDIR for its workers.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

fn verdicts(jobs: &str, worker: &[String]) -> Vec<(String, String)> {
    // A smaller oversize frame than the default (2 MB), the same for both runs: what is
    // compared is the verdicts at one --jobs and at another. The exit wait stays the default
    // 10 s: with 1.5 s, a node fixture running a command did not exit in time at load 18
    // (`.ci/loaded-tests`), and shutdown.no-orphans was SKIP in one run and PASS in the other.
    let mut args = vec!["run", "-q", "--format", "json", "--jobs", jobs];
    args.extend(["--oversize-bytes", "2000000", "--"]);
    args.extend(worker.iter().map(String::as_str));
    // Each run's workers get a TMPDIR of their own (removed after), so that a fixture worker
    // the harness kills leaves nothing in the system temp directory.
    let out = support::with_private_tmp(&args, |args| {
        Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
            .args(args)
            .stderr(Stdio::null())
            .output()
            .unwrap()
    });
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{worker:?} --jobs {jobs}: {e}"));
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["status"].as_str().unwrap().to_owned()))
        .collect()
}

fn assert_same(worker: Vec<String>) {
    let serial = verdicts("1", &worker);
    let parallel = verdicts("3", &worker);
    assert_eq!(serial, parallel, "{worker:?}: --jobs 1 vs --jobs 3");
}

#[test]
fn the_local_example_gets_the_same_verdicts_at_any_jobs() {
    let bin = support::local_provider();
    assert_same(vec![bin.display().to_string()]);
}

#[test]
fn every_broken_fixture_gets_the_same_verdicts_at_any_jobs() {
    let ok = Command::new("node").arg("--version").stdout(Stdio::null()).status();
    if !ok.is_ok_and(|s| s.success()) {
        assert!(std::env::var_os("CI").is_none(), "CI needs `node`");
        eprintln!("skipped: `node` is not on PATH");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken");
    let mut fixtures: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cjs"))
        // The shared modules the fixtures are built on, not fixtures themselves.
        .filter(|p| !["common.cjs", "newer.cjs"].iter().any(|n| p.ends_with(n)))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() > 20);
    // The fixtures are independent of each other (each run has its own workers and temp
    // directory) and mostly wait on their workers: three at a time.
    let next = AtomicUsize::new(0);
    let mismatches: Vec<String> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut found = vec![];
                    while let Some(fixture) = fixtures.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let worker = vec!["node".into(), fixture.display().to_string()];
                        let (serial, parallel) = (verdicts("1", &worker), verdicts("3", &worker));
                        if serial != parallel {
                            found.push(format!(
                                "{worker:?}: --jobs 1 {serial:?} vs --jobs 3 {parallel:?}"
                            ));
                        }
                    }
                    found
                })
            })
            .collect();
        lanes.into_iter().flat_map(|lane| lane.join().expect("a lane of fixture runs")).collect()
    });
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
