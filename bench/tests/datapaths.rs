//! Correctness of the data-path drivers (no timing assertions): the raw limits move and check
//! every byte, the host's base64-over-exec command shapes round-trip a file across several
//! chunks (with a quote in its path), the tree generator and the tar copy agree, and — against
//! the real official-SDK worker — execute output, the base64 paths, native sync and the
//! concurrent driver all verify what arrived.

use std::time::Duration;

use paperclip_sandbox_bench::client::Worker;
use paperclip_sandbox_bench::concurrent;
use paperclip_sandbox_bench::data::{DataConfig, DataReport, DataRow, DataSamples};
use paperclip_sandbox_bench::data_report;
use paperclip_sandbox_bench::datapath::{self, RawShell, Shell, Transfer, WorkerShell};
use paperclip_sandbox_bench::lease::{self, Driver};
use paperclip_sandbox_bench::syncpath::{self, Direction};
use paperclip_sandbox_bench::{callgrind, workers};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bench-dp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn raw_output_and_small_writes_count_every_byte() {
    let t = datapath::raw_output(1 << 20).unwrap();
    assert_eq!(t.bytes, 1 << 20);
    let s = datapath::raw_small_writes(100).unwrap();
    // "line 0\n" .. "line 99\n"
    assert_eq!(s.bytes, (0..100).map(|i: u32| format!("line {i}\n").len() as u64).sum::<u64>());
}

