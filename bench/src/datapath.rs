//! The data paths a host loads, each beside its raw limit (the same commands run by the client
//! itself, no worker in between):
//!
//! * **execute output**: `head -c N /dev/zero | tr '\0' a` through `environmentExecute`
//!   (payload rate, `execute.log` notifications per second), and a burst of small flushed
//!   lines (notifications per second when every write is small);
//! * **base64-over-exec** download and upload of a file, with the host's command shapes and
//!   chunk sizes (upstream `adapter-utils` `command-managed-runtime`: reads as `wc -c < path`
//!   then `dd if=path bs=3145728 skip=i count=1 2>/dev/null | base64`; writes as an empty temp
//!   file, then one `base64 -d >> temp` per 4 MiB of base64 (3 MiB decoded) in `stdin`, then
//!   `mv -f`, then a best-effort `rm -rf temp`), all as `sh -c <script>`.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::client::Worker;
use crate::lease::{self, Driver, Lease};

/// Decoded bytes per base64-over-exec chunk (the host's 4 MiB of base64).
pub const B64_DECODED_CHUNK: usize = 3 * 1024 * 1024;

/// The base64 engine the host's `Buffer.toString("base64")` matches (padded standard).
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The host's shell quoting: `'…'` with `'` as `'"'"'`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}

/// The command that writes `bytes` bytes of `a` to stdout.
pub fn output_script(bytes: u64) -> String {
    output_script_of(bytes, b'a')
}

/// The command that writes `bytes` bytes of `byte` to stdout: `a` (printable), NUL or
/// `\x01` (bytes JSON escapes as `\u0000`, `\u0001`, six bytes each).
pub fn output_script_of(bytes: u64, byte: u8) -> String {
    match byte {
        0 => format!("head -c {bytes} /dev/zero"),
        b => format!("head -c {bytes} /dev/zero | tr '\\0' '\\{b:03o}'"),
    }
}

/// The command that writes `lines` short lines, flushing after each (one `write` per line).
pub fn small_writes_script(lines: u64) -> String {
    format!("awk 'BEGIN {{ for (i = 0; i < {lines}; i++) {{ print \"line \" i; fflush() }} }}'")
}

/// True when every byte of `bytes` is `byte`: sixty-four bytes a step (vector compares), the
/// same check for the raw pipe and the workers' results.
pub fn all_bytes_are(bytes: &[u8], byte: u8) -> bool {
    bytes.chunks(64).all(|c| c.iter().fold(true, |same, &b| same & (b == byte)))
}

/// One timed transfer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Transfer {
    /// Payload bytes moved.
    pub bytes: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// `execute.log` notifications received (0 for raw runs).
    pub logs: u64,
}

impl Transfer {
    /// MiB per second.
    pub fn mib_s(&self) -> f64 {
        self.bytes as f64 / (1024.0 * 1024.0) / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Notifications per second.
    pub fn logs_s(&self) -> f64 {
        self.logs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs `sh -c <script>` directly (the raw limit), feeding `stdin`, and returns its stdout
/// after checking it exited 0. `sink` gets stdout as it arrives, in reads of up to 1 MiB from
/// a 1 MiB pipe.
fn raw_shell(script: &str, stdin: Option<&[u8]>, mut sink: impl FnMut(&[u8])) -> io::Result<()> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .spawn()?;
    let writer = match (stdin, child.stdin.take()) {
        (Some(bytes), Some(mut pipe)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || pipe.write_all(&bytes)))
        }
        _ => None,
    };
    let mut out = child.stdout.take().expect("stdout is piped");
    // The pipe the SDK's runner gives a command (1 MiB), so the raw limit reads the same
    // command through the same pipe as the workers do.
    // SAFETY: fcntl(2) on a descriptor this process owns; no memory is passed.
    unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&out), libc::F_SETPIPE_SZ, 1 << 20) };
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = out.read(&mut buf)?;
        if n == 0 {
            break;
        }
        sink(&buf[..n]);
    }
    if let Some(w) = writer {
        w.join().map_err(|_| io::Error::other("stdin writer panicked"))??;
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(io::Error::other(format!("`{script}` failed: {status}")));
    }
    Ok(())
}

/// The raw pipe: [`output_script`] read straight by the client (every byte checked).
pub fn raw_output(bytes: u64) -> io::Result<Transfer> {
    raw_output_of(bytes, b'a')
}

