//! Every chapter of the book is compiled as doctests: each file that `book/src/SUMMARY.md`
//! links is included by `sdk/src/book.rs`, and every Markdown file of `book/src` is in the
//! summary.

use std::path::Path;

fn book_src() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src"))
}

/// The link targets of `SUMMARY.md`, in order.
fn summary_entries() -> Vec<String> {
    let summary = std::fs::read_to_string(book_src().join("SUMMARY.md")).unwrap();
    summary
        .split("](")
        .skip(1)
        .map(|rest| rest.split_once(')').expect("a closed link").0.to_owned())
        .collect()
}

#[test]
fn every_summary_entry_is_a_doctest() {
    let entries = summary_entries();
    assert!(entries.len() >= 15, "the summary lists the chapters: {entries:?}");
    let module = include_str!("../src/book.rs");
    let missing: Vec<&String> =
        entries.iter().filter(|e| !module.contains(&format!("=> \"{e}\","))).collect();
    assert!(missing.is_empty(), "chapters missing from sdk/src/book.rs: {missing:?}");
    for entry in &entries {
        assert!(book_src().join(entry).is_file(), "{entry} exists");
    }
}

#[test]
fn every_chapter_file_is_in_the_summary() {
    let entries = summary_entries();
    let mut files = Vec::new();
    let mut dirs = vec![book_src().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path.strip_prefix(book_src()).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let orphans: Vec<&String> =
        files.iter().filter(|f| *f != "SUMMARY.md" && !entries.contains(f)).collect();
    assert!(orphans.is_empty(), "chapters not in SUMMARY.md: {orphans:?}");
}

/// The crate's front-page example (`src/lib.rs`) is the Quick start's provider, line for line:
/// `conformance/tests/quick_start.rs` builds that in a crate with only the dependencies the
/// page adds and runs the harness on it (which passes), so the front page compiles as written
/// and passes too.
#[test]
fn the_front_page_example_is_the_quick_start_provider() {
    let page = std::fs::read_to_string(book_src().join("quick-start.md")).unwrap();
    let start = page.find("```rust,no_run,quickstart\n").expect("the provider block");
    let body = &page[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let provider = &body[..body.find("```\n").expect("the block ends")];
    let lib = include_str!("../src/lib.rs");
    let doc: String = lib
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.strip_prefix("//! ").unwrap_or(l.strip_prefix("//!").unwrap()))
        .collect::<Vec<_>>()
        .join("\n");
    let start = doc.find("```no_run\n").expect("the front-page example") + "```no_run\n".len();
    let example = &doc[start..start + doc[start..].find("\n```").expect("it ends") + 1];
    assert_eq!(example, provider, "sdk/src/lib.rs's example differs from the Quick start's");
    assert!(lib.contains("book/src/quick-start.md"), "the front page links the Quick start");
}
