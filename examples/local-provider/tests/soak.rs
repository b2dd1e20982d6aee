//! A bounded soak on the real binary: many lease lifecycles, 16 in flight at a time, and the
//! worker's RSS, open descriptors and lease directories stay flat. `SOAK_LIFECYCLES` (default
//! 2,000) sets the length.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_local-provider");
const IN_FLIGHT: usize = 16;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

fn leases(root: &std::path::Path) -> usize {
    std::fs::read_dir(root)
        .map_or(0, |d| d.filter_map(Result::ok).filter(|e| e.path().is_dir()).count())
}

#[tokio::test]
async fn lifecycles_leave_rss_fds_and_lease_dirs_flat() {
    let total: usize =
        std::env::var("SOAK_LIFECYCLES").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let root = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), "payload").unwrap();
    let mut child = Command::new(BIN)
        .env("LOCAL_PROVIDER_ROOT", root.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = json!({"driverKey": "local", "companyId": "c", "environmentId": "e",
        "config": {"root": root.path()}});
    let with = |extra: Value| {
        let mut p = base.clone();
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        p
    };
    let mut next_id = 0u64;
    // Sends one request per params, then reads until every one is answered.
    let mut batch = |method: &'static str, params: Vec<Value>| {
        let mut text = String::new();
        let ids: Vec<u64> = params
            .into_iter()
            .map(|p| {
                next_id += 1;
                text += &json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": p})
                    .to_string();
                text.push('\n');
                next_id
            })
            .collect();
        (text, ids)
    };
    let mut round = async |method: &'static str, params: Vec<Value>| -> Vec<Value> {
        let (text, ids) = batch(method, params);
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
        let mut answers = std::collections::HashMap::new();
        while answers.len() < ids.len() {
            let line = tokio::time::timeout(Duration::from_secs(300), stdout.next_line())
                .await
                .expect("answered in time")
                .unwrap()
                .expect("stdout open");
            let v: Value = serde_json::from_str(&line).unwrap();
            if let Some(id) = v.get("id").and_then(Value::as_u64) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                answers.insert(id, v["result"].clone());
            }
        }
        ids.iter().map(|id| answers.remove(id).unwrap()).collect()
    };
    let init = json!({"manifest": {}, "config": {}});
    round("initialize", vec![init]).await;

    let rounds = total.div_ceil(IN_FLIGHT);
    let mut baseline = None;
    for r in 0..rounds {
        let leased =
            round("environmentAcquireLease", vec![with(json!({"runId": "r"})); IN_FLIGHT]).await;
        let ws: Vec<Value> = leased
            .iter()
            .map(|l| with(json!({"lease": l, "workspace": {"localPath": "/h"}})))
            .collect();
        let cwds = round("environmentRealizeWorkspace", ws).await;
        let syncs = leased
            .iter()
            .zip(&cwds)
            .map(|(l, c)| {
                let target = format!("{}/f", c["cwd"].as_str().unwrap());
                with(json!({"lease": l, "operations": [{"operationId": "o", "files": [
                    {"sourcePath": src.path().join("f"), "targetPath": target, "kind": "file"}]}]}))
            })
            .collect();
        round("environmentSyncIn", syncs).await;
        let execs = leased
            .iter()
            .map(|l| with(json!({"lease": l, "command": "sh", "args": ["-c", "cat workspace/f; echo e >&2"]})))
            .collect();
        for out in round("environmentExecute", execs).await {
            assert_eq!(out["stdout"], json!("payload"), "{out}");
        }
        let destroys =
            leased.iter().map(|l| with(json!({"providerLeaseId": l["providerLeaseId"]}))).collect();
        round("environmentDestroyLease", destroys).await;
        if r == 2 {
            // After warm-up: allocator pools and the runtime are at their working size.
            baseline = Some((rss_kib(pid), fds(pid)));
        }
    }
    let (rss0, fds0) = baseline.expect("more than three rounds");
    let (rss1, fds1) = (rss_kib(pid), fds(pid));
    eprintln!(
        "soak: {} lifecycles, {IN_FLIGHT} in flight: RSS {rss0} -> {rss1} KiB, fds {fds0} -> {fds1}",
        rounds * IN_FLIGHT
    );
    assert!(rss1 < rss0 + 16 * 1024, "RSS grew from {rss0} to {rss1} KiB");
    assert!(fds1 <= fds0 + 2, "descriptors grew from {fds0} to {fds1}");
    assert_eq!(leases(root.path()), 0, "every lease directory was destroyed");
    drop(stdin);
    let status = paperclip_sandbox_sdk::testing::wait_exit(&mut child, Duration::from_secs(300))
        .await
        .unwrap()
        .expect("the worker exits after stdin EOF");
    assert!(status.success());
}
