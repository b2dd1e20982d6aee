//! Creation attempts: how a provider creates a backend resource (a container, a Pod, a remote
//! sandbox) so that no resource is ever lost or deleted by mistake.
//!
//! * Every fresh acquisition is a [`CreationAttempt`]: the resource is created under the
//!   creation name `paperclip-create-<creationOperation.id>` (a generated UUID when the host
//!   sent no creation operation) and carries ownership labels naming the attempt, the provider,
//!   the company, the environment, the run and the reuse policy. Those labels are what every
//!   later lookup trusts: a resource under the name without them is never touched.
//! * [`create_bounded`] runs the attempt over a [`CreationBackend`] (create, inspect by name,
//!   remove, and a readiness check): the create call runs in its own task, bounded by the
//!   acquisition budget; with a lookup delay, a create that has not answered by then is
//!   resolved by one lookup by name — an owned resource is adopted, a resource still preparing
//!   keeps the attempt waiting, anything else ends it with the creation-cleanup envelope and an
//!   acquisition diagnostic (an expired deadline reports `elapsedMs >= budgetMs`, which the
//!   host classifies as transient; an early failure reports less). A resource once adopted is
//!   never deleted by the attempt, whatever the create call answers later. A refusal (the
//!   backend's 4xx) allocated nothing and is a plain error. The compensation of a failed
//!   attempt (lookup by name, removal of an owned resource) has its own bound, the plan's
//!   [`cleanup_window`](CreationPlan::cleanup_window): a backend that stops answering then
//!   cannot hold the answer past the time the host still listens.
//! * [`destroy_failed_create`] resolves the host's `failedCreateCleanup` record on destroy:
//!   with an observed id, the resource is removed once its labels match; with only the creation
//!   name, the name is looked up and nothing is deleted (the answer names what was observed, or
//!   stays unresolved — a name not found is no proof that nothing was created).
//!
//! The contract's words: upstream's "Sandbox provider plugins" documentation, section
//! "Creation attempts and cleanup".

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use paperclip_sandbox_protocol::envelope::{
    AcquisitionDiagnostic, AcquisitionPhase, Ownership, OwnershipError, OwnershipFields,
};
use paperclip_sandbox_protocol::methods::lease::{
    AcquireLeaseParams, CreationOperation, JsonObject, LeasePolicy, TerminationReceipt,
};
use tokio::time::{sleep_until, timeout_at, Instant};

use crate::ProviderError;

/// Label: which provider made the resource.
pub const LABEL_PROVIDER: &str = "paperclip-provider";
/// Label: the company.
pub const LABEL_COMPANY: &str = "paperclip-company-id";
/// Label: the environment.
pub const LABEL_ENVIRONMENT: &str = "paperclip-environment-id";
/// Label: the run.
pub const LABEL_RUN: &str = "paperclip-run-id";
/// Label: `"true"` for a reusable lease (`leasePolicy: reuse_by_environment`).
pub const LABEL_REUSE: &str = "paperclip-reuse-lease";
/// The lease-metadata key under which the host hands a creation-cleanup record back.
pub const FAILED_CREATE_CLEANUP: &str = "failedCreateCleanup";

/// A version-4 UUID (lowercase, hyphenated) from the kernel's random source.
pub fn generate_uuid() -> String {
    let hex = super::random_hex(16);
    let mut b: Vec<char> = hex.chars().collect();
    b[12] = '4';
    b[16] = ['8', '9', 'a', 'b'][(b[16].to_digit(16).unwrap_or(0) & 3) as usize];
    let s: String = b.into_iter().collect();
    format!("{}-{}-{}-{}-{}", &s[..8], &s[8..12], &s[12..16], &s[16..20], &s[20..])
}

