//! `sandbox-conformance ci-template <system>`: prints a ready CI recipe for a provider's
//! repository. The recipe is one file of this crate (`ci/github.yml`), which the book's CI
//! chapter includes as well, so the printed workflow and the documented one cannot drift.
//!
//! The file installs the harness from crates.io, at the version that printed it. Until that
//! version is published there, `--from-git URL [--rev REV]` or `--from-path DIR` prints the
//! same workflow with the install step replaced ([`HarnessSource`]).

use std::process::ExitCode;

use clap::ValueEnum;

/// The GitHub Actions workflow: build the worker, install the harness, run both host profiles
/// (the binary and the package's shim), keep the JUnit reports, and the transcripts of failed
/// checks.
pub const GITHUB_WORKFLOW: &str = include_str!("../../ci/github.yml");

/// The install step of [`GITHUB_WORKFLOW`] as the file has it (crates.io); the other sources
/// replace exactly these lines.
const CRATES_IO_INSTALL: &str = concat!(
    "      - name: Install the harness\n",
    "        # The harness version this file was printed by, from crates.io. Until it is published\n",
    "        # there, print this file with --from-git URL or --from-path DIR (ci-template --help).\n",
    "        run: cargo install paperclip-sandbox-conformance --version ",
    env!("CARGO_PKG_VERSION"),
    " --locked\n",
);

/// The checkout step of [`GITHUB_WORKFLOW`]; `--from-path` makes it fetch submodules.
const CHECKOUT: &str = "      - uses: actions/checkout@v4\n";

/// A CI system with a recipe.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CiSystem {
    /// GitHub Actions (`.github/workflows/conformance.yml`).
    Github,
}

/// Arguments of `ci-template`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Where the workflow installs the harness from:
  (default)            crates.io, this harness's version (once it is published there)
  --from-git URL       cargo install --git URL (with --rev REV: that commit, tag or branch)
  --from-path DIR      cargo install --path DIR/conformance, for a checkout of this repository
                       at DIR in the job (a git submodule: the checkout step fetches submodules)")]
pub struct CiTemplateArgs {
    /// The CI system.
    #[arg(value_enum)]
    system: CiSystem,
    /// Install the harness from this git repository instead of crates.io.
    #[arg(long, value_name = "URL", conflicts_with = "from_path")]
    from_git: Option<String>,
    /// With --from-git: the commit, tag or branch to install (default: the default branch).
    #[arg(long, value_name = "REV", requires = "from_git")]
    rev: Option<String>,
    /// Install the harness from a checkout of its repository at DIR (relative to your
    /// repository's root, e.g. a git submodule) instead of crates.io.
    #[arg(long, value_name = "DIR")]
    from_path: Option<String>,
}

/// Where the printed workflow installs the harness from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessSource {
    /// crates.io, at this harness's version.
    CratesIo,
    /// `cargo install --git URL [--rev REV]`.
    Git {
        /// The repository URL.
        url: String,
        /// A commit, tag or branch.
        rev: Option<String>,
    },
    /// `cargo install --path DIR/conformance`, DIR a checkout of the harness's repository.
    Path(String),
}

/// Why a `ci-template` argument was refused. The messages never quote the value: a URL may
/// carry a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The value has a character that would need quoting in YAML or the shell.
    #[error(
        "{0}: use only letters, digits and - . _ ~ / : @ + % = , (no spaces, quotes or shell \
         characters)"
    )]
    Characters(&'static str),
    /// The value is empty.
    #[error("{0}: empty")]
    Empty(&'static str),
    /// The URL carries credentials (a password, or any user part of an http(s) URL, which may
    /// be a token), which would be written into a file you commit.
    #[error(
        "--from-git: the URL carries credentials; they would be written into the workflow file"
    )]
    Password,
}

fn check(what: &'static str, value: &str) -> Result<(), TemplateError> {
    if value.is_empty() {
        return Err(TemplateError::Empty(what));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/:@+%=,".contains(c);
    // A leading '-' would read as an option of `cargo install`.
    // A trailing ':' would make the plain YAML scalar of the `run:` line a mapping.
    if !value.chars().all(allowed) || value.starts_with('-') || value.ends_with(':') {
        return Err(TemplateError::Characters(what));
    }
    Ok(())
}

impl HarnessSource {
    /// Checks the values: each must be printable into the workflow without quoting.
    pub fn validate(&self) -> Result<(), TemplateError> {
        match self {
            HarnessSource::CratesIo => Ok(()),
            HarnessSource::Git { url, rev } => {
                check("--from-git", url)?;
                if let Some(rev) = rev {
                    check("--rev", rev)?;
                }
                let authority = url.split_once("://").map_or("", |(_, rest)| rest);
                let authority = authority.split('/').next().unwrap_or("");
                // Any user part of an http(s) URL may be a token (`https://ghp_…@github.com`);
                // elsewhere (`ssh://git@host`) only a `user:password` part is refused.
                let web = url.starts_with("https://") || url.starts_with("http://");
                if authority.split_once('@').is_some_and(|(user, _)| web || user.contains(':')) {
                    return Err(TemplateError::Password);
                }
                Ok(())
            }
            HarnessSource::Path(dir) => check("--from-path", dir),
        }
    }

    /// The install step for this source, in [`GITHUB_WORKFLOW`]'s indentation.
    fn install_step(&self) -> String {
        match self {
            HarnessSource::CratesIo => CRATES_IO_INSTALL.to_owned(),
            HarnessSource::Git { url, rev } => {
                let rev = rev.as_ref().map(|r| format!(" --rev {r}")).unwrap_or_default();
                format!(
                    "      - name: Install the harness\n        \
                     # From git (printed with --from-git); --rev pins a commit for repeatable runs.\n        \
                     run: cargo install paperclip-sandbox-conformance --locked --profile dev-tool --git {url}{rev}\n"
                )
            }
            HarnessSource::Path(dir) => {
                let dir = dir.trim_end_matches('/');
                format!(
                    "      - name: Install the harness\n        \
                     # From the checkout of the harness's repository at {dir} (printed with --from-path).\n        \
                     run: cargo install --locked --profile dev-tool --path {dir}/conformance\n"
                )
            }
        }
    }
}

/// The GitHub Actions workflow installing the harness from `source` (validate it first).
pub fn github_workflow(source: &HarnessSource) -> String {
    assert!(GITHUB_WORKFLOW.contains(CRATES_IO_INSTALL), "ci/github.yml has the install step");
    let mut text = GITHUB_WORKFLOW.replacen(CRATES_IO_INSTALL, &source.install_step(), 1);
    if matches!(source, HarnessSource::Path(_)) {
        let with_submodules = format!("{CHECKOUT}        with:\n          submodules: recursive\n");
        text = text.replacen(CHECKOUT, &with_submodules, 1);
    }
    text
}

impl CiTemplateArgs {
    /// Where the workflow installs the harness from, as the options say.
    pub fn source(&self) -> HarnessSource {
        match (&self.from_git, &self.from_path) {
            (Some(url), _) => HarnessSource::Git { url: url.clone(), rev: self.rev.clone() },
            (None, Some(dir)) => HarnessSource::Path(dir.clone()),
            (None, None) => HarnessSource::CratesIo,
        }
    }

    /// Prints the recipe on stdout; exit 0, or 2 for a value that cannot be printed into it.
    pub fn run(self) -> ExitCode {
        let source = self.source();
        if let Err(e) = source.validate() {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        match self.system {
            CiSystem::Github => print!("{}", github_workflow(&source)),
        }
        ExitCode::SUCCESS
    }
}
