//! The zod 4 parsing semantics the published validator relies on, for raw JSON: issue
//! messages, which issues abort later checks, length checks that also see arrays, and the
//! JavaScript key order of `for…in`.
//!
//! Semantics follow zod 4.6.5 as bundled in `@paperclipai/server` 2026.916.1: string lengths
//! are counted in Unicode code points, a type error aborts the refinements of every enclosing
//! object, while length, pattern, custom and unknown-key issues let them run.

use serde_json::{Map, Value};

/// JavaScript regex `\s` and `String.prototype.trim` whitespace: the set the JSON-RPC framing trims.
pub(crate) use crate::jsonrpc::is_js_whitespace as is_js_space;
use crate::manifest::report::{code, Issue};
use crate::profile::HostProfile;

/// One segment of an issue path.
#[derive(Debug, Clone)]
pub(crate) enum Seg {
    /// An object key.
    Key(String),
    /// An array position.
    Index(usize),
}

/// An issue with zod's `continue` flag.
#[derive(Debug, Clone)]
pub(crate) struct RawIssue {
    pub path: Vec<Seg>,
    pub code: &'static str,
    pub message: String,
    /// True when later checks still run (zod `continue: true`).
    pub cont: bool,
}

impl RawIssue {
    pub fn to_issue(&self) -> Issue {
        let path: Vec<String> = self
            .path
            .iter()
            .map(|s| match s {
                Seg::Key(k) => k.clone(),
                Seg::Index(i) => i.to_string(),
            })
            .collect();
        Issue::new(path.join("."), self.code, self.message.clone())
    }
}

/// The validation context: the current path, the errors and the warnings so far.
pub(crate) struct Ctx {
    pub profile: HostProfile,
    pub path: Vec<Seg>,
    pub issues: Vec<RawIssue>,
    pub warnings: Vec<Issue>,
}

impl Ctx {
    pub fn new(profile: HostProfile) -> Self {
        Ctx { profile, path: Vec::new(), issues: Vec::new(), warnings: Vec::new() }
    }

    /// Runs `f` with `seg` appended to the path.
    pub fn at<R>(&mut self, seg: Seg, f: impl FnOnce(&mut Ctx) -> R) -> R {
        self.path.push(seg);
        let r = f(self);
        self.path.pop();
        r
    }

    /// Runs `f` under the object key `key`.
    pub fn key<R>(&mut self, key: &str, f: impl FnOnce(&mut Ctx) -> R) -> R {
        self.at(Seg::Key(key.to_owned()), f)
    }

    /// Adds an error at the current path.
    pub fn push(&mut self, code: &'static str, message: impl Into<String>, cont: bool) {
        self.issues.push(RawIssue { path: self.path.clone(), code, message: message.into(), cont });
    }

    /// Adds an error at the current path plus `extra`.
    pub fn push_at(&mut self, extra: &[Seg], code: &'static str, message: impl Into<String>) {
        let mut path = self.path.clone();
        path.extend_from_slice(extra);
        self.issues.push(RawIssue { path, code, message: message.into(), cont: true });
    }

    /// Adds a warning at the current path plus `extra`.
    pub fn warn(&mut self, extra: &[Seg], code: &'static str, message: impl Into<String>) {
        let mut path = self.path.clone();
        path.extend_from_slice(extra);
        let issue = RawIssue { path, code, message: message.into(), cont: true };
        self.warnings.push(issue.to_issue());
    }

    /// Zod's `aborted(payload, start)`: some issue since `start` stops later refinements.
    pub fn aborted_since(&self, start: usize) -> bool {
        self.issues[start..].iter().any(|i| !i.cont)
    }

    /// Reports a type error (aborting): `Invalid input: expected <expected>, received <type>`.
    pub fn invalid_type(&mut self, expected: &str, got: Option<&Value>) {
        let msg = format!("Invalid input: expected {expected}, received {}", type_name(got));
        self.push(code::INVALID_TYPE, msg, false);
    }
}

/// Zod's `parsedType` for a JSON value; `undefined` when absent.
pub(crate) fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

/// A check of a string schema, in declaration order.
#[derive(Clone, Copy)]
pub(crate) enum Check {
    /// `.min(n)`: at least `n` code points (or array items).
    Min(usize),
    /// `.max(n)`: at most `n` code points (or array items).
    Max(usize),
    /// `.regex(re, message)`: the pattern as a predicate and its message.
    Pattern(fn(&str) -> bool, &'static str),
}

/// `value.length` as the size checks see it (zod's `when`: non-nullish with a `length`),
/// converted to a number as JavaScript compares it. `None` when the check is skipped.
fn js_length(v: Option<&Value>) -> Option<(f64, &'static str)> {
    match v? {
        Value::String(s) => Some((s.chars().count() as f64, "string")),
        Value::Array(a) => Some((a.len() as f64, "array")),
        Value::Object(m) => m.get("length").map(|l| (js_to_number(l), "unknown")),
        _ => None,
    }
}

/// JavaScript `Number(value)` for a JSON value (approximate for exotic strings).
fn js_to_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => js_string_to_number(s),
        Value::Array(a) => match a.as_slice() {
            [] => 0.0,
            [Value::Null] => 0.0,
            [one @ (Value::String(_) | Value::Number(_) | Value::Bool(_))] => match one {
                Value::Bool(_) => f64::NAN,
                Value::String(s) => js_string_to_number(s),
                other => js_to_number(other),
            },
            [Value::Array(inner)] => js_to_number(&Value::Array(inner.clone())),
            _ => f64::NAN,
        },
        Value::Object(_) => f64::NAN,
    }
}

