//! Shutdown checks, each on a fresh worker: exit after `shutdown`, exit on stdin end of file,
//! and nothing the worker started outlives it.
//!
//! `shutdown.no-orphans` judges every process the worker started on this machine, in its
//! process group or not (the worker runs below its own subreaper, so a process that left its
//! group or session is still found, and only the worker's own tree is ever read or signalled),
//! and a command it was running at shutdown through the wire: the command appends to a
//! heartbeat file in its lease, and after the worker exits a follow-up execute (on the main
//! worker) shows whether the file still grows. That works the same for a local, a
//! containerized and a remote sandbox.

use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::methods::name;
use serde_json::json;

use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::Session;
use crate::hostmodel::{quote, Exec};
use crate::ledger::Lease;

/// SHUT-1.
pub fn on_request(ctx: &mut Ctx<'_>) -> CheckResult {
    let limit = ctx.env.options.shutdown_timeout;
    let mut s = ctx.spawn_initialized("shutdown")?;
    let started = Instant::now();
    let id = s.next_id();
    let _ = s.call_with(id, name::SHUTDOWN, json!({}), false, limit);
    let left = limit.saturating_sub(started.elapsed());
    match s.process().wait_exit(left) {
        Some(_) => Ok(()),
        None => Err(fail(
            format!("exit within {} ms of `shutdown`", limit.as_millis()),
            "still running (killed by the harness)",
        )),
    }
}

/// SHUT-2.
pub fn on_stdin_eof(ctx: &mut Ctx<'_>) -> CheckResult {
    let limit = ctx.env.options.shutdown_timeout;
    let mut s = ctx.spawn_initialized("stdin-eof")?;
    s.process().close_stdin();
    match s.process().wait_exit(limit) {
        Some(_) => Ok(()),
        None => Err(fail(
            format!("exit within {} ms of stdin end of file", limit.as_millis()),
            "still running (killed by the harness)",
        )),
    }
}

/// A command left running on a fresh worker: its lease and its heartbeat file.
struct Heartbeat {
    lease: Lease,
    path: String,
}

/// Acquires a lease on the fresh worker and starts a heartbeat command in it without waiting
/// for the answer (it never comes before shutdown).
fn start_heartbeat(ctx: &mut Ctx<'_>, s: &mut Session) -> Option<Heartbeat> {
    let lease = ctx.acquire_on(s).ok()?;
    let path = format!(
        "{}/pcconf-orphan-{}",
        crate::hostmodel::remote_cwd(&lease).trim_end_matches('/'),
        crate::ids::hex(8)
    );
    // The heartbeat ends itself: when the harness creates its stop file (through the wire,
    // once judged) and at the latest after 6,000 beats (about 5 minutes), so that a command
    // that did outlive its worker does not outlive the run for long, wherever it runs.
    let script = format!(
        "i=0; while [ $i -lt 6000 ] && [ ! -e {stop} ]; do printf x >> {p}; sleep {BEAT}; i=$((i+1)); done",
        stop = quote(&stop_file(&path)),
        p = quote(&path)
    );
    let params =
        Exec::sh(script).timeout(300_000).params(ctx.facts, &lease, ctx.lease_params(&lease));
    let _ = s.start_call(name::ENVIRONMENT_EXECUTE, params);
    // Wait for the first beat (the event the old fixed wait stood for), through the fresh
    // worker's own lease; a worker that runs one command at a time answers after its limit.
    let first = format!(
        "i=0; while [ ! -s {p} ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done",
        p = quote(&path)
    );
    let params =
        Exec::sh(first).timeout(20_000).params(ctx.facts, &lease, ctx.lease_params(&lease));
    let id = s.next_id();
    let _ = s.call_with(id, name::ENVIRONMENT_EXECUTE, params, true, Duration::from_secs(20));
    Some(Heartbeat { lease, path })
}

/// The heartbeat's interval, in seconds (as `sleep` takes it).
const BEAT: &str = "0.05";

/// How long the follow-up execute watches the heartbeat file, in seconds: several beats.
const WATCH: &str = "0.4";

/// The file whose existence ends the heartbeat command.
fn stop_file(heartbeat: &str) -> String {
    format!("{heartbeat}.stop")
}

/// Ends the heartbeat command through the wire: through the fresh worker that started it
/// while that one still serves, else through the main worker (which may not reach the lease;
/// the command then ends on its own budget).
fn stop_heartbeat(ctx: &mut Ctx<'_>, fresh: &mut Session, beat: &Heartbeat) {
    let exec = Exec::sh(format!(": > {}", quote(&stop_file(&beat.path))));
    let params = exec.params(ctx.facts, &beat.lease, ctx.lease_params(&beat.lease));
    // A few seconds: this worker already ignored `shutdown`, and may not answer at all.
    let id = fresh.next_id();
    let (reply, _) =
        fresh.call_with(id, name::ENVIRONMENT_EXECUTE, params, true, Duration::from_secs(5));
    if reply.into_result().is_ok() {
        return;
    }
    if ctx.has_session() {
        let _ = ctx.exec(&beat.lease, &exec);
    }
}

