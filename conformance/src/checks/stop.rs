//! `environmentStopLease` as the host really sends it (`paperclip-2026-11`): beyond the one
//! stop of an idle lease (`lifecycle.stop-keeps-files`), a stop while a command runs (a stop
//! that fails must answer an error and keep the lease, never fall back to deletion), a stop
//! repeated on a lease already stopped (the host repeats a stop whose outcome it did not
//! record), a stop sent by a worker process started afresh (the host dispatches a pending stop
//! to whatever process now runs the plugin), and the host's export-only resume of a stopped
//! lease (resume, readiness through `environmentExecute`, export, stop again).
//!
// Upstream (public contract, SANDBOX_PROVIDER_CAPABILITIES.md "Preserving an unexported
// workspace"): stop the exact allocation and keep its files whatever the release policy; a
// failed or unconfirmed stop throws and never falls back to deletion. The host records a
// stop-and-retain intent in the lease metadata before dispatch, dispatches to the recorded
// plugin (any live process of it), and only a receipt with state "stopped" settles the intent;
// a "destroyed" receipt or an error leaves the cleanup pending, to be tried again (server
// stop-and-retain module). Native export recovery resumes the stopped lease for the export
// only, checks it is ready with a command, exports, and stops it again; when the readiness
// command fails it stops the lease again without exporting.

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::checks::execute::lease as working_lease;
use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::{clip, Reply};
use crate::hostmodel::{self, Exec, HostCall};
use crate::ledger::Lease;

fn show(v: &Value) -> String {
    clip(&v.to_string())
}

/// The stop params the host sends: the lease's id and metadata, `cancelActiveWork: true` and
/// `resourceDisposition: "stop_and_retain"`.
fn stop_params(ctx: &Ctx<'_>, lease: &Lease) -> Value {
    let mut params = ctx.lease_id_params(lease);
    params.insert("cancelActiveWork".into(), json!(true));
    params.insert("resourceDisposition".into(), json!("stop_and_retain"));
    Value::Object(params)
}

/// True for a receipt naming `lease` with state `stopped`.
fn stopped(result: &Value, lease: &Lease) -> bool {
    paperclip_sandbox_protocol::envelope::accept_termination_receipt(result, &lease.id)
        .is_ok_and(|r| r.state.as_str() == "stopped")
}

/// Writes a marker file in the lease's workspace; returns its name.
fn write_marker(ctx: &mut Ctx<'_>, lease: &Lease) -> Result<String, Finding> {
    let marker = format!("pcconf-stop-{}", crate::ids::hex(8));
    let r = ctx.exec(lease, &Exec::sh(format!("printf kept > {marker}")))?;
    if r.get("exitCode") != Some(&json!(0)) {
        return Err(fail("writing a marker file before stop succeeds", show(&r)));
    }
    Ok(marker)
}

/// After a stop: the lease is still there with its files. Resumes it (the host resumes a
/// stopped lease for an export, and on the reuse path) and reads the marker; without
/// `environmentResumeLease` nothing can look, which becomes a note.
fn still_there(ctx: &mut Ctx<'_>, lease: &Lease, marker: &str, after: &str) -> CheckResult {
    if !ctx.facts.advertises(name::ENVIRONMENT_RESUME_LEASE) {
        ctx.notes.push(
            "files not verified: the worker does not advertise environmentResumeLease".into(),
        );
        return Ok(());
    }
    let params = Value::Object(ctx.lease_id_params(lease));
    let expected = format!("{after}, the lease resumes with its files (it was never deleted)");
    let resumed = ctx.call_ok(name::ENVIRONMENT_RESUME_LEASE, params, &expected)?;
    let Some(back) = Lease::from_result(&resumed) else {
        return Err(fail(
            expected,
            format!("resume answered {}: the lease is gone", show(&resumed)),
        ));
    };
    ctx.track(&back);
    let r = ctx.exec(&back, &Exec::sh(format!("cat {marker}")))?;
    if r.get("stdout") == Some(&json!("kept")) {
        Ok(())
    } else {
        Err(fail(expected, format!("the file written before the stop: {}", show(&r))))
    }
}

