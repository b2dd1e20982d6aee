//! Destroying what a lease ledger lists, through the worker: `sandbox-conformance sweep` on a
//! ledger file a killed run left behind, and the cleanup of an interrupted run (SIGINT,
//! SIGTERM) on its own ledger.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use paperclip_sandbox_protocol::methods::name;
use paperclip_sandbox_protocol::timeouts::sandbox_rpc_timeout_ms;
use serde_json::{json, Value};

use crate::host::{Observations, Reply, Session, SessionConfig};
use crate::ledger_file::{
    check_trusted, removable, try_lock, LedgerContents, LedgerLease, Unanswered, FILE_PREFIX,
};
use crate::process::WorkerCommand;
use crate::HarnessError;

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// What a sweep did with the leases of one ledger.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SweepOutcome {
    /// Leases destroyed (or released, by a worker that offers no destroy).
    pub destroyed: Vec<String>,
    /// Leases the worker could not end: (lease id, what it answered).
    pub failed: Vec<(String, String)>,
    /// Acquires the run sent and never saw answered: what they made, if anything, no ledger can
    /// name (the provider's own orphan sweep, or its console, is the only way to it).
    pub unanswered: usize,
    /// Why nothing was attempted (the worker did not start, the file is in use, …).
    pub skipped: Option<String>,
}

/// Ends `leases` through a fresh worker started from `command` and initialized with
/// `manifest`: `environmentDestroyLease` with the params the lease was made with, or
/// `environmentReleaseLease` when the worker has no destroy. `ended` is called with each lease
/// ended.
pub(crate) fn end_leases(
    command: &WorkerCommand,
    manifest: &Value,
    leases: &[LedgerLease],
    mut ended: impl FnMut(&str),
) -> SweepOutcome {
    let mut out = SweepOutcome::default();
    if leases.is_empty() {
        return out;
    }
    // The invocation scope names the company the leases were acquired for (`run --company`).
    let mut config = SessionConfig::default();
    if let Some(company) =
        leases.iter().find_map(|l| l.params.get("companyId").and_then(Value::as_str))
    {
        config.company_id = company.to_owned();
    }
    let mut s = match Session::spawn(command, "sweep", config, Observations::default()) {
        Ok(s) => s,
        Err(e) => {
            out.skipped = Some(format!("the worker does not start: {e}"));
            return out;
        }
    };
    match s.initialize(manifest).0 {
        Reply::Result(v) if v.get("ok") == Some(&Value::Bool(true)) => {}
        other => {
            out.skipped = Some(format!("the worker did not initialize: {}", other.describe()));
            s.process().stop(Duration::ZERO, Duration::from_secs(2));
            return out;
        }
    }
    for lease in leases {
        let mut params = lease.params.clone();
        params.insert("providerLeaseId".into(), json!(lease.provider_lease_id));
        params.insert("leaseMetadata".into(), lease.metadata.clone());
        let config = params.get("config").and_then(Value::as_object).cloned().unwrap_or_default();
        // What the host waits for a sandbox call: the config's timer, else its 30 s default.
        let wait = Duration::from_millis(sandbox_rpc_timeout_ms(&config).unwrap_or(30_000));
        let call = |s: &mut Session, method: &str| {
            let id = s.next_id();
            s.call_with(id, method, Value::Object(params.clone()), true, wait).0
        };
        let mut reply = call(&mut s, name::ENVIRONMENT_DESTROY_LEASE);
        if reply.error_code() == Some(METHOD_NOT_FOUND) {
            reply = call(&mut s, name::ENVIRONMENT_RELEASE_LEASE);
        }
        match reply {
            Reply::Result(_) => {
                ended(&lease.provider_lease_id);
                out.destroyed.push(lease.provider_lease_id.clone());
            }
            other => out.failed.push((lease.provider_lease_id.clone(), other.describe())),
        }
    }
    s.shutdown(Duration::from_secs(5));
    out
}

