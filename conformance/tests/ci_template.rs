//! `sandbox-conformance ci-template github` prints a valid GitHub Actions workflow that runs both
//! host profiles, keeps JUnit and the failure transcripts, pins this harness version, and uses
//! only flags the harness has (asked from the binary's own `--help`); the book shows the same
//! file.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use paperclip_sandbox_protocol::HostProfile;
use yaml_rust2::{Yaml, YamlLoader};

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-conformance");

fn harness(args: &[&str]) -> Output {
    Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("the binary runs")
}

fn printed_workflow() -> String {
    let out = harness(&["ci-template", "github"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
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
    let text = printed_workflow();
    let docs = YamlLoader::load_from_str(&text).expect("the workflow is valid YAML");
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
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        all.contains(&format!(
            "cargo install paperclip-sandbox-conformance --version {version} --locked"
        )),
        "installs this harness version"
    );
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
    let text = printed_workflow();
    let docs = YamlLoader::load_from_str(&text).unwrap();
    let scripts: Vec<String> =
        steps(&docs[0]).iter().filter_map(|s| s["run"].as_str().map(str::to_owned)).collect();
    let runs = invocations(&scripts.join("\n"));
    assert!(runs.len() >= 3, "{runs:?}");
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
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/github.yml");
    assert_eq!(std::fs::read_to_string(file).unwrap(), printed_workflow());
}
