//! `sandbox-conformance run`: prepares the run (manifest, config with planted secrets, driver),
//! starts and initializes the main worker, runs every selected check with its gate and its
//! ledger, writes failure transcripts, and builds the [`RunReport`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::check::LEASE_PREREQUISITES;
use crate::context::{Ctx, Finding, RunEnv, RunOptions, WorkerFacts};
use crate::error::HarnessError;
use crate::host::{Observations, Session, SessionConfig};
use crate::ledger::Ledger;
use crate::registry::{all, find, matches_filter, skip_reason, Check, Scope};
use crate::report::{baseline, human, CheckOutcome, RunReport, Status, Summary};
use crate::transcript::Entry;

/// How long `<worker> --manifest` may take.
const MANIFEST_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the main worker gets to leave after the run's final `shutdown`.
const TEARDOWN_GRACE: Duration = Duration::from_millis(1000);

fn read_json(path: &Path) -> Result<Value, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| HarnessError::BadFile {
        path: path.into(),
        message: format!("invalid JSON: {e}"),
    })
}

/// What `<worker> --manifest` gave.
#[derive(Debug, Clone, PartialEq)]
pub enum ManifestProbe {
    /// A manifest.
    Found(Value),
    /// A manifest, found among other (non-JSON) stdout lines: the worker's stdout is impure.
    Impure {
        /// The manifest object found.
        manifest: Value,
        /// The first non-JSON line.
        first_line: String,
    },
    /// Nothing usable; why.
    None(String),
    /// More output than [`MANIFEST_PROBE_MAX_BYTES`]: how much had been read when the probe
    /// was ended.
    Overflow(usize),
}

/// Asks the worker for its manifest: first `<worker> --manifest --profile <profile>` (the SDK's
/// convention, so a provider can omit fields an older host rejects), then plain
/// `<worker> --manifest` for workers that take no profile. Stdin is closed. The output should be
/// one JSON object; when other lines surround it (a banner), the object is still found and the
/// impurity reported. The processes a probe left running (the harness ends them) go into
/// `leftovers`.
fn probe_manifest(options: &RunOptions, leftovers: &mut Vec<String>) -> ManifestProbe {
    let profile = options.profile.as_str();
    match run_manifest_probe(options, &["--manifest", "--profile", profile], leftovers) {
        ManifestProbe::None(_) => run_manifest_probe(options, &["--manifest"], leftovers),
        found => found,
    }
}

/// Why an over-long `--manifest` output was not used.
fn overflow_problem(bytes: usize) -> String {
    format!(
        "`<worker> --manifest` printed more than {MANIFEST_PROBE_MAX_BYTES} bytes (at least \
         {bytes}); the harness stopped reading and ended it"
    )
}

/// Finds the manifest object in `--manifest` output: the whole text, else the first line (or
/// run of lines) that parses as a JSON object.
pub fn find_manifest(text: &str) -> ManifestProbe {
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text.trim()) {
        return ManifestProbe::Found(v);
    }
    let lines: Vec<&str> = text.lines().collect();
    let first_impure = |skip: std::ops::Range<usize>| {
        lines
            .iter()
            .enumerate()
            .find(|(i, l)| !skip.contains(i) && !l.trim().is_empty())
            .map(|(_, l)| crate::host::clip(l))
    };
    for start in 0..lines.len() {
        if !lines[start].trim_start().starts_with('{') {
            continue;
        }
        for end in start + 1..=lines.len() {
            let chunk = lines[start..end].join("\n");
            if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&chunk) {
                let first_line = first_impure(start..end).unwrap_or_default();
                return ManifestProbe::Impure { manifest: v, first_line };
            }
        }
    }
    if text.trim().is_empty() {
        ManifestProbe::None("`<worker> --manifest` printed nothing".into())
    } else {
        ManifestProbe::None(format!(
            "`<worker> --manifest` printed no JSON object (first line: {:?})",
            crate::host::clip(lines.first().copied().unwrap_or_default())
        ))
    }
}

/// The most `<worker> --manifest` may print; past that the probe stops reading and fails.
pub const MANIFEST_PROBE_MAX_BYTES: usize = 4 * 1024 * 1024;

