//! The data-path part of the run: execute output, small writes, base64-over-exec download and
//! upload, native sync in and out, and many leases at once, for the raw limit and each worker
//! that runs commands, in rounds that visit every subject in turn; then callgrind's
//! instructions per MiB of execute output for the Rust provider.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::{Worker, WorkerSpec};
use crate::concurrent::{self, Concurrent};
use crate::datapath::{self, RawShell, Transfer, WorkerShell};
use crate::lease::{self, Driver, Lease};
use crate::syncpath::{self, Direction, TreeShape};

/// Sizes and budgets of the data-path measurements.
#[derive(Debug, Clone, Copy)]
pub struct DataConfig {
    /// Rounds over all subjects (medians and ranges are reported).
    pub rounds: usize,
    /// Bytes of execute output per call.
    pub output_bytes: u64,
    /// Bytes of escape-heavy execute output (NUL, `\x01`) per call: 8 MiB, 48 MiB of JSON, so
    /// that the result stays within half the host's line limit and is not truncated.
    pub escaped_output_bytes: u64,
    /// Only the execute output rows (printable, NUL, control bytes); `PAPERCLIP_BENCH_ONLY=output`.
    pub output_only: bool,
    /// Lines of the small-writes command.
    pub small_lines: u64,
    /// Bytes of the base64-over-exec file.
    pub b64_bytes: usize,
    /// Files of the sync tree.
    pub tree_files: u64,
    /// Bytes of the sync tree.
    pub tree_bytes: u64,
    /// Leases executing at once.
    pub leases: usize,
    /// Time budget of each concurrent run.
    pub concurrent_time: Duration,
    /// Bytes of execute output under callgrind (0: skip callgrind).
    pub callgrind_bytes: u64,
}

impl Default for DataConfig {
    fn default() -> Self {
        Self {
            rounds: 5,
            output_bytes: 48 << 20,
            escaped_output_bytes: 8 << 20,
            output_only: false,
            small_lines: 50_000,
            b64_bytes: 16 << 20,
            tree_files: 2_000,
            tree_bytes: 125 << 20,
            leases: 64,
            concurrent_time: Duration::from_millis(1500),
            callgrind_bytes: 8 << 20,
        }
    }
}

/// A worker that runs commands, as the data paths need it.
#[derive(Debug, Clone)]
pub struct DataSubject {
    /// How to start it (its lease root must be set to the data root by the caller).
    pub spec: WorkerSpec,
    /// Its driver and config.
    pub driver: Driver,
}

/// Everything measured for one subject (rounds in order).
#[derive(Debug, Clone, Default)]
pub struct DataSamples {
    /// Execute output.
    pub output: Vec<Transfer>,
    /// Execute output of NUL bytes.
    pub output_nul: Vec<Transfer>,
    /// Execute output of `\x01` bytes.
    pub output_control: Vec<Transfer>,
    /// Small flushed writes.
    pub small: Vec<Transfer>,
    /// base64-over-exec download.
    pub download: Vec<Transfer>,
    /// base64-over-exec upload.
    pub upload: Vec<Transfer>,
    /// `base64 <file>` through a pipe (raw only).
    pub b64_file: Vec<Transfer>,
    /// Host → lease copy of the tree.
    pub sync_in: Vec<Transfer>,
    /// Lease → host copy of the tree.
    pub sync_out: Vec<Transfer>,
    /// Leases executing at once.
    pub concurrent: Vec<Concurrent>,
}

/// One row of the data-path report.
#[derive(Debug, Clone)]
pub struct DataRow {
    /// Display name.
    pub name: String,
    /// The samples, or why there are none.
    pub result: Result<DataSamples, String>,
}

/// The data-path results: the raw limit first, then the workers.
#[derive(Debug, Clone)]
pub struct DataReport {
    /// Rows (raw, then each worker).
    pub rows: Vec<DataRow>,
    /// The tree synced.
    pub tree: TreeShape,
    /// Where it ran, and whether that is tmpfs.
    pub root: PathBuf,
    /// True when `root` is on tmpfs.
    pub tmpfs: bool,
    /// Callgrind's instructions per MiB of execute output of the first worker, or why not.
    pub callgrind: Result<f64, String>,
}

