//! `sandbox-conformance replay FILE -- <worker…>`: re-sends the host→worker lines of a failure
//! transcript to a fresh worker, in order, waiting for the answer of each request, and diffs the
//! answers against the recorded ones.
//!
//! What is compared, per request id: whether the answer is a result or an error (or missing,
//! malformed, or answered with the wrong id type); for errors, the code; for results, the
//! *shape* (object keys and JSON types, recursively). Values are not compared, because lease
//! ids, paths, timestamps and invocation ids change from run to run. Shortened lines (the
//! oversize frame) cannot be re-sent and are skipped with a note.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::{parse_line, Id, Message, Outcome};
use serde_json::Value;

use crate::error::HarnessError;
use crate::host::{clip, Observations, Reply, Session, SessionConfig};
use crate::process::WorkerCommand;
use crate::transcript::{Direction, Entry};

/// The check id a transcript file is named after (`DIR/<check-id>.ndjson`, as `run --artifacts`
/// writes it), or `None` when the name is not of that form.
pub fn check_id_of(path: &std::path::Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_suffix(".ndjson")?;
    let valid = !id.is_empty()
        && id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        });
    valid.then(|| id.to_owned())
}

/// The JSON shape of a value: types and keys, not values.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(items) => {
            let mut shapes: Vec<Value> = items.iter().map(shape).collect();
            shapes.dedup();
            Value::Array(shapes)
        }
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> = map.iter().map(|(k, v)| (k, shape(v))).collect();
            serde_json::to_value(sorted).expect("shapes serialize")
        }
    }
}

/// What is compared of an answer.
fn digest(reply: &Reply) -> Value {
    match reply {
        Reply::Result(v) => serde_json::json!({"result": shape(v)}),
        Reply::Error(e) => serde_json::json!({"error": e.code}),
        Reply::Malformed { .. } => "malformed".into(),
        Reply::WrongIdType { .. } => "wrong id type".into(),
        Reply::Timeout(_) => "no answer".into(),
        Reply::Exited => "worker exited".into(),
    }
}

/// The recorded answers of a transcript, by request id.
fn recorded_answers(entries: &[Entry]) -> HashMap<Id, Reply> {
    let mut answers = HashMap::new();
    for e in entries.iter().filter(|e| e.dir == Direction::Recv) {
        if let Ok(Message::Response(r)) = parse_line(&e.line) {
            if let Some(id) = r.id {
                let reply = match r.outcome {
                    Outcome::Result(v) => Reply::Result(v),
                    Outcome::Error(err) => Reply::Error(err),
                };
                answers.entry(id).or_insert(reply);
            }
        }
    }
    answers
}

/// The digest of the recorded answer to `id`; an answer whose id matches only after changing its
/// JSON type counts as "wrong id type", as it did in the run.
fn recorded_digest(recorded: &HashMap<Id, Reply>, id: &Id) -> Value {
    if let Some(reply) = recorded.get(id) {
        return digest(reply);
    }
    let loose = |i: &Id| match i {
        Id::Number(n) => n.to_string(),
        Id::String(s) => s.clone(),
        other => other.to_string(),
    };
    if recorded.keys().any(|other| loose(other) == loose(id)) {
        return digest(&Reply::WrongIdType { sent: id.to_value(), got: Value::Null });
    }
    Value::from("no answer")
}

/// Replays `entries` against a fresh `command`; writes a line per request to `out` and returns
/// the number of differences.
///
/// With a `ledger`, the lease requests of the transcript are journaled to it as a run's are
/// (an acquire before it is sent), so that an interrupted replay can destroy, and `sweep` can
/// find, what it acquired.
pub fn replay(
    entries: &[Entry],
    command: &WorkerCommand,
    timeout: Duration,
    ledger: Option<crate::ledger_file::LedgerFile>,
    out: &mut dyn Write,
) -> Result<usize, HarnessError> {
    let recorded = recorded_answers(entries);
    let config =
        SessionConfig { call_timeout: timeout, ledger_file: ledger, ..SessionConfig::default() };
    let mut session = Session::spawn(command, "replay", config, Observations::default())?;
    let io = |e: std::io::Error| HarnessError::io("<stdout>", e);
    let mut diffs = 0;
    for e in entries.iter().filter(|e| e.dir == Direction::Send) {
        if let Some(bytes) = e.elided_bytes {
            writeln!(out, "skip  a line of {bytes} bytes (shortened in the transcript)")
                .map_err(io)?;
            continue;
        }
        let request = match parse_line(&e.line) {
            Ok(Message::Request(r)) => Some(r),
            _ => None,
        };
        let Some(request) = request else {
            session.send_raw(format!("{}\n", e.line).into_bytes());
            continue;
        };
        let params = request.params.clone().unwrap_or(Value::Null);
        session.expect_request(request.id.clone(), &request.method, &params);
        session.send_raw(format!("{}\n", e.line).into_bytes());
        let reply = session.await_reply(&request.id, timeout);
        let now = digest(&reply);
        let before = recorded_digest(&recorded, &request.id);
        let verdict = if now == before { "same" } else { "DIFF" };
        if now != before {
            diffs += 1;
        }
        writeln!(out, "{verdict:<5} id {} {}: {}", request.id, request.method, reply.describe())
            .map_err(io)?;
        if now != before {
            writeln!(
                out,
                "      recorded: {}\n      now:      {}",
                clip(&before.to_string()),
                clip(&now.to_string())
            )
            .map_err(io)?;
        }
    }
    let deadline = Instant::now() + Duration::from_millis(200);
    session.pump_until(deadline, |_| false);
    for s in &session.strays {
        writeln!(out, "extra {}", clip(&s.value.to_string())).map_err(io)?;
    }
    for n in &session.notices {
        writeln!(out, "note  {} {}", n.method, clip(&n.params.to_string())).map_err(io)?;
    }
    session.shutdown(Duration::from_secs(2));
    Ok(diffs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_check_id_is_the_file_name() {
        let id = |p: &str| check_id_of(std::path::Path::new(p));
        assert_eq!(id("artifacts/execute.timeout.ndjson").as_deref(), Some("execute.timeout"));
        assert_eq!(id("shutdown.no-orphans.ndjson").as_deref(), Some("shutdown.no-orphans"));
        assert_eq!(id("transcript.json"), None);
        assert_eq!(id("My File.ndjson"), None);
        assert_eq!(id(".ndjson"), None);
    }

    #[test]
    fn shapes_ignore_values() {
        assert_eq!(
            shape(&json!({"providerLeaseId": "a", "metadata": {"dir": "/x"}, "n": [1, 2]})),
            shape(&json!({"n": [3], "metadata": {"dir": "/y"}, "providerLeaseId": "b"}))
        );
        assert_ne!(
            shape(&json!({"providerLeaseId": null})),
            shape(&json!({"providerLeaseId": "b"}))
        );
    }
}
