//! One row of the fixture table gave the new method everything the real table's rows get.

use paperclip_sandbox_protocol::methods::{Direction, MethodFamily, Upstream};
use paperclip_sandbox_protocol::HostProfile;
use paperclip_sandbox_table_fixture::methods::{
    name, EnvironmentFrobnicateLease, Method, RpcMethod, HOOKS, METHODS,
};
use paperclip_sandbox_table_fixture::provider::SandboxProvider;

#[test]
fn the_row_yields_name_marker_method_registry_and_hook_entries() {
    assert_eq!(name::ENVIRONMENT_FROBNICATE_LEASE, "environmentFrobnicateLease");
    assert_eq!(Method::EnvironmentFrobnicateLease.as_str(), "environmentFrobnicateLease");
    assert_eq!(<EnvironmentFrobnicateLease as RpcMethod>::NAME, "environmentFrobnicateLease");
    assert_eq!(<EnvironmentFrobnicateLease as RpcMethod>::DIRECTION, Direction::HostToWorker);
    let row = METHODS.iter().find(|m| m.name == "environmentFrobnicateLease").expect("a row");
    assert_eq!(row.method, Method::EnvironmentFrobnicateLease);
    assert_eq!(row.family, MethodFamily::Environment);
    assert_eq!(row.since, HostProfile::Paperclip2026_11);
    assert_eq!(row.upstream, Upstream::Newest);
    assert_eq!(row.hook, Some("frobnicate_lease"));
    let hook = HOOKS.iter().find(|h| h.hook == "frobnicate_lease").expect("a hook entry");
    assert_eq!(hook.method, Some(Method::EnvironmentFrobnicateLease));
}

/// A provider writing the new hook: this compiles only because the row generated the hook with
/// the row's params and result types.
struct Frobnicator;

#[paperclip_sandbox_sdk::async_trait]
impl SandboxProvider for Frobnicator {
    type Config = paperclip_sandbox_protocol::methods::JsonObject;

    fn implemented_methods(&self) -> &'static [&'static str] {
        &[name::ENVIRONMENT_FROBNICATE_LEASE]
    }

    async fn frobnicate_lease(
        &self,
        _params: paperclip_sandbox_protocol::methods::ProbeParams,
        _cx: paperclip_sandbox_sdk::Context,
    ) -> paperclip_sandbox_sdk::HookResult<paperclip_sandbox_protocol::methods::ProbeResult> {
        Ok(paperclip_sandbox_protocol::methods::ProbeResult::new(true))
    }
}

#[test]
fn the_row_yields_a_provider_hook() {
    assert_eq!(Frobnicator.implemented_methods(), ["environmentFrobnicateLease"]);
}
