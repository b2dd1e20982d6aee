//! The book's Quick start, followed verbatim in an empty directory, must produce a provider that
//! passes the harness.
//!
//! The blocks of `book/src/quick-start.md` whose info string carries `quickstart` are replayed
//! in order: `sh` blocks run as one bash script (`set -euo pipefail`), and the one `rust` block
//! is written to `src/main.rs` at that point of the script. The documented substitutions:
//! `git clone <repository>` becomes a symbolic link to this checkout under the same name;
//! `cargo install … --path …` gets `--debug` (for `--profile dev-tool`) and installs into the scratch directory
//! (`CARGO_INSTALL_ROOT`, whose `bin` is put first on `PATH`, so the installed harness is the
//! one the later steps run); every build uses this checkout's target directory
//! (`CARGO_TARGET_DIR`, to reuse compiled dependencies), so `target/debug/` reads from there;
//! and `sandbox-conformance run` gets `--env TMPDIR=…`, a temporary directory of the test's, so
//! the provider's root is where the test looks.
//! Any other `--git` or `git` line fails the test, so the chapter cannot grow an unreplayed step.
//!
//! The README's "from a checkout" install block must be the same lines as the chapter's first
//! two steps, so this replay also follows the README literally.
//!
//! After the replay, the plugin folder the chapter's `sandbox-conformance package` step wrote
//! (`target/plugin` in the new crate) must have the layout the packaging chapter describes, and,
//! when `node` is on `PATH`, `import()` of its `dist/manifest.js` must yield the manifest the
//! binary prints as the default export. Nothing the provider made may be left in its
//! temporary directory: no `lease-*` directory and no root of its own (`dir-provider-<pid>`),
//! which its `shutdown` removes; a direct session with the binary sees the root with a lease in
//! it before `shutdown` and gone after.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

/// One replayed block.
#[derive(Debug)]
enum Step {
    /// Shell commands, run as written (after the substitutions).
    Shell(String),
    /// A file written verbatim.
    File { path: String, contents: String },
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// The `quickstart` blocks of a chapter, in order.
fn steps(markdown: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else { continue };
        let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim_start() != "```").collect();
        let tags: Vec<&str> = info.split(',').map(str::trim).collect();
        if !tags.contains(&"quickstart") {
            continue;
        }
        if tags[0] == "rust" {
            // rustdoc's hidden lines (`# `) are part of the file.
            let contents: Vec<&str> = body
                .iter()
                .map(|l| if *l == "#" { "" } else { l.strip_prefix("# ").unwrap_or(l) })
                .collect();
            let path = "src/main.rs".to_owned();
            steps.push(Step::File { path, contents: contents.join("\n") + "\n" });
        } else {
            assert_eq!(tags[0], "sh", "a quickstart command block must be `sh`: {info}");
            steps.push(Step::Shell(body.join("\n")));
        }
    }
    steps
}

/// The repository URL the chapter clones.
const REPOSITORY: &str = "https://github.com/paperclip-sandbox/paperclip-sandbox";

/// The script for `steps`, with the documented substitutions.
fn script(steps: &[Step], workspace: &Path) -> String {
    let mut out = String::from("set -euxo pipefail\n");
    for step in steps {
        match step {
            Step::Shell(commands) => {
                for line in commands.lines() {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let line = match words.as_slice() {
                        ["git", "clone", url, dir] if *url == REPOSITORY => {
                            format!("ln -s '{}' {dir}", workspace.display())
                        }
                        ["git", "clone", url] if *url == REPOSITORY => {
                            format!("ln -s '{}' paperclip-sandbox", workspace.display())
                        }
                        ["cargo", "install", rest @ ..] if rest.contains(&"--path") => {
                            format!("{} --debug", line.replace(" --profile dev-tool", ""))
                        }
                        // The harness gives the worker a host-like environment without TMPDIR;
                        // pass the test's on, so what the provider leaves under its temporary
                        // directory is seen.
                        ["sandbox-conformance", "run", ..] if line.contains(" -- ") => line
                            .replacen(" -- ", " --env TMPDIR=\"$TMPDIR\" -- ", 1)
                            .replace("target/debug/", "\"$CARGO_TARGET_DIR\"/debug/"),
                        _ => {
                            assert!(!line.contains("--git"), "unreplayable git step: {line}");
                            assert!(words.first() != Some(&"git"), "unreplayable git step: {line}");
                            line.replace("target/debug/", "\"$CARGO_TARGET_DIR\"/debug/")
                        }
                    };
                    out.push_str(&line);
                    out.push('\n');
                }
            }
            Step::File { path, contents } => {
                assert!(!contents.contains("QUICKSTART_EOF"));
                out.push_str(&format!(
                    "cat > '{path}' <<'QUICKSTART_EOF'\n{contents}QUICKSTART_EOF\n"
                ));
            }
        }
    }
    out
}

