//! Wire tests of the framing and runtime behaviour, against the real `local-provider` binary.

mod common;

use std::time::{Duration, Instant};

use common::{Wire, LIVENESS};
use serde_json::{json, Value};

/// The hooks the local provider implements (`health` is answered without a hook and so not
/// advertised, as upstream; `releaseIdleSleep` comes with `idle_drain`).
const SUPPORTED: &[&str] = &[
    "shutdown",
    "prepareIdleSleep",
    "releaseIdleSleep",
    "duplexChannelOpen",
    "duplexChannelWrite",
    "duplexChannelStop",
    "duplexChannelClose",
    "environmentValidateConfig",
    "environmentProbe",
    "environmentAcquireLease",
    "environmentResumeLease",
    "environmentReleaseLease",
    "environmentDestroyLease",
    "environmentStopLease",
    "environmentRealizeWorkspace",
    "environmentExecute",
    "environmentSyncIn",
    "environmentSyncOut",
];

fn vector(id: &str) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../protocol/tests/vectors/framing-and-timeouts.json"
    );
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all["cases"].as_array().unwrap().iter().find(|c| c["id"] == id).cloned().unwrap()
}

#[tokio::test]
async fn initialize_advertises_exactly_the_implemented_hooks() {
    let (mut w, init) = Wire::start().await;
    assert_eq!(init["result"]["ok"], json!(true), "{init}");
    let mut got: Vec<String> =
        serde_json::from_value(init["result"]["supportedMethods"].clone()).unwrap();
    got.sort();
    let mut want: Vec<String> = SUPPORTED.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    // A second initialize fails (A.3) and the worker keeps serving.
    let again = w.call(json!(2), "initialize", json!({"manifest": {}, "config": {}})).await;
    assert!(again.get("error").is_some(), "{again}");
    assert_eq!(w.ok(json!(3), "health", json!({})).await["status"], json!("ok"));
}

#[tokio::test]
async fn vectors_p1_p2_p3() {
    let (mut w, _) = Wire::start().await;
    // P1: a void answer carries "result": null (release without a lease answers void).
    let p1 = vector("P1");
    let params = w.params(json!({"providerLeaseId": null}));
    w.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "environmentReleaseLease", "params": params})
            .to_string(),
    )
    .await;
    w.until_response(&json!(1)).await;
    let line: Value = serde_json::from_str(w.lines.last().unwrap()).unwrap();
    let correct: Value =
        serde_json::from_str(p1["expected"]["correctLine"].as_str().unwrap()).unwrap();
    assert_eq!(line, correct);
    // P2: a known method without a hook answers -32004. The local provider implements
    // environmentSyncIn, so the vector's line is replayed on a hook it does not implement.
    let p2 = vector("P2");
    let line = p2["input"]["line"]
        .as_str()
        .unwrap()
        .replace("environmentSyncIn", "environmentRunnerIngressEndpoint");
    w.send(&line).await;
    let (_, resp) = w.until_response(&json!(5)).await;
    let want = p2["expected"]["responseLine"]
        .as_str()
        .unwrap()
        .replace("environmentSyncIn", "environmentRunnerIngressEndpoint");
    assert_eq!(resp, serde_json::from_str::<Value>(&want).unwrap());
    // …and the implemented environmentSyncIn is not -32004 (the vector's lease does not exist).
    w.send(p2["input"]["line"].as_str().unwrap()).await;
    let (_, resp) = w.until_response(&json!(5)).await;
    assert_ne!(resp["error"]["code"], json!(-32004), "{resp}");
    // P3: a parse error answers id null, -32700, and the worker keeps running.
    let p3 = vector("P3");
    w.send(p3["input"]["line"].as_str().unwrap()).await;
    let (_, resp) = w.until_response(&Value::Null).await;
    assert_eq!(
        resp,
        serde_json::from_str::<Value>(p3["expected"]["responseLine"].as_str().unwrap()).unwrap()
    );
    assert_eq!(w.ok(json!(6), "health", json!({})).await["status"], json!("ok"));
}

#[tokio::test]
async fn unknown_versus_unimplemented_methods() {
    let (mut w, _) = Wire::start().await;
    let unknown = w.call(json!(1), "environmentFrobnicate", json!({})).await;
    assert_eq!(unknown["error"]["code"], json!(-32601));
    for (i, m) in
        ["environmentCaptureTemplate", "runJob", "environmentRunnerRecovery"].iter().enumerate()
    {
        let resp = w.call(json!(10 + i), m, json!({})).await;
        assert_eq!(resp["error"]["code"], json!(-32004), "{m}: {resp}");
        assert_eq!(
            resp["error"]["message"],
            json!(format!("{m} is not implemented by this plugin"))
        );
    }
}

#[tokio::test]
async fn ids_are_echoed_with_their_exact_type() {
    let (mut w, _) = Wire::start().await;
    for id in [
        json!(7),
        json!("7"),
        json!("host-1"),
        json!(0),
        json!(9_007_199_254_740_991u64),
        json!(-3),
    ] {
        w.send(&json!({"jsonrpc": "2.0", "id": id, "method": "health"}).to_string()).await;
        let v = w.next().await.unwrap();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["result"]["status"], json!("ok"));
    }
}

