//! Unit tests of [`super`]: real files, real `tar`, real commands.

use super::*;
use serde_json::json;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};

struct Fixture {
    _tmp: tempfile::TempDir,
    host: PathBuf,
    lease: PathBuf,
    groups: ProcessGroups,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let host = tmp.path().join("host");
    let lease = tmp.path().join("lease");
    fs::create_dir_all(host.join("project/src")).unwrap();
    fs::create_dir_all(lease.join("workspace")).unwrap();
    fs::write(host.join("project/README.md"), "readme").unwrap();
    fs::write(host.join("project/src/main.rs"), "fn main() {}").unwrap();
    fs::create_dir_all(host.join("project/target")).unwrap();
    fs::write(host.join("project/target/big"), "built").unwrap();
    let lease = lease.canonicalize().unwrap();
    Fixture { _tmp: tmp, host, lease, groups: ProcessGroups::default() }
}

fn ops(v: serde_json::Value) -> Vec<SyncOperation> {
    let wire: Vec<psync::SyncOperation> = serde_json::from_value(v).unwrap();
    operations_from_wire(&wire).unwrap()
}

async fn sync_in(f: &Fixture, v: serde_json::Value) -> Result<Vec<OperationResult>> {
    sync(Direction::In, &f.lease, ops(v), Duration::from_secs(60), &f.groups).await
}

#[tokio::test]
async fn sync_in_a_tar_then_extract_it_with_post_upload_commands() {
    let f = fixture();
    let tar = f.host.join("workspace-upload.tar");
    let st = std::process::Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(f.host.join("project"))
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success());
    let tar_len = fs::metadata(&tar).unwrap().len();
    let ws = f.lease.join("workspace");
    let upload = f.lease.join(".runtime/workspace-upload.tar");
    let result = sync_in(
        &f,
        json!([{
            "operationId": "workspace",
            "files": [{"sourcePath": tar, "targetPath": upload, "kind": "file", "mode": 384}],
            "postUploadCommands": [
                {"command": format!("mkdir -p '{}'", ws.display())},
                {"command": format!("tar -xf '{}' -C .", upload.display()), "cwd": ws, "timeoutMs": 30000},
                {"command": format!("rm -f '{}'", upload.display())}
            ]
        }]),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!([{"operationId": "workspace", "filesTransferred": 1, "bytesTransferred": tar_len}])
    );
    assert_eq!(fs::read_to_string(ws.join("src/main.rs")).unwrap(), "fn main() {}");
    assert!(!upload.exists());
}

#[tokio::test]
async fn sync_out_a_directory_with_excludes_then_round_trip() {
    let f = fixture();
    let ws = f.lease.join("workspace");
    sync_in(
        &f,
        json!([{"operationId": "in", "files": [
            {"sourcePath": f.host.join("project"), "targetPath": ws.join("p"), "kind": "directory"}
        ]}]),
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(ws.join("p/target/big")).unwrap(), "built");
    let out_dir = f.host.join("out");
    fs::create_dir_all(&out_dir).unwrap();
    fs::write(out_dir.join("leftover"), "x").unwrap();
    let result = sync(
        Direction::Out,
        &f.lease,
        ops(json!([{"operationId": "out", "files": [
            {"sourcePath": ws.join("p"), "targetPath": out_dir, "kind": "directory", "exclude": ["target"], "mode": 0o600}
        ]}])),
        Duration::from_secs(60),
        &f.groups,
    )
    .await
    .unwrap();
    assert_eq!(result[0].files_transferred, 2);
    assert_eq!(result[0].bytes_transferred, 6 + 12);
    assert!(!out_dir.join("leftover").exists(), "directory mappings destroy then replace");
    assert!(!out_dir.join("target").exists());
    assert_eq!(fs::metadata(out_dir.join("src/main.rs")).unwrap().mode() & 0o777, 0o600);
}