/// The ledger files of `path`: the file itself, or the `ledger-*.jsonl` files of a run
/// directory (none when the directory does not exist).
pub(crate) fn ledger_files(path: &Path) -> Result<Vec<PathBuf>, HarnessError> {
    if !path.is_dir() {
        return if path.exists() { Ok(vec![path.to_owned()]) } else { Ok(vec![]) };
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| HarnessError::io(path, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(FILE_PREFIX) && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Sweeps one ledger file a run left behind: destroys what it lists through the worker it
/// names (or `command`, when given), records each destroy in the file, and removes the file
/// once nothing in it is left to destroy but acquires that were never answered, which the
/// outcome reports ([`Unanswered::Reported`]: no later sweep could learn more about them). A file
/// still locked by a running harness is left alone. A file or directory someone else could
/// have written is refused before anything is read or run (see
/// [`check_trusted`]: the one rule `run` and `replay` apply to their run directory too).
pub(crate) fn sweep_file(
    path: &Path,
    command: Option<&WorkerCommand>,
) -> Result<SweepOutcome, HarnessError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    check_trusted(dir, "directory of the ledger file", "not swept")?;
    check_trusted(path, "ledger file", "not swept")?;
    let io = |e| HarnessError::io(path, e);
    let mut file = std::fs::OpenOptions::new().read(true).append(true).open(path).map_err(io)?;
    if !try_lock(&file) {
        return Ok(SweepOutcome {
            skipped: Some("a running harness holds this ledger".into()),
            ..SweepOutcome::default()
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io)?;
    let contents = LedgerContents::parse(&text);
    let Some(command) = command.cloned().or(contents.command.clone()) else {
        return Err(HarnessError::BadFile {
            path: path.to_owned(),
            message: "not a sandbox-conformance ledger (no `run` record naming the worker)".into(),
        });
    };
    let manifest = contents.manifest.clone().unwrap_or_else(|| json!({}));
    let mut write_failed = None;
    // A killed run may have cut its last line: the first record appended ends it first, so
    // that it stands on a line of its own (and the cut line stays a line the reader skips).
    let mut cut = !text.is_empty() && !text.ends_with('\n');
    let mut out = end_leases(&command, &manifest, &contents.leases, |id| {
        let record = json!({"record": "destroyed", "providerLeaseId": id});
        let line = format!("{}{record}\n", if std::mem::take(&mut cut) { "\n" } else { "" });
        if let Err(e) = (&file).write_all(line.as_bytes()) {
            write_failed.get_or_insert(e);
        }
    });
    out.unanswered = contents.unanswered;
    if let Some(e) = write_failed {
        return Err(io(e));
    }
    let left: Vec<LedgerLease> = (contents.leases.iter())
        .filter(|l| !out.destroyed.contains(&l.provider_lease_id))
        .cloned()
        .collect();
    // A killed run's file records no release: its leases end only by a destroy here.
    let released = std::collections::BTreeSet::new();
    if removable(&left, &released, out.unanswered, Unanswered::Reported) {
        // Nothing the ledger can still name is left: the file has done its work.
        drop::<File>(file);
        std::fs::remove_file(path).map_err(io)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that initializes, destroys lease `l1`, and refuses every other call.
    const WORKER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}\n' "$id" ;;
    *'"method":"shutdown"'*) printf '{"jsonrpc":"2.0","id":%s,"result":null}\n' "$id"; exit 0 ;;
    *'"l1"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"no"}}\n' "$id" ;;
  esac
done
"#;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pcconf-sweep-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn lease_line(id: &str) -> String {
        json!({"record": "lease", "attempt": id, "providerLeaseId": id, "metadata": {},
               "params": {"config": {}}})
        .to_string()
    }

    /// The first `destroyed` record appended to a file whose last line the kill cut stands on
    /// a line of its own: read back, the destroyed lease is gone.
    #[test]
    fn a_record_appended_after_a_cut_line_stands_on_its_own_line() {
        let dir = temp_dir("cut");
        let file = dir.join("ledger-1-1-x.jsonl");
        let command = json!({"program": "/bin/sh", "args": ["-c", WORKER], "env": [], "cwd": null});
        let run = json!({"record": "run", "version": 1, "pid": 1, "command": command});
        let text =
            format!("{run}\n{}\n{}\n{{\"record\":\"acqu", lease_line("l1"), lease_line("l2"));
        std::fs::write(&file, text).unwrap();
        let out = sweep_file(&file, None).unwrap();
        assert_eq!(out.destroyed, ["l1"], "{out:?}");
        assert_eq!(out.failed.len(), 1, "l2 is refused: {out:?}");
        let after = std::fs::read_to_string(&file).unwrap();
        let left = LedgerContents::parse(&after).leases;
        let ids: Vec<&str> = left.iter().map(|l| l.provider_lease_id.as_str()).collect();
        assert_eq!(ids, ["l2"], "{after}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A ledger someone else could have written is refused before its worker is started.
    #[test]
    fn a_ledger_or_directory_others_can_write_is_refused() {
        use std::fs::Permissions;
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path, m: u32| std::fs::set_permissions(p, Permissions::from_mode(m));
        let dir = temp_dir("trust");
        let marker = dir.join("ran");
        let program = format!("touch {}", marker.display());
        let command =
            json!({"program": "/bin/sh", "args": ["-c", program], "env": [], "cwd": null});
        let run = json!({"record": "run", "version": 1, "pid": 1, "command": command});
        let file = dir.join("ledger-1-1-x.jsonl");
        std::fs::write(&file, format!("{run}\n{}\n", lease_line("l1"))).unwrap();
        let refused = |path: &Path, why: &str| {
            let e = sweep_file(path, None).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("not swept"), "{e}");
            assert!(!marker.exists(), "the worker was started: {e}");
        };
        mode(&dir, 0o777).unwrap();
        refused(&file, "directory of the ledger file is writable by its group or by others");
        mode(&dir, 0o700).unwrap();
        mode(&file, 0o620).unwrap();
        refused(&file, "ledger file is writable by its group or by others");
        mode(&file, 0o600).unwrap();
        let link = dir.join("ledger-2-2-x.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        refused(&link, "ledger file is a symbolic link");
        let linked_dir = temp_dir("trust-link");
        std::fs::remove_dir(&linked_dir).unwrap();
        std::os::unix::fs::symlink(&dir, &linked_dir).unwrap();
        refused(
            &linked_dir.join("ledger-1-1-x.jsonl"),
            "directory of the ledger file is a symbolic link",
        );
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&file, Some(4242), None).unwrap();
            refused(&file, "ledger file is owned by another user");
            std::os::unix::fs::chown(&file, Some(0), None).unwrap();
        }
        // Trusted: the worker runs (and fails to destroy: it exits at once).
        let out = sweep_file(&file, None).unwrap();
        assert!(marker.exists(), "{out:?}");
        let _ = std::fs::remove_file(&linked_dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
