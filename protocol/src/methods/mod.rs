//! Method names and the method registry, plus one module of params and result types per
//! method family.
//!
//! The constants in [`name`] are the only place a method name is spelled. [`METHODS`] lists
//! every host→worker method a worker must know (answering `-32004` when it has no hook, and
//! `-32601` only for names outside this list), with the profile it appeared in.

pub mod ai_route;
pub mod execute;
pub mod handshake;
pub mod host;
pub mod idle;
pub mod lease;
pub mod services;
pub mod setup;
pub mod stream;
pub mod sync;
pub mod task;
pub mod workspace;

pub use self::{
    ai_route::*, execute::*, handshake::*, host::*, idle::*, lease::*, services::*, setup::*,
    stream::*, sync::*, task::*, workspace::*,
};

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::profile::HostProfile;

/// Bounds every params and result type of [`RpcMethod`] and [`RpcNotification`] meets.
pub trait WireType:
    DeserializeOwned + Serialize + JsonSchema + fmt::Debug + Send + 'static
{
}

impl<T: DeserializeOwned + Serialize + JsonSchema + fmt::Debug + Send + 'static> WireType for T {}

/// Who sends a method's request or notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The host calls the worker.
    HostToWorker,
    /// The worker calls the host.
    WorkerToHost,
}

/// A request method: ties the name constant to its params and result types. Each method has
/// a zero-sized marker type implementing it (for example [`EnvironmentExecute`]); the SDK
/// dispatches through it. A void result is `()` (`null` on the wire).
pub trait RpcMethod {
    /// The wire name (one of [`name`]).
    const NAME: &'static str;
    /// Who sends the request.
    const DIRECTION: Direction;
    /// The params type.
    type Params: WireType;
    /// The result type.
    type Result: WireType;
}

/// A notification (no id, no answer): ties the name to its params type.
pub trait RpcNotification {
    /// The wire name (one of [`name`]).
    const NAME: &'static str;
    /// Who sends the notification.
    const DIRECTION: Direction;
    /// The params type.
    type Params: WireType;
}

/// Visits every method and notification with known types; see [`visit_methods`].
pub trait MethodVisitor {
    /// Called once per request method.
    fn method<M: RpcMethod>(&mut self);
    /// Called once per notification.
    fn notification<N: RpcNotification>(&mut self);
}

