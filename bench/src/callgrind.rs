//! Instructions counted by callgrind (valgrind), so a regression shows on a noisy machine where
//! wall-clock rates drift: per MiB of execute output, and per pipelined `health` round trip.
//!
//! Each figure is the difference of two runs under `valgrind --tool=callgrind`, so what both
//! runs do (start-up, `initialize`, a lease) cancels out and what is left is the work
//! measured:
//!
//! * **execute output**: a command with no output, then one with the data config's
//!   `callgrind_bytes` of output; the difference over the MiB streamed is the cost of moving
//!   output (read, `execute.log` frames, the result);
//! * **control path**: `initialize` alone, then `initialize` and [`crate::Config`]'s
//!   `callgrind_calls` pipelined `health` calls; the difference over the calls is the cost of
//!   one round trip (read, parse, dispatch, answer, write).
//!
//! Only the worker process itself is counted: not the command (valgrind does not follow
//! `exec`ed children by default), and not a helper it forks without `exec` (the SDK runner's
//! guard, whose work follows wall time, not output; every process writes its own file, `%p`
//! in the file name, and only the worker's pid is read).

use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::client::{Worker, WorkerSpec};
use crate::datapath::output_script;
use crate::lease::{self, Driver};
use crate::measure::{self, Budget};

/// Whether `valgrind` can run here; the reason otherwise.
pub fn available() -> Result<(), String> {
    match Command::new("valgrind").arg("--version").stdout(Stdio::null()).status() {
        Ok(s) if s.success() => Ok(()),
        _ => Err("`valgrind` not found on PATH".into()),
    }
}

/// The `summary:` (or `totals:`) instruction count of a callgrind output file.
pub fn parse_total(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Total instructions of one worker run under callgrind: `initialize`, `work`, stdin EOF.
fn under_callgrind(
    spec: &WorkerSpec,
    dir: &Path,
    work: impl FnOnce(&mut Worker) -> io::Result<()>,
) -> io::Result<u64> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut under = spec.clone();
    under.program = "valgrind".into();
    under.args = vec![
        "--tool=callgrind".into(),
        "--quiet".into(),
        format!("--callgrind-out-file={}", dir.join("callgrind.%p").display()).into(),
        spec.program.clone().into_os_string(),
    ];
    under.args.extend(spec.args.iter().cloned());
    let mut w = Worker::spawn(&under)?;
    w.initialize()?;
    work(&mut w)?;
    let pid = w.pid();
    let status = w.close(Duration::from_secs(120))?;
    if !status.success() {
        return Err(io::Error::other(format!("worker under callgrind exited {status}")));
    }
    let text = std::fs::read_to_string(dir.join(format!("callgrind.{pid}")))?;
    let total =
        parse_total(&text).ok_or_else(|| io::Error::other("no total in the callgrind output"))?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(total)
}

/// A lease, one `environmentExecute` writing `bytes` bytes (every byte checked), release.
fn execute_output(w: &mut Worker, driver: &Driver, bytes: u64) -> io::Result<()> {
    let l = lease::acquire(w, driver, "callgrind")?;
    let r = lease::execute(
        w,
        &lease::shell_params(driver, &l, &output_script(bytes), None),
        false,
        Some(b'a'),
    )?;
    if r.stdout_len as u64 != bytes || !r.filler_ok {
        return Err(io::Error::other("execute under callgrind lost output"));
    }
    lease::release(w, driver, &l)
}

/// Instructions per MiB of execute output (see the module docs).
pub fn instructions_per_mib(
    spec: &WorkerSpec,
    driver: &Driver,
    scratch: &Path,
    bytes: u64,
) -> io::Result<f64> {
    let dir = scratch.join("callgrind");
    let base = under_callgrind(spec, &dir, |w| execute_output(w, driver, 0))?;
    let loaded = under_callgrind(spec, &dir, |w| execute_output(w, driver, bytes))?;
    Ok(loaded.saturating_sub(base) as f64 / (bytes as f64 / (1024.0 * 1024.0)))
}

/// Instructions per pipelined `health` round trip, `calls` of them kept `window` deep (see
/// the module docs); every answer is checked.
pub fn instructions_per_request(
    spec: &WorkerSpec,
    scratch: &Path,
    calls: u64,
    window: u64,
) -> io::Result<f64> {
    let dir = scratch.join("callgrind-control");
    let base = under_callgrind(spec, &dir, |_| Ok(()))?;
    let budget = Budget { max: calls, time: Duration::from_secs(600) };
    let loaded = under_callgrind(spec, &dir, |w| {
        let done = measure::pipelined(w, crate::HEALTH, budget, window)?;
        match done.count == calls {
            true => Ok(()),
            false => Err(io::Error::other(format!("{} of {calls} answered", done.count))),
        }
    })?;
    Ok(loaded.saturating_sub(base) as f64 / calls.max(1) as f64)
}
