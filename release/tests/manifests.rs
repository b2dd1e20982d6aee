//! Release metadata of the workspace, read with `cargo metadata`:
//!
//! - exactly the four library crates publish; examples, the bench, the test worker and this
//!   crate have `publish = false`;
//! - a published crate has what crates.io and docs.rs show (description, license, repository,
//!   documentation, keywords, categories, a readme, `[package.metadata.docs.rs]`), and depends on
//!   workspace crates only through published ones with a version requirement;
//! - the MSRV: every member declares the workspace's `rust-version`, and `.ci/run`'s MSRV build
//!   (`cargo +<toolchain> check --locked` of the published crates) uses exactly that toolchain,
//!   so the declared version is one CI really builds; every locked package a published crate
//!   builds with (normal and build dependencies, all targets) declares a `rust-version` no newer
//!   than ours, so the build on crates.io's newest compatible versions is no surprise either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The crates that go to crates.io, in dependency order.
const PUBLISHED: &[&str] = &[
    "paperclip-sandbox-protocol",
    "paperclip-sandbox-macros",
    "paperclip-sandbox-sdk",
    "paperclip-sandbox-conformance",
];

fn metadata(no_deps: bool) -> Value {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["metadata", "--format-version", "1", "--locked"]);
    if no_deps {
        cmd.arg("--no-deps");
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = cmd.current_dir(workspace).output().expect("cargo runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn members(metadata: &Value) -> Vec<&Value> {
    let ids: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| ids.contains(p["id"].as_str().unwrap()))
        .collect()
}

/// `"1.85"` or `"1.85.0"` as a comparable triple.
fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().expect("a numeric rust-version"));
    (parts.next().unwrap(), parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn exactly_the_library_crates_publish_with_crates_io_and_docs_rs_metadata() {
    let metadata = metadata(true);
    let members = members(&metadata);
    assert!(members.len() >= PUBLISHED.len() + 3, "{} members", members.len());
    for package in members {
        let name = package["name"].as_str().unwrap();
        // `publish = false` is an empty registry list; `null` means "anywhere".
        let publishes = package["publish"] != Value::Array(vec![]);
        assert_eq!(
            publishes,
            PUBLISHED.contains(&name),
            "{name}: publish = {}",
            package["publish"]
        );
        if !publishes {
            continue;
        }
        for field in ["description", "license", "repository", "documentation", "rust_version"] {
            assert!(package[field].as_str().is_some_and(|s| !s.is_empty()), "{name}: no {field}");
        }
        let readme = package["readme"].as_str().unwrap_or_else(|| panic!("{name}: no readme"));
        let dir = Path::new(package["manifest_path"].as_str().unwrap()).parent().unwrap();
        assert!(dir.join(readme).is_file(), "{name}: readme {readme} exists");
        for field in ["keywords", "categories"] {
            let list = package[field].as_array().unwrap();
            assert!(!list.is_empty() && list.len() <= 5, "{name}: 1 to 5 {field}");
        }
        let docs_rs = &package["metadata"]["docs"]["rs"];
        assert!(
            docs_rs["targets"].as_array().is_some_and(|t| !t.is_empty()),
            "{name}: docs.rs targets"
        );
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            if dep["path"].is_string() && dep["kind"].is_null() {
                assert!(PUBLISHED.contains(&dep_name), "{name} depends on unpublished {dep_name}");
                assert_ne!(dep["req"], "*", "{name}: {dep_name} needs a version requirement");
            }
        }
    }
}

#[test]
fn every_locked_dependency_of_a_published_crate_supports_our_rust_version() {
    let metadata = metadata(false);
    let packages: BTreeMap<&str, &Value> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: BTreeMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let ours = packages
        .values()
        .find(|p| p["name"] == PUBLISHED[0])
        .and_then(|p| p["rust_version"].as_str())
        .expect("the protocol crate declares rust-version");
    let msrv = version(ours);

    let mut stack: Vec<&str> = packages
        .iter()
        .filter(|(_, p)| PUBLISHED.contains(&p["name"].as_str().unwrap()))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(stack.len(), PUBLISHED.len());
    let mut seen = BTreeSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let built = dep["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"] != "dev");
            if built {
                stack.push(dep["pkg"].as_str().unwrap());
            }
        }
    }
    let mut too_new = Vec::new();
    let mut undeclared = Vec::new();
    for id in &seen {
        let p = packages[id];
        let label = format!("{} {}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap());
        match p["rust_version"].as_str() {
            Some(v) if version(v) > msrv => too_new.push(format!("{label} (rust-version {v})")),
            Some(_) => {}
            None => undeclared.push(label),
        }
    }
    assert!(seen.len() > 20, "the dependency graph was walked: {} packages", seen.len());
    assert!(
        too_new.is_empty(),
        "locked dependencies that need a newer Rust than our rust-version {ours}: {too_new:#?}\n\
         Pin an older version (`cargo update -p <crate> --precise <version>`) or raise rust-version."
    );
    eprintln!(
        "{} packages build with rust-version {ours}; no rust-version declared: {undeclared:?}",
        seen.len()
    );
}

/// The MSRV build's command in `.ci/run`: the lines from `cargo +"$msrv" check` to the first
/// that does not end with a line continuation, joined.
fn msrv_build_command(script: &str) -> Option<String> {
    let mut lines = script.lines().skip_while(|l| !l.starts_with(r#"cargo +"$msrv" check"#));
    let mut command = String::new();
    for line in lines.by_ref() {
        command.push_str(line.trim_end_matches('\\'));
        command.push(' ');
        if !line.ends_with('\\') {
            return Some(command);
        }
    }
    None
}

#[test]
fn ci_builds_the_published_crates_with_the_declared_rust_version() {
    let metadata = metadata(true);
    let declared: BTreeSet<&str> =
        members(&metadata).iter().map(|p| p["rust_version"].as_str().unwrap_or("(none)")).collect();
    assert_eq!(
        declared.len(),
        1,
        "every member declares the workspace's rust-version: {declared:?}"
    );
    let ours = declared.first().unwrap();

    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let script = std::fs::read_to_string(workspace.join(".ci/run")).unwrap();
    let toolchain = script
        .lines()
        .find_map(|l| l.strip_prefix("msrv="))
        .expect(".ci/run names the MSRV toolchain (msrv=<version>)");
    assert_eq!(
        version(toolchain),
        version(ours),
        ".ci/run builds with Rust {toolchain}, the workspace declares rust-version {ours}"
    );
    let command = msrv_build_command(&script).expect(".ci/run runs cargo +\"$msrv\" check");
    assert!(command.contains(" --locked "), "{command}");
    for name in PUBLISHED {
        assert!(
            command.contains(&format!(" -p {name} ")),
            "the MSRV build checks {name}: {command}"
        );
    }
    eprintln!("MSRV build: Rust {toolchain} for rust-version {ours}: {command}");
}

#[test]
fn versions_compare_numerically() {
    assert!(version("1.100") > version("1.85.0"));
    assert_eq!(version("1.85"), version("1.85.0"));
    assert!(version("1.85.1") > version("1.85"));
}