/// Through the wire: does the heartbeat still grow? The same command then stops it.
/// `Ok(None)` when the main worker cannot reach the lease (then only the process group is
/// judged).
fn still_beating(ctx: &mut Ctx<'_>, beat: &Heartbeat) -> Result<Option<(u64, u64)>, Finding> {
    if !ctx.has_session() {
        return Ok(None);
    }
    let p = quote(&beat.path);
    let stop = quote(&stop_file(&beat.path));
    let script = format!(
        "a=$(wc -c < {p} 2>/dev/null || echo 0); sleep {WATCH}; b=$(wc -c < {p} 2>/dev/null || echo 0); : > {stop}; echo \"$a $b\""
    );
    let Ok(r) = ctx.exec(&beat.lease, &Exec::sh(script)) else { return Ok(None) };
    let out = r.get("stdout").and_then(|v| v.as_str()).unwrap_or_default();
    let nums: Vec<u64> = out.split_whitespace().filter_map(|n| n.parse().ok()).collect();
    match nums.as_slice() {
        [a, b] if r.get("exitCode") == Some(&json!(0)) => Ok(Some((*a, *b))),
        _ => Ok(None),
    }
}

/// The process group of `pid` (a process of the worker's own tree).
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(2)?.parse().ok()
}

/// A process name as data: quoted, with anything unprintable escaped.
fn quoted(name: &str) -> String {
    format!("{:?}", crate::host::clip(name))
}

/// SHUT-3: shut a worker down while a command it started is still running, then look for
/// survivors: the worker's own process group, and the command itself, through the wire.
pub fn no_orphans(ctx: &mut Ctx<'_>) -> CheckResult {
    let limit = ctx.env.options.shutdown_timeout;
    if !ctx.env.manifest_leftovers.is_empty() {
        return Err(fail(
            "no process that `<worker> --manifest` started is alive after it exits",
            format!(
                "`<worker> --manifest` left {} process(es) running after it exited: {} (the \
                 harness ended them)",
                ctx.env.manifest_leftovers.len(),
                ctx.env.manifest_leftovers.join(", ")
            ),
        ));
    }
    let mut s = ctx.spawn_initialized("orphans")?;
    let pgid = s.process().pid();
    let heartbeat = if ctx.facts.advertises(name::ENVIRONMENT_ACQUIRE_LEASE)
        && ctx.facts.advertises(name::ENVIRONMENT_EXECUTE)
    {
        start_heartbeat(ctx, &mut s)
    } else {
        None
    };
    let started = Instant::now();
    let id = s.next_id();
    let _ = s.call_with(id, name::SHUTDOWN, json!({}), false, limit);
    let left = limit.saturating_sub(started.elapsed());
    if s.process().wait_exit(left).is_none() {
        // The harness kills the worker's group; a command the worker started in a group of its
        // own lives on, so it is stopped through the wire.
        if let Some(beat) = &heartbeat {
            stop_heartbeat(ctx, &mut s, beat);
        }
        return Err(Finding::Skip(
            "the worker did not exit on its own; see shutdown.on-request".into(),
        ));
    }
    // Give children that are on their way out a moment to go: the event waited for is the
    // worker's tree becoming empty.
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut left = s.process().descendants();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        left = s.process().descendants();
    }
    if !left.is_empty() {
        let in_group = left.iter().filter(|(pid, _)| process_group(*pid) == Some(pgid)).count();
        let names: Vec<String> =
            left.iter().take(8).map(|(pid, name)| format!("{pid} {}", quoted(name))).collect();
        let ended = s.process().end_tree(Duration::from_secs(10));
        if let Some(beat) = &heartbeat {
            stop_heartbeat(ctx, &mut s, beat);
        }
        return Err(fail(
            "no process the worker started is alive after it exits",
            format!(
                "{} process(es) left ({} in the worker's process group, {} outside it, e.g. \
                 started with setsid): {}; {}",
                left.len(),
                in_group,
                left.len() - in_group,
                names.join(", "),
                if ended { "the harness ended them" } else { "the harness could not end them all" }
            ),
        ));
    }
    let Some(beat) = heartbeat else {
        ctx.notes
            .push("no command could be started; checked the worker's process group only".into());
        return Ok(());
    };
    match still_beating(ctx, &beat)? {
        Some((a, b)) if b > a => Err(fail(
            "a command running at `shutdown` ends with the worker",
            format!(
                "its heartbeat file in lease {} grew from {a} to {b} bytes after the worker \
                 exited: the command outlives it (the harness then stopped it through its stop file)",
                beat.lease.id
            ),
        )),
        Some(_) => Ok(()),
        None => {
            ctx.notes.push(format!(
                "shut down while a command was running; lease {} was not reachable from the main \
                 worker afterwards, so only the worker's process group was judged",
                beat.lease.id
            ));
            Ok(())
        }
    }
}
