//! environmentExecute checks: exit code, output, stdin, env, cwd, timeout and incremental
//! output (protocol.md A.6, D.9). Commands are `sh -c <script>`, as the host sends them.

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::clip;
use crate::ledger::Lease;

/// Runs `sh -c script` in a lease; `extra` (an object) adds or overrides params.
pub fn exec(
    ctx: &mut Ctx<'_>,
    lease: &Lease,
    cwd: Option<&str>,
    script: &str,
    extra: Value,
) -> Result<Value, Finding> {
    exec_traced(ctx, lease, cwd, script, extra).map(|(v, _)| v)
}

/// As [`exec`], also returning the invocation id the request carried.
fn exec_traced(
    ctx: &mut Ctx<'_>,
    lease: &Lease,
    cwd: Option<&str>,
    script: &str,
    extra: Value,
) -> Result<(Value, Option<String>), Finding> {
    let mut params = ctx.lease_params(lease);
    params.insert("command".into(), json!("sh"));
    params.insert("args".into(), json!(["-c", script]));
    params.insert("timeoutMs".into(), json!(20_000));
    params.insert("bypassSession".into(), json!(true));
    if let Some(cwd) = cwd {
        params.insert("cwd".into(), json!(cwd));
    }
    if let Value::Object(extra) = extra {
        params.extend(extra);
    }
    let (reply, invocation) =
        ctx.session().call_traced(name::ENVIRONMENT_EXECUTE, Value::Object(params));
    let result =
        reply.into_result().map_err(|a| fail(format!("a result for `sh -c {script:?}`"), a))?;
    if !result.is_object() {
        return Err(fail("an execute result object", clip(&result.to_string())));
    }
    Ok((result, invocation))
}

/// A lease plus its realized workspace (if the worker realizes workspaces).
fn lease_and_cwd(ctx: &mut Ctx<'_>) -> Result<(Lease, Option<String>), Finding> {
    let lease = ctx.acquire()?;
    let cwd = ctx.realize(&lease)?;
    Ok((lease, cwd))
}

fn expect_fields(result: &Value, expected: &[(&str, Value)]) -> CheckResult {
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(k, v)| result.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(fail(wrong.join(", "), clip(&result.to_string())))
    }
}

/// EXEC-1.
pub fn exit_code(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, cwd) = lease_and_cwd(ctx)?;
    let r = exec(ctx, &lease, cwd.as_deref(), "exit 3", json!({}))?;
    expect_fields(&r, &[("exitCode", json!(3)), ("timedOut", json!(false))])
}

/// EXEC-2.
pub fn output(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, cwd) = lease_and_cwd(ctx)?;
    let r =
        exec(ctx, &lease, cwd.as_deref(), "printf 'out-%s' 1; printf 'err-%s' 2 >&2", json!({}))?;
    expect_fields(
        &r,
        &[("stdout", json!("out-1")), ("stderr", json!("err-2")), ("exitCode", json!(0))],
    )
}

/// EXEC-3.
pub fn stdin(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, cwd) = lease_and_cwd(ctx)?;
    let input = "line one\nline two\n";
    let r = exec(ctx, &lease, cwd.as_deref(), "cat", json!({"stdin": input}))?;
    expect_fields(&r, &[("stdout", json!(input)), ("exitCode", json!(0))])
}

/// EXEC-4.
pub fn env(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, cwd) = lease_and_cwd(ctx)?;
    let value = format!("v-{}", crate::ids::hex(8));
    let r = exec(
        ctx,
        &lease,
        cwd.as_deref(),
        "printf %s \"$PCCONF_VALUE\"",
        json!({"env": {"PCCONF_VALUE": value}}),
    )?;
    expect_fields(&r, &[("stdout", json!(value)), ("exitCode", json!(0))])
}

/// EXEC-5: compares the physical working directory with the physical path of `cwd`, both
/// inside the sandbox.
pub fn cwd(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, realized) = lease_and_cwd(ctx)?;
    let cwd = realized.unwrap_or_else(|| "/".into());
    let script = "pwd -P; cd \"$PCCONF_CWD\" && pwd -P";
    let r = exec(ctx, &lease, Some(&cwd), script, json!({"env": {"PCCONF_CWD": cwd}}))?;
    let out = r.get("stdout").and_then(Value::as_str).unwrap_or_default();
    let lines: Vec<&str> = out.lines().collect();
    match lines.as_slice() {
        [actual, wanted] if actual == wanted => Ok(()),
        _ => Err(fail(format!("the command runs in {cwd:?}"), clip(&r.to_string()))),
    }
}

/// EXEC-6.
pub fn timeout(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, cwd) = lease_and_cwd(ctx)?;
    let r = exec(ctx, &lease, cwd.as_deref(), "sleep 30", json!({"timeoutMs": 500}))?;
    expect_fields(&r, &[("timedOut", json!(true))])
}

/// EXEC-STREAM-1.
pub fn incremental_output(ctx: &mut Ctx<'_>) -> CheckResult {
    let (lease, cwd) = lease_and_cwd(ctx)?;
    let mark = ctx.session().notices.len();
    let script = "printf 'a\\n'; sleep 0.2; printf 'b\\n'; printf 'e\\n' >&2";
    let (r, invocation) = exec_traced(ctx, &lease, cwd.as_deref(), script, json!({}))?;
    let invocation = invocation.expect("environment calls carry an invocation");
    expect_fields(&r, &[("stdout", json!("a\nb\n")), ("stderr", json!("e\n"))])?;
    let logs: Vec<_> = ctx.session().notices[mark..]
        .iter()
        .filter(|n| n.method == name::EXECUTE_LOG)
        .cloned()
        .collect();
    if logs.is_empty() {
        return Err(fail("execute.log notifications while the command runs", "none"));
    }
    let mut streamed = String::new();
    for n in &logs {
        if n.invocation_id.as_deref() != Some(invocation.as_str()) {
            return Err(fail(
                format!("paperclipInvocationId {invocation:?} on every execute.log"),
                format!("{:?}", n.invocation_id),
            ));
        }
        let stream = n.params.get("stream").and_then(Value::as_str);
        let chunk = n.params.get("chunk").and_then(Value::as_str).filter(|c| !c.is_empty());
        match (stream, chunk) {
            (Some("stdout"), Some(c)) => streamed.push_str(c),
            (Some("stderr"), Some(_)) => {}
            _ => {
                return Err(fail(
                    "execute.log params {stream: \"stdout\"|\"stderr\", chunk: non-empty string}",
                    clip(&n.params.to_string()),
                ))
            }
        }
    }
    if streamed != "a\nb\n" {
        return Err(fail(
            "the stdout chunks add up to the command's stdout",
            format!("{streamed:?}"),
        ));
    }
    Ok(())
}
