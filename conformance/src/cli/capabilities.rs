//! `sandbox-conformance capabilities resolve`: the effective capabilities a host would grant.
//!
//! Input (a file or `-` for stdin):
//!
//! ```json
//! {"declaration": {"sandboxCapabilities": {"reusableLeases": true}},
//!  "supportedMethods": ["environmentResumeLease", "environmentReleaseLease", "environmentDestroyLease"],
//!  "leasePolicy": "reuse_by_environment",
//!  "metadata": {},
//!  "configResolutionFailed": false}
//! ```
//!
//! `declaration` is the driver declaration object, or `null` for an exact-plugin identity
//! failure; `supportedMethods` may be `null` (a missing list verifies nothing). `leasePolicy`
//! defaults to `"ephemeral"`, `metadata` to `{}` and `configResolutionFailed` to `false`.
//! Output: one JSON object mapping every capability key of the profile to a bool. Exit 0, or 2
//! with one clear line on bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use paperclip_sandbox_protocol::capabilities::resolve::{resolve_input, ResolveInput};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::Value;

use super::{fail_usage, on_json_input, ProfileArg, EXIT_OK};

/// `capabilities` subcommands.
#[derive(Debug, Subcommand)]
pub enum CapabilitiesCommand {
    /// Resolve effective capabilities (`verified ∩ declared ∩ narrowing`) for one lease.
    Resolve(ResolveArgs),
}

/// Arguments of `capabilities resolve`.
#[derive(Debug, clap::Args)]
pub struct ResolveArgs {
    /// The host profile whose capability keys and rules apply.
    #[arg(long, value_enum, default_value_t = ProfileArg::Paperclip2026_11)]
    profile: ProfileArg,
    /// The input JSON file, or `-` for stdin.
    file: PathBuf,
}

impl CapabilitiesCommand {
    /// Runs the subcommand and returns the process exit code.
    pub fn run(self) -> ExitCode {
        let CapabilitiesCommand::Resolve(args) = self;
        on_json_input(&args.file, |value| resolve(&args, &value))
    }
}

fn resolve(args: &ResolveArgs, value: &Value) -> Result<ExitCode, ExitCode> {
    let input = ResolveInput::from_json(value).map_err(fail_usage)?;
    let effective = resolve_input(HostProfile::from(args.profile), &input);
    println!("{}", effective.to_json());
    Ok(ExitCode::from(EXIT_OK))
}
