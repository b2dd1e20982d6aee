//! Framing checks: NDJSON details, parse errors, id echo, void results, method errors, oversize
//! frames and stdout purity.

use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Id};
use paperclip_sandbox_protocol::methods::{name, MethodFamily, METHODS};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Value};

use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::{clip, Reply, Session};

/// How long to keep listening for an answer to a raw line once the next request was answered.
const SETTLE: Duration = Duration::from_millis(500);

/// Sends `health` with a fresh id and requires some answer (result or error): proof that the
/// worker still serves. Returns the id's answer.
fn ping(session: &mut Session, after: &str) -> Result<Reply, Finding> {
    let reply = session.call(name::HEALTH, json!({}));
    match reply {
        Reply::Result(_) | Reply::Error(_) => Ok(reply),
        other => Err(fail(
            format!("the worker keeps serving after {after} (any answer to `health`)"),
            other.describe(),
        )),
    }
}

/// Error answers with id null that arrived since stray position `mark`.
fn null_id_errors(session: &Session, mark: usize) -> Vec<Value> {
    session.strays[mark..]
        .iter()
        .filter(|s| s.id.is_null() && s.value.get("error").is_some())
        .map(|s| s.value.clone())
        .collect()
}

/// Waits a little for a null-id error answer after the ping was answered.
fn wait_null_id_error(session: &mut Session, mark: usize) -> Vec<Value> {
    let deadline = Instant::now() + SETTLE;
    session.pump_until(deadline, |s| !null_id_errors(s, mark).is_empty());
    null_id_errors(session, mark)
}

/// WIRE-NDJSON-1.
pub fn blank_and_crlf(ctx: &mut Ctx<'_>) -> CheckResult {
    let s = ctx.session();
    let mark = s.strays.len();
    s.send_raw(b"\n   \n\r\n".to_vec());
    let id = s.next_id();
    s.expect_id(id.clone(), name::HEALTH);
    let line =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"health\",\"params\":{{}}}}\r\n");
    s.send_raw(line.into_bytes());
    let timeout = s.config().call_timeout;
    match s.await_reply(&id, timeout) {
        Reply::Result(_) | Reply::Error(_) => {}
        other => return Err(fail("an answer to a request line ending in CRLF", other.describe())),
    }
    let answered: Vec<String> = s.strays[mark..].iter().map(|st| st.value.to_string()).collect();
    if !answered.is_empty() {
        return Err(fail("no answer to blank lines", answered.join(" | ")));
    }
    Ok(())
}

/// Sends a line that is not JSON, checks the worker still answers, and returns the error
/// answers with id null it sent since.
fn answers_to_not_json(ctx: &mut Ctx<'_>) -> Result<Vec<Value>, Finding> {
    let s = ctx.session();
    let mark = s.strays.len();
    s.send_raw(b"not json\n".to_vec());
    ping(s, "a line that is not JSON")?;
    Ok(wait_null_id_error(s, mark))
}

/// WIRE-PARSE-1.
pub fn parse_error(ctx: &mut Ctx<'_>) -> CheckResult {
    let errors = answers_to_not_json(ctx)?;
    let Some(first) = errors.first() else {
        return Err(fail("an error answer with id null and code -32700", "no answer with id null"));
    };
    if first["error"]["code"] != json!(-32700) {
        return Err(fail("code -32700", clip(&first.to_string())));
    }
    Ok(())
}

/// WIRE-PARSE-2.
pub fn parse_error_exact(ctx: &mut Ctx<'_>) -> CheckResult {
    let expected = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: Invalid JSON: not json"}});
    let errors = answers_to_not_json(ctx)?;
    match errors.first() {
        Some(v) if *v == expected => Ok(()),
        Some(v) => Err(fail(expected.to_string(), clip(&v.to_string()))),
        None => Err(fail(expected.to_string(), "no answer with id null")),
    }
}

/// WIRE-INVALID-1.
pub fn invalid_request(ctx: &mut Ctx<'_>) -> CheckResult {
    let s = ctx.session();
    let mark = s.strays.len();
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"health\",\"params\":{}}\n".to_vec());
    ping(s, "a request with id null")?;
    let deadline = Instant::now() + SETTLE / 5;
    s.pump_until(deadline, |_| false);
    let successes: Vec<String> = s.strays[mark..]
        .iter()
        .filter(|st| st.value.get("result").is_some())
        .map(|st| st.value.to_string())
        .collect();
    if let Some(first) = successes.first() {
        return Err(fail(
            "no success answer to a message with `\"id\": null` (neither request nor notification)",
            clip(first),
        ));
    }
    Ok(())
}

/// WIRE-ID-1.
pub fn id_echo(ctx: &mut Ctx<'_>) -> CheckResult {
    let s = ctx.session();
    let timeout = s.config().call_timeout;
    let numeric = s.next_id();
    let ids = [numeric, Id::from("90001"), Id::from("host-1"), Id::from(9_007_199_254_740_991u64)];
    for id in ids {
        let (reply, _) = s.call_with(id.clone(), name::HEALTH, json!({}), false, timeout);
        match reply {
            Reply::Result(_) | Reply::Error(_) => {}
            other => {
                return Err(fail(
                    format!("an answer whose id is exactly {}", id.to_value()),
                    other.describe(),
                ))
            }
        }
    }
    Ok(())
}

/// WIRE-VOID-1: `shutdown` is void; a fresh worker is spent on it.
pub fn void_result_null(ctx: &mut Ctx<'_>) -> CheckResult {
    let mut s = ctx.spawn_initialized("void-result")?;
    let reply = s.call(name::SHUTDOWN, json!({}));
    match reply {
        Reply::Result(Value::Null) => Ok(()),
        other => Err(fail(
            "`shutdown` answered {\"jsonrpc\":\"2.0\",\"id\":…,\"result\":null}",
            other.describe(),
        )),
    }
}

