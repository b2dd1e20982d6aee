//! The one client every worker is driven with: a child process spoken to in NDJSON over its
//! stdin/stdout, with blocking std I/O (no async runtime on the measuring side).

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;

/// How to start one worker.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// Display name (the table's row label).
    pub name: String,
    /// The executable (`node` for the official SDK worker).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Working directory, if not inherited.
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
}

impl WorkerSpec {
    /// A spec running `program` with no arguments.
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
        }
    }

    /// The command this spec describes, with piped stdin/stdout. The worker's stderr is
    /// discarded unless `PAPERCLIP_BENCH_STDERR` is set (then it is inherited, for debugging).
    pub fn command(&self) -> Command {
        let stderr = match std::env::var_os("PAPERCLIP_BENCH_STDERR") {
            Some(_) => Stdio::inherit(),
            None => Stdio::null(),
        };
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }
}

/// The part of an incoming frame the client looks at. Frames with a `method` are requests or
/// notifications from the worker and are skipped; `error` marks a failed call.
#[derive(Deserialize)]
struct Frame {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// A response the client read: its numeric id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The response `id`.
    pub id: u64,
}

/// Reads frames from a worker's stdout until a response arrives; skips worker-initiated
/// frames. Errors on EOF, malformed JSON, a non-numeric id or an `error` response.
pub fn read_reply(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Reply> {
    loop {
        line.clear();
        if reader.read_until(b'\n', line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "worker closed stdout"));
        }
        let frame: Frame = serde_json::from_slice(line).map_err(|e| {
            let text = String::from_utf8_lossy(line);
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad frame ({e}): {}", text.trim_end()),
            )
        })?;
        if frame.method.is_some() {
            continue;
        }
        if let Some(err) = frame.error {
            return Err(io::Error::other(format!("error response: {err}")));
        }
        let id = frame.id.as_ref().and_then(serde_json::Value::as_u64).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "response without a numeric id")
        })?;
        return Ok(Reply { id });
    }
}

/// The index of the first `\n` in `bytes`: sixty-four bytes a step (vector compares), so the
/// client's search costs little next to the megabyte lines of execute output.
pub fn find_newline(bytes: &[u8]) -> Option<usize> {
    const STEP: usize = 64;
    let plain = bytes
        .chunks_exact(STEP)
        .take_while(|c| !c.iter().fold(false, |seen, &b| seen | (b == b'\n')))
        .count();
    let from = plain * STEP;
    bytes[from..].iter().position(|&b| b == b'\n').map(|i| from + i)
}

/// Calls `f` with the next line of `reader` (without its `\n`; an error at EOF): lent from
/// the read buffer when the whole line is there, else assembled in `line`. Large lines are
/// read in buffer-sized pieces and searched with [`find_newline`].
pub fn with_next_line<R: BufRead, T>(
    reader: &mut R,
    line: &mut Vec<u8>,
    f: impl FnOnce(&[u8]) -> io::Result<T>,
) -> io::Result<T> {
    line.clear();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "worker closed stdout"));
        }
        match find_newline(buf) {
            Some(i) if line.is_empty() => {
                let out = f(&buf[..i]);
                reader.consume(i + 1);
                return out;
            }
            Some(i) => {
                line.extend_from_slice(&buf[..i]);
                reader.consume(i + 1);
                return f(line);
            }
            None => {
                let n = buf.len();
                line.extend_from_slice(buf);
                reader.consume(n);
            }
        }
    }
}

/// Appends `{"jsonrpc":"2.0","id":<id>,"method":<method>,"params":<params>}\n` to `buf`.
/// `params_json` must be a JSON value (e.g. `{}`); `method` must need no escaping.
pub fn encode_request(buf: &mut Vec<u8>, id: u64, method: &str, params_json: &str) {
    // Writing into a Vec cannot fail.
    let _ = writeln!(
        buf,
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params_json}}}"
    );
}

/// The read buffer of a worker's stdout: large enough that a megabyte `execute.log` frame
/// usually arrives whole and is parsed in place.
const READ_BUF: usize = 4 << 20;

