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
//! 3. a worker on the official `@paperclipai/plugin-sdk` under Node
//!    (`bench/fixtures/official-sdk-worker`; skipped with a reason without `node`).
//!
//! and callgrind's instructions per pipelined `health` round trip of the Rust provider
//! ([`callgrind::instructions_per_request`]), which does not move with machine load.
//!
//! ## The one command
//!
//! ```text
//! cargo bench -p paperclip-sandbox-bench
//! ```
//!
//! Then the data paths ([`data`]): execute output and `execute.log` notifications,
//! base64-over-exec download and upload, native sync beside `tar c | tar x`, 64 leases
//! executing at once, each beside its raw limit; and callgrind's instructions per MiB of
//! execute output ([`callgrind`]), with the targets of issue #15.
//!
//! It builds what it needs itself (`$CARGO build --release -p <provider> -p
//! paperclip-sandbox-bench`, plus `npm ci` for the Node fixture when `node_modules` is
//! missing). See `bench/README.md` for what each column means.

pub mod callgrind;
pub mod client;
pub mod concurrent;
pub mod data;
pub mod data_report;
pub mod datapath;
pub mod harness;
pub mod lease;
pub mod measure;
pub mod report;
pub mod stats;
pub mod syncpath;
pub mod workers;

use std::io;
use std::time::{Duration, Instant};

use client::{Worker, WorkerSpec};
use measure::{Budget, Call};
use report::{Measured, Row};

/// The cheap request every worker answers (`health`).
pub const HEALTH: Call<'static> = Call { method: "health", params_json: "{}" };

/// How much to measure. Sequential and pipelined runs are split into [`Config::rounds`]
/// rounds that visit every worker in turn, so background load drifting during the run hits
/// all workers alike.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Sequential calls sent (unmeasured) before measuring.
    pub warmup: u64,
    /// Rounds over all workers.
    pub rounds: usize,
    /// Sequential round trips per round; the report merges all rounds.
    pub sequential: Budget,
    /// Pipelined round trips per round; the median-rate round is reported.
    pub pipelined: Budget,
    /// Requests kept in flight in the pipelined run.
    pub window: u64,
    /// Spawns for the cold-start median.
    pub spawns: usize,
    /// Idle pause before reading VmRSS.
    pub idle: Duration,
    /// Sequential `environmentExecute` of [`EXECUTE_COMMAND`] on a lease (workers that run
    /// commands).
    pub execute: Budget,
    /// Pipelined `health` calls counted under callgrind for the Rust provider
    /// ([`callgrind::instructions_per_request`]; 0: skip).
    pub callgrind_calls: u64,
    /// The data-path measurements ([`data`]).
    pub data: data::DataConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            warmup: 2_000,
            rounds: 5,
            sequential: Budget { max: 4_000, time: Duration::from_millis(800) },
            pipelined: Budget { max: 200_000, time: Duration::from_secs(2) },
            window: 256,
            spawns: 20,
            idle: Duration::from_millis(200),
            execute: Budget { max: 300, time: Duration::from_secs(3) },
            callgrind_calls: 20_000,
            data: data::DataConfig::default(),
        }
    }
}

/// Prefixes an error with the phase it happened in.
fn phase(name: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{name}: {e}"))
}

/// A worker to measure, and whether it can run commands.
#[derive(Debug, Clone)]
pub struct Subject {
    /// How to start it.
    pub spec: WorkerSpec,
    /// `Some(driverKey)`: also measure `environmentExecute` of `true` on a lease.
    pub execute_driver: Option<String>,
}

/// The command of the `environmentExecute` measurement: `cat` with empty stdin, as cheap as
/// `true`. Not `true` itself: the official fixture writes the (empty) stdin to the child after
/// spawning it, which races with `true` exiting; the EPIPE is an uncaught exception there, and
/// the official SDK exits the worker 100 ms after one.
pub const EXECUTE_COMMAND: &str = "cat";