#[tokio::test]
async fn operations_apply_in_order_and_fail_fast_naming_the_command() {
    let f = fixture();
    let marker = f.lease.join("workspace/second-ran");
    let err = sync_in(
        &f,
        json!([
            {"operationId": "op-1", "files": [], "postUploadCommands": [
                {"command": "true"},
                {"command": "echo boom >&2; exit 7"},
                {"command": format!("touch '{}'", marker.display())}
            ]},
            {"files": [], "operationId": "op-2", "postUploadCommands": [{"command": format!("touch '{}'", marker.display())}]}
        ]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::CommandFailed);
    assert!(
        err.message.starts_with("operations[0].postUploadCommands[1]: ")
            && !err.message.contains("op-1"),
        "{err}"
    );
    assert!(err.message.contains("code 7") && err.message.contains("boom"), "{err}");
    assert_eq!(err.exit_code, Some(7));
    assert!(!marker.exists(), "nothing after the failure ran");
}

#[tokio::test]
async fn confinement_is_enforced_in_both_directions() {
    let f = fixture();
    let outside = f.host.join("elsewhere");
    fs::create_dir_all(&outside).unwrap();
    symlink(&outside, f.lease.join("workspace/escape")).unwrap();
    fs::write(outside.join("secret"), "s").unwrap();
    let src = f.host.join("project/README.md");
    let cases = [
        (
            Direction::In,
            json!({"sourcePath": src, "targetPath": f.lease.join("workspace/../x"), "kind": "file"}),
        ),
        (
            Direction::In,
            json!({"sourcePath": src, "targetPath": f.lease.join("workspace/escape/x"), "kind": "file"}),
        ),
        (
            Direction::In,
            json!({"sourcePath": src, "targetPath": outside.join("x"), "kind": "file"}),
        ),
        (
            Direction::In,
            json!({"sourcePath": f.host.join("project"), "targetPath": f.lease, "kind": "directory"}),
        ),
        (
            Direction::Out,
            json!({"sourcePath": f.lease.join("workspace/escape/secret"), "targetPath": f.host.join("got"), "kind": "file", "followSymlinks": true}),
        ),
        (
            Direction::Out,
            json!({"sourcePath": f.lease.join("workspace/escape"), "targetPath": f.host.join("got"), "kind": "directory"}),
        ),
        (
            Direction::Out,
            json!({"sourcePath": "/etc/hostname", "targetPath": f.host.join("got"), "kind": "file"}),
        ),
    ];
    for (dir, mapping) in cases {
        let op = ops(json!([{"operationId": "c", "files": [mapping.clone()]}]));
        let err = sync(dir, &f.lease, op, Duration::from_secs(60), &f.groups).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Confinement, "{mapping}: {err}");
    }
    assert!(!outside.join("x").exists());
    assert!(!f.host.join("got").exists());
    // A followed link inside a syncOut tree that leads out is refused too.
    let err = sync(
        Direction::Out,
        &f.lease,
        ops(json!([{"operationId": "c", "files": [{"sourcePath": f.lease.join("workspace"), "targetPath": f.host.join("got"), "kind": "directory", "followSymlinks": true}]}])),
        Duration::from_secs(60),
        &f.groups,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Confinement, "{err}");
    // Preserved as a link (not followed), it is copied as a link.
    let r = sync(
        Direction::Out,
        &f.lease,
        ops(json!([{"operationId": "c", "files": [{"sourcePath": f.lease.join("workspace"), "targetPath": f.host.join("got"), "kind": "directory"}]}])),
        Duration::from_secs(60),
        &f.groups,
    )
    .await
    .unwrap();
    assert_eq!(r[0].files_transferred, 1);
    assert!(fs::symlink_metadata(f.host.join("got/escape")).unwrap().file_type().is_symlink());
}

#[tokio::test]
async fn post_upload_cwd_must_be_absolute_and_confined_and_sync_out_refuses_commands() {
    let f = fixture();
    for cwd in [json!("workspace"), json!("/"), json!(f.lease.join("workspace/../.."))] {
        let err = sync_in(
            &f,
            json!([{"files": [], "operationId": "o", "postUploadCommands": [{"command": "true", "cwd": cwd}]}]),
        )
        .await
        .unwrap_err();
        assert!(matches!(err.kind, ErrorKind::InvalidParams | ErrorKind::Confinement), "{err}");
    }
    let op = ops(
        json!([{"files": [], "operationId": "o", "postUploadCommands": [{"command": "true"}]}]),
    );
    let err =
        sync(Direction::Out, &f.lease, op, Duration::from_secs(5), &f.groups).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidParams);
}