/// LIFE-STOP-2: a stop sent while a command runs in the lease (the host sends
/// `cancelActiveWork: true`) answers a `stopped` receipt, or an error when it cannot stop;
/// either way the lease and its files are still there. A `destroyed` receipt for the live
/// lease, or a lease that is gone afterwards, is a stop that fell back to deletion.
pub fn stop_busy_never_deletes(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = working_lease(ctx)?;
    let marker = write_marker(ctx, &lease)?;
    // A command that runs about 5 s unless the stop ends it; the stop goes out right after
    // its request, so the worker has it in hand when the stop arrives.
    let long =
        Exec::sh("i=0; while [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done").timeout(30_000);
    let long_params = long.params(ctx.facts, &lease, ctx.lease_params(&lease));
    let params = stop_params(ctx, &lease);
    let timeout = ctx.env.session.call_timeout;
    let s = ctx.session();
    let (long_id, _) = s.start_call(name::ENVIRONMENT_EXECUTE, long_params);
    let (stop_id, _) = s.start_call(name::ENVIRONMENT_STOP_LEASE, params);
    let stop = s.await_reply(&stop_id, timeout);
    let _ = s.await_reply(&long_id, timeout);
    let answer =
        match stop {
            Reply::Result(v) if stopped(&v, &lease) => "the stopped receipt".to_owned(),
            Reply::Result(v) => return Err(fail(
                "a receipt {providerLeaseId: <the lease>, state: \"stopped\"}, or an error when \
                 the stop cannot be done (never a deletion)",
                format!("{} for a live lease with a command running", show(&v)),
            )),
            Reply::Exited => return Err(fail("an answer to the stop", "the worker exited")),
            other => format!("the error ({})", other.describe()),
        };
    still_there(ctx, &lease, &marker, &format!("after {answer} of a stop sent while a command ran"))
}

/// LIFE-STOP-3: a second stop of a lease already stopped answers a `stopped` receipt again
/// (the host repeats a stop whose outcome it did not record), and deletes nothing.
pub fn stop_twice(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = working_lease(ctx)?;
    let marker = write_marker(ctx, &lease)?;
    let expected = "a receipt {providerLeaseId: <the lease>, state: \"stopped\"}";
    let first = ctx.call_ok(name::ENVIRONMENT_STOP_LEASE, stop_params(ctx, &lease), expected)?;
    if !stopped(&first, &lease) {
        return Err(Finding::Skip(format!(
            "the first stop did not answer a stopped receipt ({}); see lifecycle.stop-keeps-files",
            show(&first)
        )));
    }
    let expected = "the second stop of the stopped lease: a receipt {providerLeaseId: <the \
                    lease>, state: \"stopped\"} (a destroyed receipt or an error leaves the \
                    host's cleanup pending)";
    let second = ctx.call_ok(name::ENVIRONMENT_STOP_LEASE, stop_params(ctx, &lease), expected)?;
    if !stopped(&second, &lease) {
        return Err(fail(expected, show(&second)));
    }
    still_there(ctx, &lease, &marker, "after two stops")
}

/// LIFE-STOP-4: a stop sent by a worker process started after the lease was acquired (the
/// plugin was restarted; the same config, the lease's id and metadata) finds the lease and
/// stops it: a provider must not know its leases only in the memory of the process that
/// acquired them.
pub fn stop_from_fresh_worker(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = working_lease(ctx)?;
    let marker = write_marker(ctx, &lease)?;
    let params = stop_params(ctx, &lease);
    let mut fresh = ctx.spawn_initialized("stop-fresh")?;
    let reply = fresh.call(name::ENVIRONMENT_STOP_LEASE, params);
    let _ = fresh.shutdown(ctx.env.options.shutdown_timeout);
    drop(fresh);
    let expected = "a worker started after the acquire stops the lease: a receipt \
                    {providerLeaseId: <the lease>, state: \"stopped\"}";
    let result = reply.into_result().map_err(|a| fail(expected, a))?;
    if !stopped(&result, &lease) {
        return Err(fail(expected, show(&result)));
    }
    still_there(ctx, &lease, &marker, "after the stop by a fresh worker")
}

