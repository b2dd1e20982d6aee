//! The host side of native sync for backends that move files as tar streams (a container
//! engine's archive API, `tar` over an exec channel): streams built from, and unpacked into,
//! this machine's files, chunk by chunk ([`ChannelWriter`] / [`ChannelReader`] keep memory
//! bounded by [`CHUNK`] and the channel depth; nothing needs a temporary archive).
//!
//! The rules are the local copy rules: a mapping's `mode` applies to
//! every file written, otherwise a file keeps its permission bits; symlinks follow tar's `-h`
//! (kept as links, or with `followSymlinks` their targets copied; dangling links and
//! directory cycles refused); excludes match the path relative to the mapping root or a
//! basename and skip an excluded directory whole; entries named `.paperclip-upload*`, special
//! files and hard links are skipped. When unpacking, every entry is confined to the target: a
//! name with `..` or a root, or one below a symlink the archive itself created, is refused.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;
use paperclip_sandbox_protocol::methods::sync::FileMapping;

use super::error::{ErrorKind, KitError, Result};
use super::glob::Excludes;
use tokio::sync::mpsc;

/// Bytes per chunk a [`ChannelWriter`] sends.
pub const CHUNK: usize = 256 * 1024;

/// The reserved prefix of staging names.
pub const STAGING_PREFIX: &str = ".paperclip-upload";

/// What a mapping transferred.
///
/// Built with [`Transfer::new`] (or `Transfer::default()`, nothing yet); fields may be added,
/// so it is not built with a struct literal outside the SDK.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transfer {
    /// Files and symlinks written.
    pub files: u64,
    /// Bytes of file content written.
    pub bytes: u64,
}

impl Transfer {
    /// `files` files and symlinks written, with `bytes` bytes of file content.
    ///
    /// ```
    /// use paperclip_sandbox_sdk::kit::tar::Transfer;
    ///
    /// let t = Transfer::new(2, 5);
    /// assert_eq!((t.files, t.bytes), (2, 5));
    /// assert_eq!(Transfer::default(), Transfer::new(0, 0));
    /// ```
    pub fn new(files: u64, bytes: u64) -> Self {
        Transfer { files, bytes }
    }
}

/// How one mapping is packed or unpacked.
///
/// [`Rules::for_mapping`] reads them from a sync mapping; [`Rules::new`] and the `with_…`
/// setters build them by hand. Fields may be added, so it is not built with a struct literal
/// outside the SDK.
#[derive(Debug)]
#[non_exhaustive]
pub struct Rules {
    /// Permission bits of every file written.
    pub mode: Option<u32>,
    /// Exclude patterns.
    pub excludes: Excludes,
    /// Copy link targets instead of links.
    pub follow_symlinks: bool,
    /// Owner of the packed entries (in the lease).
    pub uid: u64,
    /// Group of the packed entries (in the lease).
    pub gid: u64,
}

impl Rules {
    /// Entries owned by `uid:gid` in the lease; file modes kept as they are, nothing
    /// excluded, symlinks kept as links.
    ///
    /// ```
    /// use paperclip_sandbox_sdk::kit::{tar::Rules, Excludes};
    ///
    /// let rules = Rules::new(1000, 1000)
    ///     .with_mode(0o640)
    ///     .with_excludes(Excludes::new(&["*.log"])?)
    ///     .with_follow_symlinks(true);
    /// assert_eq!((rules.mode, rules.follow_symlinks), (Some(0o640), true));
    /// assert_eq!((rules.uid, rules.gid), (1000, 1000));
    /// assert!(rules.excludes.is_excluded("app.log"));
    /// let plain = Rules::new(0, 0);
    /// assert_eq!((plain.mode, plain.follow_symlinks), (None, false));
    /// assert!(plain.excludes.is_empty());
    /// # Ok::<(), paperclip_sandbox_sdk::kit::KitError>(())
    /// ```
    pub fn new(uid: u32, gid: u32) -> Rules {
        Rules {
            mode: None,
            excludes: Excludes::default(),
            follow_symlinks: false,
            uid: u64::from(uid),
            gid: u64::from(gid),
        }
    }

    /// The same rules, every file written with the permission bits `mode`.
    pub fn with_mode(mut self, mode: u32) -> Rules {
        self.mode = Some(mode);
        self
    }

    /// The same rules, leaving out what `excludes` matches.
    pub fn with_excludes(mut self, excludes: Excludes) -> Rules {
        self.excludes = excludes;
        self
    }

