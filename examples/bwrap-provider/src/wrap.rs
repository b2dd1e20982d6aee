//! Turning a command into a bubblewrap invocation, and telling "bwrap failed to start" apart
//! from "the command failed".
//!
//! # The sandbox shape ([`SANDBOX_ARGS`])
//!
//! ```text
//! bwrap --unshare-all --share-net --die-with-parent
//!       --ro-bind / /  --dev /dev  --proc /proc  --tmpfs /tmp
//!       --bind <lease> <lease>
//!       -- <sh> -c ': > "$1"; shift; exec "$@"' sh <marker> <command> <args…>
//! ```
//!
//! - `--ro-bind / /`: the whole host filesystem, read-only, at the same paths, so every tool
//!   the image provides (`node`, the agent CLIs, `tar`) is where the `PATH` says it is.
//! - `--bind <lease> <lease>`: the lease directory stays writable **at the same path**, so the
//!   `cwd`, `HOME=<lease>`, `TMPDIR=<lease>/.tmp` and `XDG_CACHE_HOME=<lease>/.cache` of the
//!   local provider's base environment all work unchanged. bwrap keeps the current directory
//!   when it exists inside the sandbox, so the `cwd` the local provider confined and set is the
//!   command's `cwd` inside too.
//! - `--tmpfs /tmp`: a private, empty `/tmp` (mounted before the lease bind, so a lease under
//!   `/tmp` is still bound on top of it); `TMPDIR` points into the lease anyway.
//! - `--dev /dev`, `--proc /proc`: a minimal device tree and a procfs of the new PID namespace.
//! - `--unshare-all --share-net`: new user (when possible), mount, PID, IPC, UTS and cgroup
//!   namespaces; the network is kept, because agent CLIs talk to their APIs.
//! - `--die-with-parent`: the command gets `SIGKILL` when bwrap dies. bwrap stays in the
//!   worker's process group (no `--new-session`), so the local provider's timeout, cancellation
//!   and stop, which kill the whole group, still reach everything.
//!
//! Because of the new PID namespace, background processes a command leaves behind end when the
//! command itself exits (the namespace's init goes away); the plain local provider lets them
//! run until the lease ends.
//!
//! **This adds no security claim.** The wrapper is advisory and best-effort, as the sandbox
//! runtime requirements say: the host filesystem stays readable, the network is shared, and a
//! sudo rule for `bwrap` (the [`Launcher::Sudo`] path) is itself root-equivalent for the
//! sandbox user. The ephemeral sandbox stays the only security posture; the wrapper only keeps
//! well-behaved commands from writing outside their lease by accident.
//!
//! # Start marker
//!
//! The first thing that runs inside the sandbox is `sh`, which creates the marker file (a
//! random name under `<lease>/.tmp`) and then `exec`s the command. A wrapped run whose marker
//! was never created, that exited with code 1 and whose stderr starts with `bwrap:` or
//! `sudo:` failed before the command started ([`start_failure`]); only then does the provider
//! run the command plainly, so a command is never run twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The sandbox shape, without the lease bind (see the module docs).
pub const SANDBOX_ARGS: &[&str] = &[
    "--unshare-all",
    "--share-net",
    "--die-with-parent",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
];

/// The script `sh` runs first inside the sandbox: create the marker (`$1`), then become the
/// command.
pub const MARKER_SCRIPT: &str = ": > \"$1\"; shift; exec \"$@\"";

/// The file-name prefix of start markers under `<lease>/.tmp`.
pub const MARKER_PREFIX: &str = ".bwrap-started-";

/// How bwrap is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// `bwrap …` directly: the worker is root, or unprivileged user namespaces work.
    Direct,
    /// `sudo -n bwrap …`: bwrap needs root here and a passwordless sudo rule allows it. Inside,
    /// `setpriv` drops back to the worker's user and group, so lease files keep their owner,
    /// and the environment is passed with `--clearenv` / `--setenv` (sudo resets it).
    Sudo {
        /// The `sudo` binary.
        sudo: PathBuf,
        /// The `setpriv` binary (util-linux).
        setpriv: PathBuf,
        /// The worker's user id.
        uid: u32,
        /// The worker's group id.
        gid: u32,
    },
}

