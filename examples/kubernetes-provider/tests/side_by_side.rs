//! Figures, not a test of speed (ignored; run on purpose): the Pod and the Job backend side by
//! side on the same cluster — acquire, execute `true`, a command printing 16 MiB, release.
//!
//! ```text
//! eval "$(.ci/kubernetes up)"
//! cargo test -p kubernetes-provider --test side_by_side -- --ignored --nocapture
//! ```

mod common;

use std::time::Instant;

use common::{target, Wire};
use serde_json::json;

const SIXTEEN_MIB: usize = 16 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "prints figures; needs a cluster (.ci/kubernetes up)"]
async fn pod_and_job_backends_side_by_side() {
    let Some(t) = target() else { return };
    let mut rows = Vec::new();
    for backend in ["pod", "job"] {
        let mut w = Wire::start(&t, &format!("company-bench-{backend}")).await;
        w.extra_config = json!({"backend": backend});
        let t0 = Instant::now();
        let id = w.acquire().await;
        let acquire = t0.elapsed();
        let t1 = Instant::now();
        let p = w.params(json!({"lease": {"providerLeaseId": id}, "command": "true"}));
        let r = w.ok("environmentExecute", p).await;
        let run_true = t1.elapsed();
        assert_eq!(r["exitCode"], json!(0), "{r}");
        let t2 = Instant::now();
        let (_, r) = w.sh(&id, "head -c 16777216 /dev/zero | tr '\\0' a", json!({})).await;
        let output = t2.elapsed();
        assert_eq!(r["stdout"].as_str().map(str::len), Some(SIXTEEN_MIB));
        let t3 = Instant::now();
        let p = w.params(json!({"providerLeaseId": id}));
        let released = w.ok("environmentReleaseLease", p).await;
        let release = t3.elapsed();
        assert_eq!(released["state"], json!("destroyed"), "{released}");
        w.shutdown().await;
        rows.push((backend, acquire, run_true, output, release));
    }
    println!("| backend | acquire | execute `true` | 16 MiB output | release (deleted, gone) |");
    println!("|---|---|---|---|---|");
    for (b, a, t, o, r) in rows {
        println!(
            "| {b} | {} ms | {} ms | {} ms ({:.1} MiB/s) | {} ms |",
            a.as_millis(),
            t.as_millis(),
            o.as_millis(),
            16.0 / o.as_secs_f64(),
            r.as_millis()
        );
    }
}
