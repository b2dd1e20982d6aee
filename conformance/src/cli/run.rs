//! `sandbox-conformance run [options] -- <worker command…>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::context::DEFAULT_OVERSIZE_BYTES;
use crate::process::WorkerCommand;
use crate::registry::{all, describe_needs, matches_filter};
use crate::report::{human, junit, RunReport};
use crate::{runner, HarnessError, RunOptions};
use clap::{Args, ValueEnum};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;
use std::io::Write as _;

use super::fail_usage;

/// Output format of the report on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table and the failures.
    Human,
    /// Machine-readable JSON with stable field names.
    Json,
}

/// What `run --help` prints after the options.
const RUN_AFTER_HELP: &str = "\
Exit codes:
  0  every MUST check passed (or is an expected failure) and no baseline entry is stale
  1  a MUST check failed, or a baseline entry is stale (SHOULD failures never fail a run)
  2  the harness could not run: bad options or files, a --filter that matches nothing, a
     baseline naming unknown checks, a worker that cannot be spawned (a JSON report and the
     JUnit file are still written, with the error)
  130, 143  interrupted by SIGINT / SIGTERM: the run stopped acquiring, destroyed what its
     lease ledger (--run-dir) lists, and exited without a report; a second signal exits 1 at
     once and leaves the ledger for `sandbox-conformance sweep`

Profiles:
  paperclip-2026-11  the November 2026 contract (default)
  paperclip-2026-09  the published host 2026.916.1

Verdicts: PASS, FAIL, SKIP (the host never makes that call for this worker), BLOCKED (a
prerequisite check failed; it is named), XFAIL and STALE (with --baseline).

Example:
  sandbox-conformance run --config env.json --require-cli node,claude \\
      --format json --junit conformance.xml -- ./target/release/my-provider";

/// Options of `run`.
#[derive(Debug, Args)]
#[command(after_help = RUN_AFTER_HELP)]
pub struct RunArgs {
    /// The manifest (JSON); default: what `<worker> --manifest` prints, if anything.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The environment config sent to the worker (JSON object); default `{}`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The driver to test when the manifest declares several.
    #[arg(long, value_name = "KEY")]
    driver: Option<String>,
    /// The host profile: paperclip-2026-11 or paperclip-2026-09.
    #[arg(long, default_value = "paperclip-2026-11")]
    profile: HostProfile,
    /// Report format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Also write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Run only checks whose id contains this text, or matches this glob (`*`, `?`);
    /// `ledger.clean` still runs when the selected checks created leases.
    #[arg(long, value_name = "PATTERN")]
    filter: Option<String>,
    /// Print the check catalogue and exit without running anything.
    #[arg(long)]
    list: bool,
    /// Expected failures (JSON list or one id per line): failing ones are XFAIL, passing ones
    /// STALE (which fails the run).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write the NDJSON exchange of every failed check to DIR/CHECK-ID.ndjson.
    #[arg(long, value_name = "DIR")]
    artifacts: Option<PathBuf>,
    /// Length of the oversize frame in bytes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_OVERSIZE_BYTES)]
    oversize_bytes: usize,
    /// Skip the oversize-frame check.
    #[arg(long)]
    skip_oversize: bool,
    /// Per-call timeout in ms (initialize always gets 15 s).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// How long a worker gets to exit after `shutdown` or stdin EOF, in ms.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    shutdown_timeout_ms: u64,
    /// The config key that receives the planted sentinel secret.
    #[arg(long, value_name = "NAME", default_value = "apiKey")]
    secret_field: String,
    /// The company every call is scoped to (`companyId`). Two runs against one backend at once
    /// can use different companies to tell their resources apart.
    #[arg(long, value_name = "ID", default_value = crate::host::DEFAULT_COMPANY_ID)]
    company: String,
    /// Fields added to the acquire params the harness sends (a JSON object; `null` removes a
    /// field), e.g. `{"adapterType": "codex_local"}`.
    #[arg(long, value_name = "FILE")]
    acquire_params: Option<PathBuf>,
    /// The CLIs your runs need on the sandbox's PATH (comma-separated, repeatable), probed with
    /// `command -v <cmd> || exit 1` as MUST (runtime.required-clis).
    #[arg(long, value_name = "CLI,…")]
    require_cli: Vec<String>,
    /// Extra environment for the worker (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// How many checks run at once, each on a worker (and lease) of its own; 1 runs them one
    /// after another. Default: the machine's cores, at most 4.
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Where the run keeps its write-ahead lease ledger (`ledger-*.jsonl`): every lease it
    /// acquires is listed there before the acquire is sent, so that `sandbox-conformance sweep`
    /// can destroy what a killed run left. On SIGINT/SIGTERM the run destroys what its ledger
    /// lists and exits 130/143. Default: $XDG_STATE_HOME/sandbox-conformance (else
    /// ~/.local/state/sandbox-conformance), created 0700; a directory that is a symbolic link,
    /// belongs to another user or is writable by its group or others is refused (exit 2).
    #[arg(long, value_name = "DIR")]
    run_dir: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Stateful and chaos runs.
    #[command(flatten)]
    stateful: super::stateful::StatefulArgs,
    /// The worker command.
    #[arg(last = true, value_name = "WORKER")]
    worker: Vec<String>,
}

