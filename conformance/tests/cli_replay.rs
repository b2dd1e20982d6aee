//! `sandbox-conformance replay`: a failure transcript against the unchanged worker reproduces
//! (exit 0) and says so; against the fixed worker it differs (exit 1) and says what that means;
//! `--expect-fixed` runs the transcript's check and exits 0 only when it passes now.

use std::path::Path;
use std::process::Output;

fn broken(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/broken")
        .join(name)
        .display()
        .to_string()
}

mod support;

use support::harness;

fn temp_dir(name: &str) -> support::TempDir {
    support::temp_dir("replay", name)
}

fn stdout(out: &Output) -> String {
    support::lossy(&out.stdout)
}

/// The transcript of `framing.id-echo` failing against the worker that echoes a string id as a
/// number.
fn failing_transcript(dir: &Path) -> String {
    let artifacts = dir.display().to_string();
    let out = harness(&[
        "run",
        "-q",
        "--filter",
        "framing.id-echo",
        "--artifacts",
        &artifacts,
        "--",
        "node",
        &broken("string-id-as-number.cjs"),
    ]);
    assert_eq!(out.status.code(), Some(1), "the broken worker fails: {}", stdout(&out));
    dir.join("framing.id-echo.ndjson").display().to_string()
}

#[test]
fn replay_explains_a_reproduction_and_a_difference() {
    let dir = temp_dir("explain");
    let transcript = failing_transcript(&dir);

    let same = harness(&["replay", &transcript, "--", "node", &broken("string-id-as-number.cjs")]);
    assert_eq!(same.status.code(), Some(0), "{}", stdout(&same));
    assert!(stdout(&same).contains("The failure's exchange reproduces"), "{}", stdout(&same));

    let fixed = harness(&["replay", &transcript, "--", "node", &broken("correct.cjs")]);
    assert_eq!(fixed.status.code(), Some(1), "{}", stdout(&fixed));
    let text = stdout(&fixed);
    assert!(text.contains("DIFF  id \"90001\" health"), "{text}");
    assert!(
        text.contains("After a fix that is expected: confirm it with `--expect-fixed`"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expect_fixed_passes_only_when_the_check_passes_now() {
    let dir = temp_dir("expect-fixed");
    let transcript = failing_transcript(&dir);

    let fixed =
        harness(&["replay", &transcript, "--expect-fixed", "--", "node", &broken("correct.cjs")]);
    assert_eq!(fixed.status.code(), Some(0), "{}", stdout(&fixed));
    assert!(
        stdout(&fixed).contains("expect-fixed: framing.id-echo passes now"),
        "{}",
        stdout(&fixed)
    );

    let unfixed = harness(&[
        "replay",
        &transcript,
        "--expect-fixed",
        "--",
        "node",
        &broken("string-id-as-number.cjs"),
    ]);
    assert_eq!(unfixed.status.code(), Some(1), "{}", stdout(&unfixed));
    assert!(
        stdout(&unfixed).contains("expect-fixed: framing.id-echo still fails"),
        "{}",
        stdout(&unfixed)
    );

    // A renamed transcript names no check: usage error, unless --check names it.
    let renamed = dir.join("My Transcript.ndjson");
    std::fs::copy(&transcript, &renamed).unwrap();
    let renamed = renamed.display().to_string();
    let nameless =
        harness(&["replay", &renamed, "--expect-fixed", "--", "node", &broken("correct.cjs")]);
    assert_eq!(nameless.status.code(), Some(2), "{}", stdout(&nameless));
    assert!(String::from_utf8_lossy(&nameless.stderr).contains("--check"), "{nameless:?}");
    let named = harness(&[
        "replay",
        &renamed,
        "--expect-fixed",
        "--check",
        "framing.id-echo",
        "--",
        "node",
        &broken("correct.cjs"),
    ]);
    assert_eq!(named.status.code(), Some(0), "{}", stdout(&named));
    let unknown = harness(&[
        "replay",
        &renamed,
        "--expect-fixed",
        "--check",
        "no.such-check",
        "--",
        "node",
        &broken("correct.cjs"),
    ]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stdout(&unknown));

    // --check belongs to --expect-fixed.
    let usage =
        harness(&["replay", &transcript, "--check", "x", "--", "node", &broken("correct.cjs")]);
    assert_eq!(usage.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `replay` reports a harness error (a missing transcript) with the one `error: ` prefix every
/// subcommand uses, and exits 2.
#[test]
fn a_missing_transcript_is_an_error_line() {
    let missing = temp_dir("missing").join("no-such-transcript.ndjson");
    let out =
        harness(&["replay", &missing.display().to_string(), "--", "node", &broken("correct.cjs")]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("no-such-transcript.ndjson"), "{stderr}");
    assert!(!stderr.contains("sandbox-conformance:"), "{stderr}");
    assert!(stdout(&out).is_empty(), "nothing on stdout: {}", stdout(&out));
}
