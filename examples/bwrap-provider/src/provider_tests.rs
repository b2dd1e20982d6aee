//! In-process tests of the mode decision and the start-failure fallback, with stand-in `bwrap`
//! scripts (real processes; the real bwrap is exercised by the wire tests).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use paperclip_sandbox_sdk::testing::TestClient;
use serde_json::json;

use super::*;
use crate::wrap::Launcher;

struct Fixture {
    /// The provider the client serves (a clone: they share the probe cache and the mode).
    provider: BwrapProvider,
    client: TestClient,
    next_id: AtomicU64,
    root: tempfile::TempDir,
    bin: tempfile::TempDir,
}

/// A provider whose "bwrap" is the shell script `body`, served in process.
fn fixture(body: &str) -> Fixture {
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("bwrap");
    std::fs::write(&fake, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sh = prereq::command_v("sh").unwrap();
    let wrapper = Wrapper { bwrap: fake, sh, launcher: Launcher::Direct };
    let detection =
        Detection { wrapper: Some(wrapper), reason: "stand-in".into(), facts: Default::default() };
    let provider = BwrapProvider::with_detection(detection);
    Fixture {
        client: TestClient::new(provider.clone()),
        provider,
        next_id: AtomicU64::new(1),
        root: tempfile::tempdir().unwrap(),
        bin,
    }
}

impl Fixture {
    fn base(&self, extra: Value) -> Value {
        let mut v = json!({"driverKey": "bwrap", "companyId": "c", "environmentId": "e",
            "config": {"root": self.root.path()}});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    /// Calls `method` over the in-process wire; returns the result and the `execute.log`
    /// chunks the call streamed (the lines before its answer), as (stream, chunk).
    async fn call(&self, method: &str, params: Value) -> (Value, Vec<(OutputStream, String)>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.client.send_line(&request.to_string()).await.unwrap();
        let mut chunks = Vec::new();
        loop {
            // A hang guard: the worker answers within minutes even on a loaded machine.
            let line = tokio::time::timeout(std::time::Duration::from_secs(300), async {
                self.client.next_line().await.expect("the worker answers")
            })
            .await
            .expect("answered within the hang guard");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return (v["result"].clone(), chunks);
            }
            if v["method"] == json!("execute.log") {
                let stream = serde_json::from_value(v["params"]["stream"].clone()).unwrap();
                chunks.push((stream, v["params"]["chunk"].as_str().unwrap().to_owned()));
            }
        }
    }

    async fn lease(&self) -> (String, PathBuf) {
        let (lease, _) =
            self.call("environmentAcquireLease", self.base(json!({"runId": "r"}))).await;
        let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
        let dir = self.root.path().join(&id);
        (id, dir)
    }

    async fn run(&self, id: &str, script: &str) -> (ExecuteResult, Vec<(OutputStream, String)>) {
        let params = self.base(json!({
            "lease": {"providerLeaseId": id}, "command": "sh", "args": ["-c", script]
        }));
        let (out, chunks) = self.call("environmentExecute", params).await;
        (serde_json::from_value(out).unwrap(), chunks)
    }
}

fn meta(out: &ExecuteResult, key: &str) -> Value {
    out.metadata.as_ref().and_then(|m| m.get(key)).cloned().unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_bwrap_that_fails_to_start_degrades_to_one_plain_run() {
    let f =
        fixture("echo 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1");
    let (id, dir) = f.lease().await;
    let (out, chunks) = f.run(&id, "echo ran >> count; echo hi").await;
    assert_eq!((out.exit_code, out.stdout.as_str()), (Some(0), "hi\n"), "{out:?}");
    assert_eq!(meta(&out, "bwrapMode"), json!("plain"));
    assert_eq!(meta(&out, "bwrapDegraded"), json!(true));
    assert!(meta(&out, "bwrapReason").as_str().unwrap().contains("Creating new namespace failed"));
    // bwrap's own error was held back, never streamed; the command ran exactly once.
    assert!(chunks.iter().all(|(_, c)| !c.contains("bwrap:")), "{chunks:?}");
    assert_eq!(std::fs::read_to_string(dir.join("count")).unwrap(), "ran\n");
    // Later calls run plainly, without trying bwrap again, until the next probe.
    match f.provider.mode_for(BwrapSetting::Auto) {
        Mode::Plain(why) => assert!(why.starts_with("degraded: bwrap:"), "{why}"),
        other => panic!("still {other:?}"),
    }
    let (again, _) = f.run(&id, "echo ran >> count").await;
    assert_eq!(meta(&again, "bwrapMode"), json!("plain"));
    assert_eq!(std::fs::read_to_string(dir.join("count")).unwrap(), "ran\nran\n");
    drop(f.bin);
}

#[tokio::test]
async fn a_command_failing_like_bwrap_after_the_marker_is_not_run_again() {
    // A transparent stand-in: skip to `--`, then run what follows (the marker script).
    let f = fixture("while [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"");
    let (id, dir) = f.lease().await;
    let (out, chunks) =
        f.run(&id, "echo ran >> count; echo out; echo 'bwrap: imitation' >&2; exit 1").await;
    assert_eq!(out.exit_code, Some(1));
    assert_eq!(meta(&out, "bwrapMode"), json!("bwrap"));
    assert_eq!(meta(&out, "bwrapDegraded"), Value::Null);
    assert_eq!(std::fs::read_to_string(dir.join("count")).unwrap(), "ran\n");
    let streamed: String = chunks.iter().map(|(_, c)| c.as_str()).collect();
    assert!(streamed.contains("out\n") && streamed.contains("bwrap: imitation"), "{streamed}");
    // The marker is cleaned up.
    let left: Vec<_> = std::fs::read_dir(dir.join(".tmp"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(MARKER_PREFIX))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(matches!(f.provider.mode_for(BwrapSetting::Auto), Mode::Bwrap(_)));
}

#[tokio::test]
async fn off_and_missing_prerequisites_are_plain_with_a_reason() {
    let f = fixture("exit 99");
    match f.provider.mode_for(BwrapSetting::Off) {
        Mode::Plain(why) => assert!(why.contains("disabled by config"), "{why}"),
        other => panic!("{other:?}"),
    }
    let missing = BwrapProvider::with_detection(Detection::plain("bwrap is not on the PATH"));
    assert_eq!(
        missing.mode_for(BwrapSetting::Auto),
        Mode::Plain("bwrap is not on the PATH".into())
    );
    // `off` never touches the (here: broken) bwrap.
    let (id, _) = f.lease().await;
    let params = f.base(json!({
        "config": {"root": f.root.path(), "bwrap": "off"},
        "lease": {"providerLeaseId": id}, "command": "echo", "args": ["plain"]
    }));
    let (out, _) = f.call("environmentExecute", params).await;
    let out: ExecuteResult = serde_json::from_value(out).unwrap();
    assert_eq!((out.stdout.as_str(), meta(&out, "bwrapMode")), ("plain\n", json!("plain")));
}

#[test]
fn the_config_schema_is_the_local_one_plus_bwrap() {
    let schema = paperclip_sandbox_sdk::config_schema::<BwrapConfig>();
    let properties = schema["properties"].as_object().unwrap();
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    assert_eq!(names, ["root", "syncTimeoutMs", "bwrap"]);
    // `root` and `syncTimeoutMs` are the local provider's, described as there.
    let local = local_provider::provider::LocalProvider::manifest(
        paperclip_sandbox_protocol::HostProfile::Paperclip2026_11,
    );
    let local = local.to_value();
    let local = local["environmentDrivers"][0]["configSchema"]["properties"].as_object().unwrap();
    for (key, property) in local {
        assert_eq!(properties.get(key), Some(property), "{key}");
    }
}

/// Validation is the local provider's hook on the typed [`BwrapConfig`]: a config that does
/// not fit names the path, never the value; a valid one is normalized with `bwrap` explicit.
#[tokio::test]
async fn validate_config_is_typed_and_normalizes_bwrap() {
    let p = BwrapProvider::with_detection(Detection::plain("x"));
    let client = paperclip_sandbox_sdk::testing::TestClient::new(p);
    let validate = |config: Value| json!({"driverKey": "bwrap", "config": config});
    let cases = [
        (json!({"bwrap": "sometimes-secret"}), "config.bwrap: expected `auto` or `off`"),
        (json!({"root": "rel-secret"}), "config.root: expected an absolute path"),
        (json!({"syncTimeoutMs": []}), "config.syncTimeoutMs: expected u64"),
    ];
    for (config, expected) in cases {
        let answer = client.call_raw("environmentValidateConfig", validate(config)).await.unwrap();
        assert_eq!(answer, json!({"ok": false, "errors": [expected]}));
    }
    let config = json!({"root": "/srv/leases", "bwrap": "off", "unknownKey": []});
    let answer = client.call_raw("environmentValidateConfig", validate(config)).await.unwrap();
    let normalized =
        json!({"root": "/srv/leases", "syncTimeoutMs": 300000, "bwrap": "off", "unknownKey": []});
    assert_eq!(answer, json!({"ok": true, "normalizedConfig": normalized}));
}
