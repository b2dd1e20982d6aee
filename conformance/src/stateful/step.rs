//! Running a program: each operation is sent as the host sends it, its answer judged against
//! the model, and the model moved on. A program stops at its first violation; every case ends
//! with the cleanup (heal, then destroy everything that may exist, "maybe" leases included)
//! and, where the harness can see the backend, the leak oracle.

use std::time::Duration;

use paperclip_sandbox_protocol::envelope::read_creation_cleanup;
use paperclip_sandbox_protocol::methods::name;
use serde_json::Value;

use crate::context::WorkerFacts;
use crate::host::{clip, Reply};
use crate::hostmodel::Exec;
use crate::ledger::{Lease, Ledger};

use super::invariants::{self as inv, Coverage, Violation};
use super::model::{Bounds, FileFact, Gates, Handle, Model, Phase};
use super::program::{FaultKind, Op};
use super::rng::Draw;
use super::target::{execute_wait, Calls, Target};

/// The chaos side of a run: the fault proxy and the leak oracle.
pub trait Chaos {
    /// Arms `fault` from the `after`-th backend request on.
    fn arm(&mut self, fault: FaultKind, after: u8);
    /// Ends the fault; hung connections are closed.
    fn heal(&mut self);
    /// Backend requests seen so far (to prove the proxy is in the path).
    fn requests(&self) -> u64;
    /// The backend resources of environment `environment_id` that exist now, or why the
    /// harness cannot see them.
    fn leaked(&mut self, environment_id: &str) -> Result<Vec<String>, String>;
    /// Removes what the leak oracle still sees of `environment_id` directly on the backend (so
    /// that a failing case leaves nothing billing); returns how many were removed.
    fn sweep(&mut self, _environment_id: &str) -> usize {
        0
    }
}

/// Where the operations of a program come from.
#[derive(Debug)]
pub enum Source<'a> {
    /// Drawn from the observed model.
    Draw {
        /// The case's generator.
        rng: Box<Draw>,
        /// The bounds.
        bounds: Bounds,
        /// Acquires left in the run's budget.
        acquires_left: usize,
    },
    /// A kept program; operations whose precondition no longer holds are skipped.
    Replay(&'a [Op]),
}

/// What a program run found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The operations that ran.
    pub ops: Vec<Op>,
    /// The first violation (and cleanup ones), in order.
    pub violations: Vec<Violation>,
    /// What was judged.
    pub coverage: Coverage,
    /// One line per call and answer.
    pub history: Vec<String>,
    /// Acquires sent.
    pub acquires: usize,
    /// Why the leak oracle could not look, when it could not.
    pub oracle_blind: Option<String>,
    /// Backend requests seen by the proxy while faults were armed (chaos).
    pub routed: Option<u64>,
}

/// What a program needs besides its target.
pub struct Runner<'a> {
    /// Params.
    pub calls: Calls<'a>,
    /// The worker's facts.
    pub facts: &'a WorkerFacts,
    /// The gates.
    pub gates: Gates,
    /// Secrets planted in the config.
    pub secrets: &'a [String],
    /// The per-call budget.
    pub call_wait: Duration,
    /// The run's lease ledger.
    pub ledger: Ledger,
    /// The chaos side, in chaos runs.
    pub chaos: Option<&'a mut dyn Chaos>,
}

const EXEC_TIMEOUT_MS: u64 = 10_000;

pub(super) fn file_name(file: u8) -> String {
    format!("pcstate-f{file}")
}

fn exit_code(v: &Value) -> Option<i64> {
    v.get("exitCode").and_then(Value::as_i64)
}

fn stdout(v: &Value) -> &str {
    v.get("stdout").and_then(Value::as_str).unwrap_or("")
}

/// The state of one program run.
pub(super) struct Exec1<'m> {
    pub(super) model: &'m mut Model,
    pub(super) out: &'m mut Outcome,
    pub(super) step: usize,
    pub(super) healed: bool,
    pub(super) faulted_destroy: Vec<u8>,
}

