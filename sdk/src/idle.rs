//! The idle-sleep gate: admission of calls, and the seal a successful `prepareIdleSleep`
//! puts on the worker until the matching `releaseIdleSleep` (protocol:
//! [`paperclip_sandbox_protocol::methods::idle`]).
//!
//! Every piece of work the worker accepts is *admitted* first and counted until it really
//! ends: a host request until its answer is queued, a notification until its handler
//! returns, a worker→host call until the host's response arrives (a call that timed out on
//! the worker's side stays counted: only the host's answer proves the host finished it).
//! A request the reader answers at once (`health` without a hook, an unknown method) is only
//! checked against the seal ([`IdleGate::check_open`]): its answer is queued before anything
//! could count it. `prepareIdleSleep`, `releaseIdleSleep` and `shutdown` are not admitted.
//!
//! `prepareIdleSleep` is answered, in this order:
//!
//! 1. `"unknown"` when the request is not acceptable (empty owner, deadline passed or more
//!    than five minutes away);
//! 2. `"present"` when the provider has no idle-drain hook;
//! 3. if a hold exists: `"none"` when it is this very request again (same owner and deadline)
//!    and its check succeeded, `"unknown"` otherwise;
//! 4. `"present"` when admitted work is running or another check is under way;
//! 5. otherwise the worker is sealed at once (admission closes), the hook runs with a signal
//!    that fires when the hold ends (matching release or expiry), and its verdict decides:
//!    `"none"` keeps the seal until release or expiry; `"present"`/`"unknown"`, a hook error
//!    or a hold that ended meanwhile open the worker again.
//!
//! While sealed, admission fails with [`IDLE_SEALED_MESSAGE`]. A release with another owner
//! is ignored; the hold also ends on its own at `expiresAt`.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::methods::{
    BackgroundWork, PrepareIdleSleepParams, IDLE_SEALED_MESSAGE,
};

use crate::context::{CancellationSource, CancellationToken};

/// The current time in epoch milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

struct Hold {
    id: u64,
    owner_id: String,
    expires_at: i64,
    ready: bool,
    ended: CancellationSource,
}

#[derive(Default)]
struct State {
    active: usize,
    preparing: usize,
    hold: Option<Hold>,
    next_id: u64,
}

impl State {
    /// Ends the hold when its deadline passed; returns the hold that remains.
    fn current(&mut self) -> Option<&Hold> {
        if self.hold.as_ref().is_some_and(|h| h.expires_at <= now_ms()) {
            self.end_hold();
        }
        self.hold.as_ref()
    }

    fn end_hold(&mut self) {
        if let Some(h) = self.hold.take() {
            h.ended.cancel();
        }
    }

    fn end_hold_if(&mut self, id: u64) {
        if self.hold.as_ref().is_some_and(|h| h.id == id) {
            self.end_hold();
        }
    }
}

/// The gate (see the module docs). Shared by the runtime's reader, request tasks,
/// notification task and peer.
#[derive(Default)]
pub(crate) struct IdleGate {
    state: Mutex<State>,
}

/// One piece of admitted work; dropping it ends it.
#[must_use = "the work counts as running until this is dropped"]
pub(crate) struct Admission {
    gate: Arc<IdleGate>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut s = self.gate.lock();
        s.active = s.active.saturating_sub(1);
    }
}

impl std::fmt::Debug for IdleGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("IdleGate")
            .field("active", &s.active)
            .field("sealed", &s.hold.is_some())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission")
    }
}

/// The error of a call refused while the worker is sealed: `-32002 Plugin is held for idle
/// sleep`, as the upstream SDK answers.
pub(crate) fn sealed_error() -> ErrorObject {
    ErrorObject::new(ErrorCode::WorkerError, IDLE_SEALED_MESSAGE)
}

impl IdleGate {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits one piece of work, or refuses it while the worker is sealed.
    pub(crate) fn admit(self: &Arc<Self>) -> Result<Admission, ErrorObject> {
        let mut s = self.lock();
        if s.current().is_some() {
            return Err(sealed_error());
        }
        s.active += 1;
        Ok(Admission { gate: self.clone() })
    }

