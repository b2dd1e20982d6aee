//! Turn a native provider binary into an npm-installable Paperclip plugin folder.
//!
//! The published Paperclip host
//! starts every plugin worker with Node's `child_process.fork()`, so the worker entrypoint must be
//! a JavaScript module, and it loads the plugin manifest with a dynamic `import()`. [`package`]
//! writes a folder that satisfies both, around an unchanged native binary:
//!
//! ```text
//! <out>/package.json      name, version, "type": "module", files,
//!                         paperclipPlugin: { manifest: "./dist/manifest.js",
//!                                            worker: "./dist/worker.cjs" }
//! <out>/dist/manifest.js  export default <the binary's `--manifest` output>
//! <out>/dist/worker.cjs   the shim (below)
//! <out>/bin/<binary>      a copy of the binary, mode 0755
//! ```
//!
//! # The manifest module
//!
//! The manifest is the JSON printed by `<binary> --manifest` (for `paperclip-2026-09`:
//! `<binary> --manifest --profile paperclip-2026-09`, falling back to plain `--manifest` when
//! the binary does not accept `--profile`). Its `entrypoints.worker` is set to
//! `./dist/worker.cjs`. For `paperclip-2026-09` the November-only driver fields
//! `defaultAcquireTimeoutMs` and `creationOperationVersion` are removed, because the published
//! host's strict driver schema rejects them.
//!
//! The package is `"type": "module"`, so `dist/manifest.js` is an ES module whose default export
//! is the manifest, exactly what the host's `import(pathToFileURL(path))` expects; the shim is
//! CommonJS through its `.cjs` extension whatever the package type.
//!
//! # The worker shim (`dist/worker.cjs`)
//!
//! The shim `spawn()`s the binary with `stdio: ["inherit", "inherit", "inherit"]`, so the host's
//! stdin and stdout pipes reach the binary unchanged and NDJSON flows with no copy in between.
//! Design rules and caveats:
//!
//! 1. **cwd is the host's.** The binary is found at `path.join(__dirname, "..", "bin", name)`,
//!    never relative to the working directory.
//! 2. **Minimal environment, no HOME.** The shim reads no variable; the binary gets the
//!    environment the host gave the shim, minus Node's `NODE_CHANNEL_*` IPC variables.
//! 3. **No install scripts.** The host installs with `npm install --ignore-scripts`, so the
//!    binary ships inside the package. If a package manager dropped its executable bit, the
//!    shim restores mode 0755 before spawning when the folder is writable.
//! 4. **Orphans.** The host signals only the shim's pid. The shim forwards SIGTERM, SIGINT and
//!    SIGHUP to the binary (its handlers are installed before the binary starts, so an early
//!    signal cannot kill the shim and leave the binary behind), exits with the binary's exit
//!    code, and re-raises the signal that ended the binary. SIGKILL cannot be caught: when the shim is SIGKILLed, a worker built with
//!    the paperclip-sandbox Rust SDK gets SIGTERM through `PR_SET_PDEATHSIG` (Linux), and any
//!    worker sees EOF on stdin once the host closes its end of the pipe (Node destroys a
//!    child's stdin when the child exits). Workers that are not built with the SDK should exit
//!    on stdin EOF; on macOS, stdin EOF is the only notification.
//! 5. **The 15 s initialize budget** includes Node's start-up (tens of milliseconds) and the
//!    binary's.
//! 6. **IPC channel.** `fork()` gives the shim an IPC channel on fd 3. The shim passes only fds
//!    0–2 to the binary, and never uses the channel.
//! 7. **stdout belongs to the protocol.** The shim never creates `process.stdin` or
//!    `process.stdout` (creating a pipe stream would switch the shared file description to
//!    non-blocking mode under the binary). When the binary cannot be started, the shim writes
//!    one line to fd 2 with `fs.writeSync` and exits with 127 (126 when not executable).
//! 8. **Dev-mode `execArgv`.** For local-path installs the host may add `--import <tsx loader>`;
//!    the plain JavaScript shim is unaffected.
//!
//! The binary is platform-specific: the package installs anywhere but runs only where the binary
//! does. Publish one package per platform (or per-platform `optionalDependencies`) for more.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Map, Value};

