//! What a check is: its id, requirement, worker scope, gates and function. The check
//! functions live in the modules of [`crate::checks`]; [`crate::registry::CHECKS`] lists every
//! check, one row each, in running order.

use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::methods::Method;
use paperclip_sandbox_protocol::HostProfile;

use crate::context::{CheckResult, Ctx};
use crate::hostmodel::HostCall;
use crate::requirements::{requirement, Level, Requirement};

/// A check function.
pub type CheckFn = fn(&mut Ctx<'_>) -> CheckResult;

/// Which worker process a check talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The shared, initialized main worker (respawned if an earlier check killed it).
    Main,
    /// Fresh workers the check spawns itself.
    Fresh,
    /// No worker: the check judges the manifest or what the run has seen so far.
    Offline,
}

/// A precondition of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The worker advertises this method in `supportedMethods` (a row of the protocol's
    /// method table).
    Method(Method),
    /// This capability is effective.
    #[allow(dead_code)] // no check gates on a capability alone yet
    Capability(Capability),
    /// The host makes this call (or uses this path) for the worker (see
    /// [`crate::hostmodel::host_makes`]).
    Host(HostCall),
    /// The run targets this host profile.
    Profile(HostProfile),
    /// A manifest is available.
    Manifest,
    /// The oversize-frame check is not disabled.
    Oversize,
    /// A working lease: BLOCKED when `lifecycle.acquire` (or `lifecycle.realize`) failed.
    Lease,
    /// `--require-cli` names at least one CLI.
    RequiredClis,
}

/// The needs of a check that runs commands in a working lease: acquire and execute advertised,
/// and the lease the run acquired.
pub const EXECUTE_IN_LEASE: &[Need] = &[
    Need::Method(Method::EnvironmentAcquireLease),
    Need::Method(Method::EnvironmentExecute),
    Need::Lease,
];

/// The checks whose failure blocks a check that needs a lease, in order.
pub const LEASE_PREREQUISITES: &[&str] = &["lifecycle.acquire", "lifecycle.realize"];

/// One check.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// Stable id, `family.name`.
    pub id: &'static str,
    /// The requirement it judges (see [`crate::requirements`]).
    pub requirement: &'static str,
    /// What it does, in a few words.
    pub title: &'static str,
    /// The worker process it uses.
    pub scope: Scope,
    /// Its preconditions.
    pub needs: &'static [Need],
    /// The check itself.
    pub run: CheckFn,
}

impl Check {
    /// The requirement row.
    pub fn requirement(&self) -> &'static Requirement {
        requirement(self.requirement)
    }

    /// MUST or SHOULD, from the requirement.
    pub fn level(&self) -> Level {
        self.requirement().level
    }

    /// The family: the id up to the first dot.
    pub fn family(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }

    /// True when the check needs a working lease.
    pub fn needs_lease(&self) -> bool {
        self.needs.contains(&Need::Lease)
    }
}

/// A check row, for [`crate::registry::CHECKS`].
pub const fn check(
    id: &'static str,
    requirement: &'static str,
    title: &'static str,
    scope: Scope,
    needs: &'static [Need],
    run: CheckFn,
) -> Check {
    Check { id, requirement, title, scope, needs, run }
}
