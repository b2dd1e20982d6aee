//! Every chapter's Rust code compiles in a crate that depends only on what the chapter names.
//!
//! A chapter names its dependencies with `cargo add` lines in its `sh` blocks (`--dev` for
//! dev-dependencies, `--features`/`-F` for features). For each chapter of `book/src/SUMMARY.md`
//! with Rust code, this test writes one crate with exactly those dependencies (the
//! paperclip-sandbox crates from this checkout, every other crate at the version this
//! workspace locks), one example per `rust` block (as rustdoc would run it: hidden `# ` lines
//! kept, wrapped in `fn main` unless it has one) and one integration test per included `rs`
//! file, and checks them all with one `cargo check` over a scratch workspace of these crates.
//! `compile_fail` and `ignore` blocks are skipped (the doctests of `sdk/src/book.rs` judge
//! them). The build shares this checkout's target directory, so dependencies compile once.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates of this workspace a chapter may name, and their directories.
const OUR_CRATES: &[(&str, &str)] = &[
    ("paperclip-sandbox-sdk", "sdk"),
    ("paperclip-sandbox-protocol", "protocol"),
    ("paperclip-sandbox-macros", "macros"),
    ("paperclip-sandbox-conformance", "conformance"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// One dependency a chapter names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dependency {
    name: String,
    dev: bool,
    features: Vec<String>,
    default_features: bool,
}

/// The dependencies named by one `cargo add` command line (without `cargo add`).
fn parse_cargo_add(words: &[&str]) -> Vec<Dependency> {
    let mut names = Vec::new();
    let (mut dev, mut features, mut default_features) = (false, Vec::new(), true);
    let mut words = words.iter();
    while let Some(word) = words.next() {
        match *word {
            "--dev" => dev = true,
            "--features" | "-F" => {
                let list = words.next().expect("a feature list after --features");
                features
                    .extend(list.split([',', ' ']).filter(|f| !f.is_empty()).map(str::to_owned));
            }
            "--no-default-features" => default_features = false,
            // The source of one of our crates; the test uses this checkout whatever it is.
            "--path" | "--git" => {
                words.next();
            }
            flag if flag.starts_with('-') => panic!("`cargo add {flag}` is not understood"),
            name => names.push(name.split('@').next().unwrap().to_owned()),
        }
    }
    assert!(
        features.is_empty() || names.len() == 1,
        "one crate per `cargo add` line with --features: {names:?}"
    );
    names
        .into_iter()
        .map(|name| Dependency { name, dev, features: features.clone(), default_features })
        .collect()
}

/// A code block of a chapter.
#[derive(Debug)]
struct Block {
    info: String,
    body: String,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else { continue };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        blocks.push(Block { info: info.trim().to_owned(), body: body.join("\n") });
    }
    blocks
}

/// What one chapter compiles: examples (`rust` blocks) and tests (included `rs` files).
#[derive(Debug, Default)]
struct Chapter {
    dependencies: Vec<Dependency>,
    examples: Vec<String>,
    tests: Vec<String>,
}

/// rustdoc's treatment of a block: `# ` lines are code, and the whole is the body of `main`
/// unless it defines one.
fn as_program(body: &str) -> String {
    let code: Vec<&str> = body
        .lines()
        .map(|l| match l {
            "#" => "",
            l if l.starts_with("##") => &l[1..],
            l => l.strip_prefix("# ").unwrap_or(l),
        })
        .collect();
    let code = code.join("\n");
    if code.contains("fn main(") {
        format!("#![allow(unused)]\n{code}\n")
    } else {
        format!("#![allow(unused)]\nfn main() {{\n{code}\n}}\n")
    }
}

fn chapter(path: &Path) -> Chapter {
    let markdown = std::fs::read_to_string(path).unwrap();
    let mut chapter = Chapter::default();
    for block in blocks(&markdown) {
        let tags: Vec<&str> = block.info.split(',').map(str::trim).collect();
        match tags[0] {
            "sh" | "console" | "bash" => {
                for line in block.body.lines() {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    if let ["cargo", "add", rest @ ..] = words.as_slice() {
                        chapter.dependencies.extend(parse_cargo_add(rest));
                    }
                }
            }
            "rust" if tags.iter().any(|t| matches!(*t, "compile_fail" | "ignore")) => {}
            "rust" => chapter.examples.push(as_program(&block.body)),
            "rs" => {
                let include = block
                    .body
                    .trim()
                    .strip_prefix("{{#include ")
                    .and_then(|rest| rest.strip_suffix("}}"))
                    .expect("an `rs` block is an {{#include}} of a file");
                let file = path.parent().unwrap().join(include);
                chapter.tests.push(std::fs::read_to_string(&file).unwrap());
            }
            _ => {}
        }
    }
    chapter
}

