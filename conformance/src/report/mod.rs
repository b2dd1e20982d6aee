//! The report of a run: one [`CheckOutcome`] per check of the catalogue, the exit code, and the
//! renderers (human, JSON, JUnit) and the expected-failures baseline.

pub(crate) mod baseline;
pub(crate) mod human;
pub(crate) mod junit;
pub(crate) mod safe;

use serde::Serialize;

use crate::requirements::Level;

/// The result of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Status {
    /// The worker meets the requirement.
    #[serde(rename = "PASS")]
    Pass,
    /// The worker breaks the requirement.
    #[serde(rename = "FAIL")]
    Fail,
    /// The check did not apply (printed reason).
    #[serde(rename = "SKIP")]
    Skip,
    /// A prerequisite check failed (named in `blocked_by`): one root cause, one failure.
    #[serde(rename = "BLOCKED")]
    Blocked,
    /// An expected failure (in the baseline) that still fails; does not fail the run.
    #[serde(rename = "XFAIL")]
    Xfail,
    /// An expected failure that now passes: the baseline is stale; fails the run.
    #[serde(rename = "STALE")]
    Stale,
}

impl Status {
    /// The status word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
            Status::Blocked => "BLOCKED",
            Status::Xfail => "XFAIL",
            Status::Stale => "STALE",
        }
    }
}

/// One check's outcome (stable field names: the `--format json` contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckOutcome {
    /// The check id.
    pub id: String,
    /// What it checks.
    pub title: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The requirement id.
    pub requirement: String,
    /// Where a user reads the requirement: the book chapter and anchor, then the upstream
    /// public document and section.
    pub reference: String,
    /// The result.
    pub status: Status,
    /// For a failure: what the contract expects.
    pub expected: Option<String>,
    /// For a failure: what the worker did.
    pub actual: Option<String>,
    /// For a skip or a block: why.
    pub skip_reason: Option<String>,
    /// For a block: the check whose failure blocks this one.
    pub blocked_by: Option<String>,
    /// Remarks (tolerated deviations, cleanup trouble).
    pub notes: Vec<String>,
    /// How long the check took.
    pub duration_ms: u64,
    /// The transcript artifact written for a failure, if any.
    pub artifact: Option<String>,
}

impl CheckOutcome {
    /// The outcome `status` of check `id` at `level`, with no detail yet: empty title,
    /// requirement and reference, no expected/actual, skip reason, blocker, notes or artifact,
    /// 0 ms.
    pub fn new(id: impl Into<String>, level: Level, status: Status) -> Self {
        CheckOutcome {
            id: id.into(),
            title: String::new(),
            level,
            requirement: String::new(),
            reference: String::new(),
            status,
            expected: None,
            actual: None,
            skip_reason: None,
            blocked_by: None,
            notes: vec![],
            duration_ms: 0,
            artifact: None,
        }
    }
}

/// Counts per status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// PASS.
    pub pass: usize,
    /// FAIL.
    pub fail: usize,
    /// SKIP.
    pub skip: usize,
    /// BLOCKED.
    pub blocked: usize,
    /// XFAIL.
    pub xfail: usize,
    /// STALE.
    pub stale: usize,
    /// FAIL at level MUST.
    pub must_failed: usize,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// `sandbox-conformance`.
    pub tool: String,
    /// The harness version.
    pub version: String,
    /// The worker command.
    pub worker: String,
    /// The host profile.
    pub profile: String,
    /// The driver under test.
    pub driver: String,
    /// Where the manifest came from.
    pub manifest_source: String,
    /// Why the manifest could not be read, when it could not (for example a worker whose
    /// `--manifest` output carries non-JSON lines).
    pub manifest_problem: Option<String>,
    /// The worker's `supportedMethods`.
    pub supported_methods: Vec<String>,
    /// The effective capabilities the checks were gated on.
    pub effective_capabilities: Vec<String>,
    /// One outcome per check, in running order.
    pub checks: Vec<CheckOutcome>,
    /// Counts.
    pub summary: Summary,
    /// 0: every MUST passed (or is an expected failure) and no baseline entry is stale;
    /// 1 otherwise.
    pub exit_code: i32,
    /// Wall time of the run.
    pub wall_ms: u64,
    /// When the harness could not run at all (exit code 2): why. The checks are then empty.
    pub error: Option<String>,
}

impl RunReport {
    /// Recomputes the summary and the exit code from the outcomes.
    pub fn finish(&mut self) {
        let mut s = Summary::default();
        for c in &self.checks {
            match c.status {
                Status::Pass => s.pass += 1,
                Status::Fail => {
                    s.fail += 1;
                    if c.level == Level::Must {
                        s.must_failed += 1;
                    }
                }
                Status::Skip => s.skip += 1,
                Status::Blocked => s.blocked += 1,
                Status::Xfail => s.xfail += 1,
                Status::Stale => s.stale += 1,
            }
        }
        self.exit_code = i32::from(s.must_failed > 0 || s.stale > 0);
        self.summary = s;
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The report as the human text `sandbox-conformance run` prints (worker-supplied text
    /// quoted as data: control and bidirectional characters escaped, fields bounded).
    pub fn to_human(&self) -> String {
        human::render(self)
    }

    /// The report as JUnit XML (`sandbox-conformance run --junit`), one test case per check.
    pub fn to_junit(&self) -> String {
        junit::render(self)
    }
}
