//! The harness's own speed: the wall time of a full `sandbox-conformance run` against the
//! release local-provider, at the default `--jobs` and at `--jobs 1` (one check after another),
//! the median of a few runs each. Verdicts must not depend on `--jobs` (the conformance crate's
//! `tests/jobs_verdicts.rs`); this only says what concurrency buys.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The conformance package and its binary.
pub const HARNESS_PACKAGE: &str = "paperclip-sandbox-conformance";
/// The harness binary's name.
pub const HARNESS_BIN: &str = "sandbox-conformance";

/// How many full runs per setting (the median is reported).
pub const RUNS: usize = 3;

/// One full run's wall time, or why it failed (a run that is not all-MUST-green is a failure:
/// a fast wrong verdict is no measurement).
pub fn full_run(
    harness: &Path,
    provider: &Path,
    lease_root: &Path,
    jobs: Option<usize>,
) -> Result<Duration, String> {
    let mut cmd = Command::new(harness);
    cmd.args(["run", "-q", "--format", "json"]);
    if let Some(jobs) = jobs {
        cmd.args(["--jobs", &jobs.to_string()]);
    }
    cmd.arg("--env").arg(format!("LOCAL_PROVIDER_ROOT={}", lease_root.display()));
    cmd.arg("--").arg(provider);
    let started = Instant::now();
    let out = cmd.stderr(Stdio::null()).output().map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !out.status.success() {
        return Err(format!("the run exited with {}", out.status));
    }
    Ok(took)
}

/// The median of [`RUNS`] full runs.
pub fn median_run(
    harness: &Path,
    provider: &Path,
    lease_root: &Path,
    jobs: Option<usize>,
) -> Result<Duration, String> {
    let mut times = (0..RUNS)
        .map(|_| full_run(harness, provider, lease_root, jobs))
        .collect::<Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[RUNS / 2])
}

/// The bench's harness line: `harness full run vs local-provider: 2.1 s (default --jobs), 5.3 s
/// (--jobs 1)`.
pub fn line(harness: &Path, provider: &Path, lease_root: &Path) -> String {
    let show = |r: Result<Duration, String>| match r {
        Ok(d) => format!("{:.2} s", d.as_secs_f64()),
        Err(e) => format!("failed ({e})"),
    };
    let default = show(median_run(harness, provider, lease_root, None));
    let serial = show(median_run(harness, provider, lease_root, Some(1)));
    format!(
        "harness full run vs {}: {default} (default --jobs), {serial} (--jobs 1); median of {RUNS}",
        provider.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    )
}