/// The chapter files of `SUMMARY.md`, in order.
fn summary(book: &Path) -> Vec<String> {
    let summary = std::fs::read_to_string(book.join("SUMMARY.md")).unwrap();
    summary
        .split("](")
        .skip(1)
        .map(|rest| rest.split_once(')').expect("a closed link").0.to_owned())
        .collect()
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The `Cargo.toml` of a chapter's crate.
fn manifest(package: &str, chapter: &Chapter, workspace: &Path) -> String {
    let mut normal = BTreeMap::new();
    let mut dev = BTreeMap::new();
    for dep in &chapter.dependencies {
        let source = match OUR_CRATES.iter().find(|(name, _)| *name == dep.name) {
            Some((_, dir)) => {
                format!("path = {}", toml_string(&workspace.join(dir).display().to_string()))
            }
            // The lock file copied from this workspace pins the version.
            None => "version = \"*\"".to_owned(),
        };
        let features: Vec<String> = dep.features.iter().map(|f| toml_string(f)).collect();
        let spec = format!(
            "{{ {source}, features = [{}], default-features = {} }}",
            features.join(", "),
            dep.default_features
        );
        let table = if dep.dev { &mut dev } else { &mut normal };
        assert!(table.insert(dep.name.clone(), spec).is_none(), "{} is named twice", dep.name);
    }
    let mut out = format!(
        "[package]\nname = {}\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
        toml_string(package)
    );
    for (name, spec) in &normal {
        writeln!(out, "{name} = {spec}").unwrap();
    }
    out.push_str("\n[dev-dependencies]\n");
    for (name, spec) in &dev {
        writeln!(out, "{name} = {spec}").unwrap();
    }
    out
}

#[test]
fn cargo_add_lines_are_parsed() {
    let dep = |name: &str, dev: bool, features: &[&str]| Dependency {
        name: name.into(),
        dev,
        features: features.iter().map(|f| f.to_string()).collect(),
        default_features: true,
    };
    assert_eq!(
        parse_cargo_add(&["tokio", "--features", "macros,rt"]),
        [dep("tokio", false, &["macros", "rt"])]
    );
    assert_eq!(
        parse_cargo_add(&["--dev", "tempfile", "serde_json@1"]),
        [dep("tempfile", true, &[]), dep("serde_json", true, &[])]
    );
    assert_eq!(
        parse_cargo_add(&["paperclip-sandbox-sdk", "--path", "../x/sdk"]),
        [dep("paperclip-sandbox-sdk", false, &[])]
    );
}

#[test]
fn every_chapter_compiles_with_only_the_dependencies_it_names() {
    let workspace = workspace();
    let book = workspace.join("book/src");
    let scratch = std::env::temp_dir().join(format!("book-dependencies-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let _cleanup = RemoveOnDrop(scratch.clone());

    let mut members = Vec::new();
    let mut unnamed = Vec::new();
    for entry in summary(&book) {
        let chapter = chapter(&book.join(&entry));
        if chapter.examples.is_empty() && chapter.tests.is_empty() {
            continue;
        }
        if chapter.dependencies.is_empty() {
            unnamed.push(entry);
            continue;
        }
        let package = format!("chapter-{}", entry.trim_end_matches(".md").replace('/', "-"));
        let dir = scratch.join(&package);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("examples")).unwrap();
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), manifest(&package, &chapter, &workspace)).unwrap();
        std::fs::write(dir.join("src/lib.rs"), format!("//! The code of {entry}.\n")).unwrap();
        for (n, code) in chapter.examples.iter().enumerate() {
            std::fs::write(dir.join(format!("examples/block_{}.rs", n + 1)), code).unwrap();
        }
        for (n, code) in chapter.tests.iter().enumerate() {
            std::fs::write(dir.join(format!("tests/included_{}.rs", n + 1)), code).unwrap();
        }
        members.push((entry, package));
    }
    assert!(unnamed.is_empty(), "chapters with Rust code but no `cargo add` line: {unnamed:?}");
    assert!(members.len() >= 8, "the chapters with code: {members:?}");

    let names: Vec<String> = members.iter().map(|(_, p)| toml_string(p)).collect();
    std::fs::write(
        scratch.join("Cargo.toml"),
        format!("[workspace]\nresolver = \"2\"\nmembers = [{}]\n", names.join(", ")),
    )
    .unwrap();
    // The versions this workspace is tested with.
    std::fs::copy(workspace.join("Cargo.lock"), scratch.join("Cargo.lock")).unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let out = Command::new(env!("CARGO"))
        .args(["check", "--workspace", "--examples", "--tests", "--message-format", "short"])
        .current_dir(&scratch)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_TERM_COLOR", "never")
        // An included integration test of a binary crate names its binary; there is none here.
        .env("CARGO_BIN_EXE_local-provider", "/nonexistent/local-provider")
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> =
        stderr.lines().filter(|l| l.contains("error[") || l.contains("error:")).collect();
    assert!(
        out.status.success(),
        "a chapter's code does not compile with the dependencies it names (chapter-<file>/examples/block_<n>.rs is the n-th Rust block of <file>):\n{}\n--- full output\n{stderr}",
        errors.join("\n")
    );
}

/// Removes the scratch workspace however the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
