//! `sandbox-conformance run`: prepares the run (manifest, config with planted secrets, driver),
//! starts and initializes the main worker, runs every selected check with its gate and its
//! ledger, writes failure transcripts, and builds the [`RunReport`].

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::context::{Ctx, Finding, RunEnv, RunOptions, WorkerFacts};
use crate::error::HarnessError;
use crate::host::{Observations, Session, SessionConfig};
use crate::registry::{matches_filter, skip_reason, Check, Scope, CHECKS};
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

/// Asks the worker for its manifest: first `<worker> --manifest --profile <profile>` (the SDK's
/// convention, so a provider can omit fields an older host rejects), then plain
/// `<worker> --manifest` for workers that take no profile. Stdin is closed; the first JSON
/// object printed on stdout wins.
pub fn manifest_from_worker(options: &RunOptions) -> Option<Value> {
    let profile = options.profile.as_str();
    run_manifest_probe(options, &["--manifest", "--profile", profile])
        .or_else(|| run_manifest_probe(options, &["--manifest"]))
}

fn run_manifest_probe(options: &RunOptions, extra_args: &[&str]) -> Option<Value> {
    let c = &options.command;
    let mut child = Command::new(&c.program)
        .args(&c.args)
        .args(extra_args)
        .env_clear()
        .envs(c.environment())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + MANIFEST_PROBE_TIMEOUT;
    let mut status = None;
    while status.is_none() && Instant::now() < deadline {
        status = child.try_wait().ok().flatten();
        if status.is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let pgid = i32::try_from(child.id()).ok()?;
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
    let text = reader.join().ok()?;
    if !status.is_some_and(|s| s.success()) {
        return None;
    }
    serde_json::from_str::<Value>(text.trim()).ok().filter(Value::is_object)
}

/// Builds the run environment: manifest, driver, config with the sentinel secret.
pub fn prepare(options: RunOptions) -> Result<RunEnv, HarnessError> {
    let (manifest, manifest_source) = match &options.manifest_path {
        Some(path) => (Some(read_json(path)?), path.display().to_string()),
        None => match manifest_from_worker(&options) {
            Some(m) => (Some(m), format!("`{} --manifest`", options.command.display())),
            None => {
                (None, "none (no --manifest, and `<worker> --manifest` printed no JSON)".into())
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
    let mut validate_config = config.clone();
    validate_config[&field] = json!(crate::ids::uuid());
    let session = SessionConfig { call_timeout: options.call_timeout, ..SessionConfig::default() };
    Ok(RunEnv {
        options,
        manifest,
        manifest_source,
        driver_key,
        driver,
        config,
        validate_config,
        secrets: vec![secret],
        environment_id: format!("env-{}", crate::ids::hex(8)),
        session,
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
    check: &Check,
    env: &RunEnv,
    facts: &WorkerFacts,
    observations: &Observations,
    main: &mut Option<Main>,
    pool: &mut Vec<Session>,
) -> (Result<(), Finding>, Vec<String>, Vec<Entry>) {
    let mut notes = vec![];
    if check.scope == Scope::Main {
        if main.as_ref().is_some_and(|m| m.session.is_closed()) {
            *main = None;
        }
        if main.is_none() {
            match start_main(env, observations, "main (respawned)") {
                Ok((m, _)) => {
                    notes.push("the main worker had exited; a new one was started".into());
                    *main = Some(m);
                }
                Err(e) => {
                    return (
                        Err(crate::context::fail("the worker restarts", e.to_string())),
                        notes,
                        vec![],
                    )
                }
            }
        }
        if !facts.initialized() && check.id != "handshake.initialize" {
            let skip =
                Finding::Skip("the worker did not initialize; see handshake.initialize".into());
            return (Err(skip), notes, vec![]);
        }
    }
    let start = main.as_ref().map_or(0, |m| m.session.transcript().len());
    let session = match check.scope {
        Scope::Main => main.as_mut().map(|m| &mut m.session),
        _ => None,
    };
    let mut ctx = Ctx::new(env, facts, observations, session).with_pool(pool);
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

/// Runs the selected checks against the worker and returns the report.
///
/// Errors only when the harness cannot run at all (bad files, a worker that cannot be spawned).
pub fn run(options: RunOptions) -> Result<RunReport, HarnessError> {
    let started = Instant::now();
    let expected_failures = match &options.baseline {
        Some(path) => baseline::load(path)?,
        None => vec![],
    };
    let env = prepare(options)?;
    let observations = Observations::default();
    let (main, facts) = start_main(&env, &observations, "main")?;
    let mut main = Some(main);
    let selected: Vec<&Check> =
        CHECKS.iter().filter(|c| matches_filter(c.id, env.options.filter.as_deref())).collect();
    // Start the fresh workers of the Fresh-scope checks now, so that their start-up overlaps
    // with the main-session checks.
    let fresh_count = selected
        .iter()
        .filter(|c| c.scope == Scope::Fresh && skip_reason(c, &env, &facts).is_none())
        .count();
    let mut pool: Vec<Session> = (0..fresh_count)
        .filter_map(|i| {
            let label = format!("fresh-{}", i + 1);
            Session::spawn(&env.options.command, &label, env.session.clone(), observations.clone())
                .ok()
        })
        .collect();
    let mut report = RunReport {
        tool: "sandbox-conformance".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        worker: env.options.command.display(),
        profile: env.options.profile.to_string(),
        driver: env.driver_key.clone(),
        manifest_source: env.manifest_source.clone(),
        supported_methods: facts.supported.clone(),
        effective_capabilities: facts.effective.iter().map(|c| c.key().to_owned()).collect(),
        checks: vec![],
        summary: Summary::default(),
        exit_code: 0,
        wall_ms: 0,
    };
    for (i, check) in selected.iter().enumerate() {
        let check_started = Instant::now();
        let req = check.requirement();
        let mut outcome = CheckOutcome {
            id: check.id.into(),
            title: check.title.into(),
            level: req.level,
            requirement: req.id.into(),
            reference: req.reference.into(),
            status: Status::Pass,
            expected: None,
            actual: None,
            skip_reason: None,
            notes: vec![],
            duration_ms: 0,
            artifact: None,
        };
        let (result, notes, exchange) = match skip_reason(check, &env, &facts) {
            Some(reason) => (Err(Finding::Skip(reason)), vec![], vec![]),
            None => run_check(check, &env, &facts, &observations, &mut main, &mut pool),
        };
        outcome.notes = notes;
        match result {
            Ok(()) => {}
            Err(Finding::Skip(reason)) => {
                outcome.status = Status::Skip;
                outcome.skip_reason = Some(reason);
            }
            Err(Finding::Fail { expected, actual }) => {
                outcome.status = Status::Fail;
                outcome.expected = Some(expected);
                outcome.actual = Some(actual);
                if let Some(dir) = &env.options.artifacts {
                    outcome.artifact = Some(write_artifact(dir, check.id, &exchange)?);
                }
            }
        }
        outcome.duration_ms =
            u64::try_from(check_started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if env.options.progress {
            eprintln!("{}", human::progress_line(i + 1, selected.len(), &outcome));
        }
        report.checks.push(outcome);
    }
    if let Some(mut m) = main.take() {
        m.session.shutdown(TEARDOWN_GRACE);
    }
    report.finish();
    for unknown in baseline::apply(&mut report, &expected_failures) {
        eprintln!("warning: baseline entry {unknown:?} names no check of this run");
    }
    report.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}
