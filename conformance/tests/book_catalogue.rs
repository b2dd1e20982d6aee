//! The book and the harness agree.
//!
//! 1. Every requirement of the catalogue is defined in exactly one chapter, the one
//!    `catalogue::chapter_of` names, with the catalogue's level and an anchor; every id the book
//!    defines is in the catalogue or in `catalogue::CONTRACT_ONLY`.
//! 2. Every MUST requirement has at least one check.
//! 3. Every check names a known requirement.
//! 4. The generated pages `book/src/reference/checks.md` and `book/src/reference/schemas.md`
//!    equal their renderers' output (`UPDATE_SNAPSHOTS=1` rewrites them).
//! 5. The capability table of the contract chapter matches `capabilities::CAPABILITIES`.
//! 6. The CI chapter states how long an interrupted run waits for the acquires in flight.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use paperclip_sandbox_conformance::__internals::{
    anchor, chapter_of, chapters, checks as all, render_markdown, render_schema_index,
    CONTRACT_ONLY, INTERRUPT_ACQUIRE_WAIT, REQUIREMENTS,
};
use paperclip_sandbox_conformance::Level;
use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::HostProfile;

fn book() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src")
}

fn read(file: &str) -> String {
    std::fs::read_to_string(book().join(file)).unwrap_or_else(|e| panic!("book/src/{file}: {e}"))
}

/// Every `.md` file under `book/src`, relative to it.
fn book_files() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(&book(), &book(), &mut out);
    out.sort();
    out
}

/// A requirement definition found in the book.
#[derive(Debug)]
struct Definition {
    file: String,
    level: String,
    contract_only: bool,
    anchored: bool,
}

/// Requirement blocks: `> **ID** (LEVEL[, contract-only]) …`, with `<a id="id">` on the line
/// before.
fn definitions() -> Vec<(String, Definition)> {
    let mut out = Vec::new();
    for file in book_files() {
        let text = read(&file);
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix("> **") else { continue };
            let Some((id, rest)) = rest.split_once("** (") else { continue };
            let Some((level, _)) = rest.split_once(')') else { continue };
            let (level, contract_only) = match level.split_once(", ") {
                Some((l, "contract-only")) => (l, true),
                Some((_, other)) => panic!("{file}: {id}: unknown marker {other:?}"),
                None => (level, false),
            };
            let anchored = i > 0 && lines[i - 1].trim() == format!("<a id=\"{}\"></a>", anchor(id));
            let def =
                Definition { file: file.clone(), level: level.into(), contract_only, anchored };
            out.push((id.to_owned(), def));
        }
    }
    out
}

fn level(l: Level) -> &'static str {
    match l {
        Level::Must => "MUST",
        Level::Should => "SHOULD",
    }
}

#[test]
fn every_requirement_is_defined_once_in_its_chapter() {
    let defs = definitions();
    let mut by_id: BTreeMap<&str, Vec<&Definition>> = BTreeMap::new();
    for (id, def) in &defs {
        by_id.entry(id.as_str()).or_default().push(def);
    }
    let mut problems = Vec::new();
    let known = REQUIREMENTS
        .iter()
        .map(|r| (r.id, r.level, false))
        .chain(CONTRACT_ONLY.iter().map(|c| (c.id, c.level, true)));
    for (id, lvl, contract_only) in known {
        let found = by_id.remove(id).unwrap_or_default();
        let [def] = found.as_slice() else {
            problems.push(format!("{id}: defined {} times in the book", found.len()));
            continue;
        };
        let chapter = chapter_of(id).map(|c| c.file);
        if chapter != Some(def.file.as_str()) {
            problems.push(format!("{id}: defined in {}, expected in {chapter:?}", def.file));
        }
        if def.level != level(lvl) {
            problems.push(format!(
                "{id}: the book says {}, the catalogue {}",
                def.level,
                level(lvl)
            ));
        }
        if def.contract_only != contract_only {
            problems.push(format!("{id}: contract-only marker is {}", def.contract_only));
        }
        if !def.anchored {
            problems.push(format!("{id}: no `<a id=\"{}\"></a>` on the line before", anchor(id)));
        }
    }
    for (id, found) in by_id {
        problems.push(format!(
            "{id}: defined in {} but in neither the catalogue nor CONTRACT_ONLY",
            found[0].file
        ));
    }
    assert!(problems.is_empty(), "book and catalogue disagree:\n{}", problems.join("\n"));
    // Every chapter the catalogue links to exists.
    for chapter in chapters() {
        assert!(read(chapter.file).starts_with(&format!("# {}", chapter.title)), "{chapter:?}");
    }
}

