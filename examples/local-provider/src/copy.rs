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

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::beneath::Anchor;
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

fn io_at(what: &str, path: &Path, e: std::io::Error) -> LocalError {
    LocalError::io(format!("{what} {}", path.display()), e)
}

fn staging_name(dir: &Path) -> PathBuf {
    dir.join(format!("{STAGING_PREFIX}-{}", crate::random_hex(8)))
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

/// Removes a staged file unless disarmed.
struct StagedGuard(Option<PathBuf>);

impl Drop for StagedGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Stream `src` into a staged file next to `dst`, set `mode`, fsync, rename over `dst`.
fn replace_file(src: &Path, dst: &Path, mode: u32, opts: &CopyOptions<'_>) -> Result<u64> {
    let parent =
        dst.parent().ok_or_else(|| LocalError::invalid("target has no parent directory"))?;
    let mut input = File::open(src).map_err(|e| io_at("open", src, e))?;
    let staged = staging_name(parent);
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged)
        .map_err(|e| io_at("create", &staged, e))?;
    let mut guard = StagedGuard(Some(staged.clone()));
    let mut buf = vec![0u8; COPY_BUF];
    let mut total = 0u64;
    loop {
        check_abort(opts)?;
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_at("read", src, e)),
        };
        out.write_all(&buf[..n]).map_err(|e| io_at("write", &staged, e))?;
        total += n as u64;
    }
    out.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(|e| io_at("chmod", &staged, e))?;
    out.sync_all().map_err(|e| io_at("fsync", &staged, e))?;
    drop(out);
    #[cfg(test)]
    BEFORE_RENAME.with(|h| {
        if let Some(h) = h.borrow().as_ref() {
            h(&staged)
        }
    });
    fs::rename(&staged, dst).map_err(|e| io_at("rename onto", dst, e))?;
    guard.0 = None;
    Ok(total)
}

/// Recreate the symlink `src` at `dst`, atomically.
fn replace_link(src: &Path, dst: &Path) -> Result<()> {
    let target = fs::read_link(src).map_err(|e| io_at("read link", src, e))?;
    let parent =
        dst.parent().ok_or_else(|| LocalError::invalid("target has no parent directory"))?;
    let staged = staging_name(parent);
    std::os::unix::fs::symlink(&target, &staged).map_err(|e| io_at("create link", &staged, e))?;
    let mut guard = StagedGuard(Some(staged.clone()));
    fs::rename(&staged, dst).map_err(|e| io_at("rename onto", dst, e))?;
    guard.0 = None;
    Ok(())
}

/// Resolve a symlink that is to be followed, enforcing [`CopyOptions::links_confined_to`].
fn follow_link(path: &Path, opts: &CopyOptions<'_>) -> Result<fs::Metadata> {
    let resolved = path
        .canonicalize()
        .map_err(|e| LocalError::io(format!("follow symlink {} (dangling?)", path.display()), e))?;
    if let Some(root) = opts.links_confined_to {
        if !resolved.starts_with(root) {
            return Err(LocalError::new(
                ErrorKind::Confinement,
                format!("symlink {} leads outside the lease directory", path.display()),
            ));
        }
    }
    fs::metadata(&resolved).map_err(|e| io_at("stat", &resolved, e))
}

/// Remove whatever is at `path` (a directory tree, a file or a link; never following a link).
pub fn remove_existing(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(|e| io_at("remove", path, e)),
        Ok(_) => fs::remove_file(path).map_err(|e| io_at("remove", path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_at("inspect", path, e)),
    }
}

fn create_parents(dst: &Path) -> Result<()> {
    if let Some(parent) = dst.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| io_at("create directory", parent, e))?;
    }
    Ok(())
}

/// Copy a `kind: "file"` mapping: `src` (a file, or a symlink) replaces `dst` atomically.
pub fn copy_file_mapping(src: &Path, dst: &Path, opts: &CopyOptions<'_>) -> Result<Transfer> {
    check_abort(opts)?;
    let name = src.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if opts.excludes.is_excluded(name) {
        return Ok(Transfer::default());
    }
    let meta = fs::symlink_metadata(src).map_err(|e| io_at("stat", src, e))?;
    create_parents(dst)?;
    let meta = if meta.file_type().is_symlink() {
        if !opts.follow_symlinks {
            replace_link(src, dst)?;
            return Ok(Transfer { files: 1, bytes: 0 });
        }
        follow_link(src, opts)?
    } else {
        meta
    };
    if !meta.is_file() {
        return Err(LocalError::invalid(format!(
            "source {} of a kind \"file\" mapping is not a regular file",
            src.display()
        )));
    }
    let bytes = replace_file(src, dst, file_mode(opts, meta.mode()), opts)?;
    Ok(Transfer { files: 1, bytes })
}

