//! The wire-level cases of `vectors/framing-and-timeouts.json` that the protocol crate can
//! answer without a worker: `response-classification` (P1) and `worker-response` (P2, P3). The
//! SDK and the conformance harness replay the same cases against real workers.

use paperclip_sandbox_protocol::jsonrpc::{parse_line, ErrorObject, Message, Response};
use paperclip_sandbox_protocol::methods;
use serde_json::Value;

mod common;
use common::cases_of_kind;

/// What a worker without any hook answers for one line, built from the protocol crate alone.
fn answer_without_hooks(line: &str) -> Option<Response> {
    match parse_line(line) {
        Err(e) => Some(e.to_response()),
        Ok(Message::Request(req)) => {
            let error = if methods::is_known(&req.method) {
                ErrorObject::method_not_implemented(&req.method)
            } else {
                ErrorObject::method_not_found(&req.method)
            };
            Some(Response::error(Some(req.id), error))
        }
        Ok(_) => None,
    }
}

#[test]
fn response_classification_cases() {
    let cases = cases_of_kind("framing-and-timeouts.json", "response-classification");
    assert!(!cases.is_empty());
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let line = case["input"]["line"].as_str().unwrap();
        let is_response = matches!(parse_line(line), Ok(Message::Response(_)));
        assert_eq!(Value::Bool(is_response), case["expected"]["isResponse"], "{id}");
        let correct = case["expected"]["correctLine"].as_str().unwrap();
        let parsed = parse_line(correct).unwrap();
        assert!(matches!(parsed, Message::Response(_)), "{id}: correct line is a response");
        assert_eq!(parsed.to_line().trim_end(), correct, "{id}: correct line round-trips");
    }
}

#[test]
fn worker_response_cases() {
    let cases = cases_of_kind("framing-and-timeouts.json", "worker-response");
    assert_eq!(cases.len(), 2);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        assert_eq!(case["input"]["workerHooks"], Value::Array(vec![]), "{id}");
        let line = case["input"]["line"].as_str().unwrap();
        let answer = answer_without_hooks(line).expect("an answer");
        let expected = case["expected"]["responseLine"].as_str().unwrap();
        assert_eq!(Message::from(answer).to_line(), format!("{expected}\n"), "{id}");
    }
}