/// The worker shim template; [`render_worker_shim`] fills in the binary name.
pub const WORKER_SHIM_TEMPLATE: &str = include_str!("package/worker.cjs");

/// The placeholder in [`WORKER_SHIM_TEMPLATE`] replaced by the binary name as a JSON string.
const BINARY_NAME_PLACEHOLDER: &str = "__BINARY_NAME_JSON__";

/// Path of the manifest module, relative to the package folder (as written in package.json).
pub const MANIFEST_MODULE: &str = "./dist/manifest.js";

/// Path of the worker shim, relative to the package folder (as written in package.json and in
/// the manifest's `entrypoints.worker`).
pub const WORKER_SHIM: &str = "./dist/worker.cjs";

/// Prefix the published host's npm discovery looks for (`NPM_PLUGIN_PACKAGE_PREFIX` in
/// dist/services/plugin-loader.js); unscoped packages without it are not discovered.
pub const NPM_PLUGIN_PREFIX: &str = "paperclip-plugin-";

/// Driver fields of the November contract that the published host 2026.916.1 rejects as
/// unrecognized keys.
pub const NOVEMBER_ONLY_DRIVER_FIELDS: [&str; 2] =
    ["defaultAcquireTimeoutMs", "creationOperationVersion"];

/// What to package.
#[derive(Debug, Clone)]
pub struct PackageOptions {
    /// The native worker binary; it must print its manifest for `--manifest`.
    pub worker: PathBuf,
    /// The plugin folder to write; created when missing. Files of the same name are replaced.
    pub out: PathBuf,
    /// The host profile the manifest targets.
    pub profile: HostProfile,
    /// The npm package name; default [`default_package_name`] of the manifest id.
    pub name: Option<String>,
}

/// How the manifest was obtained from the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestSource {
    /// `<binary> --manifest` (the `paperclip-2026-11` default).
    Plain,
    /// `<binary> --manifest --profile <profile>`.
    WithProfile,
    /// `--profile` was refused; plain `--manifest` was used instead.
    PlainFallback,
}

/// The result of [`package`].
#[derive(Debug, Clone)]
pub struct PackagedPlugin {
    /// The plugin folder.
    pub out: PathBuf,
    /// The npm package name written to package.json.
    pub package_name: String,
    /// The package version (the manifest version).
    pub version: String,
    /// How the manifest was obtained.
    pub manifest_source: ManifestSource,
    /// Driver fields removed for the profile, as `environmentDrivers[<i>].<field>`.
    pub stripped_fields: Vec<String>,
    /// The files written, relative to `out`, in writing order.
    pub files: Vec<PathBuf>,
}

/// A packaging failure.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The worker binary is missing or is not a file.
    #[error("worker binary {}: {reason}", path.display())]
    Worker {
        /// The binary path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Running the binary for its manifest failed.
    #[error("`{command}` failed: {detail}")]
    ManifestCommand {
        /// The command line.
        command: String,
        /// Exit status, spawn error, or what was printed instead of a JSON object.
        detail: String,
    },
    /// The manifest lacks a field packaging needs.
    #[error("the manifest from `{command}` has no string `{field}`")]
    ManifestField {
        /// The command line.
        command: String,
        /// The missing field.
        field: &'static str,
    },
    /// The npm package name is not valid.
    #[error("npm package name `{name}` is invalid: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// Reading or writing the plugin folder failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path being read or written.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PackageError + '_ {
    move |source| PackageError::Io { path: path.to_path_buf(), source }
}

