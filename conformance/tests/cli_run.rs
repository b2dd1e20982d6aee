//! The real `sandbox-conformance` binary against real workers: the official-SDK fixtures pass,
//! the hand-written correct fixture passes every check, and each broken fixture (hand-written,
//! or a fault of the official-SDK `broken-worker.mjs`) fails exactly the checks it breaks.
//! Also: baseline (XFAIL/STALE), `--list`, `--junit`, artifacts and replay, and exit code 2.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use paperclip_sandbox_conformance::check_ids;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn broken(name: &str) -> String {
    fixtures().join("broken").join(name).display().to_string()
}

use support::{harness as run, lossy as text};

fn temp_dir(name: &str) -> support::TempDir {
    support::temp_dir("test", name)
}

/// Options that keep a broken-fixture run short: a 2 MB oversize frame, 1.5 s to exit.
const FAST: &[&str] = &["--oversize-bytes", "2000000", "--shutdown-timeout-ms", "1500"];

/// Runs a hand-written broken fixture with `--format json`; returns the exit code and the report.
fn run_json(fixture: &'static str, extra: &[&str]) -> (i32, Value) {
    run_fixture_json(Fixture::HandWritten(fixture), extra)
        .expect("hand-written fixtures need no npm project")
}

/// A broken worker: a hand-written NDJSON fixture of `tests/fixtures/broken/` (by file name), or
/// a fault of the official-SDK broken worker `official-sdk-worker/broken-worker.mjs` (by fault
/// name, with its manifest `official-sdk-worker/broken-manifests/<fault>.json`).
#[derive(Debug, Clone, Copy)]
enum Fixture {
    HandWritten(&'static str),
    OfficialSdk(&'static str),
}
use Fixture::{HandWritten, OfficialSdk};

/// Runs a broken fixture with `--format json`; returns the exit code and the report, or `None`
/// (the test skips, saying why) for an official-SDK fixture without `node`.
fn run_fixture_json(fixture: Fixture, extra: &[&str]) -> Option<(i32, Value)> {
    let mut args = vec!["run", "-q", "--format", "json"];
    args.extend_from_slice(FAST);
    args.extend_from_slice(extra);
    let (name, manifest, worker, fault) = match fixture {
        HandWritten(file) => (file.to_owned(), None, broken(file), None),
        OfficialSdk(fault) => {
            let manifest = format!("broken-manifests/{fault}.json");
            let (manifest, worker) = official_sdk_fixture(&manifest, "broken-worker.mjs")?;
            (format!("official SDK {fault}"), Some(manifest), worker, Some(fault))
        }
    };
    if let Some(manifest) = &manifest {
        args.extend_from_slice(&["--manifest", manifest]);
    }
    args.extend_from_slice(&["--", "node", &worker]);
    args.extend(fault);
    let out = run(&args);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{name}: no JSON report ({e}); stderr: {}", text(&out.stderr)));
    Some((out.status.code().expect("exit code"), report))
}

fn ids_with(report: &Value, status: &str) -> BTreeSet<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == status)
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_fails_exactly(fixture: Fixture, expected: &[&str]) {
    let Some((code, report)) = run_fixture_json(fixture, &[]) else { return };
    let failed = ids_with(&report, "FAIL");
    let expected: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        failed,
        expected,
        "{fixture:?}: {}",
        serde_json::to_string_pretty(&report["checks"]).unwrap()
    );
    assert_eq!(code, 1, "{fixture:?}");
    for c in report["checks"].as_array().unwrap().iter().filter(|c| c["status"] == "FAIL") {
        assert!(c["expected"].is_string() && c["actual"].is_string() && c["reference"].is_string());
    }
}

/// One test per broken fixture that fails exactly the checks it breaks (and nothing else):
/// `test name: fixture => [failed check ids]`. The false negatives the harness once had (the
/// bugs of real providers) are judged on the official TypeScript SDK, as a provider author
/// would write the worker.
macro_rules! fails_exactly {
    ($($test:ident: $fixture:expr => [$($id:literal),+];)+) => {$(
        #[test]
        fn $test() {
            assert_fails_exactly($fixture, &[$($id),+]);
        }
    )+};
}

