//! Leases and `environmentExecute` as the host drives them: acquire with the driver's config,
//! execute with `cwd` = the lease's `metadata.remoteCwd` (the host's rule), and read the
//! answer while counting the `execute.log` notifications that precede it.
//!
//! The execute reader parses each frame once, borrowing the output strings from the line
//! buffer, so the client's own cost stays small and equal for every worker.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::client::{encode_request, with_next_line, Worker};
use crate::datapath::all_bytes_are;

/// The driver a worker is asked for, and the config it gets.
#[derive(Debug, Clone)]
pub struct Driver {
    /// `driverKey` of every call.
    pub key: String,
    /// `config` of every call.
    pub config: Value,
}

impl Driver {
    /// The base params every `environment*` call carries (`driverKey`, `companyId`,
    /// `environmentId`, `config`) plus `extra`.
    pub fn params(&self, extra: Value) -> Value {
        let mut v = json!({
            "driverKey": self.key, "companyId": "bench", "environmentId": "bench",
            "config": self.config,
        });
        if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        v
    }
}

/// An acquired lease.
#[derive(Debug, Clone)]
pub struct Lease {
    /// `providerLeaseId`.
    pub id: Value,
    /// The lease as the host passes it back (`providerLeaseId`, `metadata`).
    pub host_lease: Value,
    /// `metadata.remoteCwd`: where the host runs commands and puts files.
    pub remote_cwd: PathBuf,
}

/// `environmentAcquireLease`; the lease must name its `metadata.remoteCwd`.
pub fn acquire(w: &mut Worker, driver: &Driver, run_id: &str) -> io::Result<Lease> {
    let params = driver.params(json!({"runId": run_id}));
    let lease = w.call_value("environmentAcquireLease", &params.to_string())?;
    let remote_cwd = lease["metadata"]["remoteCwd"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| io::Error::other("the lease has no metadata.remoteCwd"))?;
    std::fs::create_dir_all(&remote_cwd)?;
    let id = lease["providerLeaseId"].clone();
    let host_lease = json!({"providerLeaseId": id, "metadata": lease["metadata"]});
    Ok(Lease { id, host_lease, remote_cwd })
}

/// `environmentReleaseLease`.
pub fn release(w: &mut Worker, driver: &Driver, lease: &Lease) -> io::Result<()> {
    let params = driver.params(json!({"providerLeaseId": lease.id}));
    w.call_value("environmentReleaseLease", &params.to_string()).map(drop)
}

/// The params of `environmentExecute` of `sh -c <script>` on `lease` in its `remoteCwd`, with
/// optional stdin, as the host's command-managed runtime sends it.
pub fn shell_params(driver: &Driver, lease: &Lease, script: &str, stdin: Option<&str>) -> String {
    let mut extra = json!({
        "lease": lease.host_lease, "command": "sh", "args": ["-c", script],
        "cwd": lease.remote_cwd, "timeoutMs": 300_000,
    });
    if let Some(s) = stdin {
        extra["stdin"] = Value::from(s);
    }
    driver.params(extra).to_string()
}

/// What one `environmentExecute` delivered.
#[derive(Debug, Clone, Default)]
pub struct Executed {
    /// `exitCode`.
    pub exit_code: Option<i64>,
    /// `stdout` of the result, if kept (see [`execute`]).
    pub stdout: String,
    /// Bytes of the result's `stdout`.
    pub stdout_len: usize,
    /// Bytes of the result's `stderr`.
    pub stderr_len: usize,
    /// `execute.log` notifications received before the answer.
    pub logs: u64,
    /// Bytes of their stdout chunks.
    pub log_stdout_bytes: u64,
    /// True when every byte of the result's stdout equals the expected filler byte (see
    /// [`execute`]).
    pub filler_ok: bool,
}

#[derive(Deserialize)]
struct ExecFrame<'a> {
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    params: Option<LogParams<'a>>,
    #[serde(default, borrow)]
    result: Option<ExecResult<'a>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LogParams<'a> {
    #[serde(default, borrow)]
    stream: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    chunk: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecResult<'a> {
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default, borrow)]
    stdout: Cow<'a, str>,
    #[serde(default, borrow)]
    stderr: Cow<'a, str>,
}

/// Sends one `environmentExecute` with `params_json` and reads until its answer, counting
/// `execute.log` notifications. `keep_stdout` keeps the result's stdout text; `filler`, when
/// given, is checked against every stdout byte ([`Executed::filler_ok`]).
pub fn execute(
    w: &mut Worker,
    params_json: &str,
    keep_stdout: bool,
    filler: Option<u8>,
) -> io::Result<Executed> {
    let id = w.reserve_ids(1);
    let mut req = Vec::with_capacity(params_json.len() + 80);
    encode_request(&mut req, id, "environmentExecute", params_json);
    {
        let stdin = w.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
        stdin.write_all(&req)?;
        stdin.flush()?;
    }
    drop(req);
    let mut out = Executed::default();
    let mut line = std::mem::take(&mut w.line);
    let done = loop {
        let answered = with_next_line(&mut w.stdout, &mut line, |line| {
            read_execute_frame(line, id, keep_stdout, filler, &mut out)
        });
        match answered {
            Ok(false) => continue,
            Ok(true) => break Ok(out),
            Err(e) => break Err(e),
        }
    };
    line.clear();
    w.line = line;
    done
}

/// Reads one frame of an execute answer into `out`: true once it was the answer to `id`.
fn read_execute_frame(
    line: &[u8],
    id: u64,
    keep_stdout: bool,
    filler: Option<u8>,
    out: &mut Executed,
) -> io::Result<bool> {
    let frame: ExecFrame<'_> = serde_json::from_slice(line)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad frame: {e}")))?;
    if let Some(method) = frame.method {
        if method == "execute.log" {
            out.logs += 1;
            if let Some(p) = frame.params {
                if p.stream.as_deref() == Some("stdout") {
                    out.log_stdout_bytes += p.chunk.map_or(0, |c| c.len() as u64);
                }
            }
        }
        return Ok(false);
    }
    if frame.id.as_ref().and_then(Value::as_u64) != Some(id) {
        return Ok(false);
    }
    if let Some(err) = frame.error {
        return Err(io::Error::other(format!("environmentExecute: error response: {err}")));
    }
    let r = frame.result.ok_or_else(|| io::Error::other("execute answer without result"))?;
    out.exit_code = r.exit_code;
    out.stdout_len = r.stdout.len();
    out.stderr_len = r.stderr.len();
    out.filler_ok = filler.is_none_or(|f| all_bytes_are(r.stdout.as_bytes(), f));
    if keep_stdout {
        out.stdout = r.stdout.into_owned();
    }
    Ok(true)
}

/// [`execute`] of `sh -c <script>` that must exit 0.
pub fn shell_ok(
    w: &mut Worker,
    driver: &Driver,
    lease: &Lease,
    script: &str,
    stdin: Option<&str>,
) -> io::Result<Executed> {
    let r = execute(w, &shell_params(driver, lease, script, stdin), true, None)?;
    if r.exit_code != Some(0) {
        return Err(io::Error::other(format!("`{script}` exited {:?}", r.exit_code)));
    }
    Ok(r)
}
