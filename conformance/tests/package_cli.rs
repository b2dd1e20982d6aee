//! `sandbox-conformance package`: the plugin folder layout, the manifest module as the host's
//! `import()` sees it, the published manifest schema for `paperclip-2026-09`, and the worker shim
//! started the way the host starts it (`fork()` with an IPC channel, no HOME, another cwd):
//! stdio passthrough, exit codes, signal forwarding, and no orphan when the shim is SIGKILLed.
//!
//! The stand-in worker is a small shell script (the layout and the shim do not depend on what
//! the binary is); `local_provider_*` tests package the real Rust example worker.

mod support;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-conformance");

/// The stand-in worker. `--manifest` prints a manifest with the two November driver fields and
/// refuses any further argument (like a binary without `--profile`). As a worker it reads
/// commands from stdin: `info` (cwd, HOME, fd 3, NODE_CHANNEL_FD, pid), `exit N`, `wait` (traps
/// TERM/HUP/INT with exit 143/129/130), `selfkill` (SIGKILL itself). `wait` gives up after about 30 s.
const STAND_IN: &str = r#"#!/bin/sh
if [ "$1" = "--manifest" ]; then
  if [ -n "$2" ]; then echo "error: unexpected argument '$2'" >&2; exit 2; fi
  cat <<'JSON'
{"id":"acme.stand-in","apiVersion":1,"version":"1.2.3","displayName":"Stand-in","description":"A stand-in worker","author":"paperclip-sandbox tests","categories":["automation"],"capabilities":["environment.drivers.register"],"entrypoints":{"worker":"./stand-in"},"environmentDrivers":[{"driverKey":"stand-in","kind":"sandbox_provider","displayName":"Stand-in","configSchema":{"type":"object","properties":{}},"sandboxCapabilities":{"reusableLeases":true},"defaultAcquireTimeoutMs":60000,"creationOperationVersion":1}]}
JSON
  exit 0
fi
while read -r line; do
  case "$line" in
    info) if [ -e /proc/$$/fd/3 ]; then fd3=open; else fd3=closed; fi
          echo "cwd=$(pwd) home=${HOME-unset} fd3=$fd3 chan=${NODE_CHANNEL_FD-unset} pid=$$";;
    exit*) exit ${line#exit };;
    selfkill) kill -KILL $$;;
    wait) trap 'echo got-TERM; exit 143' TERM; trap 'echo got-HUP; exit 129' HUP
          trap 'echo got-INT; exit 130' INT
          echo waiting; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exit 99;;
  esac
done
exit 0
"#;

/// Starts a shim exactly as the published host does (`fork(entrypoint, [], {stdio: pipe×3 +
/// ipc, execArgv: [], env: minimal, detached: false})`, no cwd option) and plays steps:
/// `{"send": line}`, `{"expect": text}` (wait for a stdout line containing it),
/// `{"signal": name}`, `{"close": true}` (end stdin). Prints one JSON summary line.
const FORK_DRIVER: &str = r#"
import { fork } from "node:child_process";
import { createInterface } from "node:readline";
const [shim, stepsJson] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const env = { PATH: process.env.PATH ?? "", NODE_PATH: "", PAPERCLIP_PLUGIN_ID: "00000000-0000-4000-8000-000000000000",
  NODE_ENV: "production", TZ: "UTC", PAPERCLIP_DEPLOYMENT_MODE: "", PAPERCLIP_DEPLOYMENT_EXPOSURE: "" };
const child = fork(shim, [], { stdio: ["pipe", "pipe", "pipe", "ipc"], execArgv: [], env, detached: false });
const lines = [], stderr = [];
let waiter = null;
createInterface({ input: child.stdout }).on("line", (l) => { lines.push(l); if (waiter && l.includes(waiter.text)) { const w = waiter; waiter = null; w.resolve(); } });
createInterface({ input: child.stderr }).on("line", (l) => stderr.push(l));
child.stdin.on("error", () => {});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
const deadline = setTimeout(() => { console.log(JSON.stringify({ lines, stderr, timedOut: true })); child.kill("SIGKILL"); process.exit(3); }, 20000);
for (const step of steps) {
  if (step.send !== undefined) child.stdin.write(step.send + "\n");
  else if (step.expect !== undefined) { if (!lines.some((l) => l.includes(step.expect))) await new Promise((resolve) => { waiter = { text: step.expect, resolve }; }); }
  else if (step.signal !== undefined) child.kill(step.signal);
  else if (step.close) child.stdin.end();
}
const { code, signal } = await exited;
await new Promise((r) => setTimeout(r, 50));
clearTimeout(deadline);
console.log(JSON.stringify({ lines, stderr, code, signal, shimPid: child.pid }));
// Do not wait for a process that outlived the shim and still holds the stdio pipes.
process.exit(0);
"#;