/// Copy a `kind: "directory"` mapping: `dst` is removed, then rebuilt from the tree at `src`.
pub fn copy_dir_mapping(src: &Path, dst: &Path, opts: &CopyOptions<'_>) -> Result<Transfer> {
    check_abort(opts)?;
    let root_meta = fs::metadata(src).map_err(|e| io_at("stat", src, e))?;
    if !root_meta.is_dir() {
        return Err(LocalError::invalid(format!(
            "source {} of a kind \"directory\" mapping is not a directory",
            src.display()
        )));
    }
    let src_canon = src.canonicalize().map_err(|e| io_at("resolve", src, e))?;
    // An anchored target (`/proc/self/fd/<n>/<name>`) is compared by its real path.
    let dst_real = match (dst.parent().and_then(|p| p.canonicalize().ok()), dst.file_name()) {
        (Some(parent), Some(name)) => parent.join(name),
        _ => dst.to_path_buf(),
    };
    if dst_real.starts_with(&src_canon) || src_canon.starts_with(&dst_real) {
        return Err(LocalError::invalid(format!(
            "directory mapping {} -> {} overlaps itself",
            src.display(),
            dst.display()
        )));
    }
    remove_existing(dst)?;
    create_parents(dst)?;
    fs::DirBuilder::new().mode(0o700).create(dst).map_err(|e| io_at("create directory", dst, e))?;
    // From here on, the new directory is reached through its descriptor only: if a process
    // in the lease swaps it for a symlink, nothing follows that.
    let dst_dir = Anchor::open_nofollow(dst).map_err(|e| io_at("open directory", dst, e))?;
    let src_dir = Anchor::open_nofollow(src).ok();
    let src_path = src_dir.as_ref().map_or_else(|| src.to_path_buf(), Anchor::path);
    let mut total = Transfer::default();
    let mut ancestors = vec![(root_meta.dev(), root_meta.ino())];
    copy_tree(&src_path, &dst_dir.path(), "", opts, &mut ancestors, &mut total)?;
    dst_dir
        .chmod(root_meta.mode() & opts.dir_mode_mask & 0o777)
        .map_err(|e| io_at("chmod", dst, e))?;
    Ok(total)
}

fn copy_tree(
    src: &Path,
    dst: &Path,
    rel: &str,
    opts: &CopyOptions<'_>,
    ancestors: &mut Vec<(u64, u64)>,
    total: &mut Transfer,
) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(src)
        .map_err(|e| io_at("list", src, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| io_at("list", src, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        check_abort(opts)?;
        let name = entry.file_name();
        let Some(name_str) = name.to_str() else {
            tracing::warn!(dir = %src.display(), "skipping an entry whose name is not UTF-8");
            continue;
        };
        if name_str.starts_with(STAGING_PREFIX) {
            continue;
        }
        let child_rel =
            if rel.is_empty() { name_str.to_string() } else { format!("{rel}/{name_str}") };
        if opts.excludes.is_excluded(&child_rel) {
            continue;
        }
        let (from, to) = (src.join(&name), dst.join(&name));
        let mut meta = fs::symlink_metadata(&from).map_err(|e| io_at("stat", &from, e))?;
        let is_link = meta.file_type().is_symlink();
        if is_link {
            if !opts.follow_symlinks {
                replace_link(&from, &to)?;
                total.files += 1;
                continue;
            }
            meta = follow_link(&from, opts)?;
        }
        if meta.is_dir() {
            let id = (meta.dev(), meta.ino());
            if ancestors.contains(&id) {
                return Err(LocalError::invalid(format!(
                    "symlink cycle at {} while following links",
                    from.display()
                )));
            }
            fs::DirBuilder::new()
                .mode(0o700)
                .create(&to)
                .map_err(|e| io_at("create directory", &to, e))?;
            // Enter both directories through descriptors opened without following a
            // symlink (a followed link is entered by its resolved path, checked above).
            let to_dir = Anchor::open_nofollow(&to).map_err(|e| io_at("open directory", &to, e))?;
            let from_dir = if is_link {
                None
            } else {
                Some(Anchor::open_nofollow(&from).map_err(|e| io_at("open directory", &from, e))?)
            };
            let from_path = from_dir.as_ref().map_or_else(|| from.clone(), Anchor::path);
            ancestors.push(id);
            copy_tree(&from_path, &to_dir.path(), &child_rel, opts, ancestors, total)?;
            ancestors.pop();
            to_dir
                .chmod(meta.mode() & opts.dir_mode_mask & 0o777)
                .map_err(|e| io_at("chmod", &to, e))?;
        } else if meta.is_file() {
            total.bytes += replace_file(&from, &to, file_mode(opts, meta.mode()), opts)?;
            total.files += 1;
        } else {
            tracing::debug!(path = %from.display(), "skipping a special file");
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
