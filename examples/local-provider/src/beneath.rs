//! Race-free resolution inside a lease: directory descriptors opened with `openat2`
//! (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), and paths anchored on them.
//!
//! [`crate::confine`] checks a path against the lease, but a check on a path is only as good
//! as the moment it ran: a command running in the lease can turn a checked directory into a
//! symlink to somewhere else before the sync writes through it. So every sync target (syncIn),
//! sync source (syncOut) and execute `cwd` is then opened from the lease's own directory
//! descriptor, one resolution in the kernel that may not leave the lease and may not follow a
//! symlink at any component ([`Anchor::dir_beneath`]; an execute `cwd` may follow symlinks
//! that stay inside, [`Resolve::Beneath`]). The copy and the command then start from that
//! descriptor's `/proc/self/fd/<n>` path ([`Anchor::path`]): the kernel resolves that to the
//! opened directory itself, never again through the names that led to it. Below it the copy
//! works on descriptors alone ([`crate::copy`]): every entry is opened, created (`O_EXCL`),
//! renamed or entered relative to its directory's descriptor, never through a symlink at the
//! last component (`O_NOFOLLOW`). A directory flipped to a symlink mid-sync makes the sync
//! fail; it cannot make it write or read outside.
//!
//! Chosen over `cap-std`: its `Dir` follows symlinks that stay inside the sandbox, while a
//! sync must not follow any (a `followSymlinks` syncOut resolves each link itself, checks it,
//! then opens its target through [`Anchor::dir_beneath`] so that nothing on the way can have
//! become a link since). On kernels without `openat2` (before 5.6) the walk
//! falls back to one `openat(O_NOFOLLOW | O_DIRECTORY)` per component, which is equivalent.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// How symlinks met while resolving are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// Never follow a symlink, at any component (sync paths).
    NoSymlinks,
    /// Follow symlinks that stay inside (an execute `cwd`).
    Beneath,
}

/// An open directory that paths are resolved against.
#[derive(Debug)]
pub struct Anchor {
    fd: OwnedFd,
}

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Only plain names: no root, no `.`/`..` (the caller confined the path already).
fn names(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "not a relative path")),
        })
        .collect()
}

impl Anchor {
    /// Opens the directory at `path` (the lease directory: trusted, the worker made it).
    pub fn open(path: &Path) -> io::Result<Anchor> {
        let file = File::open(path)?;
        if !file.metadata()?.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        Ok(Anchor { fd: file.into() })
    }

    /// The path naming this directory itself (`/proc/self/fd/<n>`); join entry names to it.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Opens the directory `rel` below this one without leaving it (and, with
    /// [`Resolve::NoSymlinks`], without following any symlink). With `create`, missing
    /// directories are made (`0700`) on the way, each through its parent's descriptor.
    pub fn dir_beneath(&self, rel: &Path, resolve: Resolve, create: bool) -> io::Result<Anchor> {
        let parts = names(rel)?;
        if parts.is_empty() {
            return self.reopen();
        }
        if !create {
            if let Some(result) = self.openat2_dir(rel, resolve) {
                return result;
            }
        }
        // One component at a time: create what is missing, never follow a symlink.
        let mut cur = self.reopen()?;
        for name in parts {
            let c = cstr(name)?;
            let next = match cur.child_dir_c(&c) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    // SAFETY: mkdirat with a valid descriptor and a NUL-terminated name.
                    let rc = unsafe { libc::mkdirat(cur.fd.as_raw_fd(), c.as_ptr(), 0o700) };
                    if rc != 0 {
                        let e = io::Error::last_os_error();
                        if e.kind() != io::ErrorKind::AlreadyExists {
                            return Err(e);
                        }
                    }
                    cur.child_dir_c(&c)?
                }
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) && resolve == Resolve::Beneath => {
                    // A symlink inside: let the kernel resolve the rest, beneath this lease.
                    return self.openat2_dir(rel, resolve).unwrap_or(Err(e));
                }
                other => other?,
            };
            cur = next;
        }
        Ok(cur)
    }

    /// `openat2` of a directory; `None` when the kernel does not have it.
    fn openat2_dir(&self, rel: &Path, resolve: Resolve) -> Option<io::Result<Anchor>> {
        let c = match cstr(rel.as_os_str()) {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        let mut flags = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
        if resolve == Resolve::NoSymlinks {
            flags |= libc::RESOLVE_NO_SYMLINKS;
        }
        // SAFETY: a zeroed open_how is valid; its fields are set below.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
        how.resolve = flags;
        // SAFETY: openat2 with a valid descriptor, a NUL-terminated path and a valid open_how
        // of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                // No openat2 (old kernel, or a seccomp filter that refuses it).
                Some(libc::ENOSYS) | Some(libc::EPERM) => None,
                _ => Some(Err(e)),
            };
        }
        // SAFETY: a fresh descriptor owned by nothing else.
        Some(Ok(Anchor { fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } }))
    }

    fn child_dir_c(&self, name: &CString) -> io::Result<Anchor> {
        Ok(Anchor { fd: open_dir(self.fd.as_fd(), name.as_c_str(), true)? })
    }

    fn reopen(&self) -> io::Result<Anchor> {
        Ok(Anchor { fd: self.fd.try_clone()? })
    }

    /// Sets this directory's permission bits through its descriptor.
    pub fn chmod(&self, mode: u32) -> io::Result<()> {
        // SAFETY: fchmod on a valid descriptor.
        if unsafe { libc::fchmod(self.fd.as_raw_fd(), mode as libc::mode_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The directory's metadata.
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        File::from(self.fd.try_clone()?).metadata()
    }

    /// The descriptor, for calls relative to this directory.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

impl AsFd for Anchor {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Opens the directory `name` of `dir` (`rustix::fs::CWD`: a path); `nofollow`: not
/// through a symlink at the last component.
pub fn open_dir(
    dir: std::os::fd::BorrowedFd<'_>,
    name: impl rustix::path::Arg,
    nofollow: bool,
) -> io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if nofollow {
        flags |= OFlags::NOFOLLOW;
    }
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// True when `e` is what the kernel answers for a resolution that would leave the lease or
/// follow a symlink.
pub fn is_refusal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EXDEV) | Some(libc::ELOOP) | Some(libc::ENOTDIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_beneath_and_refuses_symlinks_and_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let lease = tmp.path().join("lease");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(lease.join("a/b")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, lease.join("out")).unwrap();
        std::os::unix::fs::symlink("a", lease.join("in")).unwrap();
        let root = Anchor::open(&lease).unwrap();
        let b = root.dir_beneath(Path::new("a/b"), Resolve::NoSymlinks, false).unwrap();
        std::fs::write(b.path().join("f"), "x").unwrap();
        assert!(lease.join("a/b/f").exists());
        for rel in ["out", "out/x", "in", "in/b"] {
            let e = root.dir_beneath(Path::new(rel), Resolve::NoSymlinks, true).unwrap_err();
            assert!(is_refusal(&e), "{rel}: {e}");
        }
        assert!(!outside.join("x").exists());
        // An execute cwd may go through a symlink that stays inside, never out.
        assert!(root.dir_beneath(Path::new("in/b"), Resolve::Beneath, false).is_ok());
        let e = root.dir_beneath(Path::new("out"), Resolve::Beneath, false).unwrap_err();
        assert!(is_refusal(&e), "{e}");
        let made = root.dir_beneath(Path::new("new/deep"), Resolve::NoSymlinks, true).unwrap();
        made.chmod(0o750).unwrap();
        assert!(lease.join("new/deep").is_dir());
    }
}
