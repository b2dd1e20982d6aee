//! A whole stateful run: learn the worker, replay the kept cases (`--regressions`), draw and
//! run the cases, shrink the first failure of each invariant, re-run the minimum, keep it as a
//! case file, and report one outcome per invariant with how often it was reached.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::context::{RunEnv, RunOptions, WorkerFacts};
use crate::error::HarnessError;
use crate::host::{Observations, Session};
use crate::ledger::Ledger;
use crate::report::{CheckOutcome, RunReport, Status};
use crate::requirements::requirement;

use super::invariants::{Coverage, Violation, INVARIANTS};
use super::model::{Bounds, Gates};
use super::program::{listing, Case, Op, CASE_KIND};
use super::rng::{case_seed, Draw};
use super::shrink::{shrink, Budget};
use super::step::{Chaos, Outcome, Runner, Source};
use super::target::{Calls, WorkerTarget};

/// The options of a stateful run (`run --stateful`).
#[derive(Debug, Clone)]
pub struct StatefulOptions {
    /// Programs to draw.
    pub cases: u64,
    /// Steps per program.
    pub steps: usize,
    /// Leases live at once.
    pub max_live: usize,
    /// Acquires in the whole run, shrinking and re-runs included (what a paid backend bills).
    pub max_acquires: usize,
    /// No new case starts after this long.
    pub time_budget: Duration,
    /// Replays one shrink may spend.
    pub shrink_runs: usize,
    /// Time one shrink may spend.
    pub shrink_time: Duration,
    /// Re-runs of a shrunk program, to rate its flakiness.
    pub reruns: usize,
    /// Worker restarts per program.
    pub max_restarts: usize,
    /// The run seed; random (and printed) when `None`.
    pub seed: Option<u64>,
    /// Kept cases to replay first.
    pub regressions: Option<PathBuf>,
    /// Print a line per case on stderr.
    pub progress: bool,
}

impl Default for StatefulOptions {
    fn default() -> Self {
        StatefulOptions {
            cases: 8,
            steps: 12,
            max_live: 2,
            max_acquires: 200,
            time_budget: Duration::from_secs(600),
            shrink_runs: 40,
            shrink_time: Duration::from_secs(120),
            reruns: 3,
            max_restarts: 1,
            seed: None,
            regressions: None,
            progress: true,
        }
    }
}

/// What a stateful run produced.
#[derive(Debug)]
pub struct StatefulRun {
    /// One outcome per invariant.
    pub report: RunReport,
    /// The run seed.
    pub seed: u64,
    /// How often each invariant was judged.
    pub coverage: Coverage,
    /// Cases run (regressions included).
    pub cases_run: u64,
    /// Acquires sent, shrinking included.
    pub acquires: usize,
    /// The kept cases of this run's failures, with where they were written.
    pub kept: Vec<(Case, Option<PathBuf>)>,
    /// The programs drawn, in order (for the same-seed test and `--format json`).
    pub programs: Vec<Vec<Op>>,
}

/// A failure found, with its case.
struct Found {
    violation: Violation,
    case: Case,
    note: String,
    path: Option<PathBuf>,
}

/// The shared state of a run.
pub(crate) struct Harness<'c> {
    pub(crate) env: RunEnv,
    pub(crate) facts: WorkerFacts,
    pub(crate) gates: Gates,
    pub(crate) observations: Observations,
    pub(crate) ledger: Ledger,
    pub(crate) chaos: Option<&'c mut dyn Chaos>,
    pub(crate) acquires: usize,
}