fn js_string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    let radix = |p: &str, r: u32| {
        t.strip_prefix(p)
            .filter(|d| !d.is_empty())
            .and_then(|d| u64::from_str_radix(d, r).ok())
            .map(|n| n as f64)
    };
    for (p, r) in [("0x", 16), ("0X", 16), ("0o", 8), ("0O", 8), ("0b", 2), ("0B", 2)] {
        if t.starts_with(p) {
            return radix(p, r).unwrap_or(f64::NAN);
        }
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    if t.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E')) {
        t.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// A JavaScript comparison result (false when either side is NaN), named for readability.
fn holds(comparison: bool) -> bool {
    comparison
}

/// Runs the size checks of a string or array schema on `v` (they also run after a type error
/// when the value has a `length`, as zod's `when` does).
pub(crate) fn size_checks(cx: &mut Ctx, v: Option<&Value>, checks: &[Check]) {
    let Some((len, origin)) = js_length(v) else { return };
    let unit = match origin {
        "string" => Some("characters"),
        "array" => Some("items"),
        _ => None,
    };
    for check in checks {
        match *check {
            Check::Min(n) if !holds(len >= n as f64) => {
                let msg = match unit {
                    Some(u) => format!("Too small: expected {origin} to have >={n} {u}"),
                    None => format!("Too small: expected {origin} to be >={n}"),
                };
                cx.push(code::TOO_SMALL, msg, true);
            }
            Check::Max(n) if !holds(len <= n as f64) => {
                let msg = match unit {
                    Some(u) => format!("Too big: expected {origin} to have <={n} {u}"),
                    None => format!("Too big: expected {origin} to be <={n}"),
                };
                cx.push(code::TOO_BIG, msg, true);
            }
            _ => {}
        }
    }
}

/// `z.string()` with `checks`: returns the string when it has the right type.
pub(crate) fn string<'v>(cx: &mut Ctx, v: Option<&'v Value>, checks: &[Check]) -> Option<&'v str> {
    let Some(Value::String(s)) = v else {
        cx.invalid_type("string", v);
        size_checks(cx, v, checks);
        return None;
    };
    for check in checks {
        match *check {
            Check::Pattern(matches, message) => {
                if !matches(s) {
                    cx.push(code::INVALID_FORMAT, message, true);
                }
            }
            size => size_checks(cx, v, &[size]),
        }
    }
    Some(s)
}

/// An optional field: runs `f` unless the key is absent.
pub(crate) fn optional<'v>(
    cx: &mut Ctx,
    map: &'v Map<String, Value>,
    key: &str,
    f: impl FnOnce(&mut Ctx, &'v Value),
) {
    if let Some(v) = map.get(key) {
        cx.key(key, |cx| f(cx, v));
    }
}

/// `z.boolean().optional()` at `key`.
pub(crate) fn opt_bool(cx: &mut Ctx, map: &Map<String, Value>, key: &str) {
    optional(cx, map, key, |cx, v| {
        if !v.is_boolean() {
            cx.invalid_type("boolean", Some(v));
        }
    });
}

/// `z.array(element)` with size `checks`; `element` runs under each index.
pub(crate) fn array<'v>(
    cx: &mut Ctx,
    v: Option<&'v Value>,
    checks: &[Check],
    mut element: impl FnMut(&mut Ctx, &'v Value),
) -> Option<&'v Vec<Value>> {
    let Some(Value::Array(items)) = v else {
        cx.invalid_type("array", v);
        size_checks(cx, v, checks);
        return None;
    };
    for (i, item) in items.iter().enumerate() {
        cx.at(Seg::Index(i), |cx| element(cx, item));
    }
    size_checks(cx, v, checks);
    Some(items)
}

/// `z.object(...)`: returns the map when the value is an object (arrays are not).
pub(crate) fn object<'v>(cx: &mut Ctx, v: Option<&'v Value>) -> Option<&'v Map<String, Value>> {
    match v {
        Some(Value::Object(m)) => Some(m),
        _ => {
            cx.invalid_type("object", v);
            None
        }
    }
}

