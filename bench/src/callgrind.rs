//! Instructions per MiB of execute output, counted by callgrind (valgrind), so a regression on
//! the execute path shows on a noisy machine where wall-clock rates drift.
//!
//! The worker runs under `valgrind --tool=callgrind` twice — once executing a command with no
//! output, once with [`crate::Config`]'s `callgrind_bytes` of output — and the difference of
//! the two totals, over the MiB streamed, is the cost of moving output (read, `execute.log`
//! frames, the result), free of start-up and per-call costs. Only the worker process itself is
//! counted: not the command (valgrind does not follow `exec`ed children by default), and not
//! a helper it forks without `exec` (the SDK runner's guard, whose work follows wall time, not
//! output; every process writes its own file, `%p` in the file name, and only the worker's
//! pid is read).

use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::client::{Worker, WorkerSpec};
use crate::datapath::output_script;
use crate::lease::{self, Driver};

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

/// Total instructions of one worker run under callgrind: `initialize`, a lease, one
/// `environmentExecute` writing `bytes` bytes, release, stdin EOF.
fn one_run(spec: &WorkerSpec, driver: &Driver, dir: &Path, bytes: u64) -> io::Result<u64> {
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
    let l = lease::acquire(&mut w, driver, "callgrind")?;
    let r = lease::execute(
        &mut w,
        &lease::shell_params(driver, &l, &output_script(bytes), None),
        false,
        Some(b'a'),
    )?;
    if r.stdout_len as u64 != bytes || !r.filler_ok {
        return Err(io::Error::other("execute under callgrind lost output"));
    }
    lease::release(&mut w, driver, &l)?;
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

/// Instructions per MiB of execute output (see the module docs).
pub fn instructions_per_mib(
    spec: &WorkerSpec,
    driver: &Driver,
    scratch: &Path,
    bytes: u64,
) -> io::Result<f64> {
    let dir = scratch.join("callgrind");
    let base = one_run(spec, driver, &dir, 0)?;
    let loaded = one_run(spec, driver, &dir, bytes)?;
    Ok(loaded.saturating_sub(base) as f64 / (bytes as f64 / (1024.0 * 1024.0)))
}