/// One fresh creation: who asked, under which name, with which labels.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreationAttempt {
    /// The creation-operation id (`creationOperation.id`, or a generated UUID).
    pub id: String,
    /// `paperclip-create-<id>`.
    pub creation_name: String,
    /// The value of the [`LABEL_PROVIDER`] label.
    pub provider: String,
    /// The company.
    pub company_id: String,
    /// The environment.
    pub environment_id: String,
    /// The run.
    pub run_id: String,
    /// Whether the lease is reusable (`leasePolicy: reuse_by_environment`).
    pub reusable: bool,
    /// The non-secret fingerprint of the backend account the resource is created in (which
    /// engine, cluster or credentials a cleanup record names).
    pub account_fingerprint: String,
}

impl CreationAttempt {
    /// The attempt of an acquisition by `provider` (the [`LABEL_PROVIDER`] value) in the
    /// account with `account_fingerprint`: the host's creation operation, or a fresh UUID.
    pub fn for_acquire<C>(
        params: &AcquireLeaseParams<C>,
        provider: &str,
        account_fingerprint: String,
    ) -> Self {
        let id = match &params.creation_operation {
            Some(op) => op.id.clone(),
            None => generate_uuid(),
        };
        CreationAttempt {
            creation_name: CreationOperation::new(1, id.clone()).creation_name(),
            id,
            provider: provider.to_owned(),
            company_id: params.base.company_id.clone(),
            environment_id: params.base.environment_id.clone(),
            run_id: params.run_id.clone(),
            reusable: params.lease_policy == Some(LeasePolicy::ReuseByEnvironment),
            account_fingerprint,
        }
    }

    /// The ownership labels set at creation, with their exact values, in envelope order.
    pub fn labels(&self) -> Vec<(String, String)> {
        [
            (CreationOperation::ATTEMPT_LABEL, self.id.as_str()),
            (LABEL_PROVIDER, self.provider.as_str()),
            (LABEL_COMPANY, self.company_id.as_str()),
            (LABEL_ENVIRONMENT, self.environment_id.as_str()),
            (LABEL_RUN, self.run_id.as_str()),
            (LABEL_REUSE, if self.reusable { "true" } else { "false" }),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The ownership envelope of this attempt; `observed` is a resource id seen carrying its
    /// labels. Fails when a value the host sent is not an identifier.
    pub fn ownership(&self, observed: Option<&str>) -> Result<Ownership, OwnershipError> {
        Ownership::new(OwnershipFields {
            provider_lease_id: self.creation_name.clone(),
            observed_provider_lease_id: observed.map(str::to_owned),
            company_id: self.company_id.clone(),
            environment_id: self.environment_id.clone(),
            run_id: Some(self.run_id.clone()),
            attempt_id: self.id.clone(),
            account_fingerprint: self.account_fingerprint.clone(),
            labels: self.labels(),
        })
    }

    /// True when a resource named `name` whose label `k` reads `label(k)` is this attempt's.
    pub fn owns<'a>(&self, name: Option<&str>, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        name == Some(self.creation_name.as_str())
            && self.labels().iter().all(|(k, v)| label(k) == Some(v.as_str()))
    }

    /// The creation-cleanup error of this attempt: `message`, the ownership envelope naming
    /// `observed`, and the acquisition diagnostic ([`acquisition_diagnostic`]). A plain error
    /// when the ownership cannot be expressed (a host value that is not an identifier).
    pub fn cleanup_error(
        &self,
        message: String,
        observed: Option<&str>,
        elapsed: Duration,
        budget: Duration,
        deadline_expired: bool,
    ) -> ProviderError {
        match self.ownership(observed.filter(|s| !s.is_empty())) {
            Ok(ownership) => ProviderError::creation_cleanup(
                message,
                ownership,
                acquisition_diagnostic(elapsed, budget, deadline_expired),
            ),
            Err(e) => {
                tracing::error!(error = %e, "the ownership envelope cannot be built; sending a plain error");
                ProviderError::worker(message)
            }
        }
    }
}

/// True when a resource named `name` whose label `k` reads `label(k)` carries the creation
/// name and every label of `ownership` (a record the host handed back).
pub fn ownership_matches<'a>(
    ownership: &Ownership,
    name: Option<&str>,
    label: impl Fn(&str) -> Option<&'a str>,
) -> bool {
    name == Some(ownership.provider_lease_id())
        && label(CreationOperation::ATTEMPT_LABEL) == Some(ownership.attempt_id())
        && ownership.labels().iter().all(|(k, v)| label(k) == Some(v.as_str()))
}

