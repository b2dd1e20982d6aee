//! Wire tests of every lifecycle method, against the real `local-provider` binary.

mod common;

use common::Wire;
use serde_json::{json, Value};

#[tokio::test]
async fn validate_config_and_probe() {
    let (mut w, _) = Wire::start().await;
    let ok = w
        .ok(
            json!(1),
            "environmentValidateConfig",
            json!({"driverKey": "local", "config": {"root": "/srv/x"}}),
        )
        .await;
    assert_eq!(ok["ok"], json!(true));
    assert_eq!(ok["normalizedConfig"], json!({"root": "/srv/x", "syncTimeoutMs": 300000}));
    let bad = w
        .ok(
            json!(2),
            "environmentValidateConfig",
            json!({"driverKey": "local", "config": {"root": "x"}}),
        )
        .await;
    assert_eq!(bad["ok"], json!(false));
    assert_eq!(bad["errors"], json!(["config.root: expected an absolute path"]));
    let probe = w.ok(json!(3), "environmentProbe", w.params(json!({}))).await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
}

#[tokio::test]
async fn acquire_realize_execute_sync_stop_resume_release_destroy() {
    let (mut w, _) = Wire::start().await;
    let expires = "2999-01-01T00:00:00.000Z";
    let lease = w
        .ok(
            json!(1),
            "environmentAcquireLease",
            w.params(
                json!({"runId": "run-1", "requestedExpiresAt": expires, "futureField": {"x": 1}}),
            ),
        )
        .await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_string();
    assert!(id.starts_with("lp-"), "{lease}");
    assert_eq!(lease["expiresAt"], json!(expires));
    let host_lease =
        json!({"providerLeaseId": id, "metadata": lease["metadata"], "expiresAt": expires});

    let realized = w
        .ok(
            json!(2),
            "environmentRealizeWorkspace",
            w.params(json!({"lease": host_lease, "workspace": {"localPath": "/host/ws"}})),
        )
        .await;
    let cwd = realized["cwd"].as_str().unwrap().to_string();
    assert!(cwd.ends_with("/workspace"), "{realized}");

    // syncIn: a tar, extracted by post-upload commands, as the host does it.
    let host = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(host.path().join("src/sub")).unwrap();
    std::fs::write(host.path().join("src/sub/file.txt"), "payload").unwrap();
    let tar = host.path().join("upload.tar");
    let st = std::process::Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(host.path().join("src"))
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success());
    let upload = format!("{cwd}/../workspace-upload.tar");
    let upload = upload.replace("/workspace/../", "/");
    let synced = w
        .ok(
            json!(3),
            "environmentSyncIn",
            w.params(json!({"lease": host_lease, "minimumTimeoutMs": 600000, "operations": [{
                "operationId": "workspace",
                "files": [{"sourcePath": tar, "targetPath": upload, "kind": "file"}],
                "postUploadCommands": [
                    {"command": format!("tar -xf '{upload}'"), "cwd": cwd},
                    {"command": format!("rm -f '{upload}'")}
                ]
            }]})),
        )
        .await;
    assert_eq!(synced["operations"][0]["operationId"], json!("workspace"));
    assert_eq!(synced["operations"][0]["filesTransferred"], json!(1));

    // execute: streamed execute.log notifications, then the full output in the result.
    let params = w.params(json!({
        "lease": host_lease, "command": "sh",
        "args": ["-c", "cat sub/file.txt; echo; sleep 0.2; echo second; echo oops >&2; exit 4"],
        "cwd": cwd, "env": {"GREETING": "hi"}, "timeoutMs": 30000, "bypassSession": true
    }));
    let req = json!({"jsonrpc": "2.0", "id": 4, "method": "environmentExecute", "params": params,
        "paperclipInvocation": {"id": "inv-4", "scope": {"companyId": "company-1"}}});
    w.send(&req.to_string()).await;
    let (before, resp) = w.until_response(&json!(4)).await;
    let result = &resp["result"];
    assert_eq!(result["exitCode"], json!(4), "{resp}");
    assert_eq!(result["timedOut"], json!(false));
    assert_eq!(result["stdout"], json!("payload\nsecond\n"));
    assert_eq!(result["stderr"], json!("oops\n"));
    let logs: Vec<&Value> = before.iter().filter(|v| v["method"] == json!("execute.log")).collect();
    let streamed: String = logs
        .iter()
        .filter(|v| v["params"]["stream"] == json!("stdout"))
        .map(|v| v["params"]["chunk"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "payload\nsecond\n", "{before:?}");
    assert!(logs.iter().all(|v| v["paperclipInvocationId"] == json!("inv-4")), "{logs:?}");

    // syncOut: the workspace back to a host directory, with an exclude.
    let out_dir = host.path().join("out");
    let synced = w
        .ok(
            json!(5),
            "environmentSyncOut",
            w.params(json!({"lease": host_lease, "operations": [{
                "operationId": "back",
                "files": [{"sourcePath": cwd, "targetPath": out_dir, "kind": "directory", "exclude": ["*.tmp"]}]
            }]})),
        )
        .await;
    assert_eq!(synced["operations"][0]["filesTransferred"], json!(1), "{synced}");
    assert_eq!(std::fs::read_to_string(out_dir.join("sub/file.txt")).unwrap(), "payload");

    // stop keeps the files and refuses work; resume restarts.
    let stop = w
        .ok(json!(6), "environmentStopLease", w.params(json!({"providerLeaseId": id, "leaseMetadata": {}, "cancelActiveWork": true, "resourceDisposition": "stop_and_retain"})))
        .await;
    assert_eq!(stop, json!({"providerLeaseId": id, "state": "stopped"}));
    let refused = w
        .call(
            json!(7),
            "environmentExecute",
            w.params(json!({"lease": host_lease, "command": "true"})),
        )
        .await;
    assert!(refused["error"]["message"].as_str().unwrap().contains("stopped"), "{refused}");
    let resumed = w
        .ok(
            json!(8),
            "environmentResumeLease",
            w.params(json!({"providerLeaseId": id, "leaseMetadata": {}})),
        )
        .await;
    assert_eq!(resumed["providerLeaseId"], json!(id));
    let again = w
        .ok(
            json!(9),
            "environmentExecute",
            w.params(
                json!({"lease": host_lease, "command": "cat", "args": ["workspace/sub/file.txt"]}),
            ),
        )
        .await;
    assert_eq!(again["stdout"], json!("payload"));

    // release (default disposition) destroys; destroy is idempotent; resume then says gone.
    let released =
        w.ok(json!(10), "environmentReleaseLease", w.params(json!({"providerLeaseId": id}))).await;
    assert_eq!(released, json!({"providerLeaseId": id, "state": "destroyed"}));
    for n in 11..13 {
        let destroyed = w
            .ok(json!(n), "environmentDestroyLease", w.params(json!({"providerLeaseId": id})))
            .await;
        assert_eq!(destroyed, json!({"providerLeaseId": id, "state": "destroyed"}));
    }
    let gone =
        w.ok(json!(13), "environmentResumeLease", w.params(json!({"providerLeaseId": id}))).await;
    assert_eq!(gone["providerLeaseId"], Value::Null);
    assert_eq!(gone["metadata"]["expired"], json!(true));
}

