//! Creation attempts against a fake backend under paused tokio time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use paperclip_sandbox_protocol::methods::lease::EnvironmentBaseParams;
use serde_json::Value;

use super::*;

/// How the fake's create call behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Create {
    /// Stores the resource and answers after the delay.
    AnswerAfter(Duration),
    /// Stores the resource at once and never answers.
    StoreAndHang,
    /// Stores nothing and never answers.
    Hang,
    /// Stores the resource, then fails with a transport error.
    StoreAndFail,
    /// Refuses (a 4xx).
    Refuse,
    /// The name is taken.
    Conflict,
}

#[derive(Clone, Debug)]
struct Res {
    id: String,
    name: String,
    labels: HashMap<String, String>,
    /// Progress reads until ready; `None`: never ready (pending), `Some(0)`: ready.
    ready_after: Option<u32>,
    preparing: bool,
    failed: bool,
}

#[derive(Default)]
struct State {
    resources: HashMap<String, Res>,
    removed: Vec<String>,
    lookups: u32,
}

#[derive(Clone)]
struct Fake {
    create: Create,
    /// What a stored resource looks like (its labels are the attempt's unless `foreign`).
    foreign: bool,
    ready_after: Option<u32>,
    preparing: bool,
    failed: bool,
    /// Lookups by name never answer.
    hang_lookups: bool,
    /// Removals never answer.
    hang_removals: bool,
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct FakeError(&'static str);

impl fmt::Display for FakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Fake {
    fn new(create: Create) -> Self {
        Fake {
            create,
            foreign: false,
            ready_after: Some(0),
            preparing: false,
            failed: false,
            hang_lookups: false,
            hang_removals: false,
            state: Arc::default(),
        }
    }

    fn store(&self, attempt: &CreationAttempt) -> Res {
        let mut labels: HashMap<String, String> = attempt.labels().into_iter().collect();
        if self.foreign {
            labels.insert(LABEL_COMPANY.into(), "someone-else".into());
        }
        let res = Res {
            id: format!("id-{}", attempt.id),
            name: attempt.creation_name.clone(),
            labels,
            ready_after: self.ready_after,
            preparing: self.preparing,
            failed: self.failed,
        };
        self.state.lock().unwrap().resources.insert(res.name.clone(), res.clone());
        res
    }

    fn removed(&self) -> Vec<String> {
        self.state.lock().unwrap().removed.clone()
    }
}

#[async_trait]
impl CreationBackend for Fake {
    type Resource = Res;
    type Error = FakeError;

    async fn create(&self, attempt: &CreationAttempt) -> Result<Res, FakeError> {
        match self.create {
            Create::AnswerAfter(d) => {
                let res = self.store(attempt);
                tokio::time::sleep(d).await;
                Ok(res)
            }
            Create::StoreAndHang => {
                self.store(attempt);
                std::future::pending().await
            }
            Create::Hang => std::future::pending().await,
            Create::StoreAndFail => {
                self.store(attempt);
                Err(FakeError("connection reset"))
            }
            Create::Refuse => Err(FakeError("400 bad image")),
            Create::Conflict => Err(FakeError("409 name taken")),
        }
    }

    async fn inspect_by_name(&self, name: &str) -> Result<Option<Res>, FakeError> {
        if self.hang_lookups {
            return std::future::pending().await;
        }
        let mut state = self.state.lock().unwrap();
        state.lookups += 1;
        Ok(state.resources.values().find(|r| r.name == name || r.id == name).cloned())
    }

    async fn remove(&self, resource: &Res) -> Result<(), FakeError> {
        if self.hang_removals {
            return std::future::pending().await;
        }
        let mut state = self.state.lock().unwrap();
        state.resources.remove(&resource.name);
        state.removed.push(resource.id.clone());
        Ok(())
    }

    async fn progress(&self, resource: &Res) -> Result<Progress<Res>, FakeError> {
        let mut state = self.state.lock().unwrap();
        let Some(r) = state.resources.get_mut(&resource.name) else {
            return Ok(Progress::Failed("the resource disappeared".into()));
        };
        if r.failed {
            return Ok(Progress::Failed("the resource reached state error".into()));
        }
        match &mut r.ready_after {
            Some(0) => Ok(Progress::Ready(r.clone())),
            Some(n) => {
                *n -= 1;
                Ok(if r.preparing { Progress::Preparing } else { Progress::Pending })
            }
            None if r.preparing => Ok(Progress::Preparing),
            None => Ok(Progress::Pending),
        }
    }

    fn resource_id(&self, resource: &Res) -> String {
        resource.id.clone()
    }

    fn resource_name<'a>(&self, resource: &'a Res) -> Option<&'a str> {
        Some(&resource.name)
    }

