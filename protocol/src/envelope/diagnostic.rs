//! The acquisition diagnostic of a failed `environmentAcquireLease`:
//! `{"phase": …, "elapsedMs": …, "budgetMs": …}`, carried beside the creation-cleanup ownership
//! (key `acquisitionDiagnostic`) and only when that ownership is valid.

use std::str::FromStr;

use serde_json::{json, Value};

use super::as_integer;

/// The key of the diagnostic inside the creation-cleanup data.
pub const ACQUISITION_DIAGNOSTIC_KEY: &str = "acquisitionDiagnostic";
/// The largest `elapsedMs` (7 days).
pub const MAX_ELAPSED_MS: u64 = 604_800_000;
/// The smallest `budgetMs`.
pub const MIN_BUDGET_MS: u64 = 1;
/// The largest `budgetMs` (24 hours).
pub const MAX_BUDGET_MS: u64 = 86_400_000;

wire_enum! {
    /// The step observed at the first acquisition failure.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum AcquisitionPhase {
        /// `create`: creating the sandbox.
        Create = "create",
        /// `workspace`: preparing the workspace.
        Workspace = "workspace",
        /// `shell`: waiting for a usable shell.
        Shell = "shell",
        /// `expiry`: bounding the sandbox lifetime.
        Expiry = "expiry",
        /// `sentinel`: checking the workspace sentinel.
        Sentinel = "sentinel",
    }
    /// Every phase, in the order of the allowlist.
    const ALL;
}

impl FromStr for AcquisitionPhase {
    type Err = DiagnosticError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AcquisitionPhase::ALL.into_iter().find(|p| p.as_str() == s).ok_or(DiagnosticError::Phase)
    }
}

/// Why an acquisition diagnostic is invalid. Values are never echoed (they may be secrets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnosticError {
    /// Not a non-array object.
    #[error("acquisitionDiagnostic must be a JSON object")]
    NotAnObject,
    /// `phase` outside the allowlist.
    #[error(
        "acquisitionDiagnostic.phase must be one of create, workspace, shell, expiry, sentinel"
    )]
    Phase,
    /// `elapsedMs` is not an integer in range.
    #[error("acquisitionDiagnostic.elapsedMs must be an integer from 0 to 604800000")]
    ElapsedMs,
    /// `budgetMs` is not an integer in range.
    #[error("acquisitionDiagnostic.budgetMs must be an integer from 1 to 86400000")]
    BudgetMs,
}

/// A validated acquisition diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AcquisitionDiagnostic {
    phase: AcquisitionPhase,
    elapsed_ms: u64,
    budget_ms: u64,
}

impl AcquisitionDiagnostic {
    /// A diagnostic; `elapsed_ms` must be at most 604,800,000 and `budget_ms` from 1 to
    /// 86,400,000.
    pub fn new(
        phase: AcquisitionPhase,
        elapsed_ms: u64,
        budget_ms: u64,
    ) -> Result<Self, DiagnosticError> {
        if elapsed_ms > MAX_ELAPSED_MS {
            return Err(DiagnosticError::ElapsedMs);
        }
        if !(MIN_BUDGET_MS..=MAX_BUDGET_MS).contains(&budget_ms) {
            return Err(DiagnosticError::BudgetMs);
        }
        Ok(AcquisitionDiagnostic { phase, elapsed_ms, budget_ms })
    }

    /// Reads a diagnostic object with a typed error. Only `phase`, `elapsedMs` and `budgetMs`
    /// are read; other keys are dropped. Numbers must be integers (an integral float such as
    /// `300000.0` counts, as in JavaScript); strings, fractions and `null` are invalid.
    pub fn parse(value: &Value) -> Result<Self, DiagnosticError> {
        let obj = value.as_object().ok_or(DiagnosticError::NotAnObject)?;
        let phase = obj
            .get("phase")
            .and_then(Value::as_str)
            .ok_or(DiagnosticError::Phase)?
            .parse::<AcquisitionPhase>()?;
        let elapsed = obj
            .get("elapsedMs")
            .and_then(as_integer)
            .filter(|n| (0..=MAX_ELAPSED_MS as i64).contains(n))
            .ok_or(DiagnosticError::ElapsedMs)?;
        let budget = obj
            .get("budgetMs")
            .and_then(as_integer)
            .filter(|n| (MIN_BUDGET_MS as i64..=MAX_BUDGET_MS as i64).contains(n))
            .ok_or(DiagnosticError::BudgetMs)?;
        AcquisitionDiagnostic::new(phase, elapsed as u64, budget as u64)
    }

    /// [`AcquisitionDiagnostic::parse`] without the reason: `None` when invalid.
    pub fn from_json(value: &Value) -> Option<Self> {
        Self::parse(value).ok()
    }

    /// The phase.
    pub fn phase(&self) -> AcquisitionPhase {
        self.phase
    }

    /// Milliseconds from the start of acquisition to the first failure.
    pub fn elapsed_ms(&self) -> u64 {
        self.elapsed_ms
    }

    /// The acquisition budget in milliseconds.
    pub fn budget_ms(&self) -> u64 {
        self.budget_ms
    }

    /// The first failure was the acquisition's own deadline
    /// (`elapsedMs >= budgetMs`).
    pub fn reached_budget(&self) -> bool {
        self.elapsed_ms >= self.budget_ms
    }

    /// The wire object `{phase, elapsedMs, budgetMs}`.
    pub fn to_json(&self) -> Value {
        json!({"phase": self.phase.as_str(), "elapsedMs": self.elapsed_ms, "budgetMs": self.budget_ms})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_types() {
        let ok = json!({"phase": "shell", "elapsedMs": 0, "budgetMs": 1, "token": "x"});
        let d = AcquisitionDiagnostic::parse(&ok).unwrap();
        assert_eq!(d.to_json(), json!({"phase": "shell", "elapsedMs": 0, "budgetMs": 1}));
        assert!(!d.reached_budget());
        let float = json!({"phase": "create", "elapsedMs": 5.0, "budgetMs": 5});
        assert!(AcquisitionDiagnostic::parse(&float).unwrap().reached_budget());
        let bad = [
            (json!([]), DiagnosticError::NotAnObject),
            (json!({"phase": "Shell", "elapsedMs": 1, "budgetMs": 1}), DiagnosticError::Phase),
            (
                json!({"phase": "shell", "elapsedMs": null, "budgetMs": 1}),
                DiagnosticError::ElapsedMs,
            ),
            (
                json!({"phase": "shell", "elapsedMs": 604800001u64, "budgetMs": 1}),
                DiagnosticError::ElapsedMs,
            ),
            (json!({"phase": "shell", "elapsedMs": 1, "budgetMs": 1.5}), DiagnosticError::BudgetMs),
            (json!({"phase": "shell", "elapsedMs": 1, "budgetMs": "1"}), DiagnosticError::BudgetMs),
        ];
        for (value, err) in bad {
            assert_eq!(AcquisitionDiagnostic::parse(&value), Err(err), "{value}");
        }
        assert_eq!(
            AcquisitionDiagnostic::new(AcquisitionPhase::Expiry, 1, 0),
            Err(DiagnosticError::BudgetMs)
        );
    }
}