#[tokio::test]
async fn errors_on_the_wire() {
    let (mut w, _) = Wire::start().await;
    let lease = w.ok(json!(1), "environmentAcquireLease", w.params(json!({"runId": "r"}))).await;
    // An invalid minimumTimeoutMs is -32602 (decisions.md D7).
    let bad = w
        .call(
            json!(2),
            "environmentSyncIn",
            w.params(json!({"lease": lease, "operations": [], "minimumTimeoutMs": 1_800_001})),
        )
        .await;
    assert_eq!(bad["error"]["code"], json!(-32602), "{bad}");
    // A confinement refusal on sync-out carries the sync-error envelope, with no path in it;
    // on sync-in the answer has no data (the upstream SDK attaches the diagnostic to
    // environmentSyncOut only).
    let escape_in = w
        .call(
            json!(3),
            "environmentSyncIn",
            w.params(json!({"lease": lease, "operations": [{"operationId": "o", "files": [
                {"sourcePath": "/etc/hostname", "targetPath": "/etc/evil", "kind": "file"}
            ]}]})),
        )
        .await;
    assert_eq!(escape_in["error"]["code"], json!(-32002), "{escape_in}");
    assert!(escape_in["error"].get("data").is_none(), "{escape_in}");
    let escape = w
        .call(
            json!(31),
            "environmentSyncOut",
            w.params(json!({"lease": lease, "operations": [{"operationId": "o", "files": [
                {"sourcePath": "/etc/hostname", "targetPath": "/tmp/out-hostname", "kind": "file"}
            ]}]})),
        )
        .await;
    let data = &escape["error"]["data"];
    assert_eq!(data["schema"], json!("paperclip/environment-sync-error/v1"), "{escape}");
    assert!(!data.to_string().contains("/etc"), "{data}");
    // A failed post-upload command names the operation's and the command's index, never the
    // host's operationId (a value the host supplied).
    let failed = w
        .call(
            json!(4),
            "environmentSyncIn",
            w.params(json!({"lease": lease, "operations": [{"operationId": "op-x", "files": [], "postUploadCommands": [{"command": "exit 3"}]}]})),
        )
        .await;
    let msg = failed["error"]["message"].as_str().unwrap();
    assert!(msg.contains("operations[0].postUploadCommands[0]"), "{failed}");
    assert!(!msg.contains("op-x"), "{failed}");
    assert!(failed["error"].get("data").is_none(), "{failed}");
    // Params that do not fit the method are -32602; a lease that does not exist is an error.
    let wrong = w.call(json!(5), "environmentExecute", json!({"command": 5})).await;
    assert_eq!(wrong["error"]["code"], json!(-32602));
    let missing = w
        .call(
            json!(6),
            "environmentExecute",
            w.params(json!({"lease": {"providerLeaseId": "lp-nope"}, "command": "true"})),
        )
        .await;
    assert!(missing["error"]["message"].as_str().unwrap().contains("does not exist"), "{missing}");
    // Execute timeouts answer timedOut with a null exit code.
    let timed = w
        .ok(
            json!(7),
            "environmentExecute",
            w.params(json!({"lease": lease, "command": "sleep", "args": ["30"], "timeoutMs": 300})),
        )
        .await;
    assert_eq!(
        (timed["timedOut"].clone(), timed["exitCode"].clone(), timed["signal"].clone()),
        (json!(true), Value::Null, json!("SIGKILL"))
    );
}
