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
use serde_json::value::RawValue;
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
    chunk: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecResult<'a> {
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default, borrow)]
    stdout: Option<&'a RawValue>,
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
                if let (Some("stdout"), Some(chunk)) = (p.stream.as_deref(), p.chunk) {
                    out.log_stdout_bytes += match filler.and_then(|f| filler_literal_len(chunk, f))
                    {
                        Some(n) => n as u64,
                        None => decode(chunk)?.len() as u64,
                    };
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
    out.stderr_len = r.stderr.len();
    let raw_stdout = r.stdout.unwrap_or(RawValue::NULL);
    match filler.and_then(|f| filler_literal_len(raw_stdout, f)) {
        // The literal is exactly the filler repeated: no decode needed to know the text.
        Some(n) if !keep_stdout => {
            out.stdout_len = n;
            out.filler_ok = true;
        }
        _ => {
            let stdout = if r.stdout.is_some() { decode(raw_stdout)? } else { Cow::Borrowed("") };
            out.stdout_len = stdout.len();
            out.filler_ok = filler.is_none_or(|f| all_bytes_are(stdout.as_bytes(), f));
            if keep_stdout {
                out.stdout = stdout.into_owned();
            }
        }
    }
    Ok(true)
}

/// A JSON string literal (`raw`, quotes included) decoded.
fn decode(raw: &RawValue) -> io::Result<Cow<'_, str>> {
    serde_json::from_str(raw.get())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad string: {e}")))
}

/// When the JSON string literal `raw` is exactly `byte` repeated, each written as `serde_json`
/// writes it (`a`, `\u0000`, `\u0001`…): how many times. Checked by comparing the literal
/// with the expected text a block at a time, without decoding it — so that the client's own
/// decoding of escape-heavy output (serde_json takes an escape at a time) does not become
/// what a row measures. `None` for any other text (the caller decodes it then).
pub fn filler_literal_len(raw: &RawValue, byte: u8) -> Option<usize> {
    let escaped = serde_json::to_string(&char::from(byte)).ok()?;
    let unit = escaped.as_bytes().get(1..escaped.len() - 1)?;
    let inner = raw.get().as_bytes().strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if unit.is_empty() || inner.len() % unit.len() != 0 {
        return None;
    }
    let pattern = unit.repeat(4096 / unit.len());
    inner
        .chunks(pattern.len())
        .all(|c| c == &pattern[..c.len()])
        .then_some(inner.len() / unit.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(serde_json::to_string(text).unwrap()).unwrap()
    }

    #[test]
    fn filler_literals_are_counted_only_when_exact() {
        for byte in [b'a', 0, 1, b'\n', b'"'] {
            for n in [0, 1, 4095, 4096, 10_000] {
                let text = char::from(byte).to_string().repeat(n);
                assert_eq!(filler_literal_len(&raw(&text), byte), Some(n), "{byte} x {n}");
            }
            let mut other = char::from(byte).to_string().repeat(5000);
            other.replace_range(4999.., "b");
            assert_eq!(filler_literal_len(&raw(&other), byte), None, "{byte}: one byte differs");
        }
        // Another spelling of the same text is not the expected literal (decoded instead).
        let upper = RawValue::from_string("\"\\u0000\\U0000\"".into());
        assert!(upper.is_err() || filler_literal_len(&upper.unwrap(), 0).is_none());
        assert_eq!(filler_literal_len(RawValue::NULL, 0), None);
    }

    #[test]
    fn execute_answers_count_the_filler_with_or_without_escapes() {
        for byte in [b'a', 0] {
            let text = char::from(byte).to_string().repeat(9000);
            let log = json!({"jsonrpc": "2.0", "method": "execute.log",
                "params": {"stream": "stdout", "chunk": text}});
            let answer = json!({"jsonrpc": "2.0", "id": 7,
                "result": {"exitCode": 0, "stdout": text, "stderr": ""}});
            let mut out = Executed::default();
            let log = serde_json::to_vec(&log).unwrap();
            assert!(!read_execute_frame(&log, 7, false, Some(byte), &mut out).unwrap());
            let answer = serde_json::to_vec(&answer).unwrap();
            assert!(read_execute_frame(&answer, 7, false, Some(byte), &mut out).unwrap());
            assert_eq!((out.log_stdout_bytes, out.stdout_len, out.filler_ok), (9000, 9000, true));
            let mut wrong = Executed::default();
            assert!(read_execute_frame(&answer, 7, true, Some(b'z'), &mut wrong).unwrap());
            assert!(!wrong.filler_ok && wrong.stdout == text);
        }
    }
}
