//! environmentExecute checks, each judged by its effect inside the sandbox: exit code, output,
//! stdin (also in the host's chunked base64 upload shape), env, cwd (the host's remote cwd),
//! timeout (the command really stops), large output (the host's base64 download comes back
//! byte-exact), incremental output, control commands beside a long command, and
//! session commands. Every command goes out through [`crate::hostmodel::Exec`], as the host
//! sends it.

use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::{clip, Reply};
use crate::hostmodel::{self, download_steps, quote, upload_steps, Exec};
use crate::ledger::Lease;

/// A lease (realized when the worker realizes workspaces, as the host does before a run).
pub fn lease(ctx: &mut Ctx<'_>) -> Result<Lease, Finding> {
    let lease = ctx.acquire()?;
    ctx.realize(&lease)?;
    Ok(lease)
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

fn stdout(result: &Value) -> &str {
    result.get("stdout").and_then(Value::as_str).unwrap_or_default()
}

/// Runs `exec` and requires exit code 0; returns its stdout.
fn run_ok(ctx: &mut Ctx<'_>, lease: &Lease, exec: Exec, what: &str) -> Result<String, Finding> {
    let r = ctx.exec(lease, &exec)?;
    if r.get("exitCode") != Some(&json!(0)) {
        return Err(fail(format!("{what} succeeds (exit code 0)"), clip(&r.to_string())));
    }
    Ok(stdout(&r).to_owned())
}

/// EXEC-1.
pub fn exit_code(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let r = ctx.exec(&lease, &Exec::sh("exit 3"))?;
    expect_fields(&r, &[("exitCode", json!(3)), ("timedOut", json!(false))])
}

/// EXEC-2: stdout and stderr come back whole, also multi-byte UTF-8 that the command writes
/// in pieces (each piece its own write, a pause between them, so they reach the provider in
/// separate reads): decoding each read on its own turns the split characters into U+FFFD.
pub fn output(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let r = ctx.exec(&lease, &Exec::sh("printf 'out-%s' 1; printf 'err-%s' 2 >&2"))?;
    expect_fields(
        &r,
        &[("stdout", json!("out-1")), ("stderr", json!("err-2")), ("exitCode", json!(0))],
    )?;
    // é (2 bytes) and 😀 (4 bytes), each split across writes, on both streams.
    let split = "for i in 1 2; do printf '\\303'; sleep 0.02; printf '\\251'; done; \
                 printf '\\360\\237'; sleep 0.02; printf '\\230\\200'";
    let script = format!("{split}; {{ {split}; }} >&2");
    let expected = "éé😀";
    let r = ctx.exec(&lease, &Exec::sh(script))?;
    let (out, err) = (stdout(&r), r.get("stderr").and_then(Value::as_str).unwrap_or_default());
    if out == expected && err == expected {
        return Ok(());
    }
    let cut = out.contains('\u{fffd}') || err.contains('\u{fffd}');
    Err(fail(
        format!(
            "multi-byte UTF-8 written in pieces comes back whole ({expected:?} on stdout and \
             stderr)"
        ),
        format!(
            "stdout {out:?}, stderr {err:?}{}",
            if cut {
                ": characters split across reads became U+FFFD (decode the whole output, or \
                 keep an incomplete sequence for the next read)"
            } else {
                ""
            }
        ),
    ))
}

/// SECRET-3: a command's `env` values never appear on a command line of a process the worker
/// starts (every local user reads command lines with `ps`; agent API keys travel in `env`).
/// Judged on this machine only: the worker's own process tree is read while the command runs
/// (a remote sandbox's process table is not visible, see the check's notes).
pub fn env_not_on_command_line(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let value = format!("pcconf-env-{}", crate::ids::hex(12));
    let exec = Exec::sh("sleep 1").env("PCCONF_SECRET_ENV", &value);
    let params = exec.params(ctx.facts, &lease, ctx.lease_params(&lease));
    let timeout = ctx.env.session.call_timeout;
    let s = ctx.session();
    let (id, _) = s.start_call(name::ENVIRONMENT_EXECUTE, params);
    let mut seen = None;
    let mut looked = 0;
    let until = Instant::now() + Duration::from_millis(1500);
    while s.notices_before_answer(&id).is_none() && Instant::now() < until && seen.is_none() {
        looked += 1;
        for (pid, name) in s.process().descendants() {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
            if cmdline.windows(value.len()).any(|w| w == value.as_bytes()) {
                seen = Some(format!("{pid} {:?}", clip(&name)));
                break;
            }
        }
        s.pump_until(Instant::now() + Duration::from_millis(20), |s| {
            s.notices_before_answer(&id).is_some()
        });
    }
    let reply = s.await_reply(&id, timeout);
    ctx.notes.push(format!(
        "looked {looked} time(s) at the command lines of the worker's process tree on this \
         machine; a remote sandbox's own processes cannot be seen from here"
    ));
    if let Some(process) = seen {
        return Err(fail(
            "the command's env values are passed in its environment, never on a command line \
             (every local user can read command lines)",
            format!(
                "the value of PCCONF_SECRET_ENV is on the command line of process {process} in \
                 the worker's tree"
            ),
        ));
    }
    reply.into_result().map(|_| ()).map_err(|a| fail("a result for `sleep 1`", a))
}

/// A window of `len` bytes at `offset` of a sandbox file, read the host's way.
fn read_window(
    ctx: &mut Ctx<'_>,
    lease: &Lease,
    path: &str,
    offset: usize,
    len: usize,
) -> Result<Vec<u8>, Finding> {
    let script = format!(
        "dd if={} bs={len} skip={} count=1 2>/dev/null | base64",
        quote(path),
        offset / len
    );
    let out = run_ok(ctx, lease, Exec::sh(script), "reading the uploaded file back")?;
    hostmodel::decode_base64(&out)
        .ok_or_else(|| fail("base64 output of `dd … | base64`", clip(&out)))
}

/// EXEC-3: plain stdin, then the host's chunked upload (`base64 -d >>` with each 4 MiB base64
/// chunk on stdin), read back in windows small enough for any output limit.
pub fn stdin(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let input = "line one\nline two\n";
    let r = ctx.exec(&lease, &Exec::sh("cat").stdin(input))?;
    expect_fields(&r, &[("stdout", json!(input)), ("exitCode", json!(0))])?;

    const WINDOW: usize = 64 * 1024;
    let size = hostmodel::UPLOAD_CHUNK_BYTES + 3 * WINDOW;
    let mut payload = Vec::with_capacity(size + 8);
    while payload.len() < size {
        payload.extend_from_slice(&crate::ids::random_u64().to_le_bytes());
    }
    payload.truncate(size);
    let path = format!(
        "{}/pcconf-upload-{}.bin",
        hostmodel::runtime_root(ctx.env, &lease),
        crate::ids::hex(8)
    );
    for (i, (script, stdin)) in upload_steps(&path, &payload).into_iter().enumerate() {
        let mut exec = Exec::sh(script).timeout(120_000);
        exec.stdin = stdin;
        run_ok(ctx, &lease, exec, &format!("upload step {} (the host's base64 upload)", i + 1))?;
    }
    let out = run_ok(ctx, &lease, Exec::sh(format!("wc -c < {}", quote(&path))), "wc -c")?;
    if out.trim() != size.to_string() {
        return Err(fail(
            format!(
                "the file uploaded through stdin (`base64 -d >>`, {} chunks) has {size} bytes",
                size.div_ceil(hostmodel::UPLOAD_CHUNK_BYTES)
            ),
            format!("`wc -c` says {:?}: stdin did not reach the command", out.trim()),
        ));
    }
    for offset in [0, hostmodel::UPLOAD_CHUNK_BYTES, size - WINDOW] {
        let got = read_window(ctx, &lease, &path, offset, WINDOW)?;
        if got != payload[offset..offset + WINDOW] {
            return Err(fail(
                format!("the uploaded bytes at offset {offset} are the bytes sent"),
                "they differ",
            ));
        }
    }
    Ok(())
}

/// EXEC-4.
pub fn env(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let value = format!("v-{}", crate::ids::hex(8));
    let r =
        ctx.exec(&lease, &Exec::sh("printf %s \"$PCCONF_VALUE\"").env("PCCONF_VALUE", &value))?;
    expect_fields(&r, &[("stdout", json!(value)), ("exitCode", json!(0))])
}

/// EXEC-5: a command without its own cwd runs in the lease's remote cwd (what the host sends),
/// and a command with its own cwd (a directory inside the remote cwd) runs there. Physical
/// paths are compared inside the sandbox.
pub fn cwd(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let remote = hostmodel::remote_cwd(&lease);
    let own = format!("{}/pcconf-cwd-{}", remote.trim_end_matches('/'), crate::ids::hex(8));
    run_ok(ctx, &lease, Exec::sh(format!("mkdir -p {}", quote(&own))), "mkdir -p")?;
    for (cwd, exec) in [(remote.clone(), Exec::sh("")), (own.clone(), Exec::sh("").cwd(&own))] {
        let mut exec = exec.env("PCCONF_CWD", &cwd);
        exec.script = "pwd -P; cd \"$PCCONF_CWD\" && pwd -P".into();
        let r = ctx.exec(&lease, &exec)?;
        let lines: Vec<&str> = stdout(&r).lines().collect();
        match lines.as_slice() {
            [actual, wanted] if actual == wanted => {}
            _ => {
                let named = if hostmodel::names_remote_cwd(&lease) {
                    "the lease's metadata.remoteCwd"
                } else {
                    "/tmp, the host's default: the lease names no metadata.remoteCwd"
                };
                let which = if cwd == remote { named } else { "its own cwd" };
                return Err(fail(
                    format!("the command runs in {cwd:?} ({which})"),
                    clip(&r.to_string()),
                ));
            }
        }
    }
    Ok(())
}

/// EXEC-6: `timeoutMs` ends the command with `timedOut: true`, and a follow-up execute shows
/// that it really stopped: neither its own heartbeat file nor the one of a process it started
/// (a tool, an MCP server) grows any more. Ending only the command's direct child leaves the
/// second one beating.
pub fn timeout(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let beat = format!("pcconf-heartbeat-{}", crate::ids::hex(8));
    let child = format!("{beat}-child");
    // The child's loop is a separate `sh` started by the command (a descendant, in the same
    // process group), the command's own loop runs in the direct child.
    let script = format!(
        "sh -c 'while :; do printf x >> {child}; sleep 0.05; done' & \
         while :; do printf x >> {beat}; sleep 0.05; done"
    );
    let started = Instant::now();
    let r = ctx.exec(&lease, &Exec::sh(script).timeout(1000))?;
    expect_fields(&r, &[("timedOut", json!(true))])?;
    let answered = started.elapsed();
    let follow = format!(
        "a=$(wc -c < {beat}); c=$(wc -c < {child} 2>/dev/null || echo 0); sleep 0.4; \
         b=$(wc -c < {beat}); d=$(wc -c < {child} 2>/dev/null || echo 0); echo \"$a $b $c $d\""
    );
    let out = run_ok(ctx, &lease, Exec::sh(follow), "the follow-up execute")?;
    let sizes: Vec<&str> = out.split_whitespace().collect();
    match sizes.as_slice() {
        [a, b, c, d] if a == b && c == d => Ok(()),
        [a, b, _, _] if a != b => Err(fail(
            "after the `timedOut` answer the command has stopped (its heartbeat file stops growing)",
            format!(
                "the heartbeat grew from {a} to {b} bytes in 0.4 s, {} ms after the answer: the \
                 timed-out command is still running in the sandbox",
                answered.as_millis()
            ),
        )),
        [_, _, c, d] => Err(fail(
            "after the `timedOut` answer every process the command started has stopped too \
             (end the command's process group or tree, not only its direct child)",
            format!(
                "the heartbeat of a process the command started grew from {c} to {d} bytes in \
                 0.4 s, {} ms after the answer: only the command itself was ended",
                answered.as_millis()
            ),
        )),
        _ => Err(fail("four byte counts from the follow-up execute", clip(&out))),
    }
}

/// Where the large file is made, and what it holds: a random seed doubled 9 times, each
/// doubling followed by its index (4 MiB and 511 bytes).
fn large_file(seed: &str) -> (String, Vec<u8>) {
    let mut script = format!("printf '%s' '{seed}' > big.0; i=0; while [ $i -lt 9 ]; do ");
    script.push_str(
        "{ dd if=big.0 2>/dev/null; dd if=big.0 2>/dev/null; printf '%d' $i; } > big.1; \
         mv -f big.1 big.0; i=$((i+1)); done; wc -c < big.0",
    );
    let mut bytes = seed.as_bytes().to_vec();
    for i in 0..9 {
        let mut next = bytes.clone();
        next.extend_from_slice(&bytes);
        next.extend_from_slice(i.to_string().as_bytes());
        bytes = next;
    }
    (script, bytes)
}

fn truncation_flagged(result: &Value) -> bool {
    let flag = |v: &Value| v.get("stdoutTruncated") == Some(&json!(true));
    flag(result) || result.get("metadata").is_some_and(flag)
}

/// EXEC-OUT-1: the host's base64-over-exec download of a 4 MiB file comes back byte-exact. A
/// provider with effective native sync downloads through environmentSyncOut instead, so there
/// a cut stdout is tolerated when the result flags it (`stdoutTruncated: true`).
pub fn large_output(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let native =
        ctx.facts.has(Capability::NativeSyncIn) && ctx.facts.has(Capability::NativeSyncOut);
    let dir =
        format!("{}/pcconf-large-{}", hostmodel::runtime_root(ctx.env, &lease), crate::ids::hex(6));
    let (make, expected) = large_file(&crate::ids::hex(8192));
    let script = format!("mkdir -p {d} && cd {d} && {make}", d = quote(&dir));
    let size = run_ok(ctx, &lease, Exec::sh(script).timeout(120_000), "making a 4 MiB file")?;
    if size.trim() != expected.len().to_string() {
        return Err(fail(
            format!("the 4 MiB file made in the sandbox has {} bytes", expected.len()),
            format!("{:?}", size.trim()),
        ));
    }
    let path = format!("{dir}/big.0");
    let mut got = Vec::with_capacity(expected.len());
    let mut flagged = false;
    for script in download_steps(&path, expected.len()) {
        let r = ctx.exec(&lease, &Exec::sh(script).timeout(120_000))?;
        flagged |= truncation_flagged(&r);
        let out = stdout(&r);
        match hostmodel::decode_base64(out) {
            Some(bytes) => got.extend(bytes),
            None => {
                got.clear();
                break;
            }
        }
    }
    if got == expected {
        return Ok(());
    }
    if native && flagged {
        ctx.notes.push(format!(
            "large output is cut (stdoutTruncated: true); tolerated: with native sync the host \
             downloads files through {}",
            name::ENVIRONMENT_SYNC_OUT
        ));
        return Ok(());
    }
    let how = if flagged { "flagged stdoutTruncated" } else { "without stdoutTruncated" };
    let why = if native {
        format!("a cut stdout must carry stdoutTruncated: true ({how})")
    } else {
        "without native sync the host downloads every workspace file this way".into()
    };
    Err(fail(
        format!(
            "the host's download (`dd … | base64`, 3 MiB per execute) of a {}-byte file comes \
             back byte-exact",
            expected.len()
        ),
        format!(
            "{} bytes came back, {}; {why}",
            got.len(),
            if got.is_empty() { "not base64" } else { "different" }
        ),
    ))
}

/// EXEC-STREAM-1: `execute.log` chunks carry the request's invocation id, arrive before the
/// answer, in order and without duplicates (their stdout text is a prefix of the final stdout,
/// as the host's undelivered-suffix rule needs), and the final stdout holds everything.
pub fn incremental_output(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let expected = "l1\nl2\nl3\nl4\nl5\n";
    let script = "for i in 1 2 3 4 5; do printf 'l%s\\n' $i; sleep 0.1; done; printf 'e\\n' >&2";
    let params = Exec::sh(script).params(ctx.facts, &lease, ctx.lease_params(&lease));
    let timeout = ctx.env.session.call_timeout;
    let s = ctx.session();
    let mark = s.notices.len();
    let (id, invocation) = s.start_call(name::ENVIRONMENT_EXECUTE, params);
    let invocation = invocation.expect("environment calls carry an invocation");
    let r = s.await_reply(&id, timeout).into_result().map_err(|a| fail("an execute result", a))?;
    let answered_at = s.notices_before_answer(&id).unwrap_or(s.notices.len());
    // Chunks that arrive just after the answer are late: listen a moment for them.
    let settle = Instant::now() + Duration::from_millis(300);
    s.pump_until(settle, |_| false);
    let logs: Vec<(usize, crate::host::Notice)> = s.notices[mark..]
        .iter()
        .enumerate()
        // Chunks of other invocations (an earlier command still running) are routed elsewhere
        // by the host; a chunk without any invocation id reaches no sink.
        .filter(|(_, n)| {
            n.method == name::EXECUTE_LOG
                && n.invocation_id.as_deref().is_none_or(|i| i == invocation)
        })
        .map(|(i, n)| (mark + i, n.clone()))
        .collect();
    expect_fields(&r, &[("stdout", json!(expected)), ("stderr", json!("e\n"))])?;
    if logs.is_empty() {
        return Err(fail("execute.log notifications while the command runs", "none"));
    }
    let mut streamed = String::new();
    for (index, n) in &logs {
        if n.invocation_id.as_deref() != Some(invocation.as_str()) {
            return Err(fail(
                format!("paperclipInvocationId {invocation:?} on every execute.log"),
                format!("{:?}", n.invocation_id),
            ));
        }
        if *index >= answered_at {
            return Err(fail(
                "every execute.log chunk before the execute answer",
                "a chunk arrived after the answer (the host has already closed the log sink)",
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
    if !expected.starts_with(&streamed) {
        return Err(fail(
            "the stdout chunks, in arrival order, are a prefix of the final stdout (no \
             duplicates, no reordering)",
            format!("{streamed:?}"),
        ));
    }
    if streamed.is_empty() {
        return Err(fail("stdout chunks while the command prints", "only stderr chunks"));
    }
    Ok(())
}

/// EXEC-CTRL-1: while a long command runs, a one-shot control command (`bypassSession:
/// true`) answers promptly, before the long one. The long command is a session command where
/// the host would stream a process session (incrementalSessionOutput), else a one-shot like
/// the adapter command the host's callback bridge polls beside
/// ([`hostmodel::control_long_on_session`]).
pub fn control_commands(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    // The long command runs until the harness releases it (at most about 5 s): a control
    // command that waits behind it is answered only after that limit.
    let tag = crate::ids::hex(8);
    let (started_file, release) = (format!("pcconf-long-{tag}"), format!("pcconf-release-{tag}"));
    let mut long = Exec::sh(format!(
        ": > {started_file}; i=0; while [ ! -e {release} ] && [ $i -lt 250 ]; do sleep 0.02; \
         i=$((i+1)); done; printf long"
    ))
    .timeout(30_000);
    if hostmodel::control_long_on_session(ctx.facts) {
        long = long.on_session();
    }
    let long_params = long.params(ctx.facts, &lease, ctx.lease_params(&lease));
    // The control command starts once the long one has (the host's bridge starts before it
    // sends control execs), and gives up waiting after about 5 s.
    let control = Exec::sh(format!(
        "i=0; while [ ! -e {started_file} ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done; \
         printf control"
    ))
    .timeout(20_000);
    let control_params = control.params(ctx.facts, &lease, ctx.lease_params(&lease));
    let releaser = Exec::sh(format!(": > {release}")).timeout(20_000);
    let release_params = releaser.params(ctx.facts, &lease, ctx.lease_params(&lease));
    let timeout = ctx.env.session.call_timeout;
    let s = ctx.session();
    let (long_id, _) = s.start_call(name::ENVIRONMENT_EXECUTE, long_params);
    let started = Instant::now();
    let (control_id, _) = s.start_call(name::ENVIRONMENT_EXECUTE, control_params);
    let control_reply = s.await_reply(&control_id, timeout);
    let took = started.elapsed();
    let long_first = s.notices_before_answer(&long_id).is_some();
    let (release_id, _) = s.start_call(name::ENVIRONMENT_EXECUTE, release_params);
    let long_reply = s.await_reply(&long_id, timeout);
    let _ = s.await_reply(&release_id, timeout);
    match &control_reply {
        Reply::Result(v) if stdout(v) == "control" => {}
        other => return Err(fail("the control command answers `control`", other.describe())),
    }
    if long_first {
        return Err(fail(
            "the one-shot control command (bypassSession: true) answers while the long command \
             still runs (independentControlCommands; declare it false if commands of a lease \
             run one at a time)",
            format!(
                "it was answered after the long command, {} ms after it was sent",
                took.as_millis()
            ),
        ));
    }
    match long_reply {
        Reply::Result(v) if stdout(&v) == "long" => Ok(()),
        other => Err(fail("the long command answers `long`", other.describe())),
    }
}

/// EXEC-SESSION-1: commands on the lease's persistent session (`bypassSession: false`) run
/// like one-shots: env, exit code and output, again and again, with one-shots between them.
pub fn session_commands(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    for round in 1..=2 {
        let value = format!("s{round}-{}", crate::ids::hex(6));
        let exec = Exec::sh("printf %s \"$PCCONF_S\"; exit 4").env("PCCONF_S", &value).on_session();
        let r = ctx.exec(&lease, &exec)?;
        expect_fields(&r, &[("stdout", json!(value)), ("exitCode", json!(4))]).map_err(
            |f| match f {
                Finding::Fail { expected, actual } => fail(
                    format!("session command {round} (bypassSession: false): {expected}"),
                    actual,
                ),
                other => other,
            },
        )?;
        let r = ctx.exec(&lease, &Exec::sh("printf one-shot"))?;
        expect_fields(&r, &[("stdout", json!("one-shot")), ("exitCode", json!(0))])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_large_file_is_four_mebibytes() {
        let (script, bytes) = large_file(&"a".repeat(8192));
        // Each doubling adds its one-digit index: 2^9 * 8192 + 2^9 - 1.
        assert_eq!(bytes.len(), 4 * 1024 * 1024 + 511);
        assert!(script.ends_with("wc -c < big.0"));
        assert!(bytes.ends_with(b"8"));
    }
}
