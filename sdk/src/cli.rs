//! The worker's command line.
//!
//! ```text
//! worker [--profile <profile>]              serve the host over stdin/stdout
//! worker --manifest                         print the manifest (the provider's target profile)
//! worker --manifest --profile <profile>     print the manifest for paperclip-2026-11 or
//!                                           paperclip-2026-09
//! worker --help                             print the usage
//! ```
//!
//! `--manifest` prints the JSON manifest to stdout and exits 0. Any other argument is a usage
//! error: a message on stderr and exit code 2. When serving, `--profile` names the host the
//! worker serves ([`handle_args`] returns it; a provider whose behaviour depends on the profile
//! is built with it). [`run_plugin`](crate::run_plugin) applies this; a binary with its own
//! [`Worker`](crate::Worker) setup calls [`handle_args`] first.

use std::fmt;
use std::io::Write;

use paperclip_sandbox_protocol::HostProfile;

use crate::manifest::PluginManifest;

/// The usage text printed with a usage error.
pub const USAGE: &str = "\
usage: <worker> [--profile <profile>]              serve the host over stdin/stdout
       <worker> --manifest [--profile <profile>]   print the plugin manifest as JSON
profiles: paperclip-2026-11, paperclip-2026-09 (default: the provider's target profile)";

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation {
    /// No arguments or only `--profile`: serve hosts of this profile over stdin/stdout.
    Serve(HostProfile),
    /// `--manifest [--profile <profile>]`: print the manifest for this profile.
    PrintManifest(HostProfile),
    /// `--help` or `-h`: print the usage.
    Help,
}

/// A command line the worker does not understand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Parses the arguments after the program name. `default_profile` is the profile `--manifest`
/// uses without `--profile`. `--profile` takes its value as the next argument or after `=`.
pub fn parse_args<I, S>(args: I, default_profile: HostProfile) -> Result<Invocation, UsageError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut manifest = false;
    let mut profile = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.as_ref();
        let value = match arg {
            "--manifest" if !manifest => {
                manifest = true;
                continue;
            }
            "--help" | "-h" => return Ok(Invocation::Help),
            "--profile" => match args.next() {
                Some(v) => v.as_ref().to_owned(),
                None => return Err(UsageError("`--profile` needs a value".into())),
            },
            _ => match arg.strip_prefix("--profile=") {
                Some(v) => v.to_owned(),
                None => return Err(UsageError(format!("unexpected argument `{arg}`"))),
            },
        };
        if profile.is_some() {
            return Err(UsageError("`--profile` given twice".into()));
        }
        profile = Some(value.parse::<HostProfile>().map_err(|e| UsageError(e.to_string()))?);
    }
    let profile = profile.unwrap_or(default_profile);
    Ok(if manifest { Invocation::PrintManifest(profile) } else { Invocation::Serve(profile) })
}

/// Handles the process's command line for provider `M`: prints the manifest and exits 0 for
/// `--manifest`, prints the usage and exits 0 for `--help`, prints a usage error and exits 2
/// for anything it does not understand, and returns the profile to serve when the worker
/// should serve (no arguments, or `--profile` alone).
pub fn handle_args<M: PluginManifest>() -> HostProfile {
    match parse_args(std::env::args().skip(1), M::PROFILE) {
        Ok(Invocation::Serve(profile)) => profile,
        Ok(Invocation::Help) => {
            println!("{USAGE}");
            std::process::exit(0);
        }
        Ok(Invocation::PrintManifest(profile)) => {
            let json = serde_json::to_string_pretty(&M::manifest(profile).to_value())
                .expect("a manifest value always serializes");
            let mut out = std::io::stdout().lock();
            let written = writeln!(out, "{json}").and_then(|()| out.flush());
            std::process::exit(if written.is_ok() { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV: HostProfile = HostProfile::Paperclip2026_11;
    const SEP: HostProfile = HostProfile::Paperclip2026_09;

    fn parse(args: &[&str]) -> Result<Invocation, UsageError> {
        parse_args(args.iter().copied(), NOV)
    }

    #[test]
    fn accepted_command_lines() {
        assert_eq!(parse(&[]), Ok(Invocation::Serve(NOV)));
        assert_eq!(parse_args(Vec::<String>::new(), SEP), Ok(Invocation::Serve(SEP)));
        assert_eq!(parse(&["--profile", "paperclip-2026-09"]), Ok(Invocation::Serve(SEP)));
        assert_eq!(parse(&["--manifest", "-h"]), Ok(Invocation::Help));
        assert_eq!(parse(&["--manifest"]), Ok(Invocation::PrintManifest(NOV)));
        assert_eq!(parse_args(["--manifest"], SEP), Ok(Invocation::PrintManifest(SEP)));
        for args in [
            &["--manifest", "--profile", "paperclip-2026-09"][..],
            &["--profile", "paperclip-2026-09", "--manifest"],
            &["--manifest", "--profile=paperclip-2026-09"],
        ] {
            assert_eq!(parse(args), Ok(Invocation::PrintManifest(SEP)), "{args:?}");
        }
    }

    #[test]
    fn usage_errors_name_the_problem() {
        let cases: &[(&[&str], &str)] = &[
            (&["--serve"], "unexpected argument `--serve`"),
            (&["--manifest", "--manifest"], "unexpected argument `--manifest`"),
            (&["--manifest", "--profile"], "`--profile` needs a value"),
            (&["--manifest", "--profile", "paperclip-2026-10"], "unknown host profile"),
            (
                &["--manifest", "--profile=paperclip-2026-09", "--profile=paperclip-2026-11"],
                "twice",
            ),
        ];
        for (args, expected) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.0.contains(expected), "{args:?}: {err}");
        }
    }
}