impl Launcher {
    /// `"direct"` or `"sudo"`, as reported in metadata.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Sudo { .. } => "sudo",
        }
    }
}

/// Everything needed to wrap a command: the probed binaries and the launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// The `bwrap` binary (as `command -v bwrap` found it).
    pub bwrap: PathBuf,
    /// The `sh` that creates the marker inside the sandbox.
    pub sh: PathBuf,
    /// How bwrap is launched.
    pub launcher: Launcher,
}

/// A program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program (an absolute path).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

impl Wrapper {
    /// The prefix up to and including bwrap: `[bwrap]` or `[sudo, -n, bwrap]`.
    fn launch(&self) -> Invocation {
        match &self.launcher {
            Launcher::Direct => Invocation { program: s(&self.bwrap), args: Vec::new() },
            Launcher::Sudo { sudo, .. } => {
                Invocation { program: s(sudo), args: vec!["-n".into(), s(&self.bwrap)] }
            }
        }
    }

    /// The definitive prerequisite check: the sandbox shape of every command, running
    /// `sh -c true`. It must exit 0.
    pub fn check(&self) -> Invocation {
        let mut inv = self.launch();
        inv.args.extend(SANDBOX_ARGS.iter().map(|a| a.to_string()));
        inv.args.extend(["--".into(), s(&self.sh), "-c".into(), "true".into()]);
        inv
    }

    /// `command args…` wrapped for `lease` (canonical), creating `marker` first. `env` is the
    /// command's full environment; it is only written into the arguments for
    /// [`Launcher::Sudo`], where sudo would otherwise reset it.
    pub fn wrap(
        &self,
        lease: &Path,
        marker: &Path,
        env: &BTreeMap<String, String>,
        command: &str,
        args: &[String],
    ) -> Invocation {
        let mut inv = self.launch();
        inv.args.extend(SANDBOX_ARGS.iter().map(|a| a.to_string()));
        inv.args.extend(["--bind".into(), s(lease), s(lease)]);
        if let Launcher::Sudo { .. } = self.launcher {
            inv.args.push("--clearenv".into());
            for (k, v) in env {
                inv.args.extend(["--setenv".into(), k.clone(), v.clone()]);
            }
        }
        inv.args.push("--".into());
        if let Launcher::Sudo { setpriv, uid, gid, .. } = &self.launcher {
            inv.args.extend([
                s(setpriv),
                format!("--reuid={uid}"),
                format!("--regid={gid}"),
                "--clear-groups".into(),
                "--".into(),
            ]);
        }
        inv.args.extend([
            s(&self.sh),
            "-c".into(),
            MARKER_SCRIPT.into(),
            "sh".into(),
            s(marker),
            command.into(),
        ]);
        inv.args.extend(args.iter().cloned());
        inv
    }
}

/// How a wrapped run ended, as far as [`start_failure`] needs to know.
#[derive(Debug, Clone, Copy)]
pub struct WrappedEnd<'a> {
    /// Whether the start marker was ever seen.
    pub marker_seen: bool,
    /// The exit code.
    pub exit_code: Option<i64>,
    /// Whether a timeout or a cancellation killed it.
    pub killed: bool,
    /// Its stderr.
    pub stderr: &'a str,
}

/// `Some(reason)` when a wrapped run failed before the command started (bwrap or sudo
/// errored; see the module docs), else `None`. The reason is the first stderr line, shortened.
pub fn start_failure(end: WrappedEnd<'_>) -> Option<String> {
    let stderr = end.stderr.trim_start();
    let from_launcher = stderr.starts_with("bwrap:") || stderr.starts_with("sudo:");
    if end.marker_seen || end.killed || end.exit_code != Some(1) || !from_launcher {
        return None;
    }
    Some(first_line(stderr))
}

