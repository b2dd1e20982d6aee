//! Checks of the newest upstream methods a worker advertises (`paperclip-2026-11`): idle-sleep
//! sealing and owner fencing, no sleep while a command runs, environmentTask's
//! operation/result pairing, a duplex channel's open → data → exit → close, a login
//! terminal's open → output → input → exit → close, and `-32004` with upstream's message for
//! the known methods a worker does not implement.
//!
//! Each check is gated in [`crate::registry::CHECKS`] as the host gates its calls: a worker that does not
//! advertise `prepareIdleSleep` is never asked to sleep, a duplex channel is opened only
//! when `duplexCommandStream` is effective, and a login terminal only on a driver that
//! declares `supportsLoginPty`. Every lease goes through the run's lease ledger,
//! every command through [`crate::hostmodel::Exec`].

use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::{ErrorObject, Message, Request};
use paperclip_sandbox_protocol::methods::{
    name, ChannelBytes, TaskOperation, TaskResult, LOGIN_SESSION_HOME_PREFIX,
};
use serde_json::{json, Value};

use crate::checks::execute;
use crate::context::{fail, no_problems, CheckResult, Ctx, Finding};
use crate::host::{clip, Reply, Session};
use crate::hostmodel::Exec;

/// How long the checks wait for a stream's notifications.
const STREAM_WAIT: Duration = Duration::from_secs(20);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn hold(owner: &str) -> Value {
    json!({"ownerId": owner, "expiresAt": now_ms() + 60_000})
}

/// `prepareIdleSleep`: the verdict, after checking the answer echoes owner and deadline.
fn prepare(s: &mut Session, request: &Value) -> Result<String, Finding> {
    let answer = s
        .call(name::PREPARE_IDLE_SLEEP, request.clone())
        .into_result()
        .map_err(|a| fail("a prepareIdleSleep result", a))?;
    for key in ["ownerId", "expiresAt"] {
        if answer.get(key) != request.get(key) {
            return Err(fail(format!("the request's {key} echoed"), clip(&answer.to_string())));
        }
    }
    match answer.get("backgroundWork").and_then(Value::as_str) {
        Some(v @ ("none" | "present" | "unknown")) => Ok(v.to_owned()),
        _ => Err(fail(
            "backgroundWork \"none\", \"present\" or \"unknown\"",
            clip(&answer.to_string()),
        )),
    }
}

/// IDLE-SEAL-1: after `none`, every other call is refused until the matching release; a
/// stale owner's release changes nothing.
pub fn seal(ctx: &mut Ctx<'_>) -> CheckResult {
    let mut s = ctx.spawn_initialized("idle-seal")?;
    let owner = format!("pcconf-{}", crate::ids::hex(8));
    let verdict = prepare(&mut s, &hold(&owner))?;
    if verdict != "none" {
        return Err(Finding::Skip(format!(
            "a fresh, idle worker answered backgroundWork \"{verdict}\", so the seal cannot be judged"
        )));
    }
    if let Reply::Result(v) = s.call(name::HEALTH, json!({})) {
        let _ = s.call(name::RELEASE_IDLE_SLEEP, json!({"ownerId": owner}));
        return Err(fail(
            "health refused while the worker is sealed for idle sleep",
            format!("result {}", clip(&v.to_string())),
        ));
    }
    let _ = s.call(name::RELEASE_IDLE_SLEEP, json!({"ownerId": "pcconf-stale-owner"}));
    if let Reply::Result(v) = s.call(name::HEALTH, json!({})) {
        let _ = s.call(name::RELEASE_IDLE_SLEEP, json!({"ownerId": owner}));
        return Err(fail(
            "still sealed after another owner's releaseIdleSleep",
            format!("health answered {}", clip(&v.to_string())),
        ));
    }
    if let Err(a) = s.call(name::RELEASE_IDLE_SLEEP, json!({"ownerId": owner})).into_result() {
        return Err(fail("the owner's releaseIdleSleep answered", a));
    }
    match s.call(name::HEALTH, json!({})) {
        Reply::Result(_) => Ok(()),
        other => Err(fail("health answered after the owner's release", other.describe())),
    }
}