fn run_manifest_probe(
    options: &RunOptions,
    extra_args: &[&str],
    leftovers: &mut Vec<String>,
) -> ManifestProbe {
    use crate::process::{ProcEvent, WorkerProcess};
    let mut command = options.command.clone();
    command.args.extend(extra_args.iter().map(|a| (*a).to_owned()));
    // Below a reaper like every worker: whatever the probe starts is ended with it, and its
    // output is read line by line, bounded, until the probe process exits (not until end of
    // file, which a descendant can hold off).
    let mut probe =
        match WorkerProcess::spawn(&command, crate::transcript::Transcript::new("manifest")) {
            Ok(probe) => probe,
            Err(e) => return ManifestProbe::None(format!("cannot run `<worker> --manifest`: {e}")),
        };
    probe.close_stdin();
    let deadline = Instant::now() + MANIFEST_PROBE_TIMEOUT;
    let mut text = String::new();
    let mut too_long = None;
    while let Some(event) = probe.next_event(deadline) {
        match event {
            ProcEvent::Stdout(line) if too_long.is_none() => {
                text.push_str(&String::from_utf8_lossy(&line));
                text.push('\n');
            }
            ProcEvent::LongLine { bytes, .. } => too_long = Some(bytes),
            ProcEvent::StdoutClosed => break,
            _ => {}
        }
        if too_long.is_none() && text.len() > MANIFEST_PROBE_MAX_BYTES {
            too_long = Some(text.len());
        }
        if too_long.is_some() {
            break;
        }
    }
    // End of output comes a moment before the reaper reports the exit.
    let status = probe.wait_exit(deadline.saturating_duration_since(Instant::now()));
    if status.is_some() {
        leftovers
            .extend(probe.descendants().into_iter().map(|(pid, name)| format!("{pid} {name:?}")));
    }
    drop(probe);
    if let Some(bytes) = too_long {
        return ManifestProbe::Overflow(bytes);
    }
    match status {
        Some(s) if s.success() => find_manifest(&text),
        Some(s) => ManifestProbe::None(format!("`<worker> --manifest` exited with {s}")),
        None => ManifestProbe::None("`<worker> --manifest` did not exit within 10 s".into()),
    }
}

