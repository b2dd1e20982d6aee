//! Building and locating the three workers: the Rust provider and the echo loop (release
//! builds through `$CARGO`), and the official `@paperclipai/plugin-sdk` worker under Node.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::client::WorkerSpec;

/// The Cargo package of the Rust provider under test.
pub const PROVIDER_PACKAGE: &str = "local-provider";
/// Its binary target.
pub const PROVIDER_BIN: &str = "local-provider";
/// This crate's package (it holds the echo loop).
pub const BENCH_PACKAGE: &str = "paperclip-sandbox-bench";
/// The echo loop's binary target.
pub const ECHO_BIN: &str = "bench-echo-worker";

/// The workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The folder of the official SDK worker (this crate's `fixtures/official-sdk-worker`: a
/// provider on the published `@paperclipai/plugin-sdk` that streams execute output and syncs
/// natively).
pub fn official_worker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/official-sdk-worker")
}

/// The `driverKey` the official SDK worker is called with (it serves any).
pub const OFFICIAL_DRIVER: &str = "official-bench";

/// The cargo executable: `$CARGO` (set by cargo for the processes it runs), else `cargo`.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| "cargo".into())
}

/// Builds `packages` in release and returns each binary target's executable by name, read
/// from cargo's JSON messages (so any target dir or profile layout works).
pub fn build_release(packages: &[&str]) -> io::Result<HashMap<String, PathBuf>> {
    let mut cmd = Command::new(cargo());
    cmd.arg("build")
        .arg("--release")
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"));
    for p in packages {
        cmd.arg("-p").arg(p);
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
    let mut exes = HashMap::new();
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        if let (Some(name), Some(exe)) =
            (msg["target"]["name"].as_str(), msg["executable"].as_str())
        {
            exes.insert(name.to_owned(), PathBuf::from(exe));
        }
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(io::Error::other(format!("cargo build --release failed: {status}")));
    }
    Ok(exes)
}

/// The official SDK worker under `node`, or the reason it cannot run here. Runs `npm ci` in
/// the fixture folder first when its `node_modules` is missing.
pub fn official_worker(lease_root: &Path) -> Result<WorkerSpec, String> {
    let dir = official_worker_dir();
    let node_ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !node_ok {
        return Err("`node` not found on PATH".into());
    }
    if !dir.join("node_modules").is_dir() {
        eprintln!("official SDK worker: running `npm ci` in {}", dir.display());
        let ok = Command::new("npm")
            .arg("ci")
            .arg("--no-audit")
            .arg("--no-fund")
            .current_dir(&dir)
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            return Err(format!("`npm ci` failed in {}", dir.display()));
        }
    }
    let mut spec = WorkerSpec::new("official SDK (node)", "node");
    spec.args.push("worker.mjs".into());
    spec.cwd = Some(dir);
    spec.env.push(("PAPERCLIP_FIXTURE_ROOT".into(), lease_root.as_os_str().to_owned()));
    Ok(spec)
}