/// Acquires a lease and measures sequential `environmentExecute` of [`EXECUTE_COMMAND`] on
/// it, then releases the lease.
pub fn measure_execute(
    w: &mut Worker,
    driver_key: &str,
    lease_root: &std::path::Path,
    budget: Budget,
) -> io::Result<measure::Sequential> {
    let base = serde_json::json!({
        "driverKey": driver_key, "companyId": "bench", "environmentId": "bench",
        "config": {"root": lease_root},
    });
    let with = |extra: serde_json::Value| {
        let mut v = base.clone();
        if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        v.to_string()
    };
    let lease =
        w.call_value("environmentAcquireLease", &with(serde_json::json!({"runId": "bench"})))?;
    let id = lease["providerLeaseId"].clone();
    let host_lease = serde_json::json!({"providerLeaseId": id, "metadata": lease["metadata"]});
    let exec = with(serde_json::json!({"lease": host_lease, "command": EXECUTE_COMMAND}));
    let check = w.call_value("environmentExecute", &exec)?;
    if check["exitCode"] != 0 {
        return Err(io::Error::other(format!("`{EXECUTE_COMMAND}` did not exit 0: {check}")));
    }
    let result =
        measure::sequential(w, Call { method: "environmentExecute", params_json: &exec }, budget);
    w.call_value("environmentReleaseLease", &with(serde_json::json!({"providerLeaseId": id})))?;
    result
}

/// A worker being measured: its long-lived process and the results so far.
struct Live {
    w: Worker,
    cold_start: Duration,
    idle_rss: u64,
    sequential: Vec<measure::Sequential>,
    pipelined: Vec<measure::Pipelined>,
}

/// Cold start (fresh processes), then one long-lived process: `initialize`, idle RSS, warm-up.
fn start(spec: &WorkerSpec, cfg: &Config) -> io::Result<Live> {
    let cold_start = measure::cold_start(spec, cfg.spawns).map_err(phase("cold start"))?;
    let mut w = Worker::spawn(spec)?;
    w.initialize().map_err(phase("initialize"))?;
    let idle_rss = measure::idle_rss(&w, cfg.idle).map_err(phase("idle RSS"))?;
    for _ in 0..cfg.warmup {
        w.call(HEALTH.method, HEALTH.params_json).map_err(phase("warm-up"))?;
    }
    Ok(Live { w, cold_start, idle_rss, sequential: Vec::new(), pipelined: Vec::new() })
}

/// One round on one worker: a sequential run, then a pipelined run.
fn round(live: &mut Live, cfg: &Config) -> io::Result<()> {
    let seq = measure::sequential(&mut live.w, HEALTH, cfg.sequential);
    live.sequential.push(seq.map_err(phase("sequential"))?);
    let pipe = measure::pipelined(&mut live.w, HEALTH, cfg.pipelined, cfg.window);
    live.pipelined.push(pipe.map_err(phase("pipelined"))?);
    Ok(())
}

/// The optional execute measurement, then the summary; closes the worker.
fn finish(
    mut live: Live,
    subject: &Subject,
    cfg: &Config,
    lease_root: &std::path::Path,
) -> io::Result<Measured> {
    let execute = match &subject.execute_driver {
        Some(key) => Some(
            measure_execute(&mut live.w, key, lease_root, cfg.execute).map_err(phase("execute"))?,
        ),
        None => None,
    };
    live.w.close(Duration::from_secs(5))?;
    let mut pipelined = live.pipelined;
    pipelined.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    Ok(Measured {
        sequential: measure::Sequential::merge(live.sequential),
        pipelined: pipelined[pipelined.len() / 2],
        cold_start: live.cold_start,
        idle_rss: live.idle_rss,
        execute,
    })
}

