//! Method names and the method registry, plus one module of params and result types per
//! method family.
//!
//! The constants in [`name`] are the only place a method name is spelled. [`METHODS`] lists
//! every host→worker method a worker must know (answering `-32004` when it has no hook, and
//! `-32601` only for names outside this list), with the profile it appeared in.

pub mod execute;
pub mod handshake;
pub mod host;
pub mod lease;
pub mod setup;
pub mod sync;
pub mod workspace;

pub use self::{execute::*, handshake::*, host::*, lease::*, setup::*, sync::*, workspace::*};

use crate::profile::HostProfile;

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

    /// Open a duplex command channel (extension `duplexCommandStream`).
    pub const DUPLEX_CHANNEL_OPEN: &str = "duplexChannelOpen";

    /// Worker→host: a log line (notification or request).
    pub const LOG: &str = "log";
    /// Worker→host: incremental output of the active `environmentExecute`.
    pub const EXECUTE_LOG: &str = "execute.log";
    /// Worker→host: read the company's plugin config.
    pub const CONFIG_GET: &str = "config.get";
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
    m("resolveExternalObject", Other, P09, false),
    m("refreshExternalObjects", Other, P09, false),
    m(name::ENVIRONMENT_VALIDATE_CONFIG, Env, P09, false),
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
    m("loginPtyOpen", Other, P09, false),
    m("loginPtyInput", Other, P09, false),
    m("loginPtyStop", Other, P09, false),
    m("loginPtyClose", Other, P09, false),
    m(name::DUPLEX_CHANNEL_OPEN, Other, P09, false),
    m("duplexChannelWrite", Other, P09, false),
    m("duplexChannelStop", Other, P09, false),
    m("duplexChannelClose", Other, P09, false),
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
