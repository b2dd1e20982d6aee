//! A result on its way to the wire: JSON text in parts, so that the megabytes of output an
//! `environmentExecute` answer carries are queued as they were collected instead of copied.

use bytes::Bytes;
use paperclip_sandbox_protocol::json_text::push_json_string_runs;
use paperclip_sandbox_protocol::methods::{ExecuteResult, OutputStream};
use serde_json::value::RawValue;

/// Parts this long or longer are queued for the writer as they are; shorter ones are copied
/// into the frame ([`FrameSink::send_result`](super::codec::FrameSink::send_result)).
pub(crate) const SPLICE_MIN: usize = 64 * 1024;

/// A request's result as JSON text: the parts, concatenated, are one JSON value, and each part
/// is UTF-8 on its own (parts are cut only next to an ASCII byte).
/// (Public only for the code `#[provider]` and the method table generate.)
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ResultJson {
    parts: Vec<Bytes>,
}

impl From<Box<RawValue>> for ResultJson {
    fn from(raw: Box<RawValue>) -> Self {
        let text: Box<str> = raw.into();
        ResultJson { parts: vec![Bytes::from(text.into_boxed_bytes())] }
    }
}

impl ResultJson {
    /// An `environmentExecute` result, byte for byte [`ExecuteResult::write_json`]'s text,
    /// with every run of output that needs no escape and is at least [`SPLICE_MIN`] bytes
    /// long left where it was collected (a slice of the output's own buffer).
    pub(crate) fn execute(mut result: ExecuteResult) -> serde_json::Result<Self> {
        let stdout = Bytes::from(std::mem::take(&mut result.stdout).into_bytes());
        let stderr = Bytes::from(std::mem::take(&mut result.stderr).into_bytes());
        let mut parts = Vec::new();
        let mut out = Vec::new();
        result.write_json_with(&mut out, |out, stream| {
            let text = match stream {
                OutputStream::Stdout => &stdout,
                OutputStream::Stderr => &stderr,
            };
            // SAFETY: the bytes are those of a `String` (taken above), so valid UTF-8.
            let as_str = unsafe { std::str::from_utf8_unchecked(text) };
            push_json_string_runs(out, as_str, SPLICE_MIN, &mut |out, run| {
                parts.push(Bytes::from(std::mem::take(out)));
                parts.push(text.slice(run));
            });
        })?;
        parts.push(Bytes::from(out));
        Ok(ResultJson { parts })
    }

    /// The parts, in order.
    pub(crate) fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// The whole text (for the small results the runtime reads back itself).
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.parts.concat()).expect("every part is UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_results_are_write_json_and_share_long_plain_runs() {
        let run = "a".repeat(SPLICE_MIN);
        let cases = [
            ExecuteResult::exited(0),
            ExecuteResult::exited(0).with_stdout(run.clone()),
            ExecuteResult::timed_out()
                .with_stdout(format!("{run}\n\"é{run}x\u{1}"))
                .with_stderr(format!("warn\n{run}")),
            ExecuteResult::signaled("SIGKILL").with_stdout("short\n").with_stderr(run.clone()),
        ];
        for (case, long_runs) in cases.into_iter().zip([0, 1, 3, 1]) {
            let mut want = Vec::new();
            case.write_json(&mut want).unwrap();
            let json = ResultJson::execute(case).unwrap();
            assert_eq!(json.text().as_bytes(), want, "same text");
            let shared = json.parts().iter().filter(|p| p.len() >= SPLICE_MIN).count();
            assert_eq!(shared, long_runs, "runs of {SPLICE_MIN} bytes are their own parts");
            for part in json.parts() {
                assert!(std::str::from_utf8(part).is_ok(), "each part is UTF-8");
            }
        }
    }

    #[test]
    fn the_run_is_the_collected_buffer_not_a_copy() {
        let stdout = "z".repeat(SPLICE_MIN * 2);
        let at = stdout.as_ptr();
        let json = ResultJson::execute(ExecuteResult::exited(0).with_stdout(stdout)).unwrap();
        assert!(json.parts().iter().any(|p| p.as_ptr() == at), "stdout is sent from where it was");
    }
}