    /// The same rules, copying link targets instead of links when `follow` is true.
    pub fn with_follow_symlinks(mut self, follow: bool) -> Rules {
        self.follow_symlinks = follow;
        self
    }

    /// The rules of one sync mapping (its `mode`, `exclude` and `followSymlinks`), entries
    /// owned by `uid:gid` in the lease. Bad exclude patterns are an invalid-params error
    /// naming the pattern's index.
    pub fn for_mapping(m: &FileMapping, uid: u32, gid: u32) -> Result<Rules> {
        Ok(Rules {
            mode: m.mode,
            excludes: Excludes::new(m.exclude.as_deref().unwrap_or_default())?,
            follow_symlinks: m.follow_symlinks(),
            uid: u64::from(uid),
            gid: u64::from(gid),
        })
    }
}

/// A `Write` that sends full chunks down a channel (the upload body).
pub struct ChannelWriter {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    /// A writer feeding `tx`.
    pub fn new(tx: mpsc::Sender<io::Result<Bytes>>) -> Self {
        ChannelWriter { tx, buf: Vec::with_capacity(CHUNK) }
    }

    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the upload ended"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(CHUNK - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// A `Read` over chunks received from a channel (the download body).
pub struct ChannelReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl ChannelReader {
    /// A reader draining `rx`.
    pub fn new(rx: mpsc::Receiver<io::Result<Bytes>>) -> Self {
        ChannelReader { rx, current: Bytes::new() }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Err(e)) => return Err(e),
                Some(Ok(b)) => self.current = b,
            }
        }
        let n = out.len().min(self.current.len());
        out[..n].copy_from_slice(&self.current[..n]);
        let _ = self.current.split_to(n);
        Ok(n)
    }
}

/// An I/O error of `what` was being done, which names the file by its role in the sync (the
/// sync source or destination, an entry of it) — never by its path, which the host chose.
fn io_err(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> KitError {
    move |e| KitError::io(what, e)
}

fn reserved(name: &str) -> bool {
    name.starts_with(STAGING_PREFIX)
}

fn header(kind: tar::EntryType, mode: u32, size: u64, rules: &Rules) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_uid(rules.uid);
    h.set_gid(rules.gid);
    h.set_mtime(0);
    h
}

/// Packs `source` (a file, or a directory tree) as the archive entry `name` (a single path
/// component) into `out`.
pub fn pack<W: Write>(
    source: &Path,
    name: &str,
    directory: bool,
    rules: &Rules,
    out: W,
) -> Result<Transfer> {
    let mut builder = tar::Builder::new(out);
    builder.follow_symlinks(false);
    let mut transfer = Transfer::default();
    let meta = fs::symlink_metadata(source).map_err(io_err("reading the sync source"))?;
    let meta = if meta.file_type().is_symlink() && (rules.follow_symlinks || directory) {
        fs::metadata(source).map_err(io_err("following the sync source's symlink"))?
    } else {
        meta
    };
    if directory {
        if !meta.is_dir() {
            return Err(KitError::new(
                ErrorKind::InvalidParams,
                "a directory mapping's source is not a directory",
            ));
        }
        let mut stack = HashSet::new();
        pack_dir(&mut builder, source, name, "", rules, &mut stack, &mut transfer)?;
    } else {
        if meta.is_dir() {
            return Err(KitError::new(
                ErrorKind::InvalidParams,
                "a file mapping's source is a directory",
            ));
        }
        pack_entry(&mut builder, source, &meta, name, rules, &mut transfer)?;
    }
    let mut out = builder.into_inner().map_err(|e| KitError::io("finishing the archive", e))?;
    out.flush().map_err(|e| KitError::io("sending the archive", e))?;
    Ok(transfer)
}

