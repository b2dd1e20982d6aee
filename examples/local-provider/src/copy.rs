//! Bounded, atomic file and directory copies for sync mappings.
//!
//! - **Files are atomic-replace.** A file is staged as `<dir>/.paperclip-upload-<random>` in the
//!   target's own directory, created `0600` (so never readable by others), streamed through a
//!   [`COPY_BUF`]-byte buffer, `chmod`ed to its final mode, `fsync`ed, and only then renamed over
//!   the target. There is no window in which the target is world-readable unless its final mode
//!   says so.
//! - **Directories are destroy-then-replace** (not atomic): the target is removed, recreated
//!   `0700`, filled, then given the source directory's permission bits.
//! - **Modes.** A mapping's `mode` applies to every file it writes, files inside directory
//!   mappings included; without it a file keeps its source permission bits. Only the
//!   permission bits (`0o777`) are ever applied: setuid, setgid and sticky never are.
//!   Directories keep their source's bits masked by [`CopyOptions::dir_mode_mask`] (a syncOut
//!   never gives a host directory setgid, sticky or world-writable bits from the sandbox).
//! - **Symlinks** follow tar's `-h`: when not following, a link is recreated as a link (atomically,
//!   like a file) and never entered; when following, its target is copied. Following refuses
//!   dangling links and directory cycles, and, with [`CopyOptions::links_confined_to`], any
//!   link that resolves outside that directory (a syncOut must not read host files through a
//!   link planted in the lease).
//! - **Excludes** ([`crate::glob::Excludes`]) apply to paths relative to the mapping root and to
//!   basenames; an excluded directory is skipped whole.
//! - Entries named `.paperclip-upload*` (reserved staging names) and special files (fifos,
//!   sockets, devices) are skipped.
//! - An abort flag is checked between entries and between buffers, so a timed-out transfer stops
//!   promptly.
//! - **Descriptors, not paths.** A mapping's two roots are looked up by path (the caller
//!   anchored them, [`crate::beneath`]) and opened; below them every entry is named relative
//!   to its directory's descriptor (`openat`, `fstatat`, `mkdirat`, `renameat`, `readlinkat`,
//!   `getdents`, through `rustix`'s safe wrappers), so a deep tree costs one name lookup per
//!   entry, never a walk from the root, and an entry swapped for a symlink mid-copy is never
//!   followed (`O_NOFOLLOW` on every open). A link that *is* followed is resolved, checked
//!   against [`CopyOptions::links_confined_to`], and its target then opened beneath that
//!   directory without following any symlink on the way, so a component swapped for a link
//!   after the check makes the copy fail rather than lead out. Sources are opened
//!   `O_NONBLOCK` (cleared once they prove regular files), so a fifo swapped in is skipped
//!   (a tree) or refused (a file mapping) rather than waited on. One [`COPY_BUF`] buffer
//!   serves the whole mapping.

use std::ffi::{CStr, OsStr};
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};

use crate::beneath::{self, open_dir, Anchor, Resolve};
use crate::error::{ErrorKind, LocalError, Result};
use crate::glob::Excludes;

/// The copy buffer size: memory per transfer stays bounded by it.
pub const COPY_BUF: usize = 256 * 1024;

/// The reserved prefix of staging names.
pub const STAGING_PREFIX: &str = ".paperclip-upload";

/// How one mapping is copied.
#[derive(Debug, Clone, Copy)]
pub struct CopyOptions<'a> {
    /// Permission bits for every file written (`None`: keep the source's).
    pub mode: Option<u32>,
    /// Exclude patterns.
    pub excludes: &'a Excludes,
    /// Copy the targets of symlinks instead of the links (tar `-h`).
    pub follow_symlinks: bool,
    /// When following links, refuse those that resolve outside this directory.
    pub links_confined_to: Option<&'a Path>,
    /// Set to stop the copy; it then fails with [`ErrorKind::Timeout`].
    pub abort: &'a AtomicBool,
    /// The bits of a source directory's mode its copy may get (at most `0o777`).
    pub dir_mode_mask: u32,
}