impl Harness<'_> {
    /// Learns the worker (initialize) for a run of `env`.
    pub(crate) fn learn(env: RunEnv) -> Result<(RunEnv, WorkerFacts), HarnessError> {
        let observations = Observations::default();
        let mut s =
            Session::spawn(&env.options.command, "learn", env.session.clone(), observations)?;
        let manifest = env.manifest.clone().unwrap_or_else(|| serde_json::json!({}));
        let (reply, elapsed) = s.initialize(&manifest);
        let facts = WorkerFacts::learn(reply, elapsed, env.driver.as_ref(), env.options.profile);
        s.shutdown(Duration::from_secs(2));
        Ok((env, facts))
    }

    pub(crate) fn once(&mut self, case: u64, source: Source<'_>) -> Result<Outcome, String> {
        let label = format!("case-{case}");
        let mut target = WorkerTarget::start(&self.env, &self.observations, &label)?;
        let environment_id = format!("{}-c{case}-{}", self.env.environment_id, crate::ids::hex(4));
        let mut runner = Runner {
            calls: Calls { env: &self.env, environment_id },
            facts: &self.facts,
            gates: self.gates,
            secrets: &self.env.secrets,
            call_wait: self.env.session.call_timeout,
            ledger: self.ledger.clone(),
            chaos: self.chaos.as_deref_mut().map(|c| c as &mut dyn Chaos),
        };
        let out = runner.run(&mut target, source);
        target.finish();
        self.acquires += out.acquires;
        Ok(out)
    }
}

fn seed_text(seed: u64) -> String {
    format!("{seed:#018x}")
}

/// Reads every `*.json` case of `dir`, sorted by name.
pub fn read_cases(dir: &Path) -> Result<Vec<(PathBuf, Case)>, HarnessError> {
    let entries = std::fs::read_dir(dir).map_err(|e| HarnessError::io(dir, e))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths.into_iter().map(|p| read_case(&p).map(|c| (p, c))).collect()
}

/// Reads one case file.
pub fn read_case(path: &Path) -> Result<Case, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
    let case: Case = serde_json::from_str(&text).map_err(|e| HarnessError::BadFile {
        path: path.into(),
        message: format!("not a stateful case file: {e}"),
    })?;
    if case.kind != CASE_KIND {
        return Err(HarnessError::BadFile {
            path: path.into(),
            message: format!("`kind` is not {CASE_KIND:?}"),
        });
    }
    Ok(case)
}

/// Runs a stateful run of `options` against the worker.
pub fn run(options: RunOptions, s: StatefulOptions) -> Result<StatefulRun, HarnessError> {
    run_with(options, s, None)
}