/// [`raw_output`] of [`output_script_of`] `byte`.
pub fn raw_output_of(bytes: u64, byte: u8) -> io::Result<Transfer> {
    let t = Instant::now();
    let (mut got, mut ok) = (0u64, true);
    raw_shell(&output_script_of(bytes, byte), None, |b| {
        got += b.len() as u64;
        ok &= all_bytes_are(b, byte);
    })?;
    let elapsed = t.elapsed();
    if got != bytes || !ok {
        return Err(io::Error::other(format!("raw pipe delivered {got} of {bytes} bytes")));
    }
    Ok(Transfer { bytes, elapsed, logs: 0 })
}

/// [`output_script`] through `environmentExecute`: the payload rate (the bytes of stdout;
/// they cross the wire twice, as `execute.log` chunks and in the result), and the
/// notifications. Checks the result carries every byte.
pub fn worker_output(w: &mut Worker, d: &Driver, l: &Lease, bytes: u64) -> io::Result<Transfer> {
    worker_output_of(w, d, l, bytes, b'a')
}

/// [`worker_output`] of [`output_script_of`] `byte`.
pub fn worker_output_of(
    w: &mut Worker,
    d: &Driver,
    l: &Lease,
    bytes: u64,
    byte: u8,
) -> io::Result<Transfer> {
    let params = lease::shell_params(d, l, &output_script_of(bytes, byte), None);
    let t = Instant::now();
    let r = lease::execute(w, &params, false, Some(byte))?;
    let elapsed = t.elapsed();
    if r.exit_code != Some(0) || r.stdout_len as u64 != bytes || !r.filler_ok {
        return Err(io::Error::other(format!(
            "execute output: exit {:?}, {} of {bytes} bytes in the result",
            r.exit_code, r.stdout_len
        )));
    }
    if r.log_stdout_bytes > bytes {
        return Err(io::Error::other("more bytes streamed than the command wrote"));
    }
    Ok(Transfer { bytes, elapsed, logs: r.logs })
}

/// The raw limit of [`small_writes_script`]: lines read straight by the client.
pub fn raw_small_writes(lines: u64) -> io::Result<Transfer> {
    let t = Instant::now();
    let mut got = 0u64;
    raw_shell(&small_writes_script(lines), None, |b| got += b.len() as u64)?;
    Ok(Transfer { bytes: got, elapsed: t.elapsed(), logs: 0 })
}

/// [`small_writes_script`] through `environmentExecute`.
pub fn worker_small_writes(
    w: &mut Worker,
    d: &Driver,
    l: &Lease,
    lines: u64,
) -> io::Result<Transfer> {
    let params = lease::shell_params(d, l, &small_writes_script(lines), None);
    let t = Instant::now();
    let r = lease::execute(w, &params, false, None)?;
    let elapsed = t.elapsed();
    if r.exit_code != Some(0) || r.stdout_len == 0 {
        return Err(io::Error::other(format!("small writes: exit {:?}", r.exit_code)));
    }
    Ok(Transfer { bytes: r.stdout_len as u64, elapsed, logs: r.logs })
}

/// Runs one script of the base64-over-exec path (through the worker or, for the raw limit,
/// straight) and returns its stdout.
pub trait Shell {
    /// `sh -c <script>` with optional stdin; must exit 0.
    fn run(&mut self, script: &str, stdin: Option<&str>) -> io::Result<String>;
    /// `execute.log` notifications seen so far.
    fn logs(&self) -> u64 {
        0
    }
}

/// The raw limit: the client runs the scripts itself.
pub struct RawShell;

impl Shell for RawShell {
    fn run(&mut self, script: &str, stdin: Option<&str>) -> io::Result<String> {
        let mut out = Vec::new();
        raw_shell(script, stdin.map(str::as_bytes), |b| out.extend_from_slice(b))?;
        String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// A worker running the scripts on a lease, as the host does.
pub struct WorkerShell<'a> {
    /// The worker.
    pub w: &'a mut Worker,
    /// Its driver.
    pub driver: &'a Driver,
    /// The lease.
    pub lease: &'a Lease,
    /// Notifications seen.
    pub logs: u64,
}

impl Shell for WorkerShell<'_> {
    fn run(&mut self, script: &str, stdin: Option<&str>) -> io::Result<String> {
        let r = lease::shell_ok(self.w, self.driver, self.lease, script, stdin)?;
        self.logs += r.logs;
        Ok(r.stdout)
    }

