//! The lease-ending steps of a program (release, stop, destroy, resume), the heal of a chaos
//! fault, and the cleanup that ends every case: heal, destroy everything that may exist
//! ("maybe" leases included), then ask the leak oracle what the backend still holds.

use std::time::Duration;

use paperclip_sandbox_protocol::envelope::accept_termination_receipt;
use paperclip_sandbox_protocol::methods::name;
use serde_json::Value;

use crate::host::{clip, Reply};
use crate::ledger::{Lease, LeaseState};

use super::invariants as inv;
use super::model::Phase;
use super::step::{Exec1, Runner};
use super::target::Target;

impl Runner<'_> {
    pub(super) fn heal(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>) {
        let Some(c) = self.chaos.as_deref_mut() else { return };
        c.heal();
        x.model.faulted = false;
        x.healed = true;
        if !self.gates.probe {
            return;
        }
        // A quiet period, then the backend must be usable again within a few probes.
        std::thread::sleep(Duration::from_millis(300));
        x.out.coverage.reach(inv::RECOVER);
        let mut last = String::new();
        for _ in 0..3 {
            let params = Value::Object(self.calls.base());
            let reply = self.call(target, x, name::ENVIRONMENT_PROBE, params, self.call_wait);
            match reply {
                Reply::Result(v) if v.get("ok") == Some(&Value::Bool(true)) => return,
                other => last = other.describe(),
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        Self::violate(
            x,
            inv::RECOVER,
            "environmentProbe answers ok: true after the fault heals",
            last,
        );
    }

    pub(super) fn end_like(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        h: u8,
        method: &str,
    ) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let stop = method == name::ENVIRONMENT_STOP_LEASE;
        let params = if stop {
            self.calls.stop(&lease)
        } else {
            self.calls.by_id(&lease.id, &lease.metadata)
        };
        let wait = self.calls.sandbox_wait(self.call_wait);
        let reply = self.call(target, x, method, params, wait);
        let (id, states): (&'static str, &[&str]) = if stop {
            (inv::STOP, &["stopped"])
        } else {
            (inv::RELEASE, &["stopped", "destroyed"])
        };
        let next = if stop { Phase::Stopped } else { Phase::Released };
        let handle = x.model.handles.get_mut(&h).expect("handle");
        if x.model.faulted {
            handle.maybe(next);
            return;
        }
        x.out.coverage.reach(id);
        let ok = match &reply {
            Reply::Result(Value::Null) if !stop => Ok(()),
            Reply::Result(v) => match accept_termination_receipt(v, &lease.id) {
                Ok(r) if states.contains(&r.state.as_str()) => Ok(()),
                Ok(r) => Err(format!("state {:?}", r.state)),
                Err(e) => Err(format!("{} ({e})", clip(&v.to_string()))),
            },
            other => Err(other.describe()),
        };
        handle.set(next);
        if let Err(actual) = ok {
            Self::violate(
                x,
                id,
                format!("{method}: a receipt naming the lease, state in {states:?}"),
                actual,
            );
        }
    }

    pub(super) fn destroy(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        h: u8,
        pair: bool,
    ) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let params = self.calls.by_id(&lease.id, &lease.metadata);
        let replies = if pair {
            let (a, b) = target.pair(
                (name::ENVIRONMENT_DESTROY_LEASE, params.clone()),
                (name::ENVIRONMENT_DESTROY_LEASE, params),
                self.calls.sandbox_wait(self.call_wait),
            );
            Self::note(x, format!("in flight: {} | {}", a.describe(), b.describe()));
            self.judge_faulted(x, name::ENVIRONMENT_DESTROY_LEASE, &a);
            self.judge_faulted(x, name::ENVIRONMENT_DESTROY_LEASE, &b);
            vec![a, b]
        } else {
            let wait = self.calls.sandbox_wait(self.call_wait);
            vec![self.call(target, x, name::ENVIRONMENT_DESTROY_LEASE, params, wait)]
        };
        let handle = x.model.handles.get_mut(&h).expect("handle");
        if x.model.faulted {
            if replies.iter().all(|r| matches!(r, Reply::Result(_))) {
                handle.set(Phase::Destroyed);
            } else {
                handle.maybe(Phase::Destroyed);
                x.faulted_destroy.push(h);
            }
            return;
        }
        handle.set(Phase::Destroyed);
        let after_fault = x.faulted_destroy.contains(&h);
        let id = if after_fault { inv::IDEMP } else { inv::DESTROY };
        x.out.coverage.reach(id);
        let bad = replies.iter().find(|r| match r {
            Reply::Result(Value::Null) => false,
            Reply::Result(v) => {
                v.get("providerLeaseId").is_some_and(|i| i.as_str() != Some(lease.id.as_str()))
                    || v.get("state").is_some_and(|s| s != "destroyed")
            }
            _ => true,
        });
        match bad {
            Some(r) => {
                let actual = r.describe();
                Self::violate(x, id, "environmentDestroyLease succeeds from any phase: null or a receipt {state: \"destroyed\"} naming the lease", actual);
            }
            None => {
                self.ledger.ended(&lease.id);
                x.faulted_destroy.retain(|d| *d != h);
            }
        }
    }

    pub(super) fn resume(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>, h: u8) {
        let Some(lease) = Self::lease_of(x, h) else { return };
        let before = x.model.handles[&h].phases.clone();
        let params = self.calls.by_id(&lease.id, &lease.metadata);
        let wait = self.calls.resume_wait(self.call_wait);
        let reply = self.call(target, x, name::ENVIRONMENT_RESUME_LEASE, params, wait);
        if x.model.faulted {
            return;
        }
        let certain = |p: Phase| before.len() == 1 && before.contains(&p);
        let result = match &reply {
            Reply::Result(v) => v.clone(),
            other => {
                let id = if x.healed {
                    inv::RECOVER
                } else if before.contains(&Phase::Detached) {
                    inv::RESTART
                } else {
                    inv::RESUME_LIVE
                };
                x.out.coverage.reach(id);
                Self::violate(
                    x,
                    id,
                    "environmentResumeLease answers the lease or {providerLeaseId: null}",
                    other.describe(),
                );
                return;
            }
        };
        let back = Lease::from_result(&result);
        if certain(Phase::Destroyed) {
            x.out.coverage.reach(inv::RESUME_DESTROYED);
            if back.is_some() || result.get("providerLeaseId") != Some(&Value::Null) {
                Self::violate(
                    x,
                    inv::RESUME_DESTROYED,
                    format!("destroyed lease L{h}: {{providerLeaseId: null, metadata}}"),
                    clip(&result.to_string()),
                );
                if let Some(b) = back {
                    self.ledger.track("stateful", "stateful", b);
                }
                return;
            }
        }
        if certain(Phase::Live) || certain(Phase::Stopped) {
            x.out.coverage.reach(inv::RESUME_LIVE);
            if back.as_ref().is_none_or(|b| b.id != lease.id) {
                Self::violate(
                    x,
                    inv::RESUME_LIVE,
                    format!("L{h} back: {{providerLeaseId: {:?}, …}}", lease.id),
                    clip(&result.to_string()),
                );
                return;
            }
        }
        if before.contains(&Phase::Detached) {
            x.out.coverage.reach(inv::RESTART);
        }
        let handle = x.model.handles.get_mut(&h).expect("handle");
        match back {
            Some(b) => {
                if b.id != lease.id {
                    handle.files.clear();
                    handle.ids.push(b.id.clone());
                }
                self.ledger.track("stateful", "stateful", b.clone());
                handle.lease = Some(b);
                handle.set(Phase::Live);
            }
            None => handle.set(Phase::Destroyed),
        }
    }

    /// Destroys what a failed acquire named in its creation-cleanup envelope, as the host does:
    /// `leaseMetadata.failedCreateCleanup` carries the record; an answer with an envelope that
    /// names an observed sandbox is followed with that record. An unchanged envelope means the
    /// provider found nothing under the creation name (the leak oracle judges what is left).
    fn destroy_failed_create(
        &mut self,
        target: &mut dyn Target,
        x: &mut Exec1<'_>,
        mut record: Value,
        clean: bool,
    ) {
        x.out.coverage.reach(inv::CLEANUP);
        for _ in 0..4 {
            let id = record
                .get("providerLeaseId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let metadata = serde_json::json!({ "failedCreateCleanup": record.clone() });
            let reply = target.call(
                name::ENVIRONMENT_DESTROY_LEASE,
                self.calls.by_id(&id, &metadata),
                self.calls.sandbox_wait(self.call_wait),
            );
            Self::note(x, format!("cleanup: destroy failed create {id} -> {}", reply.describe()));
            let next = match &reply {
                Reply::Result(_) => return,
                Reply::Error(e) => e
                    .data
                    .as_ref()
                    .and_then(paperclip_sandbox_protocol::envelope::read_creation_cleanup),
                _ => None,
            };
            match next {
                Some(o) if o.observed_provider_lease_id().is_some() && o.to_json() != record => {
                    record = o.to_json()
                }
                Some(_) => return,
                None => {
                    if clean {
                        Self::violate(
                            x,
                            inv::CLEANUP,
                            "what a creation-cleanup envelope names can be destroyed from it",
                            format!("destroy of {id}: {}", reply.describe()),
                        );
                    }
                    return;
                }
            }
        }
    }

    pub(super) fn cleanup(&mut self, target: &mut dyn Target, x: &mut Exec1<'_>) {
        if x.model.faulted {
            if let Some(c) = self.chaos.as_deref_mut() {
                c.heal();
            }
            x.model.faulted = false;
            std::thread::sleep(Duration::from_millis(300));
        }
        x.step = x.out.ops.len();
        let clean = x.out.violations.is_empty();
        let mut ids: Vec<(String, Value, &'static str)> = vec![];
        for (&h, handle) in &x.model.handles {
            let Some(lease) = &handle.lease else { continue };
            if handle.is(Phase::Destroyed) {
                continue;
            }
            let id = if x.faulted_destroy.contains(&h) { inv::IDEMP } else { inv::LEAK };
            for extra in &handle.ids {
                let metadata = if *extra == lease.id {
                    lease.metadata.clone()
                } else {
                    Value::Object(Default::default())
                };
                ids.push((extra.clone(), metadata, id));
            }
        }
        if !self.gates.destroy {
            return;
        }
        for orphan in x.model.orphans.clone() {
            self.destroy_failed_create(target, x, orphan, clean);
        }
        for (id, metadata, invariant) in ids {
            let params = self.calls.by_id(&id, &metadata);
            let wait = self.calls.sandbox_wait(self.call_wait);
            let reply = target.call(name::ENVIRONMENT_DESTROY_LEASE, params, wait);
            Self::note(x, format!("cleanup: destroy {id} -> {}", reply.describe()));
            x.out.coverage.reach(invariant);
            match reply {
                Reply::Result(_) => self.ledger.ended(&id),
                other => {
                    self.ledger.set_state(&id, LeaseState::Stuck(other.describe()));
                    if clean {
                        Self::violate(
                            x,
                            invariant,
                            "every lease of the program can be destroyed",
                            format!("destroy of {id}: {}", other.describe()),
                        );
                    }
                }
            }
        }
        let env_id = self.calls.environment_id.clone();
        if let Some(c) = self.chaos.as_deref_mut() {
            x.out.routed = Some(c.requests());
            let mut left = c.leaked(&env_id);
            for _ in 0..10 {
                match &left {
                    Ok(l) if !l.is_empty() => {
                        std::thread::sleep(Duration::from_millis(500));
                        left = c.leaked(&env_id);
                    }
                    _ => break,
                }
            }
            let swept = c.sweep(&env_id);
            if swept > 0 {
                Self::note(x, format!("swept {swept} leftover backend resources"));
            }
            match left {
                Err(why) => x.out.oracle_blind = Some(why),
                Ok(left) => {
                    let id = if x.model.orphans.is_empty()
                        && x.model.handles.values().all(|h| h.lease.is_some())
                    {
                        inv::LEAK
                    } else {
                        inv::CLEANUP
                    };
                    x.out.coverage.reach(id);
                    if !left.is_empty() && clean {
                        Self::violate(x, id, "nothing of the program is left on the backend after every lease was destroyed", format!("left on the backend: {}", left.join(", ")));
                    }
                }
            }
        }
    }
}
