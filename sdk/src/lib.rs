//! Write a Paperclip sandbox-provider plugin worker in Rust.
//!
//! The host spawns the worker and speaks JSON-RPC 2.0 over NDJSON on its stdin and stdout.
//! This crate is the worker side: implement [`SandboxProvider`], declare the
//! plugin manifest with [`#[derive(PluginManifest)]`](macro@PluginManifest), hand the provider
//! to [`run_plugin`], and the runtime does the rest.
//!
//! A complete provider, `dir-provider`: each lease is a fresh directory, commands run in it.
//! It is the provider of the book's [Quick start] (which explains it line by line, runs the
//! conformance harness on it and packages it), in a crate with two dependencies:
//! `cargo add paperclip-sandbox-sdk` and `cargo add tokio --features fs`. A test keeps the
//! two copies equal, and the Quick start's own test builds it in such a crate and runs the
//! harness on it, which passes.
//!
//! [Quick start]: https://github.com/paperclip-sandbox/paperclip-sandbox/blob/main/book/src/quick-start.md
//!
//! ```no_run
//! use std::path::PathBuf;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use paperclip_sandbox_sdk::prelude::*;
//! use paperclip_sandbox_sdk::process::LocalCommand;
//!
//! /// Each lease is a directory `<root>/lease-…`. The derive writes the plugin manifest.
//! #[derive(PluginManifest)]
//! #[plugin(id = "acme.dir-provider", display_name = "Dir provider", author = "Acme",
//!     description = "Runs commands in a fresh temporary directory per lease.")]
//! #[driver(key = "dir", display_name = "Temporary directory")]
//! struct DirProvider { root: PathBuf, next: AtomicU64 }
//!
//! impl DirProvider {
//!     /// The directory of a lease id this provider issued. An id is never trusted as a path.
//!     fn lease_dir(&self, id: &str) -> HookResult<PathBuf> {
//!         let ours = id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
//!         (ours && id.starts_with("lease-")).then(|| self.root.join(id))
//!             .ok_or_else(|| ProviderError::invalid_params("not a lease of dir-provider"))
//!     }
//! }
//!
//! #[provider]
//! impl SandboxProvider for DirProvider {
//!     async fn validate_config(&self, p: ValidateConfigParams) -> HookResult<ValidateConfigResult> {
//!         Ok(ValidateConfigResult::valid().with_normalized_config(p.config))
//!     }
//!
//!     async fn probe(&self, _: ProbeParams) -> HookResult<ProbeResult> {
//!         tokio::fs::create_dir_all(&self.root).await?;
//!         Ok(ProbeResult::ok().with_summary("temporary directories are available"))
//!     }
//!
//!     async fn acquire_lease(&self, _: AcquireLeaseParams) -> HookResult<Lease> {
//!         let id = format!("lease-{}-{}", std::process::id(), self.next.fetch_add(1, Ordering::Relaxed));
//!         let dir = self.root.join(&id);
//!         tokio::fs::create_dir_all(&dir).await?;
//!         // The host runs commands that name no `cwd` in `remoteCwd`, and syncs files under it.
//!         Ok(Lease::new(id).with_remote_cwd(dir.to_string_lossy()))
//!     }
//!
//!     async fn realize_workspace(&self, p: RealizeWorkspaceParams) -> HookResult<RealizeWorkspaceResult> {
//!         let dir = self.lease_dir(p.lease.required_id()?)?;
//!         Ok(RealizeWorkspaceResult::new(dir.to_string_lossy()))
//!     }
//!
//!     async fn execute(&self, params: ExecuteParams, cx: Context) -> HookResult<ExecuteResult> {
//!         let dir = self.lease_dir(params.lease.required_id()?)?;
//!         dir.is_dir().then_some(()).ok_or_else(|| ProviderError::invalid_params("lease gone"))?;
//!         let mut command = LocalCommand::new(&params.command);
//!         command.args(params.args()).env("HOME", &dir).envs(params.env.iter().flatten());
//!         command.current_dir(params.cwd.as_deref().map_or(dir, PathBuf::from));
//!         command.stdin(params.stdin.clone().unwrap_or_default()).timeout(params.timeout());
//!         Ok(command.execute(&cx).await?)
//!     }
//!
//!     async fn release_lease(&self, p: ReleaseLeaseParams, cx: Context) -> HookResult<Released> {
//!         // Leases of this provider are never kept: releasing one destroys it.
//!         self.destroy_lease(p, cx).await
//!     }
//!
//!     async fn destroy_lease(&self, p: DestroyLeaseParams) -> HookResult<DestroyLeaseResult> {
//!         let Some(id) = p.lease_id() else { return Ok(Released::done()) };
//!         match tokio::fs::remove_dir_all(self.lease_dir(id)?).await {
//!             Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
//!             _ => Ok(Released::destroyed(id)),
//!         }
//!     }
//!
//!     async fn shutdown(&self, _: ShutdownParams) -> HookResult<()> {
//!         let _ = tokio::fs::remove_dir_all(&self.root).await;
//!         Ok(())
//!     }
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     paperclip_sandbox_sdk::init_tracing();
//!     let root = std::env::temp_dir().join(format!("dir-provider-{}", std::process::id()));
//!     // Serves the host on stdin/stdout; `dir-provider --manifest` prints the manifest instead.
//!     paperclip_sandbox_sdk::run_plugin(DirProvider { root, next: AtomicU64::new(0) })
//! }
//! ```
//!
//! # Design
//!
//! * **`supportedMethods` cannot drift.** [`#[provider]`](macro@provider) reads the hooks written in
//!   the impl block, maps each to its wire name through the protocol crate's constants, and
//!   generates [`SandboxProvider::implemented_methods`] from them; a method that is not a hook
//!   is a compile error at its name. The runtime serves exactly the listed hooks (`-32004`
//!   for any other known method, `-32601` for unknown ones) and advertises exactly them, as the
//!   upstream SDK does (`health` and `shutdown` are answered without a hook, but advertised only
//!   with one). The macro also applies `#[async_trait]`.
//! * **The manifest cannot lie.** [`#[derive(PluginManifest)]`](macro@PluginManifest) writes
//!   the manifest from attributes, checks them with the protocol crate's validator and
//!   capability table while the provider compiles, and refuses a declared capability whose
//!   required methods the `#[provider]` block does not implement (through
//!   [`ImplementedHooks`], a constant the attribute emits). [`run_plugin`] answers
//!   `--manifest [--profile …]` ([`cli`]); [`manifest_module`] writes the
//!   `manifest.js` the host installs.
//! * **The runtime is layers** (internal): a cancellation-safe line reader with a frame cap,
//!   one writer task that batches frames and flushes once per batch, a dispatcher that runs
//!   requests concurrently (bounded; the reader never waits for capacity) and notifications in
//!   order, and a peer for worker→host calls with its own ids. Params are deserialized
//!   straight from the raw line into the hook's params type, and results serialized once.
//! * **stdout is the protocol.** [`Worker::serve_stdio`] moves frames to a private duplicate
//!   of fd 1 and points fd 1 at stderr, so a stray `println!` cannot corrupt the stream. The
//!   SDK logs through `tracing` to stderr ([`init_tracing`]). Likewise it reads frames from a
//!   private duplicate of fd 0 and points fd 0 at `/dev/null`, so spawned commands never
//!   inherit the host's input; pipes and sockets are then served through epoll, not the
//!   blocking pool.
//! * **One thread by default.** [`run`] and [`Worker::run_stdio`] serve on a current-thread
//!   runtime ([`Worker::worker_threads`] for more): the reader, the writer and the hooks
//!   then hand off to each other without cross-thread wake-ups. Hooks must not block the
//!   thread (use `tokio::task::spawn_blocking` for blocking work, as in any async code).
//! * **Errors carry no free-form data** ([`ProviderError`]).
//! * **Ending.** `shutdown` is answered, flushed, in-flight contexts are cancelled (hooks get
//!   [`Worker::shutdown_grace`] to end and kill what they started) and the process exits 0.
//!   When the host is gone (stdin EOF, `EPIPE` on stdout) or `SIGTERM`/`SIGINT` arrives
//!   (on Linux the worker gets `SIGTERM` when its parent dies), the same shutdown runs without
//!   an answer. Either way every command started with [`process::LocalCommand`] ends, and
//!   those commands die with the worker even if it is killed ([`process`]).
//!
//! [`testing`] drives a provider in process ([`testing::TestClient`]) or as a spawned binary
//! ([`testing::WorkerProcess`]).

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Duration;