/// Builds the run environment: manifest, driver, config with the sentinel secret.
pub fn prepare(options: RunOptions) -> Result<RunEnv, HarnessError> {
    let mut manifest_problem = None;
    let mut manifest_impure_line = None;
    let mut manifest_overflow = None;
    let mut manifest_leftovers = vec![];
    let (manifest, manifest_source) = match &options.manifest_path {
        Some(path) => (Some(read_json(path)?), path.display().to_string()),
        None => {
            let source = format!("`{} --manifest`", options.command.display());
            match probe_manifest(&options, &mut manifest_leftovers) {
                ManifestProbe::Found(m) => (Some(m), source),
                ManifestProbe::Impure { manifest, first_line } => {
                    manifest_impure_line = Some(first_line.clone());
                    manifest_problem = Some(format!(
                        "`--manifest` stdout is not pure JSON (first other line: {first_line:?}); \
                         the manifest object was found among the lines and used"
                    ));
                    (Some(manifest), format!("{source} (impure stdout)"))
                }
                ManifestProbe::Overflow(bytes) => {
                    manifest_overflow = Some(bytes);
                    manifest_problem = Some(format!(
                        "{}; pass --manifest FILE, or make `<worker> --manifest` print it",
                        overflow_problem(bytes)
                    ));
                    (None, "none".into())
                }
                ManifestProbe::None(why) => {
                    manifest_problem = Some(format!(
                        "{why}; pass --manifest FILE, or make `<worker> --manifest` print it"
                    ));
                    (None, "none".into())
                }
            }
        }
    };
    let acquire_overrides = match &options.acquire_params_path {
        None => Map::new(),
        Some(path) => match read_json(path)? {
            Value::Object(o) => o,
            _ => {
                return Err(HarnessError::BadFile {
                    path: path.clone(),
                    message: "the acquire params must be a JSON object".into(),
                })
            }
        },
    };
    let drivers: Vec<Value> = manifest
        .as_ref()
        .and_then(|m| m.get("environmentDrivers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let key_of = |d: &Value| d.get("driverKey").and_then(Value::as_str).map(str::to_owned);
    let driver = match &options.driver {
        Some(key) => {
            let found = drivers.iter().find(|d| key_of(d).as_deref() == Some(key)).cloned();
            if found.is_none() && manifest.is_some() {
                let known: Vec<String> = drivers.iter().filter_map(key_of).collect();
                return Err(HarnessError::Usage(format!(
                    "--driver {key}: the manifest declares no such driver (it declares: {})",
                    known.join(", ")
                )));
            }
            found
        }
        None => drivers
            .iter()
            .find(|d| d.get("kind").and_then(Value::as_str) == Some("sandbox_provider"))
            .or(drivers.first())
            .cloned(),
    };
    let driver_key = options
        .driver
        .clone()
        .or_else(|| driver.as_ref().and_then(key_of))
        .unwrap_or_else(|| "default".into());
    let mut config = match &options.config_path {
        Some(path) => read_json(path)?,
        None => json!({}),
    };
    let Some(config_obj) = config.as_object_mut() else {
        let path = options.config_path.clone().unwrap_or_default();
        return Err(HarnessError::BadFile {
            path,
            message: "the environment config must be a JSON object".into(),
        });
    };
    let secret = format!("pcsecret-{}", crate::ids::hex(24));
    let field = if config_obj.contains_key(&options.secret_field) {
        "paperclipConformanceSecret".to_owned()
    } else {
        options.secret_field.clone()
    };
    config_obj.insert(field.clone(), json!(secret));
    let mut secrets = vec![secret];
    // Every field the schema marks `secret-ref` holds a sentinel too; a value --config gives
    // such a field (a real secret, say) is kept and watched for like a sentinel.
    let schema = driver.as_ref().and_then(|d| d.get("configSchema"));
    let secret_fields = crate::config_schema::secret_fields(schema);
    for name in &secret_fields {
        match config_obj.get(name) {
            None => {
                let sentinel = format!("pcsecret-{}", crate::ids::hex(24));
                config_obj.insert(name.clone(), json!(sentinel));
                secrets.push(sentinel);
            }
            Some(Value::String(own)) if own.len() >= 8 => secrets.push(own.clone()),
            Some(_) => {}
        }
    }
    let missing = crate::config_schema::missing_required(schema, config_obj);
    if !missing.is_empty() {
        let fields = missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
        let why = match &options.config_path {
            None => "no --config was given, so the harness sends `{}` plus its sentinel secrets: \
                     pass --config FILE, a JSON object with these fields as the host would send \
                     them (secrets resolved)"
                .to_owned(),
            Some(path) => format!("the config of --config {} lacks them", path.display()),
        };
        return Err(HarnessError::Usage(format!(
            "the driver's configSchema requires {fields}; {why}"
        )));
    }
    let mut validate_config = config.clone();
    // The host flattens secret bindings to bare ids before validation.
    for name in std::iter::once(&field).chain(&secret_fields) {
        validate_config[name] = json!(crate::ids::uuid());
    }
    let session = SessionConfig {
        call_timeout: options.call_timeout,
        ledger_file: options.ledger_file.clone(),
        company_id: options.company_id.clone(),
        ..SessionConfig::default()
    };
    Ok(RunEnv {
        options,
        manifest,
        manifest_source,
        driver_key,
        driver,
        config,
        validate_config,
        secrets,
        environment_id: format!("env-{}", crate::ids::hex(8)),
        session,
        acquire_overrides,
        manifest_problem,
        manifest_impure_line,
        manifest_overflow,
        manifest_leftovers,
    })
}

/// The main worker: its session and where its handshake ends in the transcript.
struct Main {
    session: Session,
    handshake_end: usize,
}

fn start_main(
    env: &RunEnv,
    observations: &Observations,
    label: &str,
) -> Result<(Main, WorkerFacts), HarnessError> {
    let mut session =
        Session::spawn(&env.options.command, label, env.session.clone(), observations.clone())?;
    let manifest = env.manifest.clone().unwrap_or_else(|| json!({}));
    let (reply, elapsed) = session.initialize(&manifest);
    let facts = WorkerFacts::learn(reply, elapsed, env.driver.as_ref(), env.options.profile);
    let handshake_end = session.transcript().len();
    Ok((Main { session, handshake_end }, facts))
}

/// Writes `DIR/<check-id>.ndjson`.
fn write_artifact(dir: &Path, id: &str, entries: &[Entry]) -> Result<String, HarnessError> {
    std::fs::create_dir_all(dir).map_err(|e| HarnessError::io(dir, e))?;
    let path = dir.join(format!("{id}.ndjson"));
    let text: String = entries.iter().map(|e| e.to_json() + "\n").collect();
    std::fs::write(&path, text).map_err(|e| HarnessError::io(&path, e))?;
    Ok(path.display().to_string())
}

/// Runs one check; returns the finding, its notes and the exchange it caused.
fn run_check(
    check: &'static Check,
    env: &RunEnv,
    facts: &WorkerFacts,
    observations: &Observations,
    ledger: &Ledger,
    main: &mut Option<Main>,
    pool: &mut Vec<Session>,
) -> (Result<(), Finding>, Vec<String>, Vec<Entry>) {
    let mut notes = vec![];
    if main.as_ref().is_some_and(|m| m.session.is_closed()) {
        *main = None;
    }
    if main.is_none() && (check.scope == Scope::Main || !ledger.live(None).is_empty()) {
        match start_main(env, observations, "main (respawned)") {
            Ok((m, _)) => {
                notes.push("the main worker had exited; a new one was started".into());
                *main = Some(m);
            }
            Err(e) if check.scope == Scope::Main => {
                return (
                    Err(crate::context::fail("the worker restarts", e.to_string())),
                    notes,
                    vec![],
                )
            }
            Err(_) => {}
        }
    }
    let start = main.as_ref().map_or(0, |m| m.session.transcript().len());
    let session = main.as_mut().map(|m| &mut m.session);
    let mut ctx =
        Ctx::new(env, facts, observations, session, check.id, ledger.clone()).with_pool(pool);
    let result = catch_unwind(AssertUnwindSafe(|| (check.run)(&mut ctx))).unwrap_or_else(|_| {
        Err(crate::context::fail("the check runs", "the harness panicked (a harness bug)"))
    });
    ctx.finish();
    notes.append(&mut ctx.notes);
    let exchange = match check.scope {
        Scope::Main => main.as_ref().map_or_else(Vec::new, |m| {
            let t = m.session.transcript();
            let mut entries = t.slice(0, m.handshake_end);
            entries.extend(t.slice(start, usize::MAX));
            entries
        }),
        Scope::Fresh => ctx.fresh.iter().flat_map(|t| t.entries()).collect(),
        Scope::Offline => {
            observations.lock().transcripts.iter().flat_map(|t| t.entries()).collect()
        }
    };
    (result, notes, exchange)
}

/// Why `check` is blocked by an earlier failure, as (blocking check, reason).
fn blocked_by(
    check: &Check,
    facts: &WorkerFacts,
    outcomes: &[CheckOutcome],
) -> Option<(String, String)> {
    let failed = |id: &str| {
        outcomes.iter().find(|o| o.id == id && matches!(o.status, Status::Fail | Status::Xfail))
    };
    if check.scope != Scope::Offline && !facts.initialized() && check.id != "handshake.initialize" {
        if let Some(o) = failed("handshake.initialize") {
            return Some((o.id.clone(), "the worker did not initialize".into()));
        }
    }
    if check.needs_lease() {
        for prerequisite in LEASE_PREREQUISITES.iter().filter(|p| **p != check.id) {
            if let Some(o) = failed(prerequisite) {
                return Some((o.id.clone(), format!("needs a lease, and {} failed", o.id)));
            }
        }
    }
    None
}

/// A hint for a failure whose exchange shows the worker panicking.
fn panic_hint(exchange: &[Entry], artifact: Option<&str>) -> Option<String> {
    let line = exchange.iter().find(|e| {
        (e.dir == crate::transcript::Direction::Stderr && e.line.contains("panicked"))
            || (e.dir == crate::transcript::Direction::Recv && e.line.contains("panicked"))
    })?;
    let text = crate::host::clip(&line.line);
    Some(match artifact {
        Some(path) => format!("the worker panicked ({text}); its whole stderr is in {path}"),
        None => format!(
            "the worker panicked ({text}); run with --artifacts DIR to keep its stderr and the \
             panic text in DIR/<check>.ndjson"
        ),
    })
}

/// The reference a user reads for a requirement: the book anchor, then the upstream document.
pub fn public_reference(req: &crate::requirements::Requirement) -> String {
    match crate::catalogue::chapter_of(req.id) {
        Some(c) => {
            format!("book {}#{}; {}", c.file, crate::catalogue::anchor(req.id), req.reference)
        }
        None => req.reference.to_owned(),
    }
}

/// The checks `--filter` selects; an error when it selects none.
pub fn select(filter: Option<&str>) -> Result<Vec<&'static Check>, HarnessError> {
    let selected: Vec<&Check> = all().filter(|c| matches_filter(c.id, filter)).collect();
    if selected.is_empty() {
        let filter = filter.unwrap_or_default();
        let hint = crate::registry::suggest_filter(filter)
            .map_or_else(String::new, |s| format!("; did you mean `{s}`?"));
        return Err(HarnessError::Usage(format!(
            "--filter {filter}: no check matches{hint} (see `sandbox-conformance run --list`)"
        )));
    }
    Ok(selected)
}

/// An empty report for `options` (filled in by [`run`], or carrying the error of a run that
/// could not start).
pub fn empty_report(options: &RunOptions) -> RunReport {
    RunReport {
        tool: "sandbox-conformance".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        worker: options.command.display(),
        profile: options.profile.to_string(),
        driver: options.driver.clone().unwrap_or_default(),
        manifest_source: String::new(),
        manifest_problem: None,
        supported_methods: vec![],
        effective_capabilities: vec![],
        checks: vec![],
        summary: Summary::default(),
        exit_code: 2,
        wall_ms: 0,
        error: None,
    }
}

/// Runs the selected checks against the worker and returns the report.
///
/// Errors only when the harness cannot run at all (bad files or options, a filter that selects
/// nothing, a baseline naming unknown checks, a worker that cannot be spawned).
pub fn run(options: RunOptions) -> Result<RunReport, HarnessError> {
    let selected = select(options.filter.as_deref())?;
    run_checks(options, &selected).map(|(report, _)| report)
}

/// The workers and records of one run, shared by every check.
struct Run<'a> {
    env: &'a RunEnv,
    facts: &'a WorkerFacts,
    observations: &'a Observations,
    ledger: &'a Ledger,
    main: Option<Main>,
    pool: Vec<Session>,
}

