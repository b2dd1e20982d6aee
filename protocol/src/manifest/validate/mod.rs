//! The manifest validator: the rules of `pluginManifestV1Schema` (npm `@paperclipai/shared`
//! 2026.916.1) on raw JSON, with the profile differences of paperclip-2026-11.
//!
//! The validator reports every issue the published validator reports, with its path, zod code
//! and message, in the same order. Like zod, a type error stops the cross-field rules of the
//! objects around it, while length, pattern and unknown-key errors do not.

mod driver;
mod fields;
mod output;
mod patterns;
mod zod;

use serde_json::{Map, Value};

use self::zod::{Check, Ctx, Seg};
use super::report::{code, ValidationReport};
use super::vocabulary::{PLUGIN_API_VERSION, PLUGIN_CAPABILITIES, PLUGIN_CATEGORIES};
use crate::profile::HostProfile;

pub use self::driver::{DRIVER_KEY_MESSAGE, LOGIN_ALIAS_MESSAGE};
pub use self::zod::JSON_SCHEMA_MESSAGE;

const ID_MESSAGE: &str = "Plugin id must start with a lowercase alphanumeric and contain only lowercase letters, digits, dots, hyphens, or underscores";
const VERSION_MESSAGE: &str = "Version must follow semver (e.g. 1.0.0 or 1.0.0-beta.1)";
/// The message of the `environment.drivers.register` requirement.
pub const DRIVERS_CAPABILITY_MESSAGE: &str =
    "Capability 'environment.drivers.register' is required when environmentDrivers are declared";

/// The top-level fields of `pluginManifestV1Schema`, in declaration order. Any other top-level
/// key is stripped from the output.
pub const TOP_LEVEL_FIELDS: &[&str] = &[
    "id",
    "apiVersion",
    "version",
    "displayName",
    "description",
    "author",
    "categories",
    "minimumHostVersion",
    "minimumPaperclipVersion",
    "capabilities",
    "entrypoints",
    "instanceConfigSchema",
    "jobs",
    "webhooks",
    "tools",
    "database",
    "apiRoutes",
    "environmentDrivers",
    "agents",
    "projects",
    "routines",
    "skills",
    "localFolders",
    "objectReferences",
    "launchers",
    "ui",
];

/// Validates a manifest given as raw JSON against `profile`.
///
/// Never panics, whatever the input. `valid` is true exactly when `errors` is empty.
pub fn validate(value: &Value, profile: HostProfile) -> ValidationReport {
    let mut cx = Ctx::new(profile);
    check_manifest(&mut cx, value);
    let errors: Vec<_> = cx.issues.iter().map(zod::RawIssue::to_issue).collect();
    let valid = errors.is_empty();
    let output = if valid { value.as_object().map(|m| output::manifest(m, profile)) } else { None };
    ValidationReport { valid, errors, warnings: cx.warnings, output }
}