/// LIFE-STOP-5: the host's export-only resume of a stopped lease, as the host runs it: stop,
/// resume, a readiness command through `environmentExecute`, the export of a file written
/// before the stop (native sync out where the host syncs natively, else its base64 download
/// over `environmentExecute`), then stop again, which must answer a `stopped` receipt. The
/// lease need not be reusable: the host resumes a stopped lease for its export whatever the
/// lease policy.
pub fn export_resume(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = working_lease(ctx)?;
    let marker = write_marker(ctx, &lease)?;
    let expected = "a receipt {providerLeaseId: <the lease>, state: \"stopped\"}";
    let first = ctx.call_ok(name::ENVIRONMENT_STOP_LEASE, stop_params(ctx, &lease), expected)?;
    if !stopped(&first, &lease) {
        return Err(Finding::Skip(format!(
            "the stop did not answer a stopped receipt ({}); see lifecycle.stop-keeps-files",
            show(&first)
        )));
    }
    let params = Value::Object(ctx.lease_id_params(&lease));
    let expected = "the stopped lease resumes for the export";
    let resumed = ctx.call_ok(name::ENVIRONMENT_RESUME_LEASE, params, expected)?;
    let back = Lease::from_result(&resumed).ok_or_else(|| fail(expected, show(&resumed)))?;
    ctx.track(&back);
    let ready = ctx.exec(&back, &Exec::sh("true"))?;
    if ready.get("exitCode") != Some(&json!(0)) {
        // As the host does: a lease that is not ready is stopped again, without its export.
        let params = stop_params(ctx, &back);
        let _ = ctx.session().call(name::ENVIRONMENT_STOP_LEASE, params);
        return Err(fail(
            "the resumed lease is ready: `sh -c true` exits 0 (else the host stops it again \
             without its export)",
            show(&ready),
        ));
    }
    let path = format!("{}/{marker}", hostmodel::remote_cwd(&back));
    let exported = export_file(ctx, &back, &path)?;
    if exported != b"kept" {
        return Err(fail(
            format!("the export of {marker} (written before the stop) gives its bytes"),
            clip(&String::from_utf8_lossy(&exported)),
        ));
    }
    let expected = "the stop after the export: a receipt {providerLeaseId: <the lease>, state: \
                    \"stopped\"}";
    let again = ctx.call_ok(name::ENVIRONMENT_STOP_LEASE, stop_params(ctx, &back), expected)?;
    if stopped(&again, &back) {
        Ok(())
    } else {
        Err(fail(expected, show(&again)))
    }
}

/// Reads `path` out of the lease as the host exports it: `environmentSyncOut` where the host
/// syncs natively, else its chunked base64 download over `environmentExecute`.
fn export_file(ctx: &mut Ctx<'_>, lease: &Lease, path: &str) -> Result<Vec<u8>, Finding> {
    if hostmodel::host_makes(HostCall::NativeSync, ctx.facts, ctx.env.options.profile).is_ok() {
        let target = std::env::temp_dir().join(format!("pcconf-export-{}", crate::ids::hex(12)));
        let mut params = ctx.lease_params(lease);
        params.insert(
            "operations".into(),
            json!([{
                "operationId": format!("pcconf-export-{}", crate::ids::hex(6)),
                "files": [{"sourcePath": path, "targetPath": target.display().to_string(),
                           "kind": "file"}],
            }]),
        );
        let sent = ctx.call_ok(
            name::ENVIRONMENT_SYNC_OUT,
            Value::Object(params),
            "environmentSyncOut of one file succeeds",
        );
        let bytes = std::fs::read(&target);
        let _ = std::fs::remove_file(&target);
        sent?;
        return bytes.map_err(|e| fail("the exported file arrives", e.to_string()));
    }
    let mut bytes = vec![];
    for script in hostmodel::download_steps(path, 4) {
        let r = ctx.exec(lease, &Exec::sh(script))?;
        let out = r.get("stdout").and_then(Value::as_str).unwrap_or_default();
        let chunk = hostmodel::decode_base64(out)
            .ok_or_else(|| fail("the host's base64 download decodes", show(&r)))?;
        bytes.extend(chunk);
    }
    Ok(bytes)
}
