//! Unit tests of the JSON-RPC envelope and both parse paths.

use super::*;
use serde_json::json;

fn parse(s: &str) -> Result<Message, FrameError> {
    parse_line(s)
}

#[test]
fn ids_keep_their_json_type() {
    for raw in [
        r#"{"jsonrpc":"2.0","id":7,"method":"health"}"#,
        r#"{"jsonrpc":"2.0","id":"7","method":"health"}"#,
    ] {
        let Message::Request(req) = parse(raw).unwrap() else { panic!("request") };
        let resp = Response::success(req.id.clone(), Value::Null);
        let line = Message::from(resp).to_line();
        let v: Value = serde_json::from_str(&line).unwrap();
        let sent: Value = serde_json::from_str(raw).unwrap();
        assert_eq!(v["id"], sent["id"]);
        assert_eq!(v["result"], Value::Null);
        assert!(v.as_object().unwrap().contains_key("result"));
    }
}

#[test]
fn void_result_is_explicit_null() {
    let line = Message::from(Response::success(1u64.into(), Value::Null)).to_line();
    assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n");
}

#[test]
fn parse_error_details_match_published_sdk() {
    let cases = [
        ("not json", "Parse error: Invalid JSON: not json"),
        ("42", "Parse error: Message must be a JSON object"),
        ("null", "Parse error: Message must be a JSON object"),
        (
            r#"{"jsonrpc":"1.0","id":1}"#,
            "Parse error: Invalid or missing jsonrpc version (expected \"2.0\", got \"1.0\")",
        ),
        (
            r#"{"id":1}"#,
            "Parse error: Invalid or missing jsonrpc version (expected \"2.0\", got undefined)",
        ),
        (
            "[1,2]",
            "Parse error: Invalid or missing jsonrpc version (expected \"2.0\", got undefined)",
        ),
    ];
    for (line, message) in cases {
        let err = parse(line).unwrap_err();
        let resp = err.to_response();
        assert_eq!(resp.id, None);
        let Outcome::Error(e) = resp.outcome else { panic!() };
        assert_eq!(e.code, -32700);
        assert_eq!(e.message, message, "{line}");
    }
}

#[test]
fn p3_exact_line() {
    let line = Message::from(parse("not json").unwrap_err().to_response()).to_line();
    assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: Invalid JSON: not json\"}}\n");
}

#[test]
fn invalid_json_quote_is_200_utf16_units() {
    let long = format!("x{}", "é".repeat(300));
    let FrameError::Parse(ParseErrorDetail::InvalidJson(q)) = parse(&long).unwrap_err() else {
        panic!()
    };
    assert_eq!(q.encode_utf16().count(), 200);
    let emoji = format!("{}😀", "a".repeat(199));
    let FrameError::Parse(ParseErrorDetail::InvalidJson(q)) = parse(&emoji).unwrap_err() else {
        panic!()
    };
    assert_eq!(q, "a".repeat(199));
}

#[test]
fn classification_follows_a2() {
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","method":"log","params":{}}"#),
        Ok(Message::Notification(_))
    ));
    assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":1,"result":null}"#), Ok(Message::Response(_))));
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#),
        Ok(Message::Response(Response { outcome: Outcome::Error(_), .. }))
    ));
    // P1: no result and no error is not a response.
    assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":1}"#), Err(FrameError::Invalid(_))));
    // id null with a method is neither a request nor a notification.
    let err = parse(r#"{"jsonrpc":"2.0","id":null,"method":"health"}"#).unwrap_err();
    assert!(matches!(err, FrameError::Invalid(InvalidMessage { id: None, .. })));
    // A method that is not a string.
    let err = parse(r#"{"jsonrpc":"2.0","id":"a","method":3}"#).unwrap_err();
    let resp = err.to_response();
    assert_eq!(resp.id, Some(Id::from("a")));
    assert!(matches!(resp.outcome, Outcome::Error(ErrorObject { code: -32600, .. })));
    // Response checked before request, as the SDK does.
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":1,"method":"x","result":1}"#),
        Ok(Message::Response(_))
    ));
}