/// The first line of `text`, at most 200 characters.
pub fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    line.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct() -> Wrapper {
        Wrapper { bwrap: "/usr/bin/bwrap".into(), sh: "/bin/sh".into(), launcher: Launcher::Direct }
    }

    #[test]
    fn direct_wrap_binds_the_lease_and_execs_through_the_marker_script() {
        let env = BTreeMap::from([("SECRET".to_string(), "v".to_string())]);
        let inv = direct().wrap(
            Path::new("/r/lp-1"),
            Path::new("/r/lp-1/.tmp/.bwrap-started-ab"),
            &env,
            "echo",
            &["a b".to_string()],
        );
        assert_eq!(inv.program, "/usr/bin/bwrap");
        let a = inv.args.join(" ");
        assert!(a.starts_with("--unshare-all --share-net --die-with-parent --ro-bind / /"), "{a}");
        assert!(a.contains("--tmpfs /tmp --bind /r/lp-1 /r/lp-1 -- /bin/sh -c"), "{a}");
        let tail: Vec<&str> = inv.args[inv.args.len() - 4..].iter().map(String::as_str).collect();
        assert_eq!(tail, ["sh", "/r/lp-1/.tmp/.bwrap-started-ab", "echo", "a b"]);
        assert_eq!(inv.args[inv.args.len() - 5], MARKER_SCRIPT);
        // Direct mode never writes the environment into the arguments.
        assert!(!a.contains("SECRET") && !a.contains("--setenv"), "{a}");
    }

    #[test]
    fn sudo_wrap_passes_env_and_drops_privileges() {
        let w = Wrapper {
            launcher: Launcher::Sudo {
                sudo: "/usr/bin/sudo".into(),
                setpriv: "/usr/bin/setpriv".into(),
                uid: 1000,
                gid: 1001,
            },
            ..direct()
        };
        let env = BTreeMap::from([("HOME".to_string(), "/r/lp-1".to_string())]);
        let inv = w.wrap(Path::new("/r/lp-1"), Path::new("/m"), &env, "id", &[]);
        assert_eq!(inv.program, "/usr/bin/sudo");
        assert_eq!(&inv.args[..2], ["-n", "/usr/bin/bwrap"]);
        let a = inv.args.join(" ");
        assert!(a.contains("--clearenv --setenv HOME /r/lp-1 --"), "{a}");
        assert!(
            a.contains("-- /usr/bin/setpriv --reuid=1000 --regid=1001 --clear-groups -- /bin/sh"),
            "{a}"
        );
        assert_eq!(w.check().args[..2], ["-n", "/usr/bin/bwrap"]);
        assert_eq!(w.launcher.as_str(), "sudo");
    }

    #[test]
    fn check_runs_the_same_shape() {
        let inv = direct().check();
        assert_eq!(inv.args[..SANDBOX_ARGS.len()], *SANDBOX_ARGS);
        assert_eq!(&inv.args[SANDBOX_ARGS.len()..], ["--", "/bin/sh", "-c", "true"]);
    }

    #[test]
    fn start_failure_needs_every_sign() {
        let failed = WrappedEnd {
            marker_seen: false,
            exit_code: Some(1),
            killed: false,
            stderr: "bwrap: No permissions to creating new namespace\nmore",
        };
        assert_eq!(
            start_failure(failed).as_deref(),
            Some("bwrap: No permissions to creating new namespace")
        );
        let sudo = WrappedEnd { stderr: "sudo: a password is required\n", ..failed };
        assert_eq!(start_failure(sudo).as_deref(), Some("sudo: a password is required"));
        assert_eq!(start_failure(WrappedEnd { marker_seen: true, ..failed }), None);
        assert_eq!(start_failure(WrappedEnd { exit_code: Some(2), ..failed }), None);
        assert_eq!(start_failure(WrappedEnd { killed: true, ..failed }), None);
        assert_eq!(start_failure(WrappedEnd { stderr: "my tool: bwrap: x", ..failed }), None);
        assert_eq!(first_line(&"x".repeat(500)).len(), 200);
    }
}