/// The mode a copied file gets: the mapping's, or the source's, permission bits only.
fn file_mode(opts: &CopyOptions<'_>, source_mode: u32) -> u32 {
    opts.mode.unwrap_or(source_mode) & 0o777
}

/// What a mapping transferred.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Files and symlinks written.
    pub files: u64,
    /// Bytes of file content written.
    pub bytes: u64,
}

impl std::ops::AddAssign for Transfer {
    fn add_assign(&mut self, rhs: Self) {
        self.files += rhs.files;
        self.bytes += rhs.bytes;
    }
}

fn check_abort(opts: &CopyOptions<'_>) -> Result<()> {
    if opts.abort.load(Ordering::Relaxed) {
        Err(LocalError::new(ErrorKind::Timeout, "the transfer ran out of time"))
    } else {
        Ok(())
    }
}

/// An I/O error of `what`, which names the file by its role in the mapping (the sync source
/// or destination, an entry of it): the message never quotes `path`, which the host chose; the
/// worker's operator finds it in the debug log.
fn io_at(what: &str, path: &Path, e: impl Into<std::io::Error>) -> LocalError {
    let e = e.into();
    tracing::debug!(path = %path.display(), error = %e, "sync I/O error: {what}");
    LocalError::io(what, e)
}

/// A fresh staging name: the reserved prefix and 64 random bits.
fn staging_name() -> String {
    format!("{STAGING_PREFIX}-{}", crate::random_hex(8))
}

/// The path that names the open directory `dir` itself (for the rare path-based steps:
/// following a symlink, the test hook).
fn fd_path(dir: BorrowedFd<'_>) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()))
}

/// A test hook called with a staged path.
#[cfg(test)]
pub(crate) type StageHook = Box<dyn Fn(&Path)>;

#[cfg(test)]
thread_local! {
    /// Test hook: called with the staged path just before the rename.
    pub(crate) static BEFORE_RENAME: std::cell::RefCell<Option<StageHook>> =
        const { std::cell::RefCell::new(None) };
}

/// A directory a copy writes into: its descriptor, and the path it is reported by.
struct Target<'a> {
    dir: BorrowedFd<'a>,
    shown: &'a Path,
}

/// Removes a staged entry unless disarmed.
struct StagedGuard<'a> {
    dir: BorrowedFd<'a>,
    name: Option<&'a str>,
}

impl Drop for StagedGuard<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = rfs::unlinkat(self.dir, name, AtFlags::empty());
        }
    }
}

/// Opens the regular file `name` of `dir` for reading, never through a symlink at the last
/// component and never blocking on a fifo swapped in; anything but a regular file is `None`.
fn open_source(
    dir: BorrowedFd<'_>,
    name: impl rustix::path::Arg,
) -> std::io::Result<Option<(File, u32)>> {
    let flags =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW;
    let fd = rfs::openat(dir, name, flags, Mode::empty())?;
    let st = rfs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    // Some filesystems (FUSE, network) honour O_NONBLOCK on regular files too.
    rfs::fcntl_setfl(&fd, OFlags::empty())?;
    Ok(Some((File::from(fd), st.st_mode)))
}

/// Stream `input` into a staged file in `to`, set `mode`, fsync, rename over `name`.
fn replace_file(
    mut input: File,
    shown_src: &Path,
    to: &Target<'_>,
    name: &OsStr,
    mode: u32,
    opts: &CopyOptions<'_>,
    buf: &mut [u8],
) -> Result<u64> {
    let staged = staging_name();
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let shown_dst = || to.shown.join(name);
    let fd = rfs::openat(to.dir, staged.as_str(), flags, Mode::from_raw_mode(0o600))
        .map_err(|e| io_at("stage a file of the sync destination", &shown_dst(), e))?;
    let mut guard = StagedGuard { dir: to.dir, name: Some(&staged) };
    let mut out = File::from(fd);
    let mut total = 0u64;
    loop {
        check_abort(opts)?;
        let n = match input.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_at("read a file of the sync source", shown_src, e)),
        };
        out.write_all(&buf[..n])
            .map_err(|e| io_at("write a file of the sync destination", &shown_dst(), e))?;
        total += n as u64;
    }
    rfs::fchmod(&out, Mode::from_raw_mode(mode))
        .map_err(|e| io_at("chmod a file of the sync destination", &shown_dst(), e))?;
    out.sync_all().map_err(|e| io_at("fsync a file of the sync destination", &shown_dst(), e))?;
    drop(out);
    #[cfg(test)]
    BEFORE_RENAME.with(|h| {
        if let Some(h) = h.borrow().as_ref() {
            h(&fd_path(to.dir).join(&staged))
        }
    });
    rfs::renameat(to.dir, staged.as_str(), to.dir, name)
        .map_err(|e| io_at("rename onto a file of the sync destination", &shown_dst(), e))?;
    guard.name = None;
    Ok(total)
}