fails_exactly! {
    banner_on_stdout: HandWritten("banner-on-stdout.cjs") => ["framing.stdout-purity"];
    no_lease_lifecycle: HandWritten("probe-and-execute-only.cjs") => ["lifecycle.lease-hooks"];
    stdin_ignored: OfficialSdk("ignores-stdin") => ["execute.stdin"];
    timeout_leaves_the_command_running: OfficialSdk("timeout-keeps-running")
        => ["execute.timeout"];
    output_truncated_without_native_sync: OfficialSdk("truncates-output")
        => ["execute.large-output"];
    commands_of_a_lease_run_one_at_a_time: OfficialSdk("serial-exec")
        => ["execute.control-commands"];
    login_profile_written: OfficialSdk("writes-login-profile") => ["runtime.no-login-profile"];
    rc_file_written_while_acquiring: OfficialSdk("writes-rc-on-acquire")
        => ["runtime.no-login-profile"];
    string_id_answered_as_number: HandWritten("string-id-as-number.cjs") => ["framing.id-echo"];
    void_answer_without_result: HandWritten("void-without-result.cjs")
        => ["framing.void-result-null"];
    only_sync_in: HandWritten("sync-in-only.cjs") => ["handshake.sync-pair"];
    advertised_method_answers_not_implemented: HandWritten("advertised-not-implemented.cjs")
        => ["handshake.advertised-implemented"];
    unadvertised_method_answers_success: HandWritten("unadvertised-success.cjs")
        => ["handshake.unadvertised-not-implemented"];
    secret_echoed_in_an_error: HandWritten("secret-in-error.cjs") => ["secrets.no-leak"];
    secret_ref_field_echoed_in_an_error: HandWritten("secret-ref-field-in-error.cjs")
        => ["secrets.no-leak"];
    worker_ignoring_shutdown_and_eof: HandWritten("ignores-shutdown.cjs")
        => ["shutdown.on-request", "shutdown.on-stdin-eof"];
    leases_that_cannot_be_ended: HandWritten("cannot-end-leases.cjs") => [
        "lifecycle.release",
        "lifecycle.resume-destroyed",
        "lifecycle.destroy-idempotent",
        "ledger.clean"
    ];
    // The newest upstream methods (newer.cjs): each fixture has all of them but one break.
    idle_answer_none_without_sealing: HandWritten("idle-never-seals.cjs") => ["newer.idle-seal"];
    idle_seal_lifted_by_a_stale_owner: HandWritten("idle-stale-release.cjs") => ["newer.idle-seal"];
    idle_sleep_while_a_command_runs: HandWritten("idle-busy-none.cjs") => ["newer.idle-busy"];
    task_status_answered_accepted: HandWritten("task-accepted-for-status.cjs") => ["newer.task-pairing"];
    task_status_for_another_task: HandWritten("task-foreign-id.cjs") => ["newer.task-pairing"];
    duplex_exit_code_wrong: HandWritten("duplex-wrong-exit.cjs") => ["newer.duplex-roundtrip"];
    duplex_output_lost: HandWritten("duplex-loses-data.cjs") => ["newer.duplex-roundtrip"];
    newest_method_answered_unknown: HandWritten("newest-method-unknown.cjs") => ["newer.not-implemented"];
    login_terminal_without_an_exit: HandWritten("login-pty-no-exit.cjs") => ["newer.login-pty"];
    // Defects real providers had that the harness once passed.
    timeout_ends_only_the_direct_child: HandWritten("timeout-kills-only-child.cjs")
        => ["execute.timeout"];
    a_destroyed_lease_answers_commands_as_failed: HandWritten("gone-lease-as-failed-command.cjs")
        => ["lifecycle.destroy-idempotent"];
    output_decoded_chunk_by_chunk: HandWritten("utf8-split-by-chunks.cjs") => ["execute.output"];
    env_values_on_a_command_line: HandWritten("env-on-command-line.cjs")
        => ["execute.env-not-on-command-line"];
    stop_of_a_busy_lease_falls_back_to_deletion: HandWritten("stop-deletes-when-busy.cjs")
        => ["lifecycle.stop-busy-never-deletes"];
    second_stop_of_a_stopped_lease_fails: HandWritten("second-stop-fails.cjs")
        => ["lifecycle.stop-twice"];
    stop_from_a_fresh_worker_finds_no_lease: HandWritten("stop-own-leases-only.cjs")
        => ["lifecycle.stop-from-fresh-worker"];
    stop_after_the_export_resume_deletes: HandWritten("stop-after-resume-deletes.cjs")
        => ["lifecycle.export-resume"];
}

