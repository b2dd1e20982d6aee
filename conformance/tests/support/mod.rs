//! Shared helpers of the conformance crate's integration tests: the Node side of the interop
//! tests (the real npm packages under `tests/interop/` and `tests/fixtures/`).

#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// The conformance crate's `tests/` folder.
pub fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// True when `node` runs here. Under CI (`CI` set) a missing `node` is a failure, never a skip.
pub fn node_available() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok || std::env::var_os("CI").is_none(), "CI needs `node` for the interop tests");
    ok
}

/// Installs the npm project in `dir` unless `dir/node_modules/<package>` already exists, so that
/// `cargo test` works on a fresh clone. Serialized within a test binary.
///
/// A project with a `package-lock.json` is installed with `npm ci`. The real-host project pins
/// its tree with `npm-shrinkwrap.json` instead and is installed with `npm install --no-save`:
/// `npm ci` cannot install `@paperclipai/server@2026.916.1`, whose optional platform packages
/// are missing from the registry (see `tests/interop/real-host/run-interop.mjs`).
pub fn ensure_npm_project(dir: &Path, package: &str) {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if dir.join("node_modules").join(package).exists() {
        return;
    }
    let args: &[&str] = if dir.join("package-lock.json").exists() {
        &["ci", "--no-audit", "--no-fund", "--loglevel=error"]
    } else {
        &["install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"]
    };
    let status = Command::new("npm")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("npm runs");
    assert!(status.success(), "npm {} failed in {}", args[0], dir.display());
}

/// The Rust example worker (`examples/local-provider`), built with cargo (a nested `cargo build`
/// is fine inside `cargo test`); checks that it prints a manifest.
pub fn local_provider() -> PathBuf {
    example_worker("local-provider")
}

/// The example worker `name` (a package and binary of `examples/`), built with cargo; checks
/// that it prints a manifest.
pub fn example_worker(name: &str) -> PathBuf {
    let repo_root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-q", "-p", name])
        .current_dir(&repo_root)
        .status()
        .unwrap();
    assert!(status.success(), "cargo build -p {name} failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root.join("target"));
    let bin = target.join("debug").join(name);
    let out = Command::new(&bin).arg("--manifest").stdin(Stdio::null()).output().unwrap();
    let manifest = serde_json::from_slice::<serde_json::Value>(&out.stdout);
    assert!(
        out.status.success() && matches!(manifest, Ok(serde_json::Value::Object(_))),
        "{name} --manifest printed no manifest: {out:?}"
    );
    bin
}

/// A fresh, empty directory under the system temp directory, unique to this test process:
/// `pcconf-<prefix>-<name>-<pid>`, removed (with everything in it) when the guard is dropped.
pub fn temp_dir(prefix: &str, name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("pcconf-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A directory of [`temp_dir`]: derefs to its path and removes it when dropped, so that no
/// test leaves its directories behind, whichever way it ends (a failed assertion included).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the built `sandbox-conformance` binary with `args` and no stdin.
pub fn harness(args: &[&str]) -> Output {
    with_private_tmp(args, |args| {
        Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("the binary runs")
    })
}

/// Runs the built `sandbox-conformance` binary with `args`, writing `stdin` (when given) to its
/// standard input and then closing it.
pub fn harness_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    with_private_tmp(args, |args| {
        piped(Command::new(env!("CARGO_BIN_EXE_sandbox-conformance")).args(args), stdin)
    })
}

/// Runs `f` with `args`; a `run` or `replay` naming a worker (after `--`) and no `TMPDIR` of
/// its own gets a fresh directory as its worker's `TMPDIR` (`run --env TMPDIR=<dir>`; `replay`,
/// which has no `--env`, starts the worker as `env TMPDIR=<dir> <worker>`), removed afterwards:
/// the fixture workers keep their leases under `$TMPDIR` (`pcconf-fixture-*`), and a worker the
/// harness kills cannot clean up, so the suite would leave those directories in the system temp
/// directory.
pub fn with_private_tmp<T>(args: &[&str], f: impl FnOnce(&[&str]) -> T) -> T {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let dash = args.iter().position(|a| *a == "--");
    let own_tmp = args.iter().any(|a| a.starts_with("TMPDIR="));
    let sub = args.first().copied();
    let (Some(dash), Some("run" | "replay"), false) = (dash, sub, own_tmp) else { return f(args) };
    let dir = temp_dir("tmp", &RUNS.fetch_add(1, Ordering::Relaxed).to_string());
    let env = format!("TMPDIR={}", dir.display());
    // The run's lease ledger goes there too (not to the user's state directory).
    let run_dir = dir.join("run-dir").display().to_string();
    let own_run_dir = args.contains(&"--run-dir");
    let mut with_env = args[..dash].to_vec();
    if sub == Some("run") {
        with_env.extend(["--env", env.as_str()]);
        if !own_run_dir {
            with_env.extend(["--run-dir", run_dir.as_str()]);
        }
        with_env.push("--");
    } else {
        with_env.extend(["--", "env", env.as_str()]);
    }
    with_env.extend_from_slice(&args[dash + 1..]);
    f(&with_env)
}

/// Runs `node validate.mjs` of the shared-validator interop project `dir` on the NDJSON
/// `input` (one manifest a line) and returns the verdicts, one per line.
pub fn published_verdicts(dir: &Path, input: &str) -> Vec<serde_json::Value> {
    validate_mjs(dir, &[], input)
}

/// The published manifest schema's own keys, from `node validate.mjs --keys` of the
/// shared-validator interop project `dir`: `{"top": [...], "driver": [...],
/// "capabilities": [...]}`, each in declaration order.
pub fn published_keys(dir: &Path) -> serde_json::Value {
    validate_mjs(dir, &["--keys"], "").remove(0)
}

/// Runs `node validate.mjs ARGS` in `dir` on `input`; one JSON value per output line.
fn validate_mjs(dir: &Path, args: &[&str], input: &str) -> Vec<serde_json::Value> {
    let out =
        piped(Command::new("node").arg("validate.mjs").args(args).current_dir(dir), Some(input));
    assert!(out.status.success(), "validate.mjs failed: {}", lossy(&out.stderr));
    lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("validate.mjs prints JSON lines"))
        .collect()
}

/// Bytes as text, invalid UTF-8 replaced.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Spawns `command` with piped stdio, writes `stdin` from a thread (so that a large input
/// cannot deadlock against a full stdout pipe), closes it and waits for the output. The
/// process may exit before reading (a usage error): a broken pipe is fine then.
fn piped(command: &mut Command, stdin: Option<&str>) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the process starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.unwrap_or_default().to_owned();
    let writer = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut pipe, input.as_bytes());
    });
    let out = child.wait_with_output().expect("the process finishes");
    writer.join().expect("the stdin writer");
    out
}
