//! Unit tests of [`super`]: real trees in temporary directories.

use super::*;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

struct Fixture {
    _tmp: tempfile::TempDir,
    src: PathBuf,
    dst: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    fs::create_dir_all(src.join("sub/deeper")).unwrap();
    fs::create_dir_all(src.join("node_modules/pkg")).unwrap();
    fs::write(src.join("a.txt"), "alpha").unwrap();
    fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(src.join("sub/b.log"), "bravo!").unwrap();
    fs::write(src.join("sub/deeper/c.txt"), "c").unwrap();
    fs::write(src.join("node_modules/pkg/index.js"), "x").unwrap();
    fs::write(src.join(".paperclip-upload-stale"), "staging").unwrap();
    symlink("a.txt", src.join("link-to-a")).unwrap();
    Fixture { _tmp: tmp, src, dst }
}

fn opts<'a>(excludes: &'a Excludes, abort: &'a AtomicBool) -> CopyOptions<'a> {
    CopyOptions {
        mode: None,
        excludes,
        follow_symlinks: false,
        links_confined_to: None,
        abort,
        dir_mode_mask: 0o777,
    }
}

fn mode_of(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn file_mapping_replaces_atomically_with_the_final_mode_before_rename() {
    let f = fixture();
    let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
    let target = f.dst.join("new/dir/a.txt");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::write(&target, "old contents").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen2 = seen.clone();
    BEFORE_RENAME.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |p: &Path| {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            seen2.borrow_mut().push((name, mode_of(p), fs::read_to_string(p).unwrap()));
        }))
    });
    let mut o = opts(&ex, &abort);
    o.mode = Some(0o600);
    let t = copy_file_mapping(&f.src.join("a.txt"), &target, &o).unwrap();
    BEFORE_RENAME.with(|h| *h.borrow_mut() = None);
    assert_eq!(t, Transfer { files: 1, bytes: 5 });
    assert_eq!(fs::read_to_string(&target).unwrap(), "alpha");
    assert_eq!(mode_of(&target), 0o600);
    let seen = seen.borrow();
    assert_eq!(seen.len(), 1);
    let (name, mode, body) = &seen[0];
    assert!(name.starts_with(".paperclip-upload-"), "{name}");
    assert_eq!((*mode, body.as_str()), (0o600, "alpha"), "staged file is final before rename");
    // Nothing staged is left behind.
    let left: Vec<_> =
        fs::read_dir(target.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("a.txt")]);
}

#[test]
fn file_mapping_keeps_source_mode_without_mode_and_creates_parents() {
    let f = fixture();
    let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
    let target = f.dst.join("x/y/run.sh");
    copy_file_mapping(&f.src.join("run.sh"), &target, &opts(&ex, &abort)).unwrap();
    assert_eq!(mode_of(&target), 0o755);
    let err =
        copy_file_mapping(&f.src.join("sub"), &f.dst.join("z"), &opts(&ex, &abort)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidParams);
    assert!(
        copy_file_mapping(&f.src.join("missing"), &f.dst.join("m"), &opts(&ex, &abort)).is_err()
    );
}

#[test]
fn file_mapping_symlinks_are_preserved_or_followed() {
    let f = fixture();
    let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
    fs::create_dir_all(&f.dst).unwrap();
    let t =
        copy_file_mapping(&f.src.join("link-to-a"), &f.dst.join("l"), &opts(&ex, &abort)).unwrap();
    assert_eq!(t, Transfer { files: 1, bytes: 0 });
    assert_eq!(fs::read_link(f.dst.join("l")).unwrap(), PathBuf::from("a.txt"));
    let mut o = opts(&ex, &abort);
    o.follow_symlinks = true;
    let t = copy_file_mapping(&f.src.join("link-to-a"), &f.dst.join("l"), &o).unwrap();
    assert_eq!(t, Transfer { files: 1, bytes: 5 });
    assert!(!fs::symlink_metadata(f.dst.join("l")).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(f.dst.join("l")).unwrap(), "alpha");
}

#[test]
fn directory_mapping_destroys_then_replaces_with_excludes_and_modes() {
    let f = fixture();
    fs::create_dir_all(f.dst.join("stale")).unwrap();
    fs::write(f.dst.join("stale/old"), "old").unwrap();
    let ex = Excludes::new(&["node_modules", "*.log"]).unwrap();
    let abort = AtomicBool::new(false);
    let mut o = opts(&ex, &abort);
    o.mode = Some(0o640);
    let t = copy_dir_mapping(&f.src, &f.dst, &o).unwrap();
    // a.txt, run.sh, sub/deeper/c.txt, link-to-a; not b.log, node_modules, the staging file.
    assert_eq!(t, Transfer { files: 4, bytes: 5 + 10 + 1 });
    assert!(!f.dst.join("stale").exists());
    assert!(!f.dst.join("node_modules").exists());
    assert!(!f.dst.join("sub/b.log").exists());
    assert!(!f.dst.join(".paperclip-upload-stale").exists());
    assert_eq!(fs::read_to_string(f.dst.join("sub/deeper/c.txt")).unwrap(), "c");
    assert_eq!(mode_of(&f.dst.join("run.sh")), 0o640, "mode applies inside directory mappings");
    assert_eq!(mode_of(&f.dst.join("sub/deeper/c.txt")), 0o640);
    assert_eq!(mode_of(&f.dst.join("sub")), mode_of(&f.src.join("sub")));
    assert_eq!(fs::read_link(f.dst.join("link-to-a")).unwrap(), PathBuf::from("a.txt"));
}

