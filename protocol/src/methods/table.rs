//! The method table: every method of the wire, written once.
//!
//! [`method_table!`](crate::method_table) holds one row per method. Everything else is
//! generated from it: the name constants ([`name`](super::name)), the marker types and their
//! [`RpcMethod`](super::RpcMethod) impls, [`Method`](super::Method), the registry
//! [`METHODS`](super::METHODS) (whose order is the order of `supportedMethods`), the hook list
//! the SDK's macros read ([`HOOKS`](super::HOOKS)), and, in the SDK, the hooks of the
//! `SandboxProvider` trait and their dispatch. Adding a method is adding one row.
//!
//! A row of the `methods` section is a host→worker request:
//!
//! ```text
//! /// doc
//! Marker = "wireName" as CONSTANT, Family, since Profile, Upstream
//!     , hook hook_name(ParamsType<Config>) -> HookResult => WireResult;
//! ```
//!
//! (`Marker = CONSTANT, …` names a method by a constant another row defines: `onEvent` is both
//! a notification and a request.)
//!
//! * `Family` is a [`MethodFamily`](super::MethodFamily) variant, `Profile` the oldest
//!   [`HostProfile`](crate::HostProfile) whose host sends it, `Upstream` an
//!   [`Upstream`](super::Upstream) variant (whether upstream knows the method and its schema).
//! * The `hook …` part is there when a provider can implement the method: the hook's Rust name,
//!   its params type (`<Config>` when the params carry the environment config, which the SDK
//!   then parses into the provider's config type), the hook's result type and, when the wire
//!   result differs from it (only `initialize`, whose answer the runtime builds), the wire
//!   result type. Rows without a hook are answered `-32004` by every worker.
//!
//! `host_calls` rows are worker→host requests (with an optional notification marker of the
//! same name), `notifications` rows are notifications either way (with their params type when
//! the crate types them, and a hook when a provider handles them).

