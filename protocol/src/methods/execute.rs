//! environmentExecute and the `execute.log` notification.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::lease::wire::lenient_count;
use super::lease::{EnvironmentBaseParams, JsonObject, Lease};

params_struct! {
    /// Params of `environmentExecute` (D.9).
    pub struct ExecuteParams {
        /// The lease to run in.
        pub lease: Lease,
        /// The program (for example `sh`); arguments go in `args`.
        pub command: String,
        /// Arguments.
        pub args: Option<Vec<String>>,
        /// Working directory inside the sandbox.
        pub cwd: Option<String>,
        /// Extra environment variables.
        pub env: Option<BTreeMap<String, String>>,
        /// Bytes to write to the command's stdin (base64 payloads of the exec fallback, D.9).
        pub stdin: Option<String>,
        /// Requested timeout in ms (fractions truncated; negative reads as absent).
        #[serde(default, deserialize_with = "lenient_count")]
        pub timeout_ms: Option<u64>,
        /// Run one-shot, outside any persistent process session.
        pub bypass_session: Option<bool>,
    }
}

impl ExecuteParams {
    /// Params running `command` in `lease` with every optional field absent.
    pub fn new(base: EnvironmentBaseParams, lease: Lease, command: impl Into<String>) -> Self {
        ExecuteParams {
            base,
            lease,
            command: command.into(),
            args: None,
            cwd: None,
            env: None,
            stdin: None,
            timeout_ms: None,
            bypass_session: None,
        }
    }

    /// Sets the arguments.
    pub fn with_args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args = Some(args.into_iter().map(Into::into).collect());
        self
    }
}

impl<C> ExecuteParams<C> {
    /// The arguments, empty when absent.
    pub fn args(&self) -> &[String] {
        self.args.as_deref().unwrap_or_default()
    }

    /// `bypassSession`, false when absent.
    pub fn bypass_session(&self) -> bool {
        self.bypass_session.unwrap_or(false)
    }

    /// The command's timeout: `None` when `timeoutMs` is absent or 0 (no timeout).
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout_ms.filter(|&ms| ms > 0).map(std::time::Duration::from_millis)
    }
}

/// Result of `environmentExecute` (D.9). It carries the full output even when it was also
/// streamed with `execute.log`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExecuteResult {
    /// The exit code; `null` when the process did not exit normally. Always serialized.
    #[serialize_always]
    pub exit_code: Option<i64>,
    /// The terminating signal name (for example `SIGKILL`); `null` reads as absent.
    pub signal: Option<String>,
    /// Whether the command hit its timeout.
    #[serde(default)]
    pub timed_out: bool,
    /// The full standard output.
    #[serde(default)]
    pub stdout: String,
    /// The full standard error.
    #[serde(default)]
    pub stderr: String,
    /// Provider metadata.
    pub metadata: Option<JsonObject>,
}

impl ExecuteResult {
    /// A normal exit with `exit_code` and empty output.
    pub fn exited(exit_code: i64) -> Self {
        ExecuteResult { exit_code: Some(exit_code), ..Default::default() }
    }

    /// Termination by `signal` (`exitCode: null`).
    pub fn signaled(signal: impl Into<String>) -> Self {
        ExecuteResult { signal: Some(signal.into()), ..Default::default() }
    }

    /// A timeout (`exitCode: null`, `timedOut: true`).
    pub fn timed_out() -> Self {
        ExecuteResult { timed_out: true, ..Default::default() }
    }

    /// Sets stdout.
    pub fn with_stdout(mut self, stdout: impl Into<String>) -> Self {
        self.stdout = stdout.into();
        self
    }

    /// Sets stderr.
    pub fn with_stderr(mut self, stderr: impl Into<String>) -> Self {
        self.stderr = stderr.into();
        self
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Appends the result as JSON: byte for byte what `serde_json::to_writer(out, self)`
    /// appends, with `stdout` and `stderr` escaped a word at a time
    /// ([`push_json_string`](crate::json_text::push_json_string)) rather than a byte at a time.
    /// For answers carrying megabytes of output.
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.reserve(self.stdout.len() + self.stderr.len() + 96);
        self.write_json_with(out, |out, stream| {
            let text = match stream {
                OutputStream::Stdout => &self.stdout,
                OutputStream::Stderr => &self.stderr,
            };
            crate::json_text::push_json_string(out, text);
        })
    }

