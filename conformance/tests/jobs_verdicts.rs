//! `--jobs` changes how long a run takes, never its verdicts: every broken fixture and the local
//! example get the same checks with the same statuses one check at a time (`--jobs 1`) and
//! several at once (`--jobs 3`, also on a machine whose default would be lower).

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

fn verdicts(jobs: &str, worker: &[String]) -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
        .args(["run", "-q", "--format", "json", "--jobs", jobs, "--"])
        .args(worker)
        .stderr(Stdio::null())
        .output()
        .unwrap();
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
    for fixture in fixtures {
        assert_same(vec!["node".into(), fixture.display().to_string()]);
    }
}