impl Run<'_> {
    /// Gates, runs and judges one check; `earlier` are the outcomes so far (for BLOCKED).
    fn judge(
        &mut self,
        check: &'static Check,
        earlier: &[CheckOutcome],
    ) -> Result<CheckOutcome, HarnessError> {
        let check_started = Instant::now();
        let req = check.requirement();
        let mut outcome = CheckOutcome {
            title: check.title.into(),
            requirement: req.id.into(),
            reference: public_reference(req),
            ..CheckOutcome::new(check.id, req.level, Status::Pass)
        };
        let (env, facts) = (self.env, self.facts);
        let skip = skip_reason(check, env, facts);
        let (result, notes, exchange) = if let Some(reason) = skip {
            (Err(Finding::Skip(reason)), vec![], vec![])
        } else if let Some((by, reason)) = blocked_by(check, facts, earlier) {
            outcome.blocked_by = Some(by);
            (Err(Finding::Skip(reason)), vec![], vec![])
        } else {
            run_check(
                check,
                env,
                facts,
                self.observations,
                self.ledger,
                &mut self.main,
                &mut self.pool,
            )
        };
        outcome.notes = notes;
        match result {
            Ok(()) => {}
            Err(Finding::Skip(reason)) => {
                outcome.status =
                    if outcome.blocked_by.is_some() { Status::Blocked } else { Status::Skip };
                outcome.skip_reason = Some(reason);
            }
            Err(Finding::Fail { expected, actual }) => {
                outcome.status = Status::Fail;
                outcome.expected = Some(expected);
                outcome.actual = Some(actual);
                if let Some(dir) = &env.options.artifacts {
                    outcome.artifact = Some(write_artifact(dir, check.id, &exchange)?);
                }
                if let Some(hint) = panic_hint(&exchange, outcome.artifact.as_deref()) {
                    outcome.notes.push(hint);
                }
            }
        }
        if check.id == "framing.stdout-purity" && outcome.status == Status::Fail {
            if let Some(problem) = &env.manifest_problem {
                outcome.notes.push(problem.clone());
            }
        }
        outcome.duration_ms =
            u64::try_from(check_started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // Worker text is data in every report (human, JUnit, JSON): escaped and bounded here.
        use crate::report::safe;
        outcome.expected = safe::opt(&outcome.expected);
        outcome.actual = safe::opt(&outcome.actual);
        outcome.skip_reason = safe::opt(&outcome.skip_reason);
        outcome.notes = outcome.notes.iter().map(|n| safe::text(n)).collect();
        Ok(outcome)
    }
}