/// Invokes a callback macro with the method table (see the [module docs](self)).
///
/// `method_table!(items)` expands to the protocol crate's generated items (used once, in
/// `methods`); `method_table!(hooks path::to::callback)` calls `callback! { … }` with one
/// `Marker hook(Params) -> Result;` line per hooked request, then `notify` and one
/// `hook "wireName";` line per hooked notification (the SDK generates its trait from it);
/// `method_table!(rows path::to::callback)` calls `callback! { methods { … } host_calls { … }
/// notifications { … } }` with the whole table as written, docs included (the book's method
/// reference is rendered from it). `__method_items!` and `__method_hooks!` can be called with a table of their own, which is
/// how a test shows that a new row is all a new method needs.
#[doc(hidden)]
#[macro_export]
macro_rules! method_table {
    ($mode:ident $($callback:path)?) => {
        $crate::__method_table_rows! { $mode $($callback)? }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __method_table_rows {
    (items) => { $crate::__method_table_rows! { @ $crate::__method_items } };
    (hooks $callback:path) => { $crate::__method_table_rows! { @ $crate::__method_hooks; $callback } };
    (rows $callback:path) => { $crate::__method_table_rows! { @ $callback } };
    (@ $generator:path $(; $callback:path)?) => {
        $generator! {
            $($callback;)?
            methods {
                /// `initialize`: the handshake; the runtime answers `{ok:true, supportedMethods}`
                /// after the hook (if written) succeeds, and a failed hook fails the handshake.
                Initialize = "initialize" as INITIALIZE, Handshake, since P09, Published,
                    hook initialize(InitializeParams) -> () => InitializeResult;
                /// `health`: `{status:"ok"|"degraded"|"error", message?, details?}`; the runtime
                /// answers `{status:"ok"}` unless the hook is written (never called by the
                /// September host).
                Health = "health" as HEALTH, Handshake, since P09, Published,
                    hook health(HealthParams) -> HealthResult;
                /// `shutdown`: the hook (if written) runs before the runtime answers and exits;
                /// in-flight calls are cancelled right after.
                Shutdown = "shutdown" as SHUTDOWN, Handshake, since P09, Published,
                    hook shutdown(ShutdownParams) -> ();
                /// `prepareIdleSleep {ownerId, expiresAt}` (`paperclip-2026-11`): prove the
                /// worker is idle and seal it. The runtime answers it; the hook, when written,
                /// is the provider's drain check (its `Context` is cancelled when the hold
                /// ends), and it advertises the pair with `releaseIdleSleep`.
                PrepareIdleSleep = "prepareIdleSleep" as PREPARE_IDLE_SLEEP, Handshake, since P11, Newest,
                    hook idle_drain(PrepareIdleSleepParams) -> BackgroundWork => PrepareIdleSleepResult;
                /// `releaseIdleSleep {ownerId}` (`paperclip-2026-11`): end the hold of that
                /// owner; answered by the runtime, advertised with `prepareIdleSleep`.
                ReleaseIdleSleep = RELEASE_IDLE_SLEEP, Handshake, since P11, Newest;
                /// `configChanged {config, companyId}`: the host replays each company's config
                /// after initialize; the runtime answers `null` unless the hook is written.
                ConfigChanged = "configChanged" as CONFIG_CHANGED, Handshake, since P09, Published,
                    hook config_changed(ConfigChangedParams) -> ();
                /// `validateConfig`: plugin-level config validation (not an environment hook).
                ValidateConfig = "validateConfig" as VALIDATE_CONFIG, OtherPlugin, since P09, Published;
                /// `onEvent` as a request (its name is the notification's, below).
                OnEventRequest = ON_EVENT, OtherPlugin, since P09, Published;
                /// `runJob`.
                RunJob = "runJob" as RUN_JOB, OtherPlugin, since P09, Published;
                /// `handleWebhook`.
                HandleWebhook = "handleWebhook" as HANDLE_WEBHOOK, OtherPlugin, since P09, Published;
                /// `handleApiRequest`.
                HandleApiRequest = "handleApiRequest" as HANDLE_API_REQUEST, OtherPlugin, since P09, Published;
                /// `getData`.
                GetData = "getData" as GET_DATA, OtherPlugin, since P09, Published;
                /// `performAction`.
                PerformAction = "performAction" as PERFORM_ACTION, OtherPlugin, since P09, Published;
                /// `executeTool`.
                ExecuteTool = "executeTool" as EXECUTE_TOOL, OtherPlugin, since P09, Published;
                /// `detectExternalObjects`.
                DetectExternalObjects = "detectExternalObjects" as DETECT_EXTERNAL_OBJECTS, OtherPlugin, since P09, Published;
                /// `routeAiConnection` (`paperclip-2026-11`): pick a member of an AI connection
                /// pool.
                RouteAiConnection = "routeAiConnection" as ROUTE_AI_CONNECTION, OtherPlugin, since P11, Newest,
                    hook route_ai_connection(RouteAiConnectionParams) -> RouteAiConnectionResult;
                /// `resolveExternalObject`.
                ResolveExternalObject = "resolveExternalObject" as RESOLVE_EXTERNAL_OBJECT, OtherPlugin, since P09, Published;
                /// `refreshExternalObjects`.
                RefreshExternalObjects = "refreshExternalObjects" as REFRESH_EXTERNAL_OBJECTS, OtherPlugin, since P09, Published;
                /// `environmentValidateConfig`: validate and normalize a config. A config that
                /// does not fit the provider's config type is answered `{ok:false, errors}` by
                /// the SDK without calling the hook.
                EnvironmentValidateConfig = "environmentValidateConfig" as ENVIRONMENT_VALIDATE_CONFIG, Environment, since P09, Published,
                    hook validate_config(ValidateConfigParams<Config>) -> ValidateConfigResult;
                /// `environmentTask` (`paperclip-2026-11`): one operation of a provider-run
                /// Runner task. The SDK checks the operation before the hook and that the
                /// result answers it after.
                EnvironmentTask = "environmentTask" as ENVIRONMENT_TASK, Environment, since P11, Newest,
                    hook environment_task(EnvironmentTaskParams) -> TaskResult;
                /// `environmentProbe`: check that the provider is reachable with this config.
                EnvironmentProbe = "environmentProbe" as ENVIRONMENT_PROBE, Environment, since P09, Published,
                    hook probe(ProbeParams<Config>) -> ProbeResult;
                /// `environmentAcquireLease`: create a sandbox and return its lease.
                EnvironmentAcquireLease = "environmentAcquireLease" as ENVIRONMENT_ACQUIRE_LEASE, Environment, since P09, Published,
                    hook acquire_lease(AcquireLeaseParams<Config>) -> AcquireLeaseResult;
                /// `environmentResumeLease`: resume a retained lease.
                EnvironmentResumeLease = "environmentResumeLease" as ENVIRONMENT_RESUME_LEASE, Environment, since P09, Published,
                    hook resume_lease(ResumeLeaseParams<Config>) -> ResumeLeaseResult;
                /// `environmentReleaseLease`: release a lease (`null`, or a termination receipt).
                EnvironmentReleaseLease = "environmentReleaseLease" as ENVIRONMENT_RELEASE_LEASE, Environment, since P09, Published,
                    hook release_lease(ReleaseLeaseParams<Config>) -> ReleaseLeaseResult;
                /// `environmentDestroyLease`: destroy a lease; idempotent.
                EnvironmentDestroyLease = "environmentDestroyLease" as ENVIRONMENT_DESTROY_LEASE, Environment, since P09, Published,
                    hook destroy_lease(DestroyLeaseParams<Config>) -> DestroyLeaseResult;
                /// `environmentRealizeWorkspace`: prepare the workspace inside a lease.
                EnvironmentRealizeWorkspace = "environmentRealizeWorkspace" as ENVIRONMENT_REALIZE_WORKSPACE, Environment, since P09, Published,
                    hook realize_workspace(RealizeWorkspaceParams<Config>) -> RealizeWorkspaceResult;
                /// `environmentExecute`: run a command inside a lease; stream its output as
                /// `execute.log`.
                EnvironmentExecute = "environmentExecute" as ENVIRONMENT_EXECUTE, Environment, since P09, Published,
                    hook execute(ExecuteParams<Config>) -> ExecuteResult;
                /// `environmentRunnerIngressEndpoint`: the runner's WebSocket ingress.
                EnvironmentRunnerIngressEndpoint = "environmentRunnerIngressEndpoint" as ENVIRONMENT_RUNNER_INGRESS_ENDPOINT, Environment, since P09, Published,
                    hook runner_ingress_endpoint(RunnerIngressEndpointParams<Config>) -> RunnerIngressEndpointResult;
                /// `environmentSyncIn`: native file transfer into the sandbox.
                EnvironmentSyncIn = "environmentSyncIn" as ENVIRONMENT_SYNC_IN, Environment, since P09, Published,
                    hook sync_in(SyncInParams<Config>) -> SyncResult;
                /// `environmentSyncOut`: native file transfer out of the sandbox.
                EnvironmentSyncOut = "environmentSyncOut" as ENVIRONMENT_SYNC_OUT, Environment, since P09, Published,
                    hook sync_out(SyncOutParams<Config>) -> SyncResult;
                /// `environmentStartInteractiveSetup`: start an interactive setup session.
                EnvironmentStartInteractiveSetup = "environmentStartInteractiveSetup" as ENVIRONMENT_START_INTERACTIVE_SETUP, Environment, since P09, Published,
                    hook start_interactive_setup(StartInteractiveSetupParams<Config>) -> StartInteractiveSetupResult;
                /// `environmentGetInteractiveSetup`: read an interactive setup session.
                EnvironmentGetInteractiveSetup = "environmentGetInteractiveSetup" as ENVIRONMENT_GET_INTERACTIVE_SETUP, Environment, since P09, Published,
                    hook get_interactive_setup(GetInteractiveSetupParams<Config>) -> GetInteractiveSetupResult;
                /// `environmentCaptureTemplate`: capture a template from a setup session.
                EnvironmentCaptureTemplate = "environmentCaptureTemplate" as ENVIRONMENT_CAPTURE_TEMPLATE, Environment, since P09, Published,
                    hook capture_template(CaptureTemplateParams<Config>) -> CaptureTemplateResult;
                /// `environmentCancelInteractiveSetup`: cancel an interactive setup session.
                EnvironmentCancelInteractiveSetup = "environmentCancelInteractiveSetup" as ENVIRONMENT_CANCEL_INTERACTIVE_SETUP, Environment, since P09, Published,
                    hook cancel_interactive_setup(CancelInteractiveSetupParams<Config>) -> CancelInteractiveSetupResult;
                /// `environmentDeleteTemplate`: delete a template.
                EnvironmentDeleteTemplate = "environmentDeleteTemplate" as ENVIRONMENT_DELETE_TEMPLATE, Environment, since P09, Published,
                    hook delete_template(DeleteTemplateParams<Config>) -> DeleteTemplateResult;
                /// `loginPtyOpen`: open a login terminal; its output and exit go to the host
                /// as `loginPty.output` / `loginPty.exit` notifications.
                LoginPtyOpen = "loginPtyOpen" as LOGIN_PTY_OPEN, OtherPlugin, since P09, Published,
                    hook login_pty_open(LoginPtyOpenParams) -> LoginPtyOpenResult;
                /// `loginPtyInput`: write input to a login terminal.
                LoginPtyInput = "loginPtyInput" as LOGIN_PTY_INPUT, OtherPlugin, since P09, Published,
                    hook login_pty_input(LoginPtyInputParams) -> ();
                /// `loginPtyStop`: stop a login terminal's child.
                LoginPtyStop = "loginPtyStop" as LOGIN_PTY_STOP, OtherPlugin, since P09, Published,
                    hook login_pty_stop(LoginPtyStopParams) -> ();
                /// `loginPtyClose`: close the login terminal of a host route.
                LoginPtyClose = "loginPtyClose" as LOGIN_PTY_CLOSE, OtherPlugin, since P09, Published,
                    hook login_pty_close(LoginPtyCloseParams) -> LoginPtyCloseResult;
                /// `duplexChannelOpen`: open a duplex command channel (what the extension
                /// `duplexCommandStream` requires).
                DuplexChannelOpen = "duplexChannelOpen" as DUPLEX_CHANNEL_OPEN, OtherPlugin, since P09, Published,
                    hook duplex_channel_open(DuplexChannelOpenParams) -> DuplexChannelOpenResult;
                /// `duplexChannelWrite`: write bytes to a duplex channel.
                DuplexChannelWrite = "duplexChannelWrite" as DUPLEX_CHANNEL_WRITE, OtherPlugin, since P09, Published,
                    hook duplex_channel_write(DuplexChannelWriteParams) -> ();
                /// `duplexChannelStop`: stop a duplex channel's command.
                DuplexChannelStop = "duplexChannelStop" as DUPLEX_CHANNEL_STOP, OtherPlugin, since P09, Published,
                    hook duplex_channel_stop(DuplexChannelStopParams) -> ();
                /// `duplexChannelClose`: close the duplex channel of a host route.
                DuplexChannelClose = "duplexChannelClose" as DUPLEX_CHANNEL_CLOSE, OtherPlugin, since P09, Published,
                    hook duplex_channel_close(DuplexChannelCloseParams) -> DuplexChannelCloseResult;
                /// `environmentStopLease`: stop a lease and keep its files (`paperclip-2026-11`).
                EnvironmentStopLease = "environmentStopLease" as ENVIRONMENT_STOP_LEASE, Environment, since P11, Newest,
                    hook stop_lease(StopLeaseParams<Config>) -> StopLeaseResult;
                /// `environmentRunnerRecoveryExecute`.
                EnvironmentRunnerRecoveryExecute = "environmentRunnerRecoveryExecute" as ENVIRONMENT_RUNNER_RECOVERY_EXECUTE, Environment, since P11, SchemaUnknown;
                /// `environmentRunnerRecovery`.
                EnvironmentRunnerRecovery = "environmentRunnerRecovery" as ENVIRONMENT_RUNNER_RECOVERY, Environment, since P11, SchemaUnknown;
                /// `environmentRunProcessControl`.
                EnvironmentRunProcessControl = "environmentRunProcessControl" as ENVIRONMENT_RUN_PROCESS_CONTROL, Environment, since P11, SchemaUnknown;
                /// `environmentProcessHandoff`.
                EnvironmentProcessHandoff = "environmentProcessHandoff" as ENVIRONMENT_PROCESS_HANDOFF, Environment, since P11, SchemaUnknown;
                /// `environmentDeleteTaskWorkspaceData`.
                EnvironmentDeleteTaskWorkspaceData = "environmentDeleteTaskWorkspaceData" as ENVIRONMENT_DELETE_TASK_WORKSPACE_DATA, Environment, since P11, SchemaUnknown;
                /// `environmentDeleteServiceData`.
                EnvironmentDeleteServiceData = "environmentDeleteServiceData" as ENVIRONMENT_DELETE_SERVICE_DATA, Environment, since P11, SchemaUnknown;
                /// `environmentGetServiceConnection`.
                EnvironmentGetServiceConnection = "environmentGetServiceConnection" as ENVIRONMENT_GET_SERVICE_CONNECTION, Environment, since P11, SchemaUnknown;
                /// `environmentAcquireServiceLease`.
                EnvironmentAcquireServiceLease = "environmentAcquireServiceLease" as ENVIRONMENT_ACQUIRE_SERVICE_LEASE, Environment, since P11, SchemaUnknown;
                /// `environmentService`.
                EnvironmentService = "environmentService" as ENVIRONMENT_SERVICE, Environment, since P11, SchemaUnknown;
            }
            host_calls {
                /// Worker→host `log` as a request (void); also sent as a notification.
                Log = "log" as LOG, LogParams => (), notification LogNotification;
                /// Worker→host `config.get`: the company's plugin config.
                ConfigGet = "config.get" as CONFIG_GET, ConfigGetParams => JsonObject;
                /// Worker→host `secrets.resolve`: the secret's value.
                SecretsResolve = "secrets.resolve" as SECRETS_RESOLVE, SecretsResolveParams => String;
                /// Worker→host `span.record`: a finished provider span (void).
                SpanRecord = "span.record" as SPAN_RECORD, SpanRecordParams => ();
                /// Worker→host `state.get`: the stored value or `null`.
                StateGet = "state.get" as STATE_GET, StateKey => serde_json::Value;
                /// Worker→host `state.set` (void).
                StateSet = "state.set" as STATE_SET, StateSetParams => ();
                /// Worker→host `state.delete` (void).
                StateDelete = "state.delete" as STATE_DELETE, StateKey => ();
                /// Worker→host `http.fetch`: a request the host makes.
                HttpFetch = "http.fetch" as HTTP_FETCH, HttpFetchParams => HttpFetchResult;
                /// Worker→host `metrics.write` (void).
                MetricsWrite = "metrics.write" as METRICS_WRITE, MetricsWriteParams => ();
                /// Worker→host `telemetry.track` (void).
                TelemetryTrack = "telemetry.track" as TELEMETRY_TRACK, TelemetryTrackParams => ();
                /// Worker→host `activity.log` (void).
                ActivityLog = "activity.log" as ACTIVITY_LOG, ActivityLogParams => ();
                /// Worker→host `events.emit` (void).
                EventsEmit = "events.emit" as EVENTS_EMIT, EventsEmitParams => ();
            }
            notifications {
                /// Worker→host `execute.log`: incremental output of the active
                /// `environmentExecute`.
                ExecuteLog = "execute.log" as EXECUTE_LOG, WorkerToHost, params ExecuteLogParams;
                /// Worker→host `loginPty.output`: login terminal output.
                LoginPtyOutput = "loginPty.output" as LOGIN_PTY_OUTPUT, WorkerToHost, params LoginPtyOutputParams;
                /// Worker→host `loginPty.exit`: a login terminal's exit.
                LoginPtyExit = "loginPty.exit" as LOGIN_PTY_EXIT, WorkerToHost, params LoginPtyExitParams;
                /// Worker→host `duplexChannel.data`: duplex channel output bytes (base64).
                DuplexChannelData = "duplexChannel.data" as DUPLEX_CHANNEL_DATA, WorkerToHost, params DuplexChannelDataParams;
                /// Worker→host `duplexChannel.exit`: a duplex channel's exit.
                DuplexChannelExit = "duplexChannel.exit" as DUPLEX_CHANNEL_EXIT, WorkerToHost, params DuplexChannelExitParams;
                /// Host→worker `onEvent` (raw params), delivered to the hook in arrival order;
                /// ignored by default.
                OnEvent = "onEvent" as ON_EVENT, HostToWorker, hook on_event;
                /// `releaseIdleSleep` as a notification (the host may send it either way); its
                /// name is the request's, above.
                ReleaseIdleSleepNotification = "releaseIdleSleep" as RELEASE_IDLE_SLEEP, HostToWorker, params ReleaseIdleSleepParams;
                /// Host→worker agent session event.
                AgentsSessionsEvent = "agents.sessions.event" as AGENTS_SESSIONS_EVENT, HostToWorker;
            }
        }
    };
}

/// `Some(stringify!(hook))` or `None`.
#[doc(hidden)]
#[macro_export]
macro_rules! __method_opt_hook {
    () => {
        None
    };
    ($hook:ident) => {
        Some(stringify!($hook))
    };
}

/// The first type given, else the second: a row's wire result type.
#[doc(hidden)]
#[macro_export]
macro_rules! __method_pick_ty {
    ($wire:ty ; $hook:ty) => {
        $wire
    };
    (; $hook:ty) => {
        $hook
    };
}

/// Generates the protocol crate's method items from a table (see [`method_table!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __method_items {
    (
        methods { $(
            $(#[$m:meta])*
            $variant:ident = $wire:tt $(as $konst:ident)?, $family:ident, since $since:ident, $upstream:ident
            $(, hook $hook:ident($params:ident $(<$cfg:ident>)?) -> $hres:ty $(=> $wres:ty)?)? ;
        )* }
        host_calls { $(
            $(#[$hm:meta])*
            $hmarker:ident = $hwire:literal as $hkonst:ident, $hparams:ty => $hresult:ty
            $(, notification $hnote:ident)? ;
        )* }
        notifications { $(
            $(#[$nm:meta])*
            $nmarker:ident = $nwire:literal as $nkonst:ident, $ndir:ident
            $(, params $nparams:ty)? $(, hook $nhook:ident)? ;
        )* }
    ) => {
        /// Method-name constants, host→worker and worker→host (generated from the method
        /// table).
        pub mod name {
            $( $(
                #[doc = concat!("`", $wire, "`: see [`Method::", stringify!($variant), "`](super::Method::", stringify!($variant), ").")]
                pub const $konst: &str = $wire;
            )? )*
            $( $(#[$hm])* pub const $hkonst: &str = $hwire; )*
            $( $(#[$nm])* pub const $nkonst: &str = $nwire; )*
        }

        $( $(
            #[doc = concat!("The marker of [`Method::", stringify!($variant), "`]: `", stringify!($hook), "(", stringify!($params), ") -> ", stringify!($hres), "`.")]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $variant;

            impl RpcMethod for $variant {
                const NAME: &'static str = Method::$variant.as_str();
                const METHOD: Option<Method> = Some(Method::$variant);
                const DIRECTION: Direction = Direction::HostToWorker;
                type Params = $params;
                type Result = $crate::__method_pick_ty!($($wres)? ; $hres);
            }
        )? )*

        $(
            $(#[$hm])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $hmarker;

            impl RpcMethod for $hmarker {
                const NAME: &'static str = name::$hkonst;
                const METHOD: Option<Method> = None;
                const DIRECTION: Direction = Direction::WorkerToHost;
                type Params = $hparams;
                type Result = $hresult;
            }

            $(
                #[doc = concat!("`", $hwire, "` as a notification.")]
                #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
                pub struct $hnote;

                impl RpcNotification for $hnote {
                    const NAME: &'static str = name::$hkonst;
                    const DIRECTION: Direction = Direction::WorkerToHost;
                    type Params = $hparams;
                }
            )?
        )*

        $( $(
            #[doc = concat!("The `", $nwire, "` notification (see [`name::", stringify!($nkonst), "`]).")]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $nmarker;

            impl RpcNotification for $nmarker {
                const NAME: &'static str = name::$nkonst;
                const DIRECTION: Direction = Direction::$ndir;
                type Params = $nparams;
            }
        )? )*

        /// Calls the visitor for every request method with a marker type (in table order:
        /// host→worker, then worker→host) and every notification with one.
        pub fn visit_methods<V: MethodVisitor>(visitor: &mut V) {
            $( $( let _ = stringify!($hook); visitor.method::<$variant>(); )? )*
            $( visitor.method::<$hmarker>(); )*
            $( $( let _ = stringify!($nparams); visitor.notification::<$nmarker>(); )? )*
            $( $( visitor.notification::<$hnote>(); )? )*
        }

        /// A host→worker request method a worker knows: one variant per row of the method
        /// table, in its order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Method {
            $( $(#[$m])* $variant, )*
        }

        impl Method {
            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Method::$variant => {
                        #[allow(unused_imports)]
                        use self::name::*;
                        $wire
                    } )*
                }
            }
        }

        /// Every host→worker request method a worker knows, in table order: the published
        /// SDK's dispatch table, the November `environmentStopLease`, and the November methods
        /// whose schemas are not published.
        pub const METHODS: &[MethodInfo] = &[
            $( MethodInfo {
                method: Method::$variant,
                name: Method::$variant.as_str(),
                family: MethodFamily::$family,
                since: $crate::__method_profile!($since),
                upstream: Upstream::$upstream,
                hook: $crate::__method_opt_hook!($($hook)?),
            }, )*
        ];

        /// Every hook of a provider, in table order: its Rust name, and the request it serves
        /// (`None` for a notification hook, which is not advertised).
        pub const HOOKS: &[HookInfo] = &[
            $( $( HookInfo { hook: stringify!($hook), method: Some(Method::$variant) }, )? )*
            $( $( HookInfo { hook: stringify!($nhook), method: None }, )? )*
        ];
    };
}

/// A profile of the table's shorthand.
#[doc(hidden)]
#[macro_export]
macro_rules! __method_profile {
    (P09) => {
        $crate::HostProfile::Paperclip2026_09
    };
    (P11) => {
        $crate::HostProfile::Paperclip2026_11
    };
}

/// Calls `$callback! { methods { … } notifications { … } }` with the hooked rows of a table
/// (see [`method_table!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __method_hooks {
    (
        $callback:path;
        methods { $($rows:tt)* }
        host_calls { $($host:tt)* }
        notifications { $(
            $(#[$nm:meta])*
            $nmarker:ident = $nwire:literal as $nkonst:ident, $ndir:ident
            $(, params $nparams:ty)? $(, hook $nhook:ident)? ;
        )* }
    ) => {
        $crate::__method_hooks! {
            @munch $callback; [ $( $( $nhook $nwire; )? )* ] [] $($rows)*
        }
    };
    (
        @munch $callback:path; [$($notes:tt)*] [$($acc:tt)*]
        $(#[$m:meta])*
        $variant:ident = $wire:tt $(as $konst:ident)?, $family:ident, since $since:ident, $upstream:ident,
            hook $hook:ident($params:ident $(<$cfg:ident>)?) -> $hres:ty $(=> $wres:ty)? ;
        $($rest:tt)*
    ) => {
        $crate::__method_hooks! {
            @munch $callback; [$($notes)*]
            [$($acc)* $(#[$m])* $variant $hook($params $(<$cfg>)?) -> $hres;]
            $($rest)*
        }
    };
    (
        @munch $callback:path; [$($notes:tt)*] [$($acc:tt)*]
        $(#[$m:meta])*
        $variant:ident = $wire:tt $(as $konst:ident)?, $family:ident, since $since:ident, $upstream:ident;
        $($rest:tt)*
    ) => {
        $crate::__method_hooks! { @munch $callback; [$($notes)*] [$($acc)*] $($rest)* }
    };
    (@munch $callback:path; [$($notes:tt)*] [$($acc:tt)*]) => {
        $callback! { methods { $($acc)* } notifications { $($notes)* } }
    };
}