/// IDLE-BUSY-1: while a command runs, `prepareIdleSleep` never answers `none`.
pub fn busy(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = execute::lease(ctx)?;
    // The command as the host sends it (the lease's remote cwd, `bypassSession`). It runs until
    // the harness releases it, at most about 3 s.
    let release = format!("pcconf-busy-{}", crate::ids::hex(8));
    let script =
        format!("i=0; while [ ! -e {release} ] && [ $i -lt 150 ]; do sleep 0.02; i=$((i+1)); done");
    let params =
        Exec::sh(script).timeout(20_000).params(ctx.facts, &lease, ctx.lease_params(&lease));
    let release_params = Exec::sh(format!(": > {release}")).timeout(20_000).params(
        ctx.facts,
        &lease,
        ctx.lease_params(&lease),
    );
    let s = ctx.session();
    let id = s.next_id();
    let request = Request {
        id: id.clone(),
        method: name::ENVIRONMENT_EXECUTE.into(),
        params: Some(params),
        invocation: None,
        invocation_id: None,
    };
    s.expect_id(id.clone(), name::ENVIRONMENT_EXECUTE);
    s.send_raw(Message::from(request).to_line().into_bytes());
    // The request is in the worker's hands once anything it sends after it arrives: a ping.
    let _ = s.call(name::HEALTH, json!({}));
    let owner = format!("pcconf-{}", crate::ids::hex(8));
    let verdict = prepare(s, &hold(&owner));
    if verdict.as_deref() == Ok("none") {
        let _ = s.call(name::RELEASE_IDLE_SLEEP, json!({"ownerId": owner}));
    }
    let _ = s.call(name::ENVIRONMENT_EXECUTE, release_params);
    let _ = s.await_reply(&id, Duration::from_secs(30));
    match verdict? {
        v if v == "none" => Err(fail(
            "backgroundWork \"present\" while environmentExecute runs",
            "\"none\": the host would let the worker sleep in the middle of a command",
        )),
        _ => Ok(()),
    }
}

/// TASK-PAIR-1: an operation outside the union is refused; a `status` answer is a `status`
/// result for the same task.
pub fn pairing(ctx: &mut Ctx<'_>) -> CheckResult {
    let task_id = format!("pcconf-task-{}", crate::ids::hex(6));
    let mut base = ctx.base_params();
    base.insert("environmentId".into(), Value::Null);
    base.insert("lease".into(), json!({"providerLeaseId": null}));
    base.insert("taskId".into(), json!(task_id));
    base.insert("runId".into(), Value::Null);
    base.insert("agentId".into(), Value::Null);
    base.insert("projectIds".into(), json!([]));
    let mut bogus = base.clone();
    bogus.insert("operation".into(), json!({"kind": "pcconf-unknown"}));
    if let Reply::Result(v) = ctx.session().call(name::ENVIRONMENT_TASK, Value::Object(bogus)) {
        return Err(fail(
            "an error for an operation outside the task operation union",
            format!("result {}", clip(&v.to_string())),
        ));
    }
    let mut status = base;
    status.insert("operation".into(), json!({"kind": "status"}));
    match ctx.session().call(name::ENVIRONMENT_TASK, Value::Object(status)) {
        // An unknown task may be refused.
        Reply::Error(_) => Ok(()),
        Reply::Result(v) => {
            let result: TaskResult = serde_json::from_value(v.clone()).map_err(|e| {
                fail(
                    "a task result (accepted, status or connection)",
                    format!("{e}: {}", clip(&v.to_string())),
                )
            })?;
            result.check_answers(&TaskOperation::Status {}, &task_id).map_err(|e| {
                fail(
                    format!("a status result for task {task_id}"),
                    format!("{e}: {}", clip(&v.to_string())),
                )
            })
        }
        other => Err(fail("an answer to environmentTask", other.describe())),
    }
}