/// The acquisition diagnostic (phase `create`) of an attempt that ended after `elapsed` with
/// `budget`: a deadline that expired reports `elapsedMs >= budgetMs` (the host classifies the
/// failure transient), an early failure its real, shorter time. `None` only for a budget the
/// contract cannot express.
pub fn acquisition_diagnostic(
    elapsed: Duration,
    budget: Duration,
    deadline_expired: bool,
) -> Option<AcquisitionDiagnostic> {
    let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    let budget_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX).clamp(1, 86_400_000);
    let elapsed_ms = match deadline_expired {
        true => elapsed_ms.max(budget_ms),
        false => elapsed_ms.min(budget_ms.saturating_sub(1)),
    };
    AcquisitionDiagnostic::new(AcquisitionPhase::Create, elapsed_ms.min(604_800_000), budget_ms)
        .ok()
}

/// The `failedCreateCleanup` record of a destroy's lease metadata, when the host sent one.
pub fn failed_create_cleanup(
    lease_metadata: Option<&JsonObject>,
) -> Result<Option<Ownership>, ProviderError> {
    let Some(record) = lease_metadata.and_then(|m| m.get(FAILED_CREATE_CLEANUP)) else {
        return Ok(None);
    };
    Ownership::parse(record).map(Some).map_err(|e| {
        ProviderError::worker(format!("leaseMetadata.failedCreateCleanup is invalid: {e}"))
    })
}

/// Where a created resource stands, as [`CreationBackend::progress`] reads it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Progress<R> {
    /// Ready to serve commands: the attempt adopts it (the freshest view of it).
    Ready(R),
    /// Still preparing in a way that may outlast the lookup delay (a snapshot being built):
    /// the attempt keeps waiting until the budget.
    Preparing,
    /// Still creating or starting: the attempt waits, but ends at the lookup delay.
    Pending,
    /// It will not become ready (failed, gone, no longer owned): the attempt ends now.
    Failed(String),
}

/// The backend of a creation attempt: create, inspect by name, remove, and how far a created
/// resource is. Cloned into the task that runs the create call.
#[async_trait]
pub trait CreationBackend: Clone + Send + Sync + 'static {
    /// A resource as the backend describes it.
    type Resource: Send + Sync + 'static;
    /// The backend's error (its message is relayed to the operator; it quotes no secret).
    type Error: fmt::Display + Send + Sync + 'static;

    /// Creates the resource under `attempt.creation_name` with `attempt.labels()`.
    async fn create(&self, attempt: &CreationAttempt) -> Result<Self::Resource, Self::Error>;
    /// The resource under `name`, if any (the creation name, or an observed id).
    async fn inspect_by_name(&self, name: &str) -> Result<Option<Self::Resource>, Self::Error>;
    /// The resource with the observed id `id` (what [`CreationBackend::resource_id`] gave);
    /// by default [`CreationBackend::inspect_by_name`].
    async fn inspect_by_id(&self, id: &str) -> Result<Option<Self::Resource>, Self::Error> {
        self.inspect_by_name(id).await
    }
    /// Removes the resource and waits until it is gone.
    async fn remove(&self, resource: &Self::Resource) -> Result<(), Self::Error>;
    /// How far `resource` is; called until it is ready, failed, or the budget ends.
    async fn progress(
        &self,
        resource: &Self::Resource,
    ) -> Result<Progress<Self::Resource>, Self::Error>;

    /// The id under which the host may name `resource` (the observed provider lease id).
    fn resource_id(&self, resource: &Self::Resource) -> String;
    /// The name of `resource`.
    fn resource_name<'a>(&self, resource: &'a Self::Resource) -> Option<&'a str>;
    /// The ownership label `key` of `resource`, with its exact value.
    fn resource_label<'a>(&self, resource: &'a Self::Resource, key: &str) -> Option<&'a str>;
    /// True when the error is a refusal (the request was rejected; nothing was allocated).
    fn is_refusal(&self, error: &Self::Error) -> bool;
    /// True when the error says the name is taken (a retry of the same attempt is adopted).
    fn is_conflict(&self, _error: &Self::Error) -> bool {
        false
    }
}

