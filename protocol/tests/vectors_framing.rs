//! Runs the timeout, transient, ingress, receipt and resume kinds of
//! `vectors/framing-and-timeouts.json` under every profile each case names.
//!
//! Skipped kinds, owned and tested elsewhere: `response-classification` and `worker-response`
//! (JSON-RPC classification and the SDK's wire answers) and `sync-minimum-timeout`
//!.

use paperclip_sandbox_protocol::envelope::ingress::validate_runner_ingress;
use paperclip_sandbox_protocol::envelope::receipt::accept_termination_receipt;
use paperclip_sandbox_protocol::envelope::resume::resume_replacement_reason;
use paperclip_sandbox_protocol::timeouts::{
    acquire_rpc_timeout_ms, execute_rpc_timeout_ms, is_transient_resume_failure,
    is_transient_resume_message, rpc_call_timeout_ms, sandbox_rpc_timeout_ms,
    DEFAULT_RPC_TIMEOUT_MS,
};
use serde_json::{json, Map, Value};

mod common;
use common::{profiles, vector_file};

const SKIPPED: &[&str] = &["response-classification", "worker-response", "sync-minimum-timeout"];

/// A numeric argument: a number, `{"$nonFinite": …}` or `{"$undefined": true}` (→ `None`).
fn number_arg(value: &Value) -> Option<f64> {
    if let Some(n) = value.as_f64() {
        return Some(n);
    }
    match value.get("$nonFinite").and_then(Value::as_str) {
        Some("NaN") => Some(f64::NAN),
        Some("Infinity") => Some(f64::INFINITY),
        Some("-Infinity") => Some(f64::NEG_INFINITY),
        _ => {
            assert_eq!(value.get("$undefined"), Some(&json!(true)), "unknown marker {value}");
            None
        }
    }
}

/// A config object; a `$nonFinite` marker becomes `null`, its wire form (ignored like a
/// non-finite number by the host).
fn config_arg(value: &Value) -> Map<String, Value> {
    value
        .as_object()
        .expect("config object")
        .iter()
        .map(|(k, v)| {
            (k.clone(), if v.get("$nonFinite").is_some() { Value::Null } else { v.clone() })
        })
        .collect()
}

fn expect_explicit(expected: &Value, got: Option<u64>, id: &str) {
    assert_eq!(got.map(Value::from).unwrap_or(Value::Null), expected["explicitTimeoutMs"], "{id}");
    if let Some(call) = expected.get("callTimeoutMs") {
        let call_ms = got.map_or(DEFAULT_RPC_TIMEOUT_MS, |ms| rpc_call_timeout_ms(Some(ms as f64)));
        assert_eq!(Value::from(call_ms), *call, "{id}: call timeout");
    }
}

#[test]
fn framing_and_timeout_vectors() {
    let vectors = vector_file("framing-and-timeouts.json");
    let cases = vectors["cases"].as_array().expect("cases");
    let (mut runs, mut skipped) = (0, 0);
    for case in cases {
        let id = case["id"].as_str().expect("id");
        let kind = case["kind"].as_str().expect("kind");
        if SKIPPED.contains(&kind) {
            skipped += 1;
            continue;
        }
        let (input, expected) = (&case["input"], &case["expected"]);
        for profile in profiles(case) {
            match kind {
                "timeout-S" => {
                    let config = config_arg(&input["config"]);
                    expect_explicit(expected, sandbox_rpc_timeout_ms(&config), id);
                    // Without a declared default, the acquire budget is S in both profiles.
                    expect_explicit(expected, acquire_rpc_timeout_ms(&config, None, profile), id);
                }
                "timeout-E" => {
                    let got = execute_rpc_timeout_ms(
                        number_arg(&input["requested"]),
                        &config_arg(&input["config"]),
                    );
                    expect_explicit(expected, got, id);
                }
                "rpc-call-timeout" => {
                    let got = rpc_call_timeout_ms(number_arg(&input["requested"]));
                    assert_eq!(Value::from(got), expected["callTimeoutMs"], "{id}");
                }
                "resume-transient-message" => {
                    let message = input["message"].as_str().unwrap();
                    let want = expected["transient"].as_bool().unwrap();
                    assert_eq!(is_transient_resume_message(message), want, "{id}");
                    // As a worker error on the wire: {code, message}.
                    let wire = json!({"code": -32002, "message": message});
                    assert_eq!(is_transient_resume_failure(&wire), want, "{id}: wire error");
                }
                "runner-ingress-endpoint" => {
                    let path = input["requestedPath"].as_str().unwrap();
                    let got = validate_runner_ingress(&input["result"], path);
                    assert_eq!(Value::Bool(got.is_ok()), expected["accepted"], "{id}: {got:?}");
                    if let Some(message) = expected.get("message") {
                        assert_eq!(got.unwrap_err().to_string(), message.as_str().unwrap(), "{id}");
                    }
                }
                "termination-receipt" => {
                    let lease = input["leaseProviderLeaseId"].as_str().unwrap();
                    let got = accept_termination_receipt(&input["result"], lease);
                    assert_eq!(Value::Bool(got.is_ok()), expected["accepted"], "{id}: {got:?}");
                    if let Ok(receipt) = got {
                        assert_eq!(receipt.to_json(), input["result"], "{id}");
                    }
                }
                "resume-replacement-reason" => {
                    let got = resume_replacement_reason(&input["result"]).map(|r| r.as_str());
                    assert_eq!(got, expected["replacementReason"].as_str(), "{id}");
                }
                other => panic!("{id}: unknown kind {other}"),
            }
            runs += 1;
        }
    }
    assert_eq!(
        skipped, 14,
        "2 worker-response + 1 response-classification + 11 sync-minimum-timeout"
    );
    assert_eq!(runs, 60, "30 cases × 2 profiles");
}