/// The lines of the README's "from a checkout" block (the `sh` block after its marker comment).
fn readme_checkout_lines(readme: &str) -> Vec<String> {
    let marker = readme.find("<!-- checkout-install").expect("the README marks its checkout block");
    let block = &readme[marker..];
    let start = block.find("```sh\n").expect("an sh block after the marker") + "```sh\n".len();
    let end = block[start..].find("```").expect("the block ends") + start;
    block[start..end].lines().map(str::to_owned).collect()
}

#[test]
fn the_readme_checkout_steps_are_the_quick_starts() {
    let workspace = workspace();
    let readme = std::fs::read_to_string(workspace.join("README.md")).unwrap();
    let chapter = std::fs::read_to_string(workspace.join("book/src/quick-start.md")).unwrap();
    let replayed: Vec<String> = steps(&chapter)
        .iter()
        .take_while(|s| matches!(s, Step::Shell(_)))
        .flat_map(|s| match s {
            Step::Shell(c) => c.lines().map(str::to_owned).collect::<Vec<_>>(),
            Step::File { .. } => vec![],
        })
        .collect();
    let readme_lines = readme_checkout_lines(&readme);
    assert!(readme_lines.iter().any(|l| l.starts_with("cargo install")), "{readme_lines:?}");
    assert_eq!(
        readme_lines, replayed,
        "README.md's checkout block and the Quick start's steps 1-2"
    );
}

