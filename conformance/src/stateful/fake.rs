//! An in-process fake provider for the model's own property tests: thousands of cheap programs
//! against a correct fake must never fail, and each seeded defect must be found and shrunk.

use std::collections::BTreeMap;
use std::time::Duration;

use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::methods::name;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Value};

use crate::context::{RunEnv, RunOptions, WorkerFacts};
use crate::host::{Reply, SessionConfig};
use crate::process::WorkerCommand;

use super::program::Restart;
use super::target::Target;

/// One seeded defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    None,
    ResumesDestroyed,
    SecondDestroyErrors,
    PairCrossesStdin,
    SharedFiles,
    ForgetsModes,
    /// syncOut answers what the lease held at its last syncIn (a stale cache), not what
    /// commands wrote since.
    SyncOutStale,
}

#[derive(Debug, Default, Clone)]
struct FakeLease {
    files: BTreeMap<String, (String, u32)>,
    synced: BTreeMap<String, (String, u32)>,
    alive: bool,
    destroys: u32,
}

/// The fake.
#[derive(Debug)]
pub struct Fake {
    pub defect: Defect,
    leases: BTreeMap<String, FakeLease>,
    shared: BTreeMap<String, (String, u32)>,
    next: u32,
}

impl Fake {
    pub fn new(defect: Defect) -> Self {
        Fake { defect, leases: BTreeMap::new(), shared: BTreeMap::new(), next: 0 }
    }

    fn err(msg: &str) -> Reply {
        Reply::Error(ErrorObject::new(-32002, msg.to_owned()))
    }

    /// syncIn / syncOut of single-file mappings between host paths and `/w/<name>`.
    fn sync(&mut self, p: &Value, into: bool) -> Reply {
        let id = p["lease"]["providerLeaseId"].as_str().unwrap_or_default().to_owned();
        let shared = self.defect == Defect::SharedFiles;
        let stale = self.defect == Defect::SyncOutStale;
        let Some(lease) = self.leases.get_mut(&id).filter(|l| l.alive) else {
            return Fake::err("unknown lease");
        };
        let mut results = vec![];
        for op in p["operations"].as_array().into_iter().flatten() {
            let (mut n, mut bytes) = (0, 0);
            for m in op["files"].as_array().into_iter().flatten() {
                let (src, dst) = (
                    m["sourcePath"].as_str().unwrap_or(""),
                    m["targetPath"].as_str().unwrap_or(""),
                );
                if into {
                    let Some(key) = dst.strip_prefix("/w/") else {
                        return Fake::err("not confined");
                    };
                    let Ok(text) = std::fs::read_to_string(src) else {
                        return Fake::err("no source");
                    };
                    let mode = m["mode"].as_u64().map_or(0o644, |m| m as u32);
                    bytes += text.len();
                    lease.synced.insert(key.to_owned(), (text.clone(), mode));
                    let files = if shared { &mut self.shared } else { &mut lease.files };
                    files.insert(key.to_owned(), (text, mode));
                } else {
                    let Some(key) = src.strip_prefix("/w/") else {
                        return Fake::err("not confined");
                    };
                    let files = if stale {
                        &lease.synced
                    } else if shared {
                        &self.shared
                    } else {
                        &lease.files
                    };
                    let text = files.get(key).map(|f| f.0.clone()).unwrap_or_default();
                    if std::fs::write(dst, &text).is_err() {
                        return Fake::err("cannot write the target");
                    }
                    bytes += text.len();
                }
                n += 1;
            }
            results.push(json!({"operationId": op["operationId"], "filesTransferred": n, "bytesTransferred": bytes}));
        }
        Reply::Result(json!({ "operations": results }))
    }

