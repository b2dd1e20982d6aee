//! Example Paperclip sandbox provider for a Daytona-shaped HTTP sandbox API.
//!
//! It implements the behaviour of the Daytona plugin described in seed 001 (PR #20828) and
//! the creation-cleanup, stop and acquisition-budget rules against the API of [`api`]:
//!
//! * **Fresh acquisition** ([`acquire`]): a creation name `paperclip-create-<id>` from the
//!   host's `creationOperation` and ownership labels; a cap (default 180 s) with a lookup by
//!   creation name after the lookup delay (default 90 s); the cleanup envelope with an
//!   acquisition diagnostic when an attempt ends; no compensating delete of an adopted sandbox.
//! * **Destroy with observation, release, resume, stop-only preservation** ([`lifecycle`]).
//! * **Execute** through `POST /sandbox/{id}/exec`; **probe** through `GET /health`;
//!   **validateConfig**: the typed [`config::RemoteConfig`] (the SDK answers a config that does
//!   not fit) and [`config::RemoteConfig::check`].
//!
//! The API key (`apiKey`, a [`Secret`]) only
//! ever travels in the `Authorization` header: it is in no error, envelope, metadata, log
//! line or `Debug` output. The account fingerprint of the envelope is a SHA-256 of the base
//! URL and the key.

use std::time::Duration;

use paperclip_sandbox_sdk::output::OutputCollector;
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::methods::CarriesConfig;

pub mod acquire;
pub mod api;
pub mod config;
pub mod lifecycle;

use api::{ApiClient, ExecRequest};
use config::RemoteConfig;

/// The provider: one shared HTTP connection pool; the account comes with each call's config.
///
/// Its plugin manifest is derived ([`PluginManifest`]; `remote-provider --manifest
/// [--profile …]` prints it) and checked when the crate compiles against the hooks of the
/// `#[provider]` block below (reusableLeases: resume, release and destroy). The config schema
/// comes from [`RemoteConfig`], the hooks' typed config. For `paperclip-2026-11` hosts the driver declares
/// `defaultAcquireTimeoutMs` 300,000 (the host's whole acquisition budget, seed 000; one fresh
/// attempt is capped lower by `acquireCapMs`) and `creationOperationVersion` 1; the September
/// host's strict schema rejects both, so its manifest leaves them out.
#[derive(Debug, Clone, Default, PluginManifest)]
#[plugin(
    id = "paperclip-remote-provider",
    display_name = "Remote sandbox provider",
    description = "Example Paperclip sandbox provider for a Daytona-shaped HTTP sandbox API",
    author = "paperclip-sandbox developers"
)]
#[driver(
    key = "remote",
    display_name = "Remote sandbox API",
    description = "Sandboxes of a Daytona-shaped HTTP API",
    config = RemoteConfig,
    capabilities(reusableLeases),
    default_acquire_timeout_ms = 300_000,
    creation_operation_version = 1
)]
pub struct RemoteProvider {
    http: reqwest::Client,
}

impl RemoteProvider {
    /// A provider with a fresh connection pool.
    pub fn new() -> Self {
        RemoteProvider::default()
    }
}

/// The backend of one account (a config): its API client and its config. The SDK opens it
/// with `connect` for the first call of a config, shares it with the later calls of the same
/// config and drops it when the host sends `configChanged`.
#[derive(Debug)]
pub struct Account {
    client: ApiClient,
    config: RemoteConfig,
}

impl Account {
    /// The account's client, its requests bounded by the deadline of the call `cx` serves.
    fn client(&self, cx: &Context) -> ApiClient {
        self.client.clone().with_deadline(cx.call_deadline())
    }
}

#[paperclip_sandbox_sdk::provider]
impl SandboxProvider for RemoteProvider {
    type Backend = Account;

    /// The account of `config`, once the rule across keys holds.
    async fn connect(&self, config: &RemoteConfig) -> HookResult<Account> {
        config.check().map_err(ProviderError::invalid_params)?;
        let http = api::http_client_for(&self.http, config.ca_file.as_deref())
            .map_err(ProviderError::invalid_params)?;
        let timeout = config.request_timeout();
        let client = ApiClient::new(http, &config.base_url, config.api_key.clone(), timeout);
        Ok(Account { client, config: config.clone() })
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams<RemoteConfig>,
    ) -> HookResult<ValidateConfigResult> {
        Ok(match params.config.check() {
            Ok(()) => ValidateConfigResult::valid(),
            Err(error) => ValidateConfigResult::invalid([error]),
        })
    }

