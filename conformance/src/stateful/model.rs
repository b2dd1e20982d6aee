//! The model of a program's leases: per logical handle a *set* of phases it may be in (more
//! than one after an indeterminate answer), its lease, the files written in it; and which
//! operations the host would make next (the gates) and how the next one is drawn.

use std::collections::{BTreeMap, BTreeSet};

use paperclip_sandbox_protocol::methods::name;
use paperclip_sandbox_protocol::HostProfile;

use crate::context::WorkerFacts;
use crate::hostmodel::{host_makes, HostCall};
use crate::ledger::Lease;

use super::program::{FaultKind, Op, Restart};
use super::rng::Draw;

/// Logical handles per program (`L0`…`L3`).
pub const HANDLES: u8 = 4;
/// Files per lease (`f0`…`f3`).
pub const FILES: u8 = 4;
/// Modes a write picks from.
pub const MODES: [u32; 3] = [0o600, 0o644, 0o755];

/// Where a lease may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Acquired (or resumed) and usable.
    Live,
    /// Released.
    Released,
    /// Stopped and retained.
    Stopped,
    /// Destroyed (or answered gone by a resume).
    Destroyed,
    /// Live when the worker last saw it, but the worker has restarted since: the host resumes
    /// it before use.
    Detached,
    /// An acquire that was not answered (or failed under a fault): maybe nothing, maybe a
    /// lease the harness never learnt.
    Unborn,
}

/// A file written in a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFact {
    /// Its content.
    pub nonce: String,
    /// Its mode.
    pub mode: u32,
    /// False when the write was not answered: the file may hold the nonce or not exist.
    pub sure: bool,
}

/// One logical handle.
#[derive(Debug, Clone, PartialEq)]
pub struct Handle {
    /// The phases it may be in.
    pub phases: BTreeSet<Phase>,
    /// The lease, once learnt.
    pub lease: Option<Lease>,
    /// The files written in the lease.
    pub files: BTreeMap<u8, FileFact>,
    /// Every provider id seen for this handle (results, creation-cleanup envelopes).
    pub ids: Vec<String>,
    /// Nonces written in this lease, ever (for isolation).
    pub nonces: Vec<String>,
}

impl Handle {
    /// A handle certainly in `phase`.
    pub fn new(phase: Phase) -> Self {
        Handle {
            phases: BTreeSet::from([phase]),
            lease: None,
            files: BTreeMap::new(),
            ids: vec![],
            nonces: vec![],
        }
    }

    /// True when it is certainly in `phase`.
    pub fn is(&self, phase: Phase) -> bool {
        self.phases.len() == 1 && self.phases.contains(&phase)
    }

    /// Moves it to exactly `phase`.
    pub fn set(&mut self, phase: Phase) {
        self.phases = BTreeSet::from([phase]);
    }

    /// Adds `phase` to the possibilities (an indeterminate answer).
    pub fn maybe(&mut self, phase: Phase) {
        self.phases.insert(phase);
    }
}

/// The files a handle certainly holds, as a bit set.
pub fn sure_files(handle: &Handle) -> u8 {
    handle.files.iter().filter(|(_, f)| f.sure).fold(0, |set, (&n, _)| set | (1 << n))
}

/// The calls the host makes to this worker (see [`crate::hostmodel::host_makes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gates {
    /// environmentAcquireLease advertised.
    pub acquire: bool,
    /// environmentRealizeWorkspace advertised.
    pub realize: bool,
    /// environmentExecute advertised.
    pub execute: bool,
    /// environmentReleaseLease advertised.
    pub release: bool,
    /// environmentDestroyLease advertised.
    pub destroy: bool,
    /// The host resumes kept leases (reusableLeases effective).
    pub resume: bool,
    /// The host stops and retains leases.
    pub stop: bool,
    /// The host runs one-shot commands beside another in one lease.
    pub in_flight: bool,
    /// environmentProbe advertised.
    pub probe: bool,
    /// The host syncs files natively (environmentSyncIn/environmentSyncOut), not base64 over
    /// execute.
    pub sync: bool,
}