fn check_manifest(cx: &mut Ctx, value: &Value) {
    let Some(m) = zod::object(cx, Some(value)) else { return };
    cx.key("id", |cx| {
        zod::string(
            cx,
            m.get("id"),
            &[Check::Min(1), Check::Pattern(patterns::is_key, ID_MESSAGE)],
        );
    });
    cx.key("apiVersion", |cx| {
        if m.get("apiVersion").and_then(Value::as_f64) != Some(f64::from(PLUGIN_API_VERSION)) {
            cx.push(
                code::INVALID_VALUE,
                format!("Invalid input: expected {PLUGIN_API_VERSION}"),
                false,
            );
        }
    });
    cx.key("version", |cx| {
        zod::string(
            cx,
            m.get("version"),
            &[Check::Min(1), Check::Pattern(patterns::is_semver, VERSION_MESSAGE)],
        );
    });
    for (key, max) in [("displayName", 100), ("description", 500), ("author", 200)] {
        cx.key(key, |cx| {
            zod::string(cx, m.get(key), &[Check::Min(1), Check::Max(max)]);
        });
    }
    cx.key("categories", |cx| {
        zod::array(cx, m.get("categories"), &[Check::Min(1)], |cx, item| {
            zod::enumeration(cx, Some(item), PLUGIN_CATEGORIES);
        });
    });
    for (key, message) in [
        ("minimumHostVersion", "minimumHostVersion must follow semver (e.g. 1.0.0)"),
        ("minimumPaperclipVersion", "minimumPaperclipVersion must follow semver (e.g. 1.0.0)"),
    ] {
        zod::optional(cx, m, key, |cx, v| {
            zod::string(cx, Some(v), &[Check::Pattern(patterns::is_semver, message)]);
        });
    }
    cx.key("capabilities", |cx| {
        zod::array(cx, m.get("capabilities"), &[Check::Min(1)], |cx, item| {
            zod::enumeration(cx, Some(item), PLUGIN_CAPABILITIES);
        });
    });
    cx.key("entrypoints", |cx| {
        let Some(e) = zod::object(cx, m.get("entrypoints")) else { return };
        cx.key("worker", |cx| {
            zod::string(cx, e.get("worker"), &[Check::Min(1)]);
        });
        zod::optional(cx, e, "ui", |cx, v| {
            zod::string(cx, Some(v), &[Check::Min(1)]);
        });
    });
    // The optional fields after `entrypoints`, in declaration order.
    let optional = TOP_LEVEL_FIELDS.iter().position(|k| *k == "instanceConfigSchema").unwrap_or(0);
    for &key in &TOP_LEVEL_FIELDS[optional..] {
        let check: fn(&mut Ctx, &Value) = match key {
            "instanceConfigSchema" => |cx, v| zod::json_schema(cx, Some(v)),
            "jobs" => fields::check_jobs,
            "webhooks" => fields::check_webhooks,
            "tools" => fields::check_tools,
            "database" => fields::check_database,
            "environmentDrivers" => |cx, v| {
                zod::array(cx, Some(v), &[], driver::check_driver);
            },
            "ui" => fields::check_ui,
            _ => {
                debug_assert!(fields::is_unchecked_array(key), "{key} has no check");
                fields::check_unchecked_array
            }
        };
        zod::optional(cx, m, key, check);
    }
    let unchecked = TOP_LEVEL_FIELDS.iter().copied().filter(|k| fields::is_unchecked_array(k));
    for key in unchecked.chain(["database", "ui"]) {
        if m.contains_key(key) {
            fields::warn_unchecked(cx, key);
        }
    }
    if !cx.aborted_since(0) {
        cross_field_rules(cx, m);
    }
}

fn non_empty(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

fn truthy_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The manifest's `superRefine`, in the published order.
fn cross_field_rules(cx: &mut Ctx, m: &Map<String, Value>) {
    let ui = m.get("ui").and_then(Value::as_object);
    let ui_non_empty = |k: &str| ui.is_some_and(|u| non_empty(u, k));
    let entry_ui = m.get("entrypoints").and_then(|e| truthy_str(e.get("ui")));
    if (ui_non_empty("slots") || ui_non_empty("launchers")) && entry_ui.is_none() {
        cx.push_at(
            &[Seg::Key("entrypoints".into()), Seg::Key("ui".into())],
            code::CUSTOM,
            "entrypoints.ui is required when ui.slots or ui.launchers are declared",
        );
    }
    if let (Some(host), Some(paperclip)) =
        (truthy_str(m.get("minimumHostVersion")), truthy_str(m.get("minimumPaperclipVersion")))
    {
        if host != paperclip {
            cx.push_at(
                &[Seg::Key("minimumHostVersion".into())],
                code::CUSTOM,
                "minimumHostVersion and minimumPaperclipVersion must match when both are declared",
            );
        }
    }
    let caps: Vec<&str> = m
        .get("capabilities")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let require = |cx: &mut Ctx, cap: &str, what: &str| {
        if !caps.contains(&cap) {
            cx.push_at(
                &[Seg::Key("capabilities".into())],
                code::CUSTOM,
                format!("Capability '{cap}' is required when {what} are declared"),
            );
        }
    };
    for (key, cap, what) in [
        ("tools", "agent.tools.register", "tools"),
        ("environmentDrivers", "environment.drivers.register", "environmentDrivers"),
        ("agents", "agents.managed", "managed agents"),
        ("projects", "projects.managed", "managed projects"),
        ("routines", "routines.managed", "managed routines"),
        ("skills", "skills.managed", "managed skills"),
        ("localFolders", "local.folders", "local folders"),
        ("jobs", "jobs.schedule", "jobs"),
        ("webhooks", "webhooks.receive", "webhooks"),
        ("apiRoutes", "api.routes.register", "apiRoutes"),
    ] {
        if non_empty(m, key) {
            require(cx, cap, what);
        }
    }
    if non_empty(m, "objectReferences") {
        require(cx, "external.objects.detect", "objectReferences");
        require(cx, "external.objects.read", "objectReferences");
        object_reference_webhooks(cx, m);
    }
    if let Some(db) = m.get("database") {
        require(cx, "database.namespace.migrate", "database migrations");
        require(cx, "database.namespace.read", "database migrations");
        let tables = strings(db.get("coreReadTables"), None);
        report_duplicates(
            cx,
            &tables,
            "Duplicate database coreReadTables",
            &["database", "coreReadTables"],
        );
    }
    duplicate_rules(cx, m);
}

fn object_reference_webhooks(cx: &mut Ctx, m: &Map<String, Value>) {
    let declared = strings(m.get("webhooks"), Some("endpointKey"));
    let providers =
        m.get("objectReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, provider) in providers.iter().enumerate() {
        for key in strings(provider.get("webhookEndpointKeys"), None) {
            if !declared.contains(&key) {
                cx.push_at(
                    &[Seg::Key("objectReferences".into()), Seg::Index(i), Seg::Key("webhookEndpointKeys".into())],
                    code::CUSTOM,
                    format!("objectReferences webhookEndpointKey \"{key}\" must match a declared webhook endpoint"),
                );
            }
        }
    }
}

/// The strings of an array, or of one string field of each element of an array of objects.
fn strings<'v>(v: Option<&'v Value>, field: Option<&str>) -> Vec<&'v str> {
    let Some(Value::Array(items)) = v else { return Vec::new() };
    items
        .iter()
        .filter_map(|item| match field {
            Some(f) => item.get(f),
            None => Some(item),
        })
        .filter_map(Value::as_str)
        .collect()
}

