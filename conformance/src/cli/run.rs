//! `sandbox-conformance run [options] -- <worker command…>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use paperclip_sandbox_conformance::context::DEFAULT_OVERSIZE_BYTES;
use paperclip_sandbox_conformance::process::WorkerCommand;
use paperclip_sandbox_conformance::registry::{describe_needs, matches_filter, CHECKS};
use paperclip_sandbox_conformance::report::{human, junit};
use paperclip_sandbox_conformance::{runner, HarnessError, RunOptions};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;

/// Output format of the report on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table and the failures.
    Human,
    /// Machine-readable JSON with stable field names.
    Json,
}

/// Options of `run`.
#[derive(Debug, Args)]
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
    /// Run only checks whose id contains this text, or matches this glob (`*`, `?`).
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
    /// Extra environment for the worker (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// The worker command.
    #[arg(last = true, value_name = "WORKER")]
    worker: Vec<String>,
}

fn list(args: &RunArgs) -> ExitCode {
    let checks: Vec<_> =
        CHECKS.iter().filter(|c| matches_filter(c.id, args.filter.as_deref())).collect();
    if args.format == Format::Json {
        let rows: Vec<_> = checks
            .iter()
            .map(|c| {
                let r = c.requirement();
                json!({"id": c.id, "title": c.title, "level": r.level, "requirement": r.id,
                       "statement": r.statement, "reference": r.reference, "needs": describe_needs(c)})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).expect("serializable"));
        return ExitCode::SUCCESS;
    }
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(5);
    println!(
        "{:<width$}  {:<6}  {:<15}  {:<40}  NEEDS",
        "CHECK", "LEVEL", "REQUIREMENT", "REFERENCE"
    );
    for c in checks {
        let r = c.requirement();
        println!(
            "{:<width$}  {:<6}  {:<15}  {:<40}  {}",
            c.id,
            r.level.to_string(),
            r.id,
            r.reference,
            describe_needs(c)
        );
    }
    ExitCode::SUCCESS
}

fn options(args: RunArgs) -> Result<(RunOptions, Format, Option<PathBuf>), HarnessError> {
    let mut command = WorkerCommand::from_argv(&args.worker)?;
    for kv in &args.env {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| HarnessError::Usage(format!("--env {kv}: expected KEY=VALUE")))?;
        command.env.push((k.into(), v.into()));
    }
    let mut o = RunOptions::new(command);
    o.manifest_path = args.manifest;
    o.config_path = args.config;
    o.driver = args.driver;
    o.profile = args.profile;
    o.filter = args.filter;
    o.baseline = args.baseline;
    o.artifacts = args.artifacts;
    o.oversize_bytes = args.oversize_bytes;
    o.skip_oversize = args.skip_oversize;
    o.call_timeout = Duration::from_millis(args.timeout_ms.max(1));
    o.shutdown_timeout = Duration::from_millis(args.shutdown_timeout_ms);
    o.secret_field = args.secret_field;
    o.progress = !args.quiet;
    Ok((o, args.format, args.junit))
}

/// Runs `run`; exit 0 when every MUST passes, 1 when some fail, 2 when the harness cannot run.
pub fn main(args: RunArgs) -> ExitCode {
    if args.list {
        return list(&args);
    }
    let outcome = options(args).and_then(|(o, format, junit_path)| {
        let report = runner::run(o)?;
        if let Some(path) = junit_path {
            std::fs::write(&path, junit::render(&report))
                .map_err(|e| HarnessError::io(&path, e))?;
        }
        Ok((report, format))
    });
    match outcome {
        Ok((report, format)) => {
            match format {
                Format::Human => print!("{}", human::render(&report)),
                Format::Json => {
                    println!("{}", report.to_json());
                    eprintln!("{}", human::wall_line(&report));
                }
            }
            ExitCode::from(u8::try_from(report.exit_code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("sandbox-conformance: {e}");
            ExitCode::from(2)
        }
    }
}
