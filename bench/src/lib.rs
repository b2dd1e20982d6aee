//! # paperclip-sandbox-bench
//!
//! Drives three workers with the same client in one run and prints, for each, sequential
//! round trips per second, pipelined round trips per second, p50/p99 latency, cold start to
//! the `initialize` answer and idle RSS, then the ratios and PASS/MISS against the targets of
//! issue #3 (reported, never asserted):
//!
//! 1. the Rust provider example (release build),
//! 2. `bench-echo-worker`, a minimal serde_json line-echo loop (this crate; the practical
//!    limit of the pipe),
//! 3. the official `@paperclipai/plugin-sdk` worker under Node
//!    (`conformance/tests/fixtures/official-sdk-worker`; skipped with a reason without
//!    `node`).
//!
//! ## The one command
//!
//! ```text
//! cargo bench -p paperclip-sandbox-bench
//! ```
//!
//! It builds what it needs itself (`$CARGO build --release -p <provider> -p
//! paperclip-sandbox-bench`, plus `npm ci` for the Node fixture when `node_modules` is
//! missing). See `bench/README.md` for what each column means.

pub mod client;
pub mod measure;
pub mod report;
pub mod stats;
pub mod workers;

use std::io;
use std::time::{Duration, Instant};

use client::{Worker, WorkerSpec};
use measure::{Budget, Call};
use report::{Measured, Row};

/// The cheap request every worker answers (`health`).
pub const HEALTH: Call<'static> = Call { method: "health", params_json: "{}" };

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Sequential calls sent (unmeasured) before measuring.
    pub warmup: u64,
    /// Sequential round trips.
    pub sequential: Budget,
    /// Pipelined round trips.
    pub pipelined: Budget,
    /// Requests kept in flight in the pipelined run.
    pub window: u64,
    /// Spawns for the cold-start median.
    pub spawns: usize,
    /// Idle pause before reading VmRSS.
    pub idle: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            warmup: 2_000,
            sequential: Budget { max: 20_000, time: Duration::from_secs(4) },
            pipelined: Budget { max: 200_000, time: Duration::from_secs(4) },
            window: 256,
            spawns: 20,
            idle: Duration::from_millis(200),
        }
    }
}

/// Measures one worker: cold start first (fresh processes), then one long-lived process for
/// idle RSS (right after `initialize`), warm-up, sequential and pipelined `health`.
pub fn measure_worker(spec: &WorkerSpec, cfg: &Config) -> io::Result<Measured> {
    let cold_start = measure::cold_start(spec, cfg.spawns)?;
    let mut w = Worker::spawn(spec)?;
    w.initialize()?;
    let idle_rss = measure::idle_rss(&w, cfg.idle)?;
    for _ in 0..cfg.warmup {
        w.call(HEALTH.method, HEALTH.params_json)?;
    }
    let sequential = measure::sequential(&mut w, HEALTH, cfg.sequential)?;
    let pipelined = measure::pipelined(&mut w, HEALTH, cfg.pipelined, cfg.window)?;
    w.close(Duration::from_secs(5))?;
    Ok(Measured { sequential, pipelined, cold_start, idle_rss, execute: None })
}

/// The whole benchmark: build, measure the three workers, print the table and the ratios.
pub fn run(cfg: &Config) -> io::Result<()> {
    let started = Instant::now();
    eprintln!(
        "building {} and {} (release) ...",
        workers::PROVIDER_PACKAGE,
        workers::BENCH_PACKAGE
    );
    let exes = workers::build_release(&[workers::PROVIDER_PACKAGE, workers::BENCH_PACKAGE])?;
    let exe = |name: &str| {
        exes.get(name).cloned().ok_or_else(|| io::Error::other(format!("cargo built no `{name}`")))
    };
    let lease_root = std::env::temp_dir().join(format!("paperclip-bench-{}", std::process::id()));
    std::fs::create_dir_all(&lease_root)?;

    let provider = WorkerSpec::new(workers::PROVIDER_BIN, exe(workers::PROVIDER_BIN)?);
    let echo = WorkerSpec::new("echo loop (serde_json)", exe(workers::ECHO_BIN)?);
    let official = workers::official_worker(&lease_root);

    let mut rows = Vec::new();
    for spec in [Ok(provider), Ok(echo), official] {
        let row = match spec {
            Ok(spec) => {
                eprintln!("measuring {} ...", spec.name);
                let result = measure_worker(&spec, cfg).map_err(|e| format!("failed: {e}"));
                Row { name: spec.name, result }
            }
            Err(why) => Row { name: "official SDK (node)".into(), result: Err(why) },
        };
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&lease_root);

    println!();
    println!(
        "health round trips; sequential {} max / {:?}, pipelined {} max / {:?} window {}; \
         cold start = median of {} spawns; RSS after {:?} idle",
        cfg.sequential.max,
        cfg.sequential.time,
        cfg.pipelined.max,
        cfg.pipelined.time,
        cfg.window,
        cfg.spawns,
        cfg.idle
    );
    println!();
    print!("{}", report::table(&rows));
    println!();
    print!("{}", report::execute_lines(&rows));
    print!("{}", report::ratios(&rows[0], &rows[1], &rows[2]));
    println!();
    println!("total bench time {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
