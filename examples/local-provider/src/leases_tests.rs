//! Unit tests of [`super`]: real directories under a temporary root.

use super::*;
use std::os::unix::fs::MetadataExt;

fn store() -> (tempfile::TempDir, LeaseStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = LeaseStore::open(&tmp.path().join("root"), ProcessGroups::default()).unwrap();
    (tmp, store)
}

fn id_of(lease: &Lease) -> String {
    lease.provider_lease_id.clone().unwrap()
}

#[test]
fn acquire_creates_a_private_directory_named_by_an_opaque_id() {
    let (_t, s) = store();
    let lease = s.acquire(None).unwrap();
    let id = id_of(&lease);
    assert!(id.starts_with("lp-") && id.len() == 35 && is_valid_lease_id(&id), "{id}");
    let dir = s.root().join(&id);
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    assert!(dir.join("workspace").is_dir() && dir.join(".tmp").is_dir());
    assert_eq!(lease.expires_at, None);
    assert_eq!(lease.metadata["remoteCwd"], json!(dir.join("workspace")));
    assert!(!lease.metadata.contains_key("root"), "no config-named keys in metadata");
    let wire = serde_json::to_value(&lease).unwrap();
    assert_eq!(wire["providerLeaseId"], json!(id));
    assert!(wire.get("expiresAt").is_none());
    assert_ne!(id_of(&s.acquire(None).unwrap()), id);
}

#[test]
fn requested_expiry_is_recorded_returned_and_enforced() {
    let (_t, s) = store();
    let soon = format_rfc3339_ms(now_ms() + 3_600_000);
    let lease = s.acquire(Some(&soon)).unwrap();
    assert_eq!(lease.expires_at.as_deref(), Some(soon.as_str()));
    assert_eq!(lease.metadata["requestedExpiresAt"], json!(soon));
    let id = id_of(&lease);
    assert_eq!(s.resume(&id).unwrap().expires_at.as_deref(), Some(soon.as_str()));
    // Expire it by rewriting the record, as time passing would.
    let mut rec = s.read_record(&id).unwrap().unwrap();
    rec.expires_at = Some(format_rfc3339_ms(now_ms() - 1));
    s.write_record(&rec).unwrap();
    let resumed = s.resume(&id).unwrap();
    assert_eq!(resumed.provider_lease_id, None);
    assert_eq!(resumed.metadata["expired"], json!(true));
    assert_eq!(s.active_dir(&id).unwrap_err().kind, ErrorKind::Expired);
    // The next acquire sweeps it away.
    s.acquire(None).unwrap();
    assert!(!s.root().join(&id).exists());
    assert!(s.acquire(Some("2000-01-01T00:00:00Z")).is_err());
    assert_eq!(s.acquire(Some("tomorrow")).unwrap_err().kind, ErrorKind::InvalidParams);
}

#[test]
fn resume_of_unknown_or_malformed_ids_is_not_found() {
    let (_t, s) = store();
    for id in ["lp-0123", "../etc", ""] {
        let r = s.resume(id).unwrap();
        assert_eq!(r.provider_lease_id, None, "{id}");
        assert_eq!(r.metadata["expired"], json!(true));
        assert_eq!(r.metadata["reason"], json!("not_found"));
    }
    let wire = serde_json::to_value(s.resume("nope").unwrap()).unwrap();
    assert_eq!(wire["providerLeaseId"], Value::Null);
}

