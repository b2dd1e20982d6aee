//! Native sync: a generated tree copied into a lease (`environmentSyncIn`) and back out
//! (`environmentSyncOut`), one directory mapping per call, beside `tar c | tar x` of the same
//! tree on the same filesystem (the raw limit). Every copy is checked file by file (count and
//! bytes) after the clock stops.

use std::io;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use crate::client::Worker;
use crate::datapath::{pseudo_random, shell_quote, Transfer};
use crate::lease::{Driver, Lease};

/// What a generated tree holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeShape {
    /// Regular files.
    pub files: u64,
    /// Bytes of file content.
    pub bytes: u64,
}

/// Writes `files` files totalling about `bytes` under `root` (recreated): 40 directories
/// of two levels, sizes spread from a quarter to 1.75× the mean, pseudo-random content.
pub fn make_tree(root: &Path, files: u64, bytes: u64) -> io::Result<TreeShape> {
    let _ = std::fs::remove_dir_all(root);
    let mean = (bytes / files.max(1)).max(1);
    let pool = pseudo_random((mean * 2) as usize, 0x5eed);
    let mut shape = TreeShape { files: 0, bytes: 0 };
    for i in 0..files {
        let dir = root.join(format!("d{:02}", i % 8)).join(format!("e{:02}", i % 5));
        if i < 40 {
            std::fs::create_dir_all(&dir)?;
        }
        // Sizes cycle through mean/4 .. 7·mean/4 (the mean stays `mean`).
        let size = mean / 4 + (mean * 3 / 2) * (i % 16) / 15;
        let off = (i as usize * 4099) % (pool.len() - size as usize).max(1);
        std::fs::write(dir.join(format!("f{i:05}.bin")), &pool[off..off + size as usize])?;
        shape.files += 1;
        shape.bytes += size;
    }
    Ok(shape)
}

/// Counts the regular files and their bytes under `root`.
pub fn tree_shape(root: &Path) -> io::Result<TreeShape> {
    let mut shape = TreeShape { files: 0, bytes: 0 };
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(entry.path());
            } else if ty.is_file() {
                shape.files += 1;
                shape.bytes += entry.metadata()?.len();
            }
        }
    }
    Ok(shape)
}

fn check(target: &Path, want: TreeShape) -> io::Result<()> {
    let got = tree_shape(target)?;
    if got != want {
        return Err(io::Error::other(format!(
            "{}: {} files / {} bytes, expected {} / {}",
            target.display(),
            got.files,
            got.bytes,
            want.files,
            want.bytes
        )));
    }
    Ok(())
}

/// `tar c -C src . | tar x -C dst` (dst removed first, untimed).
pub fn tar_copy(src: &Path, dst: &Path, want: TreeShape) -> io::Result<Transfer> {
    let _ = std::fs::remove_dir_all(dst);
    let (s, d) = (shell_quote(&src.display().to_string()), shell_quote(&dst.display().to_string()));
    let script = format!("mkdir -p {d} && tar cf - -C {s} . | tar xf - -C {d}");
    let t = Instant::now();
    let status = Command::new("sh").arg("-c").arg(&script).status()?;
    let elapsed = t.elapsed();
    if !status.success() {
        return Err(io::Error::other(format!("`{script}` failed: {status}")));
    }
    check(dst, want)?;
    Ok(Transfer { bytes: want.bytes, elapsed, logs: 0 })
}

/// The direction of a sync call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `environmentSyncIn`: host → lease.
    In,
    /// `environmentSyncOut`: lease → host.
    Out,
}

/// One native sync call copying the directory `src` to `dst` (removed first, untimed).
pub fn worker_sync(
    w: &mut Worker,
    driver: &Driver,
    lease: &Lease,
    direction: Direction,
    src: &Path,
    dst: &Path,
    want: TreeShape,
) -> io::Result<Transfer> {
    let _ = std::fs::remove_dir_all(dst);
    let method = match direction {
        Direction::In => "environmentSyncIn",
        Direction::Out => "environmentSyncOut",
    };
    let params = driver.params(json!({
        "lease": lease.host_lease,
        "operations": [{
            "operationId": "bench-tree",
            "files": [{"sourcePath": src, "targetPath": dst, "kind": "directory"}],
        }],
    }));
    let params = params.to_string();
    let t = Instant::now();
    let result = w.call_value(method, &params)?;
    let elapsed = t.elapsed();
    let op = &result["operations"][0];
    if op["filesTransferred"].as_u64() != Some(want.files) {
        return Err(io::Error::other(format!("{method}: unexpected result {result}")));
    }
    check(dst, want)?;
    Ok(Transfer { bytes: want.bytes, elapsed, logs: 0 })
}
