//! `cargo bench -p container-provider`: what a lease costs on a real engine.
//!
//! Needs `DOCKER_HOST` and `PAPERCLIP_CONTAINER_IMAGE` (`eval "$(.ci/container-engine up)"`).
//! The provider runs in process behind the SDK's JSON-RPC runtime (the SDK test client), so the
//! numbers include the protocol but not a pipe. Reported, never asserted (machines are shared):
//!
//! * cold acquire with the image cached: create + start + readiness check, then destroy;
//! * execute round trip: `true` in a running lease;
//! * syncIn of a 2,000-file tree through the provider, against one plain tar stream of the
//!   same tree `PUT` to the archive API (what `docker cp` does), the floor for any sync.

use std::time::{Duration, Instant};

use container_provider::engine::Engine;
use container_provider::ContainerProvider;
use paperclip_sandbox_sdk::testing::TestClient;
use serde_json::{json, Value};

const ROUNDS: usize = 5;
const EXECS: usize = 50;
const FILES: usize = 2_000;

fn stats(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    println!(
        "{name:<44} n={:<3} median {:>8.1} ms  mean {:>8.1} ms  min {:>8.1} ms  max {:>8.1} ms",
        samples.len(),
        ms(samples[samples.len() / 2]),
        mean,
        ms(samples[0]),
        ms(samples[samples.len() - 1])
    );
}

fn base(config: &Value, extra: Value) -> Value {
    let mut v = json!({"driverKey": "container", "companyId": "company-bench", "environmentId": "env-bench", "config": config});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn tree(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..files {
        let sub = dir.path().join(format!("d{:02}", i % 40));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i:04}.txt")), format!("file {i}\n").repeat(20)).unwrap();
    }
    dir
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("container-provider bench: run it with `cargo bench -p container-provider`");
        return;
    }
    let (Ok(host), Ok(image)) =
        (std::env::var("DOCKER_HOST"), std::env::var("PAPERCLIP_CONTAINER_IMAGE"))
    else {
        println!(
            "container-provider bench: skipped, no engine (eval \"$(.ci/container-engine up)\")"
        );
        return;
    };
    let config = json!({"dockerHost": host, "image": image});
    let client = TestClient::new(ContainerProvider::new());
    client.call_raw("initialize", json!({"manifest": {}, "config": {}})).await.unwrap();

    let mut acquires = Vec::new();
    let mut destroys = Vec::new();
    for i in 0..ROUNDS {
        let t = Instant::now();
        let lease = client
            .call_raw(
                "environmentAcquireLease",
                base(&config, json!({"runId": format!("bench-{i}")})),
            )
            .await
            .unwrap();
        acquires.push(t.elapsed());
        let id = lease["providerLeaseId"].clone();
        let t = Instant::now();
        client
            .call_raw("environmentDestroyLease", base(&config, json!({"providerLeaseId": id})))
            .await
            .unwrap();
        destroys.push(t.elapsed());
    }
    stats("acquire (create+start+ready, image cached)", acquires);
    stats("destroy (remove with volumes)", destroys);

    let lease = client
        .call_raw("environmentAcquireLease", base(&config, json!({"runId": "bench-exec"})))
        .await
        .unwrap();
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    let mut execs = Vec::new();
    for _ in 0..EXECS {
        let p = base(&config, json!({"lease": {"providerLeaseId": id}, "command": "true"}));
        let t = Instant::now();
        let r = client.call_raw("environmentExecute", p).await.unwrap();
        execs.push(t.elapsed());
        assert_eq!(r["exitCode"], json!(0));
    }
    stats("execute round trip (`true`)", execs);

    let src = tree(FILES);
    let mut syncs = Vec::new();
    for i in 0..ROUNDS {
        let op = json!({"operationId": "b", "files": [{"sourcePath": src.path(), "targetPath": format!("/workspace/tree{i}"), "kind": "directory"}]});
        let p = base(&config, json!({"lease": {"providerLeaseId": id}, "operations": [op]}));
        let t = Instant::now();
        let r = client.call_raw("environmentSyncIn", p).await.unwrap();
        syncs.push(t.elapsed());
        assert_eq!(r["operations"][0]["filesTransferred"], json!(FILES));
    }
    stats("syncIn 2,000 files (provider)", syncs);

    let engine = Engine::connect(&host).await.unwrap();
    let mut plain = Vec::new();
    for i in 0..ROUNDS {
        let t = Instant::now();
        let mut b = tar::Builder::new(Vec::new());
        b.append_dir_all(format!("plain{i}"), src.path()).unwrap();
        let bytes = b.into_inner().unwrap();
        let options = bollard::query_parameters::UploadToContainerOptionsBuilder::default()
            .path("/workspace")
            .build();
        engine
            .docker()
            .upload_to_container(&id, Some(options), bollard::body_full(bytes.into()))
            .await
            .unwrap();
        plain.push(t.elapsed());
    }
    stats("plain tar PUT of the same tree (docker cp)", plain);
    client
        .call_raw("environmentDestroyLease", base(&config, json!({"providerLeaseId": id})))
        .await
        .unwrap();
}