fn pack_dir<W: Write>(
    b: &mut tar::Builder<W>,
    dir: &Path,
    name: &str,
    rel: &str,
    rules: &Rules,
    stack: &mut HashSet<(u64, u64)>,
    t: &mut Transfer,
) -> Result<()> {
    let meta = fs::metadata(dir).map_err(io_err("reading a directory of the sync source"))?;
    if !stack.insert((meta.dev(), meta.ino())) {
        return Err(KitError::new(
            ErrorKind::InvalidParams,
            "a followed symlink makes a directory cycle",
        ));
    }
    let mut h = header(tar::EntryType::Directory, meta.mode() & 0o777 | 0o700, 0, rules);
    b.append_data(&mut h, format!("{name}/"), io::empty())
        .map_err(|e| KitError::io("packing", e))?;
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(io_err("listing a directory of the sync source"))?
        .collect::<io::Result<_>>()
        .map_err(io_err("listing a directory of the sync source"))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Some(child) = entry.file_name().to_str().map(str::to_owned) else {
            tracing::warn!("skipping a file whose name is not UTF-8");
            continue;
        };
        if reserved(&child) {
            continue;
        }
        let child_rel = if rel.is_empty() { child.clone() } else { format!("{rel}/{child}") };
        if rules.excludes.is_excluded(&child_rel) {
            continue;
        }
        let path = entry.path();
        let mut meta =
            fs::symlink_metadata(&path).map_err(io_err("reading an entry of the sync source"))?;
        if meta.file_type().is_symlink() && rules.follow_symlinks {
            meta = fs::metadata(&path).map_err(io_err("following a symlink in the sync source"))?;
        }
        let entry_name = format!("{name}/{child}");
        if meta.is_dir() {
            pack_dir(b, &path, &entry_name, &child_rel, rules, stack, t)?;
        } else {
            pack_entry(b, &path, &meta, &entry_name, rules, t)?;
        }
    }
    stack.remove(&(meta.dev(), meta.ino()));
    Ok(())
}

fn pack_entry<W: Write>(
    b: &mut tar::Builder<W>,
    path: &Path,
    meta: &fs::Metadata,
    name: &str,
    rules: &Rules,
    t: &mut Transfer,
) -> Result<()> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = fs::read_link(path).map_err(io_err("reading a symlink of the sync source"))?;
        let mut h = header(tar::EntryType::Symlink, 0o777, 0, rules);
        b.append_link(&mut h, name, &target).map_err(|e| KitError::io("packing a link", e))?;
        t.files += 1;
    } else if ft.is_file() {
        let mode = rules.mode.unwrap_or(meta.mode() & 0o777);
        let file = File::open(path).map_err(io_err("opening a file of the sync source"))?;
        let mut h = header(tar::EntryType::Regular, mode, meta.len(), rules);
        // A file that changes size while packed would corrupt the stream: pack exactly its
        // size at open time.
        b.append_data(&mut h, name, file.take(meta.len()))
            .map_err(|e| KitError::io("packing", e))?;
        t.files += 1;
        t.bytes += meta.len();
    }
    Ok(())
}

/// The target-relative path of an archive entry named `<root>/<rest>` (or `<root>`): refused
/// when it is not below the root or names a parent.
fn relative_of(entry: &Path) -> Result<Option<PathBuf>> {
    let mut comps = entry.components();
    match comps.next() {
        Some(Component::Normal(_)) => {}
        Some(Component::CurDir) => return relative_of(comps.as_path()),
        _ => return Err(KitError::new(ErrorKind::Confinement, "an archive entry leaves its root")),
    }
    let mut rel = PathBuf::new();
    for c in comps {
        match c {
            Component::Normal(n) => rel.push(n),
            Component::CurDir => {}
            _ => {
                return Err(KitError::new(
                    ErrorKind::Confinement,
                    "an archive entry leaves its root",
                ))
            }
        }
    }
    Ok(Some(rel))
}