    fn exec(&mut self, p: &Value, stdin_override: Option<&str>) -> Reply {
        let id = p["lease"]["providerLeaseId"].as_str().unwrap_or_default().to_owned();
        let script = p["args"][1].as_str().unwrap_or_default().to_owned();
        let stdin = stdin_override.or(p["stdin"].as_str()).unwrap_or_default().to_owned();
        let shared = self.defect == Defect::SharedFiles;
        let forget = self.defect == Defect::ForgetsModes;
        let Some(lease) = self.leases.get_mut(&id).filter(|l| l.alive) else {
            return Fake::err("unknown lease");
        };
        let files = if shared { &mut self.shared } else { &mut lease.files };
        let ok = |stdout: String, code: i64| {
            Reply::Result(
                json!({"exitCode": code, "signal": null, "timedOut": false, "stdout": stdout, "stderr": ""}),
            )
        };
        let words: Vec<&str> = script.split_whitespace().collect();
        match words.as_slice() {
            ["exit", n] => ok(String::new(), n.parse().unwrap_or(1)),
            ["cat", ">", f, "&&", "chmod", mode, _] => {
                let mode = u32::from_str_radix(mode, 8).unwrap_or(0);
                files.insert((*f).to_owned(), (stdin, if forget { 0o644 } else { mode }));
                ok(String::new(), 0)
            }
            ["cat", a, b] => {
                let text =
                    [a, b].iter().filter_map(|f| files.get(**f).map(|x| x.0.clone())).collect();
                ok(text, 0)
            }
            ["cat", f, "&&", ..] => match files.get(*f) {
                Some((text, mode)) => ok(format!("{text}\n{mode:o}"), 0),
                None => ok(String::new(), 1),
            },
            _ => ok(String::new(), 2),
        }
    }
}

impl Target for Fake {
    fn call(&mut self, method: &str, p: Value, _wait: Duration) -> Reply {
        let id = p.get("providerLeaseId").and_then(Value::as_str).unwrap_or_default().to_owned();
        match method {
            name::ENVIRONMENT_PROBE => Reply::Result(json!({"ok": true})),
            name::ENVIRONMENT_ACQUIRE_LEASE => {
                self.next += 1;
                let id = format!("fake-{}", self.next);
                self.leases.insert(id.clone(), FakeLease { alive: true, ..FakeLease::default() });
                Reply::Result(
                    json!({"providerLeaseId": id, "metadata": {"remoteCwd": "/w"}, "expiresAt": null}),
                )
            }
            name::ENVIRONMENT_REALIZE_WORKSPACE => Reply::Result(json!({"cwd": "/w"})),
            name::ENVIRONMENT_EXECUTE => self.exec(&p, None),
            name::ENVIRONMENT_SYNC_IN => self.sync(&p, true),
            name::ENVIRONMENT_SYNC_OUT => self.sync(&p, false),
            name::ENVIRONMENT_RELEASE_LEASE => {
                Reply::Result(json!({"providerLeaseId": id, "state": "stopped"}))
            }
            name::ENVIRONMENT_STOP_LEASE => {
                Reply::Result(json!({"providerLeaseId": id, "state": "stopped"}))
            }
            name::ENVIRONMENT_RESUME_LEASE => match self.leases.get(&id) {
                Some(l) if l.alive || self.defect == Defect::ResumesDestroyed => {
                    Reply::Result(json!({"providerLeaseId": id, "metadata": p["leaseMetadata"]}))
                }
                _ => Reply::Result(json!({"providerLeaseId": null, "metadata": {"expired": true}})),
            },
            name::ENVIRONMENT_DESTROY_LEASE => {
                let l = self.leases.entry(id.clone()).or_default();
                l.destroys += 1;
                if l.destroys > 1 && self.defect == Defect::SecondDestroyErrors {
                    return Fake::err("no such sandbox");
                }
                l.alive = false;
                if self.defect != Defect::ResumesDestroyed {
                    l.files.clear();
                    l.synced.clear();
                }
                Reply::Result(json!({"providerLeaseId": id, "state": "destroyed"}))
            }
            other => Reply::Error(ErrorObject::new(-32601, format!("unknown {other}"))),
        }
    }

    fn pair(&mut self, a: (&str, Value), b: (&str, Value), wait: Duration) -> (Reply, Reply) {
        if self.defect == Defect::PairCrossesStdin && a.0 == name::ENVIRONMENT_EXECUTE && b.0 == a.0
        {
            let sb = b.1["stdin"].as_str().map(str::to_owned);
            let ra = self.exec(&a.1, sb.as_deref());
            let rb = self.exec(&b.1, None);
            return (ra, rb);
        }
        let ra = self.call(a.0, a.1, wait);
        let rb = self.call(b.0, b.1, wait);
        (ra, rb)
    }

    fn restart(&mut self, _how: Restart) -> Result<(), String> {
        Ok(())
    }
}