/// Writes the plugin folder described in the module docs.
pub fn package(opts: &PackageOptions) -> Result<PackagedPlugin, PackageError> {
    let binary_name = binary_file_name(&opts.worker)?;
    // A bare name would be looked up on PATH by Command; the file checked is the one run.
    let worker = fs::canonicalize(&opts.worker).map_err(io_err(&opts.worker))?;
    let (mut manifest, manifest_source, command) = read_worker_manifest(&worker, opts.profile)?;
    let stripped_fields = if opts.profile.is_november() {
        Vec::new()
    } else {
        strip_november_driver_fields(&mut manifest)
    };
    set_worker_entrypoint(&mut manifest);

    let field = |field: &'static str| -> Result<String, PackageError> {
        manifest
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PackageError::ManifestField { command: command.clone(), field })
    };
    let id = field("id")?;
    let version = field("version")?;
    let package_name = match &opts.name {
        Some(name) => name.clone(),
        None => default_package_name(&id),
    };
    validate_npm_name(&package_name)
        .map_err(|reason| PackageError::InvalidName { name: package_name.clone(), reason })?;

    let out = &opts.out;
    let mut files = Vec::new();
    let mut write = |rel: &str, contents: &[u8]| -> Result<(), PackageError> {
        let path = out.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        fs::write(&path, contents).map_err(io_err(&path))?;
        files.push(PathBuf::from(rel));
        Ok(())
    };

    let package_json = render_package_json(&package_name, &version, &manifest);
    let mut package_json_text =
        serde_json::to_string_pretty(&package_json).expect("a JSON value always serializes");
    package_json_text.push('\n');
    write("package.json", package_json_text.as_bytes())?;
    write("dist/manifest.js", render_manifest_module(&manifest).as_bytes())?;
    write("dist/worker.cjs", render_worker_shim(&binary_name).as_bytes())?;

    let bin_rel = format!("bin/{binary_name}");
    let bin_path = out.join(&bin_rel);
    let bin_dir = out.join("bin");
    fs::create_dir_all(&bin_dir).map_err(io_err(&bin_dir))?;
    // Remove first: copying onto a running executable fails with ETXTBSY.
    match fs::remove_file(&bin_path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(&bin_path)(e)),
    }
    fs::copy(&worker, &bin_path).map_err(io_err(&bin_path))?;
    set_executable(&bin_path)?;
    files.push(PathBuf::from(bin_rel));

    Ok(PackagedPlugin {
        out: out.clone(),
        package_name,
        version,
        manifest_source,
        stripped_fields,
        files,
    })
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<(), PackageError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(io_err(path))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) -> Result<(), PackageError> {
    Ok(())
}

fn binary_file_name(worker: &Path) -> Result<String, PackageError> {
    let err =
        |reason: &str| PackageError::Worker { path: worker.to_path_buf(), reason: reason.into() };
    let meta = fs::metadata(worker).map_err(|e| err(&e.to_string()))?;
    if !meta.is_file() {
        return Err(err("not a file"));
    }
    worker
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| err("the file name is not UTF-8"))
}

/// Runs `<worker> --manifest` (with `--profile` for `paperclip-2026-09`, falling back to plain
/// `--manifest`) and returns the manifest, how it was obtained, and the command line used.
///
/// The binary runs with stdin closed, so a worker that ignores `--manifest` sees EOF and exits
/// instead of waiting for a host.
pub fn read_worker_manifest(
    worker: &Path,
    profile: HostProfile,
) -> Result<(Value, ManifestSource, String), PackageError> {
    if profile.is_november() {
        let (value, command) = run_manifest(worker, &["--manifest"])?;
        return Ok((value, ManifestSource::Plain, command));
    }
    match run_manifest(worker, &["--manifest", "--profile", profile.as_str()]) {
        Ok((value, command)) => Ok((value, ManifestSource::WithProfile, command)),
        Err(_) => {
            let (value, command) = run_manifest(worker, &["--manifest"])?;
            Ok((value, ManifestSource::PlainFallback, command))
        }
    }
}