#[test]
fn quick_start_chapter_produces_a_conforming_provider() {
    let workspace = workspace();
    let chapter = std::fs::read_to_string(workspace.join("book/src/quick-start.md")).unwrap();
    let steps = steps(&chapter);
    let files = steps.iter().filter(|s| matches!(s, Step::File { .. })).count();
    assert_eq!(files, 1, "the chapter writes src/main.rs once: {steps:?}");
    for step in &steps {
        if let Step::File { contents, .. } = step {
            let lines = contents.lines().count();
            assert!(lines <= 80, "the Quick start provider is {lines} lines; keep it at most 80");
            // A hook names a `Context` only to use it.
            for unused in ["_: Context", "_cx: Context"] {
                assert!(!contents.contains(unused), "the Quick start names an unused Context");
            }
        }
    }
    let commands = steps.iter().filter_map(|s| match s {
        Step::Shell(c) => Some(c.as_str()),
        Step::File { .. } => None,
    });
    let commands: String = commands.collect::<Vec<_>>().join("\n");
    for needed in [
        "cargo install --locked --profile dev-tool --path paperclip-sandbox/conformance",
        "cargo new",
        "cargo build",
        "sandbox-conformance run --",
        "sandbox-conformance package --worker target/debug/dir-provider --out target/plugin",
    ] {
        assert!(commands.contains(needed), "the chapter runs `{needed}`");
    }

    let script = script(&steps, &workspace);
    let scratch = std::env::temp_dir().join(format!("quick-start-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    // The harness the chapter installs goes here, not into ~/.cargo/bin.
    let install_root = scratch.join("cargo-root");
    // The provider keeps its leases under the temporary directory: give it one of its own, to
    // see what it leaves behind.
    let tmp = scratch.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let path = std::env::join_paths(
        std::iter::once(install_root.join("bin"))
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let started = Instant::now();
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&scratch)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_INSTALL_ROOT", &install_root)
        .env("CARGO_TERM_COLOR", "never")
        .env("TMPDIR", &tmp)
        .output()
        .expect("bash runs");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the quick start failed ({:?}) after {elapsed:?}\n--- script\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(stdout.contains("Temporary directory"), "the manifest was printed:\n{stdout}");
    // Not a single failure, SHOULD requirements included (`lifecycle.remote-cwd` needs the
    // lease's `remoteCwd`).
    assert!(stdout.contains(" passed, 0 failed (0 MUST)"), "the harness run:\n{stdout}");
    // The chapter prints the summary both runs end with (one per host profile): it must be
    // the summary they really print.
    let chapter = std::fs::read_to_string(workspace.join("book/src/quick-start.md")).unwrap();
    let is_summary = |l: &&str| l.contains(" passed, ") && l.trim_end().ends_with(" stale");
    let promised = chapter.lines().find(is_summary).expect("the chapter shows a summary");
    let printed: Vec<&str> = stdout.lines().filter(is_summary).map(str::trim).collect();
    assert_eq!(printed, [promised.trim(); 2], "the chapter's summary is the runs' own");
    assert!(
        install_root.join("bin/sandbox-conformance").is_file(),
        "the chapter's `cargo install` installed the harness the later steps ran"
    );
    eprintln!("quick start replayed in {elapsed:?}");
    check_plugin_folder(&scratch.join("dir-provider/target/plugin"), &target.join("debug"));
    let left = lease_dirs(&tmp);
    assert!(left.is_empty(), "the harness run left lease directories behind: {left:?}");
    let roots = provider_roots(&tmp);
    assert!(roots.is_empty(), "the provider's root outlived its worker: {roots:?}");
    shutdown_removes_the_root(&target.join("debug/dir-provider"), &tmp);
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The providers' own roots (`dir-provider-<pid>`) directly in `tmp`.
fn provider_roots(tmp: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(tmp).into_iter().flatten().flatten();
    entries
        .filter(|e| e.file_name().to_string_lossy().starts_with("dir-provider-"))
        .map(|e| e.path())
        .collect()
}

/// One session with the Quick start binary: after an acquire its root (under `tmp`) holds the
/// lease; after `shutdown` the worker has exited and the root is gone.
fn shutdown_removes_the_root(binary: &Path, tmp: &Path) {
    use std::io::{BufRead, BufReader, Write};
    use std::time::Duration;
    let mut child = Command::new(binary)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("TMPDIR", tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the quick start's binary runs");
    let root = tmp.join(format!("dir-provider-{}", child.id()));
    let mut stdin = child.stdin.take().unwrap();
    let (tx, answers) = std::sync::mpsc::channel::<Value>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut call = |id: u32, method: &str, params: Value| -> Value {
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        loop {
            let v = answers.recv_timeout(Duration::from_secs(300)).expect("an answer");
            if v["id"] == id {
                return v;
            }
        }
    };
    call(1, "initialize", serde_json::json!({"manifest": {}, "config": {}}));
    let acquired = call(
        2,
        "environmentAcquireLease",
        serde_json::json!({"driverKey": "dir", "companyId": "c", "environmentId": "e",
            "config": {}, "runId": "r"}),
    );
    let lease = acquired["result"]["providerLeaseId"].as_str().expect("a lease").to_owned();
    assert!(root.join(&lease).is_dir(), "the lease {lease} is a directory in {}", root.display());
    let done = call(3, "shutdown", serde_json::json!({}));
    assert!(done.get("result").is_some(), "{done}");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the worker did not exit after shutdown");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!root.exists(), "shutdown left the provider's root {}", root.display());
    eprintln!("dir-provider: the root held {lease} before shutdown and is gone after");
}

/// Every `lease-*` directory under `dir`, at any depth.
fn lease_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name().to_string_lossy().starts_with("lease-") {
                found.push(path.clone());
            }
            found.extend(lease_dirs(&path));
        }
    }
    found
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The folder written by the chapter's packaging step, against the binary in `bin_dir`.
fn check_plugin_folder(plugin: &Path, bin_dir: &Path) {
    let printed = Command::new(bin_dir.join("dir-provider"))
        .arg("--manifest")
        .stdin(Stdio::null())
        .output()
        .expect("the quick start's binary runs");
    assert!(printed.status.success(), "dir-provider --manifest: {printed:?}");
    let mut manifest: Value = serde_json::from_slice(&printed.stdout).expect("a JSON manifest");
    manifest["entrypoints"]["worker"] = "./dist/worker.cjs".into();

    let pkg = read_json(&plugin.join("package.json"));
    assert_eq!(pkg["name"], "paperclip-plugin-acme.dir-provider", "{pkg:#}");
    assert_eq!(pkg["version"], manifest["version"], "{pkg:#}");
    assert_eq!(pkg["type"], "module", "{pkg:#}");
    assert_eq!(pkg["paperclipPlugin"]["manifest"], "./dist/manifest.js", "{pkg:#}");
    assert_eq!(pkg["paperclipPlugin"]["worker"], "./dist/worker.cjs", "{pkg:#}");

    let module = std::fs::read_to_string(plugin.join("dist/manifest.js")).unwrap();
    assert!(module.contains("export default manifest;"), "{module}");
    let shim = std::fs::read_to_string(plugin.join("dist/worker.cjs")).unwrap();
    assert!(shim.contains(r#"path.join(__dirname, "..", "bin", "dir-provider")"#), "{shim}");
    let bin = plugin.join("bin/dir-provider");
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        std::fs::read(bin_dir.join("dir-provider")).unwrap(),
        "bin/dir-provider is a copy of the binary"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&bin).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "bin/dir-provider mode {mode:o}");
    }

    let node = Command::new("node").arg("--version").stdin(Stdio::null()).output();
    if !node.is_ok_and(|o| o.status.success()) {
        eprintln!("node is not installed: import() of dist/manifest.js not checked");
        return;
    }
    let imported = Command::new("node")
        .args([
            "--input-type=module",
            "-e",
            "import { pathToFileURL } from 'node:url';\n\
             const m = await import(pathToFileURL(process.argv[1]).href);\n\
             process.stdout.write(JSON.stringify(m.default));",
        ])
        .arg(plugin.join("dist/manifest.js"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(imported.status.success(), "import() of dist/manifest.js: {imported:?}");
    let exported: Value = serde_json::from_slice(&imported.stdout).expect("JSON from node");
    assert_eq!(exported, manifest, "the default export of dist/manifest.js");
}
