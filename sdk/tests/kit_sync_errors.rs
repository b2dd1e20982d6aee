//! A sync error names roles, never values the host chose: a failing transfer through the kit
//! (`kit::transfer::run_operations` over `kit::tar`) answers without the host's `operationId`
//! or any host path in its message or anywhere in the wire error envelope.

use std::path::Path;

use paperclip_sandbox_sdk::kit::tar::{pack, unpack, Rules, Transfer};
use paperclip_sandbox_sdk::kit::transfer::{run_operations, Direction, SyncBackend};
use paperclip_sandbox_sdk::kit::{Excludes, KitError, Result};
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::methods::sync::{FileMapping, MappingKind, PostUploadCommand};
use paperclip_sandbox_sdk::testing::TestClient;
use serde_json::{json, Value};
use tokio::time::{Duration, Instant};

/// Planted in the operation id and in every path; must never be answered.
const SENTINEL: &str = "sentinel-9e41";

/// Moves a mapping from this machine to this machine as a tar stream; a source named
/// `crafted` is an archive whose file entry has no directory entry before it.
struct Local;

impl SyncBackend for Local {
    async fn mapping(&self, _: Direction, m: &FileMapping) -> Result<Transfer> {
        let directory = matches!(m.kind, MappingKind::Directory);
        let rules = Rules::new(0, 0).with_excludes(Excludes::new::<&str>(&[])?);
        let mut archive = Vec::new();
        if m.source_path.ends_with("crafted") {
            let mut b = tar::Builder::new(&mut archive);
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            b.append_data(&mut h, format!("root/{SENTINEL}-missing/f"), &b"x"[..]).unwrap();
            b.finish().unwrap();
            drop(b);
        } else {
            pack(Path::new(&m.source_path), "root", directory, &rules, &mut archive)?;
        }
        unpack(&archive[..], Path::new(&m.target_path), directory, &rules)
    }

    async fn post_upload(&self, _: &PostUploadCommand, _: Instant) -> Result<()> {
        Ok(())
    }
}

#[derive(PluginManifest, Default)]
#[plugin(id = "acme.sync", display_name = "Sync", description = "Moves files.", author = "Acme")]
#[driver(key = "sync", display_name = "Sync")]
struct SyncProvider;

#[provider]
impl SandboxProvider for SyncProvider {
    async fn sync_in(&self, params: SyncInParams) -> Result<SyncResult, KitError> {
        run_operations(&Local, Direction::In, &params.operations, Duration::from_secs(600)).await
    }

    async fn sync_out(&self, params: SyncOutParams) -> Result<SyncResult, KitError> {
        run_operations(&Local, Direction::Out, &params.operations, Duration::from_secs(600)).await
    }
}

fn sync_params(source: &Path, target: &Path, kind: &str) -> Value {
    json!({
        "driverKey": "sync", "companyId": "c", "environmentId": "e", "config": {},
        "lease": {"providerLeaseId": "l", "metadata": {}},
        "operations": [{
            "operationId": format!("op-{SENTINEL}"),
            "files": [{"sourcePath": source, "targetPath": target, "kind": kind}],
        }],
    })
}

#[tokio::test]
async fn sync_errors_name_roles_not_the_hosts_values() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(SENTINEL);
    std::fs::create_dir(&root).unwrap();
    let file = root.join(format!("{SENTINEL}-file"));
    std::fs::write(&file, "content").unwrap();
    let client = TestClient::new(SyncProvider);
    let cases = [
        // The source is missing.
        (sync_params(&root.join("missing"), &root.join("out"), "file"), "the sync source"),
        // The destination's parent is a regular file.
        (sync_params(&file, &file.join("sub/out"), "file"), "the sync destination"),
        // An archive entry cannot be created.
        (sync_params(&root.join("crafted"), &root.join("tree"), "directory"), "archive entry 0"),
    ];
    // syncOut's answer carries the sync-error envelope (`data`); syncIn's has none.
    for method in ["environmentSyncIn", "environmentSyncOut"] {
        for (params, role) in &cases {
            let error = client.call_raw(method, params.clone()).await.unwrap_err();
            let envelope = serde_json::to_string(&error).unwrap();
            assert!(!envelope.contains(SENTINEL), "a host value is quoted: {envelope}");
            assert_eq!(error.data.is_some(), method == "environmentSyncOut", "{envelope}");
            assert!(error.message.starts_with("operations[0].files[0]: "), "{}", error.message);
            assert!(error.message.contains(role), "{role} is not named: {}", error.message);
        }
    }
}
