//! Interop with the published Paperclip host (npm `@paperclipai/server` 2026.916.1): runs
//! `tests/interop/real-host/run-interop.mjs`, which loads the host's worker manager and plugin
//! loader unmodified and drives a plugin worker through them (install, discovery, fork of the
//! entrypoint, initialize, environment calls, graceful stop, SIGKILL of the shim).
//!
//! The packaged container provider (`examples/container-provider`) is driven the same way
//! against a real Docker-API engine, with a native syncIn/syncOut round trip, and the engine is
//! asked afterwards whether any container of the run remains.
//!
//! The script's output (including the `supportedMethods` the host saw) is written straight to
//! stderr, so it shows in CI logs even when the test passes.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-conformance");

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn real_host_dir() -> PathBuf {
    conformance_dir().join("tests/interop/real-host")
}

fn ensure_npm_deps() {
    support::ensure_npm_project(&real_host_dir(), "@paperclipai/server");
}

/// Runs the interop script and returns its stdout; panics with its output when it fails.
fn run_interop(args: &[&str]) -> String {
    ensure_npm_deps();
    let output = Command::new("node")
        .arg("run-interop.mjs")
        .args(args)
        .current_dir(real_host_dir())
        .stdin(Stdio::null())
        .output()
        .expect("node is required for the real-host interop test");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "==== real-host interop {args:?}\n{stdout}{stderr}====");
    assert!(output.status.success(), "run-interop.mjs {args:?} failed: {stdout}{stderr}");
    stdout
}

fn assert_full_run(stdout: &str, mode: &str) {
    for line in [
        "host saw supportedMethods: [",
        "-- environmentAcquireLease -> ",
        "-- environmentExecute sh -c 'echo hi' -> exitCode 0",
        "-- environmentReleaseLease -> ",
        "-- environmentDestroyLease ",
        "-- stopWorker: exited on the shutdown request",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in:\n{stdout}");
    }
    assert!(stdout.trim_end().ends_with(&format!("interop OK ({mode})")), "{stdout}");
}

#[test]
fn official_sdk_fixture_runs_under_the_published_host() {
    let fixture = conformance_dir().join("tests/fixtures/official-sdk-worker");
    let stdout = run_interop(&["official-fixture", fixture.to_str().unwrap()]);
    assert_full_run(&stdout, "official-fixture");
}

fn local_provider() -> PathBuf {
    support::local_provider()
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn package(worker: &Path, out: &Path) {
    let output = Command::new(BIN)
        .args(["package", "--profile", "paperclip-2026-09", "--worker"])
        .arg(worker)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "sandbox-conformance package failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn packaged_local_provider_runs_under_the_published_host() {
    let worker = local_provider();
    let tmp = TempDir(std::env::temp_dir().join(format!("sc-real-host-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&tmp.0);
    let plugin = tmp.0.join("plugin");
    package(&worker, &plugin);
    let stdout = run_interop(&["packaged", plugin.to_str().unwrap()]);
    assert_full_run(&stdout, "packaged");
    assert!(stdout.contains("-- installed bin/local-provider mode 755"), "{stdout}");
    assert!(stdout.contains("native worker"), "the SIGKILL step ran: {stdout}");
}

/// The engine the container-provider test uses: `DOCKER_HOST` (a unix socket) and
/// `PAPERCLIP_CONTAINER_IMAGE`, as `.ci/container-engine up` prints them. `None` (with the reason
/// printed) when absent, unless `PAPERCLIP_CONTAINER_TESTS=require`.
fn container_engine() -> Option<(String, String)> {
    let host = std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty());
    let image = std::env::var("PAPERCLIP_CONTAINER_IMAGE").ok().filter(|i| !i.is_empty());
    let socket = host.as_deref().and_then(|h| h.strip_prefix("unix://")).map(str::to_owned);
    match (socket, image) {
        (Some(socket), Some(image)) if Path::new(&socket).exists() => Some((socket, image)),
        _ => {
            let why = "no Docker-API engine on a unix socket: set DOCKER_HOST and \
                       PAPERCLIP_CONTAINER_IMAGE (eval \"$(.ci/container-engine up)\")";
            if std::env::var("PAPERCLIP_CONTAINER_TESTS").as_deref() == Ok("require") {
                panic!("PAPERCLIP_CONTAINER_TESTS=require but {why}");
            }
            eprintln!("SKIPPED (cannot run here): {why}");
            None
        }
    }
}

#[test]
fn packaged_container_provider_runs_under_the_published_host_with_native_sync() {
    let Some((socket, image)) = container_engine() else { return };
    let worker = support::example_worker("container-provider");
    let tmp =
        TempDir(std::env::temp_dir().join(format!("sc-real-host-ctr-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&tmp.0);
    let plugin = tmp.0.join("plugin");
    package(&worker, &plugin);
    // The host gives the worker a bare environment: the engine and image come with the config.
    let config = serde_json::json!({"dockerHost": format!("unix://{socket}"), "image": image});
    let stdout = run_interop(&[
        "packaged",
        plugin.to_str().unwrap(),
        "--config",
        &config.to_string(),
        "--sync",
        "--engine-socket",
        &socket,
    ]);
    assert_full_run(&stdout, "packaged");
    for line in [
        "-- installed bin/container-provider mode 755",
        "-- environmentSyncIn ",
        "-- environmentExecute sees the synced tree in the sandbox",
        "bytes identical",
        "after release -> ",
        "-- engine: no container of company ",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in:\n{stdout}");
    }
}
