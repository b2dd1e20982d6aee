//! The JUnit XML report (`--junit FILE`): one `<testcase>` per check, classname = family.
//! FAIL and STALE are `<failure>`; SKIP is `<skipped>`; XFAIL passes with a `<system-out>` note.

use std::fmt::Write as _;

use crate::report::{RunReport, Status};

/// Escapes text for XML attributes and content.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// The report as JUnit XML.
pub fn render(report: &RunReport) -> String {
    let s = &report.summary;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"sandbox-conformance\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"{:.3}\">",
        report.checks.len(),
        s.fail + s.stale,
        s.skip,
        report.wall_ms as f64 / 1000.0
    );
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
            "[{} {}] {}\nexpected: {}\nactual: {}",
            c.level,
            c.requirement,
            c.reference,
            c.expected.as_deref().unwrap_or("-"),
            c.actual.as_deref().unwrap_or("-")
        );
        match c.status {
            Status::Pass => {}
            Status::Fail | Status::Stale => {
                let _ = write!(
                    out,
                    "<failure message=\"{} {}\">{}</failure>",
                    c.status.as_str(),
                    escape(&c.id),
                    escape(&detail)
                );
            }
            Status::Skip => {
                let _ = write!(
                    out,
                    "<skipped message=\"{}\"/>",
                    escape(c.skip_reason.as_deref().unwrap_or(""))
                );
            }
            Status::Xfail => {
                let _ =
                    write!(out, "<system-out>expected failure: {}</system-out>", escape(&detail));
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
        assert_eq!(escape("<a b=\"c\">&'\u{1}"), "&lt;a b=&quot;c&quot;&gt;&amp;&apos;");
    }
}