pub use async_trait::async_trait;
pub use paperclip_sandbox_macros::{provider, PluginManifest};
pub use paperclip_sandbox_protocol as protocol;
pub use schemars;

pub mod backend;
mod book;
pub mod cli;
// One public path per item: these modules are private and their public items are re-exported
// here, at the root; the modules that stay public export nothing twice.
mod context;
mod deadline;
mod error;
mod hook;
pub(crate) mod idle;
pub mod kit;
mod manifest;
pub mod output;
pub mod private_dir;
pub mod process;
mod provider;
mod runtime;
pub mod services;
mod streams;
pub mod testing;

pub use backend::Connect;
pub use context::{CancellationSource, CancellationToken, Context};
pub use deadline::{Deadline, DeadlineExceeded};
pub use error::{describe_json_error, ProviderError};
pub use hook::IntoProviderError;
pub use manifest::{config_schema, manifest_module, ManifestSpec, PluginManifest};
pub use paperclip_sandbox_protocol::methods::{LogLevel, OutputStream};
pub use paperclip_sandbox_protocol::secret::Secret;
pub use provider::{ConfigError, DriverConfig, HookResult, ImplementedHooks, SandboxProvider};
pub use runtime::{
    RuntimeConfig, ServeEnd, DEFAULT_FRAME_LIMIT, DEFAULT_HOST_CALL_TIMEOUT,
    DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_PENDING_REQUEST_BYTES, DEFAULT_MAX_PENDING_STREAM_BYTES,
    DEFAULT_SHUTDOWN_GRACE, OUTBOX_HARD_LIMIT, OUTBOX_HIGH_WATER,
};
pub use streams::{DuplexSender, LoginPtySender};