/// The first check (in registry order) that may run beside others: the checks before it open
/// the run (manifest, handshake, framing on the main worker, the lease-opening lifecycle) and
/// gate the rest.
const FIRST_PARALLEL: &str = "execute.exit-code";

/// Splits `selected` (in registry order) into the checks that run first, one after another;
/// the independent checks that may run at once (each acquires its own lease); and the run-wide
/// checks judged last, one after another.
fn phases(
    selected: &[&'static Check],
) -> (Vec<&'static Check>, Vec<&'static Check>, Vec<&'static Check>) {
    let position = |id: &str| all().position(|c| c.id == id);
    let (first, last) = (
        position(FIRST_PARALLEL).expect("a registered check"),
        position(LEDGER_CHECK).expect("a registered check"),
    );
    let mut out = (vec![], vec![], vec![]);
    for check in selected {
        // A check outside the registry (a library user's own, or a test's) runs first, one
        // after another, on the main worker.
        let at = position(check.id).unwrap_or(0);
        if at < first {
            out.0.push(*check);
        } else if at < last {
            out.1.push(*check);
        } else {
            out.2.push(*check);
        }
    }
    out
}

/// Runs `checks` on `run.env.options.jobs` lanes at once: lane 0 on the run's main worker, every
/// other lane on a main worker of its own (started and initialized here, shut down at the end).
/// A lane takes the next check not yet taken; outcomes come back in `checks` order, so a report
/// reads the same as with `--jobs 1`.
fn run_parallel(
    run: &mut Run<'_>,
    checks: Vec<&'static Check>,
    earlier: &[CheckOutcome],
    done_before: usize,
    progress: &(dyn Fn(usize, &CheckOutcome) + Sync),
) -> Result<Vec<CheckOutcome>, HarnessError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(done_before);
    let results: Mutex<Vec<Option<Result<CheckOutcome, HarnessError>>>> =
        Mutex::new((0..checks.len()).map(|_| None).collect());
    let lanes = run.env.options.jobs.min(checks.len());
    let (env, facts, observations, ledger) = (run.env, run.facts, run.observations, run.ledger);
    let work = |lane: &mut Run<'_>| loop {
        let i = next.fetch_add(1, Ordering::AcqRel);
        let Some(check) = checks.get(i) else { return };
        let outcome = lane.judge(check, earlier);
        if let Ok(o) = &outcome {
            progress(finished.fetch_add(1, Ordering::AcqRel) + 1, o);
        }
        results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(outcome);
    };
    std::thread::scope(|scope| {
        for n in 1..lanes {
            let work = &work;
            scope.spawn(move || {
                let label = format!("main-{}", n + 1);
                let Ok((main, lane_facts)) = start_main(env, observations, &label) else { return };
                if !lane_facts.initialized() {
                    return;
                }
                let mut lane =
                    Run { env, facts, observations, ledger, main: Some(main), pool: vec![] };
                work(&mut lane);
                if let Some(mut m) = lane.main.take() {
                    m.session.shutdown(TEARDOWN_GRACE);
                }
            });
        }
        work(run);
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.into_iter().map(|r| r.expect("every check was taken by a lane")).collect()
}

/// The id of the check that sweeps and judges the lease ledger at the end of a run.
const LEDGER_CHECK: &str = "ledger.clean";

/// Runs `selected` (in their order) against the worker; returns the report and the run's lease
/// ledger.
///
/// When the run created leases but `ledger.clean` is not among `selected` (a `--filter`), it
/// runs anyway, last: it ends whatever is still live and its verdict is reported, so a lease
/// the worker cannot end fails the run whatever the filter.
fn run_checks(
    options: RunOptions,
    selected: &[&'static Check],
) -> Result<(RunReport, Ledger), HarnessError> {
    let started = Instant::now();
    let expected_failures = match &options.baseline {
        Some(path) => {
            let ids = baseline::load(path)?;
            let unknown: Vec<&String> = ids.iter().filter(|id| find(id).is_none()).collect();
            if !unknown.is_empty() {
                return Err(HarnessError::BadFile {
                    path: path.clone(),
                    message: format!(
                        "the baseline names checks that do not exist: {} (see `sandbox-conformance run --list`)",
                        unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            ids
        }
        None => vec![],
    };
    let env = prepare(options)?;
    let observations = Observations::default();
    let ledger = Ledger::default();
    let (main, facts) = start_main(&env, &observations, "main")?;
    // Start the fresh workers of the Fresh-scope checks now, so that their start-up overlaps
    // with the main-session checks.
    let fresh_count = selected
        .iter()
        .filter(|c| c.scope == Scope::Fresh && skip_reason(c, &env, &facts).is_none())
        .count();
    let pool: Vec<Session> = (0..fresh_count)
        .filter_map(|i| {
            let label = format!("fresh-{}", i + 1);
            Session::spawn(&env.options.command, &label, env.session.clone(), observations.clone())
                .ok()
        })
        .collect();
    let mut run = Run {
        env: &env,
        facts: &facts,
        observations: &observations,
        ledger: &ledger,
        main: Some(main),
        pool,
    };
    let mut report = empty_report(&env.options);
    report.driver = env.driver_key.clone();
    report.manifest_source = env.manifest_source.clone();
    report.manifest_problem = crate::report::safe::opt(&env.manifest_problem);
    report.supported_methods = facts.supported.clone();
    report.effective_capabilities = facts.effective.iter().map(|c| c.key().to_owned()).collect();
    let ledger_selected = selected.iter().any(|c| c.id == LEDGER_CHECK);
    let total = selected.len();
    let (serial_head, parallel, serial_tail) = phases(selected);
    let progress = |i: usize, outcome: &CheckOutcome| {
        if env.options.progress {
            eprintln!("{}", human::progress_line(i, total, outcome));
        }
    };
    for check in serial_head.iter().chain(parallel.iter().take_while(|_| env.options.jobs <= 1)) {
        let outcome = run.judge(check, &report.checks)?;
        progress(report.checks.len() + 1, &outcome);
        report.checks.push(outcome);
    }
    if env.options.jobs > 1 && !parallel.is_empty() {
        let outcomes =
            run_parallel(&mut run, parallel, &report.checks, report.checks.len(), &progress)?;
        report.checks.extend(outcomes);
    }
    for check in serial_tail {
        let outcome = run.judge(check, &report.checks)?;
        progress(report.checks.len() + 1, &outcome);
        report.checks.push(outcome);
    }
    // Leases were created but `ledger.clean` was filtered out: it still ends them and judges.
    if !ledger_selected && !ledger.entries().is_empty() {
        let check = find(LEDGER_CHECK).expect("the registry has ledger.clean");
        let mut outcome = run.judge(check, &report.checks)?;
        outcome.notes.insert(
            0,
            "run although --filter did not select it: the selected checks created leases".into(),
        );
        if env.options.progress {
            eprintln!("{}", human::progress_line(total + 1, total + 1, &outcome));
        }
        report.checks.push(outcome);
    }
    if let Some(mut m) = run.main.take() {
        m.session.shutdown(TEARDOWN_GRACE);
    }
    report.finish();
    baseline::apply(&mut report, &expected_failures);
    report.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok((report, ledger))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requirements::{requirement, Level};
    use std::process::{Command, Stdio};

    #[test]
    fn the_manifest_is_found_among_banner_lines() {
        assert_eq!(find_manifest("{\"id\":\"a\"}\n"), ManifestProbe::Found(json!({"id": "a"})));
        match find_manifest("worker v1 starting\n{\"id\":\"a\",\n \"v\": 1}\nbye\n") {
            ManifestProbe::Impure { manifest, first_line } => {
                assert_eq!(manifest, json!({"id": "a", "v": 1}));
                assert_eq!(first_line, "worker v1 starting");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(find_manifest(""), ManifestProbe::None(_)));
        assert!(matches!(find_manifest("[1]\nno json"), ManifestProbe::None(_)));
    }

    fn outcome(id: &str, status: Status) -> CheckOutcome {
        CheckOutcome::new(id, Level::Must, status)
    }

    #[test]
    fn lease_checks_are_blocked_by_a_failed_acquire_only() {
        let facts = WorkerFacts::learn(
            crate::host::Reply::Result(json!({"ok": true, "supportedMethods": []})),
            Duration::ZERO,
            None,
            paperclip_sandbox_protocol::HostProfile::default(),
        );
        let exec = find("execute.exit-code").unwrap();
        let framing = find("framing.id-echo").unwrap();
        let failed = [outcome("lifecycle.acquire", Status::Fail)];
        assert_eq!(blocked_by(exec, &facts, &failed).unwrap().0, "lifecycle.acquire");
        assert_eq!(blocked_by(framing, &facts, &failed), None);
        assert_eq!(blocked_by(exec, &facts, &[outcome("lifecycle.acquire", Status::Pass)]), None);
        let realize_failed = [outcome("lifecycle.realize", Status::Fail)];
        assert_eq!(blocked_by(exec, &facts, &realize_failed).unwrap().0, "lifecycle.realize");
        // The realize check is not blocked by its own earlier outcome.
        let realize = find("lifecycle.realize").unwrap();
        assert_eq!(blocked_by(realize, &facts, &realize_failed), None);
    }

    #[test]
    fn references_name_the_book_then_the_upstream_document() {
        let r = public_reference(requirement("EXEC-6"));
        assert_eq!(
            r,
            "book lifecycle.md#exec-6; SANDBOX_PROVIDER_CAPABILITIES.md, \"Failure behavior\""
        );
    }

    fn acquire_then_panic(ctx: &mut Ctx<'_>) -> crate::context::CheckResult {
        let lease = ctx.acquire()?;
        panic!("a check panicked while it held lease {}", lease.id);
    }

    /// A check (not in the registry) that acquires a lease and then panics.
    static ACQUIRE_THEN_PANIC: Check = crate::check::check(
        "execute.acquire-then-panic",
        "EXEC-1",
        "acquires a lease, then panics",
        Scope::Main,
        crate::check::EXECUTE_IN_LEASE,
        acquire_then_panic,
    );

    #[test]
    fn the_lease_of_a_check_that_panicked_is_destroyed() {
        let node = Command::new("node").arg("--version").stdout(Stdio::null()).status();
        if !node.is_ok_and(|s| s.success()) {
            assert!(std::env::var_os("CI").is_none(), "CI needs `node`");
            eprintln!("skipped: `node` is not on PATH");
            return;
        }
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken/correct.cjs");
        let argv = ["node".to_owned(), fixture.display().to_string()];
        let mut command = crate::process::WorkerCommand::from_argv(&argv).unwrap();
        // The fixture keeps its leases under $TMPDIR: a directory of this test, removed after.
        let tmp = std::env::temp_dir().join(format!("pcconf-unit-panic-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        command.env.push(("TMPDIR".into(), tmp.display().to_string()));
        let mut options = RunOptions::new(command);
        options.progress = false;
        let (report, ledger) = run_checks(options, &[&ACQUIRE_THEN_PANIC]).unwrap();
        let _ = std::fs::remove_dir_all(&tmp);
        let ids: Vec<&str> = report.checks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["execute.acquire-then-panic", LEDGER_CHECK]);
        let panicked = &report.checks[0];
        assert_eq!(panicked.status, Status::Fail);
        assert!(panicked.actual.as_deref().unwrap().contains("the harness panicked"));
        // The lease it held was destroyed (a destroy answered with a result), and the ledger
        // check, run although not selected, says so.
        let entries = ledger.entries();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(entries[0].check, "execute.acquire-then-panic");
        assert_eq!(entries[0].state, crate::ledger::LeaseState::Ended);
        let clean = &report.checks[1];
        assert_eq!(clean.status, Status::Pass, "{clean:?}");
        assert!(clean.notes.iter().any(|n| n == "leases created: 1, ended: 1"), "{clean:?}");
        assert_eq!(report.exit_code, 1, "the panicked check is a MUST failure");
    }

    #[test]
    fn panics_in_the_exchange_give_a_hint() {
        let entry = |dir, line: &str| Entry { dir, t_ms: 0, line: line.into(), elided_bytes: None };
        let quiet = [entry(crate::transcript::Direction::Stderr, "starting")];
        assert_eq!(panic_hint(&quiet, None), None);
        let loud = [entry(crate::transcript::Direction::Stderr, "thread 'x' panicked at a.rs:1")];
        assert!(panic_hint(&loud, None).unwrap().contains("--artifacts DIR"));
        assert!(panic_hint(&loud, Some("d/x.ndjson")).unwrap().contains("d/x.ndjson"));
    }
}
