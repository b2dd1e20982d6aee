//! Wire tests against the real worker process (stdio pipes, a real exit code).

use std::time::Duration;

use paperclip_sandbox_sdk::testing::WorkerProcess;
use serde_json::{json, Value};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_paperclip-sandbox-test-worker");

fn worker() -> WorkerProcess {
    WorkerProcess::spawn(BIN, std::iter::empty::<&str>()).expect("spawn the test worker")
}

fn probe_params(config: Value) -> Value {
    json!({"driverKey": "rust-sbx", "companyId": "company-1", "environmentId": "environment-1",
           "config": config})
}

/// Generous liveness bound for anything that should happen promptly.
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f).await.unwrap_or_else(|_| panic!("{what}"))
}

#[tokio::test]
async fn stdout_carries_only_frames_and_println_goes_to_stderr() {
    let mut w = worker();
    let init = within("initialize", w.call(json!(1), "initialize", json!({}))).await.unwrap();
    assert_eq!(
        init,
        json!({"jsonrpc": "2.0", "id": 1, "result":
            {"ok": true, "supportedMethods": ["environmentProbe"]}})
    );
    let probe = w.call(json!(2), "environmentProbe", probe_params(json!({})));
    assert_eq!(within("probe", probe).await.unwrap()["result"], json!({"ok": true}));
    w.close_stdin();
    // Every remaining stdout line is a JSON-RPC frame (the println text is not among them).
    while let Some(line) = within("stdout EOF", w.next_line()).await.unwrap() {
        let v: Value = serde_json::from_str(&line).expect("stdout line is JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
    }
    let status = within("exit after EOF", w.wait()).await.unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(w.stderr().contains("stray println from the probe hook"), "stderr: {}", w.stderr());
}

#[tokio::test]
async fn oversize_blank_and_crlf_lines_then_still_serving() {
    let mut command = Command::new(BIN);
    command.env("TEST_WORKER_FRAME_LIMIT", "4096");
    let mut w = WorkerProcess::from_command(command).unwrap();
    w.send_raw(format!("{}\n", "x".repeat(100_000)).as_bytes()).await.unwrap();
    let line = within("oversize answer", w.next_line()).await.unwrap().unwrap();
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: frame exceeds the 4096-byte limit"}}"#
    );
    w.send_raw(b"\n\r\n   \n{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"health\"}\r\n")
        .await
        .unwrap();
    let line = within("crlf answer", w.next_line()).await.unwrap().unwrap();
    assert_eq!(line, r#"{"jsonrpc":"2.0","id":"crlf","result":{"status":"ok"}}"#);
    w.send_line("not json").await.unwrap();
    let line = within("parse error", w.next_line()).await.unwrap().unwrap();
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: Invalid JSON: not json"}}"#
    );
    let health = within("health", w.call(json!(7), "health", json!({}))).await.unwrap();
    assert_eq!(health, json!({"jsonrpc": "2.0", "id": 7, "result": {"status": "ok"}}));
}

#[tokio::test]
async fn eof_drains_a_slow_in_flight_request() {
    let mut w = worker();
    let request = json!({"jsonrpc": "2.0", "id": 5, "method": "environmentProbe",
                         "params": probe_params(json!({"sleepMs": 300}))});
    w.send_line(&request.to_string()).await.unwrap();
    w.close_stdin();
    let seen = within("drained response", w.read_until_response(&json!(5))).await.unwrap();
    assert_eq!(seen.last().unwrap()["result"], json!({"ok": true}));
    let status = within("exit after drain", w.wait()).await.unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn shutdown_answers_then_exits_zero() {
    let mut w = worker();
    within("initialize", w.call(json!(1), "initialize", json!({}))).await.unwrap();
    let bye = within("shutdown", w.call(json!("bye"), "shutdown", json!({}))).await.unwrap();
    assert_eq!(bye, json!({"jsonrpc": "2.0", "id": "bye", "result": null}));
    // stdin stays open: the worker must exit on its own.
    let status = within("exit after shutdown", w.wait()).await.unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn numeric_and_string_ids_keep_their_type() {
    let mut w = worker();
    for id in [json!(3), json!("3"), json!("host-1"), json!(9007199254740991u64)] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"health"}}"#);
        w.send_line(&line).await.unwrap();
        let got = within("answer", w.next_line()).await.unwrap().unwrap();
        assert_eq!(got, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"status":"ok"}}}}"#));
    }
    let e = within("unknown", w.call(json!(4), "environmentFrobnicate", json!({}))).await.unwrap();
    assert_eq!(
        e["error"],
        json!({"code": -32601, "message": "Unknown method: environmentFrobnicate"})
    );
    let e =
        within("unimplemented", w.call(json!(5), "environmentSyncIn", json!({}))).await.unwrap();
    assert_eq!(
        e["error"],
        json!({"code": -32004, "message": "environmentSyncIn is not implemented by this plugin"})
    );
}
