//! Shutdown checks, each on a fresh worker: exit after `shutdown`, exit on stdin end of file,
//! and no survivor in the worker's process group (protocol.md A.4, K item 4).

use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::methods::name;
use serde_json::json;

use crate::context::{fail, CheckResult, Ctx, Finding};
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

/// SHUT-3.
pub fn no_orphans(ctx: &mut Ctx<'_>) -> CheckResult {
    let limit = ctx.env.options.shutdown_timeout;
    let mut s = ctx.spawn_initialized("orphans")?;
    let pgid = s.process().pid();
    let started = Instant::now();
    let id = s.next_id();
    let _ = s.call_with(id, name::SHUTDOWN, json!({}), false, limit);
    let left = limit.saturating_sub(started.elapsed());
    if s.process().wait_exit(left).is_none() {
        return Err(Finding::Skip(
            "the worker did not exit on its own; see shutdown.on-request".into(),
        ));
    }
    // Give children that are on their way out a moment to go.
    let deadline = Instant::now() + Duration::from_millis(300);
    let mut members = group_members(pgid);
    while !members.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        members = group_members(pgid);
    }
    if members.is_empty() {
        return Ok(());
    }
    s.process().signal_group(libc::SIGKILL);
    let list: Vec<String> = members.iter().map(|m| format!("{} ({})", m.pid, m.name)).collect();
    Err(fail(
        "no process of the worker's group alive after it exits",
        format!("survivors: {} (killed by the harness)", list.join(", ")),
    ))
}