fn run_manifest(worker: &Path, args: &[&str]) -> Result<(Value, String), PackageError> {
    let command = std::iter::once(worker.display().to_string())
        .chain(args.iter().map(|a| (*a).to_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let fail = |detail: String| PackageError::ManifestCommand { command: command.clone(), detail };
    let output = run_with_timeout(worker, args, MANIFEST_TIMEOUT).map_err(fail)?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(fail(format!("{} {}", output.status, last).trim_end().to_owned()));
    }
    match serde_json::from_slice::<Value>(&output.stdout) {
        Ok(value @ Value::Object(_)) => Ok((value, command)),
        Ok(_) => Err(fail(format!(
            "it printed JSON that is not an object; stdout was {}",
            shown_output(&output.stdout)
        ))),
        Err(_) if output.stdout.iter().all(u8::is_ascii_whitespace) => {
            Err(fail("it printed nothing on stdout".into()))
        }
        Err(e) => Err(fail(not_one_object(&output.stdout, &e))),
    }
}

/// At most this many bytes of a worker's `--manifest` output are shown in an error.
pub const SHOWN_OUTPUT_BYTES: usize = 400;

/// The worker's own `--manifest` output, for an error message: at most [`SHOWN_OUTPUT_BYTES`]
/// bytes, escaped as one JSON string (so control characters and invalid UTF-8 cannot reach the
/// terminal raw), followed by the total length when it was cut. The worker ran with no config
/// and an empty stdin, so this output holds nothing the harness gave it.
pub fn shown_output(stdout: &[u8]) -> String {
    let cut = stdout.len() > SHOWN_OUTPUT_BYTES;
    let kept = String::from_utf8_lossy(&stdout[..stdout.len().min(SHOWN_OUTPUT_BYTES)]);
    let escaped = serde_json::to_string(&kept).expect("a string serializes");
    if cut {
        format!("{escaped}… ({} bytes in all)", stdout.len())
    } else {
        escaped
    }
}

/// The explanation of `--manifest` output that is not one JSON object: the parse error, what was
/// printed, and, when a JSON object starts on a later line, the likely cause (something printed
/// before the manifest, e.g. a `println!` in `main` before `run_plugin`).
fn not_one_object(stdout: &[u8], error: &serde_json::Error) -> String {
    let text = String::from_utf8_lossy(stdout);
    let mut message = format!(
        "it printed something other than one JSON object ({error}); stdout was {}",
        shown_output(stdout)
    );
    let starts: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with('{'))
        .map(|(n, _)| n + 1)
        .collect();
    match starts.first() {
        Some(&line) if line > 1 => message.push_str(&format!(
            ". A JSON object starts on line {line}: something printed before the manifest \
             (`--manifest` must print only the manifest; write logs to stderr)"
        )),
        Some(_) if error.is_syntax() && error.line() > 1 => message.push_str(
            ". Something was printed after the manifest (`--manifest` must print only the \
             manifest; write logs to stderr)",
        ),
        _ => {}
    }
    message
}

/// How long `<binary> --manifest` may run before it is killed.
pub const MANIFEST_TIMEOUT: Duration = Duration::from_secs(60);

fn run_with_timeout(program: &Path, args: &[&str], timeout: Duration) -> Result<Output, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it did not exit within {} s", timeout.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Removes [`NOVEMBER_ONLY_DRIVER_FIELDS`] from every `environmentDrivers` entry and returns the
/// removed paths (`environmentDrivers[<i>].<field>`).
pub fn strip_november_driver_fields(manifest: &mut Value) -> Vec<String> {
    let mut removed = Vec::new();
    if let Some(drivers) = manifest.get_mut("environmentDrivers").and_then(Value::as_array_mut) {
        for (i, driver) in drivers.iter_mut().enumerate() {
            if let Some(driver) = driver.as_object_mut() {
                for field in NOVEMBER_ONLY_DRIVER_FIELDS {
                    if driver.shift_remove(field).is_some() {
                        removed.push(format!("environmentDrivers[{i}].{field}"));
                    }
                }
            }
        }
    }
    removed
}

/// Sets `entrypoints.worker` to [`WORKER_SHIM`], keeping other entrypoints.
pub fn set_worker_entrypoint(manifest: &mut Value) {
    let Some(obj) = manifest.as_object_mut() else { return };
    let entrypoints = obj.entry("entrypoints").or_insert_with(|| Value::Object(Map::new()));
    if !entrypoints.is_object() {
        *entrypoints = Value::Object(Map::new());
    }
    if let Some(e) = entrypoints.as_object_mut() {
        e.insert("worker".into(), Value::String(WORKER_SHIM.into()));
    }
}

/// The default npm package name for a manifest id: `paperclip-plugin-<id>`, or the id itself
/// when it already starts with [`NPM_PLUGIN_PREFIX`]. A valid manifest id
/// (`^[a-z0-9][a-z0-9._-]*$`) is already npm-safe; the prefix makes the published host's npm
/// discovery find the package (it scans `node_modules` for `paperclip-plugin-*` and
/// `@scope/plugin-*`). Characters npm does not allow are replaced with `-`.
pub fn default_package_name(manifest_id: &str) -> String {
    let cleaned: String = manifest_id
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    let name = if cleaned.starts_with(NPM_PLUGIN_PREFIX) {
        cleaned
    } else {
        format!("{NPM_PLUGIN_PREFIX}{cleaned}")
    };
    name.chars().take(214).collect()
}

