//! The public API of `paperclip-sandbox-protocol`, `paperclip-sandbox-sdk` and
//! `paperclip-sandbox-conformance` (its library: what a provider's tests call) against the
//! committed snapshots `release/api/<crate>.txt`, so that an accidental break (a removed or
//! renamed item, a changed signature, a lost auto trait) fails a test and a deliberate change
//! shows up in review.
//!
//! The API is read from rustdoc's JSON output (`cargo rustdoc … --output-format json`, an
//! unstable rustdoc option enabled with `RUSTC_BOOTSTRAP=1` on this stable toolchain) and listed
//! one item per line by the `public-api` crate. Blanket impls (`impl<T> From<T> for T`, …) are
//! left out; auto traits (`Send`, `Sync`, …) are kept, because losing one breaks users.
//!
//! After a deliberate API change, rewrite the snapshots and review the diff:
//!
//! ```sh
//! UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-release --test public_api
//! ```
//!
//! The `public-api` release must read the JSON format of the toolchain; after a toolchain
//! update that changes the format, update `public-api` in `release/Cargo.toml`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// A target directory of its own: `RUSTC_BOOTSTRAP` is part of some build scripts' fingerprints
/// (`proc-macro2`, `thiserror`), so sharing the main one would rebuild them for every build.
fn target_dir() -> PathBuf {
    let main = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    main.join("public-api")
}

/// The rustdoc JSON of `package`'s library.
fn rustdoc_json(package: &str) -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["rustdoc", "--quiet", "--locked", "--lib", "-p", package, "--"])
        .args(["-Z", "unstable-options", "--output-format", "json"])
        .current_dir(workspace())
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("RUSTDOCFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo rustdoc -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    target_dir().join("doc").join(format!("{}.json", package.replace('-', "_")))
}

/// The public API of `package`, one item per line, sorted.
fn public_api(package: &str) -> String {
    let json = rustdoc_json(package);
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .build()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (after a toolchain update, update `public-api` in release/Cargo.toml)",
                json.display()
            )
        });
    let mut text: String = api.items().map(|item| format!("{item}\n")).collect();
    if text.is_empty() {
        text.push('\n');
    }
    text
}

fn check(package: &str) {
    let api = public_api(package);
    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("api").join(format!("{package}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snapshot, &api).unwrap();
        eprintln!("rewrote {}", snapshot.display());
        return;
    }
    let committed = std::fs::read_to_string(&snapshot).unwrap_or_default();
    if committed == api {
        return;
    }
    let now: BTreeSet<&str> = api.lines().collect();
    let before: BTreeSet<&str> = committed.lines().collect();
    let removed: Vec<&&str> = before.difference(&now).collect();
    let added: Vec<&&str> = now.difference(&before).collect();
    let mut report = String::new();
    for line in &removed {
        report.push_str(&format!("- {line}\n"));
    }
    for line in &added {
        report.push_str(&format!("+ {line}\n"));
    }
    panic!(
        "the public API of {package} differs from {} ({} removed, {} added):\n{report}\n\
         A removed or changed line breaks users. If the change is deliberate, run\n  \
         UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-release --test public_api\n\
         and commit the snapshot.",
        snapshot.display(),
        removed.len(),
        added.len()
    );
}

#[test]
fn protocol_public_api_matches_the_snapshot() {
    check("paperclip-sandbox-protocol");
}

#[test]
fn sdk_public_api_matches_the_snapshot() {
    check("paperclip-sandbox-sdk");
}

#[test]
fn conformance_public_api_matches_the_snapshot() {
    check("paperclip-sandbox-conformance");
}
