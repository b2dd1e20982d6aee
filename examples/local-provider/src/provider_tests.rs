//! Unit tests of [`super`]: the hooks, called in process through the SDK's runtime
//! ([`TestClient`]), against a temporary root.

use super::*;

use paperclip_sandbox_sdk::testing::TestClient;
use paperclip_sandbox_sdk::Worker;
use serde_json::{json, Value};

fn params(root: &Path, extra: Value) -> Value {
    let mut v = json!({
        "driverKey": "local", "companyId": "c1", "environmentId": "e1",
        "config": {"root": root, "syncTimeoutMs": 60000}
    });
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

async fn ok(client: &TestClient, method: &str, params: Value) -> Value {
    client.call_raw(method, params).await.unwrap_or_else(|e| panic!("{method}: {e:?}"))
}

/// Waits for the `execute.log` notification carrying `chunk` on `stream` (a hang guard of
/// minutes). The tests do not end their in-process workers: a serve loop that ends kills every
/// process group of the test process, the commands of tests running alongside included.
async fn streamed(client: &TestClient, stream: &str, chunk: &str) {
    let wanted = json!({"stream": stream, "chunk": chunk});
    let seen = async {
        while let Some(n) = client.next_notification().await {
            let p = n.params.unwrap_or_default();
            if n.method == "execute.log"
                && p["stream"] == wanted["stream"]
                && p["chunk"] == wanted["chunk"]
            {
                return true;
            }
        }
        false
    };
    let guard = std::time::Duration::from_secs(300);
    assert!(tokio::time::timeout(guard, seen).await.unwrap_or(false), "{wanted} streamed");
}

#[tokio::test]
async fn full_lifecycle_on_typed_params() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let client = TestClient::new(LocalProvider::default());

    let lease = ok(&client, "environmentAcquireLease", params(&root, json!({"runId": "r1"}))).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();

    let realize = params(&root, json!({"lease": lease, "workspace": {}}));
    let realized = ok(&client, "environmentRealizeWorkspace", realize).await;
    let cwd = realized["cwd"].as_str().unwrap();
    assert!(cwd.ends_with("/workspace"), "{cwd}");

    let host_file = tmp.path().join("hello.txt");
    std::fs::write(&host_file, "hello").unwrap();
    let target = format!("{cwd}/hello.txt");
    let sync = params(
        &root,
        json!({"lease": lease, "minimumTimeoutMs": 1000, "operations": [
            {"operationId": "op", "files": [{"sourcePath": host_file, "targetPath": target, "kind": "file", "mode": 416}]}
        ]}),
    );
    let synced = ok(&client, "environmentSyncIn", sync).await;
    assert_eq!(synced["operations"][0]["bytesTransferred"], json!(5));

    let exec = params(
        &root,
        json!({"lease": lease, "command": "sh", "args": ["-c", "cat hello.txt; echo err >&2"], "cwd": cwd}),
    );
    let out = ok(&client, "environmentExecute", exec.clone()).await;
    assert_eq!(
        (&out["exitCode"], &out["stdout"], &out["stderr"]),
        (&json!(0), &json!("hello"), &json!("err\n"))
    );
    assert_eq!(out.get("metadata"), None, "{out}");

    let stop = params(&root, json!({"providerLeaseId": id}));
    let stopped = ok(&client, "environmentStopLease", stop).await;
    assert_eq!(stopped, json!({"providerLeaseId": id, "state": "stopped"}));
    let err = client.call_raw("environmentExecute", exec).await.unwrap_err();
    assert_eq!(err.code, -32002);
    assert!(err.message.contains("is stopped; resume it first"), "{}", err.message);
    let resume = params(&root, json!({"providerLeaseId": id}));
    let resumed = ok(&client, "environmentResumeLease", resume.clone()).await;
    assert_eq!(resumed["providerLeaseId"], json!(id));

    for _ in 0..2 {
        let destroy = params(&root, json!({"providerLeaseId": id}));
        let r = ok(&client, "environmentDestroyLease", destroy).await;
        assert_eq!(r, json!({"providerLeaseId": id, "state": "destroyed"}));
    }
    let gone = ok(&client, "environmentResumeLease", resume).await;
    assert_eq!(gone["providerLeaseId"], Value::Null);
    assert_eq!(gone["metadata"]["expired"], json!(true));
    let release = params(&root, json!({"providerLeaseId": null}));
    assert_eq!(ok(&client, "environmentReleaseLease", release).await, Value::Null);

    streamed(&client, "stderr", "err\n").await;
}

#[tokio::test]
async fn validate_probe_and_minimum_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let p = LocalProvider::default();
    let client = TestClient::new(p.clone());
    let validate = json!({"driverKey": "local", "config": {"root": root}});
    let ok_config = ok(&client, "environmentValidateConfig", validate).await;
    assert_eq!(ok_config["ok"], json!(true));
    assert_eq!(ok_config["normalizedConfig"]["syncTimeoutMs"], json!(300000));

    let probe = ok(&client, "environmentProbe", params(&root, json!({}))).await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
    let codes: Vec<_> =
        probe["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].clone()).collect();
    assert_eq!(codes, vec![json!("root_writable"), json!("sh_present"), json!("tar_present")]);

    let lease = ok(&client, "environmentAcquireLease", params(&root, json!({"runId": "r"}))).await;
    let sync = params(&root, json!({"lease": lease, "operations": [], "minimumTimeoutMs": 0}));
    let err = client.call_raw("environmentSyncIn", sync.clone()).await.unwrap_err();
    assert_eq!(err.code, -32602, "{err:?}");
    // The September profile predates the field and ignores it.
    let old = TestClient::start(Worker::new(p).profile(HostProfile::Paperclip2026_09));
    let synced = ok(&old, "environmentSyncIn", sync).await;
    assert_eq!(synced["operations"], json!([]));
    let no_lease = params(&root, json!({"lease": {"providerLeaseId": null}, "operations": []}));
    let err = client.call_raw("environmentSyncOut", no_lease).await.unwrap_err();
    assert_eq!(err.code, -32602, "{err:?}");
}