/// Checks the npm rules for a new package name (those of `validate-npm-package-name`): 1–214
/// characters, lowercase, URL-safe (`a-z 0-9 - . _ ~`), not starting with `.` or `_`, optionally
/// scoped as `@scope/name`.
pub fn validate_npm_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.len() > 214 {
        return Err("it is longer than 214 characters");
    }
    let part_ok = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && !part.starts_with('_')
            && part.chars().all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-' | '.' | '_' | '~'))
    };
    let bare = match name.strip_prefix('@') {
        Some(scoped) => {
            let Some((scope, bare)) = scoped.split_once('/') else {
                return Err("a scoped name must look like @scope/name");
            };
            if !part_ok(scope) {
                return Err(
                    "the scope must be lowercase a-z 0-9 - . _ ~, not starting with . or _",
                );
            }
            bare
        }
        None => name,
    };
    if !part_ok(bare) {
        return Err("it must be lowercase a-z 0-9 - . _ ~ (and /), not starting with . or _");
    }
    if matches!(bare, "node_modules" | "favicon.ico") {
        return Err("the name is reserved");
    }
    Ok(())
}

/// The package.json of the plugin folder.
pub fn render_package_json(name: &str, version: &str, manifest: &Value) -> Value {
    let mut pkg = json!({
        "name": name,
        "version": version,
    });
    let obj = pkg.as_object_mut().expect("an object literal");
    if let Some(description) = manifest.get("description").and_then(Value::as_str) {
        obj.insert("description".into(), description.into());
    }
    obj.insert("type".into(), "module".into());
    obj.insert("files".into(), json!(["dist", "bin"]));
    obj.insert("keywords".into(), json!(["paperclip", "paperclip-plugin", "sandbox-provider"]));
    obj.insert(
        "paperclipPlugin".into(),
        json!({ "manifest": MANIFEST_MODULE, "worker": WORKER_SHIM }),
    );
    pkg
}

/// The ES module `dist/manifest.js`: `export default <manifest>`.
///
/// The manifest is written as a JSON literal, which is valid JavaScript; a manifest with a
/// `__proto__` key (which an object literal would turn into a prototype) is written as
/// `JSON.parse("<json>")` instead, so the default export always equals the JSON.
pub fn render_manifest_module(manifest: &Value) -> String {
    let pretty = serde_json::to_string_pretty(manifest).expect("a JSON value always serializes");
    let body = if has_proto_key(manifest) {
        let compact = manifest.to_string();
        format!("JSON.parse({})", serde_json::to_string(&compact).expect("a string serializes"))
    } else {
        pretty
    };
    format!(
        "// Generated by `sandbox-conformance package` from the worker's `--manifest` output.\n\
         // Do not edit: the Paperclip host loads this module with import() and reads its default\n\
         // export.\n\
         const manifest = {body};\n\
         export default manifest;\n"
    )
}

fn has_proto_key(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| k == "__proto__" || has_proto_key(v)),
        Value::Array(items) => items.iter().any(has_proto_key),
        _ => false,
    }
}