/// As [`run`], with the chaos side (fault proxy and leak oracle) when given.
pub fn run_with(
    options: RunOptions,
    s: StatefulOptions,
    chaos: Option<&mut dyn Chaos>,
) -> Result<StatefulRun, HarnessError> {
    let started = Instant::now();
    let env = crate::runner::prepare(options)?;
    let (env, facts) = Harness::learn(env)?;
    if !facts.initialized() {
        return Err(HarnessError::Usage(format!(
            "the worker did not initialize: {}",
            facts.init.describe()
        )));
    }
    let gates = Gates::of(&facts, env.options.profile);
    let is_chaos = chaos.is_some();
    let mut h = Harness {
        env,
        facts,
        gates,
        observations: Observations::default(),
        ledger: Ledger::default(),
        chaos,
        acquires: 0,
    };
    let seed = s.seed.unwrap_or_else(crate::ids::random_u64);
    if s.progress {
        eprintln!(
            "stateful: seed {} — {} cases of at most {} steps, at most {} acquires (shrinking included){}",
            seed_text(seed), s.cases, s.steps, s.max_acquires, if is_chaos { ", with chaos faults" } else { "" }
        );
    }
    let mut coverage = Coverage::default();
    let mut found: Vec<Found> = vec![];
    let mut programs = vec![];
    let mut cases_run = 0;
    let mut blind: Option<String> = None;
    let mut routed = 0u64;
    if let Some(dir) = &s.regressions {
        for (path, case) in read_cases(dir)? {
            let out = h.once(cases_run, Source::Replay(&case.ops)).map_err(HarnessError::Usage)?;
            cases_run += 1;
            coverage.merge(&out.coverage);
            if let Some(v) = out.violations.first() {
                if !found.iter().any(|f| f.violation.invariant == v.invariant) {
                    let note = format!("kept case {} fails again", path.display());
                    found.push(Found {
                        violation: v.clone(),
                        case: case.clone(),
                        note,
                        path: Some(path.clone()),
                    });
                }
            }
        }
    }
    let bounds = Bounds {
        steps: s.steps,
        max_live: s.max_live,
        max_restarts: s.max_restarts,
        chaos: is_chaos,
    };
    for i in 0..s.cases {
        if started.elapsed() >= s.time_budget || h.acquires >= s.max_acquires {
            break;
        }
        let cs = case_seed(seed, i);
        let left = s.max_acquires - h.acquires;
        let source = Source::Draw { rng: Box::new(Draw::new(cs)), bounds, acquires_left: left };
        let out = match h.once(i, source) {
            Ok(out) => out,
            Err(e) => return Err(HarnessError::Usage(e)),
        };
        cases_run += 1;
        coverage.merge(&out.coverage);
        programs.push(out.ops.clone());
        if let Some(b) = &out.oracle_blind {
            blind.get_or_insert_with(|| b.clone());
        }
        routed += out.routed.unwrap_or(0);
        if s.progress {
            let verdict =
                out.violations.first().map_or("ok".to_owned(), |v| format!("FAIL {}", v.invariant));
            eprintln!("  case {:>3}: {:>2} steps, {verdict}", i + 1, out.ops.len());
        }
        let Some(v) = out.violations.first().cloned() else { continue };
        if found.iter().any(|f| f.violation.invariant == v.invariant) {
            continue;
        }
        found.push(minimize(&mut h, &s, seed, i, v, &out));
    }
    let mut report = crate::runner::empty_report(&h.env.options);
    report.driver = h.env.driver_key.clone();
    report.manifest_source = h.env.manifest_source.clone();
    report.supported_methods = h.facts.supported.clone();
    report.effective_capabilities = h.facts.effective.iter().map(|c| c.key().to_owned()).collect();
    for i in INVARIANTS.iter().filter(|i| is_chaos || !i.chaos) {
        let req = requirement(i.requirement);
        let mut o = CheckOutcome {
            title: i.title.into(),
            requirement: req.id.into(),
            reference: crate::runner::public_reference(req),
            ..CheckOutcome::new(i.id, req.level, Status::Pass)
        };
        let n = coverage.count(i.id);
        o.notes.push(format!("reached {n} times in {cases_run} cases (seed {})", seed_text(seed)));
        if let Some(f) = found.iter().find(|f| f.violation.invariant == i.id) {
            o.status = Status::Fail;
            o.expected = Some(f.violation.expected.clone());
            o.actual = Some(format!("{}\nprogram:\n{}", f.violation.actual, listing(&f.case.ops)));
            o.notes.push(f.note.clone());
            o.artifact = f.path.as_ref().map(|p| p.display().to_string());
        } else if n == 0 {
            o.status = Status::Skip;
            let mut why = format!("never reached in {cases_run} cases");
            if let Some(gate) = gate_reason(i.id, &h.facts, h.env.options.profile) {
                why.push_str(&format!(" ({gate})"));
            }
            if let (Some(b), true) =
                (&blind, i.id == super::invariants::LEAK || i.id == super::invariants::CLEANUP)
            {
                why.push_str(&format!("; the harness cannot see the backend: {b}"));
            }
            if is_chaos && i.chaos && routed == 0 {
                why.push_str("; no backend request went through the fault proxy (not routed)");
            }
            o.skip_reason = Some(why);
        }
        report.checks.push(o);
    }
    report.finish();
    report.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let kept = found.into_iter().map(|f| (f.case, f.path)).collect();
    Ok(StatefulRun { report, seed, coverage, cases_run, acquires: h.acquires, kept, programs })
}

