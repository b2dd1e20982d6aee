//! `routeAiConnection` (`paperclip-2026-11`): pick one member of a company's AI connection
//! pool for a task.
//!
//! The host sends only authorized metadata (never credentials): the pool, the candidates it
//! already filtered, the router's cursor and an optional pin. The worker answers `selected`
//! (a member id), `exhausted` (retry at a time) or `unavailable`, each with the reasons it
//! skipped members. Parts of the request whose shape the host owns and keeps extending (a
//! member's connection binding, its usage figures, a candidate's runtime config) are kept as
//! JSON objects.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::lease::JsonObject;

/// The model profile of a pool member.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AiPoolMemberProfile {
    /// The runtime (`codex`, `acpx`, `opencode`, …).
    pub provider: String,
    /// The ACP harness when `provider` is `acpx` (`claude`, `grok`, …).
    pub acpx_agent: Option<String>,
    /// The model.
    pub model: String,
    /// The reasoning effort.
    pub effort: Option<String>,
}

/// One member of an AI connection pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AiPoolMember {
    /// The member (a UUID).
    pub id: String,
    /// The account grant the member uses (host-defined shape; no credentials).
    pub binding: JsonObject,
    /// The model profile.
    pub profile: AiPoolMemberProfile,
}

/// An AI connection pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AiConnectionPool {
    /// The pool.
    pub id: String,
    /// Its company.
    pub company_id: String,
    /// The plugin that routes it.
    pub plugin_key: String,
    /// The pool's revision.
    pub revision: i64,
    /// The pool's name.
    pub name: String,
    /// Whether the pool is enabled.
    #[serde(default)]
    pub enabled: bool,
    /// The routing mode (`round_robin`, `usage_aware`, …).
    pub mode: String,
    /// The usage threshold in percent (1–100).
    pub threshold_percent: i64,
    /// The members, in pool order.
    pub members: Vec<AiPoolMember>,
}

/// One candidate the host authorized for this routing.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AiRouteCandidate {
    /// The member.
    pub member: AiPoolMember,
    /// Its runtime config (host-defined shape).
    #[serde(default)]
    pub runtime_config: JsonObject,
    /// The host's notes about it.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Its usage figures, when known (host-defined shape).
    pub usage: Option<JsonObject>,
}

/// Params of `routeAiConnection` (`AiConnectionRouterRequest`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RouteAiConnectionParams {
    /// The company.
    pub company_id: String,
    /// The pool.
    pub pool: AiConnectionPool,
    /// The agent the connection is for.
    pub agent_id: String,
    /// The task.
    pub task_key: String,
    /// The member chosen last time, or `null`.
    #[serde(default)]
    #[serialize_always]
    pub last_member_id: Option<String>,
    /// The router cursor's version.
    pub cursor_version: i64,
    /// Opaque member ids in routing order.
    #[serde(default)]
    pub member_order: Vec<String>,
    /// A member the task is pinned to.
    pub pinned_member_id: Option<String>,
    /// The authorized candidates.
    #[serde(default)]
    pub candidates: Vec<AiRouteCandidate>,
    /// The host's current time (ISO 8601).
    pub now: String,
}

/// Result of `routeAiConnection` (`AiConnectionRouterResult`, tag `kind`). `skipped` maps a
/// member id to the reason it was not chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RouteAiConnectionResult {
    /// A member was chosen.
    #[serde(rename_all = "camelCase")]
    Selected {
        /// The chosen member.
        member_id: String,
        /// Members skipped on the way.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skipped: Option<BTreeMap<String, String>>,
    },
    /// Every member is over its limit until `retryAt`.
    #[serde(rename_all = "camelCase")]
    Exhausted {
        /// When to retry (ISO 8601).
        retry_at: String,
        /// Why each member was skipped.
        skipped: BTreeMap<String, String>,
    },
    /// No member can serve.
    #[serde(rename_all = "camelCase")]
    Unavailable {
        /// Why each member was skipped.
        skipped: BTreeMap<String, String>,
    },
}

impl RouteAiConnectionResult {
    /// `selected` without skipped members.
    pub fn selected(member_id: impl Into<String>) -> Self {
        RouteAiConnectionResult::Selected { member_id: member_id.into(), skipped: None }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn request_and_results_wire() {
        let member = json!({"id": "m1", "binding": {"mode": "shared", "provider": "openai",
            "method": "api_key", "connectionId": "c", "grantId": "g"},
            "profile": {"provider": "codex", "model": "gpt-x"}});
        let v = json!({
            "companyId": "c1",
            "pool": {"id": "p1", "companyId": "c1", "pluginKey": "k", "revision": 3, "name": "Pool",
                     "enabled": true, "mode": "round_robin", "thresholdPercent": 90, "members": [member]},
            "agentId": "a1", "taskKey": "t1", "lastMemberId": null, "cursorVersion": 2,
            "memberOrder": ["m1"],
            "candidates": [{"member": member, "runtimeConfig": {}, "notes": ["ok"]}],
            "now": "2026-12-01T00:00:00Z"
        });
        let p: RouteAiConnectionParams = from_json(v.clone());
        assert_eq!(p.pool.members[0].profile.model, "gpt-x");
        assert_eq!(serde_json::to_value(&p).unwrap(), v);

        assert_eq!(
            serde_json::to_value(RouteAiConnectionResult::selected("m1")).unwrap(),
            json!({"kind": "selected", "memberId": "m1"})
        );
        let ex = RouteAiConnectionResult::Exhausted {
            retry_at: "2026-12-01T01:00:00Z".into(),
            skipped: BTreeMap::from([("m1".into(), "usage".into())]),
        };
        assert_eq!(
            serde_json::to_value(&ex).unwrap(),
            json!({"kind": "exhausted", "retryAt": "2026-12-01T01:00:00Z", "skipped": {"m1": "usage"}})
        );
        let un: RouteAiConnectionResult = from_json(json!({"kind": "unavailable", "skipped": {}}));
        assert_eq!(un, RouteAiConnectionResult::Unavailable { skipped: BTreeMap::new() });
    }
}
