//! Path confinement to a lease directory.
//!
//! Every path the host names inside a lease (an execute `cwd`, a sync target or source, a
//! post-upload `cwd`) goes through [`confine`] before it is used. A path is refused when:
//!
//! - it is not absolute;
//! - it has a `..` component (refused outright, even when it would stay inside);
//! - lexically, it is not the lease directory or below it;
//! - its deepest existing ancestor, once symlinks are resolved, is outside the lease directory
//!   (a symlink inside the lease that leads out);
//! - an ancestor is a dangling symlink (creating directories through it would land wherever it
//!   points).
//!
//! The returned path has the lease directory's canonical form as prefix and no symlink in its
//! existing part. This check gives clear refusals early; it is not what makes a sync or a
//! command safe against a process that changes the lease while the request runs: the path is
//! then opened beneath the lease's directory descriptor without following symlinks
//! ([`crate::beneath`]).

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{ErrorKind, LocalError, Result};

/// Whether the last component of the path may be followed if it is a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// The path is read or entered: a symlink at the leaf is resolved and must stay inside.
    Follow,
    /// The path is replaced (renamed over, removed): a symlink at the leaf is the object itself,
    /// so only its parent is resolved.
    NoFollow,
}

/// A refusal names the rule, never the path (a value the host sent); the path goes to the
/// worker's debug log (stderr) only.
fn refuse(path: &Path, why: &str) -> LocalError {
    tracing::debug!(path = %path.display(), "confinement refused a path: it {why}");
    LocalError::new(ErrorKind::Confinement, format!("the path {why}"))
}

/// An I/O error while confining a path: the step, not the path (logged at debug level only).
fn io_at(step: &str, path: &Path, e: io::Error) -> LocalError {
    tracing::debug!(path = %path.display(), error = %e, "confinement: {step} failed");
    LocalError::io(step, e)
}

/// Confine `path` to `root` (see the module docs). `root` must exist.
pub fn confine(root: &Path, path: &Path, leaf: Leaf) -> Result<PathBuf> {
    let root_canon =
        root.canonicalize().map_err(|e| io_at("resolving the lease directory", root, e))?;
    if !path.is_absolute() {
        return Err(refuse(path, "is not absolute"));
    }
    let mut normal = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => return Err(refuse(path, "contains a `..` component")),
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    let rel = normal
        .strip_prefix(&root_canon)
        .or_else(|_| normal.strip_prefix(root))
        .map_err(|_| refuse(path, "is outside the lease directory"))?
        .to_path_buf();
    let candidate = root_canon.join(&rel);
    let (check, leaf_name) = match (leaf, rel.file_name()) {
        (Leaf::NoFollow, Some(name)) => {
            (root_canon.join(rel.parent().unwrap_or(Path::new(""))), Some(name))
        }
        _ => (candidate.clone(), None),
    };
    let resolved = resolve_existing_prefix(&root_canon, &check, path)?;
    Ok(match leaf_name {
        Some(name) => resolved.join(name),
        None => resolved,
    })
}

/// Resolve the deepest existing ancestor of `check` (which starts with `root_canon`), verify it
/// stays under `root_canon`, and re-append the components that do not exist yet.
fn resolve_existing_prefix(root_canon: &Path, check: &Path, original: &Path) -> Result<PathBuf> {
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cur = check;
    loop {
        match std::fs::symlink_metadata(cur) {
            Ok(_) => {
                let canon = cur.canonicalize().map_err(|e| {
                    if e.kind() == io::ErrorKind::NotFound {
                        refuse(original, "goes through a dangling symlink")
                    } else {
                        io_at("resolving the path", cur, e)
                    }
                })?;
                if !canon.starts_with(root_canon) {
                    return Err(refuse(original, "escapes the lease directory through a symlink"));
                }
                let mut out = canon;
                for part in missing.iter().rev() {
                    out.push(part);
                }
                return Ok(out);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (cur.parent(), cur.file_name()) else {
                    return Err(refuse(original, "has no existing ancestor"));
                };
                if !parent.starts_with(root_canon) && cur != root_canon {
                    return Err(refuse(original, "is outside the lease directory"));
                }
                missing.push(name);
                cur = parent;
            }
            Err(e) => return Err(io_at("inspecting the path", cur, e)),
        }
    }
}