/// Unpacks an archive whose entries are `<root>` or `<root>/…` into `target` (a directory
/// mapping: `target` is removed first and recreated; a file mapping: the single file is
/// written atomically over `target`).
pub fn unpack<R: Read>(
    input: R,
    target: &Path,
    directory: bool,
    rules: &Rules,
) -> Result<Transfer> {
    let mut archive = tar::Archive::new(input);
    let mut t = Transfer::default();
    let parent = target.parent().ok_or_else(|| KitError::invalid("targetPath has no parent"))?;
    fs::create_dir_all(parent)
        .map_err(io_err("creating the parent directory of the sync destination"))?;
    if directory {
        match fs::symlink_metadata(target) {
            Ok(m) if m.is_dir() => {
                fs::remove_dir_all(target).map_err(io_err("replacing the sync destination"))?
            }
            Ok(_) => fs::remove_file(target).map_err(io_err("replacing the sync destination"))?,
            Err(_) => {}
        }
        fs::create_dir(target).map_err(io_err("creating the sync destination"))?;
    }
    let mut links: HashSet<PathBuf> = HashSet::new();
    let mut wrote_file = false;
    let entries = archive.entries().map_err(|e| KitError::io("reading the archive", e))?;
    for (index, entry) in entries.enumerate() {
        let what = |doing: &str| format!("{doing} archive entry {index}");
        let mut entry = entry.map_err(io_err(what("reading")))?;
        let name = entry.path().map_err(io_err(what("reading the name of")))?.into_owned();
        let Some(rel) = relative_of(&name)? else { continue };
        let rel_str = rel.to_string_lossy().into_owned();
        if rel.components().any(|c| reserved(&c.as_os_str().to_string_lossy())) {
            continue;
        }
        // As `tar --exclude` does (it matches leading directories too): an entry below an
        // excluded directory is excluded with it.
        if !rel_str.is_empty() && excluded_with_ancestors(&rules.excludes, &rel) {
            continue;
        }
        // An entry at or below a symlink this archive made would be written through the link
        // (a symlink `x -> ~/.bashrc` followed by a file `x`).
        if rel.ancestors().any(|a| links.contains(a)) {
            return Err(KitError::new(
                ErrorKind::Confinement,
                "an archive entry lies at or below a symlink",
            ));
        }
        let kind = entry.header().entry_type();
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        if !directory {
            if !rel_str.is_empty() || wrote_file {
                continue;
            }
            if kind.is_dir() {
                return Err(KitError::new(
                    ErrorKind::InvalidParams,
                    "a file mapping's source is a directory",
                ));
            }
            write_atomic(&mut entry, target, kind, rules.mode.unwrap_or(mode), &mut t)?;
            wrote_file = true;
            continue;
        }
        let path = target.join(&rel);
        if kind.is_dir() {
            if !rel_str.is_empty() {
                fs::create_dir_all(&path).map_err(io_err(what("creating")))?;
            }
            fs::set_permissions(&path, fs::Permissions::from_mode(mode | 0o700))
                .map_err(io_err(what("setting the mode of")))?;
        } else if kind.is_symlink() {
            let link = entry
                .link_name()
                .map_err(io_err(what("reading the link target of")))?
                .ok_or_else(|| {
                    KitError::invalid(format!(
                        "archive entry {index} is a symlink without a target"
                    ))
                })?;
            std::os::unix::fs::symlink(&link, &path).map_err(io_err(what("creating")))?;
            links.insert(rel.clone());
            t.files += 1;
        } else if kind.is_file() {
            let mode = rules.mode.unwrap_or(mode);
            let mut f = create_no_follow(&path).map_err(io_err(what("creating")))?;
            let n = io::copy(&mut entry, &mut f).map_err(io_err(what("writing")))?;
            f.set_permissions(fs::Permissions::from_mode(mode))
                .map_err(io_err(what("setting the mode of")))?;
            t.files += 1;
            t.bytes += n;
        }
    }
    if !directory && !wrote_file {
        return Err(KitError::new(ErrorKind::NotFound, "the archive held no file"));
    }
    Ok(t)
}

/// True when `rel` or one of its leading directories is excluded.
fn excluded_with_ancestors(excludes: &Excludes, rel: &Path) -> bool {
    rel.ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .any(|a| excludes.is_excluded(&a.to_string_lossy()))
}

/// Creates the regular file `path` without following a symlink there: an existing regular
/// file (an archive that lists a path twice) is replaced, anything else is refused.
fn create_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = || {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if fs::symlink_metadata(path)?.file_type().is_file() {
                fs::remove_file(path)?;
                open()
            } else {
                Err(e)
            }
        }
        other => other,
    }
}