/// `-32004` with a message of its own is what the host needs: the check passes and notes the
/// upstream SDK's wording.
#[test]
fn not_implemented_with_another_message_is_noted_not_failed() {
    let (code, report) = run_json("not-implemented-message.cjs", &[]);
    assert_eq!(ids_with(&report, "FAIL"), BTreeSet::new(), "{report}");
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "newer.not-implemented")
        .expect("the check ran");
    assert_eq!(check["status"], "PASS", "{check}");
    assert!(check["notes"].to_string().contains("not the upstream SDK's message"), "{check}");
    assert_eq!(code, 0);
}

/// A provider a host cannot use (no acquire, no release) fails, and the verdict names the missing
/// methods and their SDK hooks rather than only skipping every lease check.
#[test]
fn a_provider_without_the_lease_lifecycle_fails_naming_the_missing_hooks() {
    let (code, report) = run_json("probe-and-execute-only.cjs", &[]);
    assert_eq!(code, 1, "{report}");
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "lifecycle.lease-hooks")
        .expect("the check ran");
    let actual = check["actual"].as_str().unwrap();
    for named in ["environmentAcquireLease", "`acquire_lease`", "environmentReleaseLease"] {
        assert!(actual.contains(named), "{named} is not named: {actual}");
    }
    assert!(!actual.contains("environmentExecute"), "execute is there: {actual}");
    assert_eq!(check["requirement"], "LIFE-HOOKS-1", "{check}");
}

