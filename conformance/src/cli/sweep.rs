//! `sandbox-conformance sweep`: destroys what the lease ledgers of killed runs list; and the
//! ledger of `run` and `replay` ([`with_ledger`]) with its interrupt handling (SIGINT/SIGTERM:
//! destroy what the ledger lists, then exit).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::{fail_usage, EXIT_FAILED, EXIT_OK};
use crate::ledger_file::{default_run_dir, LedgerFile};
use crate::sweep::{ledger_files, sweep_file, SweepOutcome};
use crate::{HarnessError, RunOptions, WorkerCommand};

/// `sweep` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 every listed lease was destroyed (or nothing was left), \
1 some lease could not be destroyed or a ledger is in use by a running harness (its file is \
kept), 2 usage or I/O error.")]
pub struct SweepArgs {
    /// Ledger files, or run directories whose `ledger-*.jsonl` files to sweep (default: the
    /// default run directory of `run --run-dir`).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The worker command to destroy with, instead of the one the ledger records (one ledger
    /// file only).
    #[arg(last = true, value_name = "WORKER")]
    worker: Vec<String>,
}

/// Prints what a sweep of `what` did; true when everything it lists was ended.
fn print(what: &str, out: &SweepOutcome) -> bool {
    if !out.destroyed.is_empty() {
        eprintln!(
            "{what}: destroyed {} lease(s): {}",
            out.destroyed.len(),
            out.destroyed.join(", ")
        );
    }
    for (id, why) in &out.failed {
        eprintln!("{what}: could not destroy {id}: {why}");
    }
    if out.unanswered > 0 {
        eprintln!(
            "{what}: {} acquire(s) were never answered; what they made, if anything, the ledger \
             cannot name (the provider's own orphan cleanup or its console can)",
            out.unanswered
        );
    }
    if let Some(why) = &out.skipped {
        eprintln!("{what}: nothing destroyed: {why}");
    }
    if out.destroyed.is_empty() && out.failed.is_empty() && out.skipped.is_none() {
        eprintln!("{what}: nothing left to destroy");
    }
    out.failed.is_empty() && out.skipped.is_none()
}

impl SweepArgs {
    /// Runs `sweep`.
    pub fn run(self) -> ExitCode {
        let command = match self.worker.is_empty() {
            true => None,
            false => match WorkerCommand::from_argv(&self.worker) {
                Ok(c) => Some(c),
                Err(e) => return fail_usage(e),
            },
        };
        let paths = if self.paths.is_empty() { vec![default_run_dir()] } else { self.paths };
        let mut files = vec![];
        for path in &paths {
            match ledger_files(path) {
                Ok(f) => files.extend(f),
                Err(e) => return fail_usage(e),
            }
        }
        if command.is_some() && files.len() > 1 {
            return fail_usage(format!(
                "`-- WORKER` destroys with one worker command, and {} ledger files were found \
                 ({}): name the one ledger file to sweep with it",
                files.len(),
                join(&files)
            ));
        }
        let mut all_ended = true;
        for file in &files {
            let what = format!("sweep: {}", file.display());
            match sweep_file(file, command.as_ref()) {
                Ok(out) => all_ended &= print(&what, &out),
                Err(e) => return fail_usage(e),
            }
        }
        if files.is_empty() {
            eprintln!("sweep: no ledger file in {}", join(&paths));
        }
        ExitCode::from(if all_ended { EXIT_OK } else { EXIT_FAILED })
    }
}

fn join(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// How long an interrupted run waits for the acquires in flight before it destroys what its
/// ledger lists (an acquire answered meanwhile is destroyed too). The book's CI chapter states
/// it (a test holds the two equal).
pub const INTERRUPT_ACQUIRE_WAIT: Duration = Duration::from_secs(60);

/// Exit code of a run ended by SIGINT (128 + the signal number, as a shell reports it).
pub const EXIT_SIGINT: u8 = 130;
/// Exit code of a run ended by SIGTERM.
pub const EXIT_SIGTERM: u8 = 143;

/// On the first SIGINT or SIGTERM: stops acquiring, destroys what `ledger` lists through a
/// fresh worker, and exits 130 (SIGINT) or 143 (SIGTERM). A second signal while that cleanup
/// runs exits at once with status 1, leaving the ledger file for `sweep`.
pub(crate) fn on_interrupt(ledger: LedgerFile) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let cleaning = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&cleaning))?;
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new().name("interrupt".into()).spawn(move || {
        let Some(sig) = signals.forever().next() else { return };
        cleaning.store(true, std::sync::atomic::Ordering::SeqCst);
        let (name, code) =
            if sig == SIGINT { ("SIGINT", EXIT_SIGINT) } else { ("SIGTERM", EXIT_SIGTERM) };
        let announce = || {
            eprintln!(
                "interrupted ({name}): no new acquire; destroying what the ledger {} lists",
                ledger.path().display()
            )
        };
        // `None`: the run finished first; its main thread reports and exits.
        let Some(out) = ledger.end_interrupted_run(INTERRUPT_ACQUIRE_WAIT, announce) else {
            return;
        };
        if !print("interrupted", &out) || out.unanswered > 0 {
            eprintln!(
                "interrupted: the ledger is kept: `sandbox-conformance sweep {}` retries",
                ledger.path().display()
            );
        }
        std::process::exit(i32::from(code));
    })?;
    Ok(())
}

/// Runs `body` (a `run` or a `replay`) with a write-ahead lease ledger in `run_dir` (default:
/// [`default_run_dir`]) given to it in `options`, and SIGINT/SIGTERM handled by
/// [`on_interrupt`]. A run directory that cannot be used (refused by the ledger's trust rule,
/// or not writable) is a usage error (exit 2) and `body` never runs. When `body` returns, the
/// ledger is removed if nothing in it is left to destroy; otherwise its path is printed for
/// `sweep`.
pub(crate) fn with_ledger(
    run_dir: Option<&Path>,
    mut options: RunOptions,
    body: impl FnOnce(RunOptions) -> ExitCode,
) -> ExitCode {
    let run_dir = run_dir.map_or_else(default_run_dir, Path::to_owned);
    let ledger = match LedgerFile::create(&run_dir, &options.command) {
        Ok(l) => l,
        Err(e) => return fail_usage(HarnessError::io(&run_dir, e)),
    };
    if let Err(e) = on_interrupt(ledger.clone()) {
        return fail_usage(format!("cannot handle SIGINT/SIGTERM: {e}"));
    }
    options.ledger_file = Some(ledger.clone());
    let code = body(options);
    let finished = ledger.finish();
    if ledger.is_interrupted() {
        // The interrupt thread destroys what the ledger lists and ends the process with the
        // signal's exit code; this thread must not exit under it.
        loop {
            std::thread::park();
        }
    }
    match finished {
        Ok(None) => {}
        Ok(Some(path)) => eprintln!(
            "the lease ledger {} still lists what the run could not destroy: \
             `sandbox-conformance sweep {}` retries",
            path.display(),
            path.display()
        ),
        Err(e) => eprintln!("warning: the lease ledger {}: {e}", ledger.path().display()),
    }
    code
}
