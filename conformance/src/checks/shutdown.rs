//! Shutdown checks, each on a fresh worker: exit after `shutdown`, exit on stdin end of file,
//! and no survivor of the worker (protocol.md A.4, K item 4).

use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::Session;
use crate::ledger::Lease;
use crate::process::group_members;

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

/// SHUT-3: shut a worker down while a command it started is still running, then look for
/// survivors: the worker's own process group, and (when the command runs on this machine) the
/// command itself, wherever its process group is. A worker without `environmentExecute` is
/// checked on its group alone.
pub fn no_orphans(ctx: &mut Ctx<'_>) -> CheckResult {
    let limit = ctx.env.options.shutdown_timeout;
    let mut s = ctx.spawn_initialized("orphans")?;
    let pgid = s.process().pid();
    let marker = if ctx.facts.advertises(name::ENVIRONMENT_ACQUIRE_LEASE)
        && ctx.facts.advertises(name::ENVIRONMENT_EXECUTE)
    {
        start_long_command(ctx, &mut s, pgid)
    } else {
        None
    };
    ctx.notes.push(match &marker {
        Some(m) => format!("shut down while `sh -c 'sleep {m}'` was running"),
        None => "no command could be seen running on this machine; checked the worker's \
                 process group only"
            .into(),
    });
    let started = Instant::now();
    let id = s.next_id();
    let _ = s.call_with(id, name::SHUTDOWN, json!({}), false, limit);
    let left = limit.saturating_sub(started.elapsed());
    if s.process().wait_exit(left).is_none() {
        kill_marked(marker.as_deref());
        return Err(Finding::Skip(
            "the worker did not exit on its own; see shutdown.on-request".into(),
        ));
    }
    // Give children that are on their way out a moment to go.
    let deadline = Instant::now() + Duration::from_millis(500);
    let survivors = || {
        let mut list: Vec<String> =
            group_members(pgid).iter().map(|m| format!("{} ({})", m.pid, m.name)).collect();
        if let Some(marker) = &marker {
            list.extend(
                marked_processes(marker).iter().map(|pid| format!("{pid} (`sleep {marker}`)")),
            );
        }
        list
    };
    let mut list = survivors();
    while !list.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        list = survivors();
    }
    if list.is_empty() {
        return Ok(());
    }
    s.process().signal_group(libc::SIGKILL);
    kill_marked(marker.as_deref());
    Err(fail(
        "no process the worker started is alive after it exits (a command running at `shutdown` \
         is ended with the worker)",
        format!("survivors: {} (killed by the harness)", list.join(", ")),
    ))
}

/// Acquires a lease on the fresh worker and starts `sleep <marker>` in it without waiting for
/// the answer. Returns the marker once the command is seen running on this machine as a
/// descendant of the worker (`worker_pid`); `None` when acquiring fails or the command runs
/// elsewhere (a remote sandbox, whose processes are not the worker's children).
fn start_long_command(ctx: &Ctx<'_>, s: &mut Session, worker_pid: i32) -> Option<String> {
    let mut params = ctx.base_params();
    params.insert("runId".into(), json!(crate::ids::uuid()));
    let lease = s
        .call(name::ENVIRONMENT_ACQUIRE_LEASE, Value::Object(params))
        .into_result()
        .ok()
        .and_then(|v| Lease::from_result(&v))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let marker = format!("297.{nanos:09}{}", std::process::id());
    let mut p = ctx.lease_params(&lease);
    p.insert("command".into(), json!("sh"));
    p.insert("args".into(), json!(["-c", format!("sleep {marker}")]));
    p.insert("timeoutMs".into(), json!(300_000));
    p.insert("bypassSession".into(), json!(true));
    // Sent like any execute; the answer never comes before shutdown, so wait only briefly.
    let id = s.next_id();
    let _ = s.call_with(
        id,
        name::ENVIRONMENT_EXECUTE,
        Value::Object(p),
        true,
        Duration::from_millis(50),
    );
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if marked_processes(&marker).into_iter().any(|pid| descends_from(pid, worker_pid)) {
            return Some(marker);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Live (non-zombie) processes whose command line carries `marker`.
fn marked_processes(marker: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    let mut pids = vec![];
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|st| st.rfind(')').map(|i| st[i + 1..].trim_start().starts_with('Z')))
            .unwrap_or(true);
        if !zombie && cmdline.split(|b| *b == 0).any(|arg| arg.ends_with(marker.as_bytes())) {
            pids.push(pid);
        }
    }
    pids
}

/// True when `worker_pid` is `pid` or one of its ancestors.
fn descends_from(mut pid: i32, worker_pid: i32) -> bool {
    for _ in 0..64 {
        if pid == worker_pid {
            return true;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
        let Some(ppid) = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            return false;
        };
        if ppid <= 1 {
            return false;
        }
        pid = ppid;
    }
    false
}

fn kill_marked(marker: Option<&str>) {
    for pid in marker.map(marked_processes).unwrap_or_default() {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}