fn report_duplicates(cx: &mut Ctx, values: &[&str], label: &str, path: &[&str]) {
    let dups = zod::duplicates(values);
    if !dups.is_empty() {
        let segs: Vec<Seg> = path.iter().map(|p| Seg::Key((*p).into())).collect();
        cx.push_at(&segs, code::CUSTOM, format!("{label}: {}", dups.join(", ")));
    }
}

/// The uniqueness rules, in the published order.
fn duplicate_rules(cx: &mut Ctx, m: &Map<String, Value>) {
    let keyed = |cx: &mut Ctx, key: &str, field: &str, label: &str| {
        if m.contains_key(key) {
            report_duplicates(cx, &strings(m.get(key), Some(field)), label, &[key]);
        }
    };
    keyed(cx, "jobs", "jobKey", "Duplicate job keys");
    keyed(cx, "webhooks", "endpointKey", "Duplicate webhook endpoint keys");
    if let Some(Value::Array(routes)) = m.get("apiRoutes") {
        report_duplicates(
            cx,
            &strings(m.get("apiRoutes"), Some("routeKey")),
            "Duplicate api route keys",
            &["apiRoutes"],
        );
        let sigs: Vec<String> = routes
            .iter()
            .filter_map(|r| {
                Some(format!("{} {}", r.get("method")?.as_str()?, r.get("path")?.as_str()?))
            })
            .collect();
        let sigs: Vec<&str> = sigs.iter().map(String::as_str).collect();
        report_duplicates(cx, &sigs, "Duplicate api routes", &["apiRoutes"]);
    }
    keyed(cx, "tools", "name", "Duplicate tool names");
    keyed(cx, "environmentDrivers", "driverKey", "Duplicate environment driver keys");
    keyed(cx, "localFolders", "folderKey", "Duplicate local folder keys");
    keyed(cx, "agents", "agentKey", "Duplicate managed agent keys");
    keyed(cx, "projects", "projectKey", "Duplicate managed project keys");
    keyed(cx, "routines", "routineKey", "Duplicate managed routine keys");
    keyed(cx, "skills", "skillKey", "Duplicate managed skill keys");
    keyed(cx, "objectReferences", "providerKey", "Duplicate object reference provider keys");
    let ui = m.get("ui").and_then(Value::as_object);
    if let Some(slots) = ui.and_then(|u| u.get("slots")) {
        report_duplicates(
            cx,
            &strings(Some(slots), Some("id")),
            "Duplicate UI slot ids",
            &["ui", "slots"],
        );
    }
    let ui_launchers = ui.and_then(|u| u.get("launchers"));
    let mut ids = strings(m.get("launchers"), Some("id"));
    ids.extend(strings(ui_launchers, Some("id")));
    let path: &[&str] = if ui_launchers.is_some() { &["ui", "launchers"] } else { &["launchers"] };
    report_duplicates(cx, &ids, "Duplicate launcher ids", path);
}