/// The bounds of one [`create_bounded`] run, and the words its messages use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreationPlan {
    /// The acquisition budget: the attempt ends here at the latest.
    pub budget: Duration,
    /// When set, a create that has not answered by then is resolved by one lookup by name,
    /// and a resource still [`Progress::Pending`] then ends the attempt.
    pub lookup_delay: Option<Duration>,
    /// The pause between two [`CreationBackend::progress`] reads.
    pub poll_interval: Duration,
    /// True: an attempt that ends at a deadline or with a readiness failure removes the
    /// resource it owns before it answers; false: it leaves that resource for the host's
    /// cleanup (the envelope names it). Either way, a create *call* that fails before anything
    /// was adopted is compensated: the name is looked up and a resource carrying this
    /// attempt's labels is removed (nothing the host could clean up was reported yet).
    pub remove_on_failure: bool,
    /// The resource in messages (`"container"`, `"sandbox"`, …).
    pub resource: &'static str,
    /// When the attempt's clock started (checks before the create count against the
    /// budget); `None`: when [`create_bounded`] is called.
    pub started: Option<Instant>,
    /// How long the compensation of a failed attempt (the lookup by name and the removal) may
    /// take once the attempt ended; a backend still silent then leaves the cleanup to the
    /// host (the envelope says so). By default [`DEFAULT_CLEANUP_WINDOW`].
    pub cleanup_window: Duration,
}

/// The default [`CreationPlan::cleanup_window`]: half of the margin the host adds to the
/// acquisition budget before it stops waiting for the answer
/// ([`RPC_OVERHEAD_BUFFER_MS`](paperclip_sandbox_protocol::timeouts::RPC_OVERHEAD_BUFFER_MS)),
/// so an attempt that ends at its budget still answers while the host listens.
pub const DEFAULT_CLEANUP_WINDOW: Duration =
    Duration::from_millis(paperclip_sandbox_protocol::timeouts::RPC_OVERHEAD_BUFFER_MS / 2);

impl CreationPlan {
    /// A plan bounded by `budget` for resources called `resource` in messages: no lookup
    /// delay, polls every 250 ms, removes an owned resource on failure.
    pub fn new(budget: Duration, resource: &'static str) -> Self {
        CreationPlan {
            budget,
            lookup_delay: None,
            poll_interval: Duration::from_millis(250),
            remove_on_failure: true,
            resource,
            started: None,
            cleanup_window: DEFAULT_CLEANUP_WINDOW,
        }
    }

    /// The same plan with another [`cleanup_window`](Self::cleanup_window).
    pub fn with_cleanup_window(mut self, window: Duration) -> Self {
        self.cleanup_window = window;
        self
    }

    /// The same plan with a lookup delay.
    pub fn with_lookup_delay(mut self, delay: Duration) -> Self {
        self.lookup_delay = Some(delay);
        self
    }

    /// The same plan with another poll interval.
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The same plan, leaving a failed attempt's resource to the host's cleanup.
    pub fn leaving_failures_to_the_host(mut self) -> Self {
        self.remove_on_failure = false;
        self
    }

    /// The same plan, its clock started at `started` (earlier checks count against the
    /// budget).
    pub fn started_at(mut self, started: Instant) -> Self {
        self.started = Some(started);
        self
    }

    fn noun(&self) -> String {
        let mut c = self.resource.chars();
        c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
    }
}

/// Why an attempt ended without a resource.
struct End {
    what: String,
    /// The deadline that expired (the lookup delay or the budget), or `None` for an early end.
    deadline: Option<Duration>,
}