#[test]
fn base64_over_exec_round_trips_across_chunks() {
    let dir = scratch("b64").join("it's here");
    std::fs::create_dir_all(&dir).unwrap();
    // Two whole 3 MiB chunks and a partial one.
    let bytes = datapath::pseudo_random(2 * datapath::B64_DECODED_CHUNK + 12_345, 7);
    let up = dir.join("sub").join("up.bin");
    let t = datapath::time_upload(&mut RawShell, &up, &bytes, 1).unwrap();
    assert_eq!(t.bytes, bytes.len() as u64);
    // The temp file is gone.
    let left: Vec<_> = std::fs::read_dir(up.parent().unwrap()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the uploaded file remains");
    let got = datapath::time_download(&mut RawShell, up.to_str().unwrap(), &bytes).unwrap();
    assert_eq!(got.bytes, bytes.len() as u64);
    // A wrong expectation is caught.
    assert!(datapath::time_download(&mut RawShell, up.to_str().unwrap(), &bytes[1..]).is_err());
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn shell_quote_survives_sh() {
    let mut sh = RawShell;
    let out = sh.run(&format!("printf %s {}", datapath::shell_quote("a'b \"c\" $d")), None);
    assert_eq!(out.unwrap(), "a'b \"c\" $d");
}

#[test]
fn tree_and_tar_copy_agree() {
    let dir = scratch("tree");
    let shape = syncpath::make_tree(&dir.join("src"), 100, 1 << 20).unwrap();
    assert_eq!(shape.files, 100);
    assert_eq!(syncpath::tree_shape(&dir.join("src")).unwrap(), shape);
    let t = syncpath::tar_copy(&dir.join("src"), &dir.join("dst"), shape).unwrap();
    assert_eq!(t.bytes, shape.bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn callgrind_totals_parse() {
    assert_eq!(callgrind::parse_total("events: Ir\nsummary: 123456\n"), Some(123456));
    assert_eq!(callgrind::parse_total("events: Ir\ntotals: 99 1\n"), Some(99));
    assert_eq!(callgrind::parse_total("events: Ir\n"), None);
}

#[test]
fn targets_are_reported_pass_and_miss() {
    let t = |mib: u64, ms: u64| Transfer {
        bytes: mib << 20,
        elapsed: Duration::from_millis(ms),
        logs: 0,
    };
    let samples = |output: Transfer, sync: Transfer| DataSamples {
        output: vec![output],
        sync_in: vec![sync],
        sync_out: vec![sync],
        ..Default::default()
    };
    let report = DataReport {
        rows: vec![
            DataRow { name: "raw limit".into(), result: Ok(samples(t(100, 100), t(100, 100))) },
            // 0.4x the raw pipe, 0.5x tar.
            DataRow { name: "ours".into(), result: Ok(samples(t(40, 100), t(50, 100))) },
            DataRow { name: "theirs".into(), result: Err("skipped: no node".into()) },
        ],
        tree: syncpath::TreeShape { files: 1, bytes: 1 },
        root: "/x".into(),
        tmpfs: true,
        callgrind: Err("skipped".into()),
    };
    let text = data_report::render(&report, &DataConfig::default());
    let line = |prefix: &str| {
        text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {text}"))
    };
    assert!(line("execute output   ours / raw pipe: 0.40x").ends_with("PASS"));
    assert!(line("execute output   ours / theirs: not measured").ends_with("MISS"));
    assert!(line("native syncIn    ours / tar c | tar x: 0.50x").ends_with("MISS"));
    assert!(text.contains("skipped: no node"));
}

/// The official-SDK worker, or why it cannot run here (`node` and `npm ci` in
/// `bench/fixtures/official-sdk-worker`, which `.ci/run` does).
fn official() -> Option<Worker> {
    let dir = workers::official_worker_dir();
    if !dir.join("node_modules").is_dir() {
        eprintln!(
            "SKIPPED: {} has no node_modules (run `npm ci` there; .ci/run does)",
            dir.display()
        );
        return None;
    }
    let root = scratch("node");
    let spec = workers::official_worker(&root).expect("node is on PATH");
    let mut w = Worker::spawn(&spec).unwrap();
    w.initialize().unwrap();
    Some(w)
}

#[test]
fn drivers_verify_what_the_official_worker_delivers() {
    let Some(mut w) = official() else { return };
    let driver = Driver { key: workers::OFFICIAL_DRIVER.into(), config: serde_json::json!({}) };
    let l = lease::acquire(&mut w, &driver, "t").unwrap();

    let out = datapath::worker_output(&mut w, &driver, &l, 300_000).unwrap();
    assert_eq!(out.bytes, 300_000);
    assert!(out.logs > 0, "the worker streams execute.log");
    let small = datapath::worker_small_writes(&mut w, &driver, &l, 50).unwrap();
    assert!(small.bytes > 0);

    let bytes = datapath::pseudo_random(datapath::B64_DECODED_CHUNK + 1000, 3);
    let path = l.remote_cwd.join("f.bin");
    let mut sh = WorkerShell { w: &mut w, driver: &driver, lease: &l, logs: 0 };
    datapath::time_upload(&mut sh, &path, &bytes, 9).unwrap();
    datapath::time_download(&mut sh, path.to_str().unwrap(), &bytes).unwrap();
    assert!(sh.logs > 0);

    let host = scratch("node-sync");
    let shape = syncpath::make_tree(&host.join("src"), 60, 600_000).unwrap();
    let inside = l.remote_cwd.join("tree");
    syncpath::worker_sync(&mut w, &driver, &l, Direction::In, &host.join("src"), &inside, shape)
        .unwrap();
    syncpath::worker_sync(&mut w, &driver, &l, Direction::Out, &inside, &host.join("out"), shape)
        .unwrap();

    let many: Vec<_> =
        (0..4).map(|i| lease::acquire(&mut w, &driver, &format!("m{i}")).unwrap()).collect();
    let c = concurrent::through_worker(&mut w, &driver, &many, Duration::from_millis(200)).unwrap();
    assert!(c.count >= 4 && c.p50 <= c.p99);
    for x in many.iter().chain([&l]) {
        lease::release(&mut w, &driver, x).unwrap();
    }
    // Still in step after everything.
    w.call("health", "{}").unwrap();
    assert!(w.close(Duration::from_secs(300)).unwrap().success());
    let _ = std::fs::remove_dir_all(&host);
}

#[test]
fn concurrent_raw_counts_commands() {
    let c = concurrent::raw(2, Duration::from_millis(50)).unwrap();
    assert!(c.count >= 2);
}