/// True when `path` (as returned by [`confine`]) is the lease directory itself.
pub fn is_lease_root(root: &Path, path: &Path) -> bool {
    root.canonicalize().map(|r| r == path).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let lease = tmp.path().join("lease");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(lease.join("ws/sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        (tmp, lease, outside)
    }

    #[test]
    fn accepts_paths_inside_existing_or_not() {
        let (_t, lease, _) = setup();
        let canon = lease.canonicalize().unwrap();
        assert_eq!(
            confine(&lease, &lease.join("ws/sub"), Leaf::Follow).unwrap(),
            canon.join("ws/sub")
        );
        assert_eq!(
            confine(&lease, &lease.join("ws/new/deeper/file"), Leaf::NoFollow).unwrap(),
            canon.join("ws/new/deeper/file")
        );
        assert_eq!(
            confine(&lease, &lease.join("./ws/./x"), Leaf::Follow).unwrap(),
            canon.join("ws/x")
        );
        assert_eq!(confine(&lease, &lease, Leaf::Follow).unwrap(), canon);
        assert!(is_lease_root(&lease, &canon));
    }

    #[test]
    fn refuses_dotdot_relative_and_outside_paths() {
        let (_t, lease, outside) = setup();
        for bad in [
            lease.join("ws/../ws"),
            lease.join("../outside"),
            PathBuf::from("ws/sub"),
            outside.clone(),
        ] {
            let err = confine(&lease, &bad, Leaf::Follow).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Confinement, "{bad:?}");
            // The rule is named, the path (a value the host sent) is not.
            let text = err.to_string();
            assert!(!text.contains('/'), "{text}");
        }
        // A sibling whose name merely starts with the lease's name is outside.
        let sibling = PathBuf::from(format!("{}-other", lease.display()));
        assert!(confine(&lease, &sibling, Leaf::Follow).is_err());
    }

    #[test]
    fn refuses_symlink_escapes() {
        let (_t, lease, outside) = setup();
        symlink(&outside, lease.join("ws/out")).unwrap();
        symlink(outside.join("missing"), lease.join("ws/dangling")).unwrap();
        symlink(lease.join("ws/sub"), lease.join("ws/inner")).unwrap();
        let e = confine(&lease, &lease.join("ws/out/file"), Leaf::NoFollow).unwrap_err();
        assert!(e.message.contains("symlink"), "{e}");
        assert!(confine(&lease, &lease.join("ws/out"), Leaf::Follow).is_err());
        assert!(confine(&lease, &lease.join("ws/out/a/b"), Leaf::Follow).is_err());
        assert!(confine(&lease, &lease.join("ws/dangling/x"), Leaf::NoFollow).is_err());
        // The link itself may be replaced: only its parent is resolved.
        let canon = lease.canonicalize().unwrap();
        assert_eq!(
            confine(&lease, &lease.join("ws/out"), Leaf::NoFollow).unwrap(),
            canon.join("ws/out")
        );
        // A link that stays inside resolves to its target.
        assert_eq!(
            confine(&lease, &lease.join("ws/inner/f"), Leaf::NoFollow).unwrap(),
            canon.join("ws/sub/f")
        );
    }

    #[test]
    fn accepts_the_lease_through_a_symlinked_root() {
        let (t, lease, _) = setup();
        let alias = t.path().join("alias");
        symlink(&lease, &alias).unwrap();
        let canon = lease.canonicalize().unwrap();
        assert_eq!(confine(&alias, &alias.join("ws"), Leaf::Follow).unwrap(), canon.join("ws"));
        assert_eq!(confine(&alias, &lease.join("ws"), Leaf::Follow).unwrap(), canon.join("ws"));
    }
}