#[test]
fn directory_mapping_follows_links_within_bounds() {
    let f = fixture();
    let outside = f.src.parent().unwrap().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret"), "s").unwrap();
    symlink(&outside, f.src.join("sub/escape")).unwrap();
    symlink("..", f.src.join("sub/deeper/loop")).unwrap();
    let (ex, abort) = (Excludes::new(&["loop"]).unwrap(), AtomicBool::new(false));
    let mut o = opts(&ex, &abort);
    o.follow_symlinks = true;
    // Unconfined following copies the link target's contents.
    copy_dir_mapping(&f.src, &f.dst, &o).unwrap();
    assert_eq!(fs::read_to_string(f.dst.join("sub/escape/secret")).unwrap(), "s");
    assert_eq!(fs::read_to_string(f.dst.join("link-to-a")).unwrap(), "alpha");
    // Confined following refuses the link that leads out.
    let src_canon = f.src.canonicalize().unwrap();
    o.links_confined_to = Some(&src_canon);
    let err = copy_dir_mapping(&f.src, &f.dst, &o).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Confinement);
    // A cycle is refused rather than followed forever.
    fs::remove_file(f.src.join("sub/escape")).unwrap();
    let ex = Excludes::default();
    let mut o = opts(&ex, &abort);
    o.follow_symlinks = true;
    let err = copy_dir_mapping(&f.src, &f.dst, &o).unwrap_err();
    assert!(err.message.contains("cycle"), "{err}");
}

#[test]
fn directory_mapping_refuses_overlap_and_honours_abort() {
    let f = fixture();
    let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
    let err = copy_dir_mapping(&f.src, &f.src.join("sub/inner"), &opts(&ex, &abort)).unwrap_err();
    assert!(err.message.contains("overlaps"), "{err}");
    assert!(f.src.join("sub/deeper/c.txt").exists(), "nothing was destroyed");
    abort.store(true, Ordering::Relaxed);
    let err = copy_dir_mapping(&f.src, &f.dst, &opts(&ex, &abort)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
}

#[test]
fn large_files_stream_through_a_bounded_buffer() {
    let f = fixture();
    let big = f.src.join("big.bin");
    let mut w = File::create(&big).unwrap();
    let block: Vec<u8> = (0..=255u8).cycle().take(COPY_BUF + 17).collect();
    for _ in 0..9 {
        w.write_all(&block).unwrap();
    }
    drop(w);
    let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
    let t = copy_file_mapping(&big, &f.dst.join("big.bin"), &opts(&ex, &abort)).unwrap();
    assert_eq!(t.bytes, 9 * (COPY_BUF as u64 + 17));
    assert_eq!(fs::read(&big).unwrap(), fs::read(f.dst.join("big.bin")).unwrap());
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// Runs `f` on its own thread and fails the test when it has not returned within 20 s (a
/// copy that waits on a fifo would never return).
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the copy blocked")
}

#[test]
fn a_fifo_in_a_tree_is_skipped_without_blocking() {
    let f = fixture();
    mkfifo(&f.src.join("sub/pipe"));
    let (src, dst) = (f.src.clone(), f.dst.clone());
    let t = within_20s(move || {
        let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
        copy_dir_mapping(&src, &dst, &opts(&ex, &abort)).map_err(|e| e.to_string())
    })
    .unwrap();
    // The fixture's five files (its staging-named one is skipped) and its link; not the fifo.
    assert_eq!(t.files, 6);
    assert!(fs::symlink_metadata(f.dst.join("sub/pipe")).is_err());
}

#[test]
fn a_source_swapped_for_a_fifo_is_refused_without_blocking() {
    // A command in the lease can replace a listed file with a fifo before the copy opens it;
    // the open must not wait for a writer that never comes.
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("was-a-file");
    mkfifo(&fifo);
    let refused = within_20s(move || open_source(rfs::CWD, fifo.as_path()).map(|o| o.is_none()));
    assert!(refused.unwrap(), "a fifo is not a regular file");
}

#[test]
fn a_followed_link_target_is_opened_without_following_a_link_swapped_in_on_the_way() {
    // follow_link checked `lease/real/data/f` inside the lease; then a command swapped `real`
    // for a link to a directory outside holding the same names. Opening the checked path by
    // name would now read outside; opening it beneath the lease must refuse.
    let tmp = tempfile::tempdir().unwrap();
    let (lease, outside) = (tmp.path().join("lease"), tmp.path().join("outside"));
    fs::create_dir_all(outside.join("data")).unwrap();
    fs::write(outside.join("data/f"), "host secret").unwrap();
    fs::create_dir_all(lease.join("kept/data")).unwrap();
    fs::write(lease.join("kept/data/f"), "lease file").unwrap();
    symlink(&outside, lease.join("real")).unwrap();
    let lease = lease.canonicalize().unwrap();
    let (ex, abort) = (Excludes::default(), AtomicBool::new(false));
    let mut o = opts(&ex, &abort);
    o.follow_symlinks = true;
    o.links_confined_to = Some(&lease);
    let checked = lease.join("real/data/f");
    assert_eq!(fs::read_to_string(&checked).unwrap(), "host secret", "by name it leads out");
    let e = open_followed_file(&checked, &o).unwrap_err();
    assert!(crate::beneath::is_refusal(&e), "{e}");
    let e = open_followed_dir(&lease.join("real/data"), &o).unwrap_err();
    assert!(crate::beneath::is_refusal(&e), "{e}");
    assert_eq!(followed_error(Path::new("x"), e).kind, ErrorKind::Confinement);
    // What stayed a directory opens.
    let (mut file, _) = open_followed_file(&lease.join("kept/data/f"), &o).unwrap().unwrap();
    let mut body = String::new();
    file.read_to_string(&mut body).unwrap();
    assert_eq!(body, "lease file");
    assert!(open_followed_dir(&lease.join("kept"), &o).is_ok());
}
