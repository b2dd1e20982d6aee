//! Fault tests: the engine disappears mid-acquire, a container is removed behind the
//! provider's back, the worker is killed mid-execute.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{containers_of, target, Wire};
use container_provider::engine::Engine;
use paperclip_sandbox_sdk::prelude::CreationOperation;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// A socket in front of the engine that forwards every connection until a request for
/// `/start` arrives; from then on it drops every connection (the engine is "gone") until the
/// returned flag is cleared.
async fn vanishing_proxy(engine_socket: String) -> (tempfile::TempDir, String, Arc<AtomicBool>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let gone = Arc::new(AtomicBool::new(false));
    let flag = gone.clone();
    let armed = Arc::new(AtomicBool::new(true));
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else { return };
            let gone = gone.clone();
            let armed = armed.clone();
            let engine_socket = engine_socket.clone();
            tokio::spawn(async move {
                let mut head = vec![0u8; 64 * 1024];
                let n = client.read(&mut head).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&head[..n]);
                let first = text.lines().next().unwrap_or_default();
                if first.contains("/start") && armed.swap(false, Ordering::SeqCst) {
                    gone.store(true, Ordering::SeqCst);
                }
                if gone.load(Ordering::SeqCst) {
                    return; // dropped: no answer
                }
                let mut upstream = UnixStream::connect(&engine_socket).await.unwrap();
                upstream.write_all(&head[..n]).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    let host = format!("unix://{}", path.display());
    (dir, host, flag)
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn engine_gone_mid_acquire_answers_the_cleanup_envelope_and_destroy_resolves_it() {
    let Some(t) = target() else { return };
    let Some(socket) = t.docker_host.strip_prefix("unix://").map(str::to_owned) else {
        eprintln!("SKIPPED (cannot run here): the engine is not on a unix socket");
        return;
    };
    let engine = t.engine().await;
    let (_dir, proxy, gone) = vanishing_proxy(socket).await;
    let mut broken = t.clone();
    broken.docker_host = proxy;
    let mut w = Wire::start(&broken, "company-gone").await;
    let op = paperclip_sandbox_sdk::kit::creation::generate_uuid();
    let p = w.params(json!({"runId": "run-gone", "creationOperation": {"version": 1, "id": &op}}));
    let (_, resp) = w.call("environmentAcquireLease", p).await;
    let error = &resp["error"];
    assert_eq!(error["code"], json!(-32002), "{resp}");
    let data = &error["data"];
    let cleanup = &data["cleanup"];
    let name = format!("{}{op}", CreationOperation::NAME_PREFIX);
    assert_eq!(cleanup["providerLeaseId"], json!(name), "{resp}");
    assert_eq!(cleanup["companyId"], json!("company-gone"), "{resp}");
    assert_eq!(cleanup["runId"], json!("run-gone"), "{resp}");
    assert!(data["acquisitionDiagnostic"].is_object(), "{resp}");
    // The engine really holds the half-made container under the creation name.
    let c = engine.inspect(&name).await.unwrap().expect("the create reached the engine");
    let id = c.id.unwrap();
    w.shutdown().await;

    // The engine is back. The host hands the envelope to a new worker: destroy looks the name
    // up and reports what it observed, removing nothing…
    gone.store(false, Ordering::SeqCst);
    let mut w = Wire::start(&broken, "company-gone").await;
    let meta = json!({"failedCreateCleanup": cleanup});
    let p = w.params(json!({"providerLeaseId": name, "leaseMetadata": meta}));
    let (_, observed) = w.call("environmentDestroyLease", p).await;
    let seen = &observed["error"]["data"]["cleanup"];
    assert_eq!(seen["observedProviderLeaseId"], json!(id), "{observed}");
    assert!(engine.inspect(&id).await.unwrap().is_some(), "a name-only destroy removes nothing");
    // …and a destroy by the observed id removes it.
    destroy_envelope(&mut w, &engine, &name, seen).await;
    assert!(engine.inspect(&id).await.unwrap().is_none());
    w.shutdown().await;
}

/// Destroys the lease `name` with its creation-cleanup `record`, as the host does: the answer
/// is `destroyed` and the engine lists no container of the wire's company.
async fn destroy_envelope(w: &mut Wire, engine: &Engine, name: &str, record: &serde_json::Value) {
    let meta = json!({"failedCreateCleanup": record});
    let p = w.params(json!({"providerLeaseId": name, "leaseMetadata": meta}));
    let done = w.ok("environmentDestroyLease", p).await;
    assert_eq!(done["state"], json!("destroyed"), "{done}");
    assert!(containers_of(engine, &w.company).await.is_empty(), "nothing is left: {done}");
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn a_container_removed_behind_the_providers_back_resumes_as_expired() {
    let Some(t) = target() else { return };
    let engine = t.engine().await;
    let mut w = Wire::start(&t, "company-behind").await;
    let id = w.acquire_with(json!({"leasePolicy": "reuse_by_environment"})).await
        ["providerLeaseId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(engine.remove(&id).await.unwrap());
    let p = w.params(json!({"providerLeaseId": id}));
    let resumed = w.ok("environmentResumeLease", p).await;
    assert_eq!(resumed["providerLeaseId"], json!(null), "{resumed}");
    assert_eq!(resumed["metadata"]["expired"], json!(true), "{resumed}");
    let p = w.params(json!({"lease": {"providerLeaseId": id}, "command": "true"}));
    let (_, exec) = w.call("environmentExecute", p).await;
    assert!(exec.get("error").is_some(), "{exec}");
    let p = w.params(json!({"providerLeaseId": id}));
    assert_eq!(w.ok("environmentDestroyLease", p).await["state"], json!("destroyed"));
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn a_worker_killed_mid_execute_leaves_nothing_after_the_next_destroy() {
    let Some(t) = target() else { return };
    let engine = t.engine().await;
    let mut w = Wire::start(&t, "company-killed").await;
    let id = w.acquire().await;
    let p = w.params(json!({
        "lease": {"providerLeaseId": id}, "command": "sh",
        "args": ["-c", "sleep 300 & echo up; sleep 300"], "timeoutMs": 600_000
    }));
    let _ = w.send("environmentExecute", p).await;
    // Wait for the command to run, then kill the worker without a word.
    let (_, up) = w.sh(&id, "sleep 0.3; ls /tmp/.paperclip-exec | wc -l", json!({})).await;
    assert_eq!(up["stdout"], json!("2\n"), "both commands are recorded: {up}");
    let pid = w.worker.id().unwrap() as i32;
    unsafe { libc_kill(pid) };
    let _ = w.worker.wait().await;
    let mut w = Wire::start(&t, "company-killed").await;
    w.destroy(&id).await;
    assert!(containers_of(&engine, "company-killed").await.is_empty());
    w.shutdown().await;
}

unsafe fn libc_kill(pid: i32) {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    // SAFETY: signalling a child process this test spawned.
    unsafe { kill(pid, 9) };
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn an_expiry_is_enforced_by_the_engine_and_the_next_acquire_sweeps_dead_leases() {
    let Some(t) = target() else { return };
    let engine = t.engine().await;
    let mut w = Wire::start(&t, "company-sweep").await;
    // Expiry: the container's main process ends at requestedExpiresAt, so the engine stops it.
    let soon = paperclip_sandbox_sdk::protocol::wire_time::format_rfc3339_ms(
        paperclip_sandbox_sdk::protocol::wire_time::now_ms() + 10_000,
    );
    let lease = w.acquire_with(json!({"requestedExpiresAt": soon})).await;
    let expiring = lease["providerLeaseId"].as_str().unwrap().to_owned();
    assert_eq!(lease["expiresAt"], json!(soon), "{lease}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let c = engine.inspect(&expiring).await.unwrap().expect("still there until swept");
        if !container_provider::engine::is_running(&c) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the expired lease still runs");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // A non-reusable lease whose container died (SIGKILL) is an orphan too; one stopped on
    // purpose (stop_and_retain) is kept.
    let dead = w.acquire().await;
    engine.docker().kill_container(&dead, None).await.unwrap();
    let kept = w.acquire().await;
    let p = w.params(json!({"providerLeaseId": kept, "resourceDisposition": "stop_and_retain"}));
    assert_eq!(w.ok("environmentReleaseLease", p).await["state"], json!("stopped"));
    // The next acquire in the environment sweeps both (in the background).
    let fresh = w.acquire().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let mut left = containers_of(&engine, "company-sweep").await;
        left.sort();
        let mut want = vec![fresh.clone(), kept.clone()];
        want.sort();
        if left == want {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not swept: {left:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let p = w.params(json!({"providerLeaseId": expiring}));
    let resumed = w.ok("environmentResumeLease", p).await;
    assert_eq!(resumed["metadata"]["expired"], json!(true), "{resumed}");
    w.destroy(&fresh).await;
    w.destroy(&kept).await;
    w.shutdown().await;
}

/// True when `chunk` begins a `POST /…/containers/{id}/start` request.
fn is_start_request(chunk: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&chunk[..chunk.len().min(512)]);
    let line = text.lines().next().unwrap_or_default();
    let Some(target) = line.strip_prefix("POST ").and_then(|r| r.split(' ').next()) else {
        return false;
    };
    let path = target.split('?').next().unwrap_or_default();
    path.contains("/containers/") && path.ends_with("/start")
}

/// A socket in front of the engine that forwards everything, but holds every container start
/// request for `delay` before forwarding it (a slow engine); `forwarded` is set once a held
/// start has been forwarded. Requests on one connection are sequential (HTTP/1.1 without
/// pipelining), so each begins a read.
async fn slow_start_proxy(
    engine_socket: String,
    delay: std::time::Duration,
    forwarded: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow.sock");
    let listener = UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else { return };
            let engine_socket = engine_socket.clone();
            let forwarded = forwarded.clone();
            tokio::spawn(async move {
                let Ok(upstream) = UnixStream::connect(&engine_socket).await else { return };
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_engine, mut to_engine) = upstream.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_engine, &mut to_client).await;
                    let _ = to_client.shutdown().await;
                });
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match from_client.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let start = is_start_request(&buf[..n]);
                    if start {
                        tokio::time::sleep(delay).await;
                    }
                    if to_engine.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    if start {
                        forwarded.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                }
                let _ = to_engine.shutdown().await;
            });
        }
    });
    (dir, format!("unix://{}", path.display()))
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn an_acquisition_budget_that_runs_out_answers_the_cleanup_envelope_and_destroy_leaves_nothing(
) {
    let Some(t) = target() else { return };
    let Some(socket) = t.docker_host.strip_prefix("unix://").map(str::to_owned) else {
        eprintln!("SKIPPED (cannot run here): the engine is not on a unix socket");
        return;
    };
    let engine = t.engine().await;
    // Long enough that, even on a loaded machine, the 1 s budget runs out while the start is
    // held: the test asserts that order of events, not a wall-clock bound.
    let hold = std::time::Duration::from_secs(20);
    let forwarded = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (_dir, proxy) = slow_start_proxy(socket, hold, forwarded.clone()).await;
    let mut slow = t.clone();
    slow.docker_host = proxy;
    let mut w = Wire::start(&slow, "company-budget").await;
    let op = paperclip_sandbox_sdk::kit::creation::generate_uuid();
    let name = format!("{}{op}", CreationOperation::NAME_PREFIX);
    let mut p =
        w.params(json!({"runId": "run-budget", "creationOperation": {"version": 1, "id": &op}}));
    p["config"]["acquireTimeoutMs"] = json!(1000);
    let started = std::time::Instant::now();
    let (_, resp) = w.call("environmentAcquireLease", p).await;
    let took = started.elapsed();
    assert!(
        !forwarded.load(std::sync::atomic::Ordering::SeqCst),
        "the answer came after the held start reached the engine, not at the budget: {took:?}"
    );
    let error = &resp["error"];
    assert_eq!(error["code"], json!(-32002), "{resp}");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("Container acquisition timed out"), "{resp}");
    let data = &error["data"];
    let diagnostic = &data["acquisitionDiagnostic"];
    assert_eq!(diagnostic["phase"], json!("create"), "{resp}");
    assert_eq!(diagnostic["budgetMs"], json!(1000), "{resp}");
    assert!(diagnostic["elapsedMs"].as_u64().unwrap() >= 1000, "a spent budget: {resp}");
    let cleanup = &data["cleanup"];
    assert_eq!(cleanup["providerLeaseId"], json!(name), "{resp}");
    assert_eq!(cleanup["companyId"], json!("company-budget"), "{resp}");
    assert_eq!(cleanup["runId"], json!("run-budget"), "{resp}");
    // The create had happened: the compensation found the container by its creation name,
    // removed it, and names it as observed.
    let observed = cleanup["observedProviderLeaseId"].as_str().expect("an observed id").to_owned();
    assert!(engine.inspect(&observed).await.unwrap().is_none(), "compensated: {resp}");
    // The host destroys the envelope: destroyed, and nothing is left, also once the held
    // start request has reached the engine.
    destroy_envelope(&mut w, &engine, &name, cleanup).await;
    while !forwarded.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(started.elapsed() < hold + common::LIVENESS, "the held start never went on");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(engine.inspect(&name).await.unwrap().is_none());
    assert!(containers_of(&engine, "company-budget").await.is_empty());
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn a_probe_without_the_image_answers_not_ok_naming_the_image() {
    let Some(t) = target() else { return };
    let mut absent = t.clone();
    absent.image = "paperclip-sandbox-absent-secret:none".to_owned();
    let mut w = Wire::start(&absent, "company-probe").await;
    let probe = w.ok("environmentProbe", w.params(json!({}))).await;
    assert_eq!(probe["ok"], json!(false), "{probe}");
    assert_eq!(probe["summary"], json!("The configured image is not present in the engine"));
    assert_eq!(probe["diagnostics"][0]["code"], json!("image_missing"), "{probe}");
    assert!(!probe.to_string().contains("absent-secret"), "the value is not quoted: {probe}");
    // The same engine with the right image is ready.
    let mut w2 = Wire::start(&t, "company-probe").await;
    let ready = w2.ok("environmentProbe", w2.params(json!({}))).await;
    assert_eq!(ready["ok"], json!(true), "{ready}");
    w.shutdown().await;
    w2.shutdown().await;
}

/// Needs no engine: the probe of an address nobody serves.
#[tokio::test]
async fn a_probe_of_an_unreachable_engine_answers_not_ok() {
    let dir = tempfile::tempdir().unwrap();
    // A socket file nobody listens on (a service that ended), and a path with no socket.
    let dead = dir.path().join("dead-secret.sock");
    drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
    assert!(dead.exists(), "the dead socket file stays");
    let missing = dir.path().join("missing-secret.sock");
    for path in [dead, missing] {
        let target = common::Target {
            docker_host: format!("unix://{}", path.display()),
            image: "paperclip-sandbox-base:latest".to_owned(),
        };
        let mut w = Wire::start(&target, "company-unreachable").await;
        let started = std::time::Instant::now();
        let probe = w.ok("environmentProbe", w.params(json!({}))).await;
        assert!(started.elapsed() < std::time::Duration::from_secs(300), "answered (no hang)");
        assert_eq!(probe["ok"], json!(false), "{probe}");
        assert_eq!(probe["summary"], json!("The container engine is not reachable"), "{probe}");
        assert_eq!(probe["diagnostics"][0]["code"], json!("engine_unreachable"), "{probe}");
        assert_eq!(probe["diagnostics"][0]["severity"], json!("error"), "{probe}");
        assert!(!probe.to_string().contains("secret"), "the address is not quoted: {probe}");
        w.shutdown().await;
    }
}

/// A socket that accepts every connection and never answers (nor closes it).
fn stalled_engine() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stalled.sock");
    let listener = UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    (dir, format!("unix://{}", path.display()))
}

/// An engine that accepts and never answers: the execute (timeoutMs 3000) is answered with an
/// error naming the engine unreachable before the host's own timer for it (timeoutMs + 30 s)
/// fires, and the worker still serves. Needs no real engine.
#[tokio::test]
async fn a_stalled_engine_is_reported_before_the_hosts_timer() {
    let (_dir, host) = stalled_engine();
    let target = common::Target { docker_host: host, image: "unused:latest".into() };
    let mut w = Wire::start(&target, "company-stalled").await;
    let p = w.params(json!({
        "lease": {"providerLeaseId": "lease-stalled"}, "command": "true", "timeoutMs": 3000
    }));
    let id = w.send("environmentExecute", p).await;
    // The host arms its timer when it sends the call: E(3000, config) = 33 s.
    let host_timer = tokio::time::sleep(std::time::Duration::from_millis(3000 + 30_000));
    let resp = tokio::select! {
        (_, resp) = w.answer(&id) => resp,
        () = host_timer => panic!("the host's timer fired before the worker answered"),
    };
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not reachable") && message.contains("deadline"), "{resp}");
    let health = w.ok("health", json!({})).await;
    assert_eq!(health["status"], json!("ok"), "{health}");
    w.shutdown().await;
}