/// Shrinks a failing program, re-runs the minimum and keeps the case.
fn minimize(
    h: &mut Harness<'_>,
    s: &StatefulOptions,
    seed: u64,
    i: u64,
    v: Violation,
    out: &Outcome,
) -> Found {
    let budget = Budget { runs: s.shrink_runs, time: s.shrink_time };
    let invariant = v.invariant;
    let max_acquires = s.max_acquires;
    let (ops, runs) = shrink(&out.ops, budget, |candidate| {
        if h.acquires >= max_acquires {
            return false;
        }
        h.once(i, Source::Replay(candidate))
            .is_ok_and(|o| o.violations.first().is_some_and(|w| w.invariant == invariant))
    });
    let mut reproduced = 0;
    let mut last = None;
    for _ in 0..s.reruns {
        if let Ok(o) = h.once(i, Source::Replay(&ops)) {
            if let Some(w) = o.violations.into_iter().find(|w| w.invariant == invariant) {
                reproduced += 1;
                last = Some((w, o.history));
            }
        }
    }
    let (violation, history) = last.unwrap_or((v, out.history.clone()));
    let note = format!(
        "shrunk from {} to {} steps in {runs} replays; reproduced {reproduced}/{} (case {} of seed {})",
        out.ops.len(), ops.len(), s.reruns, i + 1, seed_text(seed)
    );
    let case = Case {
        kind: CASE_KIND.into(),
        harness: env!("CARGO_PKG_VERSION").into(),
        seed: seed_text(seed),
        case: i,
        invariant: invariant.into(),
        requirement: super::invariants::invariant(invariant).requirement.into(),
        expected: violation.expected.clone(),
        actual: violation.actual.clone(),
        ops,
        chaos: h.chaos.is_some(),
        history: mask(history, &h.env.secrets),
        company: Some(h.env.options.company_id.clone()),
    };
    let dir = h.env.options.artifacts.clone().unwrap_or_else(std::env::temp_dir);
    let path = dir.join(format!("{}-{}.case.json", invariant, seed_text(seed)));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| {
            std::fs::write(&path, serde_json::to_string_pretty(&case).expect("serializable") + "\n")
        })
        .is_ok();
    Found { violation, case, note, path: written.then_some(path) }
}

/// Why the host never makes the calls an invariant needs, if it does not.
fn gate_reason(
    id: &str,
    facts: &WorkerFacts,
    profile: paperclip_sandbox_protocol::HostProfile,
) -> Option<String> {
    use super::invariants as inv;
    use crate::hostmodel::{host_makes, HostCall};
    let call = match id {
        inv::STOP => HostCall::Stop,
        inv::RESUME_LIVE | inv::RESUME_DESTROYED | inv::RESTART => HostCall::Resume,
        inv::LINEAR => HostCall::ControlCommands,
        inv::SYNC => HostCall::NativeSync,
        _ => return None,
    };
    host_makes(call, facts, profile).err()
}

fn mask(lines: Vec<String>, secrets: &[String]) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| secrets.iter().fold(l, |t, s| t.replace(s.as_str(), "<secret>")))
        .collect()
}

/// Re-executes a kept case against the worker and re-judges it: the violations found (empty
/// when the program now passes) and the history.
pub fn replay_case(
    options: RunOptions,
    case: &Case,
    chaos: Option<&mut dyn Chaos>,
) -> Result<Outcome, HarnessError> {
    let env = crate::runner::prepare(options)?;
    let (env, facts) = Harness::learn(env)?;
    let gates = Gates::of(&facts, env.options.profile);
    let mut h = Harness {
        env,
        facts,
        gates,
        observations: Observations::default(),
        ledger: Ledger::default(),
        chaos,
        acquires: 0,
    };
    h.once(case.case, Source::Replay(&case.ops)).map_err(HarnessError::Usage)
}
