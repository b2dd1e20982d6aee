//! The stateful and chaos options of `run` (`--stateful`, `--chaos` and their bounds), and the
//! run itself: one outcome per invariant, a coverage table, the seed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::report::{human, junit};
use crate::stateful::report::StatefulRun;
use crate::stateful::{self, StatefulOptions};
use crate::{chaos, HarnessError, RunOptions};
use clap::Args;

use super::fail_usage;
use super::run::Format;

/// `run --stateful` / `run --chaos` options.
#[derive(Debug, Args)]
pub struct StatefulArgs {
    /// Run random lifecycle programs judged against a model instead of the fixed checks.
    #[arg(long)]
    pub stateful: bool,
    /// Stateful run with backend faults: a fault proxy goes between the provider and its
    /// backend (a unix socket or URL in the config, else HTTP(S)_PROXY). Implies --stateful.
    #[arg(long)]
    pub chaos: bool,
    /// With --chaos: the config key holding the backend address to route through the proxy
    /// (default: the first `unix://`, `http://` or `https://` value in the config).
    #[arg(long, value_name = "KEY")]
    pub chaos_field: Option<String>,
    /// Programs to draw.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub cases: u64,
    /// Steps per program.
    #[arg(long, value_name = "N", default_value_t = 12)]
    pub steps: usize,
    /// Leases live at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_live: usize,
    /// Acquires in the whole run, shrinking included (each may be billed).
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub max_acquires: usize,
    /// No new case starts after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub time_budget: u64,
    /// Replays one shrink may spend.
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub shrink_runs: usize,
    /// Seconds one shrink may spend.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub shrink_time: u64,
    /// The run seed (hex, as printed by an earlier run); random when absent.
    #[arg(long, value_name = "HEX")]
    pub seed: Option<String>,
    /// Replay the case files kept in DIR first (regression cases).
    #[arg(long, value_name = "DIR")]
    pub regressions: Option<PathBuf>,
}

impl StatefulArgs {
    /// True when a stateful (or chaos) run is asked for.
    pub fn on(&self) -> bool {
        self.stateful || self.chaos || self.regressions.is_some()
    }

    fn options(&self, progress: bool) -> Result<StatefulOptions, HarnessError> {
        let seed = match &self.seed {
            None => None,
            Some(text) => Some(
                u64::from_str_radix(text.trim_start_matches("0x"), 16)
                    .map_err(|_| HarnessError::Usage("--seed: expected a hex number".into()))?,
            ),
        };
        Ok(StatefulOptions {
            cases: self.cases,
            steps: self.steps.max(1),
            max_live: self.max_live.clamp(1, 4),
            max_acquires: self.max_acquires,
            time_budget: Duration::from_secs(self.time_budget),
            shrink_runs: self.shrink_runs,
            shrink_time: Duration::from_secs(self.shrink_time),
            seed,
            regressions: self.regressions.clone(),
            progress,
            ..StatefulOptions::default()
        })
    }
}

/// A coverage table: how often each invariant was judged.
pub fn coverage_table(run: &StatefulRun) -> String {
    let mut out = format!(
        "\ncoverage ({} cases, {} acquires, seed {:#018x}):\n{:<32}  {:<15}  {:>7}  RESULT\n",
        run.cases_run, run.acquires, run.seed, "INVARIANT", "REQUIREMENT", "REACHED"
    );
    for c in &run.report.checks {
        out.push_str(&format!(
            "{:<32}  {:<15}  {:>7}  {}\n",
            c.id,
            c.requirement,
            run.coverage.count(&c.id),
            c.status.as_str()
        ));
    }
    out
}

/// Runs a stateful (or chaos) run and prints its report.
pub fn main(
    args: &StatefulArgs,
    options: RunOptions,
    format: Format,
    junit_path: Option<&PathBuf>,
) -> ExitCode {
    let s = match args.options(options.progress) {
        Ok(s) => s,
        Err(e) => return fail_usage(e),
    };
    let result = if args.chaos {
        chaos::run(options, s, args.chaos_field.as_deref())
    } else {
        stateful::run(options, s)
    };
    let run = match result {
        Ok(run) => run,
        Err(e) => return fail_usage(e),
    };
    if let Some(path) = junit_path {
        if let Err(e) = std::fs::write(path, junit::render(&run.report)) {
            return fail_usage(HarnessError::io(path, e));
        }
    }
    match format {
        Format::Human => {
            super::run::emit(&format!("{}{}", human::render(&run.report), coverage_table(&run)))
        }
        Format::Json => super::run::emit(&format!("{}\n", run.report.to_json())),
    }
    eprintln!("{}", human::wall_line(&run.report));
    ExitCode::from(u8::try_from(run.report.exit_code).unwrap_or(1))
}

/// `replay CASE.json`: re-executes a kept stateful case against the worker and re-judges it.
/// Returns `None` when `file` is not a case file (a transcript: the caller replays it).
/// Without `expect_fixed`: exit 0 when the case's invariant fails again (the verdict
/// reproduces), 1 when it does not; with it: exit 0 when the program now passes. Calls are
/// scoped to `company` (`replay --company`) when given, else to the company the case file
/// records, else to `options`' (the default company).
pub fn replay_case(
    file: &std::path::Path,
    mut options: RunOptions,
    expect_fixed: bool,
    company: Option<&str>,
) -> Option<ExitCode> {
    use crate::stateful::report::read_case;
    let text = std::fs::read_to_string(file).ok()?;
    let kind =
        serde_json::from_str::<serde_json::Value>(&text).ok()?.get("kind")?.as_str()?.to_owned();
    if kind != stateful::CASE_KIND {
        return None;
    }
    let case = match read_case(file) {
        Ok(c) => c,
        Err(e) => return Some(fail_usage(e)),
    };
    if let Some(company) = company.or(case.company.as_deref()) {
        options.company_id = company.to_owned();
    }
    let outcome = if case.chaos {
        chaos::replay_case(options, &case)
    } else {
        stateful::replay_case(options, &case, None)
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Some(fail_usage(e)),
    };
    for line in &outcome.history {
        println!("  {line}");
    }
    let same = outcome.violations.first().is_some_and(|v| v.invariant == case.invariant);
    match outcome.violations.first() {
        Some(v) => println!(
            "replay: FAIL {} ({}): expected {}; actual {}",
            v.invariant, case.requirement, v.expected, v.actual
        ),
        None => println!("replay: the program passes now ({} steps)", outcome.ops.len()),
    }
    let ok = if expect_fixed { outcome.violations.is_empty() } else { same };
    if !expect_fixed {
        println!(
            "{}",
            if same {
                "The kept case reproduces: the same invariant fails."
            } else {
                "The kept case does not reproduce its verdict."
            }
        );
    }
    Some(ExitCode::from(if ok { 0 } else { 1 }))
}