    /// Refuses, as [`admit`](Self::admit) would, while the worker is sealed; admits nothing.
    /// For requests answered at once.
    pub(crate) fn check_open(&self) -> Result<(), ErrorObject> {
        match self.lock().current() {
            Some(_) => Err(sealed_error()),
            None => Ok(()),
        }
    }

    /// True while a hold seals the worker.
    #[cfg(test)]
    pub(crate) fn is_sealed(&self) -> bool {
        self.lock().current().is_some()
    }

    /// `releaseIdleSleep {ownerId}`: ends the hold when `owner_id` is its owner; ignored
    /// otherwise.
    pub(crate) fn release(&self, owner_id: &str) {
        let mut s = self.lock();
        if s.hold.as_ref().is_some_and(|h| h.owner_id == owner_id) {
            s.end_hold();
        }
    }

    /// Ends any hold (the worker stops serving).
    pub(crate) fn close(&self) {
        self.lock().end_hold();
    }

    /// Answers `prepareIdleSleep` (see the module docs). `hook` is the provider's idle-drain
    /// check, `None` without one; it receives a token cancelled when the hold ends.
    pub(crate) async fn prepare<F, Fut, E>(
        self: &Arc<Self>,
        request: &PrepareIdleSleepParams,
        hook: Option<F>,
    ) -> BackgroundWork
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = Result<BackgroundWork, E>>,
    {
        if !request.is_acceptable_at(now_ms()) {
            return BackgroundWork::Unknown;
        }
        let Some(hook) = hook else { return BackgroundWork::Present };
        let (id, signal) = {
            let mut s = self.lock();
            if let Some(prior) = s.current() {
                let same = prior.owner_id == request.owner_id
                    && prior.expires_at == request.expires_at
                    && prior.ready;
                return if same { BackgroundWork::None } else { BackgroundWork::Unknown };
            }
            if s.active != 0 || s.preparing != 0 {
                return BackgroundWork::Present;
            }
            s.next_id += 1;
            let id = s.next_id;
            let ended = CancellationSource::new();
            let signal = ended.token();
            s.hold = Some(Hold {
                id,
                owner_id: request.owner_id.clone(),
                expires_at: request.expires_at,
                ready: false,
                ended,
            });
            s.preparing += 1;
            (id, signal)
        };
        // The hold ends on its own at its deadline, waking the hook's signal.
        let wait = Duration::from_millis((request.expires_at - now_ms()).max(0) as u64);
        let gate = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(gate) = gate.upgrade() {
                gate.lock().end_hold_if(id);
            }
        });

        let verdict = hook(signal).await;
        let mut s = self.lock();
        s.preparing -= 1;
        let still_ours = s.current().is_some_and(|h| h.id == id);
        match verdict {
            Ok(BackgroundWork::None) if still_ours && s.active == 0 => {
                if let Some(h) = s.hold.as_mut() {
                    h.ready = true;
                }
                BackgroundWork::None
            }
            Ok(BackgroundWork::Present) => {
                s.end_hold_if(id);
                BackgroundWork::Present
            }
            _ => {
                s.end_hold_if(id);
                BackgroundWork::Unknown
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(owner: &str) -> PrepareIdleSleepParams {
        PrepareIdleSleepParams::new(owner, now_ms() + 10_000)
    }

    type Verdict = Result<BackgroundWork, ()>;

    async fn none(_: CancellationToken) -> Verdict {
        Ok(BackgroundWork::None)
    }

    #[tokio::test]
    async fn admitted_work_counts_until_it_ends() {
        let gate = Arc::new(IdleGate::default());
        let work = gate.admit().unwrap();
        let called = std::sync::atomic::AtomicBool::new(false);
        let check = |_| {
            called.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Verdict::Ok(BackgroundWork::None) }
        };
        assert_eq!(gate.prepare(&hold("o"), Some(check)).await, BackgroundWork::Present);
        assert!(!called.load(std::sync::atomic::Ordering::SeqCst), "busy: the hook is not asked");
        drop(work);
        assert_eq!(gate.prepare(&hold("o"), Some(none)).await, BackgroundWork::None);
        let refused = gate.admit().unwrap_err();
        assert_eq!((refused.code, refused.message.as_str()), (-32002, IDLE_SEALED_MESSAGE));
        gate.close();
        assert!(gate.admit().is_ok());
    }

    #[tokio::test]
    async fn no_hook_bad_deadlines_busy_verdicts_and_errors_keep_the_worker_open() {
        let gate = Arc::new(IdleGate::default());
        let no_hook: Option<fn(CancellationToken) -> std::future::Ready<Verdict>> = None;
        assert_eq!(gate.prepare(&hold("o"), no_hook).await, BackgroundWork::Present);
        let far = PrepareIdleSleepParams::new("o", now_ms() + 300_001);
        assert_eq!(gate.prepare(&far, Some(none)).await, BackgroundWork::Unknown);
        let past = PrepareIdleSleepParams::new("o", now_ms() - 1);
        assert_eq!(gate.prepare(&past, Some(none)).await, BackgroundWork::Unknown);
        let busy = |_| async { Verdict::Ok(BackgroundWork::Present) };
        assert_eq!(gate.prepare(&hold("o"), Some(busy)).await, BackgroundWork::Present);
        let failing = |_| async { Verdict::Err(()) };
        assert_eq!(gate.prepare(&hold("o"), Some(failing)).await, BackgroundWork::Unknown);
        let unsure = |_| async { Verdict::Ok(BackgroundWork::Unknown) };
        assert_eq!(gate.prepare(&hold("o"), Some(unsure)).await, BackgroundWork::Unknown);
        assert!(gate.admit().is_ok(), "none of these sealed the worker");
    }

    /// Seals `gate` for `lease` with a hook answering `none`; the signal the hook was given.
    async fn seal(gate: &Arc<IdleGate>, lease: &PrepareIdleSleepParams) -> CancellationToken {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let keep = |signal: CancellationToken| async move {
            let _ = tx.send(signal);
            Verdict::Ok(BackgroundWork::None)
        };
        assert_eq!(gate.prepare(lease, Some(keep)).await, BackgroundWork::None);
        rx.await.unwrap()
    }

    #[tokio::test]
    async fn only_the_owner_releases_and_a_repeat_is_answered_from_the_hold() {
        let gate = Arc::new(IdleGate::default());
        let lease = hold("owner");
        let signal = seal(&gate, &lease).await;
        gate.release("stale-owner");
        assert!(!signal.is_cancelled() && gate.is_sealed());
        assert_eq!(gate.prepare(&lease, Some(none)).await, BackgroundWork::None);
        assert_eq!(gate.prepare(&hold("other"), Some(none)).await, BackgroundWork::Unknown);
        gate.release("owner");
        assert!(signal.is_cancelled() && !gate.is_sealed());
        assert!(gate.admit().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_expires_on_its_own() {
        let gate = Arc::new(IdleGate::default());
        let lease = PrepareIdleSleepParams::new("o", now_ms() + 200);
        let signal = seal(&gate, &lease).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
        signal.cancelled().await;
        // The timer ended it (wall-clock expiry is also checked on every admission).
        assert!(gate.admit().is_ok());
    }

    #[tokio::test]
    async fn admission_is_closed_while_the_hook_runs_and_a_late_verdict_is_unknown() {
        let gate = Arc::new(IdleGate::default());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let slow = |_| async move {
            let _ = wait.await;
            Verdict::Ok(BackgroundWork::None)
        };
        let g = gate.clone();
        let pending = tokio::spawn(async move { g.prepare(&hold("o"), Some(slow)).await });
        while !gate.is_sealed() {
            tokio::task::yield_now().await;
        }
        assert!(gate.admit().is_err(), "sealed while the check runs");
        assert_eq!(gate.prepare(&hold("o"), Some(none)).await, BackgroundWork::Unknown);
        gate.release("o");
        let _ = go.send(());
        assert_eq!(pending.await.unwrap(), BackgroundWork::Unknown);
        assert!(gate.admit().is_ok());
    }
}