/// A fresh, empty directory for one test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sc-package-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn real_host_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/real-host")
}

fn write_stand_in(dir: &Path) -> PathBuf {
    let path = dir.join("stand-in-worker");
    fs::write(&path, STAND_IN).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn run_package(args: &[&str]) -> Output {
    Command::new(BIN).arg("package").args(args).output().unwrap()
}

fn package_ok(worker: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--worker", worker.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = run_package(&args);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "package failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn manifest_of(worker: &Path, args: &[&str]) -> Value {
    let out = Command::new(worker).arg("--manifest").args(args).output().unwrap();
    assert!(out.status.success(), "{} --manifest failed", worker.display());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The default export of `dist/manifest.js`, loaded with `import()` from a CommonJS context
/// (`node -e`), as the host loads it.
fn imported_manifest(plugin: &Path, cwd: &Path) -> Value {
    let module = plugin.join("dist/manifest.js");
    let script = format!(
        "import({}).then(m => console.log(JSON.stringify(m.default)))",
        serde_json::to_string(&format!("file://{}", module.display())).unwrap()
    );
    let out = Command::new("node").arg("-e").arg(script).current_dir(cwd).output().unwrap();
    assert!(out.status.success(), "node import failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn with_shim_entrypoint(mut manifest: Value) -> Value {
    manifest["entrypoints"]["worker"] = json!("./dist/worker.cjs");
    manifest
}

fn assert_layout(out: &Path, binary_name: &str, stdout: &str) {
    for rel in ["package.json", "dist/manifest.js", "dist/worker.cjs"] {
        assert!(out.join(rel).is_file(), "{rel} missing");
        assert!(stdout.contains(&format!("wrote {}", out.join(rel).display())), "{stdout}");
    }
    let bin = out.join("bin").join(binary_name);
    let mode = fs::metadata(&bin).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "bin/{binary_name} mode");
    assert!(stdout.contains(&format!("wrote {}", bin.display())), "{stdout}");
}

fn drive_shim(plugin: &Path, cwd: &Path, steps: Value) -> Value {
    let driver = cwd.join("fork-driver.mjs");
    fs::write(&driver, FORK_DRIVER).unwrap();
    let out = Command::new("node")
        .arg(&driver)
        .arg(plugin.join("dist/worker.cjs"))
        .arg(steps.to_string())
        .current_dir(cwd)
        .env_remove("HOME")
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let summary: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("driver printed no summary ({e}): {stdout}"));
    assert_ne!(summary["timedOut"], json!(true), "the shim did not finish: {summary}");
    summary
}

/// Packages the stand-in into `<tmp>/plugin` and returns (tmp, plugin dir, worker path).
fn packaged_stand_in(tag: &str) -> (TempDir, PathBuf) {
    let tmp = TempDir::new(tag);
    let worker = write_stand_in(tmp.path());
    let out = tmp.path().join("plugin");
    package_ok(&worker, &out, &[]);
    (tmp, out)
}

/// True when the process is gone or a zombie.
fn process_gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
    }
}