    async fn probe(
        &self,
        params: ProbeParams<RemoteConfig>,
        cx: Context,
    ) -> HookResult<ProbeResult> {
        // A config the account cannot be opened from is the probe's finding, not its error:
        // the probe opens the account itself rather than taking the cached backend.
        let account = match self.connect(params.config()).await {
            Ok(account) => account,
            Err(e) => {
                let diagnostic = Diagnostic::new(DiagnosticSeverity::Error, e.message())
                    .with_code("invalid_config");
                return Ok(ProbeResult::new(false).with_diagnostic(diagnostic));
            }
        };
        Ok(match account.client(&cx).health().await {
            Ok(()) => ProbeResult::new(true).with_summary("The sandbox API is reachable"),
            Err(e) => ProbeResult::new(false)
                .with_summary("The sandbox API is not reachable")
                .with_diagnostic(
                    Diagnostic::new(DiagnosticSeverity::Error, e.to_string())
                        .with_code("unreachable"),
                ),
        })
    }

    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams<RemoteConfig>,
        account: &Account,
        cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        acquire::acquire(&account.client(&cx), &account.config, &params).await
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<RemoteConfig>,
        account: &Account,
        cx: Context,
    ) -> HookResult<ResumeLeaseResult> {
        lifecycle::resume(&account.client(&cx), &account.config, &params).await
    }

    async fn release_lease(
        &self,
        params: ReleaseLeaseParams<RemoteConfig>,
        account: &Account,
        cx: Context,
    ) -> HookResult<Released> {
        lifecycle::release(&account.client(&cx), &account.config, &params).await.map(Released::from)
    }

    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams<RemoteConfig>,
        account: &Account,
        cx: Context,
    ) -> HookResult<Destroyed> {
        lifecycle::destroy(&account.client(&cx), &account.config, &params)
            .await
            .map(Destroyed::from)
    }

    async fn stop_lease(
        &self,
        params: StopLeaseParams<RemoteConfig>,
        account: &Account,
        cx: Context,
    ) -> HookResult<StopLeaseResult> {
        lifecycle::stop_lease(&account.client(&cx), &account.config, &params).await
    }

    async fn execute(
        &self,
        params: ExecuteParams<RemoteConfig>,
        account: &Account,
        cx: Context,
    ) -> HookResult<ExecuteResult> {
        let (client, config) = (account.client(&cx), &account.config);
        let id = params.lease.required_id()?;
        let request = ExecRequest {
            command: params.command.clone(),
            args: params.args.clone().unwrap_or_default(),
            cwd: params.cwd.clone(),
            env: params.env.clone(),
            stdin: params.stdin.clone(),
            timeout_ms: params.timeout_ms,
        };
        // The command's own timeout plus a margin; without one, the host's RPC deadline rules.
        let timeout = match params.timeout_ms {
            Some(ms) => Duration::from_millis(ms) + config.request_timeout(),
            None => Duration::from_secs(86_400),
        };
        let answer = client.exec(id, &request, timeout).await.map_err(|e| match e {
            api::ApiError::Transport { .. } => {
                ProviderError::worker(format!("The sandbox API is not reachable: {e}"))
            }
            e => ProviderError::worker(format!("Running the command failed: {e}")),
        })?;
        // The API answers the whole output at once: the SDK's collector streams it and bounds
        // the result by its encoded size against the host's line limit.
        let mut output = OutputCollector::new();
        let mut sink = &cx;
        output.feed(&mut sink, OutputStream::Stdout, answer.stdout.as_bytes()).await;
        output.feed(&mut sink, OutputStream::Stderr, answer.stderr.as_bytes()).await;
        if answer.timed_out {
            output.mark_timed_out();
        }
        let killed = !answer.timed_out && answer.exit_code.is_none();
        let signal = killed.then(|| "SIGKILL".to_owned());
        let exit_code = answer.exit_code.filter(|_| !answer.timed_out);
        Ok(output.finish(&mut sink).await.into_execute_result(exit_code, signal))
    }
}