/// Recreate the symlink `from_name` of `from` as `name` in `to`, atomically.
fn replace_link(
    (from, from_name): (BorrowedFd<'_>, &OsStr),
    shown_src: &Path,
    to: &Target<'_>,
    name: &OsStr,
) -> Result<()> {
    let link = rfs::readlinkat(from, from_name, Vec::new())
        .map_err(|e| io_at("read a symlink of the sync source", shown_src, e))?;
    let staged = staging_name();
    rfs::symlinkat(link.as_c_str(), to.dir, staged.as_str())
        .map_err(|e| io_at("stage a symlink of the sync destination", &to.shown.join(name), e))?;
    let mut guard = StagedGuard { dir: to.dir, name: Some(&staged) };
    rfs::renameat(to.dir, staged.as_str(), to.dir, name).map_err(|e| {
        io_at("rename onto a symlink of the sync destination", &to.shown.join(name), e)
    })?;
    guard.name = None;
    Ok(())
}

/// Resolve a symlink that is to be followed, enforcing [`CopyOptions::links_confined_to`].
fn follow_link(
    path: &Path,
    shown: &Path,
    opts: &CopyOptions<'_>,
) -> Result<(PathBuf, fs::Metadata)> {
    let resolved = path
        .canonicalize()
        .map_err(|e| io_at("follow a symlink of the sync source (dangling?)", shown, e))?;
    if let Some(root) = opts.links_confined_to {
        if !resolved.starts_with(root) {
            return Err(LocalError::new(
                ErrorKind::Confinement,
                "a symlink of the sync source leads outside the lease directory",
            ));
        }
    }
    let meta = fs::metadata(&resolved)
        .map_err(|e| io_at("stat the target of a symlink of the sync source", shown, e))?;
    Ok((resolved, meta))
}

/// The error of opening a followed link's target: a refusal means something on its resolved
/// path became a symlink (or left the confining directory) after [`follow_link`] checked it.
fn followed_error(shown: &Path, e: std::io::Error) -> LocalError {
    if beneath::is_refusal(&e) {
        LocalError::new(
            ErrorKind::Confinement,
            "a symlink of the sync source changed while it was followed",
        )
    } else {
        io_at("open the target of a symlink of the sync source", shown, e)
    }
}

/// Opens the directory `dir` (a followed link's canonical target, checked by
/// [`follow_link`]): with [`CopyOptions::links_confined_to`], beneath that directory without
/// following any symlink on the way.
fn open_followed_dir(dir: &Path, opts: &CopyOptions<'_>) -> std::io::Result<OwnedFd> {
    match opts.links_confined_to {
        Some(root) => {
            let rel = dir
                .strip_prefix(root)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EXDEV))?;
            Ok(Anchor::open(root)?.dir_beneath(rel, Resolve::NoSymlinks, false)?.into_fd())
        }
        None => open_dir(rfs::CWD, dir, true),
    }
}

/// Opens the regular file `file` (a followed link's canonical target) through its directory,
/// opened by [`open_followed_dir`].
fn open_followed_file(file: &Path, opts: &CopyOptions<'_>) -> std::io::Result<Option<(File, u32)>> {
    let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    open_source(open_followed_dir(parent, opts)?.as_fd(), name)
}