#[test]
fn invocation_envelope_round_trips() {
    let raw = json!({"jsonrpc":"2.0","id":3,"method":"environmentExecute","params":{"a":1},
        "paperclipInvocation":{"id":"inv-1","scope":{"companyId":"c1"},"traceparent":"00-abc"}});
    let msg = Message::from_value(raw.clone()).unwrap();
    let Message::Request(req) = &msg else { panic!() };
    let inv = req.invocation.as_ref().unwrap();
    assert_eq!(inv.id, "inv-1");
    assert_eq!(inv.scope.company_id, "c1");
    assert_eq!(serde_json::to_value(&msg).unwrap(), raw);
    let note = Notification {
        method: "execute.log".into(),
        params: Some(json!({"stream":"stdout","chunk":"hi"})),
        invocation: None,
        invocation_id: Some("inv-1".into()),
    };
    assert_eq!(
        Message::from(note).to_line(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"execute.log\",\"params\":{\"stream\":\"stdout\",\"chunk\":\"hi\"},\"paperclipInvocationId\":\"inv-1\"}\n"
    );
}

#[test]
fn crlf_and_bom_are_trimmed() {
    assert!(matches!(
        parse("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r"),
        Ok(Message::Notification(_))
    ));
    assert!(matches!(
        parse("\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"),
        Ok(Message::Notification(_))
    ));
    assert_eq!(parse("  \r").unwrap_err(), FrameError::Parse(ParseErrorDetail::Empty));
}

#[test]
fn lone_surrogate_escapes_become_replacement_characters() {
    assert_eq!(replace_lone_surrogate_escapes(r#"{"a":"\ud83d\ude00\\ud800"}"#), None);
    assert_eq!(
        replace_lone_surrogate_escapes(r#"["\ud800x","\uDC00","é\ud83d"]"#).as_deref(),
        Some(r#"["\ufffdx","\ufffd","é\ufffd"]"#)
    );
    let line = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"a\ud800"}}"#;
    // Both parse paths are exact: serde_json refuses the lone surrogate.
    assert!(matches!(parse_line(line), Err(FrameError::Parse(ParseErrorDetail::InvalidJson(_)))));
    assert!(parse_line_raw(line).is_err());
    let repaired = replace_lone_surrogate_escapes(line).unwrap();
    let Ok(Message::Request(r)) = parse_line(&repaired) else { panic!("{repaired}") };
    assert_eq!(r.params, Some(serde_json::json!({"x": "a\u{fffd}"})));
    assert!(matches!(parse_line_raw(&repaired), Ok(RawMessage::Request(_))));
}

#[test]
fn json_string_units_match_the_serialized_length() {
    for text in
        ["", "plain", "a\"b\\c", "\n\r\t\u{8}\u{c}", "\u{1}\u{1f}\u{7f}", "é€😀", "\u{fffd}x"]
    {
        let encoded = serde_json::to_string(text).unwrap();
        let units: usize = encoded.chars().map(char::len_utf16).sum();
        assert_eq!(json_string_units(text) + 2, units, "{text:?}");
    }
}

/// Ids a JSON-RPC 2.0 host may send that `jsonrpsee-types`' `Id` (a `u64`) rejects are parsed
/// and echoed as JSON numbers (the book's "Design decisions" page).
#[test]
fn ids_jsonrpsee_rejects_are_parsed_and_echoed() {
    for (id, echoed) in [("-1", "-1"), ("1.5", "1.5"), ("1e3", "1000.0"), ("7", "7")] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"health"}}"#);
        let Ok(RawMessage::Request(request)) = parse_line_raw(&line) else {
            panic!("{id}: not parsed as a request")
        };
        assert_eq!(serde_json::to_string(&request.id).unwrap(), echoed, "{id}");
    }
}