/// Runs one creation attempt: see the [module documentation](self). Returns the adopted
/// resource; a refusal is a plain error, any other end the creation-cleanup envelope.
pub async fn create_bounded<B: CreationBackend>(
    backend: &B,
    attempt: &CreationAttempt,
    plan: &CreationPlan,
) -> Result<B::Resource, ProviderError> {
    let started = plan.started.unwrap_or_else(Instant::now);
    let cap_at = later(started, plan.budget);
    let lookup_at = plan.lookup_delay.map(|d| later(started, d));
    let res = plan.resource;
    tracing::info!(creation_name = %attempt.creation_name, "creating {res}");
    // Aborted when this attempt is dropped (the call was cancelled) or ends without an
    // adoption; only an adopted resource's create is left to finish, within the budget.
    let mut create = AbortOnDrop(tokio::spawn({
        let (backend, attempt) = (backend.clone(), attempt.clone());
        async move { backend.create(&attempt).await }
    }));
    let mut create_pending = true;
    let mut current: Option<B::Resource> = None;
    let owns =
        |r: &B::Resource| attempt.owns(backend.resource_name(r), |k| backend.resource_label(r, k));

    let end = loop {
        let now = Instant::now();
        let past_lookup = lookup_at.is_some_and(|t| now >= t);
        if let Some(r) = &current {
            match timeout_at(cap_at, backend.progress(r)).await {
                Ok(Ok(Progress::Ready(r))) => {
                    detach_create(create, create_pending, cap_at, backend.resource_id(&r));
                    tracing::info!(creation_name = %attempt.creation_name, elapsed_ms = started.elapsed().as_millis() as u64, "the {res} is ready");
                    return Ok(r);
                }
                Ok(Ok(Progress::Preparing)) => {}
                Ok(Ok(Progress::Pending)) if past_lookup => {
                    break End {
                        what: format!("the {res} was still starting at the lookup delay"),
                        deadline: plan.lookup_delay,
                    }
                }
                Ok(Ok(Progress::Pending)) => {}
                Ok(Ok(Progress::Failed(what))) => break End { what, deadline: None },
                Ok(Err(e)) => tracing::warn!(error = %e, "reading the {res} failed; retrying"),
                Err(_) => {}
            }
        } else if past_lookup {
            tracing::info!(creation_name = %attempt.creation_name, "create not answered; looking the name up");
            // Bounded by the budget: a backend that hangs here ends the attempt at its cap.
            let lookup = timeout_at(cap_at, backend.inspect_by_name(&attempt.creation_name));
            match lookup.await {
                Ok(Ok(Some(r))) if owns(&r) => {
                    current = Some(r);
                    continue;
                }
                Ok(Ok(Some(_))) => {
                    break End {
                        what: format!(
                        "the {res} under the creation name lacks this attempt's ownership labels"
                    ),
                        deadline: None,
                    }
                }
                Ok(Ok(None)) => {
                    break End {
                        what: format!("no {res} carried the creation name at the lookup delay"),
                        deadline: plan.lookup_delay,
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "looking the creation name up failed; retrying")
                }
                Err(_) => tracing::warn!("looking the creation name up did not answer in time"),
            }
        }
        let now = Instant::now();
        if now >= cap_at {
            break End {
                what: format!("the {res} was not ready within the acquisition budget"),
                deadline: Some(plan.budget),
            };
        }
        // Nothing to read before the lookup delay while the create has not answered: wait for
        // its answer or the lookup; otherwise poll.
        let wake = match (&current, lookup_at) {
            (Some(_), _) => now + plan.poll_interval,
            (None, Some(t)) if now >= t => now + plan.poll_interval,
            (None, Some(t)) => t,
            (None, None) => cap_at,
        }
        .min(cap_at);
        if !create_pending {
            sleep_until(wake).await;
            continue;
        }
        tokio::select! {
            answer = &mut create.0 => {
                create_pending = false;
                let error = match answer {
                    Ok(Ok(r)) => {
                        if current.is_none() {
                            current = Some(r);
                        }
                        continue;
                    }
                    Ok(Err(e)) if backend.is_conflict(&e) => {
                        if current.is_some() {
                            // Adopted by the lookup already: the conflict is that resource.
                            continue;
                        }
                        // The name is taken: a retry of this very attempt is adopted.
                        let lookup = timeout_at(cap_at, backend.inspect_by_name(&attempt.creation_name));
                        if let Ok(Ok(Some(r))) = lookup.await {
                            if owns(&r) {
                                current = Some(r);
                                continue;
                            }
                        }
                        return Err(refused(plan, &e));
                    }
                    Ok(Err(e)) if backend.is_refusal(&e) => return Err(refused(plan, &e)),
                    Ok(Err(e)) => e.to_string(),
                    Err(join) => format!("the create task ended: {join}"),
                };
                if current.is_some() {
                    // Adopted by the lookup already: a late failure changes nothing.
                    tracing::warn!(error = %error, "the create call failed after the {res} was found; keeping it");
                    continue;
                }
                let (observed, outcome) = compensate(backend, attempt, plan).await;
                let message = format!("{} creation failed: {error}; {outcome}", plan.noun());
                tracing::warn!(creation_name = %attempt.creation_name, "{message}");
                return Err(attempt.cleanup_error(message, observed.as_deref(), started.elapsed(), plan.budget, false));
            }
            _ = sleep_until(wake) => {}
        }
    };

    create.0.abort();
    let (observed, outcome) = match (plan.remove_on_failure, &current) {
        (true, _) => compensate(backend, attempt, plan).await,
        (false, r) => {
            (r.as_ref().map(|r| backend.resource_id(r)), "allocation cleanup is pending".to_owned())
        }
    };
    let kind = if end.deadline.is_some() { "timed out" } else { "failed" };
    let message = format!("{} acquisition {kind}: {}; {outcome}", plan.noun(), end.what);
    let elapsed = started.elapsed();
    tracing::warn!(creation_name = %attempt.creation_name, elapsed_ms = elapsed.as_millis() as u64, "{message}");
    let budget = end.deadline.unwrap_or(plan.budget);
    Err(attempt.cleanup_error(
        message,
        observed.as_deref(),
        elapsed,
        budget,
        end.deadline.is_some(),
    ))
}