/// A running worker process.
pub struct Worker {
    child: Child,
    /// Buffered stdin (flushed by [`Worker::call`]); `None` once closed.
    pub stdin: Option<BufWriter<ChildStdin>>,
    /// Buffered stdout.
    pub stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// The line buffer for lines that straddle reads.
    pub line: Vec<u8>,
    req: Vec<u8>,
}

impl Worker {
    /// Spawns the worker described by `spec`.
    pub fn spawn(spec: &WorkerSpec) -> io::Result<Self> {
        let mut child = spec.command().spawn().map_err(|e| {
            io::Error::new(e.kind(), format!("spawning {}: {e}", spec.program.display()))
        })?;
        let stdin = child.stdin.take().map(|s| BufWriter::with_capacity(64 * 1024, s));
        let stdout = child.stdout.take().expect("stdout is piped");
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::with_capacity(READ_BUF, stdout),
            next_id: 1,
            line: Vec::with_capacity(1024),
            req: Vec::with_capacity(256),
        })
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next unused request id (ids increase from 1).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Reserves `n` request ids and returns the first.
    pub fn reserve_ids(&mut self, n: u64) -> u64 {
        let first = self.next_id;
        self.next_id += n;
        first
    }

    /// Sends one request, flushes, and waits for its answer (sequential round trip).
    pub fn call(&mut self, method: &str, params_json: &str) -> io::Result<Reply> {
        let id = self.reserve_ids(1);
        self.req.clear();
        encode_request(&mut self.req, id, method, params_json);
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
        stdin.write_all(&self.req)?;
        stdin.flush()?;
        let reply = read_reply(&mut self.stdout, &mut self.line)?;
        if reply.id != id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("expected id {id}, got {}", reply.id),
            ));
        }
        Ok(reply)
    }

    /// Sends one request and returns its `result` (worker-initiated frames are skipped; an
    /// `error` response is an error).
    pub fn call_value(&mut self, method: &str, params_json: &str) -> io::Result<serde_json::Value> {
        let id = self.reserve_ids(1);
        self.req.clear();
        encode_request(&mut self.req, id, method, params_json);
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
        stdin.write_all(&self.req)?;
        stdin.flush()?;
        loop {
            self.line.clear();
            if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "worker closed stdout"));
            }
            let mut frame: serde_json::Value = serde_json::from_slice(&self.line)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if frame.get("method").is_some() || frame["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(err) = frame.get("error") {
                return Err(io::Error::other(format!("{method}: error response: {err}")));
            }
            return Ok(frame["result"].take());
        }
    }

    /// Sends one request and returns the raw response line (for correctness checks).
    pub fn call_raw(&mut self, method: &str, params_json: &str) -> io::Result<String> {
        let id = self.reserve_ids(1);
        self.req.clear();
        encode_request(&mut self.req, id, method, params_json);
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
        stdin.write_all(&self.req)?;
        stdin.flush()?;
        self.line.clear();
        if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "worker closed stdout"));
        }
        Ok(String::from_utf8_lossy(&self.line).trim_end().to_owned())
    }

    /// The `initialize` handshake with an empty manifest and config.
    pub fn initialize(&mut self) -> io::Result<Reply> {
        self.call("initialize", r#"{"manifest":{},"config":{}}"#)
    }

    /// Closes stdin (EOF) and waits up to `grace` for the process to exit, then kills it.
    /// Returns the exit status.
    pub fn close(mut self, grace: Duration) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                return self.child.wait();
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Never leave a worker behind (close() already reaped it when called).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Resident set size of `pid` in bytes (`VmRSS` from `/proc/<pid>/status`; Linux only).
pub fn rss_bytes(pid: u32) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_vm_rss(&status).ok_or_else(|| io::Error::other("no VmRSS line in /proc status"))
}

/// The `VmRSS:` value of a `/proc/<pid>/status` text, in bytes.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut parts = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    let unit = match parts.next() {
        Some("kB") | None => 1024,
        Some("mB") => 1024 * 1024,
        Some(_) => return None,
    };
    Some(value * unit)
}
