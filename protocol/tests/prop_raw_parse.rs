//! Property tests: the raw parse path (`parse_line_raw`) classifies every line exactly as
//! `parse_line` (that is, `Message::from_value`) does: the same message, or the same error.

use paperclip_sandbox_protocol::jsonrpc::{parse_line, parse_line_raw, Message, RawMessage};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Envelope keys, one spelled with an escape, and a stranger.
const KEYS: &[&str] = &[
    "jsonrpc",
    "id",
    "method",
    "params",
    "result",
    "error",
    "paperclipInvocation",
    "paperclipInvocationId",
    "\\u0069d",
    "x",
];

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        Just(json!("2.0")),
        Just(json!("1.0")),
        Just(json!("health")),
        Just(json!("environmentProbe")),
        "[a-z\\u{e9}\"\\\\]{0,6}".prop_map(Value::from),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    arb_scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,3}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            Just(json!({"code": -32000, "message": "boom"})),
            Just(json!({"code": 1.5, "message": "boom"})),
            Just(json!({"id": "inv-1", "scope": {"companyId": "c1", "more": [1]}})),
            Just(json!({"id": "inv-1", "scope": {}})),
        ]
    })
}

/// A value as JSON text, sometimes with spaces around it.
fn render(value: &Value, spaced: bool) -> String {
    let text = value.to_string();
    if spaced {
        format!(" {text} ")
    } else {
        text
    }
}

/// An object written as text, so keys may repeat and may be spelled with escapes.
fn arb_object_line() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (prop::sample::select(KEYS), arb_json(), any::<bool>(), any::<bool>()),
        0..7,
    )
    .prop_map(|entries| {
        let body: Vec<String> = entries
            .iter()
            .map(|(key, value, version, spaced)| {
                // Mostly a valid version, so classification is reached.
                let value =
                    if *key == "jsonrpc" && *version { json!("2.0") } else { value.clone() };
                format!("\"{key}\":{}", render(&value, *spaced))
            })
            .collect();
        format!("{{{}}}", body.join(","))
    })
}

fn same(line: &str) {
    let slow = parse_line(line);
    let fast = parse_line_raw(line).map(RawMessage::into_message);
    assert_eq!(fast, slow, "line: {line}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn raw_path_agrees_on_objects(line in arb_object_line()) {
        same(&line);
        // A well-formed version makes every such object reach classification.
        same(&line.replacen('{', "{\"jsonrpc\":\"2.0\",", 1));
    }

    #[test]
    fn raw_path_agrees_on_any_json(value in arb_json()) {
        same(&value.to_string());
    }

    #[test]
    fn raw_path_agrees_on_any_text(line in "[ {}\\[\\]\":,a-z0-9.eE+\\-\\\\]{0,40}") {
        same(&line);
    }
}

#[test]
fn raw_path_agrees_on_edge_cases() {
    let deep = |n: usize| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{}{}}}",
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let lines = [
        // Numbers out of range, lone surrogates, nesting past the limit: not JSON to a Value.
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1e400}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\ud800"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"m","x":"\udc00"}"#.to_owned(),
        deep(126),
        deep(127),
        deep(200),
        // Duplicate keys: the last wins.
        r#"{"jsonrpc":"2.0","id":1,"id":"two","method":"a","method":"b"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"code":2,"message":"m"}}"#
            .to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"m","paperclipInvocation":{"id":"a","id":"b","scope":{"companyId":"c"}}}"#
            .to_owned(),
        // Escapes in keys and values.
        r#"{"json\u0072pc":"2\u002e0","\u0069d":7,"method":"h\u0065alth","paperclipInvocationId":"i\"d"}"#
            .to_owned(),
        r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":-0,"method":"m","params":null}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":{},"result":1}"#.to_owned(),
        r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#.to_owned(),
        r#"{"jsonrpc": "2.0" ,"id":1,"method":"m"}"#.to_owned(),
        "\u{feff} {\"jsonrpc\":\"2.0\",\"method\":\"log\"}\r".to_owned(),
        "[1,2]".to_owned(),
        "\"str\"".to_owned(),
        "{} trailing".to_owned(),
        "not json".to_owned(),
    ];
    for line in &lines {
        same(line);
    }
    assert!(parse_line(&deep(200)).is_err());
}

#[test]
fn raw_params_are_the_raw_text() {
    let line =
        r#"{"jsonrpc":"2.0","id":"a","method":"environmentProbe","params": {"config" : {}} }"#;
    let RawMessage::Request(req) = parse_line_raw(line).unwrap() else { panic!("a request") };
    assert_eq!(req.params.unwrap().get(), r#"{"config" : {}}"#);
    assert_eq!(req.method, "environmentProbe");
    assert!(matches!(req.method, std::borrow::Cow::Borrowed(_)));
    assert!(matches!(parse_line(line), Ok(Message::Request(_))));
}