/// A required config field without `--config` stops the run (exit 2) naming the flag and the
/// field, not as a probe failure saying "missing field"; a required secret is planted as a
/// sentinel, so it is not named; with a config that has the field, the run goes on.
#[test]
fn a_required_config_field_without_config_names_the_flag_and_the_field() {
    let worker = broken("requires-config.cjs");
    let out = run(&["run", "-q", "--filter", "lifecycle.probe", "--", "node", &worker]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--config") && err.contains("`region`"), "{err}");
    assert!(!err.contains("`token`"), "the secret field is planted, not missing: {err}");
    let dir = temp_dir("requires-config");
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"region": "eu"}"#).unwrap();
    let config = config.display().to_string();
    let args = ["run", "-q", "--config", &config, "--filter", "lifecycle.probe", "--", "node"];
    let out = run(&[&args[..], &[worker.as_str()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A worker with every newest upstream method, correct: each `newer.*` check runs and passes
/// (`newer.task-pairing` through a `status` result, not only through a refusal).
#[test]
fn newest_fixture_passes_every_newer_check() {
    let (code, report) = run_json("newest.cjs", &[]);
    assert_eq!(ids_with(&report, "FAIL"), BTreeSet::new(), "{report}");
    let newer: BTreeSet<String> =
        check_ids().filter(|id| id.starts_with("newer.")).map(str::to_owned).collect();
    assert!(newer.contains("newer.task-pairing"));
    assert!(ids_with(&report, "PASS").is_superset(&newer), "{report}");
    assert_eq!(code, 0);
}

/// A `--filter` that leaves `ledger.clean` out does not hide stuck leases: the selected checks
/// created one, so the ledger is still swept and judged, and the run fails.
#[test]
fn ledger_is_judged_even_when_the_filter_leaves_it_out() {
    let (code, report) = run_json("cannot-end-leases.cjs", &["--filter", "execute.exit-code"]);
    let checks = report["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["execute.exit-code", "ledger.clean"], "{report}");
    assert_eq!(checks[0]["status"], "PASS");
    assert_eq!(checks[1]["status"], "FAIL", "{}", checks[1]);
    assert!(checks[1]["actual"].as_str().unwrap().contains("1 of 1 left"), "{}", checks[1]);
    assert!(checks[1]["notes"].to_string().contains("--filter did not select it"));
    assert_eq!(code, 1, "a stuck lease fails the run whatever the filter");
    // A worker that ends its leases passes the same filtered run.
    let (code, report) = run_json("correct.cjs", &["--filter", "execute.exit-code"]);
    assert_eq!(
        ids_with(&report, "PASS"),
        BTreeSet::from(["execute.exit-code".into(), "ledger.clean".into()])
    );
    assert_eq!(code, 0);
    // A filtered run that creates no lease has no ledger row.
    let (_, report) = run_json("correct.cjs", &["--filter", "framing.id-echo"]);
    assert_eq!(report["checks"].as_array().unwrap().len(), 1, "{report}");
}

/// The paths of a manifest and a worker of the official-SDK fixture project, its npm
/// dependencies installed; `None` (the test skips, saying why) without `node`.
fn official_sdk_fixture(manifest: &str, worker: &str) -> Option<(String, String)> {
    let dir = fixtures().join("official-sdk-worker");
    if !support::node_available() {
        eprintln!("official SDK fixture {worker}: skipped, `node` is not on PATH");
        return None;
    }
    support::ensure_npm_project(&dir, "@paperclipai/plugin-sdk");
    let path = |file: &str| dir.join(file).display().to_string();
    Some((path(manifest), path(worker)))
}

#[test]
fn official_sdk_worker_passes_every_must() {
    let Some((manifest, worker)) = official_sdk_fixture("manifest.json", "worker.mjs") else {
        return;
    };
    let out =
        run(&["run", "-q", "--format", "json", "--manifest", &manifest, "--", "node", &worker]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    for c in checks {
        assert!(
            c["status"] == "PASS" || c["status"] == "SKIP",
            "{}: {} — expected {}, actual {}",
            c["id"],
            c["status"],
            c["expected"],
            c["actual"]
        );
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wall time:"));
    // No sync, no incremental output, no stop: those are skipped with a reason.
    let skipped = ids_with(&report, "SKIP");
    assert!(skipped.contains("sync.round-trip") && skipped.contains("execute.incremental-output"));
    assert!(checks.iter().filter(|c| c["status"] == "SKIP").all(|c| c["skip_reason"].is_string()));
    assert_eq!(report["driver"], "official-fixture");
}

#[test]
fn correct_fixture_passes_every_check_without_skips() {
    let (code, report) = run_json("correct.cjs", &["--require-cli", "sh,tar"]);
    assert_eq!(ids_with(&report, "FAIL"), BTreeSet::new());
    // Every check applies to this provider but those of the newest methods it does not
    // implement (idle sleep, Runner tasks, duplex channels, login terminals).
    let newer: BTreeSet<String> = [
        "newer.idle-seal",
        "newer.idle-busy",
        "newer.task-pairing",
        "newer.duplex-roundtrip",
        "newer.login-pty",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    assert_eq!(ids_with(&report, "SKIP"), newer);
    assert_eq!(code, 0);
    assert!(report["manifest_source"].as_str().unwrap().contains("--manifest"));
}

#[test]
fn banner_before_the_manifest_is_found_and_reported() {
    let (_, report) = run_json("banner-on-stdout.cjs", &[]);
    assert!(report["manifest_source"].as_str().unwrap().contains("impure stdout"), "{report}");
    assert!(report["manifest_problem"].as_str().unwrap().contains("not pure JSON"));
    let purity = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "framing.stdout-purity")
        .unwrap();
    assert!(purity["actual"].as_str().unwrap().contains("--manifest"), "{purity}");
    assert!(purity["actual"].as_str().unwrap().contains("fix: write logs"), "names the fix");
    // The manifest checks ran on the manifest found among the lines.
    assert!(ids_with(&report, "PASS").contains("manifest.valid"));
}

#[test]
fn backend_down_is_one_failure_and_the_rest_blocked() {
    use paperclip_sandbox_conformance::__internals::checks as all;
    let Some((code, report)) =
        run_fixture_json(OfficialSdk("backend-down"), &["--require-cli", "sh"])
    else {
        return;
    };
    assert_eq!(code, 1);
    assert_eq!(ids_with(&report, "FAIL"), BTreeSet::from(["lifecycle.acquire".to_owned()]));
    // The lease checks of what this worker does not offer (realize, sync, stop, idle sleep,
    // duplex channels, login terminals) skip before any lease is needed; every other one is
    // BLOCKED.
    let gated_off = [
        "lifecycle.realize",
        "sync.round-trip",
        "lifecycle.stop-keeps-files",
        "lifecycle.stop-busy-never-deletes",
        "lifecycle.stop-twice",
        "lifecycle.stop-from-fresh-worker",
        "lifecycle.export-resume",
        "newer.idle-busy",
        "newer.duplex-roundtrip",
        "newer.login-pty",
    ];
    let expected: BTreeSet<String> = all()
        .filter(|c| c.needs_lease() && c.id != "lifecycle.acquire" && !gated_off.contains(&c.id))
        .map(|c| c.id.to_owned())
        .collect();
    assert_eq!(ids_with(&report, "BLOCKED"), expected);
    let skipped = ids_with(&report, "SKIP");
    assert!(gated_off.iter().all(|id| skipped.contains(*id)), "{skipped:?}");
    let checks = report["checks"].as_array().unwrap();
    assert!(checks
        .iter()
        .filter(|c| c["status"] == "BLOCKED")
        .all(|c| c["blocked_by"] == "lifecycle.acquire"));
    let acquire = checks.iter().find(|c| c["id"] == "lifecycle.acquire").unwrap();
    assert!(
        acquire["actual"]
            .as_str()
            .unwrap()
            .contains("environmentProbe reported the backend unreachable"),
        "{acquire}"
    );
    let probe = checks.iter().find(|c| c["id"] == "lifecycle.probe").unwrap();
    assert_eq!(probe["status"], "PASS", "ok: false is a conforming probe answer");
}

#[test]
fn a_panicking_hook_points_at_the_artifacts() {
    let (_, report) = run_json("panicking-hook.cjs", &["--filter", "execute.exit-code"]);
    let c = &report["checks"][0];
    assert_eq!(c["status"], "FAIL");
    let notes = c["notes"].to_string();
    assert!(notes.contains("the worker panicked") && notes.contains("--artifacts DIR"), "{notes}");
    let dir = temp_dir("panic");
    let path = dir.display().to_string();
    let (_, report) =
        run_json("panicking-hook.cjs", &["--filter", "execute.exit-code", "--artifacts", &path]);
    let notes = report["checks"][0]["notes"].to_string();
    assert!(notes.contains(&format!("{path}/execute.exit-code.ndjson")), "{notes}");
    let artifact = std::fs::read_to_string(dir.join("execute.exit-code.ndjson")).unwrap();
    assert!(artifact.contains("execute hook exploded"));
}

#[test]
fn reusable_leases_without_destroy() {
    assert_fails_exactly(
        HandWritten("reusable-without-destroy.cjs"),
        &["manifest.capabilities-verified"],
    );
    let (_, report) =
        run_json("reusable-without-destroy.cjs", &["--filter", "capabilities-verified"]);
    let actual = report["checks"][0]["actual"].as_str().unwrap();
    assert!(actual.contains("would never be granted"), "{actual}");
}

#[test]
fn removed_capability_key() {
    assert_fails_exactly(HandWritten("concurrent-sync-operations.cjs"), &["manifest.removed-keys"]);
    // The published host (paperclip-2026-09) still accepts the key.
    let (code, report) =
        run_json("concurrent-sync-operations.cjs", &["--profile", "paperclip-2026-09"]);
    assert_eq!(ids_with(&report, "FAIL"), BTreeSet::new());
    assert_eq!(code, 0);
}

#[test]
fn baseline_turns_failures_into_xfail_and_detects_stale_entries() {
    let dir = temp_dir("baseline");
    let json_baseline = dir.join("baseline.json");
    std::fs::write(&json_baseline, r#"["framing.id-echo"]"#).unwrap();
    let path = json_baseline.display().to_string();
    let filter = ["--filter", "framing.id-echo", "--baseline", &path];
    let (code, report) = run_json("string-id-as-number.cjs", &filter);
    assert_eq!(ids_with(&report, "XFAIL"), BTreeSet::from(["framing.id-echo".to_owned()]));
    assert_eq!(code, 0, "an expected failure does not fail the run");
    let (code, report) = run_json("correct.cjs", &filter);
    assert_eq!(ids_with(&report, "STALE"), BTreeSet::from(["framing.id-echo".to_owned()]));
    assert_eq!(code, 1, "a stale baseline entry fails the run");
    // The text format works the same.
    let text_baseline = dir.join("baseline.txt");
    std::fs::write(&text_baseline, "# known\nframing.id-echo\n").unwrap();
    let path = text_baseline.display().to_string();
    let (code, _) =
        run_json("string-id-as-number.cjs", &["--filter", "framing.id-echo", "--baseline", &path]);
    assert_eq!(code, 0);
}

#[test]
fn list_prints_the_catalogue_without_running() {
    let out = run(&["run", "--list"]);
    assert_eq!(out.status.code(), Some(0));
    let listing = text(&out.stdout);
    for id in [
        "framing.void-result-null",
        "handshake.sync-pair",
        "secrets.no-leak",
        "lifecycle.stop-keeps-files",
    ] {
        assert!(listing.contains(id), "{id} missing from {listing}");
    }
    assert!(listing.contains("WIRE-VOID-1") && listing.contains("book lifecycle.md#exec-6"));
    assert!(listing.contains("SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""));
    for private in ["protocol.md", "decisions.md", "../shared"] {
        assert!(!listing.contains(private), "--list cites {private}");
    }
    let out = run(&["run", "--list", "--format", "json", "--filter", "framing.*"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 10);
    assert!(rows.iter().all(|r| r["id"].as_str().unwrap().starts_with("framing.")));
    assert!(rows.iter().all(|r| r["level"] == "MUST" || r["level"] == "SHOULD"));
}

/// A minimal well-formedness check: every tag closes in order, attributes are quoted.
fn assert_well_formed(xml: &str) -> usize {
    let body =
        xml.strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>").expect("XML declaration");
    let mut stack: Vec<String> = vec![];
    let mut testcases = 0;
    let mut rest = body;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("tag closes") + start;
        let tag = &rest[start + 1..end];
        assert!(!rest[..start].contains('>'), "stray '>' in text");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let name = tag.split_whitespace().next().unwrap().trim_end_matches('/').to_owned();
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            if name == "testcase" {
                testcases += 1;
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    testcases
}

#[test]
fn junit_report_is_well_formed_xml() {
    let dir = temp_dir("junit");
    let junit = dir.join("report.xml");
    let path = junit.display().to_string();
    let (_, report) = run_json("banner-on-stdout.cjs", &["--junit", &path]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(assert_well_formed(&xml), report["checks"].as_array().unwrap().len());
    assert!(xml.contains("<testsuite name=\"sandbox-conformance paperclip-2026-11\""), "{xml}");
    assert!(
        xml.contains(
            "<failure message=\"FAIL framing.stdout-purity [MUST WIRE-STDOUT-1]: expected only"
        ),
        "{xml}"
    );
    for private in ["protocol.md", "decisions.md", "../shared"] {
        assert!(!xml.contains(private), "JUnit cites {private}");
        assert!(!serde_json::to_string(&report).unwrap().contains(private), "JSON cites {private}");
    }
}

#[test]
fn artifacts_record_the_exchange_and_replay_diffs_it() {
    let dir = temp_dir("artifacts");
    let path = dir.display().to_string();
    let (code, _) =
        run_json("string-id-as-number.cjs", &["--filter", "framing.id-echo", "--artifacts", &path]);
    assert_eq!(code, 1);
    let artifact = dir.join("framing.id-echo.ndjson");
    let lines = std::fs::read_to_string(&artifact).unwrap();
    let entries: Vec<Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(entries.iter().all(|e| e["t_ms"].is_u64() && e["line"].is_string()));
    assert!(entries
        .iter()
        .any(|e| e["dir"] == "send" && e["line"].as_str().unwrap().contains("\"90001\"")));
    assert!(entries
        .iter()
        .any(|e| e["dir"] == "recv" && e["line"].as_str().unwrap().contains("\"id\":90001")));
    let artifact = artifact.display().to_string();
    // The same worker answers the same way…
    let out = run(&["replay", &artifact, "--", "node", &broken("string-id-as-number.cjs")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // …a correct one differs exactly on the string id.
    let out = run(&["replay", &artifact, "--", "node", &broken("correct.cjs")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("DIFF  id \"90001\" health"), "{}", text(&out.stdout));
}

#[test]
fn an_unspawnable_worker_still_gets_a_json_and_junit_report() {
    let dir = temp_dir("spawn-fail");
    let junit = dir.join("report.xml");
    let path = junit.display().to_string();
    let out = run(&[
        "run",
        "-q",
        "--format",
        "json",
        "--junit",
        &path,
        "--",
        "/nonexistent/paperclip-worker",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert!(report["error"].as_str().unwrap().contains("/nonexistent/paperclip-worker"));
    assert_eq!(report["exit_code"], 2);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_well_formed(&xml);
    assert!(xml.contains("<error message=\"cannot spawn worker"), "{xml}");
    assert!(text(&out.stderr).starts_with("error: "), "{}", text(&out.stderr));
}

#[test]
fn ci_ergonomics() {
    // A filter that matches nothing is a usage error.
    let out =
        run(&["run", "-q", "--filter", "no-such-check", "--", "node", &broken("correct.cjs")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no check matches"));
    let out = run(&["run", "--list", "--filter", "no-such-check"]);
    assert_eq!(out.status.code(), Some(2));
    // A baseline naming an unknown check is an error.
    let dir = temp_dir("bad-baseline");
    let file = dir.join("baseline.txt");
    std::fs::write(&file, "framing.id-echo\nframing.no-such-check\n").unwrap();
    let out = run(&[
        "run",
        "-q",
        "--baseline",
        &file.display().to_string(),
        "--",
        "node",
        &broken("correct.cjs"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("framing.no-such-check"), "{}", text(&out.stderr));
    // A closed stdout is not a panic (`run --list | head -1`).
    let mut child = Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
        .args(["run", "--list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    // --help documents exit codes, profiles and an example.
    let help = text(&run(&["run", "--help"]).stdout);
    for needle in ["Exit codes:", "paperclip-2026-09", "Example:", "BLOCKED"] {
        assert!(help.contains(needle), "{needle} missing from run --help");
    }
    // SHOULD failures do not turn a JUnit job red.
    let junit = dir.join("should.xml");
    let path = junit.display().to_string();
    let (_, report) = run_json(
        "correct.cjs",
        &[
            "--filter",
            "lint.*",
            "--manifest",
            &fixtures().join("reuse-lease-manifest.json").display().to_string(),
            "--junit",
            &path,
        ],
    );
    assert_eq!(ids_with(&report, "FAIL"), BTreeSet::from(["lint.reuse-lease-offered".to_owned()]));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("failures=\"0\"") && !xml.contains("<failure"), "{xml}");
    assert!(xml.contains("should-failure"), "{xml}");
}

#[test]
fn a_local_provider_run_leaves_no_lease_behind() {
    let bin = support::local_provider();
    let root = temp_dir("local-leases");
    let count = || {
        std::fs::read_dir(&root).unwrap().filter(|e| e.as_ref().unwrap().path().is_dir()).count()
    };
    let before = count();
    let env = format!("LOCAL_PROVIDER_ROOT={}", root.display());
    let out = run(&[
        "run",
        "-q",
        "--format",
        "json",
        "--env",
        &env,
        "--env",
        "LOCAL_PROVIDER_FRAME_LIMIT=8388608",
        "--oversize-bytes",
        "9000000",
        "--",
        &bin.display().to_string(),
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let after = count();
    eprintln!("lease directories under {}: before {before}, after {after}", root.display());
    assert_eq!((before, after), (0, 0), "lease directories left behind");
    let ledger =
        report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "ledger.clean").unwrap();
    assert_eq!(ledger["status"], "PASS", "{ledger}");
    assert!(ledger["notes"].to_string().contains("leases created"), "{ledger}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        serde_json::to_string_pretty(&report["checks"]).unwrap()
    );
}

#[test]
fn private_directory_official_sdk_worker_passes_every_must_under_both_profiles() {
    let fixture = official_sdk_fixture("private-dir-manifest.json", "private-dir-worker.mjs");
    let Some((manifest, worker)) = fixture else {
        return;
    };
    for profile in ["paperclip-2026-11", "paperclip-2026-09"] {
        let out = run(&[
            "run",
            "-q",
            "--format",
            "json",
            "--profile",
            profile,
            "--manifest",
            &manifest,
            "--",
            "node",
            &worker,
        ]);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            ids_with(&report, "FAIL"),
            BTreeSet::new(),
            "{profile}: {}",
            serde_json::to_string_pretty(&report["checks"]).unwrap()
        );
        assert_eq!(ids_with(&report, "BLOCKED"), BTreeSet::new(), "{profile}");
        let mut skipped: BTreeSet<String> = [
            "lifecycle.realize",
            "execute.incremental-output",
            "sync.round-trip",
            "runtime.required-clis",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        // The published SDK predates the newest upstream methods (idle sleep, Runner tasks,
        // duplex channels, environmentStopLease): it advertises none of them, so every
        // `newer.*` check and every stop check skips.
        let newer = check_ids().filter(|id| id.starts_with("newer.")).map(str::to_owned);
        skipped.extend(newer);
        skipped.extend(
            [
                "lifecycle.stop-keeps-files",
                "lifecycle.stop-busy-never-deletes",
                "lifecycle.stop-twice",
                "lifecycle.stop-from-fresh-worker",
                "lifecycle.export-resume",
            ]
            .map(String::from),
        );
        assert_eq!(ids_with(&report, "SKIP"), skipped, "{profile}");
        assert!(
            ids_with(&report, "PASS").contains("execute.cwd")
                && ids_with(&report, "PASS").contains("execute.control-commands")
        );
        assert_eq!(out.status.code(), Some(0), "{profile}");
    }
}

#[test]
fn harness_errors_exit_two() {
    let out = run(&["run", "-q", "--", "/nonexistent/paperclip-worker"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/paperclip-worker"), "{}", text(&out.stderr));
    let out = run(&["run", "-q"]);
    assert_eq!(out.status.code(), Some(2), "no worker command");
    let out = run(&["run", "--profile", "paperclip-2026-10", "--", "node"]);
    assert_eq!(out.status.code(), Some(2), "bad profile");
    let out = run(&["run", "-q", "--manifest", "/nonexistent/manifest.json", "--", "node"]);
    assert_eq!(out.status.code(), Some(2), "unreadable manifest");
}

/// The processes whose command line mentions `needle` (Linux `/proc`; a test may look, the
/// harness never does).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|cmd| cmd.contains(needle))
        .collect()
}

/// `shutdown.no-orphans` starts a heartbeat command on a fresh worker. A worker that ignores
/// `shutdown` is killed by the harness, but the fixture runs commands in process groups of
/// their own, so the heartbeat would live on: the harness must stop it through the wire.
#[test]
fn a_worker_killed_at_shutdown_leaves_no_heartbeat_behind() {
    let tmp = temp_dir("heartbeat");
    let script = broken("ignores-shutdown.cjs");
    let out = Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
        .args(["run", "-q", "--format", "json", "--filter", "shutdown.no-orphans"])
        .args(FAST)
        // The fixture keeps its leases under $TMPDIR: this test's directory.
        .args(["--", "env", &format!("TMPDIR={}", tmp.display()), "node", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(ids_with(&report, "SKIP").contains("shutdown.no-orphans"), "{report}");
    let needle = tmp.display().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let mut left = processes_mentioning(&needle);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = processes_mentioning(&needle);
    }
    assert!(left.is_empty(), "left running after the run: {left:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A `--filter` that matches nothing names the closest check id (or family glob), in `run` and
/// in `run --list`.
#[test]
fn a_mistyped_filter_gets_did_you_mean() {
    let worker = broken("correct.cjs");
    let out = run(&["run", "-q", "--filter", "lifecycle.porbe", "--", "node", &worker]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did you mean `lifecycle.probe`?"), "{}", text(&out.stderr));
    let out = run(&["run", "--list", "--filter", "lifecyle.*"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did you mean `lifecycle.*`?"), "{}", text(&out.stderr));
}
