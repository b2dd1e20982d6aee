//! `sandbox-conformance package`: turn a provider binary into an npm-installable plugin folder
//! (see the crate-private module `crate::package` for the layout and the shim).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::package::{package, ManifestSource, PackageOptions};

use super::{fail_usage, ProfileArg, EXIT_OK};

/// Arguments of `package`.
#[derive(Debug, clap::Args)]
pub struct PackageArgs {
    /// The native worker binary (it must print its manifest for `--manifest`).
    #[arg(long, value_name = "BINARY")]
    worker: PathBuf,
    /// The plugin folder to write (created when missing; files of the same name are replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The host profile the manifest targets.
    #[arg(long, value_enum, default_value_t = ProfileArg::Paperclip2026_11)]
    profile: ProfileArg,
    /// The npm package name (default: `paperclip-plugin-<manifest id>`).
    #[arg(long)]
    name: Option<String>,
}

impl PackageArgs {
    /// Writes the plugin folder and prints what was written. Exit 0, or 2 with one `error:` line.
    pub fn run(self) -> ExitCode {
        let opts = PackageOptions {
            worker: self.worker,
            out: self.out,
            profile: self.profile.into(),
            name: self.name,
        };
        let packaged = match package(&opts) {
            Ok(p) => p,
            Err(e) => return fail_usage(e),
        };
        let source = match packaged.manifest_source {
            ManifestSource::Plain => "--manifest",
            ManifestSource::WithProfile => "--manifest --profile",
            ManifestSource::PlainFallback => "--manifest (the binary refused --profile)",
        };
        println!(
            "packaged {}@{} for {} (manifest from {source})",
            packaged.package_name, packaged.version, opts.profile
        );
        for field in &packaged.stripped_fields {
            println!("removed {field} (not accepted by {})", opts.profile);
        }
        for file in &packaged.files {
            println!("wrote {}", packaged.out.join(file).display());
        }
        ExitCode::from(EXIT_OK)
    }
}
