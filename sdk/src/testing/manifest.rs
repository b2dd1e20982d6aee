//! Manifest checks for a provider's tests.

use std::path::Path;

use paperclip_sandbox_protocol::HostProfile;
use serde_json::{Map, Value};

use crate::manifest::PluginManifest;

/// The environment variable that makes [`assert_manifest_snapshot`] rewrite the snapshot.
pub const UPDATE_SNAPSHOTS: &str = "UPDATE_SNAPSHOTS";

/// The manifests of `M` for every host profile, as one JSON object keyed by profile name
/// (`{"paperclip-2026-09": …, "paperclip-2026-11": …}`).
pub fn manifest_snapshot<M: PluginManifest>() -> Value {
    let map: Map<String, Value> = HostProfile::ALL
        .into_iter()
        .map(|p| (p.as_str().to_owned(), M::manifest(p).to_value()))
        .collect();
    Value::Object(map)
}

/// Asserts that the manifest of `M` for each host profile passes the protocol crate's
/// validator for that profile, and that the manifest of its target profile ([`M::PROFILE`])
/// passes too.
///
/// [`M::PROFILE`]: PluginManifest::PROFILE
pub fn assert_manifest_valid<M: PluginManifest>() {
    for profile in HostProfile::ALL {
        let report = M::manifest(profile).validate(profile);
        assert!(
            report.valid,
            "the {profile} manifest is invalid for {profile}: {:#?}",
            report.errors
        );
    }
}

/// Asserts that [`manifest_snapshot::<M>()`](manifest_snapshot) equals the JSON committed at
/// `path`. With `UPDATE_SNAPSHOTS=1` in the environment it writes the snapshot instead.
///
/// # Panics
///
/// When the snapshot is missing or differs (with a hint to rerun with `UPDATE_SNAPSHOTS=1`
/// and review the diff), or cannot be written.
pub fn assert_manifest_snapshot<M: PluginManifest>(path: impl AsRef<Path>) {
    assert_json_snapshot(path, &manifest_snapshot::<M>());
}

/// The manifest test of a provider crate in one call: [`assert_manifest_snapshot`] against
/// the snapshot at `path` (`UPDATE_SNAPSHOTS=1` rewrites it), then [`assert_manifest_valid`].
///
/// ```no_run
/// # use paperclip_sandbox_sdk::PluginManifest;
/// # fn check<MyProvider: PluginManifest>() {
/// paperclip_sandbox_sdk::testing::assert_manifest::<MyProvider>(concat!(
///     env!("CARGO_MANIFEST_DIR"),
///     "/tests/snapshots/manifest.json"
/// ));
/// # }
/// ```
///
/// # Panics
///
/// As [`assert_manifest_snapshot`] and [`assert_manifest_valid`].
pub fn assert_manifest<M: PluginManifest>(path: impl AsRef<Path>) {
    assert_manifest_snapshot::<M>(path);
    assert_manifest_valid::<M>();
}

/// Asserts that `actual` equals the JSON committed at `path` (`UPDATE_SNAPSHOTS=1` writes it
/// instead); what [`assert_manifest_snapshot`] uses, for manifests read from a worker binary's
/// `--manifest` output.
///
/// # Panics
///
/// As [`assert_manifest_snapshot`].
pub fn assert_json_snapshot(path: impl AsRef<Path>, actual: &Value) {
    let path = path.as_ref();
    let pretty = serde_json::to_string_pretty(actual).expect("JSON serializes") + "\n";
    if std::env::var_os(UPDATE_SNAPSHOTS).is_some_and(|v| v == "1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the snapshot directory");
        }
        std::fs::write(path, pretty).expect("write the snapshot");
        return;
    }
    let hint = format!(
        "rerun with {UPDATE_SNAPSHOTS}=1 to rewrite {} and review the diff",
        path.display()
    );
    let committed = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the manifest snapshot ({e}); {hint}"));
    let expected: Value = serde_json::from_str(&committed)
        .unwrap_or_else(|e| panic!("the manifest snapshot is not JSON ({e}); {hint}"));
    if &expected != actual {
        let diff = line_diff(&committed, &pretty);
        panic!("the generated manifest differs from the snapshot ({hint}):\n{diff}");
    }
}

/// A small line diff: `-` lines only in `old`, `+` lines only in `new`, around the first
/// difference (enough to see what changed in a pretty-printed manifest).
fn line_diff(old: &str, new: &str) -> String {
    let (old, new): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = String::new();
    for line in &old[prefix..old.len() - suffix] {
        out.push_str(&format!("- {line}\n"));
    }
    for line in &new[prefix..new.len() - suffix] {
        out.push_str(&format!("+ {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_the_changed_lines_only() {
        assert_eq!(line_diff("a\nb\nc\n", "a\nX\nc\n"), "- b\n+ X\n");
        assert_eq!(line_diff("a\nb\n", "a\nB\nc\n"), "- b\n+ B\n+ c\n");
        assert_eq!(line_diff("same\n", "same\n"), "");
    }
}