/// WIRE-METHOD-1.
pub fn method_not_found(ctx: &mut Ctx<'_>) -> CheckResult {
    let reply = ctx.session().call("paperclipConformanceNoSuchMethod", json!({}));
    match reply.error_code() {
        Some(-32601) => Ok(()),
        _ => Err(fail("error -32601 for a method no worker knows", reply.describe())),
    }
}

/// WIRE-METHOD-2: a known, non-environment method the worker does not advertise.
pub fn not_implemented(ctx: &mut Ctx<'_>) -> CheckResult {
    let candidate = METHODS.iter().find(|m| {
        m.family == MethodFamily::OtherPlugin
            && m.since == HostProfile::Paperclip2026_09
            && m.name != name::ON_EVENT
            && !ctx.facts.advertises(m.name)
    });
    let Some(method) = candidate else {
        return Err(Finding::Skip("the worker advertises every known plugin method".into()));
    };
    let reply = ctx.session().call(method.name, json!({}));
    match reply.error_code() {
        Some(-32004) => Ok(()),
        _ => Err(fail(
            format!("error -32004 ({})", ErrorObject::method_not_implemented(method.name).message),
            reply.describe(),
        )),
    }
}

/// WIRE-FRAME-1.
pub fn oversize(ctx: &mut Ctx<'_>) -> CheckResult {
    let size = ctx.env.options.oversize_bytes;
    let s = ctx.session();
    let id = s.next_id();
    let head =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"health\",\"params\":{{\"pad\":\"");
    let tail = "\"}}\n";
    let pad = size.saturating_sub(head.len() + tail.len());
    let mut line = Vec::with_capacity(size);
    line.extend_from_slice(head.as_bytes());
    line.resize(head.len() + pad, b'a');
    line.extend_from_slice(tail.as_bytes());
    s.expect_id(id.clone(), name::HEALTH);
    s.send_raw(line);
    ping(s, &format!("a line of {size} bytes"))?;
    let answer = s.await_reply(&id, Duration::ZERO);
    ctx.notes.push(format!("answer to the oversize line: {}", answer.describe()));
    Ok(())
}

/// How to fix a polluted stdout, for the verdict.
const STDOUT_FIX: &str = "fix: write logs and banners to stderr (with the Rust SDK: `tracing` \
    through `init_tracing`, never `println!` before `run_plugin` serves; the SDK sends stray \
    prints to stderr while it serves), and let `--manifest` print the manifest alone";

/// WIRE-STDOUT-1: whole run.
pub fn stdout_purity(ctx: &mut Ctx<'_>) -> CheckResult {
    if let Some(line) = &ctx.env.manifest_impure_line {
        return Err(fail(
            "only JSON on stdout, `<worker> --manifest` included",
            format!(
                "`--manifest` printed a non-JSON line before or after the manifest: {line:?}; \
                 {STDOUT_FIX}"
            ),
        ));
    }
    let seen = ctx.observations.lock();
    match seen.impure_lines.first() {
        None => Ok(()),
        Some((session, line)) => Err(fail(
            "only JSON-RPC lines on stdout",
            format!(
                "{} non-protocol line(s); first, from the {session} worker: {:?}; {STDOUT_FIX}",
                seen.impure_lines.len(),
                clip(line)
            ),
        )),
    }
}

/// More stdout than this from one worker in a run is a flood (the largest exchange a check
/// asks for is a few MiB).
pub const STDOUT_FLOOD_BYTES: u64 = 256 * 1024 * 1024;

/// More stderr than this from one worker in a run is a flood.
pub const STDERR_FLOOD_BYTES: u64 = 64 * 1024 * 1024;

/// WIRE-BOUND-1: whole run. Lines over the host's line limit, floods of frames or stderr, an
/// over-long `--manifest` output.
pub fn bounded_output(ctx: &mut Ctx<'_>) -> CheckResult {
    let mut problems = vec![];
    if let Some(bytes) = ctx.env.manifest_overflow {
        problems.push(format!(
            "`<worker> --manifest` printed more than {} bytes (at least {bytes}) without ending",
            crate::runner::MANIFEST_PROBE_MAX_BYTES
        ));
    }
    let seen = ctx.observations.lock();
    if let Some((session, detail, _)) = seen.long_lines.iter().find(|(_, _, over)| *over) {
        problems.push(format!("the {session} worker wrote {detail}"));
    }
    for (session, what) in seen.floods.iter().take(3) {
        problems.push(format!("the {session} worker sent {what}"));
    }
    for t in &seen.transcripts {
        let v = t.volume();
        if v.bytes[1] > STDOUT_FLOOD_BYTES {
            problems.push(format!(
                "the {} worker wrote {} bytes ({} lines) on stdout, over {STDOUT_FLOOD_BYTES}",
                t.label(),
                v.bytes[1],
                v.lines[1]
            ));
        }
        if v.bytes[2] > STDERR_FLOOD_BYTES {
            problems.push(format!(
                "the {} worker wrote {} bytes ({} lines) on stderr, over {STDERR_FLOOD_BYTES} \
                 (the host copies every stderr line into its log)",
                t.label(),
                v.bytes[2],
                v.lines[2]
            ));
        }
    }
    crate::context::no_problems(
        &problems,
        "stdout lines within the host's limit, no flood of frames or stderr, a bounded \
         `--manifest` output",
    )
}