    /// [`write_json`](Self::write_json) where `output` writes the JSON string literal of each
    /// output stream in its place (the result's own `stdout` and `stderr` are not read): for
    /// a writer that keeps the output text where it is and sends long runs of it without a
    /// copy ([`push_json_string_runs`](crate::json_text::push_json_string_runs)).
    pub fn write_json_with(
        &self,
        out: &mut Vec<u8>,
        mut output: impl FnMut(&mut Vec<u8>, OutputStream),
    ) -> serde_json::Result<()> {
        use std::io::Write as _;
        // Every field, so that a new one cannot be forgotten here.
        let ExecuteResult { exit_code, signal, timed_out, stdout: _, stderr: _, metadata } = self;
        out.extend_from_slice(b"{\"exitCode\":");
        match exit_code {
            Some(code) => write!(out, "{code}").map_err(serde_json::Error::io)?,
            None => out.extend_from_slice(b"null"),
        }
        if let Some(signal) = signal {
            out.extend_from_slice(b",\"signal\":");
            crate::json_text::push_json_string(out, signal);
        }
        out.extend_from_slice(if *timed_out {
            b",\"timedOut\":true,\"stdout\":"
        } else {
            b",\"timedOut\":false,\"stdout\":"
        });
        output(out, OutputStream::Stdout);
        out.extend_from_slice(b",\"stderr\":");
        output(out, OutputStream::Stderr);
        if let Some(metadata) = metadata {
            out.extend_from_slice(b",\"metadata\":");
            serde_json::to_writer(&mut *out, metadata)?;
        }
        out.push(b'}');
        Ok(())
    }
}

/// The stream an `execute.log` chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// The largest chunk the host delivers, in UTF-16 code units (JavaScript string length).
pub const EXECUTE_LOG_MAX_CHUNK_CHARS: usize = 1_000_000;
/// The most characters (UTF-16 code units) the host delivers for one execute call; later
/// chunks are dropped.
pub const EXECUTE_LOG_MAX_TOTAL_CHARS: u64 = 134_217_728;

/// The length of `s` as the host measures it: UTF-16 code units.
pub fn js_length(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Why the host would drop an `execute.log` chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteLogError {
    /// The chunk is empty.
    #[error("execute.log chunk is empty (the host drops empty chunks)")]
    Empty,
    /// The chunk exceeds [`EXECUTE_LOG_MAX_CHUNK_CHARS`].
    #[error(
        "execute.log chunk has {0} UTF-16 code units; the host drops chunks above {max}",
        max = EXECUTE_LOG_MAX_CHUNK_CHARS
    )]
    TooLong(usize),
}

/// Params of the worker→host `execute.log` notification (A.6). Deserialization does not
/// validate (a harness must see bad chunks); [`ExecuteLogParams::new`] and
/// [`ExecuteLogParams::validate`] apply the host's per-chunk rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExecuteLogParams {
    /// `stdout` or `stderr`.
    pub stream: OutputStream,
    /// 1 to 1,000,000 UTF-16 code units of text.
    #[schemars(length(min = 1, max = 1_000_000))]
    pub chunk: String,
}

impl ExecuteLogParams {
    /// A chunk the host will accept (size-wise).
    pub fn new(stream: OutputStream, chunk: impl Into<String>) -> Result<Self, ExecuteLogError> {
        let params = ExecuteLogParams { stream, chunk: chunk.into() };
        params.validate().map(|()| params)
    }

    /// Checks the host's per-chunk size rule.
    pub fn validate(&self) -> Result<(), ExecuteLogError> {
        match js_length(&self.chunk) {
            0 => Err(ExecuteLogError::Empty),
            n if n > EXECUTE_LOG_MAX_CHUNK_CHARS => Err(ExecuteLogError::TooLong(n)),
            _ => Ok(()),
        }
    }

