//! The human report: a progress line per check while running, then a summary table and the
//! failures with expected vs actual and the contract reference.

use std::fmt::Write as _;

use crate::report::safe::text as safe;
use crate::report::{CheckOutcome, RunReport, Status};

/// The progress line of one check (`[ 3/42] PASS  framing.id-echo (4 ms)`).
pub fn progress_line(index: usize, total: usize, outcome: &CheckOutcome) -> String {
    let mut line = format!(
        "[{index:>2}/{total}] {:<5} {} ({} ms)",
        outcome.status.as_str(),
        outcome.id,
        outcome.duration_ms
    );
    if let Some(by) = &outcome.blocked_by {
        let _ = write!(line, ": blocked by {}", safe(by));
    } else if let Some(reason) = &outcome.skip_reason {
        let _ = write!(line, ": {}", safe(reason));
    }
    line
}

/// The final summary: table, failures, counts and wall time.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    let width = report.checks.iter().map(|c| c.id.len()).max().unwrap_or(10).max(5);
    let _ = writeln!(
        out,
        "sandbox-conformance {} — {} ({}, driver {})",
        report.version,
        safe(&report.worker),
        report.profile,
        safe(&report.driver)
    );
    let _ = writeln!(out, "manifest: {}", safe(&report.manifest_source));
    if let Some(problem) = &report.manifest_problem {
        let _ = writeln!(out, "manifest problem: {}", safe(problem));
    }
    let _ = writeln!(
        out,
        "effective capabilities: {}",
        safe(&join_or_none(&report.effective_capabilities))
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<width$}  {:<6}  {:<15}  {:<7}  WHY NOT RUN",
        "CHECK", "LEVEL", "REQUIREMENT", "RESULT"
    );
    for c in &report.checks {
        let why = match (&c.blocked_by, &c.skip_reason) {
            (Some(by), _) => format!("blocked by {}", safe(by)),
            (None, Some(reason)) => safe(reason),
            _ => String::new(),
        };
        let line = format!(
            "{:<width$}  {:<6}  {:<15}  {:<7}  {why}",
            c.id,
            c.level.to_string(),
            c.requirement,
            c.status.as_str()
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let failures: Vec<&CheckOutcome> = report
        .checks
        .iter()
        .filter(|c| matches!(c.status, Status::Fail | Status::Xfail | Status::Stale))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\nFailures:");
    }
    for c in failures {
        let _ = writeln!(
            out,
            "\n{} {} [{} {}] ({})",
            c.status.as_str(),
            c.id,
            c.level,
            c.requirement,
            c.reference
        );
        if let Some(expected) = &c.expected {
            let _ = writeln!(out, "  expected: {}", safe(expected));
        }
        if let Some(actual) = &c.actual {
            let _ = writeln!(out, "  actual:   {}", safe(actual));
        }
        for note in &c.notes {
            let _ = writeln!(out, "  note:     {}", safe(note));
        }
        if let Some(artifact) = &c.artifact {
            let _ = writeln!(out, "  transcript: {}", safe(artifact));
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\n{} passed, {} failed ({} MUST), {} blocked, {} skipped, {} expected failures, {} stale",
        s.pass, s.fail, s.must_failed, s.blocked, s.skip, s.xfail, s.stale
    );
    out
}

/// `wall time: 1.23 s`.
pub fn wall_line(report: &RunReport) -> String {
    format!("wall time: {:.2} s", report.wall_ms as f64 / 1000.0)
}

fn join_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}
