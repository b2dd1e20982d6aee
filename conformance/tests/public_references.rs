//! What a user sees cites public sources only: no `protocol.md`, `decisions.md` or `../shared`
//! (project-internal files no user has) in the README files, the book, any `///` or `//!`
//! comment of any crate, or the CLI's `--list` output (text and JSON). Code comments for
//! maintainers (`//`) may cite upstream sources; they are not scanned.

use std::path::{Path, PathBuf};
use std::process::Command;

const PRIVATE: &[&str] = &["protocol.md", "decisions.md", "../shared"];

/// True when `text` names a private file: `decisions.md` as a file name of its own (the book's
/// `design-decisions.md` chapter is public), `protocol.md`, or `../shared`.
fn cites_private(text: &str) -> bool {
    PRIVATE.iter().any(|p| {
        text.match_indices(p).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
    })
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", "node_modules", ".git"].contains(&name.as_str()) {
                walk(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".md") {
            out.push(path);
        }
    }
}

#[test]
fn the_matcher_tells_private_files_from_public_chapters() {
    assert!(cites_private("see decisions.md D4"));
    assert!(cites_private("(protocol.md A.2)"));
    assert!(cites_private("in `../shared/spec`"));
    assert!(!cites_private("[Design decisions](design-decisions.md)"));
}

#[test]
fn docs_and_doc_comments_cite_public_sources_only() {
    let mut files = vec![];
    walk(&repo(), &mut files);
    assert!(files.len() > 50, "the walk found the workspace");
    let this_file = Path::new(file!()).file_name().unwrap().to_owned();
    let mut hits = vec![];
    for file in files {
        if file.file_name() == Some(this_file.as_os_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let markdown = file.extension().is_some_and(|e| e == "md");
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            let user_facing = markdown || t.starts_with("///") || t.starts_with("//!");
            if user_facing && cites_private(line) {
                hits.push(format!("{}:{}: {}", file.display(), i + 1, t));
            }
        }
    }
    assert!(hits.is_empty(), "private references in user-facing text:\n{}", hits.join("\n"));
}

#[test]
fn the_catalogue_cites_public_sources_only() {
    for args in [&["run", "--list"][..], &["run", "--list", "--format", "json"][..]] {
        let out =
            Command::new(env!("CARGO_BIN_EXE_sandbox-conformance")).args(args).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("SANDBOX_PROVIDER_CAPABILITIES.md"), "{args:?}");
        assert!(!cites_private(&text), "{args:?} cites a private file");
    }
}

#[test]
fn the_json_schemas_cite_public_sources_only() {
    // Schema descriptions come from the protocol crate's doc comments and are shown to users.
    let schemas = std::fs::read_to_string(repo().join("protocol/tests/snapshots/schemas.json"))
        .expect("the committed schema snapshot");
    assert!(!cites_private(&schemas), "a JSON Schema description cites a private file");
}