#[tokio::test]
async fn blank_lines_and_crlf_are_tolerated() {
    let (mut w, _) = Wire::start().await;
    w.worker.send_raw(b"\n\r\n   \n").await.unwrap();
    w.worker
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"health\"}\r\n")
        .await
        .unwrap();
    let v = w.next().await.unwrap();
    assert_eq!(
        (v["id"].clone(), v["result"]["status"].clone()),
        (json!("crlf"), json!("ok")),
        "{v}"
    );
}

#[tokio::test]
async fn a_lone_surrogate_escape_is_served_not_refused() {
    // `JSON.stringify` writes a lone surrogate as `\ud800`, and `JSON.parse` accepts it.
    let (mut w, _) = Wire::start().await;
    w.send(r#"{"jsonrpc":"2.0","id":"ls","method":"environmentValidateConfig","params":{"driverKey":"local","config":{"root":"rel\ud800"}}}"#)
        .await;
    let v = w.next().await.unwrap();
    assert_eq!(v["id"], json!("ls"), "{v}");
    assert_eq!(v["result"]["ok"], json!(false), "{v}");
}

#[tokio::test]
async fn an_oversize_line_is_refused_and_the_worker_keeps_serving() {
    let mut w = Wire::spawn_with(&[], &[("LOCAL_PROVIDER_FRAME_LIMIT", "4096")]);
    w.ok(json!(1), "initialize", json!({"manifest": {}, "config": {}})).await;
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "health", "params": {"pad": "x".repeat(10_000)}});
    w.send(&big.to_string()).await;
    let v = w.next().await.unwrap();
    assert_eq!(v["error"]["code"], json!(-32600), "{v}");
    assert_eq!(w.ok(json!(3), "health", json!({})).await["status"], json!("ok"));
}

#[tokio::test]
async fn a_hundred_concurrent_requests_all_answer() {
    let (mut w, _) = Wire::start().await;
    let mut batch = String::new();
    for i in 0..100 {
        let params = if i % 2 == 0 {
            json!({"driverKey": "local", "config": {"syncTimeoutMs": i + 1}})
        } else {
            w.params(json!({"providerLeaseId": format!("lp-missing{i}")}))
        };
        let method =
            if i % 2 == 0 { "environmentValidateConfig" } else { "environmentResumeLease" };
        batch.push_str(
            &json!({"jsonrpc": "2.0", "id": format!("c{i}"), "method": method, "params": params})
                .to_string(),
        );
        batch.push('\n');
    }
    w.worker.send_raw(batch.as_bytes()).await.unwrap();
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 100 {
        let v = w.next().await.unwrap();
        let id = v["id"].as_str().unwrap().to_string();
        let i: u64 = id[1..].parse().unwrap();
        if i.is_multiple_of(2) {
            assert_eq!(v["result"]["normalizedConfig"]["syncTimeoutMs"], json!(i + 1), "{v}");
        } else {
            assert_eq!(v["result"]["providerLeaseId"], Value::Null, "{v}");
        }
        assert!(seen.insert(id), "answered twice");
    }
}

#[tokio::test]
async fn a_notification_storm_is_absorbed_without_answers() {
    let (mut w, _) = Wire::start().await;
    let mut storm = String::new();
    for i in 0..2_000 {
        let method = ["onEvent", "agents.sessions.event", "someFutureNotification"][i % 3];
        storm
            .push_str(&json!({"jsonrpc": "2.0", "method": method, "params": {"n": i}}).to_string());
        storm.push('\n');
    }
    storm.push_str(&json!({"jsonrpc": "2.0", "id": "after", "method": "health"}).to_string());
    storm.push('\n');
    w.worker.send_raw(storm.as_bytes()).await.unwrap();
    let (before, resp) = w.until_response(&json!("after")).await;
    // No notification is answered: the first line after the storm is the request's answer.
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(resp["result"]["status"], json!("ok"));
}

#[tokio::test]
async fn eof_cancels_in_flight_requests_answers_them_then_exits_zero() {
    // Stdin EOF: the host is gone. The running command is ended (not waited for), its call is
    // still answered, and the worker exits 0.
    let (mut w, _) = Wire::start().await;
    let lease = w.ok(json!(1), "environmentAcquireLease", w.params(json!({"runId": "r"}))).await;
    let params = w.params(
        json!({"lease": lease, "command": "sh", "args": ["-c", "echo started; sleep 30; echo late"]}),
    );
    w.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "environmentExecute", "params": params})
            .to_string(),
    )
    .await;
    let started = w.next().await.unwrap();
    assert_eq!(started["method"], json!("execute.log"), "{started}");
    w.worker.close_stdin();
    let (_, resp) = w.until_response(&json!(2)).await;
    assert_eq!(resp["result"]["stdout"], json!("started\n"), "{resp}");
    assert_eq!(resp["result"]["metadata"]["cancelled"], json!(true), "{resp}");
    assert_eq!(w.exit_code(LIVENESS).await, Some(0));
}