/// The facts and environment of the fake (reusable leases, stop, control commands).
pub fn fake_env() -> (RunEnv, WorkerFacts) {
    let methods = [
        "environmentProbe",
        "environmentAcquireLease",
        "environmentRealizeWorkspace",
        "environmentExecute",
        "environmentReleaseLease",
        "environmentResumeLease",
        "environmentStopLease",
        "environmentDestroyLease",
        "environmentSyncIn",
        "environmentSyncOut",
    ];
    let driver = json!({"driverKey": "fake", "kind": "sandbox_provider",
        "sandboxCapabilities": {"reusableLeases": true, "independentControlCommands": true}});
    let facts = WorkerFacts::learn(
        Reply::Result(json!({"ok": true, "supportedMethods": methods})),
        Duration::ZERO,
        Some(&driver),
        HostProfile::Paperclip2026_11,
    );
    let command = WorkerCommand { program: "fake".into(), args: vec![], env: vec![], cwd: None };
    let env = RunEnv {
        options: RunOptions::new(command),
        manifest: None,
        manifest_source: "fake".into(),
        driver_key: "fake".into(),
        driver: Some(driver),
        config: json!({"apiKey": "pcsecret-fake"}),
        validate_config: json!({}),
        secrets: vec!["pcsecret-fake".into()],
        environment_id: "env-fake".into(),
        session: SessionConfig::default(),
        acquire_overrides: Default::default(),
        manifest_problem: None,
        manifest_impure_line: None,
        manifest_overflow: None,
        manifest_leftovers: vec![],
    };
    (env, facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Ledger;
    use crate::stateful::invariants::{self as inv};
    use crate::stateful::model::{Bounds, Gates};
    use crate::stateful::program::Op;
    use crate::stateful::rng::{case_seed, Draw};
    use crate::stateful::shrink::{shrink, Budget};
    use crate::stateful::step::{Outcome, Runner, Source};
    use crate::stateful::target::Calls;

    const BOUNDS: Bounds = Bounds { steps: 14, max_live: 2, max_restarts: 1, chaos: false };

    fn run(defect: Defect, source: Source<'_>) -> Outcome {
        let (env, facts) = fake_env();
        let mut fake = Fake::new(defect);
        let mut r = Runner {
            calls: Calls { env: &env, environment_id: "env-fake-c".into() },
            facts: &facts,
            gates: Gates::of(&facts, HostProfile::Paperclip2026_11),
            secrets: &env.secrets,
            call_wait: Duration::from_secs(1),
            ledger: Ledger::default(),
            chaos: None,
        };
        r.run(&mut fake, source)
    }

    fn draw(seed: u64, i: u64) -> Source<'static> {
        Source::Draw {
            rng: Box::new(Draw::new(case_seed(seed, i))),
            bounds: BOUNDS,
            acquires_left: 100,
        }
    }

    #[test]
    fn a_correct_fake_never_fails_and_every_invariant_is_reached() {
        let mut coverage = inv::Coverage::default();
        for i in 0..3000 {
            let out = run(Defect::None, draw(0xC0FFEE, i));
            assert!(
                out.violations.is_empty(),
                "case {i}: {:?}\n{}",
                out.violations,
                out.history.join("\n")
            );
            coverage.merge(&out.coverage);
        }
        for i in inv::INVARIANTS.iter().filter(|i| !i.chaos) {
            assert!(coverage.count(i.id) > 0, "{} never reached", i.id);
        }
    }

    #[test]
    fn an_acquire_gets_the_host_acquisition_budget() {
        let (mut env, _) = fake_env();
        let calls = |env: &RunEnv| {
            Calls { env, environment_id: "e".into() }.acquire_wait(Duration::from_secs(30))
        };
        // No declared default: the per-call budget.
        assert_eq!(calls(&env), Duration::from_secs(30));
        // A declared 180 s default under paperclip-2026-11: 180 s + 30 s, as the host waits.
        env.driver.as_mut().unwrap()["defaultAcquireTimeoutMs"] = json!(180_000);
        env.options.profile = HostProfile::Paperclip2026_11;
        assert_eq!(calls(&env), Duration::from_secs(210));
        // Never below the harness's own per-call budget.
        env.driver.as_mut().unwrap()["defaultAcquireTimeoutMs"] = json!(1_000);
        assert_eq!(calls(&env), Duration::from_secs(31));
        // A config `timeoutMs` wins over the declared default (plus the host's 30 s).
        env.config["timeoutMs"] = json!(5_000);
        assert_eq!(calls(&env), Duration::from_secs(35));
    }

    #[test]
    fn a_release_stop_destroy_or_sync_gets_the_host_sandbox_wait() {
        let (mut env, _) = fake_env();
        let wait = |env: &RunEnv| {
            Calls { env, environment_id: "e".into() }.sandbox_wait(Duration::from_secs(3))
        };
        // No timeoutMs: the harness's own per-call budget.
        env.config = json!({});
        assert_eq!(wait(&env), Duration::from_secs(3));
        // timeoutMs 50 s: the host waits 50 s + 30 s.
        env.config = json!({"timeoutMs": 50_000});
        assert_eq!(wait(&env), Duration::from_secs(80));
    }

    #[test]
    fn a_probe_gets_the_host_probe_timer() {
        // Judged at the per-call 30 s before, a container provider answering a probe at
        // ~115 s while its engine hung was a chaos.budget false alarm: the host waits 120 s.
        let (mut env, _) = fake_env();
        let wait = |env: &RunEnv, call: u64| {
            Calls { env, environment_id: "e".into() }.probe_wait(Duration::from_secs(call))
        };
        assert_eq!(wait(&env, 30), Duration::from_secs(120));
        env.config = json!({"timeoutMs": 5_000});
        assert_eq!(wait(&env, 3), Duration::from_secs(120), "the config does not change it");
        assert_eq!(wait(&env, 200), Duration::from_secs(200), "never below --timeout-ms");
    }

    #[test]
    fn a_resume_gets_the_host_resume_wait() {
        let (mut env, _) = fake_env();
        let wait = |env: &RunEnv| {
            Calls { env, environment_id: "e".into() }.resume_wait(Duration::from_secs(3))
        };
        env.config = json!({});
        // Neither a configured nor a declared budget: the harness's own per-call budget.
        env.options.profile = HostProfile::Paperclip2026_09;
        assert_eq!(wait(&env), Duration::from_secs(3));
        // timeoutMs 50 s under paperclip-2026-09: the attempt waits min(80 s, the 60 s deadline).
        env.config = json!({"timeoutMs": 50_000});
        assert_eq!(wait(&env), Duration::from_secs(60));
        // paperclip-2026-11 with a declared 180 s default: the acquisition budget, 180 s + 30 s.
        env.config = json!({});
        env.driver.as_mut().unwrap()["defaultAcquireTimeoutMs"] = json!(180_000);
        env.options.profile = HostProfile::Paperclip2026_11;
        assert_eq!(wait(&env), Duration::from_secs(210));
        // A declared 1 s default: 1 s + 30 s.
        env.driver.as_mut().unwrap()["defaultAcquireTimeoutMs"] = json!(1_000);
        assert_eq!(wait(&env), Duration::from_secs(31));
    }

    #[test]
    fn the_same_seed_draws_the_same_program() {
        let a: Vec<Vec<Op>> = (0..20).map(|i| run(Defect::None, draw(42, i)).ops).collect();
        let b: Vec<Vec<Op>> = (0..20).map(|i| run(Defect::None, draw(42, i)).ops).collect();
        let c: Vec<Vec<Op>> = (0..20).map(|i| run(Defect::None, draw(43, i)).ops).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    fn find_and_shrink(defect: Defect, invariant: &str) -> Vec<Op> {
        for i in 0..2000 {
            let out = run(defect, draw(7, i));
            let Some(v) = out.violations.first() else { continue };
            assert_eq!(v.invariant, invariant, "{defect:?}: {v:?}");
            let budget = Budget { runs: 200, time: Duration::from_secs(60) };
            let (min, _) = shrink(&out.ops, budget, |c| {
                run(defect, Source::Replay(c))
                    .violations
                    .first()
                    .is_some_and(|w| w.invariant == invariant)
            });
            assert!(min.len() <= 6, "{defect:?}: {min:?}");
            // The minimal program replays to the same verdict.
            assert_eq!(run(defect, Source::Replay(&min)).violations[0].invariant, invariant);
            return min;
        }
        panic!("{defect:?} was not found in 2000 cases");
    }

    #[test]
    fn each_seeded_defect_is_found_and_shrunk() {
        let min = find_and_shrink(Defect::ResumesDestroyed, inv::RESUME_DESTROYED);
        assert!(
            matches!(min.as_slice(), [Op::Acquire { .. }, Op::Destroy { .. }, Op::Resume { .. }]),
            "{min:?}"
        );
        find_and_shrink(Defect::SecondDestroyErrors, inv::DESTROY);
        find_and_shrink(Defect::PairCrossesStdin, inv::LINEAR);
        find_and_shrink(Defect::SharedFiles, inv::ISOLATE);
        find_and_shrink(Defect::ForgetsModes, inv::PERSIST);
        let min = find_and_shrink(Defect::SyncOutStale, inv::SYNC);
        assert!(min.iter().any(|op| matches!(op, Op::SyncOut { .. })), "{min:?}");
    }
}