fn refused(plan: &CreationPlan, error: &dyn fmt::Display) -> ProviderError {
    tracing::warn!(error = %error, "the backend refused the create request");
    ProviderError::worker(format!("{} creation refused: {error}", plan.noun()))
}

/// A task aborted when its handle is dropped: a cancelled attempt leaves no create running.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `start + d`, or a far instant when that overflows (a budget of `Duration::MAX`).
fn later(start: Instant, d: Duration) -> Instant {
    start.checked_add(d).unwrap_or_else(|| start + Duration::from_secs(86_400 * 365 * 30))
}

/// After an adoption the create call may still run: let it finish, until the attempt's cap at
/// the latest, and only log a late failure. It never triggers a compensating delete.
fn detach_create<T: Send + 'static, E: fmt::Display + Send + 'static>(
    create: AbortOnDrop<Result<T, E>>,
    pending: bool,
    cap_at: Instant,
    adopted: String,
) {
    if !pending {
        return;
    }
    tokio::spawn(async move {
        let mut create = create;
        match timeout_at(cap_at, &mut create.0).await {
            Ok(Ok(Err(e))) => {
                tracing::warn!(resource = %adopted, error = %e, "the create call failed after the resource was adopted; keeping it");
            }
            Err(_) => {
                tracing::warn!(resource = %adopted, "the create call had not answered at the budget; abandoning it");
            }
            Ok(_) => {}
        }
        // Dropping `create` aborts a create still running.
    });
}