fn channel_data(s: &Session, route: &str) -> Vec<u8> {
    s.notices
        .iter()
        .filter(|n| n.method == name::DUPLEX_CHANNEL_DATA && n.params["hostRouteId"] == route)
        .filter_map(|n| n.params["chunk"].as_str().and_then(ChannelBytes::decode))
        .flat_map(|b| b.0)
        .collect()
}

fn channel_exit(s: &Session, route: &str) -> Option<Value> {
    s.notices
        .iter()
        .find(|n| n.method == name::DUPLEX_CHANNEL_EXIT && n.params["hostRouteId"] == route)
        .map(|n| n.params.clone())
}

/// DUPLEX-1: `sh` on a duplex channel in a lease: written bytes reach it, its output comes
/// back as `duplexChannel.data` (canonical base64, bound to the route and session), its exit
/// as one `duplexChannel.exit`, and close acknowledges the route.
pub fn duplex(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = execute::lease(ctx)?;
    let route = format!("pcconf-route-{}", crate::ids::hex(6));
    let base = ctx.base_params();
    let open = json!({"hostRouteId": route, "driverKey": base["driverKey"], "companyId": base["companyId"],
        "environmentId": base["environmentId"], "providerLeaseId": lease.id, "command": ["sh"]});
    let s = ctx.session();
    let opened = s
        .call(name::DUPLEX_CHANNEL_OPEN, open)
        .into_result()
        .map_err(|a| fail("a duplexChannelOpen result", a))?;
    if opened["hostRouteId"] != route.as_str() {
        return Err(fail("the open's hostRouteId echoed", clip(&opened.to_string())));
    }
    let Some(session) = opened["workerSessionId"].as_str().map(str::to_owned) else {
        return Err(fail("a workerSessionId", clip(&opened.to_string())));
    };
    let token = format!("pcconf-{}", crate::ids::hex(8));
    let write = |data: &str| {
        json!({"hostRouteId": route, "workerSessionId": session,
               "data": ChannelBytes::new(data.as_bytes().to_vec()).encode()})
    };
    let result = (|| {
        s.call(name::DUPLEX_CHANNEL_WRITE, write(&format!("echo {token}\n")))
            .into_result()
            .map_err(|a| fail("duplexChannelWrite answered", a))?;
        let want = format!("{token}\n").into_bytes();
        s.pump_until(Instant::now() + STREAM_WAIT, |s| {
            channel_data(s, &route).windows(want.len()).any(|w| w == want)
        });
        let data = channel_data(s, &route);
        if !data.windows(want.len()).any(|w| w == want) {
            return Err(fail(
                format!("duplexChannel.data carrying {token:?} (the echo)"),
                format!("{:?}", String::from_utf8_lossy(&data)),
            ));
        }
        if let Some(bad) = s.notices.iter().find(|n| {
            n.method == name::DUPLEX_CHANNEL_DATA
                && n.params["hostRouteId"] == route.as_str()
                && n.params["workerSessionId"] != session.as_str()
        }) {
            return Err(fail(
                "data bound to the open's workerSessionId",
                clip(&bad.params.to_string()),
            ));
        }
        s.call(name::DUPLEX_CHANNEL_WRITE, write("exit 3\n"))
            .into_result()
            .map_err(|a| fail("duplexChannelWrite answered", a))?;
        s.pump_until(Instant::now() + STREAM_WAIT, |s| channel_exit(s, &route).is_some());
        match channel_exit(s, &route) {
            Some(exit) if exit["exitCode"] == 3 && exit["workerSessionId"] == session.as_str() => {
                Ok(())
            }
            Some(exit) => Err(fail("duplexChannel.exit with exitCode 3", clip(&exit.to_string()))),
            None => Err(fail("a duplexChannel.exit after `exit 3`", "none within 20 s")),
        }
    })();
    // Close whatever happened: the channel must not outlive the check.
    let closed = s.call(name::DUPLEX_CHANNEL_CLOSE, json!({"hostRouteId": route}));
    result?;
    match closed {
        Reply::Result(v) if v["hostRouteId"] == route.as_str() => Ok(()),
        other => Err(fail("duplexChannelClose acknowledging the route", other.describe())),
    }
}

