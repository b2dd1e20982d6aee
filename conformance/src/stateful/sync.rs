//! The native sync steps of a program: `syncIn` puts fresh nonces from a host temp dir into
//! the lease's cwd as single-file mappings with a mode, where executes read them; `syncOut`
//! brings files the model knows back into a host temp dir, where they are compared byte for
//! byte with what the lease holds (synced in or written by a command).

use std::fs;
use std::path::{Path, PathBuf};

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::host::{clip, Reply};
use crate::hostmodel::remote_cwd;
use crate::ledger::Lease;

use super::invariants as inv;
use super::model::FileFact;
use super::program::files_of;
use super::step::{file_name, Exec1, Runner};
use super::target::Target;

/// A host temp dir removed on drop.
struct HostDir(PathBuf);

impl HostDir {
    fn new() -> std::io::Result<HostDir> {
        let path = std::env::temp_dir().join(format!("pcconf-state-sync-{}", crate::ids::hex(12)));
        fs::create_dir_all(&path)?;
        Ok(HostDir(path))
    }

    fn file(&self, file: u8) -> PathBuf {
        self.0.join(file_name(file))
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The lease-side path of file `file`: in the lease's cwd, where executes write it.
fn lease_path(lease: &Lease, file: u8) -> String {
    format!("{}/{}", remote_cwd(lease).trim_end_matches('/'), file_name(file))
}

fn host_path(path: &Path) -> String {
    path.display().to_string()
}

/// Whether a sync result names operation `id` with its counts.
fn names_operation(v: &Value, id: &str) -> bool {
    v.get("operations").and_then(Value::as_array).is_some_and(|ops| {
        ops.iter().any(|o| {
            o.get("operationId") == Some(&json!(id))
                && o.get("filesTransferred").is_some_and(Value::is_number)
                && o.get("bytesTransferred").is_some_and(Value::is_number)
        })
    })
}

impl Runner<'_> {
    /// Sends one sync operation of `files` mappings with `method`; answers the reply and
    /// whether it is a result naming the operation (`false` also under a fault, unjudged).
    fn sync_call(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        method: &str,
        lease: &Lease,
        files: Vec<Value>,
    ) -> bool {
        let id = format!("pcstate-{}", crate::ids::hex(6));
        let mut params = self.calls.with_lease(lease);
        params.insert("operations".into(), json!([{"operationId": id, "files": files}]));
        let wait = self.calls.sandbox_wait(self.call_wait);
        let reply = self.call(target, x, method, Value::Object(params), wait);
        if x.model.faulted {
            return false;
        }
        let invariant = if x.healed { inv::RECOVER } else { inv::SYNC };
        x.out.coverage.reach(invariant);
        match &reply {
            Reply::Result(v) if names_operation(v, &id) => true,
            other => {
                let expected = format!(
                    "{method} in a live lease: {{operations: [{{operationId: {id:?}, filesTransferred, bytesTransferred}}]}}"
                );
                let actual = match other {
                    Reply::Result(v) => clip(&v.to_string()),
                    other => other.describe(),
                };
                Self::violate(x, invariant, expected, actual);
                false
            }
        }
    }

    /// `environmentSyncIn` of fresh nonces into `files` of lease `h` with `mode`.
    pub(super) fn sync_in(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        h: u8,
        files: u8,
        mode: u32,
    ) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let dir = match HostDir::new() {
            Ok(d) => d,
            Err(e) => return Self::note(x, format!("the harness cannot prepare a temp dir: {e}")),
        };
        let mut sent = vec![];
        let mut mappings = vec![];
        for file in files_of(files) {
            let nonce = format!("pcn{h}-{}", crate::ids::hex(12));
            if let Err(e) = fs::write(dir.file(file), &nonce) {
                return Self::note(x, format!("the harness cannot write {}: {e}", file_name(file)));
            }
            mappings.push(json!({
                "sourcePath": host_path(&dir.file(file)),
                "targetPath": lease_path(&lease, file),
                "kind": "file",
                "mode": mode,
            }));
            sent.push((file, nonce));
        }
        let ok = self.sync_call(target, x, name::ENVIRONMENT_SYNC_IN, &lease, mappings);
        let handle = x.model.handles.get_mut(&h).expect("a live handle");
        for (file, nonce) in sent {
            handle.nonces.push(nonce.clone());
            handle.files.insert(file, FileFact { nonce, mode, sure: ok });
        }
    }

    /// `environmentSyncOut` of `files` of lease `h`; each must come back as the lease holds it.
    pub(super) fn sync_out(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        h: u8,
        files: u8,
    ) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let dir = match HostDir::new() {
            Ok(d) => d,
            Err(e) => return Self::note(x, format!("the harness cannot prepare a temp dir: {e}")),
        };
        let mappings = files_of(files)
            .map(|file| {
                json!({
                    "sourcePath": lease_path(&lease, file),
                    "targetPath": host_path(&dir.file(file)),
                    "kind": "file",
                })
            })
            .collect();
        if !self.sync_call(target, x, name::ENVIRONMENT_SYNC_OUT, &lease, mappings) {
            return;
        }
        for file in files_of(files) {
            let Some(fact) = x.model.handles[&h].files.get(&file).filter(|f| f.sure).cloned()
            else {
                continue;
            };
            x.out.coverage.reach(inv::SYNC);
            let got =
                fs::read(dir.file(file)).ok().map(|b| String::from_utf8_lossy(&b).into_owned());
            if got.as_deref() != Some(fact.nonce.as_str()) {
                let actual = match got {
                    Some(text) => format!("f{file} came back as {:?}", clip(&text)),
                    None => format!("f{file} did not come back"),
                };
                Self::violate(
                    x,
                    inv::SYNC,
                    format!("syncOut brings f{file} of L{h} back as {:?}", fact.nonce),
                    actual,
                );
                return;
            }
        }
    }
}
