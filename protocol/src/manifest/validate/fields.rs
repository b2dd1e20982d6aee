//! The other top-level fields of the manifest (not used by sandbox providers): `jobs`,
//! `webhooks` and `tools` are checked in full; the contents of the rest are only checked for
//! their container type, with a warning that the host checks them further.

use serde_json::{Map, Value};

use super::patterns;
use super::zod::{self, Check, Ctx};
use crate::manifest::report::code;

const CRON_MESSAGE: &str = "schedule must be a valid 5-field cron expression (e.g. '*/15 * * * *')";

/// True for the array fields whose element contents this validator does not check.
pub(crate) fn is_unchecked_array(key: &str) -> bool {
    matches!(
        key,
        "apiRoutes"
            | "agents"
            | "projects"
            | "routines"
            | "skills"
            | "localFolders"
            | "objectReferences"
            | "launchers"
    )
}

/// `jobs`: `{jobKey, displayName, description?, schedule?}`.
pub(crate) fn check_jobs(cx: &mut Ctx, v: &Value) {
    named_items(cx, v, "jobKey", |cx, job| {
        zod::optional(cx, job, "schedule", |cx, v| {
            if let Some(s) = zod::string(cx, Some(v), &[]) {
                if !patterns::is_cron(s) {
                    cx.push(code::CUSTOM, CRON_MESSAGE, true);
                }
            }
        });
    });
}

/// `webhooks`: `{endpointKey, displayName, description?}`.
pub(crate) fn check_webhooks(cx: &mut Ctx, v: &Value) {
    named_items(cx, v, "endpointKey", |_, _| {});
}

/// An array of `{<key>, displayName, description?, …}` objects; `rest` checks the other fields
/// of each item, after those.
fn named_items(cx: &mut Ctx, v: &Value, key: &str, rest: impl Fn(&mut Ctx, &Map<String, Value>)) {
    zod::array(cx, Some(v), &[], |cx, item| {
        let Some(item) = zod::object(cx, Some(item)) else { return };
        min1(cx, item, key);
        min1(cx, item, "displayName");
        zod::optional(cx, item, "description", |cx, v| {
            zod::string(cx, Some(v), &[]);
        });
        rest(cx, item);
    });
}

/// `tools`: `{name, displayName, description, parametersSchema}`.
pub(crate) fn check_tools(cx: &mut Ctx, v: &Value) {
    zod::array(cx, Some(v), &[], |cx, item| {
        let Some(tool) = zod::object(cx, Some(item)) else { return };
        min1(cx, tool, "name");
        min1(cx, tool, "displayName");
        min1(cx, tool, "description");
        cx.key("parametersSchema", |cx| zod::json_schema(cx, tool.get("parametersSchema")));
    });
}

fn min1(cx: &mut Ctx, map: &Map<String, Value>, key: &str) {
    cx.key(key, |cx| {
        zod::string(cx, map.get(key), &[Check::Min(1)]);
    });
}

/// An array of objects whose contents are not checked here.
pub(crate) fn check_unchecked_array(cx: &mut Ctx, v: &Value) {
    zod::array(cx, Some(v), &[], |cx, item| {
        zod::object(cx, Some(item));
    });
}

/// `database`: an object; its contents are not checked here.
pub(crate) fn check_database(cx: &mut Ctx, v: &Value) {
    zod::object(cx, Some(v));
}

/// `ui`: `{slots?: object[] (min 1), launchers?: object[]}`; slot contents are not checked.
pub(crate) fn check_ui(cx: &mut Ctx, v: &Value) {
    let Some(ui) = zod::object(cx, Some(v)) else { return };
    zod::optional(cx, ui, "slots", |cx, v| {
        zod::array(cx, Some(v), &[Check::Min(1)], |cx, item| {
            zod::object(cx, Some(item));
        });
    });
    zod::optional(cx, ui, "launchers", check_unchecked_array);
}

/// The warning for a top-level field whose contents are not checked.
pub(crate) fn warn_unchecked(cx: &mut Ctx, key: &str) {
    cx.warn(
        &[zod::Seg::Key(key.into())],
        code::NOT_CHECKED,
        format!("the contents of {key} are not checked by this validator (sandbox providers do not use it); the host checks them at install"),
    );
}
