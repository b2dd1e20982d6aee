//! Wire tests of the newest upstream methods against the real `local-provider` binary: idle
//! sleep (sealing, owner fencing, background work), the known methods without a hook
//! (`-32004`), and a duplex channel running `sh` in a lease.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::Wire;
use serde_json::{json, Value};

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn hold(owner: &str) -> Value {
    json!({"ownerId": owner, "expiresAt": now_ms() + 60_000})
}

fn advertised(init: &Value) -> Vec<String> {
    serde_json::from_value(init["result"]["supportedMethods"].clone()).unwrap()
}

#[tokio::test]
async fn prepare_seals_a_stale_release_keeps_it_sealed_the_matching_release_opens() {
    let (mut w, init) = Wire::start().await;
    let methods = advertised(&init);
    assert!(methods.iter().any(|m| m == "prepareIdleSleep"), "{methods:?}");
    assert!(methods.iter().any(|m| m == "releaseIdleSleep"), "{methods:?}");

    let request = hold("owner-1");
    let prepared = w.ok(json!(2), "prepareIdleSleep", request.clone()).await;
    assert_eq!(
        prepared,
        json!({"ownerId": "owner-1", "expiresAt": request["expiresAt"], "backgroundWork": "none"})
    );

    // Sealed: health is refused, and so is every other call.
    let health = w.call(json!(3), "health", json!({})).await;
    assert_eq!(health["error"]["code"], json!(-32002), "{health}");
    assert_eq!(health["error"]["message"], json!("Plugin is held for idle sleep"));
    let probe = w.call(json!(4), "environmentProbe", w.params(json!({}))).await;
    assert_eq!(probe["error"]["message"], json!("Plugin is held for idle sleep"), "{probe}");

    // A stale owner's release is ignored: still sealed.
    let stale = w.call(json!(5), "releaseIdleSleep", json!({"ownerId": "someone-else"})).await;
    assert_eq!(stale["result"], Value::Null, "{stale}");
    let still = w.call(json!(6), "health", json!({})).await;
    assert_eq!(still["error"]["code"], json!(-32002), "{still}");

    // The matching release opens the worker again.
    w.ok(json!(7), "releaseIdleSleep", json!({"ownerId": "owner-1"})).await;
    let open = w.ok(json!(8), "health", json!({})).await;
    assert_eq!(open["status"], json!("ok"));
}