impl Runner<'_> {
    /// Runs a program against `target` and cleans up after it.
    pub fn run(&mut self, target: &mut dyn Target, source: Source<'_>) -> Outcome {
        let mut model = Model::default();
        let mut out = Outcome::default();
        let mut x = Exec1 {
            model: &mut model,
            out: &mut out,
            step: 0,
            healed: false,
            faulted_destroy: vec![],
        };
        match source {
            Source::Replay(ops) => {
                for op in ops {
                    if !x.model.applicable(op, &self.gates, self.chaos.is_some()) {
                        continue;
                    }
                    self.apply(target, &mut x, *op);
                    if !x.out.violations.is_empty() {
                        break;
                    }
                }
            }
            Source::Draw { mut rng, bounds, acquires_left } => {
                let off = Model::swarm(&mut rng);
                for _ in 0..bounds.steps {
                    let budget = x.out.acquires < acquires_left;
                    let Some(op) = x.model.draw(&mut rng, &self.gates, &bounds, budget, &off)
                    else {
                        break;
                    };
                    self.apply(target, &mut x, op);
                    if !x.out.violations.is_empty() {
                        break;
                    }
                }
            }
        }
        self.cleanup(target, &mut x);
        out
    }

    pub(super) fn note(x: &mut Exec1<'_>, line: String) {
        x.out.history.push(format!("{}: {line}", x.step + 1));
    }

    pub(super) fn violate(
        x: &mut Exec1<'_>,
        id: &'static str,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) {
        x.out.violations.push(Violation {
            invariant: id,
            step: x.step,
            expected: expected.into(),
            actual: actual.into(),
        });
    }

    /// Judges an answer given while a fault is armed: within budget, no secret, allowlisted data.
    pub(super) fn judge_faulted(&self, x: &mut Exec1<'_>, method: &str, reply: &Reply) {
        if !x.model.faulted {
            return;
        }
        x.out.coverage.reach(inv::BUDGET);
        if let Reply::Timeout(t) = reply {
            Self::violate(
                x,
                inv::BUDGET,
                format!(
                    "{method} answers within its budget ({} ms) while the backend misbehaves",
                    t.as_millis()
                ),
                reply.describe(),
            );
        }
        if let Reply::Error(e) = reply {
            x.out.coverage.reach(inv::SECRETS);
            let text = format!(
                "{} {}",
                e.message,
                e.data.as_ref().map(Value::to_string).unwrap_or_default()
            );
            if self.secrets.iter().any(|s| text.contains(s.as_str())) {
                Self::violate(
                    x,
                    inv::SECRETS,
                    "no planted secret in the error",
                    format!("{method}: the error carries the secret"),
                );
            }
            if let Some(data) = &e.data {
                x.out.coverage.reach(inv::ENVELOPES);
                if let Some(problem) =
                    crate::checks::envelopes::envelope_problem(data, Some(method))
                {
                    Self::violate(
                        x,
                        inv::ENVELOPES,
                        "error.data absent or an allowlisted envelope",
                        format!("{method}: {problem}"),
                    );
                }
            }
        }
    }

    pub(super) fn call(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        method: &str,
        params: Value,
        wait: Duration,
    ) -> Reply {
        let reply = target.call(method, params, wait);
        Self::note(x, format!("{method} -> {}", reply.describe()));
        self.judge_faulted(x, method, &reply);
        reply
    }

    pub(super) fn lease_of(x: &Exec1<'_>, h: u8) -> Option<Lease> {
        x.model.handles.get(&h).and_then(|s| s.lease.clone())
    }

    fn exec(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        lease: &Lease,
        e: &Exec,
    ) -> Reply {
        let params = self.calls.execute(self.facts, lease, e);
        let wait = execute_wait(e.timeout_ms, self.call_wait);
        self.call(target, x, name::ENVIRONMENT_EXECUTE, params, wait)
    }

    fn write_exec(h: u8, file: u8, mode: u32) -> (Exec, String) {
        let nonce = format!("pcn{h}-{}", crate::ids::hex(12));
        let f = file_name(file);
        let e = Exec::sh(format!("cat > {f} && chmod {mode:o} {f}"))
            .stdin(nonce.clone())
            .timeout(EXEC_TIMEOUT_MS);
        (e, nonce)
    }

    fn read_exec(file: u8) -> Exec {
        let f = file_name(file);
        Exec::sh(format!(
            "cat {f} && printf '\\n%s' \"$(stat -c %a {f} 2>/dev/null || stat -f %Lp {f})\""
        ))
        .timeout(EXEC_TIMEOUT_MS)
    }

    /// An execute's answer in a live lease must be a result (an error is a broken execute, or
    /// a failed recovery after a heal).
    fn judge_exec(&self, x: &mut Exec1<'_>, reply: &Reply, what: &str) -> Option<Value> {
        if x.model.faulted {
            return None;
        }
        let id = if x.healed { inv::RECOVER } else { inv::EXEC };
        x.out.coverage.reach(id);
        match reply {
            Reply::Result(v) if v.is_object() => Some(v.clone()),
            other => {
                Self::violate(
                    x,
                    id,
                    format!("a result for {what} in a live lease"),
                    other.describe(),
                );
                None
            }
        }
    }

    fn isolation(&self, x: &mut Exec1<'_>, h: u8, text: &str) {
        x.out.coverage.reach(inv::ISOLATE);
        for (&other, handle) in x.model.handles.iter() {
            if other == h {
                continue;
            }
            if let Some(n) = handle.nonces.iter().find(|n| text.contains(n.as_str())) {
                let actual = format!("L{h} read {n:?}, written in L{other}");
                Self::violate(x, inv::ISOLATE, "no lease reads what another wrote", actual);
                return;
            }
        }
    }

    fn apply(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>, op: Op) {
        x.step = x.out.ops.len();
        x.out.ops.push(op);
        Self::note(x, op.describe());
        match op {
            Op::Acquire { h } => self.acquire(target, x, h),
            Op::Realize { h } => {
                let Some(lease) = Self::lease_of(x, h) else { return };
                let params = self.calls.realize(&lease);
                let reply = self.call(
                    target,
                    x,
                    name::ENVIRONMENT_REALIZE_WORKSPACE,
                    params,
                    self.calls.sandbox_wait(self.call_wait),
                );
                self.judge_exec(x, &reply, "realize");
            }
            Op::Write { h, file, mode } => {
                let Some(lease) = Self::lease_of(x, h) else { return };
                let (e, nonce) = Self::write_exec(h, file, mode);
                let reply = self.exec(target, x, &lease, &e);
                self.wrote(x, h, file, mode, nonce, &reply);
            }
            Op::Read { h, file } => self.read(target, x, h, file),
            Op::Exit { h, code } => {
                let Some(lease) = Self::lease_of(x, h) else { return };
                let reply = self.exec(
                    target,
                    x,
                    &lease,
                    &Exec::sh(format!("exit {code}")).timeout(EXEC_TIMEOUT_MS),
                );
                if let Some(v) = self.judge_exec(x, &reply, "`exit`") {
                    if exit_code(&v) != Some(i64::from(code)) {
                        Self::violate(
                            x,
                            inv::EXEC,
                            format!("exitCode {code}"),
                            clip(&v.to_string()),
                        );
                    }
                }
            }
            Op::SyncIn { h, files, mode } => self.sync_in(target, x, h, files, mode),
            Op::SyncOut { h, files } => self.sync_out(target, x, h, files),
            Op::Release { h } => self.end_like(target, x, h, name::ENVIRONMENT_RELEASE_LEASE),
            Op::Stop { h } => self.end_like(target, x, h, name::ENVIRONMENT_STOP_LEASE),
            Op::Destroy { h } => self.destroy(target, x, h, false),
            Op::PairDestroy { h } => self.destroy(target, x, h, true),
            Op::Resume { h } => self.resume(target, x, h),
            Op::PairWrite { h, a, b } => self.pair_write(target, x, h, a, b),
            Op::Restart { how } => {
                x.model.restarts += 1;
                if let Err(e) = target.restart(how) {
                    Self::note(x, format!("restart failed: {e}"));
                }
                for handle in x.model.handles.values_mut() {
                    if !handle.is(Phase::Destroyed) && handle.lease.is_some() {
                        let phases: Vec<Phase> = handle.phases.iter().copied().collect();
                        for p in phases {
                            if matches!(p, Phase::Live | Phase::Released | Phase::Stopped) {
                                handle.phases.remove(&p);
                                handle.phases.insert(Phase::Detached);
                            }
                        }
                    }
                }
            }
            Op::Probe => {
                let params = Value::Object(self.calls.base());
                let wait = self.calls.probe_wait(self.call_wait);
                self.call(target, x, name::ENVIRONMENT_PROBE, params, wait);
            }
            Op::Fault { fault, after } => {
                if let Some(c) = self.chaos.as_deref_mut() {
                    c.arm(fault, after);
                    x.model.faulted = true;
                    x.healed = false;
                }
            }
            Op::Heal => self.heal(target, x),
        }
    }

    fn acquire(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>, h: u8) {
        x.out.acquires += 1;
        x.model.acquires += 1;
        let reply = self.call(
            target,
            x,
            name::ENVIRONMENT_ACQUIRE_LEASE,
            self.calls.acquire(),
            self.calls.acquire_wait(self.call_wait),
        );
        let mut handle = Handle::new(Phase::Unborn);
        match &reply {
            Reply::Result(v) => {
                if let Some(lease) = Lease::from_result(v) {
                    self.ledger.track("stateful", "stateful", lease.clone());
                    handle.ids.push(lease.id.clone());
                    handle.lease = Some(lease);
                    handle.set(Phase::Live);
                }
            }
            Reply::Error(e) => {
                if let Some(ownership) = e.data.as_ref().and_then(read_creation_cleanup) {
                    x.out.coverage.reach(inv::CLEANUP);
                    x.model.orphans.push(ownership.to_json());
                }
            }
            _ => {}
        }
        x.model.handles.insert(h, handle);
    }

    fn wrote(
        &mut self,
        x: &mut Exec1<'_>,
        h: u8,
        file: u8,
        mode: u32,
        nonce: String,
        reply: &Reply,
    ) {
        let ok = self.judge_exec(x, reply, "a write");
        let handle = x.model.handles.get_mut(&h).expect("a live handle");
        handle.nonces.push(nonce.clone());
        match ok {
            Some(v) if exit_code(&v) == Some(0) => {
                handle.files.insert(file, FileFact { nonce, mode, sure: true });
            }
            Some(v) => {
                handle.files.remove(&file);
                if !x.model.faulted {
                    Self::violate(x, inv::EXEC, "the write exits 0", clip(&v.to_string()));
                }
            }
            None => {
                handle.files.insert(file, FileFact { nonce, mode, sure: false });
            }
        }
    }

    fn read(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>, h: u8, file: u8) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let dead = x.model.handles[&h].is(Phase::Destroyed);
        let fact = x.model.handles[&h].files.get(&file).cloned();
        let reply = self.exec(target, x, &lease, &Self::read_exec(file));
        if dead {
            x.out.coverage.reach(inv::DEAD);
            if let (Reply::Result(v), Some(f)) = (&reply, &fact) {
                if stdout(v).contains(&f.nonce) {
                    Self::violate(
                        x,
                        inv::DEAD,
                        format!("nothing of destroyed lease L{h} can be read"),
                        format!("f{file} still reads {:?}", f.nonce),
                    );
                }
            }
            return;
        }
        let Some(v) = self.judge_exec(x, &reply, "a read") else { return };
        self.isolation(x, h, stdout(&v));
        let Some(f) = fact.filter(|f| f.sure) else { return };
        x.out.coverage.reach(inv::PERSIST);
        let expected = format!("{}\n{:o}", f.nonce, f.mode);
        if exit_code(&v) != Some(0) || stdout(&v).trim_end() != expected {
            let actual = format!("exitCode {:?}, stdout {:?}", exit_code(&v), clip(stdout(&v)));
            Self::violate(
                x,
                inv::PERSIST,
                format!("f{file} of L{h} reads {expected:?} (its nonce and mode)"),
                actual,
            );
        }
    }

    fn pair_write(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>, h: u8, a: u8, b: u8) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let (ea, na) = Self::write_exec(h, a, 0o644);
        let (eb, nb) = Self::write_exec(h, b, 0o644);
        let pa = self.calls.execute(self.facts, &lease, &ea);
        let pb = self.calls.execute(self.facts, &lease, &eb);
        let wait = execute_wait(EXEC_TIMEOUT_MS, self.call_wait);
        let (ra, rb) =
            target.pair((name::ENVIRONMENT_EXECUTE, pa), (name::ENVIRONMENT_EXECUTE, pb), wait);
        Self::note(x, format!("in flight: {} | {}", ra.describe(), rb.describe()));
        self.judge_faulted(x, name::ENVIRONMENT_EXECUTE, &ra);
        self.judge_faulted(x, name::ENVIRONMENT_EXECUTE, &rb);
        self.wrote(x, h, a, 0o644, na, &ra);
        if !x.out.violations.is_empty() {
            return;
        }
        self.wrote(x, h, b, 0o644, nb, &rb);
        if !x.out.violations.is_empty() || x.model.faulted {
            return;
        }
        // Any serial order of the two writes leaves each file with its own nonce.
        let both = format!("{} {}", file_name(a), file_name(b));
        let reply =
            self.exec(target, x, &lease, &Exec::sh(format!("cat {both}")).timeout(EXEC_TIMEOUT_MS));
        let Some(v) = self.judge_exec(x, &reply, "a read") else { return };
        x.out.coverage.reach(inv::LINEAR);
        let (fa, fb) = (&x.model.handles[&h].files[&a].nonce, &x.model.handles[&h].files[&b].nonce);
        if stdout(&v) != format!("{fa}{fb}") {
            let expected =
                format!("f{a} = {fa:?} and f{b} = {fb:?} (some serial order of the two writes)");
            Self::violate(
                x,
                inv::LINEAR,
                expected,
                format!("the files read {:?}", clip(stdout(&v))),
            );
        }
    }
}
