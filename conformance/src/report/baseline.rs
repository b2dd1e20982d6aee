//! The expected-failures baseline: a list of check ids that are known to fail.
//!
//! A baseline file is either JSON (an array of ids, or an object with an `expected_failures`
//! array) or text (one id per line; `#` starts a comment). A listed check that fails is XFAIL
//! and does not fail the run; a listed check that passes is STALE and fails the run, so the
//! baseline shrinks as the worker improves.

use std::path::Path;

use serde_json::Value;

use crate::error::HarnessError;
use crate::report::{RunReport, Status};

/// Reads a baseline file.
pub fn load(path: &Path) -> Result<Vec<String>, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
    parse(&text).map_err(|message| HarnessError::BadFile { path: path.into(), message })
}

/// Parses baseline text (JSON or one id per line).
pub fn parse(text: &str) -> Result<Vec<String>, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("invalid JSON baseline: {e}"))?;
        let list = match &value {
            Value::Array(a) => a,
            Value::Object(o) => o
                .get("expected_failures")
                .and_then(Value::as_array)
                .ok_or("a JSON object baseline needs an `expected_failures` array")?,
            _ => unreachable!("starts with [ or {{"),
        };
        return list
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("baseline entries are check ids, got {v}"))
            })
            .collect();
    }
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Applies a baseline to a report: FAIL → XFAIL, PASS → STALE for listed ids. Returns the listed
/// ids that name no check of the report.
pub fn apply(report: &mut RunReport, expected_failures: &[String]) -> Vec<String> {
    for check in &mut report.checks {
        if !expected_failures.contains(&check.id) {
            continue;
        }
        check.status = match check.status {
            Status::Fail => Status::Xfail,
            Status::Pass => {
                check.notes.push(
                    "listed as an expected failure but passes: remove it from the baseline".into(),
                );
                Status::Stale
            }
            other => other,
        };
    }
    report.finish();
    expected_failures
        .iter()
        .filter(|id| !report.checks.iter().any(|c| &c.id == *id))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_parse() {
        assert_eq!(parse("[\"a.b\", \"c.d\"]").unwrap(), ["a.b", "c.d"]);
        assert_eq!(parse("{\"expected_failures\": [\"a.b\"]}").unwrap(), ["a.b"]);
        assert_eq!(parse("# known\na.b\n\n c.d # flaky\n").unwrap(), ["a.b", "c.d"]);
        assert!(parse("[1]").is_err());
    }
}
