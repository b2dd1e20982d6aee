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

use crate::registry::closest;
use clap::Subcommand;
use paperclip_sandbox_protocol::capabilities::resolve::{resolve_input, ResolveInput};
use paperclip_sandbox_protocol::capabilities::{CAPABILITIES, REMOVED_KEYS};
use paperclip_sandbox_protocol::methods::Method;
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
    if let Some(problem) = unknown_name(value) {
        return Err(fail_usage(format!("capabilities resolve input: {problem}")));
    }
    let effective = resolve_input(HostProfile::from(args.profile), &input);
    println!("{}", effective.to_json());
    Ok(ExitCode::from(EXIT_OK))
}

/// True when `name` is one or two edits from one of `known`: a typo rather than another name.
fn near_miss(name: &str, known: &[&str]) -> bool {
    known.iter().any(|k| strsim::levenshtein(name, k) <= 2)
}

/// The declaration keys the resolution reads.
const READ_DECLARATION_KEYS: &[&str] = &["sandboxCapabilities", "supportsReusableLeases"];

/// A name the resolution would silently ignore, with the closest known one: a capability key no
/// profile knows, or a near miss of a known method name or of a declaration key the
/// resolution reads (other driver fields, and methods newer than the table, are fine).
fn unknown_name(value: &Value) -> Option<String> {
    let hint = |name: &str, known: &[&str]| {
        let name: String = name.chars().take(64).collect();
        match closest(&name, known.iter().copied()) {
            Some(k) => format!("{name:?} (did you mean `{k}`?)"),
            None => format!("{name:?}"),
        }
    };
    let declaration = value.get("declaration").and_then(Value::as_object);
    for key in declaration.into_iter().flat_map(|d| d.keys()) {
        if !READ_DECLARATION_KEYS.contains(&key.as_str()) && near_miss(key, READ_DECLARATION_KEYS) {
            return Some(format!("unknown declaration key {}", hint(key, READ_DECLARATION_KEYS)));
        }
    }
    // Every key of the table (a key of another profile is the resolution's business).
    let capabilities: Vec<&str> =
        CAPABILITIES.iter().map(|s| s.key).chain(REMOVED_KEYS.iter().copied()).collect();
    let declared =
        declaration.and_then(|d| d.get("sandboxCapabilities")).and_then(Value::as_object);
    for key in declared.into_iter().flat_map(|c| c.keys()) {
        if !capabilities.contains(&key.as_str()) {
            return Some(format!(
                "unknown capability key {} in declaration.sandboxCapabilities",
                hint(key, &capabilities)
            ));
        }
    }
    let methods: Vec<&str> = Method::all().map(Method::as_str).collect();
    let supported = value.get("supportedMethods").and_then(Value::as_array);
    for name in supported.into_iter().flatten().filter_map(Value::as_str) {
        // A method newer than this table is fine; a near miss of a known one is a typo.
        if !methods.contains(&name) && near_miss(name, &methods) {
            return Some(format!("unknown method {} in supportedMethods", hint(name, &methods)));
        }
    }
    None
}
