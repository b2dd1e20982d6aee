//! The JUnit XML report (`--junit FILE`): one `<testcase>` per check, classname = family.
//! A MUST FAIL and STALE are `<failure>`; a SHOULD FAIL passes with a property and
//! `<system-out>`; SKIP and BLOCKED are `<skipped>`; XFAIL passes with a `<system-out>` note.

use std::fmt::Write as _;

use crate::report::{RunReport, Status};
use crate::requirements::Level;

/// Escapes text for XML attributes and content. Characters XML does not allow (most C0
/// controls, U+FFFE, U+FFFF) and the ones no report shows as themselves
/// ([`crate::report::safe::is_unsafe`]) are written as visible escapes (`\u{1b}`), so the
/// file is well-formed whatever a worker wrote; line breaks stay (they are the harness's own).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            c if crate::report::safe::is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The report as JUnit XML.
///
/// The suite is named `sandbox-conformance <profile>`. A failed MUST check (and a STALE
/// baseline entry) is a `<failure>` whose `message` says what failed; a failed SHOULD check does
/// not turn the job red: it passes with a `<properties>` entry and the details in
/// `<system-out>`. SKIP and BLOCKED are `<skipped>` with their reason. A run that could not
/// start is one `<testcase>` with an `<error>`.
pub fn render(report: &RunReport) -> String {
    let s = &report.summary;
    let must_fail = report
        .checks
        .iter()
        .filter(|c| {
            c.status == Status::Stale || (c.status == Status::Fail && c.level == Level::Must)
        })
        .count();
    let errors = usize::from(report.error.is_some());
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let suite = escape(&format!("sandbox-conformance {}", report.profile));
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"{suite}\" tests=\"{}\" failures=\"{must_fail}\" skipped=\"{}\" errors=\"{errors}\" time=\"{:.3}\">",
        report.checks.len() + errors,
        s.skip + s.blocked,
        report.wall_ms as f64 / 1000.0
    );
    if let Some(error) = &report.error {
        let _ = writeln!(
            out,
            "  <testcase classname=\"harness\" name=\"harness.run\" time=\"0.000\"><error message=\"{}\">{}</error></testcase>",
            escape(error),
            escape(&format!("sandbox-conformance could not run the worker `{}`: {error}", report.worker))
        );
    }
    for c in &report.checks {
        let family = c.id.split('.').next().unwrap_or_default();
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
            escape(family),
            escape(&c.id),
            c.duration_ms as f64 / 1000.0
        );
        let detail = format!(
            "[{} {}] {}\nexpected: {}\nactual: {}{}",
            c.level,
            c.requirement,
            c.reference,
            c.expected.as_deref().unwrap_or("-"),
            c.actual.as_deref().unwrap_or("-"),
            c.notes.iter().map(|n| format!("\nnote: {n}")).collect::<String>()
        );
        let what = format!(
            "{} {} [{} {}]: expected {}; actual {}",
            c.status.as_str(),
            c.id,
            c.level,
            c.requirement,
            c.expected.as_deref().unwrap_or("-"),
            c.actual.as_deref().unwrap_or("-")
        );
        let (what, detail) = (escape(&what), escape(&detail));
        match c.status {
            Status::Pass => {}
            Status::Fail if c.level == Level::Should => {
                let _ = write!(
                    out,
                    "<properties><property name=\"should-failure\" value=\"{what}\"/></properties><system-out>SHOULD failure (does not fail the run): {detail}</system-out>",
                );
            }
            Status::Fail | Status::Stale => {
                let _ = write!(out, "<failure message=\"{what}\">{detail}</failure>");
            }
            Status::Skip | Status::Blocked => {
                let reason = c.skip_reason.as_deref().unwrap_or("");
                let message = match &c.blocked_by {
                    Some(by) => format!("BLOCKED by {by}: {reason}"),
                    None => reason.to_owned(),
                };
                let _ = write!(out, "<skipped message=\"{}\"/>", escape(&message));
            }
            Status::Xfail => {
                let _ = write!(out, "<system-out>expected failure: {detail}</system-out>");
            }
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape("<a b=\"c\">&'\u{1}\u{fffe}"),
            "&lt;a b=&quot;c&quot;&gt;&amp;&apos;\\u{1}\\u{fffe}"
        );
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use crate::report::{CheckOutcome, Summary};

    fn report(checks: Vec<CheckOutcome>, error: Option<String>) -> RunReport {
        let mut r = RunReport {
            tool: "sandbox-conformance".into(),
            version: "0".into(),
            worker: "w".into(),
            profile: "paperclip-2026-09".into(),
            driver: "d".into(),
            manifest_source: String::new(),
            manifest_problem: None,
            supported_methods: vec![],
            effective_capabilities: vec![],
            checks,
            summary: Summary::default(),
            exit_code: 0,
            wall_ms: 0,
            error,
        };
        r.finish();
        r
    }

    fn failed(id: &str, level: Level) -> CheckOutcome {
        CheckOutcome {
            requirement: "R-1".into(),
            reference: "book x.md#r-1".into(),
            expected: Some("a".into()),
            actual: Some("b".into()),
            ..CheckOutcome::new(id, level, Status::Fail)
        }
    }

    #[test]
    fn should_failures_do_not_fail_the_suite_and_must_failures_say_what_failed() {
        let xml = render(&report(vec![failed("a.should", Level::Should)], None));
        assert!(xml.contains("name=\"sandbox-conformance paperclip-2026-09\""));
        assert!(xml.contains("failures=\"0\"") && !xml.contains("<failure"));
        assert!(xml.contains("should-failure"));
        let xml = render(&report(vec![failed("a.must", Level::Must)], None));
        assert!(xml.contains("failures=\"1\""));
        assert!(xml.contains("<failure message=\"FAIL a.must [MUST R-1]: expected a; actual b\">"));
        let xml = render(&report(vec![], Some("cannot spawn worker `w`".into())));
        assert!(
            xml.contains("errors=\"1\"")
                && xml.contains("<error message=\"cannot spawn worker `w`\">")
        );
    }
}