/// Writes `text` to stdout; a closed stdout (`run --list | head -1`) is not an error.
pub(crate) fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn list(args: &RunArgs) -> ExitCode {
    let checks: Vec<_> = all().filter(|c| matches_filter(c.id, args.filter.as_deref())).collect();
    if checks.is_empty() {
        let filter = args.filter.as_deref().unwrap_or_default();
        let hint = crate::registry::suggest_filter(filter)
            .map_or_else(String::new, |s| format!("; did you mean `{s}`?"));
        return fail_usage(format!("--filter {filter}: no check matches{hint}"));
    }
    if args.format == Format::Json {
        let rows: Vec<_> = checks
            .iter()
            .map(|c| {
                let r = c.requirement();
                json!({"id": c.id, "title": c.title, "level": r.level, "requirement": r.id,
                       "statement": r.statement, "reference": runner::public_reference(r),
                       "needs": describe_needs(c)})
            })
            .collect();
        emit(&format!("{}\n", serde_json::to_string_pretty(&rows).expect("serializable")));
        return ExitCode::SUCCESS;
    }
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(5);
    let mut text = format!(
        "{:<width$}  {:<6}  {:<15}  {:<40}  NEEDS\n",
        "CHECK", "LEVEL", "REQUIREMENT", "REFERENCE"
    );
    for c in checks {
        let r = c.requirement();
        text.push_str(&format!(
            "{:<width$}  {:<6}  {:<15}  {:<40}  {}\n",
            c.id,
            r.level.to_string(),
            r.id,
            runner::public_reference(r),
            describe_needs(c)
        ));
    }
    emit(&text);
    ExitCode::SUCCESS
}

fn options(args: &RunArgs) -> Result<RunOptions, HarnessError> {
    let mut command = WorkerCommand::from_argv(&args.worker)?;
    for kv in &args.env {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| HarnessError::Usage(format!("--env {kv}: expected KEY=VALUE")))?;
        command.env.push((k.into(), v.into()));
    }
    let mut o = RunOptions::new(command);
    o.manifest_path = args.manifest.clone();
    o.config_path = args.config.clone();
    o.driver = args.driver.clone();
    o.profile = args.profile;
    o.filter = args.filter.clone();
    o.baseline = args.baseline.clone();
    o.artifacts = args.artifacts.clone();
    o.oversize_bytes = args.oversize_bytes;
    o.skip_oversize = args.skip_oversize;
    o.call_timeout = Duration::from_millis(args.timeout_ms.max(1));
    o.shutdown_timeout = Duration::from_millis(args.shutdown_timeout_ms);
    o.secret_field = args.secret_field.clone();
    if args.company.trim().is_empty() {
        return Err(HarnessError::Usage("--company: expected a non-empty id".into()));
    }
    o.company_id = args.company.clone();
    o.progress = !args.quiet;
    if let Some(jobs) = args.jobs {
        o.jobs = jobs.max(1);
    }
    o.acquire_params_path = args.acquire_params.clone();
    o.required_clis = args
        .require_cli
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(o)
}

/// Runs `run`; exit 0 when every MUST passes, 1 when some fail, 2 when the harness cannot run.
/// Even then, `--format json` prints a report (with `error`) and `--junit` writes one (with an
/// `<error>`), so CI always shows why.
pub fn main(args: RunArgs) -> ExitCode {
    if args.list {
        return list(&args);
    }
    let started = std::time::Instant::now();
    let options = match options(&args) {
        Ok(o) => o,
        Err(e) => {
            if args.format == Format::Json {
                let command = WorkerCommand {
                    program: args.worker.first().cloned().unwrap_or_default(),
                    args: args.worker.iter().skip(1).cloned().collect(),
                    env: vec![],
                    cwd: None,
                };
                let mut r = runner::empty_report(&RunOptions::new(command));
                r.error = Some(e.to_string());
                emit(&format!("{}\n", r.to_json()));
            }
            return fail_usage(e);
        }
    };
    super::sweep::with_ledger(args.run_dir.as_deref(), options, |options| {
        run_with_ledger(&args, options, started)
    })
}

fn run_with_ledger(args: &RunArgs, options: RunOptions, started: std::time::Instant) -> ExitCode {
    if args.stateful.on() {
        return super::stateful::main(&args.stateful, options, args.format, args.junit.as_ref());
    }
    let skeleton = runner::empty_report(&options);
    let mut report = match runner::run(options) {
        Ok(report) => report,
        Err(e) => RunReport { error: Some(e.to_string()), exit_code: 2, ..skeleton },
    };
    report.wall_ms = report.wall_ms.max(u64::try_from(started.elapsed().as_millis()).unwrap_or(0));
    if let Some(path) = &args.junit {
        if let Err(e) = std::fs::write(path, junit::render(&report)) {
            return fail_usage(HarnessError::io(path, e));
        }
    }
    match args.format {
        Format::Human if report.error.is_none() => emit(&human::render(&report)),
        Format::Human => {}
        Format::Json => emit(&format!("{}\n", report.to_json())),
    }
    if let Some(error) = &report.error {
        eprintln!("error: {error}");
    }
    eprintln!("{}", human::wall_line(&report));
    ExitCode::from(u8::try_from(report.exit_code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> RunArgs {
        let argv = ["run"].iter().chain(args).chain(&["--", "worker"]);
        Cli::try_parse_from(argv).unwrap().run
    }

    #[test]
    fn company_scopes_the_run_and_must_not_be_empty() {
        assert_eq!(options(&parse(&[])).unwrap().company_id, "company-conformance");
        assert_eq!(options(&parse(&["--company", "acme-7"])).unwrap().company_id, "acme-7");
        let e = options(&parse(&["--company", " "])).unwrap_err();
        assert!(e.to_string().contains("--company"), "{e}");
    }
}