#[test]
fn every_must_requirement_has_a_check() {
    let unchecked: Vec<&str> = REQUIREMENTS
        .iter()
        .filter(|r| r.level == Level::Must && !all().any(|c| c.requirement == r.id))
        .map(|r| r.id)
        .collect();
    assert!(unchecked.is_empty(), "MUST requirements without a check: {unchecked:?}");
}

#[test]
fn every_check_names_a_known_requirement() {
    let unknown: Vec<String> = all()
        .filter(|c| !REQUIREMENTS.iter().any(|r| r.id == c.requirement))
        .map(|c| format!("{} -> {}", c.id, c.requirement))
        .collect();
    assert!(unknown.is_empty(), "checks naming unknown requirements: {unknown:?}");
    for c in CONTRACT_ONLY {
        assert!(
            !REQUIREMENTS.iter().any(|r| r.id == c.id),
            "{} is checked, not contract-only",
            c.id
        );
        assert!(!all().any(|k| k.requirement == c.id), "{} has a check", c.id);
    }
}

/// Compares a generated page with its committed file; `UPDATE_SNAPSHOTS=1` rewrites it.
fn snapshot(file: &str, current: &str) {
    let path = book().join(file);
    if std::env::var("UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::write(&path, current).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == current {
        return;
    }
    let first = committed
        .lines()
        .zip(current.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(committed.lines().count().min(current.lines().count()));
    panic!(
        "book/src/{file} is stale (first difference at line {}:\n  committed: {:?}\n  generated: {:?}).\n\
         Regenerate it with `UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-conformance --test book_catalogue` \
         and commit the result.",
        first + 1,
        committed.lines().nth(first).unwrap_or(""),
        current.lines().nth(first).unwrap_or(""),
    );
}

#[test]
fn generated_check_catalogue_is_committed() {
    let page = render_markdown();
    for r in REQUIREMENTS {
        assert!(page.contains(&format!("[{}](", r.id)), "{} is on the page", r.id);
    }
    for c in all() {
        assert!(page.contains(&format!("| `{}` |", c.id)), "{} is on the page", c.id);
    }
    snapshot("reference/checks.md", &page);
}

#[test]
fn generated_schema_index_is_committed() {
    let page = render_schema_index();
    assert!(page.contains("| `environmentExecuteParams` | object |"));
    assert!(page.contains("| `Manifest` |"));
    snapshot("reference/schemas.md", &page);
}

#[test]
fn contract_chapter_capability_table_matches_the_protocol_table() {
    let text = read("capability-contract.md");
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip_while(|l| !l.starts_with("| Capability | Required worker methods |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect())
        .collect();
    let caps: Vec<Capability> = Capability::for_profile(HostProfile::Paperclip2026_11).collect();
    assert_eq!(rows.len(), caps.len(), "one row per paperclip-2026-11 capability: {rows:?}");
    for (row, cap) in rows.iter().zip(caps) {
        let spec = cap.spec();
        let key = format!("`{}`", spec.key);
        let expected_key = if spec.extension { format!("{key} (extension)") } else { key };
        assert_eq!(row[0], expected_key);
        let methods: Vec<String> =
            spec.required.iter().flat_map(|g| g.iter()).map(|m| format!("`{m}`")).collect();
        assert_eq!(row[1], methods.join(", "), "{}", spec.key);
        let opt_in = match (spec.opt_in, cap) {
            (true, _) => "yes",
            (false, Capability::ReusableLeases) => "yes (lease policy)",
            (false, _) => "no",
        };
        assert_eq!(row[2], opt_in, "{}", spec.key);
    }
}

#[test]
fn ci_chapter_states_the_interrupt_acquire_wait() {
    let text = read("ci.md").split_whitespace().collect::<Vec<_>>().join(" ");
    let secs = INTERRUPT_ACQUIRE_WAIT.as_secs();
    let stated = format!("waits up to {secs} s for the acquires in flight");
    assert!(text.contains(&stated), "book/src/ci.md must say: {stated}");
}
