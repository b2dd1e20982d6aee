//! The manifest's fixed vocabulary: the constants both the typed manifest ([`super::types`])
//! and the validator read.

/// `PLUGIN_API_VERSION`: the only accepted `apiVersion`.
pub const PLUGIN_API_VERSION: u32 = 1;
/// The capability a plugin needs to declare `environmentDrivers`.
pub const ENVIRONMENT_DRIVERS_REGISTER: &str = "environment.drivers.register";
/// The largest accepted `defaultAcquireTimeoutMs`.
pub const MAX_DEFAULT_ACQUIRE_TIMEOUT_MS: u64 = 86_400_000;
/// The only defined `creationOperationVersion`.
pub const CREATION_OPERATION_VERSION: u32 = 1;
/// The accepted driver `kind` values.
pub const DRIVER_KINDS: &[&str] = &["environment_driver", "sandbox_provider"];
/// `PLUGIN_CATEGORIES` of npm `@paperclipai/shared` 2026.916.1.
pub const PLUGIN_CATEGORIES: &[&str] = &["connector", "workspace", "automation", "ui"];

/// `PLUGIN_CAPABILITIES` of npm `@paperclipai/shared` 2026.916.1: every capability a manifest
/// may declare in `capabilities`.
pub const PLUGIN_CAPABILITIES: &[&str] = &[
    "companies.read",
    "projects.read",
    "project.workspaces.read",
    "execution.workspaces.read",
    "issues.read",
    "issue.relations.read",
    "issue.subtree.read",
    "issue.comments.read",
    "issue.interactions.read",
    "issue.attachments.read",
    "approvals.read",
    "issue.documents.read",
    "agents.read",
    "goals.read",
    "goals.create",
    "goals.update",
    "activity.read",
    "costs.read",
    "issues.orchestration.read",
    "access.members.read",
    "access.invites.read",
    "authorization.grants.read",
    "authorization.policies.read",
    "authorization.audit.read",
    "database.namespace.read",
    "issues.create",
    "issues.update",
    "issue.relations.write",
    "issues.checkout",
    "issues.wakeup",
    "issue.comments.create",
    "issue.comments.create_human_attributed",
    "issue.interactions.create",
    "issue.interactions.respond",
    "approvals.respond",
    "issue.documents.write",
    "projects.managed",
    "routines.managed",
    "skills.managed",
    "agents.pause",
    "agents.resume",
    "agents.invoke",
    "agents.managed",
    "access.members.write",
    "access.invites.write",
    "authorization.grants.write",
    "authorization.policies.write",
    "agent.sessions.create",
    "agent.sessions.list",
    "agent.sessions.send",
    "agent.sessions.close",
    "activity.log.write",
    "metrics.write",
    "telemetry.track",
    "database.namespace.migrate",
    "database.namespace.write",
    "external.objects.detect",
    "external.objects.read",
    "external.objects.write",
    "external.objects.refresh",
    "plugin.state.read",
    "plugin.state.write",
    "events.subscribe",
    "events.emit",
    "jobs.schedule",
    "webhooks.receive",
    "api.routes.register",
    "http.outbound",
    "secrets.read-ref",
    "environment.drivers.register",
    "local.folders",
    "agent.tools.register",
    "instance.settings.register",
    "ui.sidebar.register",
    "ui.page.register",
    "ui.detailTab.register",
    "ui.dashboardWidget.register",
    "ui.commentAnnotation.register",
    "ui.action.register",
];