/// WIRE-METHOD-2 for the newest upstream methods: each one the worker does not advertise is
/// answered `-32004`, never `-32601`. A message other than the upstream SDK's
/// `<method> is not implemented by this plugin` is noted, not failed (the host reads the code).
///
// Upstream packages/plugins/sdk/src/worker-rpc-host.ts `methodNotImplemented(method)`: code
// `PLUGIN_RPC_ERROR_CODES.METHOD_NOT_IMPLEMENTED` (-32004), message
// `${method} is not implemented by this plugin` (no trailing period); `dispatchMethod` throws
// it for routeAiConnection and environmentTask without their hooks, and every loginPty* and
// duplexChannel* handler does the same. The message is what
// `ErrorObject::method_not_implemented` builds.
///
/// Judged only for a worker on the newest upstream line, one that advertises a method of it
/// (environmentStopLease, prepareIdleSleep, environmentTask, routeAiConnection): a worker built
/// on the published September SDK does not know these names and answers `-32601`, which no
/// host is hurt by, since it calls them only when advertised (the tolerance CAP-HONEST-2 grants
/// November-only methods).
pub fn not_implemented(ctx: &mut Ctx<'_>) -> CheckResult {
    use paperclip_sandbox_protocol::methods::{Upstream, METHODS};
    let newest =
        METHODS.iter().any(|m| m.upstream == Upstream::Newest && ctx.facts.advertises(m.name));
    if !newest {
        return Err(Finding::Skip(
            "the worker advertises no method of the newest upstream SDK line (it predates them; \
             -32601 is tolerated there)"
                .into(),
        ));
    }
    let mut wrong = Vec::new();
    for method in [
        name::ENVIRONMENT_TASK,
        name::ROUTE_AI_CONNECTION,
        name::LOGIN_PTY_OPEN,
        name::DUPLEX_CHANNEL_OPEN,
    ] {
        if ctx.facts.advertises(method) {
            continue;
        }
        let expected = ErrorObject::method_not_implemented(method);
        match ctx.session().call(method, json!({})) {
            Reply::Error(e) if e.code == expected.code => {
                // The host acts on the code; the upstream SDK's wording is advice, not a rule
                // that can fail a worker written on another SDK.
                if e.message != expected.message {
                    ctx.notes.push(format!(
                        "{method}: -32004 as required, but not the upstream SDK's message \
                         `{}`",
                        expected.message
                    ));
                }
            }
            other => wrong.push(format!("{method}: {}", other.describe())),
        }
    }
    no_problems(&wrong, "-32004 <method> is not implemented by this plugin")
}

fn terminal_notices<'s>(
    s: &'s Session,
    method: &'s str,
    route: &'s str,
) -> impl Iterator<Item = &'s Value> + 's {
    s.notices
        .iter()
        .filter(move |n| n.method == method && n.params["hostRouteId"] == route)
        .map(|n| &n.params)
}

/// How long the login check waits for the terminal to end after its Ctrl-C.
const INTERRUPT_WAIT: Duration = Duration::from_secs(5);

