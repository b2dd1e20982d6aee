//! Where ledger files live, and which ones the harness trusts. A ledger names the program that
//! `sweep` runs to destroy what it lists, so a ledger someone else could have written is a way
//! to make the current user run their program: one rule ([`trust_problem`]) decides which run
//! directories and ledger files are trusted, for `sweep` before it reads one and for `run` and
//! `replay` before they write one.

use std::io;
use std::path::{Path, PathBuf};

use crate::HarnessError;

/// The run directory used when `--run-dir` is not given: `$XDG_STATE_HOME/sandbox-conformance`,
/// else `$HOME/.local/state/sandbox-conformance`, else `sandbox-conformance` in the temp dir.
pub(crate) fn default_run_dir() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("XDG_STATE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("sandbox-conformance")
}

/// The rule, stated once for every message that refuses a path.
const RULE: &str = "a ledger names the program `sandbox-conformance sweep` runs, so ledger \
files and run directories must belong to the current user, be writable by no one else, and not \
be symbolic links";

/// What makes `path` untrusted for ledgers, or `None` when it is trusted: it is a symbolic link,
/// it belongs to another user, or its group or others may write it. The one rule for ledger
/// files and run directories, read (`sweep`) or written (`run`, `replay`). A trailing `/` does
/// not make a link followed.
pub(crate) fn trust_problem(path: &Path) -> io::Result<Option<&'static str>> {
    use std::os::unix::fs::MetadataExt as _;
    let path: PathBuf = path.components().collect();
    let meta = std::fs::symlink_metadata(&path)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    Ok(if meta.file_type().is_symlink() {
        Some("is a symbolic link")
    } else if meta.uid() != me {
        Some("is owned by another user")
    } else if meta.mode() & 0o022 != 0 {
        Some("is writable by its group or by others")
    } else {
        None
    })
}

/// Why `what` (`the ledger file`, …) is refused, with the rule.
fn refusal(refused: &str, what: &str, problem: &str) -> String {
    format!("{refused}: the {what} {problem}; {RULE}")
}

/// [`trust_problem`] as an error naming `path`, `what` it is and what was `refused`
/// (`not swept`).
pub(crate) fn check_trusted(path: &Path, what: &str, refused: &str) -> Result<(), HarnessError> {
    match trust_problem(path) {
        Ok(None) => Ok(()),
        Ok(Some(problem)) => Err(HarnessError::BadFile {
            path: path.to_owned(),
            message: refusal(refused, what, problem),
        }),
        Err(e) => Err(HarnessError::io(path, e)),
    }
}

/// Makes `dir` ready for a run's ledger: creates it (and its missing parents) with mode `0700`
/// when absent, then refuses it ([`io::ErrorKind::PermissionDenied`]) when [`trust_problem`]
/// finds one; nothing is written to a refused directory.
pub(crate) fn prepare_run_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    match trust_problem(dir)? {
        None => Ok(()),
        Some(problem) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            refusal("not used as the run directory", "run directory", problem),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt as _;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pcconf-rundir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, Permissions::from_mode(0o700)).unwrap();
        dir
    }

    /// A run directory the run creates is `0700`, parents included; one that is a link (also
    /// named with a trailing `/`), or that others can write, is refused with the rule.
    #[test]
    fn a_run_directory_is_created_private_and_an_untrusted_one_is_refused() {
        use std::os::unix::fs::MetadataExt as _;
        let top = temp_dir("prepare");
        let dir = top.join("state/sandbox-conformance");
        prepare_run_dir(&dir).unwrap();
        for d in [&dir, &top.join("state")] {
            assert_eq!(std::fs::metadata(d).unwrap().mode() & 0o777, 0o700, "{}", d.display());
        }
        let link = top.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        for path in [link.clone(), PathBuf::from(format!("{}/", link.display()))] {
            let e = prepare_run_dir(&path).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            let text = e.to_string();
            assert!(text.contains("run directory is a symbolic link"), "{text}");
            assert!(text.contains(RULE), "{text}");
        }
        std::fs::set_permissions(&dir, Permissions::from_mode(0o770)).unwrap();
        let e = prepare_run_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("is writable by its group or by others"), "{e}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing was written");
        let _ = std::fs::remove_dir_all(&top);
    }
}