fn write_atomic<R: Read>(
    entry: &mut R,
    target: &Path,
    kind: tar::EntryType,
    mode: u32,
    t: &mut Transfer,
) -> Result<()> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let staging = dir.join(format!("{STAGING_PREFIX}-{}", super::random_hex(8)));
    let result = (|| {
        if kind.is_file() {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&staging)
                .map_err(io_err("creating the staging file of the sync destination"))?;
            f.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(io_err("setting the mode of the staging file of the sync destination"))?;
            let n = io::copy(entry, &mut f)
                .map_err(io_err("writing the staging file of the sync destination"))?;
            f.set_permissions(fs::Permissions::from_mode(mode))
                .map_err(io_err("setting the mode of the staging file of the sync destination"))?;
            f.sync_all().map_err(io_err("syncing the staging file of the sync destination"))?;
            t.bytes += n;
        } else {
            return Err(KitError::new(
                ErrorKind::InvalidParams,
                "a file mapping's source is not a regular file",
            ));
        }
        fs::rename(&staging, target).map_err(io_err("replacing the sync destination"))?;
        t.files += 1;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&staging);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(mode: Option<u32>, excludes: &[&str]) -> Rules {
        Rules {
            mode,
            excludes: Excludes::new(excludes).unwrap(),
            follow_symlinks: false,
            uid: 1000,
            gid: 1000,
        }
    }

    #[test]
    fn pack_then_unpack_round_trips_with_modes_links_and_excludes() {
        let src = tempfile::tempdir().unwrap();
        fs::create_dir_all(src.path().join("a/b")).unwrap();
        fs::write(src.path().join("a/b/f.txt"), b"hello").unwrap();
        fs::write(src.path().join("skip.log"), b"no").unwrap();
        fs::write(src.path().join(".paperclip-upload-x"), b"no").unwrap();
        std::os::unix::fs::symlink("a/b/f.txt", src.path().join("link")).unwrap();
        let mut tar = Vec::new();
        let t = pack(src.path(), "tree", true, &rules(Some(0o640), &["*.log"]), &mut tar).unwrap();
        assert_eq!(t, Transfer { files: 2, bytes: 5 });
        let dst = tempfile::tempdir().unwrap();
        let target = dst.path().join("out");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("stale"), b"old").unwrap();
        let t = unpack(&tar[..], &target, true, &rules(None, &[])).unwrap();
        assert_eq!(t, Transfer { files: 2, bytes: 5 });
        assert_eq!(fs::read(target.join("a/b/f.txt")).unwrap(), b"hello");
        assert_eq!(fs::metadata(target.join("a/b/f.txt")).unwrap().mode() & 0o777, 0o640);
        assert_eq!(fs::read_link(target.join("link")).unwrap(), Path::new("a/b/f.txt"));
        assert!(!target.join("stale").exists() && !target.join("skip.log").exists());
    }

    #[test]
    fn unpack_refuses_escapes() {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "root/evil", "/etc").unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        b.append_data(&mut h, "root/evil/passwd", &b"x"[..]).unwrap();
        let tar = b.into_inner().unwrap();
        let dst = tempfile::tempdir().unwrap();
        let e = unpack(&tar[..], &dst.path().join("t"), true, &rules(None, &[])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Confinement);
        assert!(relative_of(Path::new("../x")).is_err());
        assert!(relative_of(Path::new("/x")).is_err());
    }

    /// A symlink, then a file or a directory at the same path: before, the file was written
    /// through the link (and a directory entry changed the mode of the link's target).
    #[test]
    fn unpack_never_writes_through_a_symlink_it_made() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
        for dir_entry in [false, true] {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, "root/x", &victim).unwrap();
            let mut h = tar::Header::new_gnu();
            if dir_entry {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                h.set_mode(0o777);
                b.append_data(&mut h, "root/x/", &b""[..]).unwrap();
            } else {
                h.set_size(5);
                h.set_mode(0o644);
                b.append_data(&mut h, "root/x", &b"owned"[..]).unwrap();
            }
            let tar = b.into_inner().unwrap();
            let dst = tempfile::tempdir().unwrap();
            let e = unpack(&tar[..], &dst.path().join("t"), true, &rules(None, &[])).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Confinement, "directory entry: {dir_entry}");
            assert_eq!(fs::read(&victim).unwrap(), b"keep");
            assert_eq!(fs::metadata(&victim).unwrap().mode() & 0o777, 0o600);
        }
    }

    /// `tar --exclude node_modules` leaves out the directory and everything below it; before,
    /// only the directory's own entry was skipped and `node_modules/a.js` was written.
    #[test]
    fn unpack_excludes_what_lies_below_an_excluded_directory() {
        let src = tempfile::tempdir().unwrap();
        fs::create_dir_all(src.path().join("node_modules/pkg")).unwrap();
        fs::write(src.path().join("node_modules/a.js"), b"a").unwrap();
        fs::write(src.path().join("node_modules/pkg/b.js"), b"b").unwrap();
        fs::write(src.path().join("keep.txt"), b"k").unwrap();
        let mut tar = Vec::new();
        pack(src.path(), "tree", true, &rules(None, &[]), &mut tar).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let target = dst.path().join("out");
        let t = unpack(&tar[..], &target, true, &rules(None, &["node_modules"])).unwrap();
        assert_eq!(t.files, 1);
        assert_eq!(fs::read(target.join("keep.txt")).unwrap(), b"k");
        assert!(!target.join("node_modules").exists());
    }
}