use runtime::Handler;

/// What a provider usually needs, and nothing else: the trait, the macros, the context,
/// errors, the params and result types of the hooks with the types they are built from, and
/// what a config type needs (`JsonSchema` and its derive, [`Secret`]). Method markers (for
/// [`testing::TestClient::call`]), the method table and wire constants are in
/// [`protocol::methods`].
pub mod prelude {
    pub use crate::schemars::{self, JsonSchema};
    pub use crate::{
        provider, Connect, Context, Deadline, HookResult, IntoProviderError, PluginManifest,
        ProviderError, SandboxProvider, Secret,
    };
    // The params and result types of the hooks, and the types they are built from. Markers,
    // the method registry and the wire constants stay in `protocol::methods`.
    pub use paperclip_sandbox_protocol::methods::{
        AcquireLeaseParams, AcquireLeaseResult, CancelInteractiveSetupParams,
        CancelInteractiveSetupResult, CancelStatus, CaptureTemplateParams, CaptureTemplateResult,
        ConfigChangedParams, ConnectionPayload, ConnectionSummary, ConnectionType,
        CreationOperation, DeleteTemplateParams, DeleteTemplateResult, DestroyLeaseParams,
        DestroyLeaseResult, Destroyed, Diagnostic, DiagnosticSeverity, EnvironmentBaseParams,
        ExecuteParams, ExecuteResult, FileMapping, GetInteractiveSetupParams,
        GetInteractiveSetupResult, HealthParams, HealthResult, HealthStatus, InitializeParams,
        InteractiveSetupSession, InteractiveSetupStatus, JsonObject, Lease, LeasePolicy, LogLevel,
        MappingKind, OutputStream, PostUploadCommand, ProbeParams, ProbeResult,
        RealizeWorkspaceParams, RealizeWorkspaceResult, ReleaseLeaseParams, ReleaseLeaseResult,
        Released, ResourceDisposition, ResumeLeaseParams, ResumeLeaseResult, RunnerIngressEndpoint,
        RunnerIngressEndpointParams, RunnerIngressEndpointResult, ShutdownParams,
        StartInteractiveSetupParams, StartInteractiveSetupResult, StopErrorReason, StopLeaseParams,
        StopLeaseResult, SyncInParams, SyncOperation, SyncOperationResult, SyncOutParams,
        SyncParams, SyncResult, TemplateKind, TerminationReceipt, TerminationState,
        ValidateConfigParams, ValidateConfigResult, WorkspaceSpec,
    };
    // The hooks of the newest upstream methods (idle sleep, Runner tasks, AI routing, login
    // terminals, duplex channels).
    pub use paperclip_sandbox_protocol::methods::{
        BackgroundWork, DuplexChannelCloseParams, DuplexChannelCloseResult,
        DuplexChannelOpenParams, DuplexChannelOpenResult, DuplexChannelStopParams,
        DuplexChannelWriteParams, EnvironmentTaskParams, LoginPtyCloseParams, LoginPtyCloseResult,
        LoginPtyInputParams, LoginPtyOpenParams, LoginPtyOpenResult, LoginPtyStopParams,
        PrepareIdleSleepParams, RouteAiConnectionParams, RouteAiConnectionResult, TaskResult,
    };
    pub use serde_json::Value;
}

