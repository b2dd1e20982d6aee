//! Unit tests of [`super`]: the hooks on typed params, against a temporary root.

use super::*;

const NOV: HostProfile = HostProfile::Paperclip2026_11;
use paperclip_sandbox_sdk::OutputStream;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

fn params<T: DeserializeOwned>(root: &Path, extra: Value) -> T {
    let mut v = json!({
        "driverKey": "local", "companyId": "c1", "environmentId": "e1",
        "config": {"root": root, "syncTimeoutMs": 60000}
    });
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn full_lifecycle_on_typed_params() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let p = LocalProvider::default();

    let lease = p.acquire(&params(&root, json!({"runId": "r1"}))).await.unwrap();
    let id = lease.provider_lease_id.clone().unwrap();
    let wire_lease = serde_json::to_value(&lease).unwrap();

    let realized: RealizeWorkspaceResult =
        p.realize(&params(&root, json!({"lease": wire_lease, "workspace": {}}))).await.unwrap();
    assert!(realized.cwd.ends_with("/workspace"), "{}", realized.cwd);

    let host_file = tmp.path().join("hello.txt");
    std::fs::write(&host_file, "hello").unwrap();
    let target = format!("{}/hello.txt", realized.cwd);
    let synced = p
        .sync(
            Direction::In,
            &params(&root, json!({"lease": wire_lease, "minimumTimeoutMs": 1000, "operations": [
                {"operationId": "op", "files": [{"sourcePath": host_file, "targetPath": target, "kind": "file", "mode": 416}]}
            ]})),
            NOV,
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&synced).unwrap()["operations"][0]["bytesTransferred"],
        json!(5)
    );

    let mut chunks = Vec::new();
    let exec: ExecuteParams<LocalConfig> = params(
        &root,
        json!({"lease": wire_lease, "command": "sh", "args": ["-c", "cat hello.txt; echo err >&2"], "cwd": realized.cwd}),
    );
    let mut sink =
        paperclip_sandbox_sdk::process::sink_fn(|s, c: &str| chunks.push((s, c.to_owned())));
    let out = p.execute(&exec, &mut sink, std::future::pending()).await.unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(0), "hello", "err\n")
    );
    assert!(chunks.iter().any(|(s, c)| *s == OutputStream::Stderr && c == "err\n"));
    assert_eq!(out.metadata, None);

    let stopped = p.stop(&params(&root, json!({"providerLeaseId": id}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&stopped).unwrap(),
        json!({"providerLeaseId": id, "state": "stopped"})
    );
    let err = p.execute(&exec, &mut (), std::future::pending()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Stopped);
    let resumed = p.resume(&params(&root, json!({"providerLeaseId": id}))).await.unwrap();
    assert_eq!(resumed.provider_lease_id.as_deref(), Some(id.as_str()));

    for _ in 0..2 {
        let r = p.destroy(&params(&root, json!({"providerLeaseId": id}))).await.unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"providerLeaseId": id, "state": "destroyed"})
        );
    }
    let gone = p.resume(&params(&root, json!({"providerLeaseId": id}))).await.unwrap();
    assert_eq!(serde_json::to_value(&gone).unwrap()["providerLeaseId"], Value::Null);
    assert_eq!(gone.metadata.unwrap()["expired"], json!(true));
    let released = p.release(&params(&root, json!({"providerLeaseId": null}))).await.unwrap();
    assert_eq!(released, None);
}

#[tokio::test]
async fn validate_probe_and_minimum_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let p = LocalProvider::default();
    let ok = p.validate_config(
        &serde_json::from_value(json!({"driverKey": "local", "config": {"root": root}})).unwrap(),
    );
    let ok = serde_json::to_value(ok).unwrap();
    assert_eq!(ok["ok"], json!(true));
    assert_eq!(ok["normalizedConfig"]["syncTimeoutMs"], json!(300000));

    let probe = p.probe(&params(&root, json!({}))).await.unwrap();
    let probe = serde_json::to_value(probe).unwrap();
    assert_eq!(probe["ok"], json!(true), "{probe}");
    let codes: Vec<_> =
        probe["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].clone()).collect();
    assert_eq!(codes, vec![json!("root_writable"), json!("sh_present"), json!("tar_present")]);

    let lease = p.acquire(&params(&root, json!({"runId": "r"}))).await.unwrap();
    let sync: SyncParams<LocalConfig> =
        params(&root, json!({"lease": lease, "operations": [], "minimumTimeoutMs": 0}));
    assert_eq!(p.sync(Direction::In, &sync, NOV).await.unwrap_err().kind, ErrorKind::InvalidParams);
    // The September profile predates the field and ignores it.
    let old = HostProfile::Paperclip2026_09;
    assert!(p.sync(Direction::In, &sync, old).await.unwrap().operations.is_empty());
    let no_lease: SyncParams<LocalConfig> =
        params(&root, json!({"lease": {"providerLeaseId": null}, "operations": []}));
    assert_eq!(
        p.sync(Direction::Out, &no_lease, NOV).await.unwrap_err().kind,
        ErrorKind::InvalidParams
    );
}

#[tokio::test]
async fn execute_reports_timeouts_and_cancellation() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let p = LocalProvider::default();
    let lease = p.acquire(&params(&root, json!({"runId": "r"}))).await.unwrap();
    let exec: ExecuteParams<LocalConfig> = params(
        &root,
        json!({"lease": lease, "command": "sleep", "args": ["30"], "timeoutMs": 200}),
    );
    let out = p.execute(&exec, &mut (), std::future::pending()).await.unwrap();
    let wire = serde_json::to_value(&out).unwrap();
    assert_eq!(wire["timedOut"], json!(true));
    assert_eq!(wire["exitCode"], Value::Null);
    let exec: ExecuteParams<LocalConfig> =
        params(&root, json!({"lease": lease, "command": "sleep", "args": ["30"]}));
    let out =
        p.execute(&exec, &mut (), tokio::time::sleep(Duration::from_millis(100))).await.unwrap();
    assert_eq!(out.metadata.unwrap()["cancelled"], json!(true));
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