/// Remove whatever is at `path` (a directory tree, a file or a link; never following a link).
pub fn remove_existing(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path)
            .map_err(|e| io_at("remove the previous sync destination", path, e)),
        Ok(_) => fs::remove_file(path)
            .map_err(|e| io_at("remove the previous sync destination", path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_at("inspect the previous sync destination", path, e)),
    }
}

fn create_parents(dst: &Path) -> Result<()> {
    if let Some(parent) = dst.parent() {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(parent).map_err(|e| {
            io_at("create the parent directories of the sync destination", parent, e)
        })?;
    }
    Ok(())
}

/// The parent directory of `path` (made first when `create`), opened, and `path`'s last
/// component.
fn open_parent(path: &Path, create: bool) -> Result<(OwnedFd, &OsStr)> {
    let name =
        path.file_name().ok_or_else(|| LocalError::invalid("the path has no last component"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if create {
        create_parents(path)?;
    }
    let fd = open_dir(rfs::CWD, parent, false).map_err(|e| {
        io_at("open the parent directory of the sync source or destination", parent, e)
    })?;
    Ok((fd, name))
}

/// Copy a `kind: "file"` mapping: `src` (a file, or a symlink) replaces `dst` atomically.
pub fn copy_file_mapping(src: &Path, dst: &Path, opts: &CopyOptions<'_>) -> Result<Transfer> {
    check_abort(opts)?;
    let name = src.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if opts.excludes.is_excluded(name) {
        return Ok(Transfer::default());
    }
    let meta = fs::symlink_metadata(src).map_err(|e| io_at("stat the sync source", src, e))?;
    let (parent, dst_name) = open_parent(dst, true)?;
    let to = Target { dir: parent.as_fd(), shown: dst.parent().unwrap_or(dst) };
    let not_file =
        || LocalError::invalid("the source of a kind \"file\" mapping is not a regular file");
    let opened = if meta.file_type().is_symlink() {
        if !opts.follow_symlinks {
            let (src_parent, src_name) = open_parent(src, false)?;
            replace_link((src_parent.as_fd(), src_name), src, &to, dst_name)?;
            return Ok(Transfer { files: 1, bytes: 0 });
        }
        let (resolved, meta) = follow_link(src, src, opts)?;
        if !meta.is_file() {
            return Err(not_file());
        }
        open_followed_file(&resolved, opts).map_err(|e| followed_error(src, e))?
    } else if meta.is_file() {
        open_source(rfs::CWD, src).map_err(|e| io_at("open the sync source", src, e))?
    } else {
        return Err(not_file());
    };
    let (input, source_mode) = opened.ok_or_else(not_file)?;
    let mut buf = vec![0u8; COPY_BUF];
    let bytes =
        replace_file(input, src, &to, dst_name, file_mode(opts, source_mode), opts, &mut buf)?;
    Ok(Transfer { files: 1, bytes })
}

/// Copy a `kind: "directory"` mapping: `dst` is removed, then rebuilt from the tree at `src`.
pub fn copy_dir_mapping(src: &Path, dst: &Path, opts: &CopyOptions<'_>) -> Result<Transfer> {
    check_abort(opts)?;
    let root_meta = fs::metadata(src).map_err(|e| io_at("stat the sync source", src, e))?;
    if !root_meta.is_dir() {
        return Err(LocalError::invalid(
            "the source of a kind \"directory\" mapping is not a directory",
        ));
    }
    let src_canon = src.canonicalize().map_err(|e| io_at("resolve the sync source", src, e))?;
    // An anchored target (`/proc/self/fd/<n>/<name>`) is compared by its real path.
    let dst_real = match (dst.parent().and_then(|p| p.canonicalize().ok()), dst.file_name()) {
        (Some(parent), Some(name)) => parent.join(name),
        _ => dst.to_path_buf(),
    };
    if dst_real.starts_with(&src_canon) || src_canon.starts_with(&dst_real) {
        return Err(LocalError::invalid("a directory mapping's destination overlaps its source"));
    }
    remove_existing(dst)?;
    create_parents(dst)?;
    fs::DirBuilder::new()
        .mode(0o700)
        .create(dst)
        .map_err(|e| io_at("create the sync destination", dst, e))?;
    // From here on, both trees are reached through descriptors only: if a process in the
    // lease swaps a directory for a symlink, nothing follows that.
    let dst_dir =
        open_dir(rfs::CWD, dst, true).map_err(|e| io_at("open the sync destination", dst, e))?;
    // The source root may itself be reached through a symlink (a host path, or an anchor's
    // `/proc/self/fd/<n>`): it was resolved and checked above.
    let src_dir =
        open_dir(rfs::CWD, src, false).map_err(|e| io_at("open the sync source", src, e))?;
    let root = rfs::fstat(&src_dir).map_err(|e| io_at("stat the sync source", src, e))?;
    let mut total = Transfer::default();
    let mut walk = Walk {
        opts,
        ancestors: vec![(root.st_dev, root.st_ino)],
        total: &mut total,
        buf: vec![0u8; COPY_BUF],
        listing: vec![std::mem::MaybeUninit::uninit(); LISTING_BUF],
        src_root: src,
        dst_root: dst,
    };
    walk.tree(src_dir.as_fd(), dst_dir.as_fd(), "")?;
    rfs::fchmod(&dst_dir, Mode::from_raw_mode(root.st_mode & opts.dir_mode_mask & 0o777))
        .map_err(|e| io_at("chmod the sync destination", dst, e))?;
    Ok(total)
}

/// One directory mapping's walk.
struct Walk<'a, 'o> {
    opts: &'a CopyOptions<'o>,
    /// `(dev, ino)` of the directories entered, to refuse cycles when following links.
    ancestors: Vec<(u64, u64)>,
    total: &'a mut Transfer,
    buf: Vec<u8>,
    /// The buffer directories are listed through.
    listing: Vec<std::mem::MaybeUninit<u8>>,
    src_root: &'a Path,
    dst_root: &'a Path,
}

/// Bytes of one `getdents64` read (an entry takes at most 280).
const LISTING_BUF: usize = 8 * 1024;

/// The entries of the directory open as `dir` (name, and type from the directory itself), in
/// name order. Reads the descriptor itself (each is listed once, from offset 0), so a
/// directory that may be read but not searched lists as before.
fn list(
    dir: BorrowedFd<'_>,
    buf: &mut [std::mem::MaybeUninit<u8>],
) -> std::io::Result<Vec<(std::ffi::CString, FileType)>> {
    let mut entries = Vec::new();
    let mut raw = rfs::RawDir::new(dir, buf);
    while let Some(entry) = raw.next() {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        entries.push((name.to_owned(), entry.file_type()));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

impl Walk<'_, '_> {
    fn tree(&mut self, from: BorrowedFd<'_>, to: BorrowedFd<'_>, rel: &str) -> Result<()> {
        let shown_dir =
            |root: &Path| if rel.is_empty() { root.to_path_buf() } else { root.join(rel) };
        let entries = list(from, &mut self.listing).map_err(|e| {
            io_at("list a directory of the sync source", &shown_dir(self.src_root), e)
        })?;
        let dst_shown = shown_dir(self.dst_root);
        let target = Target { dir: to, shown: &dst_shown };
        for (cname, kind) in entries {
            check_abort(self.opts)?;
            let name = OsStr::from_bytes(cname.to_bytes());
            let Some(name_str) = name.to_str() else {
                tracing::warn!(dir = %shown_dir(self.src_root).display(), "skipping an entry whose name is not UTF-8");
                continue;
            };
            if name_str.starts_with(STAGING_PREFIX) {
                continue;
            }
            let child_rel =
                if rel.is_empty() { name_str.to_string() } else { format!("{rel}/{name_str}") };
            if self.opts.excludes.is_excluded(&child_rel) {
                continue;
            }
            let shown = self.src_root.join(&child_rel);
            let kind = match kind {
                FileType::Unknown => {
                    let st = rfs::statat(from, cname.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                        .map_err(|e| io_at("stat an entry of the sync source", &shown, e))?;
                    FileType::from_raw_mode(st.st_mode)
                }
                known => known,
            };
            match kind {
                FileType::Symlink if !self.opts.follow_symlinks => {
                    replace_link((from, name), &shown, &target, name)?;
                    self.total.files += 1;
                }
                FileType::Symlink => self.followed(from, cname.as_c_str(), &target, &child_rel)?,
                FileType::Directory => {
                    let from_dir = open_dir(from, cname.as_c_str(), true)
                        .map_err(|e| io_at("open a directory of the sync source", &shown, e))?;
                    self.dir(from_dir, &target, name, &child_rel)?;
                }
                FileType::RegularFile => {
                    match open_source(from, cname.as_c_str())
                        .map_err(|e| io_at("open a file of the sync source", &shown, e))?
                    {
                        Some((input, mode)) => self.file(input, &shown, &target, name, mode)?,
                        None => {
                            tracing::debug!(path = %shown.display(), "skipping an entry that is no longer a regular file")
                        }
                    }
                }
                _ => tracing::debug!(path = %shown.display(), "skipping a special file"),
            }
        }
        Ok(())
    }

    fn file(
        &mut self,
        input: File,
        shown: &Path,
        to: &Target<'_>,
        name: &OsStr,
        mode: u32,
    ) -> Result<()> {
        let mode = file_mode(self.opts, mode);
        self.total.bytes += replace_file(input, shown, to, name, mode, self.opts, &mut self.buf)?;
        self.total.files += 1;
        Ok(())
    }

    /// A symlink that is followed: its target is copied (a directory is entered by its
    /// resolved path, which [`follow_link`] checked).
    fn followed(
        &mut self,
        from: BorrowedFd<'_>,
        cname: &CStr,
        to: &Target<'_>,
        rel: &str,
    ) -> Result<()> {
        let shown = self.src_root.join(rel);
        let name = OsStr::from_bytes(cname.to_bytes());
        let (resolved, meta) = follow_link(&fd_path(from).join(name), &shown, self.opts)?;
        if meta.is_dir() {
            let from_dir =
                open_followed_dir(&resolved, self.opts).map_err(|e| followed_error(&shown, e))?;
            self.dir(from_dir, to, name, rel)
        } else if meta.is_file() {
            match open_followed_file(&resolved, self.opts).map_err(|e| followed_error(&shown, e))? {
                Some((input, mode)) => self.file(input, &shown, to, name, mode),
                None => {
                    tracing::debug!(path = %shown.display(), "skipping a link target that is no longer a regular file");
                    Ok(())
                }
            }
        } else {
            tracing::debug!(path = %shown.display(), "skipping a special file");
            Ok(())
        }
    }

    /// Copy the directory open as `from` into a new directory `name` of `to`.
    fn dir(&mut self, from: OwnedFd, to: &Target<'_>, name: &OsStr, rel: &str) -> Result<()> {
        let st = rfs::fstat(&from).map_err(|e| {
            io_at("stat a directory of the sync source", &self.src_root.join(rel), e)
        })?;
        let id = (st.st_dev, st.st_ino);
        if self.ancestors.contains(&id) {
            return Err(LocalError::invalid(
                "a followed symlink makes a directory cycle in the sync source",
            ));
        }
        let dst_shown = self.dst_root.join(rel);
        rfs::mkdirat(to.dir, name, Mode::from_raw_mode(0o700))
            .map_err(|e| io_at("create a directory of the sync destination", &dst_shown, e))?;
        let to_dir = open_dir(to.dir, name, true)
            .map_err(|e| io_at("open a directory of the sync destination", &dst_shown, e))?;
        self.ancestors.push(id);
        self.tree(from.as_fd(), to_dir.as_fd(), rel)?;
        self.ancestors.pop();
        let mode = st.st_mode & self.opts.dir_mode_mask & 0o777;
        rfs::fchmod(&to_dir, Mode::from_raw_mode(mode))
            .map_err(|e| io_at("chmod a directory of the sync destination", &dst_shown, e))
    }
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