/// The worker shim `dist/worker.cjs` for a binary named `binary_name` in `bin/`.
pub fn render_worker_shim(binary_name: &str) -> String {
    let literal = serde_json::to_string(binary_name).expect("a string serializes");
    WORKER_SHIM_TEMPLATE.replace(BINARY_NAME_PLACEHOLDER, &literal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_error(text: &str) -> serde_json::Error {
        serde_json::from_str::<Value>(text).unwrap_err()
    }

    #[test]
    fn output_before_the_manifest_is_shown_escaped_with_the_likely_cause() {
        let out = "hello from main\u{1b}[31m\n{\"id\": \"x\"}\n";
        let message = not_one_object(out.as_bytes(), &parse_error(out));
        assert!(
            message.contains(r#"stdout was "hello from main\u001b[31m\n{\"id\": \"x\"}\n""#),
            "{message}"
        );
        assert!(message.contains("A JSON object starts on line 2"), "{message}");
        assert!(!message.contains('\u{1b}'), "control characters are escaped: {message}");
    }

    #[test]
    fn output_after_the_manifest_is_named() {
        let out = "{\"id\": \"x\"}\nbye\n";
        let message = not_one_object(out.as_bytes(), &parse_error(out));
        assert!(message.contains("Something was printed after the manifest"), "{message}");
    }

    #[test]
    fn shown_output_is_bounded() {
        let big = vec![b'a'; 10_000];
        let shown = shown_output(&big);
        assert!(shown.len() < SHOWN_OUTPUT_BYTES + 40, "{shown}");
        assert!(shown.ends_with("… (10000 bytes in all)"), "{shown}");
        // Invalid UTF-8 is shown lossily, never raw.
        assert_eq!(shown_output(b"\xff{"), "\"\u{fffd}{\"");
    }

    #[test]
    fn default_names_get_the_discovery_prefix_and_are_valid() {
        assert_eq!(default_package_name("acme.local"), "paperclip-plugin-acme.local");
        assert_eq!(default_package_name("paperclip-plugin-x"), "paperclip-plugin-x");
        assert_eq!(default_package_name("Acme Box"), "paperclip-plugin-acme-box");
        for id in ["acme.local", "a", "x_y-z.0", "Weird/Name!"] {
            let name = default_package_name(id);
            assert_eq!(validate_npm_name(&name), Ok(()), "{name}");
        }
        assert_eq!(default_package_name(&"a".repeat(300)).len(), 214);
    }

    #[test]
    fn npm_name_rules() {
        for ok in ["paperclip-plugin-a", "@acme/plugin-box", "a.b_c~d"] {
            assert_eq!(validate_npm_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "Upper", ".dot", "_u", "@acme", "@/x", "a b", "node_modules", "a/b"] {
            assert!(validate_npm_name(bad).is_err(), "{bad}");
        }
        assert!(validate_npm_name(&"a".repeat(215)).is_err());
    }

    #[test]
    fn strips_only_november_driver_fields() {
        let mut m = json!({"environmentDrivers": [
            {"driverKey": "a", "defaultAcquireTimeoutMs": 5, "creationOperationVersion": 1, "kind": "sandbox_provider"},
            {"driverKey": "b"}
        ]});
        let removed = strip_november_driver_fields(&mut m);
        assert_eq!(
            removed,
            [
                "environmentDrivers[0].defaultAcquireTimeoutMs",
                "environmentDrivers[0].creationOperationVersion"
            ]
        );
        assert_eq!(
            m,
            json!({"environmentDrivers": [{"driverKey": "a", "kind": "sandbox_provider"}, {"driverKey": "b"}]})
        );
    }

    #[test]
    fn worker_entrypoint_is_the_shim() {
        let mut m = json!({"entrypoints": {"worker": "./x", "ui": "./ui"}});
        set_worker_entrypoint(&mut m);
        assert_eq!(m, json!({"entrypoints": {"worker": "./dist/worker.cjs", "ui": "./ui"}}));
        let mut m = json!({"id": "x"});
        set_worker_entrypoint(&mut m);
        assert_eq!(m["entrypoints"]["worker"], "./dist/worker.cjs");
    }

    #[test]
    fn manifest_module_uses_json_parse_for_proto_keys() {
        let plain = render_manifest_module(&json!({"id": "x"}));
        assert!(plain.contains("\"id\": \"x\"") && plain.contains("export default manifest;"));
        let proto = render_manifest_module(&json!({"a": {"__proto__": 1}}));
        assert!(proto.contains("JSON.parse(\"{\\\"a\\\":{\\\"__proto__\\\":1}}\")"), "{proto}");
    }

    #[test]
    fn shim_embeds_the_binary_name_as_a_string_literal() {
        let shim = render_worker_shim("my\"worker");
        assert!(shim.contains(r#"path.join(__dirname, "..", "bin", "my\"worker")"#));
        assert!(!shim.contains(BINARY_NAME_PLACEHOLDER));
    }
}