#[tokio::test]
async fn the_deadline_bounds_the_whole_call_and_kills_commands() {
    let f = fixture();
    let started = std::time::Instant::now();
    let op = ops(
        json!([{"files": [], "operationId": "slow", "postUploadCommands": [{"command": "sleep 30 & sleep 30"}]}]),
    );
    let err =
        sync(Direction::In, &f.lease, op, Duration::from_millis(300), &f.groups).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "liveness bound");
    // The per-command timeout applies too.
    let op = ops(
        json!([{"files": [], "operationId": "slow", "postUploadCommands": [{"command": "sleep 30", "timeoutMs": 200}]}]),
    );
    let err =
        sync(Direction::In, &f.lease, op, Duration::from_secs(60), &f.groups).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(err.message.contains("postUploadCommands[0]"), "{err}");
}

#[test]
fn minimum_timeout_is_validated_and_widens_the_configured_timeout() {
    use paperclip_sandbox_protocol::HostProfile;
    let params = |minimum: serde_json::Value| -> psync::SyncParams {
        let mut p = json!({"driverKey": "local", "companyId": "c", "environmentId": "e",
            "lease": {"providerLeaseId": "l"}, "operations": [], "minimumTimeoutMs": minimum});
        p.as_object_mut().unwrap().retain(|_, v| !v.is_null());
        serde_json::from_value(p).unwrap()
    };
    let november = HostProfile::Paperclip2026_11;
    assert_eq!(effective_timeout_ms(&params(json!(null)), november, 300_000), Ok(300_000));
    assert_eq!(effective_timeout_ms(&params(json!(600_000)), november, 300_000), Ok(600_000));
    assert_eq!(effective_timeout_ms(&params(json!(1_000)), november, 300_000), Ok(300_000));
    for bad in [json!(0), json!(-5), json!(1.5), json!(1_800_001), json!("600000")] {
        assert!(effective_timeout_ms(&params(bad.clone()), november, 1).is_err(), "{bad}");
        // The September profile predates the field and ignores it.
        let september = HostProfile::Paperclip2026_09;
        assert_eq!(effective_timeout_ms(&params(bad), september, 1), Ok(1));
    }
}

#[test]
fn wire_operations_become_core_operations_and_bad_modes_are_refused() {
    let v: Vec<SyncOperation> = ops(json!([{
        "operationId": "x", "files": [{"sourcePath": "/a", "targetPath": "/b", "kind": "file",
            "mode": null, "exclude": null, "followSymlinks": null, "access": "ro", "writablePath": "/b"}],
        "postUploadCommands": null, "futureField": 1
    }]));
    assert_eq!(v[0].files[0].mode, None);
    assert!(!v[0].files[0].follow_symlinks);
    let wire: Vec<psync::SyncOperation> = serde_json::from_value(json!([{"operationId": "x",
        "files": [{"sourcePath": "/a", "targetPath": "/b", "kind": "file", "mode": 0o10000}]}]))
    .unwrap();
    let err = operations_from_wire(&wire).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidParams);
    assert!(err.message.starts_with("operations[0].files[0].mode"), "{err}");
}

/// A sync error names the operation by its index and a file by its role: the host's
/// operationId and paths are not quoted (before, `operation "op-…": files[0]: stat /…/…`).
#[tokio::test]
async fn sync_errors_quote_neither_the_operation_id_nor_a_path() {
    const SENTINEL: &str = "sentinel-3b7e";
    let f = fixture();
    let missing = f.host.join(SENTINEL).join("missing");
    for (kind, target) in [("file", "workspace/out"), ("directory", "workspace/tree")] {
        let err = sync_in(
            &f,
            json!([{"operationId": format!("op-{SENTINEL}"), "files": [{
                "sourcePath": missing, "targetPath": f.lease.join(target), "kind": kind,
            }]}]),
        )
        .await
        .unwrap_err();
        assert!(!err.message.contains(SENTINEL), "{err}");
        assert!(err.message.starts_with("operations[0].files[0]: "), "{err}");
        assert!(err.message.contains("the sync source"), "{err}");
    }
}