    /// Splits `text` into valid chunks on character boundaries (none for empty text).
    pub fn split(stream: OutputStream, text: &str) -> Vec<ExecuteLogParams> {
        let mut out = Vec::new();
        let (mut start, mut units) = (0, 0);
        for (i, c) in text.char_indices() {
            if units + c.len_utf16() > EXECUTE_LOG_MAX_CHUNK_CHARS {
                out.push(ExecuteLogParams { stream, chunk: text[start..i].to_owned() });
                (start, units) = (i, 0);
            }
            units += c.len_utf16();
        }
        if start < text.len() {
            out.push(ExecuteLogParams { stream, chunk: text[start..].to_owned() });
        }
        out
    }
}

/// Tracks the per-call total of [`EXECUTE_LOG_MAX_TOTAL_CHARS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecuteLogBudget {
    used: u64,
}

impl ExecuteLogBudget {
    /// A fresh budget for one execute call.
    pub fn new() -> Self {
        Self::default()
    }

    /// Characters (UTF-16 code units) admitted so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Admits `chunk` when the total including it stays within the limit; a refused chunk
    /// does not count.
    pub fn admit(&mut self, chunk: &str) -> bool {
        let total = self.used + js_length(chunk) as u64;
        if total > EXECUTE_LOG_MAX_TOTAL_CHARS {
            return false;
        }
        self.used = total;
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::methods::lease::from_json;

    proptest::proptest! {
        #[test]
        fn write_json_is_serde_json(
            code in proptest::option::of(proptest::num::i64::ANY),
            signal in proptest::option::of("[A-Z\"\\\n]{0,8}"),
            timed_out in proptest::bool::ANY,
            stdout in "(\\PC|[\\x00-\\x1f\"\\\\]){0,64}",
            stderr in "(\\PC|\n){0,16}",
            meta in proptest::option::of("[a-z\"]{0,6}"),
        ) {
            let r = ExecuteResult {
                exit_code: code,
                signal,
                timed_out,
                stdout,
                stderr,
                metadata: meta.map(|k| JsonObject::from_iter([(k, json!({"n": [1, "x\u{1}"]}))])),
            };
            let mut fast = Vec::new();
            r.write_json(&mut fast).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(fast).unwrap(), serde_json::to_string(&r).unwrap());
        }
    }

    #[test]
    fn timeout_is_absent_for_missing_zero_and_negative_timeout_ms() {
        let params = |extra: Value| {
            let mut v = json!({
                "driverKey": "d", "companyId": "c", "environmentId": "e", "config": {},
                "lease": {"providerLeaseId": "l"}, "command": "sh"
            });
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            serde_json::from_value::<ExecuteParams>(v).unwrap()
        };
        assert_eq!(params(json!({})).timeout(), None);
        assert_eq!(params(json!({"timeoutMs": 0})).timeout(), None);
        assert_eq!(params(json!({"timeoutMs": -5})).timeout(), None);
        assert_eq!(
            params(json!({"timeoutMs": 1500.7})).timeout(),
            Some(std::time::Duration::from_millis(1500))
        );
    }

    #[test]
    fn execute_params_wire() {
        let v = json!({
            "driverKey": "rust-sbx", "companyId": "c1", "environmentId": "e1", "config": {},
            "lease": {"providerLeaseId": "sbx1", "metadata": {}, "expiresAt": null},
            "command": "bash", "args": ["-lc", "echo hi"], "cwd": "/w",
            "env": {"SHELL": "/bin/bash"}, "stdin": "aGk=", "timeoutMs": 300000,
            "bypassSession": true, "executionId": "x1"
        });
        let p: ExecuteParams = from_json(v.clone());
        assert_eq!(p.args(), ["-lc", "echo hi"]);
        assert!(p.bypass_session());
        assert_eq!(p.timeout_ms, Some(300_000));
        assert_eq!(p.env.as_ref().unwrap()["SHELL"], "/bin/bash");
        assert_eq!(p.base.extra["executionId"], "x1");
        assert_eq!(serde_json::to_value(&p).unwrap(), v);

        let minimal: ExecuteParams = from_json(json!({
            "driverKey": "d", "companyId": "c", "environmentId": "e", "config": {},
            "lease": {"providerLeaseId": "sbx1"}, "command": "true", "timeoutMs": 1.5
        }));
        assert!(minimal.args().is_empty());
        assert!(!minimal.bypass_session());
        assert_eq!(minimal.timeout_ms, Some(1));
    }

