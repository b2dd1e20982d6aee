//! `ledger.clean`: every lease the run created is ended. The check first ends, with the main
//! worker, whatever an earlier check could not (a check that panicked, timed out or lost its
//! worker), then reports the counts and fails on any lease the worker could not end.

use crate::context::{fail, CheckResult, Ctx};
use crate::ledger::LeaseState;

/// LEDGER-1.
pub fn clean(ctx: &mut Ctx<'_>) -> CheckResult {
    for lease in ctx.ledger.live(None) {
        if ctx.has_session() {
            let _ = ctx.end_lease(&lease);
        }
    }
    let entries = ctx.ledger.entries();
    let ended = entries.iter().filter(|e| e.state == LeaseState::Ended).count();
    ctx.notes.push(format!("leases created: {}, ended: {ended}", entries.len()));
    let mut bad = vec![];
    for e in &entries {
        match &e.state {
            LeaseState::Ended => {}
            LeaseState::Live => bad.push(format!(
                "{} (from {}): still live, no worker to end it",
                e.lease.id, e.check
            )),
            LeaseState::Stuck(why) => bad.push(format!("{} (from {}): {why}", e.lease.id, e.check)),
            LeaseState::Unendable => ctx.notes.push(format!(
                "{} (from {}): the worker offers neither destroy nor release; it can only expire",
                e.lease.id, e.check
            )),
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(fail(
            "every lease the run created is ended (destroyed, or released)",
            format!("{} of {} left: {}", bad.len(), entries.len(), bad.join("; ")),
        ))
    }
}