/// A worker started for the data paths with its samples so far, or why it failed.
type Started = Result<(LiveData, DataSamples), String>;

/// A started worker with its leases.
struct LiveData {
    w: Worker,
    driver: Driver,
    lease: Lease,
    many: Vec<Lease>,
    out_dir: PathBuf,
}

fn start(s: &DataSubject, leases: usize, out_dir: PathBuf) -> io::Result<LiveData> {
    let mut w = Worker::spawn(&s.spec)?;
    w.initialize()?;
    let lease = lease::acquire(&mut w, &s.driver, "bench-data")?;
    let many = (0..leases)
        .map(|i| lease::acquire(&mut w, &s.driver, &format!("bench-many-{i}")))
        .collect::<io::Result<Vec<_>>>()?;
    std::fs::create_dir_all(&out_dir)?;
    Ok(LiveData { w, driver: s.driver.clone(), lease, many, out_dir })
}

fn finish(mut live: LiveData) -> io::Result<()> {
    for l in live.many.iter().chain([&live.lease]) {
        lease::release(&mut live.w, &live.driver, l)?;
    }
    live.w.close(Duration::from_secs(10)).map(drop)
}

/// The raw limit's scratch places.
struct RawDirs {
    b64_src: PathBuf,
    upload: PathBuf,
    tree_copy: PathBuf,
    tree_out: PathBuf,
}

fn raw_round(
    cfg: &DataConfig,
    d: &RawDirs,
    tree_src: &Path,
    tree: TreeShape,
    payload: &[u8],
    s: &mut DataSamples,
    round: usize,
) -> io::Result<()> {
    s.output.push(datapath::raw_output(cfg.output_bytes)?);
    s.output_nul.push(datapath::raw_output_of(cfg.escaped_output_bytes, 0)?);
    s.output_control.push(datapath::raw_output_of(cfg.escaped_output_bytes, 1)?);
    if cfg.output_only {
        return Ok(());
    }
    s.small.push(datapath::raw_small_writes(cfg.small_lines)?);
    let src = d.b64_src.to_str().ok_or_else(|| io::Error::other("path is not UTF-8"))?;
    s.download.push(datapath::time_download(&mut RawShell, src, payload)?);
    s.b64_file.push(datapath::raw_base64_file(&d.b64_src)?);
    s.upload.push(datapath::time_upload(&mut RawShell, &d.upload, payload, round as u64)?);
    s.sync_in.push(syncpath::tar_copy(tree_src, &d.tree_copy, tree)?);
    s.sync_out.push(syncpath::tar_copy(&d.tree_copy, &d.tree_out, tree)?);
    s.concurrent.push(concurrent::raw(cfg.leases, cfg.concurrent_time)?);
    Ok(())
}

fn worker_round(
    cfg: &DataConfig,
    live: &mut LiveData,
    tree_src: &Path,
    tree: TreeShape,
    payload: &[u8],
    s: &mut DataSamples,
    round: usize,
) -> io::Result<()> {
    let (w, d, l) = (&mut live.w, &live.driver, &live.lease);
    s.output.push(datapath::worker_output(w, d, l, cfg.output_bytes)?);
    s.output_nul.push(datapath::worker_output_of(w, d, l, cfg.escaped_output_bytes, 0)?);
    s.output_control.push(datapath::worker_output_of(w, d, l, cfg.escaped_output_bytes, 1)?);
    if cfg.output_only {
        return Ok(());
    }
    s.small.push(datapath::worker_small_writes(w, d, l, cfg.small_lines)?);
    let b64_src = l.remote_cwd.join("b64-src.bin");
    if round == 0 {
        std::fs::write(&b64_src, payload)?;
    }
    let src = b64_src.to_str().ok_or_else(|| io::Error::other("path is not UTF-8"))?.to_owned();
    let mut sh = WorkerShell { w, driver: d, lease: l, logs: 0 };
    s.download.push(datapath::time_download(&mut sh, &src, payload)?);
    let up = l.remote_cwd.join("b64-up.bin");
    s.upload.push(datapath::time_upload(&mut sh, &up, payload, round as u64)?);
    let in_lease = l.remote_cwd.join("tree");
    s.sync_in.push(syncpath::worker_sync(w, d, l, Direction::In, tree_src, &in_lease, tree)?);
    let out = live.out_dir.join("tree");
    s.sync_out.push(syncpath::worker_sync(w, d, l, Direction::Out, &in_lease, &out, tree)?);
    s.concurrent.push(concurrent::through_worker(w, d, &live.many, cfg.concurrent_time)?);
    Ok(())
}