#[tokio::test]
async fn shutdown_answers_null_and_exits_with_work_in_flight() {
    let (mut w, _) = Wire::start().await;
    let lease = w.ok(json!(1), "environmentAcquireLease", w.params(json!({"runId": "r"}))).await;
    let marker = w.root.path().join("grandchild.pid");
    // Commands that outlast every hang guard: a worker that exits while they run did not wait
    // for them (the order of events is asserted, not a wall-clock bound).
    let script = format!("sleep 86400 & echo $! > '{}'; sleep 86400", marker.display());
    let params = w.params(json!({"lease": lease, "command": "sh", "args": ["-c", script]}));
    let req = json!({"jsonrpc": "2.0", "id": 2, "method": "environmentExecute", "params": params});
    w.send(&req.to_string()).await;
    let waiting = Instant::now();
    while !std::fs::read_to_string(&marker).is_ok_and(|s| s.ends_with('\n')) {
        assert!(waiting.elapsed() < LIVENESS, "the command never started");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let grandchild: u32 = std::fs::read_to_string(&marker).unwrap().trim().parse().unwrap();
    let started = Instant::now();
    w.send(&json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown", "params": {}}).to_string())
        .await;
    let mut shutdown_answer = None;
    while let Some(v) = w.next().await {
        if v["id"] == json!("bye") {
            shutdown_answer = Some(v);
        }
    }
    assert_eq!(shutdown_answer.unwrap()["result"], Value::Null);
    assert_eq!(w.exit_code(LIVENESS).await, Some(0));
    eprintln!("exited {:?} after the shutdown request, a command running", started.elapsed());
    // Nothing the worker started outlives it (gone, or a zombie awaiting its reaper).
    let gone = (0..LIVENESS.as_millis() / 25).any(|_| {
        let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).ok();
        let dead = stat
            .is_none_or(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if !dead {
            std::thread::sleep(Duration::from_millis(25));
        }
        dead
    });
    assert!(gone, "the command's grandchild {grandchild} survived shutdown");
}

#[tokio::test]
async fn stdout_carries_protocol_frames_only_even_after_println() {
    let (mut w, _) = Wire::start().await;
    // probe calls println! on purpose (the stdout guard demonstration).
    let probe = w.ok(json!(1), "environmentProbe", w.params(json!({}))).await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
    w.worker.close_stdin();
    while w.next().await.is_some() {}
    assert_eq!(w.exit_code(LIVENESS).await, Some(0));
    // Every stdout line parsed as JSON-RPC (checked by `next`); the stray line went to stderr.
    assert!(w.worker.stderr().contains("stdout guard demonstration"), "{}", w.worker.stderr());
    assert!(w.lines.iter().all(|l| !l.contains("stdout guard demonstration")));
}

#[tokio::test]
async fn a_malformed_line_is_quoted_on_the_wire_but_never_logged() {
    let (mut w, _) = Wire::start().await;
    // A truncated request whose config carries a secret.
    w.send(r#"{"jsonrpc":"2.0","id":9,"method":"environmentProbe","params":{"config":{"apiKey":"sekrit-4711""#)
        .await;
    let v = w.next().await.unwrap();
    assert_eq!(v["error"]["code"], json!(-32700), "{v}");
    // The published SDK quotes the line in the answer; that is the host's own data.
    assert!(v["error"]["message"].as_str().unwrap().contains("sekrit-4711"), "{v}");
    w.worker.close_stdin();
    while w.next().await.is_some() {}
    assert_eq!(w.exit_code(LIVENESS).await, Some(0));
    let stderr = w.worker.stderr();
    assert!(stderr.contains("unusable inbound line"), "{stderr}");
    assert!(!stderr.contains("sekrit-4711"), "the log quoted the line: {stderr}");
}

#[tokio::test]
async fn manifest_flag_prints_the_manifest_for_each_profile() {
    for (args, has_nov) in
        [(vec!["--manifest"], true), (vec!["--manifest", "--profile", "paperclip-2026-09"], false)]
    {
        let out = std::process::Command::new(common::BIN).args(&args).output().unwrap();
        assert!(out.status.success());
        let m: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(m["id"], json!("paperclip-sandbox.local-provider"));
        assert_eq!(m["environmentDrivers"][0]["driverKey"], json!("local"));
        assert_eq!(
            m["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_some(),
            has_nov,
            "{args:?}"
        );
    }
    let bad = std::process::Command::new(common::BIN).args(["--profile", "nope"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// 64 MiB of `\x01` and 300,000 `€` in 4,093-byte writes: every line within the host's line
/// limit, the cut output flagged, no U+FFFD where nothing was cut, `health` answered after.
#[tokio::test]
async fn output_floods_fit_the_hosts_line_limit() {
    let (mut w, _) = Wire::start().await;
    let lease =
        w.ok(json!(2), "environmentAcquireLease", w.params(json!({"runId": "run-1"}))).await;
    let base = w.params(json!({"lease": lease, "command": "sh"}));
    let params = |script: &str| {
        let mut p = base.clone();
        p["args"] = json!(["-c", script]);
        p
    };
    paperclip_sandbox_sdk::testing::flood::assert_output_floods_fit(&mut w.worker, params).await;
}
