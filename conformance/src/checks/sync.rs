//! The native sync round trip: real files in a host temp dir go into the lease, where the
//! host puts them (under `<remoteCwd>/.paperclip-runtime/`), with environmentSyncIn (a file mapping with a mode, a directory mapping with a mode and
//! an exclude, two postUploadCommands that must run in order), then come back with
//! environmentSyncOut and are compared byte for byte and mode for mode.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::context::{fail, no_problems, CheckResult, Ctx, Finding};
use crate::host::clip;
use crate::hostmodel::{self, quote, Exec};
use crate::ledger::Lease;

/// A host temp dir removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, Finding> {
        let path = std::env::temp_dir().join(format!("pcconf-sync-{}", crate::ids::hex(12)));
        fs::create_dir_all(&path).map_err(|e| harness_trouble(&path, e))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn harness_trouble(path: &Path, e: std::io::Error) -> Finding {
    Finding::Skip(format!("the harness cannot prepare {}: {e}", path.display()))
}

fn write(path: &Path, body: &str) -> Result<(), Finding> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| harness_trouble(parent, e))?;
    }
    fs::write(path, body).map_err(|e| harness_trouble(path, e))
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// Checks the `{operations: [{operationId, filesTransferred, bytesTransferred}]}` result.
fn check_result(result: &Value, operation_id: &str, verb: &str) -> CheckResult {
    let ops = result.get("operations").and_then(Value::as_array);
    let ok = ops.is_some_and(|ops| {
        ops.iter().any(|o| {
            o.get("operationId") == Some(&json!(operation_id))
                && o.get("filesTransferred").is_some_and(Value::is_number)
                && o.get("bytesTransferred").is_some_and(Value::is_number)
        })
    });
    if ok {
        Ok(())
    } else {
        Err(fail(
            format!("{verb}: {{operations: [{{operationId: {operation_id:?}, filesTransferred, bytesTransferred}}]}}"),
            clip(&result.to_string()),
        ))
    }
}

/// Sends one sync `operation` (its `operationId` added, `pcconf-<tag>-<hex>`) with `method` in
/// `lease` and checks the result names it.
fn sync(
    ctx: &mut Ctx<'_>,
    lease: &Lease,
    method: &str,
    tag: &str,
    operation: Value,
) -> CheckResult {
    let id = format!("pcconf-{tag}-{}", crate::ids::hex(6));
    let mut operation = operation;
    operation["operationId"] = json!(id);
    let mut params = ctx.lease_params(lease);
    params.insert("operations".into(), json!([operation]));
    let result = ctx.call_ok(method, Value::Object(params), format!("{method} succeeds"))?;
    check_result(&result, &id, method)
}

fn mode_of(path: &Path) -> Option<u32> {
    fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o777)
}

/// SYNC-1.
pub fn round_trip(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = crate::checks::execute::lease(ctx)?;
    // Upstream sandbox-managed-runtime: uploads land under the runtime root inside the
    // remote cwd; `assertSyncOperationsConfined` keeps targets inside the orchestrator roots.
    let target =
        format!("{}/pcconf-sync-{}", hostmodel::runtime_root(ctx.env, &lease), crate::ids::hex(8));
    let host = TempDir::new()?;
    let src = host.0.join("src");
    let out = host.0.join("out");
    write(&src.join("single.txt"), "single file\n")?;
    write(&src.join("tree/keep.txt"), "kept\n")?;
    write(&src.join("tree/nested/deep.txt"), "deep\n")?;
    write(&src.join("tree/skip.log"), "excluded\n")?;
    fs::create_dir_all(&out).map_err(|e| harness_trouble(&out, e))?;

    sync(
        ctx,
        &lease,
        name::ENVIRONMENT_SYNC_IN,
        "in",
        json!({
            "files": [
                {"sourcePath": p(&src.join("single.txt")), "targetPath": format!("{target}/single.txt"),
                 "kind": "file", "mode": 0o640},
                {"sourcePath": p(&src.join("tree")), "targetPath": format!("{target}/tree"),
                 "kind": "directory", "mode": 0o600, "exclude": ["*.log"]},
            ],
            "postUploadCommands": [
                {"command": "printf 1 >> order.txt", "cwd": target},
                {"command": "printf 2 >> order.txt", "cwd": target},
            ],
        }),
    )?;

    if ctx.facts.advertises(name::ENVIRONMENT_EXECUTE) {
        let script = format!(
            "cd {} && stat -c %a single.txt tree/keep.txt tree/nested/deep.txt",
            quote(&target)
        );
        let r = ctx.exec(&lease, &Exec::sh(script))?;
        if r.get("stdout") != Some(&json!("640\n600\n600\n")) {
            return Err(fail(
                "modes inside the lease: single.txt 640, files of the directory mapping 600",
                clip(&r.to_string()),
            ));
        }
    }

    sync(
        ctx,
        &lease,
        name::ENVIRONMENT_SYNC_OUT,
        "out",
        json!({
            "files": [
                {"sourcePath": format!("{target}/tree"), "targetPath": p(&out.join("tree")), "kind": "directory"},
                {"sourcePath": format!("{target}/single.txt"), "targetPath": p(&out.join("single.txt")),
                 "kind": "file", "mode": 0o600},
                {"sourcePath": format!("{target}/order.txt"), "targetPath": p(&out.join("order.txt")), "kind": "file"},
            ],
        }),
    )?;

    let read = |rel: &str| fs::read_to_string(out.join(rel)).ok();
    let mut wrong = vec![];
    for (rel, body) in [
        ("single.txt", "single file\n"),
        ("tree/keep.txt", "kept\n"),
        ("tree/nested/deep.txt", "deep\n"),
    ] {
        if read(rel).as_deref() != Some(body) {
            wrong.push(format!("{rel}: {:?} instead of {body:?}", read(rel)));
        }
    }
    if out.join("tree/skip.log").exists() {
        wrong.push("tree/skip.log came back although excluded by \"*.log\"".into());
    }
    if read("order.txt").as_deref() != Some("12") {
        wrong.push(format!(
            "order.txt: {:?} instead of \"12\" (postUploadCommands in order)",
            read("order.txt")
        ));
    }
    if mode_of(&out.join("single.txt")) != Some(0o600) {
        let mode = mode_of(&out.join("single.txt")).map(|m| format!("{m:o}"));
        wrong.push(format!("single.txt mode on the host: {mode:?} instead of 600"));
    }
    no_problems(&wrong, "the files round-trip with their bytes, modes and excludes")
}
