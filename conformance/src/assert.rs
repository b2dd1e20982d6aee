//! [`assert_conformant`]: the harness as one assertion in a provider's own test suite.

use paperclip_sandbox_protocol::HostProfile;

use crate::context::RunOptions;
use crate::process::WorkerCommand;
use crate::report::{human, RunReport, Status};
use crate::runner;

impl From<WorkerCommand> for RunOptions {
    fn from(command: WorkerCommand) -> Self {
        let mut options = RunOptions::new(command);
        options.progress = false;
        options
    }
}

/// Runs the harness against a worker under `profile` and panics unless it conforms: every
/// check passes, except exactly the checks of `expected_skips`, which must be skipped (a
/// provider that does not offer a method or capability skips the checks that need it).
///
/// `run` is a [`WorkerCommand`] or, for a config file, a frame cap or other options,
/// [`RunOptions`] (its `profile` is replaced by `profile`). The panic message lists every
/// check that did not do what was expected, then the whole human report. Returns the report
/// for further assertions. Blocking: from async code, call it in `spawn_blocking`.
///
/// ```no_run
/// use paperclip_sandbox_conformance::{assert_conformant, WorkerCommand};
/// use paperclip_sandbox_protocol::HostProfile;
///
/// let worker = WorkerCommand::from_argv(&["target/debug/my-provider".to_owned()]).unwrap();
/// assert_conformant(worker, HostProfile::Paperclip2026_11, &["sync.round-trip"]);
/// ```
pub fn assert_conformant(
    run: impl Into<RunOptions>,
    profile: HostProfile,
    expected_skips: &[&str],
) -> RunReport {
    let mut options = run.into();
    options.profile = profile;
    let report = match runner::run(options) {
        Ok(report) => report,
        Err(e) => panic!("{profile}: the harness could not run: {e}"),
    };
    let mut wrong = Vec::new();
    for check in &report.checks {
        let skip_expected = expected_skips.contains(&check.id.as_str());
        match (&check.status, skip_expected) {
            (Status::Pass, false) | (Status::Skip, true) => {}
            (Status::Skip, false) => wrong.push(format!(
                "{}: skipped ({}), expected to pass",
                check.id,
                check.skip_reason.as_deref().unwrap_or("no reason given")
            )),
            (status, true) => wrong.push(format!("{}: {status:?}, expected to skip", check.id)),
            (status, false) => wrong.push(format!(
                "{}: {status:?}: expected {}, got {}",
                check.id,
                check.expected.as_deref().unwrap_or("-"),
                check.actual.as_deref().unwrap_or("-")
            )),
        }
    }
    for id in expected_skips {
        if !report.checks.iter().any(|c| c.id == *id) {
            wrong.push(format!("{id}: expected to skip, but no such check ran"));
        }
    }
    if !wrong.is_empty() || report.exit_code != 0 {
        panic!(
            "{profile}: the worker does not conform (exit code {}):\n{}\n\n{}",
            report.exit_code,
            wrong.join("\n"),
            human::render(&report)
        );
    }
    report
}