/// True when `path` is on a tmpfs mount (longest matching mount point of `/proc/mounts`).
pub fn is_tmpfs(path: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else { return false };
    let mut best: Option<(usize, bool)> = None;
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (Some(_), Some(point), Some(kind)) = (f.next(), f.next(), f.next()) else { continue };
        if path.starts_with(point) && best.is_none_or(|(len, _)| point.len() >= len) {
            best = Some((point.len(), kind == "tmpfs"));
        }
    }
    best.is_some_and(|(_, t)| t)
}

/// Runs the data paths for the raw limit and `subjects` under `root` (the caller points every
/// subject's lease root into `root`).
pub fn run(
    cfg: &DataConfig,
    subjects: &[(String, DataSubject)],
    root: &Path,
) -> io::Result<DataReport> {
    std::fs::create_dir_all(root)?;
    let tree_src = root.join("tree-src");
    eprintln!("data paths: generating a {}-file tree ...", cfg.tree_files);
    let tree_files = if cfg.output_only { 0 } else { cfg.tree_files };
    let tree = syncpath::make_tree(&tree_src, tree_files, cfg.tree_bytes)?;
    let payload = datapath::pseudo_random(cfg.b64_bytes, 0xb64);
    let raw_root = root.join("raw");
    std::fs::create_dir_all(&raw_root)?;
    let raw_dirs = RawDirs {
        b64_src: raw_root.join("b64-src.bin"),
        upload: raw_root.join("b64-up.bin"),
        tree_copy: raw_root.join("tree"),
        tree_out: raw_root.join("tree-out"),
    };
    std::fs::write(&raw_dirs.b64_src, &payload)?;

    let fail = |e: io::Error| format!("failed: {e}");
    let mut raw: Result<DataSamples, String> = Ok(DataSamples::default());
    let mut live: Vec<(String, Started)> = subjects
        .iter()
        .enumerate()
        .map(|(i, (name, s))| {
            eprintln!("data paths: starting {name} with {} leases ...", cfg.leases + 1);
            let out = root.join(format!("host-out-{i}"));
            (
                name.clone(),
                start(s, cfg.leases, out).map(|l| (l, DataSamples::default())).map_err(fail),
            )
        })
        .collect();
    for round in 0..cfg.rounds.max(1) {
        eprintln!("data paths: round {}/{} ...", round + 1, cfg.rounds.max(1));
        if let Ok(s) = &mut raw {
            if let Err(e) = raw_round(cfg, &raw_dirs, &tree_src, tree, &payload, s, round) {
                raw = Err(fail(e));
            }
        }
        for (_, l) in &mut live {
            if let Ok((x, s)) = l {
                if let Err(e) = worker_round(cfg, x, &tree_src, tree, &payload, s, round) {
                    *l = Err(fail(e));
                }
            }
        }
    }
    let mut rows = vec![DataRow { name: "raw limit".into(), result: raw }];
    for (name, l) in live {
        let result = l.and_then(|(x, s)| finish(x).map(|()| s).map_err(fail));
        rows.push(DataRow { name, result });
    }
    let callgrind = match (cfg.callgrind_bytes, subjects.first()) {
        _ if cfg.output_only => Err("skipped (output rows only)".into()),
        (0, _) => Err("skipped (callgrind_bytes = 0)".into()),
        (_, None) => Err("no worker".into()),
        (bytes, Some((name, s))) => crate::callgrind::available().and_then(|()| {
            eprintln!("data paths: {name} under callgrind (two runs) ...");
            crate::callgrind::instructions_per_mib(&s.spec, &s.driver, root, bytes).map_err(fail)
        }),
    };
    Ok(DataReport { rows, tree, root: root.to_path_buf(), tmpfs: is_tmpfs(root), callgrind })
}