#[test]
fn destroy_and_release_are_idempotent() {
    let (_t, s) = store();
    let id = id_of(&s.acquire(None).unwrap());
    std::fs::write(s.root().join(&id).join("workspace/f"), "x").unwrap();
    let receipt = s.destroy(Some(&id)).unwrap().unwrap();
    assert_eq!(receipt, Receipt { provider_lease_id: id.clone(), state: ReceiptState::Destroyed });
    assert!(!s.root().join(&id).exists());
    assert_eq!(s.destroy(Some(&id)).unwrap().unwrap().state, ReceiptState::Destroyed);
    assert_eq!(
        s.release(Some(&id), Disposition::Destroy).unwrap().unwrap().state,
        ReceiptState::Destroyed
    );
    assert_eq!(s.destroy(None).unwrap(), None);
    assert_eq!(s.destroy(Some("a/b")).unwrap_err().kind, ErrorKind::InvalidParams);
    assert_eq!(s.resume(&id).unwrap().provider_lease_id, None);
    let wire = serde_json::to_value(&receipt).unwrap();
    assert_eq!(wire, json!({"providerLeaseId": id, "state": "destroyed"}));
}

#[test]
fn stop_keeps_files_blocks_work_and_resume_restarts() {
    let (_t, s) = store();
    let id = id_of(&s.acquire(None).unwrap());
    let file = s.root().join(&id).join("workspace/kept");
    std::fs::write(&file, "x").unwrap();
    let r = s.stop(&id).unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"providerLeaseId": id, "state": "stopped"})
    );
    assert!(file.exists());
    assert_eq!(s.active_dir(&id).unwrap_err().kind, ErrorKind::Stopped);
    assert_eq!(s.stop(&id).unwrap().state, ReceiptState::Stopped, "stop is repeatable");
    let resumed = s.resume(&id).unwrap();
    assert_eq!(resumed.provider_lease_id.as_deref(), Some(id.as_str()));
    assert!(s.active_dir(&id).is_ok());
    s.destroy(Some(&id)).unwrap();
    assert_eq!(s.stop(&id).unwrap().state, ReceiptState::Destroyed);
}

#[test]
fn release_follows_the_resource_disposition() {
    let (_t, s) = store();
    let id = id_of(&s.acquire(None).unwrap());
    assert_eq!(s.release(Some(&id), Disposition::from_wire(Some("keep_running"))).unwrap(), None);
    assert!(s.active_dir(&id).is_ok());
    let r = s.release(Some(&id), Disposition::from_wire(Some("stop_and_retain"))).unwrap().unwrap();
    assert_eq!(r.state, ReceiptState::Stopped);
    assert!(s.root().join(&id).exists());
    let r = s.release(Some(&id), Disposition::from_wire(None)).unwrap().unwrap();
    assert_eq!(r.state, ReceiptState::Destroyed);
    assert!(!s.root().join(&id).exists());
}

#[test]
fn realize_returns_the_workspace_or_a_confined_remote_path() {
    let (_t, s) = store();
    let id = id_of(&s.acquire(None).unwrap());
    let dir = s.root().join(&id);
    assert_eq!(s.realize(&id, None).unwrap(), dir.join("workspace"));
    assert_eq!(s.realize(&id, Some("/somewhere/else")).unwrap(), dir.join("workspace"));
    let inside = dir.join("repo/checkout");
    assert_eq!(s.realize(&id, inside.to_str()).unwrap(), inside);
    assert!(inside.is_dir());
    let escape = format!("{}/../x", dir.display());
    assert_eq!(s.realize(&id, Some(&escape)).unwrap_err().kind, ErrorKind::Confinement);
    assert_eq!(s.realize("lp-missing", None).unwrap_err().kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn stop_and_destroy_end_running_commands() {
    let (_t, s) = store();
    let id = id_of(&s.acquire(None).unwrap());
    let dir = s.active_dir(&id).unwrap();
    let req = crate::exec::ExecRequest {
        command: "sh".into(),
        args: vec!["-c".into(), "sleep 30 & sleep 30".into()],
        ..Default::default()
    };
    let task = tokio::spawn({
        let (dir, groups) = (dir.clone(), s.groups().clone());
        async move { crate::exec::run(&dir, req, Some(&groups), &mut (), std::future::pending()).await }
    });
    for _ in 0..200 {
        if s.groups().live_count(&dir) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(s.stop(&id).unwrap().state, ReceiptState::Stopped);
    let out = tokio::time::timeout(std::time::Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out.signal, Some(libc::SIGKILL));
}