    #[test]
    fn execute_result_exit_code_null_vs_number() {
        let r = ExecuteResult::exited(0).with_stdout("hi\n");
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"exitCode": 0, "timedOut": false, "stdout": "hi\n", "stderr": ""})
        );
        let t = ExecuteResult::timed_out();
        assert_eq!(serde_json::to_value(&t).unwrap()["exitCode"], Value::Null);
        let s: ExecuteResult = from_json(json!({
            "exitCode": null, "signal": "SIGKILL", "timedOut": false, "stdout": "", "stderr": "killed"
        }));
        assert_eq!(s, ExecuteResult::signaled("SIGKILL").with_stderr("killed"));
        let nul_signal: ExecuteResult = from_json(json!({
            "exitCode": 1, "signal": null, "timedOut": false, "stdout": "", "stderr": ""
        }));
        assert_eq!(nul_signal.signal, None);
    }

    #[test]
    fn execute_log_limits() {
        let ok = ExecuteLogParams::new(OutputStream::Stderr, "line\n").unwrap();
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"stream": "stderr", "chunk": "line\n"})
        );
        assert_eq!(ExecuteLogParams::new(OutputStream::Stdout, ""), Err(ExecuteLogError::Empty));
        let max = "a".repeat(EXECUTE_LOG_MAX_CHUNK_CHARS);
        assert!(ExecuteLogParams::new(OutputStream::Stdout, max.clone()).is_ok());
        assert_eq!(
            ExecuteLogParams::new(OutputStream::Stdout, max + "b"),
            Err(ExecuteLogError::TooLong(EXECUTE_LOG_MAX_CHUNK_CHARS + 1))
        );
        // Astral characters count as two UTF-16 code units, as in JavaScript.
        assert_eq!(js_length("a😀"), 3);
        assert!(serde_json::from_value::<ExecuteLogParams>(
            json!({"stream": "stdin", "chunk": "x"})
        )
        .is_err());
    }

    #[test]
    fn execute_log_split_respects_utf16_limit() {
        let text = format!("{}😀tail", "a".repeat(EXECUTE_LOG_MAX_CHUNK_CHARS - 1));
        let chunks = ExecuteLogParams::split(OutputStream::Stdout, &text);
        assert_eq!(chunks.len(), 2);
        assert!(chunks.iter().all(|c| c.validate().is_ok()));
        assert_eq!(chunks[1].chunk, "😀tail");
        assert_eq!(chunks.iter().map(|c| c.chunk.as_str()).collect::<String>(), text);
        assert!(ExecuteLogParams::split(OutputStream::Stdout, "").is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn split_chunks_are_valid_and_lossless(text in "(.|\\n){0,64}", repeat in 1usize..40_000) {
            let text = text.repeat(repeat);
            let chunks = ExecuteLogParams::split(OutputStream::Stderr, &text);
            proptest::prop_assert!(chunks.iter().all(|c| c.validate().is_ok()));
            proptest::prop_assert_eq!(chunks.iter().map(|c| c.chunk.as_str()).collect::<String>(), text);
        }
    }

    #[test]
    fn execute_log_budget() {
        let mut b = ExecuteLogBudget::new();
        let big = "x".repeat(EXECUTE_LOG_MAX_CHUNK_CHARS);
        for _ in 0..134 {
            assert!(b.admit(&big));
        }
        assert!(!b.admit(&big));
        assert!(b.admit(&"y".repeat(217_728)));
        assert_eq!(b.used(), EXECUTE_LOG_MAX_TOTAL_CHARS);
        assert!(!b.admit("z"));
    }
}