#[tokio::test]
async fn probe_reports_an_unusable_root_as_a_diagnostic() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let client = TestClient::new(LocalProvider::default());
    let probe = ok(&client, "environmentProbe", params(&file, json!({}))).await;
    assert_eq!(probe["ok"], json!(false), "{probe}");
    assert_eq!(probe["diagnostics"][0]["code"], json!("root_not_writable"), "{probe}");
}

/// The lease store is opened per call, not once per config: a root removed between calls is
/// made again (private), as it was before the root came from the per-config backend.
#[tokio::test]
async fn a_root_removed_between_calls_is_made_again() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let client = TestClient::new(LocalProvider::default());
    ok(&client, "environmentAcquireLease", params(&root, json!({"runId": "a"}))).await;
    std::fs::remove_dir_all(&root).unwrap();
    let lease = ok(&client, "environmentAcquireLease", params(&root, json!({"runId": "b"}))).await;
    assert!(root.join(lease["providerLeaseId"].as_str().unwrap()).is_dir());
    assert_eq!(std::fs::symlink_metadata(&root).unwrap().mode() & 0o777, 0o700);
}

#[tokio::test]
async fn execute_reports_timeouts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let client = TestClient::new(LocalProvider::default());
    let lease = ok(&client, "environmentAcquireLease", params(&root, json!({"runId": "r"}))).await;
    let exec = params(
        &root,
        json!({"lease": lease, "command": "sleep", "args": ["30"], "timeoutMs": 200}),
    );
    let out = ok(&client, "environmentExecute", exec).await;
    assert_eq!(out["timedOut"], json!(true), "{out}");
    assert_eq!(out["exitCode"], Value::Null);
    // Cancellation (the host going away) is the wire tests' (`wire_protocol`: end of input
    // cancels the running command): ending an in-process worker here would end the commands
    // of the tests running alongside.
}

/// A config that does not fit is answered by the SDK before a hook runs: with the path and
/// what was expected, never the value.
#[tokio::test]
async fn a_bad_config_is_a_typed_error_naming_the_path() {
    let client = paperclip_sandbox_sdk::testing::TestClient::new(LocalProvider::default());
    let cases = [
        (json!({"root": "relative/secret-path"}), "config.root: expected an absolute path"),
        (json!({"root": 7}), "config.root: expected a string"),
        (
            json!({"syncTimeoutMs": 0}),
            "config.syncTimeoutMs: expected a whole number from 1 to 2147483647",
        ),
        (json!({"syncTimeoutMs": 1.5}), "config.syncTimeoutMs: expected u64"),
    ];
    for (config, expected) in cases {
        let validate = json!({"driverKey": "local", "config": config});
        let answer = client.call_raw("environmentValidateConfig", validate).await.unwrap();
        assert_eq!(answer, json!({"ok": false, "errors": [expected]}), "{config}");
        let probe =
            json!({"driverKey": "local", "companyId": "c", "environmentId": "e", "config": config});
        let error = client.call_raw("environmentProbe", probe).await.unwrap_err();
        assert_eq!((error.code, error.message), (-32602, format!("Invalid params: {expected}")));
    }
    let answer = client
        .call_raw(
            "environmentValidateConfig",
            json!({"driverKey": "local", "config": {"timeoutMs": 5}}),
        )
        .await
        .unwrap();
    assert_eq!(answer["normalizedConfig"], json!({"syncTimeoutMs": 300000, "timeoutMs": 5}));
}

#[test]
fn sync_errors_carry_allowlisted_diagnostics_only() {
    use paperclip_sandbox_protocol::envelope::sync_error::{
        SyncErrorCode, TransferFailureKind, TransferStep,
    };
    let timeout = LocalError::new(ErrorKind::Timeout, "slow /private/path");
    assert_eq!(sync_diagnostic(&timeout).error_code(), SyncErrorCode::Etimedout);
    let failed =
        LocalError { exit_code: Some(7), ..LocalError::new(ErrorKind::CommandFailed, "x") };
    let d = sync_diagnostic(&failed);
    assert_eq!(
        (d.exit_code(), d.transfer_failure_kind()),
        (Some(7), Some(TransferFailureKind::CommandFailed))
    );
    let io = LocalError::io("open", std::io::Error::from_raw_os_error(libc::ENOSPC));
    assert_eq!(sync_diagnostic(&io).error_code(), SyncErrorCode::Enospc);
    let guard = LocalError::new(ErrorKind::Confinement, "escape");
    assert_eq!(sync_diagnostic(&guard).transfer_step(), Some(TransferStep::SandboxGuard));
    let data = sync_diagnostic(&timeout).to_data().unwrap().to_string();
    assert!(!data.contains("private"), "{data}");
}