impl Gates {
    /// The gates of a worker, as the host gates its calls.
    pub fn of(facts: &WorkerFacts, profile: HostProfile) -> Self {
        Gates {
            acquire: facts.advertises(name::ENVIRONMENT_ACQUIRE_LEASE),
            realize: facts.advertises(name::ENVIRONMENT_REALIZE_WORKSPACE),
            execute: facts.advertises(name::ENVIRONMENT_EXECUTE),
            release: facts.advertises(name::ENVIRONMENT_RELEASE_LEASE),
            destroy: facts.advertises(name::ENVIRONMENT_DESTROY_LEASE),
            resume: host_makes(HostCall::Resume, facts, profile).is_ok(),
            stop: host_makes(HostCall::Stop, facts, profile).is_ok(),
            in_flight: host_makes(HostCall::ControlCommands, facts, profile).is_ok(),
            probe: facts.advertises(name::ENVIRONMENT_PROBE),
            sync: host_makes(HostCall::NativeSync, facts, profile).is_ok(),
        }
    }
}

/// Bounds of generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Steps per program.
    pub steps: usize,
    /// Leases live at once.
    pub max_live: usize,
    /// Worker restarts per program.
    pub max_restarts: usize,
    /// Draw chaos faults.
    pub chaos: bool,
}

/// The model of one program run.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// The handles acquired so far.
    pub handles: BTreeMap<u8, Handle>,
    /// Acquires sent so far.
    pub acquires: usize,
    /// Restarts so far.
    pub restarts: usize,
    /// A fault is armed or active.
    pub faulted: bool,
    /// The ownership records (`cleanup`) of creation-cleanup envelopes of failed acquires.
    pub orphans: Vec<serde_json::Value>,
}

/// The kinds of operation, for swarm testing: each case turns some kinds off.
const KINDS: usize = 13;

impl Model {
    /// Leases that may be live.
    pub fn live_count(&self) -> usize {
        self.handles
            .values()
            .filter(|h| h.phases.iter().any(|p| !matches!(p, Phase::Destroyed)))
            .count()
    }

    /// Every operation the host could make now, with its weight and kind. `acquire_budget`
    /// says whether one more acquire is allowed.
    pub fn enabled(
        &self,
        gates: &Gates,
        bounds: &Bounds,
        acquire_budget: bool,
    ) -> Vec<(Op, u32, usize)> {
        let mut out = vec![];
        let free = (0..HANDLES).find(|h| !self.handles.contains_key(h));
        if let Some(h) = free {
            if gates.acquire && acquire_budget && self.live_count() < bounds.max_live {
                out.push((Op::Acquire { h }, if self.handles.is_empty() { 40 } else { 6 }, 0));
            }
        }
        for (&h, handle) in &self.handles {
            let live = handle.is(Phase::Live) && handle.lease.is_some();
            if live {
                if gates.realize {
                    out.push((Op::Realize { h }, 2, 1));
                }
                if gates.execute {
                    for file in 0..FILES {
                        out.push((Op::Write { h, file, mode: MODES[usize::from(file) % 3] }, 3, 2));
                    }
                    for &file in handle.files.keys() {
                        out.push((Op::Read { h, file }, 5, 3));
                    }
                    out.push((Op::Exit { h, code: 3 }, 1, 4));
                    if gates.in_flight {
                        out.push((Op::PairWrite { h, a: 0, b: 1 }, 3, 5));
                    }
                }
                if gates.sync {
                    out.push((Op::SyncIn { h, files: 1, mode: MODES[0] }, 3, 12));
                    let known = sure_files(handle);
                    if known != 0 {
                        out.push((Op::SyncOut { h, files: known }, 3, 12));
                    }
                }
                if gates.release {
                    out.push((Op::Release { h }, 2, 6));
                }
                if gates.stop {
                    out.push((Op::Stop { h }, 2, 7));
                }
            }
            if handle.lease.is_some() {
                if gates.resume && !handle.is(Phase::Unborn) {
                    out.push((Op::Resume { h }, if live { 1 } else { 6 }, 8));
                }
                if gates.destroy {
                    out.push((
                        Op::Destroy { h },
                        if handle.is(Phase::Destroyed) { 2 } else { 3 },
                        9,
                    ));
                    if !handle.is(Phase::Destroyed) {
                        out.push((Op::PairDestroy { h }, 1, 9));
                    }
                }
                if gates.execute && handle.is(Phase::Destroyed) {
                    for &file in handle.files.keys() {
                        out.push((Op::Read { h, file }, 2, 3));
                    }
                }
            }
        }
        if self.restarts < bounds.max_restarts && !self.handles.is_empty() {
            for how in [Restart::Eof, Restart::Shutdown, Restart::Sigterm, Restart::Sigkill] {
                out.push((Op::Restart { how }, 2, 10));
            }
        }
        if bounds.chaos {
            if self.faulted {
                out.push((Op::Heal, 8, 11));
            } else if !self.handles.is_empty() || self.acquires == 0 {
                for fault in [
                    FaultKind::Hang,
                    FaultKind::Reset,
                    FaultKind::Refuse,
                    FaultKind::Truncate { bytes: 40 },
                    FaultKind::Latency { ms: 300 },
                ] {
                    out.push((Op::Fault { fault, after: 0 }, 2, 11));
                }
            }
            if gates.probe {
                out.push((Op::Probe, 1, 11));
            }
        }
        out
    }

