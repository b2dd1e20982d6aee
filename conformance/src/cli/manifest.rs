//! `sandbox-conformance manifest check`: validates a plugin manifest for a host profile.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::registry::closest;
use clap::{Subcommand, ValueEnum};
use paperclip_sandbox_protocol::capabilities::CAPABILITIES;
use paperclip_sandbox_protocol::manifest::{validate, Issue, ValidationReport};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Value};

use super::{on_json_input, ProfileArg, EXIT_FAILED, EXIT_OK};

/// `manifest` subcommands.
#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Validate a manifest JSON file (or `-` for stdin). Exit 0 valid, 1 invalid, 2 error.
    Check(CheckArgs),
}

/// Arguments of `manifest check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The host profile to validate for.
    #[arg(long, value_enum, default_value_t = ProfileArg::Paperclip2026_11)]
    profile: ProfileArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// The manifest file, or `-` for stdin.
    file: PathBuf,
}

/// Output format.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// `valid (<profile>)` or one `path: message [code]` line per issue.
    Human,
    /// One JSON object: `{valid, profile, errors, warnings}`.
    Json,
}

impl ManifestCommand {
    /// Runs the subcommand and returns the process exit code.
    pub fn run(self) -> ExitCode {
        let ManifestCommand::Check(args) = self;
        on_json_input(&args.file, |value| check(&args, &value))
    }
}

fn check(args: &CheckArgs, value: &Value) -> Result<ExitCode, ExitCode> {
    let profile = HostProfile::from(args.profile);
    let report = validate(value, profile);
    match args.format {
        Format::Json => println!("{}", json_report(&report, profile)),
        Format::Human => print_human(&report, profile),
    }
    Ok(ExitCode::from(if report.valid { EXIT_OK } else { EXIT_FAILED }))
}

/// For an unknown capability key: "did you mean" the closest key of `profile`.
fn did_you_mean(issue: &Issue, profile: HostProfile) -> Vec<String> {
    if issue.code != "unrecognized_keys" || !issue.path.ends_with("sandboxCapabilities") {
        return Vec::new();
    }
    let known: Vec<&str> =
        CAPABILITIES.iter().filter(|s| s.profiles.contains(&profile)).map(|s| s.key).collect();
    // The message lists the keys quoted: `Unrecognized key(s): "a", "b"`.
    let quoted = issue.message.split('"').skip(1).step_by(2);
    quoted
        .filter_map(|key| closest(key, known.iter().copied()).map(|k| (key, k)))
        .map(|(key, k)| format!("{key:?}: did you mean `{k}`?"))
        .collect()
}

fn issues(list: &[Issue]) -> Value {
    Value::Array(
        list.iter()
            .map(|i| json!({"path": i.path, "code": i.code, "message": i.message}))
            .collect(),
    )
}

fn json_report(report: &ValidationReport, profile: HostProfile) -> Value {
    json!({
        "valid": report.valid,
        "profile": profile.as_str(),
        "errors": issues(&report.errors),
        "warnings": issues(&report.warnings),
    })
}

fn print_human(report: &ValidationReport, profile: HostProfile) {
    if report.valid {
        println!("valid ({profile})");
    } else {
        for e in &report.errors {
            println!("{e} [{}]", e.code);
            for hint in did_you_mean(e, profile) {
                println!("  {hint}");
            }
        }
    }
    for w in &report.warnings {
        println!("warning: {w} [{}]", w.code);
    }
}