    fn logs(&self) -> u64 {
        self.logs
    }
}

/// The host's chunked read of `path` (see the module docs): `wc -c`, then one
/// `dd … | base64` per 3 MiB; whitespace stripped, decoded. Errors when the bytes read differ
/// from the size reported.
pub fn b64_download(sh: &mut dyn Shell, path: &str) -> io::Result<Vec<u8>> {
    let q = shell_quote(path);
    let size: usize = sh
        .run(&format!("wc -c < {q}"), None)?
        .trim()
        .parse()
        .map_err(|_| io::Error::other("`wc -c` did not print a number"))?;
    let mut out = Vec::with_capacity(size);
    let mut text = Vec::new();
    for i in 0.. {
        if out.len() >= size {
            break;
        }
        let b64 = sh.run(
            &format!("dd if={q} bs={B64_DECODED_CHUNK} skip={i} count=1 2>/dev/null | base64"),
            None,
        )?;
        text.clear();
        text.extend(b64.bytes().filter(|b| !b.is_ascii_whitespace()));
        let before = out.len();
        B64.decode_vec(&text, &mut out)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if out.len() == before {
            break;
        }
    }
    if out.len() != size {
        return Err(io::Error::other(format!("read {} of {size} bytes", out.len())));
    }
    Ok(out)
}

/// The host's chunked write of `bytes` to `path` (see the module docs).
pub fn b64_upload(sh: &mut dyn Shell, path: &str, bytes: &[u8], tag: u64) -> io::Result<()> {
    let dir = Path::new(path).parent().and_then(Path::to_str).unwrap_or("/");
    let temp = format!("{path}.paperclip-upload.{tag:016x}");
    let (q, qt, qd) = (shell_quote(path), shell_quote(&temp), shell_quote(dir));
    let wrote = (|| {
        sh.run(&format!("mkdir -p {qd} && rm -f {qt} && : > {qt}"), None)?;
        for chunk in bytes.chunks(B64_DECODED_CHUNK) {
            let body = B64.encode(chunk);
            sh.run(&format!("base64 -d >> {qt}"), Some(&body))?;
        }
        sh.run(&format!("mv -f {qt} {q}"), None).map(drop)
    })();
    let cleanup = sh.run(&format!("rm -rf {qt}"), None);
    wrote.and(cleanup.map(drop))
}

/// A timed [`b64_download`] of `path`, which must hold `expected`.
pub fn time_download(sh: &mut dyn Shell, path: &str, expected: &[u8]) -> io::Result<Transfer> {
    let logs = sh.logs();
    let t = Instant::now();
    let got = b64_download(sh, path)?;
    let elapsed = t.elapsed();
    if got != expected {
        return Err(io::Error::other("the downloaded bytes differ from the file"));
    }
    Ok(Transfer { bytes: got.len() as u64, elapsed, logs: sh.logs() - logs })
}

/// A timed [`b64_upload`] of `bytes` to `path`; then the file must hold them.
pub fn time_upload(
    sh: &mut dyn Shell,
    path: &Path,
    bytes: &[u8],
    tag: u64,
) -> io::Result<Transfer> {
    let _ = std::fs::remove_file(path);
    let text = path.to_str().ok_or_else(|| io::Error::other("path is not UTF-8"))?;
    let logs = sh.logs();
    let t = Instant::now();
    b64_upload(sh, text, bytes, tag)?;
    let elapsed = t.elapsed();
    if std::fs::read(path)? != bytes {
        return Err(io::Error::other("the uploaded file differs from the bytes sent"));
    }
    Ok(Transfer { bytes: bytes.len() as u64, elapsed, logs: sh.logs() - logs })
}

/// `base64 <file>` read through a pipe by the client and discarded: the floor of any
/// base64 download.
pub fn raw_base64_file(path: &Path) -> io::Result<Transfer> {
    let script = format!("base64 {}", shell_quote(&path.display().to_string()));
    let t = Instant::now();
    let mut got = 0u64;
    raw_shell(&script, None, |b| got += b.len() as u64)?;
    let bytes = std::fs::metadata(path)?.len();
    Ok(Transfer { bytes, elapsed: t.elapsed(), logs: 0 })
}

/// `len` deterministic pseudo-random bytes (xorshift64*, seeded by `seed`).
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}