    /// Draws the next operation (`None` when nothing is enabled). `off` are the kinds this
    /// case leaves out (swarm testing); a draw ignores them unless nothing else is enabled.
    pub fn draw(
        &self,
        rng: &mut Draw,
        gates: &Gates,
        bounds: &Bounds,
        acquire_budget: bool,
        off: &[bool; KINDS],
    ) -> Option<Op> {
        let all = self.enabled(gates, bounds, acquire_budget);
        let on: Vec<&(Op, u32, usize)> = all.iter().filter(|(_, _, k)| !off[*k]).collect();
        let pool: Vec<&(Op, u32, usize)> = if on.is_empty() { all.iter().collect() } else { on };
        if pool.is_empty() {
            return None;
        }
        let weights: Vec<u32> = pool.iter().map(|(_, w, _)| *w).collect();
        let mut op = pool[rng.weighted(&weights)].0;
        // Arguments drawn separately, so that weights stay per kind.
        match &mut op {
            Op::Write { mode, .. } => *mode = MODES[rng.below(3) as usize],
            Op::Exit { code, .. } => *code = rng.below(4) as u8,
            Op::PairWrite { a, b, .. } => {
                *a = rng.below(u64::from(FILES)) as u8;
                *b = (*a + 1 + rng.below(u64::from(FILES) - 1) as u8) % FILES;
            }
            Op::Fault { after, .. } => *after = rng.below(3) as u8,
            Op::SyncIn { files, mode, .. } => {
                *files = 1 + rng.below((1 << FILES) - 1) as u8;
                *mode = MODES[rng.below(3) as usize];
            }
            // A non-empty subset of the files the lease certainly holds.
            Op::SyncOut { files, .. } => {
                let known = *files;
                let pick = loop {
                    let pick = known & (1 + rng.below((1 << FILES) - 1) as u8);
                    if pick != 0 {
                        break pick;
                    }
                };
                *files = pick;
            }
            _ => {}
        }
        Some(op)
    }

    /// Swarm testing: which kinds a case leaves out (acquire, destroy and heal never).
    pub fn swarm(rng: &mut Draw) -> [bool; KINDS] {
        let mut off = [false; KINDS];
        for (k, slot) in off.iter_mut().enumerate() {
            *slot = !matches!(k, 0 | 9 | 11) && rng.chance(1, 4);
        }
        off
    }

    /// Whether `op` can run now (a replayed or shrunk program skips an operation whose
    /// precondition no longer holds).
    pub fn applicable(&self, op: &Op, gates: &Gates, chaos: bool) -> bool {
        let handle = op.handle().and_then(|h| self.handles.get(&h));
        let live = handle.is_some_and(|h| h.is(Phase::Live) && h.lease.is_some());
        let known = handle.is_some_and(|h| h.lease.is_some());
        match *op {
            Op::Acquire { h } => gates.acquire && !self.handles.contains_key(&h),
            Op::Realize { .. } => gates.realize && live,
            Op::Write { .. } | Op::Exit { .. } => gates.execute && live,
            Op::Read { file, .. } => {
                gates.execute
                    && handle.is_some_and(|h| h.files.contains_key(&file))
                    && (live || handle.is_some_and(|h| h.is(Phase::Destroyed) && h.lease.is_some()))
            }
            Op::PairWrite { .. } => gates.execute && gates.in_flight && live,
            Op::SyncIn { files, .. } => gates.sync && live && files != 0,
            Op::SyncOut { files, .. } => {
                gates.sync
                    && live
                    && files != 0
                    && handle.is_some_and(|h| sure_files(h) & files == files)
            }
            Op::Release { .. } => gates.release && live,
            Op::Stop { .. } => gates.stop && live,
            Op::Resume { .. } => {
                gates.resume && known && !handle.is_some_and(|h| h.is(Phase::Unborn))
            }
            Op::Destroy { .. } | Op::PairDestroy { .. } => gates.destroy && known,
            Op::Restart { .. } => true,
            Op::Probe => gates.probe,
            Op::Fault { .. } | Op::Heal => chaos,
        }
    }
}