/// Looks the creation name up and removes a resource carrying the attempt's labels, both
/// within the plan's cleanup window: the observed id and what happened, for the message.
async fn compensate<B: CreationBackend>(
    backend: &B,
    attempt: &CreationAttempt,
    plan: &CreationPlan,
) -> (Option<String>, String) {
    let res = plan.resource;
    let by = later(Instant::now(), plan.cleanup_window);
    let late = "did not answer within the cleanup window; cleanup is pending";
    match timeout_at(by, backend.inspect_by_name(&attempt.creation_name)).await {
        Ok(Ok(Some(r)))
            if attempt.owns(backend.resource_name(&r), |k| backend.resource_label(&r, k)) =>
        {
            let outcome = match timeout_at(by, backend.remove(&r)).await {
                Ok(Ok(())) => format!("the allocated {res} was removed (cleanup was confirmed)"),
                Ok(Err(e)) => {
                    format!("removing the allocated {res} failed ({e}); cleanup is pending")
                }
                Err(_) => format!("removing the allocated {res} {late}"),
            };
            (Some(backend.resource_id(&r)), outcome)
        }
        Ok(Ok(Some(_))) => (
            None,
            format!(
                "the creation name is held by a {res} without this attempt's labels; cleanup is \
                 pending"
            ),
        ),
        Ok(Ok(None)) => (None, format!("no {res} carries the creation name; cleanup is pending")),
        Ok(Err(e)) => {
            (None, format!("looking the creation name up failed ({e}); cleanup is pending"))
        }
        Err(_) => (None, format!("looking the creation name up {late}")),
    }
}

/// `environmentDestroyLease` with a `failedCreateCleanup` record ([`failed_create_cleanup`]):
/// refuses a record of another account (`account_fingerprint` differs); with an observed id,
/// removes that resource once it carries the record's labels (a missing one is destroyed);
/// with only the creation name, looks it up and deletes nothing — an owned resource is
/// answered as a cleanup envelope naming its observed id, no resource as an unresolved one.
pub async fn destroy_failed_create<B: CreationBackend>(
    backend: &B,
    lease_id: &str,
    ownership: Ownership,
    account_fingerprint: &str,
    resource: &str,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    if ownership.account_fingerprint() != account_fingerprint {
        return Err(ProviderError::worker(
            "The creation-cleanup record names another account; nothing was deleted",
        ));
    }
    let matches = |r: &B::Resource| {
        ownership_matches(&ownership, backend.resource_name(r), |k| backend.resource_label(r, k))
    };
    if let Some(observed) = ownership.observed_provider_lease_id() {
        let current = backend.inspect_by_id(observed).await.map_err(|e| {
            ProviderError::worker(format!("Reading the observed {resource} failed: {e}"))
        })?;
        if let Some(r) = current {
            if !matches(&r) {
                return Err(ProviderError::worker(format!(
                    "The observed {resource} no longer carries the creation's ownership labels; \
                     nothing was deleted"
                )));
            }
            backend.remove(&r).await.map_err(|e| {
                ProviderError::worker(format!("Removing the observed {resource} failed: {e}"))
            })?;
        }
        return Ok(Some(TerminationReceipt::destroyed(lease_id)));
    }
    let name = ownership.provider_lease_id().to_owned();
    match backend.inspect_by_name(&name).await {
        Ok(Some(r)) if matches(&r) => {
            let id = backend.resource_id(&r);
            tracing::info!(creation_name = %name, observed = %id, "creation observed; not deleting");
            let observed = ownership
                .with_observed_provider_lease_id(id)
                .map_err(|e| ProviderError::worker(format!("The observed id is unusable: {e}")))?;
            Err(ProviderError::creation_cleanup(
                format!(
                    "Creation observed: a {resource} carries the creation name; destroy it by its \
                     observed id"
                ),
                observed,
                None,
            ))
        }
        Ok(Some(_)) => Err(ProviderError::worker(format!(
            "The creation name is held by a {resource} without matching ownership labels; nothing \
             was deleted"
        ))),
        Ok(None) => Err(ProviderError::creation_cleanup(
            format!(
                "No {resource} carries the creation name; that is not proof of removal, cleanup \
                 stays unresolved"
            ),
            ownership,
            None,
        )),
        Err(e) => Err(ProviderError::creation_cleanup(
            format!("Looking the creation name up failed: {e}"),
            ownership,
            None,
        )),
    }
}

#[cfg(test)]
#[path = "creation_tests.rs"]
mod tests;
