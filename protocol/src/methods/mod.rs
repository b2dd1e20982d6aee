//! Method names and the method registry, plus one module of params and result types per
//! method family.
//!
//! Every method is one row of the method table ([`table`]); the name constants ([`name`]), the
//! marker types, [`Method`], [`METHODS`] (every host→worker method a worker must know,
//! answering `-32004` when it has no hook, and `-32601` only for names outside it) and
//! [`HOOKS`] are generated from it.

/// `map_config` for a params type generic over its config: the same params with the config
/// mapped (the SDK parses the wire's JSON object into a provider's typed config with it).
/// `base` types hold the config in `base`, `config` types hold it directly.
macro_rules! map_config {
    (base $name:ident { $($field:ident),* }) => {
        impl<C> $name<C> {
            /// The same params with the config mapped by `f`.
            pub fn map_config<T, E>(self, f: impl FnOnce(C) -> Result<T, E>) -> Result<$name<T>, E> {
                Ok($name { base: self.base.map_config(f)?, $($field: self.$field),* })
            }
        }

        impl<C> $crate::methods::CarriesConfig<C> for $name<C> {
            fn config(&self) -> &C {
                &self.base.config
            }
        }
    };
    (config $name:ident { $($field:ident),* }) => {
        impl<C> $name<C> {
            /// The same params with the config mapped by `f`.
            pub fn map_config<T, E>(self, f: impl FnOnce(C) -> Result<T, E>) -> Result<$name<T>, E> {
                Ok($name { config: f(self.config)?, $($field: self.$field),* })
            }
        }

        impl<C> $crate::methods::CarriesConfig<C> for $name<C> {
            fn config(&self) -> &C {
                &self.config
            }
        }
    };
}

/// Params that carry the environment config (`config`, or `base.config`): every params type
/// generic over the config implements it, so code generic over the params type (the SDK's
/// per-config backend) reads the config through one accessor.
pub trait CarriesConfig<C> {
    /// The environment config of the call.
    fn config(&self) -> &C;
}

/// A params type of an `environment*` method: the base params ([`EnvironmentBaseParams`],
/// flattened) plus the method's own fields, generic over the config (`C = JsonObject`), with
/// its `map_config`. Optional fields are omitted when `None` (`skip_serializing_none`; an
/// always-serialized one carries `#[serialize_always]`).
macro_rules! params_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[serde_with::skip_serializing_none]
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        #[serde(bound(
            deserialize = "C: serde::Deserialize<'de> + Default",
            serialize = "C: serde::Serialize"
        ))]
        #[schemars(bound = "C: schemars::JsonSchema + Default + serde::Serialize")]
        pub struct $name<C = $crate::methods::JsonObject> {
            /// The base params.
            #[serde(flatten)]
            pub base: $crate::methods::EnvironmentBaseParams<C>,
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        map_config!(base $name { $($field),* });
    };
}

pub mod ai_route;
pub mod execute;
pub mod execute_bounds;
pub mod handshake;
pub mod host;
pub mod idle;
pub mod lease;
pub mod services;
pub mod setup;
pub mod stream;
pub mod sync;
pub mod table;
pub mod task;
pub mod workspace;

pub use self::{
    ai_route::*, execute::*, execute_bounds::*, handshake::*, host::*, idle::*, lease::*,
    services::*, setup::*, stream::*, sync::*, task::*, workspace::*,
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
    /// The [`Method`] of a host→worker request; `None` for a worker→host one.
    const METHOD: Option<Method>;
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

crate::method_table! { items }

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

/// What upstream Paperclip knows of a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Upstream {
    /// In the published SDK's dispatch table (`@paperclipai/plugin-sdk`, September 2026).
    Published,
    /// In the newest upstream sources, with its schema, but not yet published.
    Newest,
    /// Named by upstream (the November GitHub tests) without a published schema: negotiated
    /// through `supportedMethods`, always `-32004` here.
    SchemaUnknown,
}

