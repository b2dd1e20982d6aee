//! Private directories for a local provider's lease root: created by the worker with mode
//! `0700`, and refused when another user could have made or can read them.
//!
//! A local provider keeps its leases (and what commands write there, secrets included) under
//! one root directory. In a shared temporary directory (`/tmp`) another user can create that
//! path first, as a world-writable directory or a symbolic link to one, and read every lease
//! that lands there. [`ensure_private_dir`] therefore creates the directory itself (`0700`)
//! when it is missing, and otherwise accepts it only when, looked at **without following a
//! link**, it is a directory owned by the worker's effective user that neither group nor
//! others can write to (what lands in it is the worker's alone to place; each lease below it
//! is `0700` itself). [`default_root`] prefers the user's private runtime directory
//! (`$XDG_RUNTIME_DIR`) to the shared temporary one.

use std::fmt;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why a directory cannot be used as a private root. Its message names the path, what is
/// wrong and the fix.
#[derive(Debug)]
#[non_exhaustive]
pub struct PrivateDirError {
    /// The directory.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: PrivateDirProblem,
}

/// What is wrong with a would-be private directory.
#[derive(Debug)]
#[non_exhaustive]
pub enum PrivateDirProblem {
    /// A symbolic link (never followed: it may point where another user reads).
    Symlink,
    /// Something other than a directory.
    NotADirectory,
    /// Owned by another user (who made it first, or can change it).
    OtherOwner {
        /// The owner's uid.
        uid: u32,
    },
    /// Group or others can write to it (`mode` is the permission bits).
    Shared {
        /// The permission bits.
        mode: u32,
    },
    /// It could not be created or inspected.
    Io(io::Error),
}

impl fmt::Display for PrivateDirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.problem {
            PrivateDirProblem::Symlink => write!(
                f,
                "{path} is a symbolic link, not a private directory; remove it, or choose \
                 a root of your own"
            ),
            PrivateDirProblem::NotADirectory => {
                write!(f, "{path} is not a directory; remove it, or choose a root of your own")
            }
            PrivateDirProblem::OtherOwner { uid } => write!(
                f,
                "{path} is owned by another user (uid {uid}), who can read what is stored \
                 there; remove it, or choose a root of your own"
            ),
            PrivateDirProblem::Shared { mode } => write!(
                f,
                "{path} can be written by other users (mode {mode:o}); run `chmod 700` on \
                 it, or choose a root of your own"
            ),
            PrivateDirProblem::Io(e) => write!(f, "{path} cannot be created or inspected: {e}"),
        }
    }
}

impl std::error::Error for PrivateDirError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            PrivateDirProblem::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Makes sure `path` is a private directory of this process's effective user: creates it
/// (and missing parents) with mode `0700` when it does not exist; then checks, without
/// following a link, that it is a directory, owned by the effective user, that group and
/// others cannot write to. See the module docs.
pub fn ensure_private_dir(path: &Path) -> Result<(), PrivateDirError> {
    let fail = |problem| PrivateDirError { path: path.to_path_buf(), problem };
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent).map_err(|e| fail(PrivateDirProblem::Io(e)))?;
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(PrivateDirProblem::Io(e))),
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| fail(PrivateDirProblem::Io(e)))?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(fail(PrivateDirProblem::Symlink));
    }
    if !kind.is_dir() {
        return Err(fail(PrivateDirProblem::NotADirectory));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(fail(PrivateDirProblem::OtherOwner { uid: meta.uid() }));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(fail(PrivateDirProblem::Shared { mode }));
    }
    Ok(())
}

/// The default place of a local provider's private root named `name`:
/// `$XDG_RUNTIME_DIR/<name>` when `XDG_RUNTIME_DIR` names a private directory of this user
/// (see [`ensure_private_dir`]), else `<temporary directory>/<name>-<uid>` (which
/// [`ensure_private_dir`] refuses if another user made it first).
pub fn default_root(name: &str) -> PathBuf {
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        let runtime = PathBuf::from(runtime);
        if runtime.is_absolute() && is_private(&runtime) {
            return runtime.join(name);
        }
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("{name}-{uid}"))
}

/// True when `path` already is a private directory of this user (nothing is created).
fn is_private(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        // SAFETY: geteuid has no preconditions and cannot fail.
        m.file_type().is_dir() && m.uid() == unsafe { libc::geteuid() } && m.mode() & 0o022 == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_a_missing_root_private_and_accepts_it_again() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("a/b/root");
        ensure_private_dir(&root).unwrap();
        let meta = std::fs::symlink_metadata(&root).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        ensure_private_dir(&root).unwrap();
    }

    #[test]
    fn refuses_a_shared_directory_a_link_and_a_file_naming_the_path_and_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_private_dir(&shared).unwrap_err();
        assert!(matches!(e.problem, PrivateDirProblem::Shared { mode: 0o777 }), "{e:?}");
        let text = e.to_string();
        assert!(text.contains(&shared.display().to_string()) && text.contains("chmod 700"));

        let private = tmp.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        let e = ensure_private_dir(&link).unwrap_err();
        assert!(matches!(e.problem, PrivateDirProblem::Symlink), "not followed: {e:?}");

        let file = tmp.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(matches!(
            ensure_private_dir(&file).unwrap_err().problem,
            PrivateDirProblem::NotADirectory
        ));
    }

    #[test]
    fn the_default_root_is_per_user_and_prefers_the_runtime_directory() {
        let root = default_root("x-provider");
        let name = root.file_name().unwrap().to_string_lossy().into_owned();
        match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
            Some(dir) if is_private(&dir) => assert_eq!(root, dir.join("x-provider")),
            // SAFETY: geteuid has no preconditions.
            _ => assert_eq!(name, format!("x-provider-{}", unsafe { libc::geteuid() })),
        }
    }
}