    fn resource_label<'a>(&self, resource: &'a Res, key: &str) -> Option<&'a str> {
        resource.labels.get(key).map(String::as_str)
    }

    fn is_refusal(&self, error: &FakeError) -> bool {
        error.0.starts_with('4')
    }

    fn is_conflict(&self, error: &FakeError) -> bool {
        error.0.starts_with("409")
    }
}

fn attempt() -> CreationAttempt {
    let mut p = AcquireLeaseParams::new(EnvironmentBaseParams::new("fake", "c1", "e1"), "r1");
    p.creation_operation = Some(CreationOperation::new(1, "2b0c-op"));
    CreationAttempt::for_acquire(&p, "fake", "f".repeat(64))
}

const BUDGET: Duration = Duration::from_secs(60);
const LOOKUP: Duration = Duration::from_secs(10);

fn remote_plan() -> CreationPlan {
    CreationPlan::new(BUDGET, "sandbox")
        .with_lookup_delay(LOOKUP)
        .with_poll_interval(Duration::from_secs(1))
        .leaving_failures_to_the_host()
}

/// The error's acquire-envelope data: (observed id, elapsedMs, budgetMs).
fn envelope(e: &ProviderError) -> (Option<String>, u64, u64) {
    let data = e.to_error_object("environmentAcquireLease").data.expect("an envelope");
    let observed = data["cleanup"]["observedProviderLeaseId"].as_str().map(str::to_owned);
    let d = &data["acquisitionDiagnostic"];
    (observed, d["elapsedMs"].as_u64().unwrap(), d["budgetMs"].as_u64().unwrap())
}

#[test]
fn names_labels_and_ownership() {
    let a = attempt();
    assert_eq!(a.creation_name, "paperclip-create-2b0c-op");
    let labels: HashMap<_, _> = a.labels().into_iter().collect();
    assert_eq!(labels["paperclip-create-attempt"], "2b0c-op");
    assert_eq!(labels[LABEL_PROVIDER], "fake");
    assert_eq!(labels[LABEL_REUSE], "false");
    let get = |k: &str| labels.get(k).map(String::as_str);
    assert!(a.owns(Some("paperclip-create-2b0c-op"), get));
    assert!(!a.owns(Some("other"), get));
    let o = a.ownership(Some("id-1")).unwrap();
    assert_eq!(o.observed_provider_lease_id(), Some("id-1"));
    assert!(ownership_matches(&o, Some("paperclip-create-2b0c-op"), get));
    let mut foreign = labels.clone();
    foreign.insert(LABEL_COMPANY.into(), "c2".into());
    assert!(!ownership_matches(&o, Some("paperclip-create-2b0c-op"), |k| foreign
        .get(k)
        .map(String::as_str)));
    let (u, v) = (generate_uuid(), generate_uuid());
    assert_ne!(u, v);
    assert_eq!((u.len(), &u[14..15], u.matches('-').count()), (36, "4", 4));
    let p = AcquireLeaseParams::new(EnvironmentBaseParams::new("fake", "c1", "e1"), "r1");
    let fresh = CreationAttempt::for_acquire(&p, "fake", "0".repeat(64));
    assert_eq!(fresh.creation_name, format!("paperclip-create-{}", fresh.id));
}

