//! A method table of its own, with one method the real table does not have:
//! `environmentFrobnicateLease`. Its row below is the whole change a new method needs, exactly
//! as in the protocol crate's table: the protocol's generator turns it into a name constant, a
//! marker type, a [`methods::Method`] variant, a registry entry and a hook entry, and the SDK's
//! generator into a hook of [`provider::SandboxProvider`] and its dispatch. The tests check
//! each of them.

/// The fixture table, handed to a generator as the protocol crate's `method_table!` does.
macro_rules! fixture_table {
    ($generator:path $(; $callback:path)?) => {
        $generator! {
            $($callback;)?
            methods {
                /// `health`, as in the real table.
                Health = "health" as HEALTH, Handshake, since P09, Published,
                    hook health(HealthParams) -> HealthResult;
                /// The new method: this row is all it takes.
                EnvironmentFrobnicateLease = "environmentFrobnicateLease" as ENVIRONMENT_FROBNICATE_LEASE,
                    Environment, since P11, Newest, hook frobnicate_lease(ProbeParams<Config>) -> ProbeResult;
            }
            host_calls {}
            notifications {}
        }
    };
}

/// The protocol items generated from the fixture table. The generator names the registry's
/// types by their bare names; the real ones are tied to the real `Method` enum, so the
/// fixture declares the same shapes over its own.
pub mod methods {
    use paperclip_sandbox_protocol::methods::{
        Direction, HealthParams, HealthResult, MethodFamily, ProbeParams, ProbeResult, Upstream,
    };
    use paperclip_sandbox_protocol::HostProfile;

    /// [`paperclip_sandbox_protocol::methods::RpcMethod`] over the fixture's [`Method`].
    pub trait RpcMethod {
        /// The wire name.
        const NAME: &'static str;
        /// The method.
        const METHOD: Option<Method>;
        /// Who sends it.
        const DIRECTION: Direction;
        /// The params type.
        type Params;
        /// The result type.
        type Result;
    }

    /// [`paperclip_sandbox_protocol::methods::MethodVisitor`] over the fixture's methods.
    pub trait MethodVisitor {
        /// Called once per request method.
        fn method<M: RpcMethod>(&mut self);
    }

    /// [`paperclip_sandbox_protocol::methods::MethodInfo`] over the fixture's [`Method`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        /// Its hook.
        pub hook: Option<&'static str>,
    }

    /// [`paperclip_sandbox_protocol::methods::HookInfo`] over the fixture's [`Method`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct HookInfo {
        /// The hook's Rust name.
        pub hook: &'static str,
        /// The request it serves.
        pub method: Option<Method>,
    }

    fixture_table!(paperclip_sandbox_protocol::__method_items);
}

/// The SDK trait generated from the fixture table.
pub mod provider {
    use crate::methods::Method;
    use paperclip_sandbox_protocol::methods::{
        HealthParams, HealthResult, ProbeParams, ProbeResult,
    };

    fixture_table!(paperclip_sandbox_protocol::__method_hooks; paperclip_sandbox_sdk::__provider_items);
}