fn wait_gone(pid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(300) {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn package_writes_the_plugin_folder() {
    let tmp = TempDir::new("layout");
    let worker = write_stand_in(tmp.path());
    let out = tmp.path().join("plugin");
    let stdout = package_ok(&worker, &out, &[]);
    assert!(
        stdout.starts_with("packaged paperclip-plugin-acme.stand-in@1.2.3 for paperclip-2026-11")
    );
    assert_layout(&out, "stand-in-worker", &stdout);

    let pkg: Value =
        serde_json::from_str(&fs::read_to_string(out.join("package.json")).unwrap()).unwrap();
    assert_eq!(pkg["name"], "paperclip-plugin-acme.stand-in");
    assert_eq!(pkg["version"], "1.2.3");
    assert_eq!(pkg["type"], "module");
    assert_eq!(pkg["files"], json!(["dist", "bin"]));
    assert_eq!(
        pkg["paperclipPlugin"],
        json!({"manifest": "./dist/manifest.js", "worker": "./dist/worker.cjs"})
    );

    // paperclip-2026-11 keeps the November fields; only the worker entrypoint changes.
    let expected = with_shim_entrypoint(manifest_of(&worker, &[]));
    assert_eq!(imported_manifest(&out, tmp.path()), expected);
    assert_eq!(expected["environmentDrivers"][0]["defaultAcquireTimeoutMs"], 60000);

    // Packaging again into the same folder replaces the files.
    package_ok(&worker, &out, &["--name", "@acme/plugin-stand-in"]);
    let pkg: Value =
        serde_json::from_str(&fs::read_to_string(out.join("package.json")).unwrap()).unwrap();
    assert_eq!(pkg["name"], "@acme/plugin-stand-in");
}

#[test]
fn profile_2026_09_strips_november_fields_and_passes_the_published_schema() {
    let tmp = TempDir::new("p09");
    let worker = write_stand_in(tmp.path());
    let out09 = tmp.path().join("plugin-09");
    let stdout = package_ok(&worker, &out09, &["--profile", "paperclip-2026-09"]);
    assert!(stdout.contains("the binary refused --profile"), "{stdout}");
    assert!(stdout.contains("removed environmentDrivers[0].defaultAcquireTimeoutMs"), "{stdout}");
    assert!(stdout.contains("removed environmentDrivers[0].creationOperationVersion"), "{stdout}");

    let mut expected = with_shim_entrypoint(manifest_of(&worker, &[]));
    let driver = expected["environmentDrivers"][0].as_object_mut().unwrap();
    driver.shift_remove("defaultAcquireTimeoutMs");
    driver.shift_remove("creationOperationVersion");
    let manifest09 = imported_manifest(&out09, tmp.path());
    assert_eq!(manifest09, expected);

    let out11 = tmp.path().join("plugin-11");
    package_ok(&worker, &out11, &[]);
    let manifest11 = imported_manifest(&out11, tmp.path());

    // The published validator: @paperclipai/shared 2026.916.1 pluginManifestV1Schema.
    ensure_real_host_deps();
    assert_eq!(published_verdict(&manifest09), json!({"ok": true}));
    let rejected = published_verdict(&manifest11);
    assert_eq!(rejected["ok"], false, "the published host must reject the November fields");
    assert!(rejected.to_string().contains("unrecognized_keys"), "{rejected}");
}

/// The verdict of the published validator (`pluginManifestV1Schema` of @paperclipai/shared
/// 2026.916.1): `{"ok": true}` or `{"ok": false, "issues": [...]}`.
fn published_verdict(manifest: &Value) -> Value {
    ensure_real_host_deps();
    let script = "import { pluginManifestV1Schema } from '@paperclipai/shared';\n\
         const r = pluginManifestV1Schema.safeParse(JSON.parse(process.argv[1]));\n\
         console.log(JSON.stringify(r.success ? { ok: true } : { ok: false, issues: r.error.issues }));";
    let out = Command::new("node")
        .args(["--input-type=module", "-e", script])
        .arg(manifest.to_string())
        .current_dir(real_host_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ensure_real_host_deps() {
    support::ensure_npm_project(&real_host_dir(), "@paperclipai/shared");
}

#[test]
fn shim_runs_from_another_cwd_without_home_and_propagates_the_exit_code() {
    let (tmp, plugin) = packaged_stand_in("cwd");
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let s = drive_shim(
        &plugin,
        &elsewhere,
        json!([{"send": "info"}, {"expect": "pid="}, {"send": "exit 7"}]),
    );
    let info = s["lines"][0].as_str().unwrap();
    let expected_cwd = fs::canonicalize(&elsewhere).unwrap();
    assert!(
        info.starts_with(&format!(
            "cwd={} home=unset fd3=closed chan=unset",
            expected_cwd.display()
        )),
        "{info}"
    );
    assert_eq!(s["code"], 7, "{s}");
    assert_eq!(s["signal"], Value::Null);

    let s = drive_shim(&plugin, &elsewhere, json!([{"send": "info"}, {"close": true}]));
    assert_eq!(s["code"], 0, "stdin EOF ends the worker and the shim: {s}");
}

#[test]
fn shim_forwards_signals_and_reraises_the_childs_signal() {
    let (tmp, plugin) = packaged_stand_in("signals");
    for (signal, code) in [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", 130)] {
        let s = drive_shim(
            &plugin,
            tmp.path(),
            json!([{"send": "wait"}, {"expect": "waiting"}, {"signal": signal}]),
        );
        let got = format!("got-{}", &signal[3..]);
        assert!(s["lines"].as_array().unwrap().iter().any(|l| l == &json!(got)), "{signal}: {s}");
        assert_eq!(s["code"], code, "{signal}: {s}");
    }
    let s = drive_shim(&plugin, tmp.path(), json!([{"send": "selfkill"}]));
    assert_eq!(s["signal"], "SIGKILL", "the shim dies of the child's signal: {s}");
    assert_eq!(s["code"], Value::Null);
}

#[test]
fn sigkill_of_the_shim_leaves_no_orphan() {
    let (tmp, plugin) = packaged_stand_in("orphan");
    let s = drive_shim(
        &plugin,
        tmp.path(),
        json!([{"send": "info"}, {"expect": "pid="}, {"signal": "SIGKILL"}]),
    );
    assert_eq!(s["signal"], "SIGKILL", "{s}");
    let info = s["lines"][0].as_str().unwrap();
    let pid: u32 = info.rsplit("pid=").next().unwrap().parse().unwrap();
    // The stand-in has no PR_SET_PDEATHSIG: it ends on stdin EOF, once the host side (the
    // driver) has closed its end of the pipe.
    assert!(wait_gone(pid), "worker {pid} outlived its SIGKILLed shim");
}

#[test]
fn a_missing_binary_is_reported_by_the_shim() {
    let (tmp, plugin) = packaged_stand_in("missing");
    fs::remove_file(plugin.join("bin/stand-in-worker")).unwrap();
    let s = drive_shim(&plugin, tmp.path(), json!([]));
    assert_eq!(s["code"], 127, "{s}");
    let stderr = s["stderr"].to_string();
    assert!(stderr.contains("paperclip worker shim: cannot start"), "{stderr}");
    assert_eq!(s["lines"], json!([]), "nothing on stdout");
}

#[test]
fn usage_and_io_errors_exit_2_with_one_line() {
    let tmp = TempDir::new("errors");
    let out = tmp.path().join("plugin");
    let out_s = out.to_str().unwrap();
    let one_error_line = |output: &Output| {
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        stderr.into_owned()
    };

    let missing = tmp.path().join("nope");
    let e = one_error_line(&run_package(&["--worker", missing.to_str().unwrap(), "--out", out_s]));
    assert!(e.contains("worker binary") && e.contains("nope"), "{e}");

    let garbage = tmp.path().join("garbage");
    fs::write(&garbage, "#!/bin/sh\necho not json\n").unwrap();
    fs::set_permissions(&garbage, fs::Permissions::from_mode(0o755)).unwrap();
    let e = one_error_line(&run_package(&["--worker", garbage.to_str().unwrap(), "--out", out_s]));
    assert!(e.contains("--manifest") && e.contains("other than one JSON object"), "{e}");
    assert!(e.contains(r#"stdout was "not json\n""#), "what the worker printed is shown: {e}");

    // A print before the manifest (a `println!` in `main` before `run_plugin`): what was printed
    // is shown, escaped and on the one error line, with the likely cause.
    let chatty = tmp.path().join("chatty");
    let script = format!("#!/bin/sh\nprintf 'starting\\033[0m\\n'\n{}", &STAND_IN[10..]);
    fs::write(&chatty, script).unwrap();
    fs::set_permissions(&chatty, fs::Permissions::from_mode(0o755)).unwrap();
    let e = one_error_line(&run_package(&["--worker", chatty.to_str().unwrap(), "--out", out_s]));
    assert!(e.contains(r#"stdout was "starting\u001b[0m\n{\"id\":\"acme.stand-in\""#), "{e}");
    assert!(e.contains("bytes in all)"), "the output is cut: {e}");
    assert!(e.contains("A JSON object starts on line 2"), "{e}");
    assert!(!e.contains('\u{1b}'), "escaped: {e}");

    let failing = tmp.path().join("failing");
    fs::write(&failing, "#!/bin/sh\necho 'boom: no manifest here' >&2\nexit 4\n").unwrap();
    fs::set_permissions(&failing, fs::Permissions::from_mode(0o755)).unwrap();
    let e = one_error_line(&run_package(&["--worker", failing.to_str().unwrap(), "--out", out_s]));
    assert!(e.contains("boom: no manifest here"), "{e}");

    let worker = write_stand_in(tmp.path());
    let w = worker.to_str().unwrap();
    let e = one_error_line(&run_package(&["--worker", w, "--out", out_s, "--name", "Bad Name"]));
    assert!(e.contains("Bad Name"), "{e}");

    let file_as_out = tmp.path().join("a-file");
    fs::write(&file_as_out, "").unwrap();
    one_error_line(&run_package(&["--worker", w, "--out", file_as_out.to_str().unwrap()]));
    assert!(!out.exists(), "nothing written on errors");

    let usage = run_package(&["--worker", w]);
    assert_eq!(usage.status.code(), Some(2), "clap usage error");
    let usage = run_package(&["--worker", w, "--out", out_s, "--profile", "paperclip-2026-10"]);
    assert_eq!(usage.status.code(), Some(2), "unknown profile");
}

fn local_provider() -> PathBuf {
    support::local_provider()
}

#[test]
fn local_provider_packages_for_both_profiles() {
    let worker = local_provider();
    let tmp = TempDir::new("local");
    for profile in ["paperclip-2026-11", "paperclip-2026-09"] {
        let out = tmp.path().join(profile);
        let stdout = package_ok(&worker, &out, &["--profile", profile]);
        assert_layout(&out, "local-provider", &stdout);
        let imported = imported_manifest(&out, tmp.path());
        assert_eq!(imported["entrypoints"]["worker"], "./dist/worker.cjs");
        // The binary's own output for the profile (plain `--manifest` when it refused
        // `--profile`), minus the November-only driver fields for 2026-09.
        let mut expected = if stdout.contains("(manifest from --manifest --profile)") {
            manifest_of(&worker, &["--profile", profile])
        } else {
            manifest_of(&worker, &[])
        };
        if profile == "paperclip-2026-09" {
            for driver in expected["environmentDrivers"].as_array_mut().into_iter().flatten() {
                let d = driver.as_object_mut().unwrap();
                d.shift_remove("defaultAcquireTimeoutMs");
                d.shift_remove("creationOperationVersion");
            }
        }
        let expected = with_shim_entrypoint(expected);
        assert_eq!(imported, expected, "{profile}");
        if profile == "paperclip-2026-09" {
            assert_eq!(published_verdict(&imported), json!({"ok": true}));
        }
    }
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if ppid == Some(&pid.to_string()) {
            out.push(child);
        }
    }
    out
}

/// SIGKILL of the shim while its stdin stays open (so the worker sees no EOF): the Rust SDK's
/// PR_SET_PDEATHSIG must end the native worker.
#[test]
fn local_provider_dies_with_its_sigkilled_shim_by_pdeathsig() {
    let worker = local_provider();
    let tmp = TempDir::new("pdeathsig");
    let plugin = tmp.path().join("plugin");
    package_ok(&worker, &plugin, &[]);
    let mut shim = Command::new("node")
        .arg(plugin.join("dist/worker.cjs"))
        .current_dir(tmp.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Once the worker answers initialize, its runtime has set PR_SET_PDEATHSIG.
    let mut stdin_kept_open = shim.stdin.take().unwrap();
    let manifest = imported_manifest(&plugin, tmp.path());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"manifest": manifest, "config": {}, "databaseNamespace": null}});
    writeln!(stdin_kept_open, "{init}").unwrap();
    let stdout = shim.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // The reader hands stdout back with the line: a host that closes the worker's stdout ends
    // the worker at once (the SDK runtime's closed-stdout rule), which is not what this test
    // is about, so the pipe stays open until the shim is killed.
    std::thread::spawn(move || {
        let mut line = String::new();
        let mut reader = BufReader::new(stdout);
        let _ = reader.read_line(&mut line);
        let _ = tx.send((line, reader));
    });
    let (answer, _stdout_kept_open) =
        rx.recv_timeout(Duration::from_secs(300)).expect("no initialize answer");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["ok"], true, "{answer}");
    let native = children_of(shim.id());
    assert_eq!(native.len(), 1, "the shim has one native child");
    shim.kill().unwrap();
    shim.wait().unwrap();
    for pid in native {
        assert!(wait_gone(pid), "native worker {pid} outlived its SIGKILLed shim");
    }
}