#[test]
fn diagnostics_put_expired_deadlines_at_or_over_the_budget() {
    let d = acquisition_diagnostic(Duration::from_millis(900), Duration::from_secs(1), true);
    assert_eq!(d.unwrap().to_json()["elapsedMs"], 1000);
    let d = acquisition_diagnostic(Duration::from_secs(5), Duration::from_secs(1), false);
    assert_eq!(d.unwrap().to_json()["elapsedMs"], 999);
    let d = acquisition_diagnostic(Duration::from_millis(20), Duration::from_secs(1), false);
    assert_eq!(d.unwrap().to_json()["elapsedMs"], 20);
}

#[tokio::test(start_paused = true)]
async fn an_answered_create_is_adopted_when_ready() {
    let mut fake = Fake::new(Create::AnswerAfter(Duration::from_secs(2)));
    fake.ready_after = Some(3);
    let started = Instant::now();
    let r = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap();
    assert_eq!(r.id, "id-2b0c-op");
    assert_eq!(started.elapsed(), Duration::from_secs(5), "answer at 2 s, three polls of 1 s");
    assert_eq!(fake.state.lock().unwrap().lookups, 0, "no lookup before the delay");
    assert!(fake.removed().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_hanging_create_is_resolved_by_one_lookup_at_the_delay_and_adopted() {
    let fake = Fake::new(Create::StoreAndHang);
    let started = Instant::now();
    let r = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap();
    assert_eq!((r.id.as_str(), started.elapsed()), ("id-2b0c-op", LOOKUP));
    assert_eq!(fake.state.lock().unwrap().lookups, 1);
    tokio::time::sleep(BUDGET * 2).await;
    assert!(fake.removed().is_empty(), "an adopted resource is never removed");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_attempt_leaves_no_create_running_and_an_adopted_create_ends_at_the_cap() {
    // The host gave up (the call was cancelled): the attempt is dropped mid-create.
    let fake = Fake::new(Create::Hang);
    let (a, plan) = (attempt(), remote_plan());
    let cancelled = tokio::time::timeout(LOOKUP / 2, create_bounded(&fake, &a, &plan));
    assert!(cancelled.await.is_err(), "the create hangs, so the attempt was cancelled");
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // The create task held a clone of the backend; aborted, it holds nothing.
    assert_eq!(Arc::strong_count(&fake.state), 1, "the create task outlived its attempt");

    // Adopted by the lookup while the create hangs: the create is abandoned at the cap.
    let fake = Fake::new(Create::StoreAndHang);
    create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap();
    assert!(Arc::strong_count(&fake.state) > 1, "the adopted create may still answer");
    tokio::time::sleep(BUDGET).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(Arc::strong_count(&fake.state), 1, "the adopted create ran past the budget");
    assert!(fake.removed().is_empty(), "an adopted resource is never removed");
}

#[tokio::test(start_paused = true)]
async fn no_resource_at_the_lookup_delay_ends_with_a_transient_envelope() {
    let fake = Fake::new(Create::Hang);
    let e = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap_err();
    assert!(e.message().starts_with("Sandbox acquisition timed out"), "{}", e.message());
    let (observed, elapsed, budget) = envelope(&e);
    assert_eq!((observed, budget), (None, 10_000));
    assert!(elapsed >= budget);
}

#[tokio::test(start_paused = true)]
async fn a_preparing_resource_keeps_the_attempt_waiting_and_a_pending_one_ends_it() {
    let mut fake = Fake::new(Create::StoreAndHang);
    fake.preparing = true;
    fake.ready_after = Some(20);
    let started = Instant::now();
    create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap();
    assert!(started.elapsed() > LOOKUP);

    let mut fake = Fake::new(Create::StoreAndHang);
    fake.ready_after = None;
    let e = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap_err();
    let (observed, elapsed, budget) = envelope(&e);
    assert_eq!((observed.as_deref(), budget), (Some("id-2b0c-op"), 10_000));
    assert!(elapsed >= budget);
    assert!(fake.removed().is_empty(), "left to the host's cleanup");

    let mut fake = Fake::new(Create::StoreAndHang);
    (fake.preparing, fake.ready_after) = (true, None);
    let e = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap_err();
    assert_eq!(envelope(&e).2, 60_000, "the budget ends a resource that keeps preparing");
}

#[tokio::test(start_paused = true)]
async fn a_failed_create_is_compensated_and_answered_early() {
    let fake = Fake::new(Create::StoreAndFail);
    let e = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap_err();
    assert!(e.message().contains("cleanup was confirmed"), "{}", e.message());
    assert_eq!(fake.removed(), ["id-2b0c-op"]);
    let (observed, elapsed, budget) = envelope(&e);
    assert_eq!(observed.as_deref(), Some("id-2b0c-op"));
    assert!(elapsed < budget, "an early failure is not transient");

    let mut fake = Fake::new(Create::StoreAndFail);
    fake.foreign = true;
    let e = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap_err();
    assert!(fake.removed().is_empty(), "a resource without the labels is never touched");
    assert_eq!(envelope(&e).0, None);
}

#[tokio::test(start_paused = true)]
async fn compensation_is_bounded_by_the_cleanup_window() {
    // Before the window, a backend silent after a failed create held the answer forever: the
    // host had stopped listening long before the cleanup envelope was written.
    let window = Duration::from_secs(7);
    let plan = CreationPlan::new(BUDGET, "container").with_cleanup_window(window);
    assert_eq!(CreationPlan::new(BUDGET, "x").cleanup_window, DEFAULT_CLEANUP_WINDOW);

    let mut fake = Fake::new(Create::StoreAndFail);
    fake.hang_lookups = true;
    let started = Instant::now();
    let e = create_bounded(&fake, &attempt(), &plan).await.unwrap_err();
    assert_eq!(started.elapsed(), window, "the lookup is given up at the window");
    assert!(e.message().contains("did not answer within the cleanup window"), "{}", e.message());
    assert_eq!(envelope(&e).0, None, "nothing was observed");

    let mut fake = Fake::new(Create::StoreAndFail);
    fake.hang_removals = true;
    let started = Instant::now();
    let e = create_bounded(&fake, &attempt(), &plan).await.unwrap_err();
    assert_eq!(started.elapsed(), window, "the removal is given up at the window");
    assert!(e.message().contains("removing the allocated container did not answer"));
    assert_eq!(envelope(&e).0.as_deref(), Some("id-2b0c-op"), "the observed id is reported");
    assert!(fake.removed().is_empty());

    // At the budget: the window starts when the attempt ends, not when it started.
    let mut fake = Fake::new(Create::StoreAndHang);
    fake.hang_lookups = true;
    let started = Instant::now();
    let e = create_bounded(&fake, &attempt(), &plan).await.unwrap_err();
    assert_eq!(started.elapsed(), BUDGET + window);
    let (_, elapsed, budget) = envelope(&e);
    assert!(elapsed >= budget, "a deadline-expired attempt stays transient");
}

#[tokio::test(start_paused = true)]
async fn a_refusal_is_a_plain_error_and_a_conflict_adopts_only_its_own_attempt() {
    let fake = Fake::new(Create::Refuse);
    let e = create_bounded(&fake, &attempt(), &remote_plan()).await.unwrap_err();
    assert!(e.to_error_object("environmentAcquireLease").data.is_none());
    assert!(e.message().starts_with("Sandbox creation refused"));

    let fake = Fake::new(Create::Conflict);
    fake.store(&attempt());
    let plan = CreationPlan::new(BUDGET, "container");
    assert_eq!(create_bounded(&fake, &attempt(), &plan).await.unwrap().id, "id-2b0c-op");

    let mut fake = Fake::new(Create::Conflict);
    fake.foreign = true;
    fake.store(&attempt());
    let e = create_bounded(&fake, &attempt(), &plan).await.unwrap_err();
    assert!(e.message().starts_with("Container creation refused"), "{}", e.message());
    assert!(fake.removed().is_empty());
}

#[tokio::test(start_paused = true)]
async fn with_removal_on_failure_a_failed_or_late_resource_is_removed() {
    let plan = CreationPlan::new(BUDGET, "container");
    let mut fake = Fake::new(Create::AnswerAfter(Duration::ZERO));
    fake.failed = true;
    let e = create_bounded(&fake, &attempt(), &plan).await.unwrap_err();
    assert!(e.message().starts_with("Container acquisition failed"), "{}", e.message());
    assert_eq!(fake.removed(), ["id-2b0c-op"]);

    let mut fake = Fake::new(Create::AnswerAfter(Duration::ZERO));
    fake.ready_after = None;
    let e = create_bounded(&fake, &attempt(), &plan).await.unwrap_err();
    assert!(e.message().starts_with("Container acquisition timed out"), "{}", e.message());
    assert_eq!(fake.removed(), ["id-2b0c-op"]);
    let (_, elapsed, budget) = envelope(&e);
    assert!(elapsed >= budget && budget == 60_000);
}

fn record(observed: Option<&str>) -> Ownership {
    attempt().ownership(observed).unwrap()
}

#[tokio::test(start_paused = true)]
async fn destroying_a_failed_create_removes_only_what_was_observed_and_owned() {
    let fp = "f".repeat(64);
    let fake = Fake::new(Create::Hang);
    fake.store(&attempt());
    // Only the creation name: looked up, answered with its observed id, nothing removed.
    let e = destroy_failed_create(&fake, "paperclip-create-2b0c-op", record(None), &fp, "box")
        .await
        .unwrap_err();
    let data = e.to_error_object("environmentDestroyLease").data.unwrap();
    assert_eq!(data["cleanup"]["observedProviderLeaseId"], "id-2b0c-op");
    assert!(fake.removed().is_empty());
    // Another account: refused.
    let e = destroy_failed_create(&fake, "x", record(None), &"0".repeat(64), "box").await;
    assert!(e.unwrap_err().message().contains("another account"));
    // With the observed id: removed; again: already gone, destroyed.
    for _ in 0..2 {
        let receipt =
            destroy_failed_create(&fake, "lease", record(Some("id-2b0c-op")), &fp, "box").await;
        assert!(receipt.unwrap().is_some());
    }
    assert_eq!(fake.removed(), ["id-2b0c-op"]);
    // Nothing under the name: unresolved, still the envelope.
    let e = destroy_failed_create(&fake, "lease", record(None), &fp, "box").await.unwrap_err();
    let data = e.to_error_object("environmentDestroyLease").data.unwrap();
    assert_eq!(data["cleanup"]["observedProviderLeaseId"], Value::Null);
    // Foreign labels under the observed id: nothing removed.
    let mut fake = Fake::new(Create::Hang);
    fake.foreign = true;
    fake.store(&attempt());
    let e = destroy_failed_create(&fake, "lease", record(Some("id-2b0c-op")), &fp, "box").await;
    assert!(e.unwrap_err().message().contains("nothing was deleted"));
    assert!(fake.removed().is_empty());
}

#[test]
fn cleanup_records_are_read_from_lease_metadata() {
    assert_eq!(failed_create_cleanup(None).unwrap(), None);
    let mut m = JsonObject::new();
    m.insert(FAILED_CREATE_CLEANUP.into(), record(None).to_json());
    assert_eq!(failed_create_cleanup(Some(&m)).unwrap(), Some(record(None)));
    m.insert(FAILED_CREATE_CLEANUP.into(), Value::from(3));
    assert!(failed_create_cleanup(Some(&m)).is_err());
}