/// Support for the code the macros generate; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::backend::backend;
    pub use crate::hook::{HookOutput, HookReturn};
    pub use crate::manifest::empty_config_schema;
    pub use crate::provider::{parse_config, parse_noted_config, typed, typed_config};
    pub use crate::runtime::ResultJson;
    pub use paperclip_sandbox_protocol::capabilities::{Capability, CAPABILITIES};
    pub use paperclip_sandbox_protocol::manifest::Category;
    pub use paperclip_sandbox_protocol::methods::Method;
    pub use serde::de::DeserializeOwned;
    pub use serde_json::value::RawValue;
    pub use serde_json::Value;

    /// True when `methods` contains `name` (a const fn: compares bytes).
    pub const fn contains(methods: &[&str], name: &str) -> bool {
        let mut i = 0;
        while i < methods.len() {
            if str_eq(methods[i], name) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// True when `methods` contains at least one method of `group` (a requirement group of the
    /// capability table).
    pub const fn satisfies(methods: &[&str], group: &[&str]) -> bool {
        let mut i = 0;
        while i < group.len() {
            if contains(methods, group[i]) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// How many distinct names `a` and `b` hold together (each is duplicate-free).
    pub const fn union_len(a: &[&str], b: &[&str]) -> usize {
        let mut n = a.len();
        let mut i = 0;
        while i < b.len() {
            if !contains(a, b[i]) {
                n += 1;
            }
            i += 1;
        }
        n
    }

    /// `a`, then the names of `b` not in `a`: the advertised hooks of a provider that writes
    /// `a` and delegates the rest to a provider writing `b`. `N` is [`union_len`].
    pub const fn union<const N: usize>(
        a: &[&'static str],
        b: &[&'static str],
    ) -> [&'static str; N] {
        let mut out = [""; N];
        let mut n = 0;
        while n < a.len() {
            out[n] = a[n];
            n += 1;
        }
        let mut i = 0;
        while i < b.len() {
            if !contains(a, b[i]) {
                out[n] = b[i];
                n += 1;
            }
            i += 1;
        }
        out
    }

    const fn str_eq(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// A worker ready to serve: a provider and the runtime's tunables.
pub struct Worker {
    handler: Arc<dyn Handler>,
    config: RuntimeConfig,
    worker_threads: usize,
}

impl Worker {
    /// A worker serving `provider` with the default tunables.
    pub fn new<P: SandboxProvider>(provider: P) -> Self {
        let handler: Arc<dyn Handler> = Arc::new(provider::ProviderHandler(provider));
        Worker { handler, config: RuntimeConfig::default(), worker_threads: 1 }
    }

    /// How many hooks may run at once (default 64; at least 1). Requests past the bound wait
    /// for a slot; the reader never does.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.config.max_concurrency = n.max(1);
        self
    }

    /// The bound on the params bytes of the requests the worker holds unanswered (default
    /// [`DEFAULT_MAX_PENDING_REQUEST_BYTES`]). A request past it is refused at once with
    /// `-32002`; one request alone is always admitted.
    pub fn max_pending_request_bytes(mut self, bytes: usize) -> Self {
        self.config.max_pending_request_bytes = bytes;
        self
    }

    /// The bound on the params bytes of the input queued on one byte stream
    /// (`duplexChannelWrite`, `loginPtyInput`; default [`DEFAULT_MAX_PENDING_STREAM_BYTES`]).
    /// A write past it is refused at once with `-32002`; one write alone is always admitted.
    pub fn max_pending_stream_bytes(mut self, bytes: usize) -> Self {
        self.config.max_pending_stream_bytes = bytes;
        self
    }

    /// The inbound frame cap in bytes.
    pub fn frame_limit(mut self, bytes: usize) -> Self {
        self.config.frame_limit = bytes;
        self
    }

    /// The host profile the worker serves (default `paperclip-2026-11`): hooks read it as
    /// [`Context::profile`]. [`run_plugin`] sets it from `--profile`; a `main` of its own
    /// passes what [`cli::handle_args`] returned.
    pub fn profile(mut self, profile: protocol::HostProfile) -> Self {
        self.config.profile = profile;
        self
    }

    /// The timeout of a worker→host call (default 30 s).
    pub fn host_call_timeout(mut self, timeout: Duration) -> Self {
        self.config.host_call_timeout = timeout;
        self
    }

    /// After `shutdown` (or stdin EOF, a closed stdout, `SIGTERM`/`SIGINT`): how long
    /// cancelled in-flight hooks get to end before the worker exits (default 2 s; the host
    /// waits 10 s for the exit). Hooks should watch [`Context::cancellation`] and kill what
    /// they started.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// The threads of the runtime [`run_stdio`](Self::run_stdio) builds (default 1: a
    /// current-thread runtime; more gives a multi-threaded one). The blocking pool is there
    /// either way.
    pub fn worker_threads(mut self, n: usize) -> Self {
        self.worker_threads = n.max(1);
        self
    }

    /// Serves over any byte streams until `shutdown` or EOF (no process-level effects).
    pub async fn serve<R, W>(self, reader: R, writer: W) -> io::Result<ServeEnd>
    where
        R: tokio::io::AsyncRead + Unpin + Send,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        runtime::serve::serve(self.handler, self.config, reader, writer).await
    }

    /// Serves the host over stdin/stdout, then exits the process with code 0.
    ///
    /// Takes fd 1 for the protocol and redirects it to stderr, and (Linux) arranges to die
    /// with the parent. Returns only when setting up or reading stdin fails.
    pub async fn serve_stdio(self) -> io::Result<Infallible> {
        let out = runtime::stdout_guard::take_protocol_stdout()?;
        let input = runtime::stdio::take_protocol_stdin()?;
        runtime::stdout_guard::exit_with_parent();
        let reader = runtime::stdio::ProtocolReader::new(input)?;
        // The host closing its end of stdout ends the worker as EOF does, also while nothing
        // is written (a failed write alone would wait for the next frame).
        let output_closed = runtime::stdio::output_closed(&out);
        let writer = runtime::stdio::ProtocolWriter::new(out)?;
        // SIGTERM (also what the worker gets when its parent dies) and SIGINT run the same
        // shutdown as the `shutdown` request.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let stop = async move {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                () = output_closed => {
                    tracing::info!("the host closed stdout: shutting down");
                    return runtime::serve::ServeEnd::HostGone;
                }
            }
            runtime::serve::ServeEnd::Signal
        };
        let end =
            runtime::serve::serve_until(self.handler, self.config, reader, writer, stop).await?;
        tracing::debug!(?end, "worker done; exiting");
        // Exit now: a blocking stdin reader thread (non-pipe input) would otherwise hold the
        // runtime open.
        std::process::exit(0)
    }

    /// Builds the runtime ([`worker_threads`](Self::worker_threads)) and
    /// [`serve_stdio`](Self::serve_stdio)s on it. Returns only on a setup or read error.
    pub fn run_stdio(self) -> io::Result<Infallible> {
        let rt = if self.worker_threads <= 1 {
            tokio::runtime::Builder::new_current_thread().enable_all().build()?
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(self.worker_threads)
                .enable_all()
                .build()?
        };
        rt.block_on(self.serve_stdio())
    }
}

/// Runs `provider` as a stdio worker on a fresh current-thread tokio runtime
/// ([`Worker::run_stdio`]); exits the process with code 0 on `shutdown` or stdin EOF. Returns
/// only on a setup or read error.
pub fn run<P: SandboxProvider>(provider: P) -> io::Result<()> {
    Worker::new(provider).run_stdio().map(|never| match never {})
}

/// Runs a provider with a derived manifest: answers `--manifest [--profile <profile>]` (prints
/// the JSON manifest, exits 0) and rejects other arguments (usage error on stderr, exit 2) as
/// [`cli`] describes; otherwise it serves as [`run`] does, for the host profile `--profile`
/// names (the manifest's target profile without it), which hooks read as
/// [`Context::profile`].
pub fn run_plugin<P: SandboxProvider + PluginManifest>(provider: P) -> io::Result<()> {
    let profile = cli::handle_args::<P>();
    Worker::new(provider).profile(profile).run_stdio().map(|never| match never {})
}

/// Installs a `tracing` subscriber that writes to stderr, filtered by `RUST_LOG` (default
/// `info`). Does nothing if a global subscriber is already set.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(false)
        .try_init();
}
