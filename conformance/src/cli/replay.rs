//! `sandbox-conformance replay FILE [--expect-fixed] -- <worker command…>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::process::WorkerCommand;
use crate::report::Status;
use crate::transcript::parse_artifact;
use crate::{replay, runner, HarnessError, RunOptions};
use clap::Args;

use super::ProfileArg;

/// Options of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A transcript written by `run --artifacts DIR` (DIR/CHECK-ID.ndjson), or a stateful case
    /// file (`*.case.json`), which is re-executed and re-judged.
    file: PathBuf,
    /// Per-request timeout in ms.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// The worker was fixed: after the replay, run the transcript's check against the worker and
    /// exit 0 only when it passes now (answers that differ from the recording are expected).
    #[arg(long)]
    expect_fixed: bool,
    /// With --expect-fixed: the check to run (default: the file name without `.ndjson`).
    #[arg(long, value_name = "ID", requires = "expect_fixed")]
    check: Option<String>,
    /// The host profile of the failing run (used with --expect-fixed, and by stateful cases).
    #[arg(long, value_enum, default_value_t = ProfileArg::Paperclip2026_11)]
    profile: ProfileArg,
    /// The environment config of the failing run (used with --expect-fixed, and by stateful
    /// cases).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The manifest of the failing run (default: `<worker> --manifest`; used with
    /// --expect-fixed, and by stateful cases).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The company every call is scoped to (`companyId`). Default: the one a stateful case
    /// file records, else the default company of `run`. A transcript's lines are re-sent as
    /// recorded, with their own company; this applies to its `--expect-fixed` run.
    #[arg(long, value_name = "ID")]
    company: Option<String>,
    /// Where the replay keeps its write-ahead lease ledger, as `run --run-dir` does: every lease
    /// it acquires is listed there before the acquire is sent, so that `sandbox-conformance
    /// sweep` can destroy what a killed replay left; on SIGINT/SIGTERM the replay destroys what
    /// its ledger lists and exits 130/143. Default: $XDG_STATE_HOME/sandbox-conformance (else
    /// ~/.local/state/sandbox-conformance), created 0700; a directory that is a symbolic link,
    /// belongs to another user or is writable by its group or others is refused (exit 2).
    #[arg(long, value_name = "DIR")]
    run_dir: Option<PathBuf>,
    /// The worker command.
    #[arg(last = true, value_name = "WORKER", required = true)]
    worker: Vec<String>,
}

/// What a difference means, printed after the replay.
const DIFF_MEANING: &str = "\
A difference means the worker no longer answers as it did when the check failed. After a fix \
that is expected: confirm it with `--expect-fixed` (which runs the check itself), or with \
`sandbox-conformance run --filter <check id>`. Without a change to the worker, a difference \
means its answers depend on something else (timing, state left by an earlier run, the machine).";

/// What no difference means, printed after the replay.
const SAME_MEANING: &str = "\
The failure's exchange reproduces: the worker answers as it did when the check failed (same \
result/error kinds, error codes and result shapes; values are not compared). If the check \
judged these answers, the worker is not fixed yet; if it judged an effect (a process left \
behind, files not written), run the check with `--expect-fixed`.";

/// Runs `replay`. Without `--expect-fixed`: exit 0 when every answer matches the recording (the
/// failure reproduces), 1 when one differs. With `--expect-fixed`: exit 0 when the transcript's
/// check passes against the worker now, 1 when it does not. 2 when the replay cannot run. A
/// stateful case (`*.case.json`): see [`super::stateful::replay_case`]. Leases are written to
/// the ledger in `--run-dir` as `run` writes them, and SIGINT/SIGTERM destroy what it lists.
pub fn main(args: ReplayArgs) -> ExitCode {
    let command = match WorkerCommand::from_argv(&args.worker) {
        Ok(c) => c,
        Err(e) => return super::fail_usage(e),
    };
    if args.company.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return super::fail_usage("--company: expected a non-empty id");
    }
    let mut options = RunOptions::new(command);
    options.profile = args.profile.into();
    options.config_path = args.config.clone();
    options.manifest_path = args.manifest.clone();
    options.call_timeout = Duration::from_millis(args.timeout_ms.max(1));
    options.progress = false;
    if let Some(company) = &args.company {
        options.company_id = company.clone();
    }
    super::sweep::with_ledger(args.run_dir.as_deref(), options, |options| {
        replay_with_ledger(&args, options)
    })
}

fn replay_with_ledger(args: &ReplayArgs, options: RunOptions) -> ExitCode {
    let company = args.company.as_deref();
    if let Some(code) =
        super::stateful::replay_case(&args.file, options.clone(), args.expect_fixed, company)
    {
        return code;
    }
    let diffs = match replay_file(args, &options) {
        Ok(n) => n,
        Err(e) => return super::fail_usage(e),
    };
    if diffs == 0 {
        println!(
            "replay: every answer matches the recording (result/error, error codes, result shapes)"
        );
    } else {
        println!("replay: {diffs} answer(s) differ from the recording");
    }
    if !args.expect_fixed {
        println!("{}", if diffs == 0 { SAME_MEANING } else { DIFF_MEANING });
        return ExitCode::from(if diffs == 0 { 0 } else { 1 });
    }
    match check_now(args, options) {
        Ok(code) => ExitCode::from(code),
        Err(e) => super::fail_usage(e),
    }
}

fn replay_file(args: &ReplayArgs, options: &RunOptions) -> Result<usize, HarnessError> {
    let text = std::fs::read_to_string(&args.file).map_err(|e| HarnessError::io(&args.file, e))?;
    let entries = parse_artifact(&text)
        .map_err(|e| HarnessError::BadFile { path: args.file.clone(), message: e.to_string() })?;
    let ledger = options.ledger_file.clone();
    replay::replay(&entries, &options.command, options.call_timeout, ledger, &mut std::io::stdout())
}

/// `--expect-fixed`: runs the transcript's check and returns the exit code (0 when it passes).
fn check_now(args: &ReplayArgs, mut options: RunOptions) -> Result<u8, HarnessError> {
    let id = match &args.check {
        Some(id) => id.clone(),
        None => replay::check_id_of(&args.file).ok_or_else(|| {
            HarnessError::Usage(format!(
                "{}: the file name names no check; pass --check <id>",
                args.file.display()
            ))
        })?,
    };
    options.filter = Some(id.clone());
    // The check runs with `run`'s default timer, whatever `--timeout-ms` the replay had.
    options.call_timeout = crate::host::DEFAULT_CALL_TIMEOUT;
    let report = runner::run(options)?;
    let Some(outcome) = report.checks.iter().find(|c| c.id == id) else {
        return Err(HarnessError::Usage(format!(
            "no check `{id}` in this harness (list them with `sandbox-conformance run --list`); \
             pass --check <id>"
        )));
    };
    match outcome.status {
        Status::Pass => {
            println!("expect-fixed: {id} passes now: the fix holds");
            Ok(0)
        }
        Status::Skip => {
            let why = outcome.skip_reason.as_deref().unwrap_or("no reason given");
            println!(
                "expect-fixed: {id} was skipped ({why}), so the fix is not confirmed; \
                 pass the failing run's --profile, --config and --manifest"
            );
            Ok(1)
        }
        _ => {
            println!("expect-fixed: {id} still fails");
            if let Some(expected) = &outcome.expected {
                println!("  expected: {expected}");
            }
            if let Some(actual) = &outcome.actual {
                println!("  actual:   {actual}");
            }
            Ok(1)
        }
    }
}