/// LOGIN-PTY-1: a login terminal in a fresh lease, driven as the host's login transport drives
/// it: open (a `workerSessionId`), output (the login command's prompt), input (Ctrl-C, which
/// ends a login command on a real terminal), stop when it has not ended, one exit, close.
///
// Upstream server/src/services/plugin-worker-manager.ts `openLoginPtySession`: the host mints
// a UUID `hostRouteId`, sends `loginPtyOpen {hostRouteId, driverKey, companyId, environmentId,
// providerLeaseId, loginCommandKey, sessionHome}` with a key of the closed set and a session
// home `/tmp/paperclip-adapter-login/<uuid>`, binds the reply's `workerSessionId`, then
// `write` is `loginPtyInput {workerSessionId, data}`, `kill` is `loginPtyStop
// {workerSessionId}`, `wait` resolves on `loginPty.exit`, and close is `loginPtyClose`.
// The key follows the adapter (services/login-command.ts); the harness acquires for
// claude_local, so it sends `claude`.
pub fn login_pty(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let route = crate::ids::uuid();
    let base = ctx.base_params();
    let open = json!({"hostRouteId": route, "driverKey": base["driverKey"],
        "companyId": base["companyId"], "environmentId": base["environmentId"],
        "providerLeaseId": lease.id, "loginCommandKey": "claude",
        "sessionHome": format!("{LOGIN_SESSION_HOME_PREFIX}{}", crate::ids::uuid())});
    let s = ctx.session();
    let opened = s
        .call(name::LOGIN_PTY_OPEN, open)
        .into_result()
        .map_err(|a| fail("a loginPtyOpen result", a))?;
    let Some(session) =
        opened["workerSessionId"].as_str().filter(|id| !id.is_empty()).map(str::to_owned)
    else {
        return Err(fail(
            "a loginPtyOpen result with a workerSessionId",
            clip(&opened.to_string()),
        ));
    };
    let exited = |s: &Session| terminal_notices(s, name::LOGIN_PTY_EXIT, &route).next().is_some();
    let result = (|| {
        s.pump_until(Instant::now() + STREAM_WAIT, |s| {
            exited(s) || terminal_notices(s, name::LOGIN_PTY_OUTPUT, &route).next().is_some()
        });
        let output: Vec<Value> =
            terminal_notices(s, name::LOGIN_PTY_OUTPUT, &route).cloned().collect();
        if output.is_empty() {
            return Err(fail(
                "loginPty.output (the login command's prompt) after loginPtyOpen",
                if exited(s) { "only a loginPty.exit" } else { "nothing within 20 s" },
            ));
        }
        if let Some(bad) = output.iter().find(|p| {
            p["workerSessionId"] != session.as_str()
                || p["chunk"].as_str().is_none_or(str::is_empty)
        }) {
            return Err(fail(
                "loginPty.output bound to the open's workerSessionId, with a non-empty chunk",
                clip(&bad.to_string()),
            ));
        }
        let input = json!({"workerSessionId": session, "data": "\u{3}"});
        let answered = s.call(name::LOGIN_PTY_INPUT, input);
        // Input to a terminal that has already ended may be refused.
        if !matches!(answered, Reply::Result(_)) && !exited(s) {
            return Err(fail("loginPtyInput answered", answered.describe()));
        }
        s.pump_until(Instant::now() + INTERRUPT_WAIT, exited);
        // The host ignores the stop's answer (the terminal may have ended already); only the
        // exit resolves its wait.
        let mut stopped = String::new();
        if !exited(s) {
            stopped = s.call(name::LOGIN_PTY_STOP, json!({"workerSessionId": session})).describe();
            s.pump_until(Instant::now() + STREAM_WAIT, exited);
        }
        let exits: Vec<Value> =
            terminal_notices(s, name::LOGIN_PTY_EXIT, &route).cloned().collect();
        match exits.as_slice() {
            [] => Err(fail(
                "a loginPty.exit after Ctrl-C and loginPtyStop",
                format!("none within 25 s (loginPtyStop answered {stopped})"),
            )),
            [exit]
                if exit["workerSessionId"] == session.as_str()
                    && (exit["exitCode"].is_i64() || exit["exitCode"].is_null()) =>
            {
                Ok(())
            }
            [exit] => Err(fail(
                "loginPty.exit bound to the open's workerSessionId, with exitCode a number or null",
                clip(&exit.to_string()),
            )),
            more => Err(fail("one loginPty.exit", format!("{}", more.len()))),
        }
    })();
    // Close whatever happened: the terminal must not outlive the check.
    let closed =
        s.call(name::LOGIN_PTY_CLOSE, json!({"hostRouteId": route, "workerSessionId": session}));
    result?;
    match closed {
        Reply::Result(v) if v["hostRouteId"] == route.as_str() => Ok(()),
        other => Err(fail("loginPtyClose acknowledging the route", other.describe())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_are_acceptable() {
        let h = hold("o");
        let p: paperclip_sandbox_protocol::methods::PrepareIdleSleepParams =
            serde_json::from_value(h).unwrap();
        assert!(p.is_acceptable_at(now_ms()));
    }
}