#[tokio::test]
async fn background_work_is_present_while_a_command_runs_and_none_when_idle() {
    let (mut w, _) = Wire::start().await;
    let lease = w.ok(json!(2), "environmentAcquireLease", w.params(json!({"runId": "r"}))).await;
    let host_lease =
        json!({"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]});
    // A command that runs until the test is done with it: it says it runs, then waits for a
    // file (events, not a fixed sleep: the test holds on a loaded machine).
    let stop = w.root.path().join("stop");
    let script = format!("echo up; while [ ! -e '{}' ]; do sleep 0.05; done", stop.display());
    let exec = json!({"jsonrpc": "2.0", "id": 3, "method": "environmentExecute",
        "params": w.params(json!({"lease": host_lease, "command": "sh", "args": ["-c", script]}))});
    w.send(&exec.to_string()).await;
    while w.next().await.expect("stdout open")["method"] != json!("execute.log") {}
    let busy = w.ok(json!(4), "prepareIdleSleep", hold("owner-busy")).await;
    assert_eq!(busy["backgroundWork"], json!("present"), "{busy}");
    // "present" does not seal.
    w.ok(json!(5), "health", json!({})).await;
    std::fs::write(&stop, "").unwrap();
    let (_, done) = w.until_response(&json!(3)).await;
    assert_eq!(done["result"]["exitCode"], json!(0), "{done}");

    let idle = w.ok(json!(6), "prepareIdleSleep", hold("owner-idle")).await;
    assert_eq!(idle["backgroundWork"], json!("none"), "{idle}");
    w.ok(json!(7), "releaseIdleSleep", json!({"ownerId": "owner-idle"})).await;
}

#[tokio::test]
async fn a_background_process_left_by_a_command_is_background_work() {
    let (mut w, _) = Wire::start().await;
    let lease = w.ok(json!(2), "environmentAcquireLease", w.params(json!({"runId": "r"}))).await;
    let host_lease =
        json!({"providerLeaseId": lease["providerLeaseId"], "metadata": lease["metadata"]});
    // The command returns at once but leaves a child running in its group.
    let started = w
        .ok(
            json!(3),
            "environmentExecute",
            w.params(json!({"lease": host_lease, "command": "sh",
                "args": ["-c", "sleep 30 >/dev/null 2>&1 &"]})),
        )
        .await;
    assert_eq!(started["exitCode"], json!(0), "{started}");
    let busy = w.ok(json!(4), "prepareIdleSleep", hold("o")).await;
    assert_eq!(busy["backgroundWork"], json!("present"), "the drain hook sees the child: {busy}");
    // Destroying the lease ends its process groups; once the killed child is reaped the
    // worker is idle (reaping is asynchronous, so allow it a moment).
    w.ok(
        json!(5),
        "environmentDestroyLease",
        w.params(json!({"providerLeaseId": lease["providerLeaseId"]})),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let mut id = 6;
    loop {
        let idle = w.ok(json!(id), "prepareIdleSleep", hold(&format!("o{id}"))).await;
        if idle["backgroundWork"] == json!("none") {
            w.ok(json!(0), "releaseIdleSleep", json!({"ownerId": format!("o{id}")})).await;
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still busy after destroy: {idle}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        id += 1;
    }
}

#[tokio::test]
async fn known_methods_without_a_hook_answer_32004() {
    let (mut w, init) = Wire::start().await;
    let methods = advertised(&init);
    for (id, method) in [(2, "environmentTask"), (3, "routeAiConnection"), (4, "loginPtyOpen")] {
        assert!(!methods.iter().any(|m| m == method), "{method} is not advertised");
        let answer = w.call(json!(id), method, json!({})).await;
        assert_eq!(answer["error"]["code"], json!(-32004), "{method}: {answer}");
        assert_eq!(
            answer["error"]["message"],
            json!(format!("{method} is not implemented by this plugin"))
        );
    }
    let unknown = w.call(json!(9), "environmentFrobnicate", json!({})).await;
    assert_eq!(unknown["error"]["code"], json!(-32601), "{unknown}");
}

#[tokio::test]
async fn a_duplex_channel_runs_sh_in_the_lease() {
    let (mut w, init) = Wire::start().await;
    assert!(advertised(&init).iter().any(|m| m == "duplexChannelOpen"));
    let lease = w.ok(json!(2), "environmentAcquireLease", w.params(json!({"runId": "r"}))).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    let opened = w
        .ok(
            json!(3),
            "duplexChannelOpen",
            json!({"hostRouteId": "route-1", "driverKey": "local", "companyId": "company-1",
                   "environmentId": "env-1", "providerLeaseId": id, "command": ["sh"]}),
        )
        .await;
    let session = opened["workerSessionId"].as_str().unwrap().to_owned();
    let write =
        |data: &str| json!({"hostRouteId": "route-1", "workerSessionId": session, "data": data});
    // An open channel is background work.
    let busy = w.ok(json!(4), "prepareIdleSleep", hold("o")).await;
    assert_eq!(busy["backgroundWork"], json!("present"), "{busy}");

    // `pwd` answers the lease directory; "cHdkCg==" is "pwd\n".
    w.ok(json!(5), "duplexChannelWrite", write("cHdkCg==")).await;
    let mut seen = Vec::new();
    let mut exit = None;
    let mut pending_write = true;
    while exit.is_none() {
        let v = w.next().await.expect("the worker is alive");
        match v["method"].as_str() {
            Some("duplexChannel.data") => {
                assert_eq!(v["params"]["workerSessionId"], json!(session));
                assert!(v.get("paperclipInvocationId").is_none(), "{v}");
                let text = v["params"]["chunk"].as_str().unwrap();
                seen.extend(
                    paperclip_sandbox_sdk::protocol::methods::ChannelBytes::decode(text).unwrap().0,
                );
                if pending_write && seen.ends_with(b"\n") {
                    pending_write = false;
                    // "exit 7\n".
                    let line = json!({"jsonrpc": "2.0", "id": 6, "method": "duplexChannelWrite", "params": write("ZXhpdCA3Cg==")});
                    w.send(&line.to_string()).await;
                }
            }
            Some("duplexChannel.exit") => exit = Some(v["params"].clone()),
            _ => {}
        }
    }
    let pwd = String::from_utf8(seen).unwrap();
    assert!(pwd.trim_end().ends_with(&id), "sh ran in the lease: {pwd:?}");
    assert_eq!(exit.unwrap()["exitCode"], json!(7));
    let closed = w.ok(json!(7), "duplexChannelClose", json!({"hostRouteId": "route-1"})).await;
    assert_eq!(closed, json!({"hostRouteId": "route-1", "workerSessionId": session}));
    // Closed: no more background work, and writes to the closed route fail.
    let idle = w.ok(json!(8), "prepareIdleSleep", hold("o2")).await;
    assert_eq!(idle["backgroundWork"], json!("none"), "{idle}");
    w.ok(json!(9), "releaseIdleSleep", json!({"ownerId": "o2"})).await;
    let gone = w.call(json!(10), "duplexChannelWrite", write("cHdkCg==")).await;
    assert!(gone.get("error").is_some(), "{gone}");
}
