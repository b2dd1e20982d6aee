//! Output floods over the wire: a command printing output that the host's line limit and
//! UTF-8 decoding make hard, checked line by line as the host reads it.
//!
//! [`assert_output_floods_fit`] runs two commands through a spawned worker's
//! `environmentExecute` and checks every line the worker writes:
//!
//! * [`ESCAPE_FLOOD`]: 64 MiB of `\x01` bytes, which JSON escapes as six characters each
//!   (384 Mi code units, far over the limit): every line is at most the host's line limit
//!   ([`HOST_MAX_LINE_UNITS`]) and the result says `stdoutTruncated`.
//! * [`EURO_FLOOD`]: 300,000 `€` (three bytes each) written 4,093 bytes at a time, so writes
//!   split characters: the result and the streamed `execute.log` chunks carry exactly the
//!   300,000 characters, no U+FFFD.
//!
//! Then the worker still answers `health`.

use std::io;

use paperclip_sandbox_protocol::jsonrpc::HOST_MAX_LINE_UNITS;
use serde_json::{json, Value};

use super::WorkerProcess;

/// A `sh` script printing 64 MiB of `\x01` bytes.
pub const ESCAPE_FLOOD: &str = "head -c 67108864 /dev/zero | tr '\\000' '\\001'";

/// A `sh` script printing 300,000 `€` in writes of 4,093 bytes (`dd obs=4093`).
pub const EURO_FLOOD: &str = "yes '€' | head -n 300000 | tr -d '\\n' | dd obs=4093 2>/dev/null";

/// The `€` of [`EURO_FLOOD`].
pub const EURO_FLOOD_CHARS: usize = 300_000;

/// What a worker wrote for one request, read as the host reads it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecuteAnswer {
    /// The response.
    pub response: Value,
    /// The concatenated `execute.log` chunks of stdout (when asked for).
    pub streamed_stdout: Option<String>,
    /// The longest line read, in UTF-16 code units (what the host's limit counts).
    pub longest_line_units: usize,
    /// The lines read, the response included.
    pub lines: usize,
}

/// The UTF-16 code units of `line` (a JavaScript string's length).
pub fn line_units(line: &str) -> usize {
    line.encode_utf16().count()
}

impl WorkerProcess {
    /// Reads stdout lines until the response to `id`, measuring each; with `keep_streamed`
    /// the stdout `execute.log` chunks are parsed and kept (otherwise notifications are
    /// measured, not parsed).
    pub async fn read_execute_answer(
        &mut self,
        id: &Value,
        keep_streamed: bool,
    ) -> io::Result<ExecuteAnswer> {
        let mut answer = ExecuteAnswer {
            response: Value::Null,
            streamed_stdout: keep_streamed.then(String::new),
            longest_line_units: 0,
            lines: 0,
        };
        loop {
            let line = self.next_line().await?.ok_or_else(|| {
                io::Error::new(io::ErrorKind::UnexpectedEof, "worker stdout closed")
            })?;
            answer.lines += 1;
            answer.longest_line_units = answer.longest_line_units.max(line_units(&line));
            let notification = line.starts_with("{\"jsonrpc\":\"2.0\",\"method\":");
            if notification && !keep_streamed {
                continue;
            }
            let v: Value = serde_json::from_str(&line).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("non-JSON stdout line: {e}"))
            })?;
            if v.get("id") == Some(id) {
                answer.response = v;
                return Ok(answer);
            }
            let stdout_log = v["method"] == "execute.log" && v["params"]["stream"] == "stdout";
            if let (true, Some(streamed)) = (stdout_log, answer.streamed_stdout.as_mut()) {
                streamed.push_str(v["params"]["chunk"].as_str().unwrap_or_default());
            }
        }
    }
}

/// Runs [`ESCAPE_FLOOD`] and [`EURO_FLOOD`] through `worker` (initialized), with
/// `execute_params(script)` the `environmentExecute` params running `sh -c script` in a
/// lease, and asserts the bounds of the [module docs](self). Panics with the offending
/// answer (never the output) when one does not hold.
///
/// Without a `timeoutMs` in the params, each command gets an hour (the host's timer, and so
/// the call's deadline, would otherwise be its 30 s default: far too short for a debug build
/// on a loaded machine, where escaping 64 MiB of control bytes takes minutes).
pub async fn assert_output_floods_fit(
    worker: &mut WorkerProcess,
    execute_params: impl Fn(&str) -> Value,
) {
    let execute_params = |script: &str| {
        let mut params = execute_params(script);
        if params.get("timeoutMs").is_none() {
            params["timeoutMs"] = json!(3_600_000);
        }
        params
    };
    let id = json!("flood-escape");
    let line = json!({"jsonrpc": "2.0", "id": id, "method": "environmentExecute",
                      "params": execute_params(ESCAPE_FLOOD)});
    worker.send_line(&line.to_string()).await.expect("send");
    let answer = worker.read_execute_answer(&id, false).await.expect("an answer");
    assert!(
        answer.longest_line_units <= HOST_MAX_LINE_UNITS,
        "a line of {} units is over the host's limit",
        answer.longest_line_units
    );
    let result = &answer.response["result"];
    let ending = |r: &Value| {
        let error = &answer.response["error"];
        format!(
            "error {error}, timedOut {}, signal {}, metadata {}",
            r["timedOut"], r["signal"], r["metadata"]
        )
    };
    assert_eq!(result["exitCode"], json!(0), "{}", ending(result));
    assert_eq!(result["metadata"]["stdoutTruncated"], json!(true), "the cut output is flagged");
    let kept = result["stdout"].as_str().expect("stdout");
    assert!(!kept.is_empty() && kept.bytes().all(|b| b == 1), "the kept output is the output");

    let id = json!("flood-euro");
    let line = json!({"jsonrpc": "2.0", "id": id, "method": "environmentExecute",
                      "params": execute_params(EURO_FLOOD)});
    worker.send_line(&line.to_string()).await.expect("send");
    let answer = worker.read_execute_answer(&id, true).await.expect("an answer");
    assert!(answer.longest_line_units <= HOST_MAX_LINE_UNITS);
    let result = &answer.response["result"];
    assert_eq!(result["exitCode"], json!(0), "error {}", answer.response["error"]);
    assert!(result["metadata"]["stdoutTruncated"].is_null(), "{}", result["metadata"]);
    let want = "€".repeat(EURO_FLOOD_CHARS);
    let stdout = result["stdout"].as_str().expect("stdout");
    assert!(!stdout.contains('\u{FFFD}'), "U+FFFD in output that was not cut");
    assert!(stdout == want, "the result carries {} chars, not the 300,000 €", stdout.len());
    let streamed = answer.streamed_stdout.unwrap_or_default();
    assert!(!streamed.contains('\u{FFFD}'), "U+FFFD in the streamed output");
    assert!(streamed == want, "the stream carries {} bytes, not the 300,000 €", streamed.len());

    let health = worker.call(json!("flood-health"), "health", json!({})).await.expect("health");
    assert_eq!(health["result"]["status"], json!("ok"), "{health}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_the_javascript_length() {
        assert_eq!(line_units("a€😀"), 4);
        assert_eq!(line_units(""), 0);
    }
}