/// Measures every subject: cold start, idle RSS and warm-up for each in turn, then [`Config::rounds`] rounds visiting
/// every worker, then the execute measurement. A failing worker's row carries the error.
pub fn measure_all(
    subjects: &[Subject],
    cfg: &Config,
    lease_root: &std::path::Path,
) -> Vec<Result<Measured, String>> {
    let fail = |e: io::Error| format!("failed: {e}");
    let mut live: Vec<Result<Live, String>> = subjects
        .iter()
        .map(|s| {
            eprintln!(
                "starting {} (cold start x{}, idle RSS, warm-up) ...",
                s.spec.name, cfg.spawns
            );
            start(&s.spec, cfg).map_err(fail)
        })
        .collect();
    for r in 0..cfg.rounds.max(1) {
        eprintln!("round {}/{} ...", r + 1, cfg.rounds.max(1));
        for l in &mut live {
            if let Ok(x) = l {
                if let Err(e) = round(x, cfg) {
                    *l = Err(fail(e));
                }
            }
        }
    }
    live.into_iter()
        .zip(subjects)
        .map(|(l, s)| finish(l?, s, cfg, lease_root).map_err(fail))
        .collect()
}

/// The whole benchmark: build, measure the three workers, print the table and the ratios.
pub fn run(cfg: &Config) -> io::Result<()> {
    let started = Instant::now();
    eprintln!(
        "building {} and {} (release) ...",
        workers::PROVIDER_PACKAGE,
        workers::BENCH_PACKAGE
    );
    let exes = workers::build_release(&[
        workers::PROVIDER_PACKAGE,
        workers::BENCH_PACKAGE,
        harness::HARNESS_PACKAGE,
    ])?;
    let exe = |name: &str| {
        exes.get(name).cloned().ok_or_else(|| io::Error::other(format!("cargo built no `{name}`")))
    };
    let lease_root = std::env::temp_dir().join(format!("paperclip-bench-{}", std::process::id()));
    std::fs::create_dir_all(&lease_root)?;

    let mut provider = WorkerSpec::new(workers::PROVIDER_BIN, exe(workers::PROVIDER_BIN)?);
    provider.env.push(("LOCAL_PROVIDER_ROOT".into(), lease_root.as_os_str().to_owned()));
    let provider = Subject { spec: provider, execute_driver: Some("local".into()) };
    let echo = WorkerSpec::new("echo loop (serde_json)", exe(workers::ECHO_BIN)?);
    let echo = Subject { spec: echo, execute_driver: None };
    let official = workers::official_worker(&lease_root)
        .map(|spec| Subject { spec, execute_driver: Some(workers::OFFICIAL_DRIVER.into()) });
    let data_subjects = data_subjects(&provider.spec, official.as_ref().ok().map(|s| &s.spec));

    let only = std::env::var(ONLY_ENV).unwrap_or_default();
    if only.is_empty() || only == "harness" {
        let line =
            harness::line(&exe(harness::HARNESS_BIN)?, &exe(workers::PROVIDER_BIN)?, &lease_root);
        println!("{line}\n");
    }
    if only == "harness" {
        let _ = std::fs::remove_dir_all(&lease_root);
        println!("total bench time {:.1} s", started.elapsed().as_secs_f64());
        return Ok(());
    }
    if only != "data" && only != "output" {
        control_path(cfg, provider, echo, official, &lease_root);
    }
    let _ = std::fs::remove_dir_all(&lease_root);
    if only != "control" {
        let data_root = data_root();
        let data_cfg = data::DataConfig { output_only: only == "output", ..cfg.data };
        let report = data::run(&data_cfg, &data_subjects(&data_root), &data_root);
        let _ = std::fs::remove_dir_all(&data_root);
        match report {
            Ok(r) => print!("{}", data_report::render(&r, &data_cfg)),
            Err(e) => println!("data paths: failed: {e}"),
        }
        println!();
    }
    println!("total bench time {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Set to `control`, `data` or `harness` to run only that part of the benchmark, or `output` for
/// only the execute output rows of the data part (printable, NUL and `\x01` bytes).
pub const ONLY_ENV: &str = "PAPERCLIP_BENCH_ONLY";

/// The control path: the three workers' table and ratios.
fn control_path(
    cfg: &Config,
    provider: Subject,
    echo: Subject,
    official: Result<Subject, String>,
    lease_root: &std::path::Path,
) {
    let provider_spec = provider.spec.clone();
    let mut rows = Vec::new();
    let mut subjects = Vec::new();
    for subject in [Ok(provider), Ok(echo), official] {
        match subject {
            Ok(s) => subjects.push(s),
            Err(why) => rows.push(Row { name: "official SDK (node)".into(), result: Err(why) }),
        }
    }
    let measured = measure_all(&subjects, cfg, lease_root);
    let mut measured_rows: Vec<Row> = subjects
        .into_iter()
        .zip(measured)
        .map(|(s, result)| Row { name: s.spec.name, result })
        .collect();
    measured_rows.append(&mut rows);
    let rows = measured_rows;

    println!();
    println!(
        "health round trips, {} rounds over all workers: sequential {} max / {:?} per round \
         (merged); pipelined {} max / {:?} per round (median round), window {}; \
         cold start = median of {} spawns; RSS after {:?} idle",
        cfg.rounds,
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
    print!("{}", report::execute_lines(&rows, EXECUTE_COMMAND));
    print!("{}", report::ratios(&rows[0], &rows[1], &rows[2]));
    if cfg.callgrind_calls > 0 {
        let counted = callgrind::available().and_then(|()| {
            eprintln!("control path: {} under callgrind (two runs) ...", provider_spec.name);
            callgrind::instructions_per_request(
                &provider_spec,
                lease_root,
                cfg.callgrind_calls,
                cfg.window,
            )
            .map_err(|e| format!("failed: {e}"))
        });
        print!("{}", report::callgrind_line(&provider_spec.name, cfg.callgrind_calls, &counted));
    }
    println!();
}

/// Where the data paths run: a fresh directory on tmpfs (`/dev/shm`) when there is one, else
/// under the temp dir (the report says which).
fn data_root() -> std::path::PathBuf {
    let name = format!("paperclip-bench-data-{}", std::process::id());
    let shm = std::path::Path::new("/dev/shm");
    if data::is_tmpfs(shm) {
        shm.join(name)
    } else {
        std::env::temp_dir().join(name)
    }
}

/// The workers of the data paths (the Rust provider, then the official SDK worker when it can
/// run), each with its leases under `root`.
fn data_subjects(
    provider: &WorkerSpec,
    official: Option<&WorkerSpec>,
) -> impl Fn(&std::path::Path) -> Vec<(String, data::DataSubject)> {
    let (provider, official) = (provider.clone(), official.cloned());
    move |root| {
        let mut out = Vec::new();
        let mut p = provider.clone();
        let local_root = root.join("local");
        p.env.retain(|(k, _)| k != "LOCAL_PROVIDER_ROOT");
        p.env.push(("LOCAL_PROVIDER_ROOT".into(), local_root.clone().into_os_string()));
        let driver = lease::Driver {
            key: "local".into(),
            config: serde_json::json!({ "root": local_root }),
        };
        out.push((p.name.clone(), data::DataSubject { spec: p, driver }));
        if let Some(o) = &official {
            let mut o = o.clone();
            o.env.retain(|(k, _)| k != "PAPERCLIP_FIXTURE_ROOT");
            o.env.push(("PAPERCLIP_FIXTURE_ROOT".into(), root.join("node").into_os_string()));
            let driver = lease::Driver {
                key: workers::OFFICIAL_DRIVER.into(),
                config: serde_json::json!({}),
            };
            out.push((o.name.clone(), data::DataSubject { spec: o, driver }));
        }
        out
    }
}