macro_rules! rpc_methods {
    (
        methods { $( $(#[$m:meta])* $marker:ident = $dir:ident $name:path, $params:ty => $result:ty; )+ }
        notifications { $( $(#[$nm:meta])* $nmarker:ident = $ndir:ident $nname:path, $nparams:ty; )+ }
    ) => {
        $(
            $(#[$m])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $marker;

            impl RpcMethod for $marker {
                const NAME: &'static str = $name;
                const DIRECTION: Direction = Direction::$dir;
                type Params = $params;
                type Result = $result;
            }
        )+
        $(
            $(#[$nm])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $nmarker;

            impl RpcNotification for $nmarker {
                const NAME: &'static str = $nname;
                const DIRECTION: Direction = Direction::$ndir;
                type Params = $nparams;
            }
        )+

        /// Calls the visitor for every request method (in this order: handshake,
        /// `environment*` hooks, worker→host requests) and every notification.
        pub fn visit_methods<V: MethodVisitor>(visitor: &mut V) {
            $( visitor.method::<$marker>(); )+
            $( visitor.notification::<$nmarker>(); )+
        }
    };
}

rpc_methods! {
    methods {
        /// `initialize`.
        Initialize = HostToWorker name::INITIALIZE, InitializeParams => InitializeResult;
        /// `health`.
        Health = HostToWorker name::HEALTH, HealthParams => HealthResult;
        /// `shutdown` (void).
        Shutdown = HostToWorker name::SHUTDOWN, ShutdownParams => ();
        /// `configChanged` (void).
        ConfigChanged = HostToWorker name::CONFIG_CHANGED, ConfigChangedParams => ();
        /// `environmentValidateConfig`.
        EnvironmentValidateConfig = HostToWorker name::ENVIRONMENT_VALIDATE_CONFIG,
            ValidateConfigParams => ValidateConfigResult;
        /// `environmentProbe`.
        EnvironmentProbe = HostToWorker name::ENVIRONMENT_PROBE, ProbeParams => ProbeResult;
        /// `environmentAcquireLease`.
        EnvironmentAcquireLease = HostToWorker name::ENVIRONMENT_ACQUIRE_LEASE,
            AcquireLeaseParams => AcquireLeaseResult;
        /// `environmentResumeLease`.
        EnvironmentResumeLease = HostToWorker name::ENVIRONMENT_RESUME_LEASE,
            ResumeLeaseParams => ResumeLeaseResult;
        /// `environmentReleaseLease`.
        EnvironmentReleaseLease = HostToWorker name::ENVIRONMENT_RELEASE_LEASE,
            ReleaseLeaseParams => ReleaseLeaseResult;
        /// `environmentDestroyLease`.
        EnvironmentDestroyLease = HostToWorker name::ENVIRONMENT_DESTROY_LEASE,
            DestroyLeaseParams => DestroyLeaseResult;
        /// `environmentStopLease` (`paperclip-2026-11`).
        EnvironmentStopLease = HostToWorker name::ENVIRONMENT_STOP_LEASE,
            StopLeaseParams => StopLeaseResult;
        /// `environmentRealizeWorkspace`.
        EnvironmentRealizeWorkspace = HostToWorker name::ENVIRONMENT_REALIZE_WORKSPACE,
            RealizeWorkspaceParams => RealizeWorkspaceResult;
        /// `environmentExecute`.
        EnvironmentExecute = HostToWorker name::ENVIRONMENT_EXECUTE, ExecuteParams => ExecuteResult;
        /// `environmentRunnerIngressEndpoint`.
        EnvironmentRunnerIngressEndpoint = HostToWorker name::ENVIRONMENT_RUNNER_INGRESS_ENDPOINT,
            RunnerIngressEndpointParams => RunnerIngressEndpointResult;
        /// `environmentSyncIn`.
        EnvironmentSyncIn = HostToWorker name::ENVIRONMENT_SYNC_IN, SyncInParams => SyncResult;
        /// `environmentSyncOut`.
        EnvironmentSyncOut = HostToWorker name::ENVIRONMENT_SYNC_OUT, SyncOutParams => SyncResult;
        /// `environmentStartInteractiveSetup`.
        EnvironmentStartInteractiveSetup = HostToWorker name::ENVIRONMENT_START_INTERACTIVE_SETUP,
            StartInteractiveSetupParams => StartInteractiveSetupResult;
        /// `environmentGetInteractiveSetup`.
        EnvironmentGetInteractiveSetup = HostToWorker name::ENVIRONMENT_GET_INTERACTIVE_SETUP,
            GetInteractiveSetupParams => GetInteractiveSetupResult;
        /// `environmentCaptureTemplate`.
        EnvironmentCaptureTemplate = HostToWorker name::ENVIRONMENT_CAPTURE_TEMPLATE,
            CaptureTemplateParams => CaptureTemplateResult;
        /// `environmentCancelInteractiveSetup`.
        EnvironmentCancelInteractiveSetup = HostToWorker name::ENVIRONMENT_CANCEL_INTERACTIVE_SETUP,
            CancelInteractiveSetupParams => CancelInteractiveSetupResult;
        /// `environmentDeleteTemplate`.
        EnvironmentDeleteTemplate = HostToWorker name::ENVIRONMENT_DELETE_TEMPLATE,
            DeleteTemplateParams => DeleteTemplateResult;
        /// `prepareIdleSleep` (`paperclip-2026-11`).
        PrepareIdleSleep = HostToWorker name::PREPARE_IDLE_SLEEP,
            PrepareIdleSleepParams => PrepareIdleSleepResult;
        /// `releaseIdleSleep` (void; also a notification).
        ReleaseIdleSleep = HostToWorker name::RELEASE_IDLE_SLEEP, ReleaseIdleSleepParams => ();
        /// `environmentTask` (`paperclip-2026-11`).
        EnvironmentTask = HostToWorker name::ENVIRONMENT_TASK, EnvironmentTaskParams => TaskResult;
        /// `routeAiConnection` (`paperclip-2026-11`).
        RouteAiConnection = HostToWorker name::ROUTE_AI_CONNECTION,
            RouteAiConnectionParams => RouteAiConnectionResult;
        /// `loginPtyOpen`.
        LoginPtyOpen = HostToWorker name::LOGIN_PTY_OPEN, LoginPtyOpenParams => LoginPtyOpenResult;
        /// `loginPtyInput` (void).
        LoginPtyInput = HostToWorker name::LOGIN_PTY_INPUT, LoginPtyInputParams => ();
        /// `loginPtyStop` (void).
        LoginPtyStop = HostToWorker name::LOGIN_PTY_STOP, LoginPtyStopParams => ();
        /// `loginPtyClose`.
        LoginPtyClose = HostToWorker name::LOGIN_PTY_CLOSE, LoginPtyCloseParams => LoginPtyCloseResult;
        /// `duplexChannelOpen`.
        DuplexChannelOpen = HostToWorker name::DUPLEX_CHANNEL_OPEN,
            DuplexChannelOpenParams => DuplexChannelOpenResult;
        /// `duplexChannelWrite` (void).
        DuplexChannelWrite = HostToWorker name::DUPLEX_CHANNEL_WRITE, DuplexChannelWriteParams => ();
        /// `duplexChannelStop` (void).
        DuplexChannelStop = HostToWorker name::DUPLEX_CHANNEL_STOP, DuplexChannelStopParams => ();
        /// `duplexChannelClose`.
        DuplexChannelClose = HostToWorker name::DUPLEX_CHANNEL_CLOSE,
            DuplexChannelCloseParams => DuplexChannelCloseResult;
        /// Worker→host `log` as a request (void); also a notification.
        Log = WorkerToHost name::LOG, LogParams => ();
        /// Worker→host `config.get`: the company's plugin config.
        ConfigGet = WorkerToHost name::CONFIG_GET, ConfigGetParams => JsonObject;
        /// Worker→host `secrets.resolve`: the secret's value.
        SecretsResolve = WorkerToHost name::SECRETS_RESOLVE, SecretsResolveParams => String;
        /// Worker→host `span.record` (void).
        SpanRecord = WorkerToHost name::SPAN_RECORD, SpanRecordParams => ();
        /// Worker→host `state.get`: the stored value or `null`.
        StateGet = WorkerToHost name::STATE_GET, StateKey => serde_json::Value;
        /// Worker→host `state.set` (void).
        StateSet = WorkerToHost name::STATE_SET, StateSetParams => ();
        /// Worker→host `state.delete` (void).
        StateDelete = WorkerToHost name::STATE_DELETE, StateKey => ();
        /// Worker→host `http.fetch`.
        HttpFetch = WorkerToHost name::HTTP_FETCH, HttpFetchParams => HttpFetchResult;
        /// Worker→host `metrics.write` (void).
        MetricsWrite = WorkerToHost name::METRICS_WRITE, MetricsWriteParams => ();
        /// Worker→host `telemetry.track` (void).
        TelemetryTrack = WorkerToHost name::TELEMETRY_TRACK, TelemetryTrackParams => ();
        /// Worker→host `activity.log` (void).
        ActivityLog = WorkerToHost name::ACTIVITY_LOG, ActivityLogParams => ();
        /// Worker→host `events.emit` (void).
        EventsEmit = WorkerToHost name::EVENTS_EMIT, EventsEmitParams => ();
    }
    notifications {
        /// Worker→host `execute.log`.
        ExecuteLog = WorkerToHost name::EXECUTE_LOG, ExecuteLogParams;
        /// Worker→host `log` as a notification.
        LogNotification = WorkerToHost name::LOG, LogParams;
        /// Worker→host `loginPty.output`.
        LoginPtyOutput = WorkerToHost name::LOGIN_PTY_OUTPUT, LoginPtyOutputParams;
        /// Worker→host `loginPty.exit`.
        LoginPtyExit = WorkerToHost name::LOGIN_PTY_EXIT, LoginPtyExitParams;
        /// Worker→host `duplexChannel.data`.
        DuplexChannelData = WorkerToHost name::DUPLEX_CHANNEL_DATA, DuplexChannelDataParams;
        /// Worker→host `duplexChannel.exit`.
        DuplexChannelExit = WorkerToHost name::DUPLEX_CHANNEL_EXIT, DuplexChannelExitParams;
    }
}

/// Method-name constants, host→worker and worker→host.
pub mod name {
    /// Handshake: the first request the host sends.
    pub const INITIALIZE: &str = "initialize";
    /// Liveness query (never called by HOST-2026-09).
    pub const HEALTH: &str = "health";
    /// Graceful stop: answer, then exit.
    pub const SHUTDOWN: &str = "shutdown";
    /// Per-company config replay after initialize.
    pub const CONFIG_CHANGED: &str = "configChanged";
    /// Plugin-level config validation (not an environment hook).
    pub const VALIDATE_CONFIG: &str = "validateConfig";
    /// Host→worker event notification.
    pub const ON_EVENT: &str = "onEvent";
    /// Host→worker agent session event notification.
    pub const AGENTS_SESSIONS_EVENT: &str = "agents.sessions.event";

    /// Validate and normalize an environment config.
    pub const ENVIRONMENT_VALIDATE_CONFIG: &str = "environmentValidateConfig";
    /// Probe the provider.
    pub const ENVIRONMENT_PROBE: &str = "environmentProbe";
    /// Acquire a fresh lease.
    pub const ENVIRONMENT_ACQUIRE_LEASE: &str = "environmentAcquireLease";
    /// Resume a retained lease.
    pub const ENVIRONMENT_RESUME_LEASE: &str = "environmentResumeLease";
    /// Release a lease.
    pub const ENVIRONMENT_RELEASE_LEASE: &str = "environmentReleaseLease";
    /// Destroy a lease (idempotent).
    pub const ENVIRONMENT_DESTROY_LEASE: &str = "environmentDestroyLease";
    /// Stop a lease and keep its files (paperclip-2026-11, D6).
    pub const ENVIRONMENT_STOP_LEASE: &str = "environmentStopLease";
    /// Realize the workspace inside a lease.
    pub const ENVIRONMENT_REALIZE_WORKSPACE: &str = "environmentRealizeWorkspace";
    /// Run a command inside a lease.
    pub const ENVIRONMENT_EXECUTE: &str = "environmentExecute";
    /// Resolve the runner WebSocket ingress endpoint.
    pub const ENVIRONMENT_RUNNER_INGRESS_ENDPOINT: &str = "environmentRunnerIngressEndpoint";
    /// Native file transfer into the sandbox.
    pub const ENVIRONMENT_SYNC_IN: &str = "environmentSyncIn";
    /// Native file transfer out of the sandbox.
    pub const ENVIRONMENT_SYNC_OUT: &str = "environmentSyncOut";
    /// Start an interactive setup session.
    pub const ENVIRONMENT_START_INTERACTIVE_SETUP: &str = "environmentStartInteractiveSetup";
    /// Read an interactive setup session.
    pub const ENVIRONMENT_GET_INTERACTIVE_SETUP: &str = "environmentGetInteractiveSetup";
    /// Capture a template from a setup session.
    pub const ENVIRONMENT_CAPTURE_TEMPLATE: &str = "environmentCaptureTemplate";
    /// Cancel an interactive setup session.
    pub const ENVIRONMENT_CANCEL_INTERACTIVE_SETUP: &str = "environmentCancelInteractiveSetup";
    /// Delete a template.
    pub const ENVIRONMENT_DELETE_TEMPLATE: &str = "environmentDeleteTemplate";

    /// Ask a worker to prove it is idle and seal it (paperclip-2026-11).
    pub const PREPARE_IDLE_SLEEP: &str = "prepareIdleSleep";
    /// End an idle-sleep hold (paperclip-2026-11).
    pub const RELEASE_IDLE_SLEEP: &str = "releaseIdleSleep";
    /// One operation of a provider-run Runner task (paperclip-2026-11).
    pub const ENVIRONMENT_TASK: &str = "environmentTask";
    /// Pick a member of an AI connection pool (paperclip-2026-11).
    pub const ROUTE_AI_CONNECTION: &str = "routeAiConnection";

    /// Open a login pseudo-terminal.
    pub const LOGIN_PTY_OPEN: &str = "loginPtyOpen";
    /// Write input to a login pseudo-terminal.
    pub const LOGIN_PTY_INPUT: &str = "loginPtyInput";
    /// Stop a login pseudo-terminal's child.
    pub const LOGIN_PTY_STOP: &str = "loginPtyStop";
    /// Close a login pseudo-terminal by its host route.
    pub const LOGIN_PTY_CLOSE: &str = "loginPtyClose";
    /// Open a duplex command channel (extension `duplexCommandStream`).
    pub const DUPLEX_CHANNEL_OPEN: &str = "duplexChannelOpen";
    /// Write bytes to a duplex channel.
    pub const DUPLEX_CHANNEL_WRITE: &str = "duplexChannelWrite";
    /// Stop a duplex channel's command.
    pub const DUPLEX_CHANNEL_STOP: &str = "duplexChannelStop";
    /// Close a duplex channel by its host route.
    pub const DUPLEX_CHANNEL_CLOSE: &str = "duplexChannelClose";

    /// Worker→host: a log line (notification or request).
    pub const LOG: &str = "log";
    /// Worker→host: incremental output of the active `environmentExecute`.
    pub const EXECUTE_LOG: &str = "execute.log";
    /// Worker→host: read the company's plugin config.
    pub const CONFIG_GET: &str = "config.get";
    /// Worker→host: resolve a secret reference.
    pub const SECRETS_RESOLVE: &str = "secrets.resolve";
    /// Worker→host: record a finished provider span.
    pub const SPAN_RECORD: &str = "span.record";
    /// Worker→host: read plugin state.
    pub const STATE_GET: &str = "state.get";
    /// Worker→host: write plugin state.
    pub const STATE_SET: &str = "state.set";
    /// Worker→host: delete plugin state.
    pub const STATE_DELETE: &str = "state.delete";
    /// Worker→host: an HTTP request made by the host.
    pub const HTTP_FETCH: &str = "http.fetch";
    /// Worker→host: write a metric.
    pub const METRICS_WRITE: &str = "metrics.write";
    /// Worker→host: track a telemetry event.
    pub const TELEMETRY_TRACK: &str = "telemetry.track";
    /// Worker→host: an activity-log entry.
    pub const ACTIVITY_LOG: &str = "activity.log";
    /// Worker→host: emit a plugin event.
    pub const EVENTS_EMIT: &str = "events.emit";
    /// Worker→host: login terminal output.
    pub const LOGIN_PTY_OUTPUT: &str = "loginPty.output";
    /// Worker→host: login terminal exit.
    pub const LOGIN_PTY_EXIT: &str = "loginPty.exit";
    /// Worker→host: duplex channel output bytes.
    pub const DUPLEX_CHANNEL_DATA: &str = "duplexChannel.data";
    /// Worker→host: duplex channel exit.
    pub const DUPLEX_CHANNEL_EXIT: &str = "duplexChannel.exit";
}

/// What kind of host→worker method an entry of [`METHODS`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MethodFamily {
    /// initialize, health, shutdown, configChanged: answered by the runtime.
    Handshake,
    /// An `environment*` hook of a sandbox provider.
    Environment,
    /// A plugin method outside the sandbox-provider surface (jobs, webhooks, tools, UI data,
    /// login PTY, duplex channels): known, so answered `-32004` when not implemented.
    OtherPlugin,
}

/// One host→worker method a worker knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo {
    /// The wire name.
    pub name: &'static str,
    /// Its family.
    pub family: MethodFamily,
    /// The oldest profile whose host sends it.
    pub since: HostProfile,
    /// True for the methods of the November GitHub tests whose schemas are not published
    /// (protocol.md D.14): negotiated through `supportedMethods`, always `-32004` here.
    pub schema_unknown: bool,
}

const fn m(
    name: &'static str,
    family: MethodFamily,
    since: HostProfile,
    schema_unknown: bool,
) -> MethodInfo {
    MethodInfo { name, family, since, schema_unknown }
}

use HostProfile::{Paperclip2026_09 as P09, Paperclip2026_11 as P11};
use MethodFamily::{Environment as Env, Handshake as Hs, OtherPlugin as Other};

/// Every host→worker request method a worker knows: the published SDK's dispatch table, the
/// November `environmentStopLease`, and the November methods of protocol.md D.14.
pub const METHODS: &[MethodInfo] = &[
    m(name::INITIALIZE, Hs, P09, false),
    m(name::HEALTH, Hs, P09, false),
    m(name::SHUTDOWN, Hs, P09, false),
    m(name::PREPARE_IDLE_SLEEP, Hs, P11, false),
    m(name::RELEASE_IDLE_SLEEP, Hs, P11, false),
    m(name::CONFIG_CHANGED, Hs, P09, false),
    m(name::VALIDATE_CONFIG, Other, P09, false),
    m(name::ON_EVENT, Other, P09, false),
    m("runJob", Other, P09, false),
    m("handleWebhook", Other, P09, false),
    m("handleApiRequest", Other, P09, false),
    m("getData", Other, P09, false),
    m("performAction", Other, P09, false),
    m("executeTool", Other, P09, false),
    m("detectExternalObjects", Other, P09, false),
    m(name::ROUTE_AI_CONNECTION, Other, P11, false),
    m("resolveExternalObject", Other, P09, false),
    m("refreshExternalObjects", Other, P09, false),
    m(name::ENVIRONMENT_VALIDATE_CONFIG, Env, P09, false),
    m(name::ENVIRONMENT_TASK, Env, P11, false),
    m(name::ENVIRONMENT_PROBE, Env, P09, false),
    m(name::ENVIRONMENT_ACQUIRE_LEASE, Env, P09, false),
    m(name::ENVIRONMENT_RESUME_LEASE, Env, P09, false),
    m(name::ENVIRONMENT_RELEASE_LEASE, Env, P09, false),
    m(name::ENVIRONMENT_DESTROY_LEASE, Env, P09, false),
    m(name::ENVIRONMENT_REALIZE_WORKSPACE, Env, P09, false),
    m(name::ENVIRONMENT_EXECUTE, Env, P09, false),
    m(name::ENVIRONMENT_RUNNER_INGRESS_ENDPOINT, Env, P09, false),
    m(name::ENVIRONMENT_SYNC_IN, Env, P09, false),
    m(name::ENVIRONMENT_SYNC_OUT, Env, P09, false),
    m(name::ENVIRONMENT_START_INTERACTIVE_SETUP, Env, P09, false),
    m(name::ENVIRONMENT_GET_INTERACTIVE_SETUP, Env, P09, false),
    m(name::ENVIRONMENT_CAPTURE_TEMPLATE, Env, P09, false),
    m(name::ENVIRONMENT_CANCEL_INTERACTIVE_SETUP, Env, P09, false),
    m(name::ENVIRONMENT_DELETE_TEMPLATE, Env, P09, false),
    m(name::LOGIN_PTY_OPEN, Other, P09, false),
    m(name::LOGIN_PTY_INPUT, Other, P09, false),
    m(name::LOGIN_PTY_STOP, Other, P09, false),
    m(name::LOGIN_PTY_CLOSE, Other, P09, false),
    m(name::DUPLEX_CHANNEL_OPEN, Other, P09, false),
    m(name::DUPLEX_CHANNEL_WRITE, Other, P09, false),
    m(name::DUPLEX_CHANNEL_STOP, Other, P09, false),
    m(name::DUPLEX_CHANNEL_CLOSE, Other, P09, false),
    m(name::ENVIRONMENT_STOP_LEASE, Env, P11, false),
    m("environmentRunnerRecoveryExecute", Env, P11, true),
    m("environmentRunnerRecovery", Env, P11, true),
    m("environmentRunProcessControl", Env, P11, true),
    m("environmentProcessHandoff", Env, P11, true),
    m("environmentDeleteTaskWorkspaceData", Env, P11, true),
    m("environmentDeleteServiceData", Env, P11, true),
    m("environmentGetServiceConnection", Env, P11, true),
    m("environmentAcquireServiceLease", Env, P11, true),
    m("environmentService", Env, P11, true),
];

/// The registry entry of a method name, if the worker knows it.
pub fn lookup(method: &str) -> Option<&'static MethodInfo> {
    METHODS.iter().find(|m| m.name == method)
}

/// True when a worker must answer `-32004` (not `-32601`) for this method when it has no hook.
pub fn is_known(method: &str) -> bool {
    lookup(method).is_some()
}

/// The methods a worker always advertises in `supportedMethods`, whatever hooks it implements
/// (the runtime answers them itself).
pub const ALWAYS_SUPPORTED: &[&str] = &[name::HEALTH, name::SHUTDOWN];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_to_worker_marker_is_in_the_registry() {
        struct Check(Vec<&'static str>);
        impl MethodVisitor for Check {
            fn method<M: RpcMethod>(&mut self) {
                if M::DIRECTION == Direction::HostToWorker {
                    assert!(is_known(M::NAME), "{} missing from METHODS", M::NAME);
                } else {
                    assert!(!is_known(M::NAME), "{} is worker→host", M::NAME);
                }
                self.0.push(M::NAME);
            }
            fn notification<N: RpcNotification>(&mut self) {
                assert_eq!(N::DIRECTION, Direction::WorkerToHost);
            }
        }
        let mut c = Check(Vec::new());
        visit_methods(&mut c);
        assert_eq!(c.0.len(), 45);
        let env = METHODS
            .iter()
            .filter(|m| m.family == MethodFamily::Environment && !m.schema_unknown)
            .count();
        assert_eq!(c.0.iter().filter(|n| n.starts_with("environment")).count(), env);
    }

    #[test]
    fn registry_has_no_duplicates_and_every_environment_hook() {
        let mut names: Vec<_> = METHODS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
        for n in
            [name::ENVIRONMENT_SYNC_IN, name::ENVIRONMENT_STOP_LEASE, name::ENVIRONMENT_EXECUTE]
        {
            assert_eq!(lookup(n).unwrap().family, MethodFamily::Environment);
        }
        assert!(!is_known("environmentFrobnicate"));
        assert_eq!(
            lookup(name::ENVIRONMENT_STOP_LEASE).unwrap().since,
            HostProfile::Paperclip2026_11
        );
    }
}