/// `z.enum(values)`.
pub(crate) fn enumeration(cx: &mut Ctx, v: Option<&Value>, values: &[&str]) -> bool {
    if let Some(Value::String(s)) = v {
        if values.contains(&s.as_str()) {
            return true;
        }
    }
    let msg = if let [one] = values {
        format!("Invalid input: expected \"{one}\"")
    } else {
        let list: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
        format!("Invalid option: expected one of {}", list.join("|"))
    };
    cx.push(code::INVALID_VALUE, msg, false);
    false
}

/// The keys of `map` in JavaScript `for…in` order: array-index keys ascending, then the rest
/// in insertion order.
pub(crate) fn js_key_order(map: &Map<String, Value>) -> Vec<&str> {
    let mut index: Vec<(u32, &str)> = Vec::new();
    let mut rest = Vec::new();
    for k in map.keys() {
        match array_index(k) {
            Some(n) => index.push((n, k)),
            None => rest.push(k.as_str()),
        }
    }
    index.sort_by_key(|(n, _)| *n);
    index.into_iter().map(|(_, k)| k).chain(rest).collect()
}

fn array_index(k: &str) -> Option<u32> {
    let canonical = k == "0" || (!k.starts_with('0') && k.bytes().all(|b| b.is_ascii_digit()));
    if !canonical || k.is_empty() {
        return None;
    }
    k.parse::<u32>().ok().filter(|n| *n != u32::MAX)
}

/// Zod's message for unknown keys: `Unrecognized key: "a"` / `Unrecognized keys: "a", "b"`.
pub(crate) fn unrecognized_message(keys: &[&str]) -> String {
    let list: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
    let s = if keys.len() > 1 { "s" } else { "" };
    format!("Unrecognized key{s}: {}", list.join(", "))
}

/// A strict object's unknown keys: one continuable issue at the object's path.
pub(crate) fn strict_keys(cx: &mut Ctx, map: &Map<String, Value>, known: &[&str]) {
    let unknown: Vec<&str> = js_key_order(map).into_iter().filter(|k| !known.contains(k)).collect();
    if !unknown.is_empty() {
        cx.push(code::UNRECOGNIZED_KEYS, unrecognized_message(&unknown), true);
    }
}

/// The message of `jsonSchemaSchema`'s refinement.
pub const JSON_SCHEMA_MESSAGE: &str =
    "Must be a valid JSON Schema object (requires at least a 'type', '$ref', or composition keyword)";

/// `jsonSchemaSchema`: a record that, when non-empty, has a string `type` or a `$ref`, `oneOf`,
/// `anyOf` or `allOf` key. A `__proto__` key is dropped by zod's record parser.
pub(crate) fn json_schema(cx: &mut Ctx, v: Option<&Value>) {
    let Some(Value::Object(m)) = v else {
        cx.invalid_type("record", v);
        return;
    };
    let has = |k: &str| m.contains_key(k);
    let non_empty = m.keys().any(|k| k != "__proto__");
    let ok = !non_empty
        || matches!(m.get("type"), Some(Value::String(_)))
        || has("$ref")
        || has("oneOf")
        || has("anyOf")
        || has("allOf");
    if !ok {
        cx.push(code::CUSTOM, JSON_SCHEMA_MESSAGE, true);
    }
}

/// Second and later occurrences of each duplicated value, deduplicated, in occurrence order
/// (`[...new Set(values.filter((v, i) => values.indexOf(v) !== i))]`).
pub(crate) fn duplicates<'a>(values: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) && !out.contains(v) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_puts_array_indices_first() {
        let m = json!({"b": 1, "10": 1, "a": 1, "2": 1, "01": 1, "4294967295": 1});
        let order = js_key_order(m.as_object().unwrap());
        assert_eq!(order, ["2", "10", "b", "a", "01", "4294967295"]);
    }

    #[test]
    fn duplicates_in_occurrence_order() {
        assert_eq!(duplicates(&["a", "b", "b", "a", "b"]), ["b", "a"]);
        assert!(duplicates(&["a", "b"]).is_empty());
    }

    #[test]
    fn length_counts_code_points_and_sees_arrays() {
        let mut cx = Ctx::new(HostProfile::Paperclip2026_09);
        let emoji = Value::String("\u{1F600}".repeat(100));
        assert!(string(&mut cx, Some(&emoji), &[Check::Max(100)]).is_some());
        assert!(cx.issues.is_empty());
        string(&mut cx, Some(&json!([])), &[Check::Min(1)]);
        let codes: Vec<_> = cx.issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, ["invalid_type", "too_small"]);
        assert_eq!(cx.issues[1].message, "Too small: expected array to have >=1 items");
    }

    #[test]
    fn js_numbers() {
        assert_eq!(js_string_to_number(" 12 "), 12.0);
        assert_eq!(js_string_to_number("0x10"), 16.0);
        assert!(js_string_to_number("abc").is_nan());
        assert_eq!(js_to_number(&json!(["3"])), 3.0);
    }
}
