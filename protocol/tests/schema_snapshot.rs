//! Snapshot of the JSON Schemas of every message (`schema::message_schemas`): any change of a
//! wire shape fails here until the snapshot is regenerated on purpose with
//! `UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-protocol --test schema_snapshot`.

use std::path::PathBuf;

use paperclip_sandbox_protocol::schema::message_schemas;
use serde_json::Value;

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/schemas.json")
}

#[test]
fn message_schemas_match_snapshot() {
    let current = serde_json::to_string_pretty(&message_schemas()).unwrap() + "\n";
    let path = snapshot_path();
    if std::env::var("UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::write(&path, &current).unwrap();
        return;
    }
    let hint = "if the wire change is intended, run \
                `UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-protocol --test schema_snapshot` \
                and commit protocol/tests/snapshots/schemas.json";
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; {hint}", path.display()));
    if committed == current {
        return;
    }
    let old: serde_json::Map<String, Value> = serde_json::from_str(&committed).unwrap_or_default();
    let new: serde_json::Map<String, Value> = serde_json::from_str(&current).unwrap();
    let mut changed: Vec<String> = Vec::new();
    for (k, v) in &new {
        match old.get(k) {
            None => changed.push(format!("added {k}")),
            Some(o) if o != v => changed.push(format!("changed {k}")),
            _ => {}
        }
    }
    changed.extend(old.keys().filter(|k| !new.contains_key(*k)).map(|k| format!("removed {k}")));
    if changed.is_empty() {
        changed.push("formatting or key order only".to_owned());
    }
    panic!("message schemas differ from the snapshot ({}); {hint}", changed.join(", "));
}
