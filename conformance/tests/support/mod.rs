//! Shared helpers of the conformance crate's integration tests: the Node side of the interop
//! tests (the real npm packages under `tests/interop/` and `tests/fixtures/`).

#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
