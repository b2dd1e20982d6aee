//! Probing the bubblewrap prerequisites.
//!
//! The sandbox runtime requirements name three prerequisites: `bwrap` on the `PATH`, a
//! passwordless sudo rule for it (or root), and unprivileged user namespaces. [`detect`] checks
//! them in this order and never fails; it answers a [`Detection`] whose
//! [`wrapper`](Detection::wrapper) is `Some` exactly when commands can be wrapped:
//!
//! 1. `sh -c 'command -v bwrap'` (the requirements' detection pattern) finds `bwrap`.
//! 2. The definitive check: the real sandbox shape ([`Wrapper::check`]) runs `sh -c true` and
//!    exits 0, launched directly. This holds when the worker is root, or when unprivileged user
//!    namespaces work (`/proc/sys/kernel/unprivileged_userns_clone` and
//!    `/proc/sys/user/max_user_namespaces` are read and reported, but only the check decides).
//! 3. Otherwise, when the worker is not root: `sudo` and `setpriv` are on the `PATH` and
//!    `sudo -n bwrap <shape> -- sh -c true` exits 0 (the sudo rule holds).
//!
//! Each check runs with a bound ([`CHECK_TIMEOUT`]); a check that hangs counts as failed.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::wrap::{first_line, Launcher, Wrapper};

/// The longest a single prerequisite check may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// The kernel settings read (when present) and reported.
pub const USERNS_SYSCTLS: &[(&str, &str)] = &[
    ("unprivilegedUsernsClone", "/proc/sys/kernel/unprivileged_userns_clone"),
    ("maxUserNamespaces", "/proc/sys/user/max_user_namespaces"),
];

/// The outcome of a prerequisite probe.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// How to wrap commands; `None` when a prerequisite is missing.
    pub wrapper: Option<Wrapper>,
    /// Why wrapping is on, or which prerequisite is missing.
    pub reason: String,
    /// The facts the checks found, for probe metadata.
    pub facts: Map<String, Value>,
}

impl Detection {
    /// A detection with no wrapper, for `reason`.
    pub fn plain(reason: impl Into<String>) -> Self {
        Detection { wrapper: None, reason: reason.into(), facts: Map::new() }
    }
}

/// Output of a bounded check.
struct Checked {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Run `program args…` with stdin closed, bounded by [`CHECK_TIMEOUT`].
fn run_bounded(program: &str, args: &[String]) -> Result<Checked, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let readers = std::thread::spawn(move || {
        let (mut o, mut e) = (String::new(), String::new());
        if let Some(out) = out.as_mut() {
            let _ = out.read_to_string(&mut o);
        }
        if let Some(err) = err.as_mut() {
            let _ = err.read_to_string(&mut e);
        }
        (o, e)
    });
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() < CHECK_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    // A grandchild holding the pipes open past the kill would block the readers; the check
    // binaries do not fork such children, and `--die-with-parent` covers bwrap's.
    let (stdout, stderr) = readers.join().unwrap_or_default();
    match status {
        Some(st) => Ok(Checked { ok: st.success(), stdout, stderr }),
        None => Err(format!("{program} did not finish within {}s", CHECK_TIMEOUT.as_secs())),
    }
}

/// `command -v <name>` through `sh -c`: the absolute path, when the shell finds one.
pub fn command_v(name: &str) -> Option<PathBuf> {
    let checked = run_bounded("sh", &["-c".into(), format!("command -v {name}")]).ok()?;
    let path = checked.stdout.trim();
    (checked.ok && path.starts_with('/')).then(|| PathBuf::from(path))
}

fn check_reason(result: Result<Checked, String>) -> Result<(), String> {
    match result {
        Ok(c) if c.ok => Ok(()),
        Ok(c) => Err(match first_line(&c.stderr) {
            l if l.is_empty() => "exited unsuccessfully".into(),
            l => l,
        }),
        Err(e) => Err(e),
    }
}

/// Whether the worker runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Probe the prerequisites (see the module docs). Blocking: runs a few short processes.
pub fn detect() -> Detection {
    let mut facts = Map::new();
    let root = is_root();
    facts.insert("root".into(), json!(root));
    for (key, path) in USERNS_SYSCTLS {
        if let Ok(v) = std::fs::read_to_string(path) {
            facts.insert((*key).into(), json!(v.trim()));
        }
    }
    let plain =
        |facts: Map<String, Value>, reason: String| Detection { wrapper: None, reason, facts };
    let Some(bwrap) = command_v("bwrap") else {
        return plain(facts, "bwrap is not on the PATH (`command -v bwrap` failed)".into());
    };
    facts.insert("bwrapPath".into(), json!(bwrap.display().to_string()));
    let Some(sh) = command_v("sh") else {
        return plain(facts, "sh is not on the PATH".into());
    };
    let direct = Wrapper { bwrap, sh, launcher: Launcher::Direct };
    let inv = direct.check();
    let direct_err = match check_reason(run_bounded(&inv.program, &inv.args)) {
        Ok(()) => {
            facts.insert("directCheck".into(), json!("ok"));
            let reason = if root {
                "bwrap runs as root"
            } else {
                "bwrap creates its sandbox with unprivileged user namespaces"
            };
            return Detection { wrapper: Some(direct), reason: reason.into(), facts };
        }
        Err(e) => e,
    };
    facts.insert("directCheck".into(), json!(direct_err));
    let cannot = format!("bwrap cannot create its sandbox here ({direct_err})");
    if root {
        return plain(facts, cannot);
    }
    let Some(sudo) = command_v("sudo") else {
        return plain(facts, format!("{cannot}; sudo is not on the PATH"));
    };
    let Some(setpriv) = command_v("setpriv") else {
        return plain(facts, format!("{cannot}; setpriv is not on the PATH (needed with sudo)"));
    };
    // SAFETY: getuid(2) / getgid(2) have no preconditions and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let wrapper = Wrapper { launcher: Launcher::Sudo { sudo, setpriv, uid, gid }, ..direct };
    let inv = wrapper.check();
    match check_reason(run_bounded(&inv.program, &inv.args)) {
        Ok(()) => {
            facts.insert("sudoCheck".into(), json!("ok"));
            let reason = "bwrap runs through a passwordless sudo rule (`sudo -n bwrap`)";
            Detection { wrapper: Some(wrapper), reason: reason.into(), facts }
        }
        Err(e) => {
            facts.insert("sudoCheck".into(), json!(e));
            plain(facts, format!("{cannot}; `sudo -n bwrap` fails ({e})"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_v_finds_sh_and_not_a_missing_tool() {
        let sh = command_v("sh").expect("sh is on the PATH");
        assert!(sh.is_absolute() && sh.exists(), "{}", sh.display());
        assert_eq!(command_v("paperclip-no-such-tool-xyz"), None);
    }

    #[test]
    fn bounded_checks_report_failures() {
        assert!(check_reason(run_bounded("sh", &["-c".into(), "true".into()])).is_ok());
        let e = check_reason(run_bounded("sh", &["-c".into(), "echo boom >&2; exit 1".into()]));
        assert_eq!(e, Err("boom".into()));
        assert!(check_reason(run_bounded("/nonexistent/bin", &[])).is_err());
    }

    #[test]
    fn detection_agrees_with_its_own_facts() {
        let d = detect();
        assert_eq!(d.facts["root"], json!(is_root()));
        match &d.wrapper {
            Some(w) => assert_eq!(d.facts["bwrapPath"], json!(w.bwrap.display().to_string())),
            None => assert!(!d.reason.is_empty()),
        }
    }
}