/// One host→worker method a worker knows: a row of the method table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MethodInfo {
    /// The method.
    pub method: Method,
    /// The wire name.
    pub name: &'static str,
    /// Its family.
    pub family: MethodFamily,
    /// The oldest profile whose host sends it.
    pub since: HostProfile,
    /// What upstream knows of it.
    pub upstream: Upstream,
    /// The provider hook serving it (its Rust name), if a provider can implement it.
    pub hook: Option<&'static str>,
}

impl MethodInfo {
    /// True for the methods whose schemas are not published ([`Upstream::SchemaUnknown`]).
    pub fn schema_unknown(&self) -> bool {
        self.upstream == Upstream::SchemaUnknown
    }
}

/// One hook of a provider: a row of the method table with a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HookInfo {
    /// The hook's Rust name.
    pub hook: &'static str,
    /// The request it serves; `None` for a notification hook (`on_event`), which is not
    /// advertised.
    pub method: Option<Method>,
}

impl Method {
    /// Every method, in table order.
    pub fn all() -> impl Iterator<Item = Method> {
        METHODS.iter().map(|m| m.method)
    }

    /// The method of a wire name, if a worker knows it.
    pub fn from_name(name: &str) -> Option<Method> {
        lookup(name).map(|m| m.method)
    }

    /// Its row of the table.
    pub fn info(self) -> &'static MethodInfo {
        &METHODS[self as usize]
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The registry entry of a method name, if the worker knows it.
pub fn lookup(method: &str) -> Option<&'static MethodInfo> {
    METHODS.iter().find(|m| m.name == method)
}

/// True when a worker must answer `-32004` (not `-32601`) for this method when it has no hook.
pub fn is_known(method: &str) -> bool {
    lookup(method).is_some()
}

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
                // `releaseIdleSleep` is the one typed host→worker notification; it is also a
                // request the worker knows.
                if N::DIRECTION == Direction::HostToWorker {
                    assert_eq!(N::NAME, name::RELEASE_IDLE_SLEEP);
                    assert!(is_known(N::NAME));
                }
            }
        }
        let mut c = Check(Vec::new());
        visit_methods(&mut c);
        // 32 hooked host→worker methods, 12 worker→host requests.
        assert_eq!(c.0.len(), 44);
        let env = METHODS
            .iter()
            .filter(|m| m.family == MethodFamily::Environment && !m.schema_unknown())
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

    #[test]
    fn method_enum_names_and_rows_agree() {
        for (i, info) in METHODS.iter().enumerate() {
            assert_eq!(info.method as usize, i, "{}", info.name);
            assert_eq!(info.method.as_str(), info.name);
            assert_eq!(Method::from_name(info.name), Some(info.method));
            assert_eq!(info.method.info(), info);
        }
        assert_eq!(Method::OnEventRequest.as_str(), name::ON_EVENT);
        assert_eq!(<EnvironmentExecute as RpcMethod>::METHOD, Some(Method::EnvironmentExecute));
        assert_eq!(<ConfigGet as RpcMethod>::METHOD, None);
        assert_eq!(Method::from_name("environmentFrobnicate"), None);
    }

    #[test]
    fn hooks_are_the_hooked_rows_plus_on_event() {
        let hooked: Vec<_> = METHODS.iter().filter_map(|m| m.hook).collect();
        let requests: Vec<_> =
            HOOKS.iter().filter(|h| h.method.is_some()).map(|h| h.hook).collect();
        assert_eq!(hooked, requests);
        assert_eq!(
            HOOKS.iter().filter(|h| h.method.is_none()).map(|h| h.hook).collect::<Vec<_>>(),
            ["on_event"]
        );
        assert_eq!(Method::EnvironmentSyncIn.info().hook, Some("sync_in"));
        assert_eq!(Method::DuplexChannelOpen.info().hook, Some("duplex_channel_open"));
        assert_eq!(Method::PrepareIdleSleep.info().hook, Some("idle_drain"));
        assert_eq!(Method::ReleaseIdleSleep.info().hook, None);
        assert_eq!(Method::EnvironmentTask.info().upstream, Upstream::Newest);
        assert_eq!(Method::RouteAiConnection.info().since, HostProfile::Paperclip2026_11);
        assert_eq!(Method::EnvironmentService.info().upstream, Upstream::SchemaUnknown);
    }
}
