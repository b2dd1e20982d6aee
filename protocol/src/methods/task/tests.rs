use serde_json::{json, Value};

use super::*;
use crate::methods::lease::from_json;

const P1: &str = "0b6c2f0e-6a43-4d3b-9a57-2f0f1b8c9d10";
const P2: &str = "5d2b8f3a-1c4e-4f6a-8b7d-9e0a1b2c3d4e";

fn submit() -> Value {
    json!({
        "kind": "submit",
        "projectIds": [P1, P2],
        "runner": {"protocolMin": 1, "protocolMax": 2, "harness": "codex_local",
                   "runnerId": "r-1", "leaseId": "l.1", "runId": "run:1", "sessionId": "s1",
                   "turnId": "t1", "itemId": "i1"},
        "bootstrapTicket": "ticket-secret"
    })
}

fn params(operation: Value) -> Value {
    json!({
        "driverKey": "d", "companyId": "c1", "environmentId": null, "config": {},
        "lease": {"providerLeaseId": "sbx1"}, "taskId": "task-1", "runId": null,
        "agentId": null, "projectIds": [], "operation": operation
    })
}

#[test]
fn params_round_trip_and_null_ids() {
    let v = params(submit());
    let p: EnvironmentTaskParams = from_json(v.clone());
    assert_eq!(p.environment_id, None);
    assert_eq!(p.operation.kind(), TaskKind::Submit);
    assert_eq!(serde_json::to_value(&p).unwrap(), v);
    assert!(!format!("{p:?}").contains("ticket-secret"), "the ticket is a secret");
    for kind in ["status", "connection", "complete", "stop"] {
        let p: EnvironmentTaskParams = from_json(params(json!({"kind": kind})));
        assert_eq!(p.operation.kind().as_str(), kind);
        assert_eq!(p.operation.validate(), Ok(()));
    }
}

#[test]
fn operations_are_strict() {
    for bad in [
        json!({"kind": "status", "extra": 1}),
        json!({"kind": "resume"}),
        json!({}),
        {
            let mut s = submit();
            s["runner"]["extra"] = json!(1);
            s
        },
        {
            let mut s = submit();
            s["unknown"] = json!(true);
            s
        },
    ] {
        assert!(serde_json::from_value::<TaskOperation>(bad.clone()).is_err(), "{bad}");
    }
}

#[test]
fn submit_value_rules() {
    let ok: TaskOperation = from_json(submit());
    assert_eq!(ok.validate(), Ok(()));
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, &str)> = vec![
        (|s| s["projectIds"] = json!(["not-a-uuid"]), "operation.projectIds.0"),
        (|s| s["projectIds"] = json!([P1, P1]), "operation.projectIds"),
        (|s| s["runner"]["protocolMin"] = json!(3), "operation.runner"),
        (|s| s["runner"]["protocolMin"] = json!(0), "operation.runner.protocolMin"),
        (|s| s["runner"]["harness"] = json!("-x"), "operation.runner.harness"),
        (|s| s["runner"]["runId"] = json!("a/b"), "operation.runner.runId"),
        (|s| s["runner"]["itemId"] = json!("x".repeat(161)), "operation.runner.itemId"),
        (|s| s["bootstrapTicket"] = json!(""), "operation.bootstrapTicket"),
    ];
    for (edit, path) in cases {
        let mut v = submit();
        edit(&mut v);
        let op: TaskOperation = from_json(v);
        let err = op.validate().expect_err(path);
        assert_eq!(err.path, path);
        assert!(!err.to_string().contains("ticket-secret"));
    }
    let mut many = submit();
    many["projectIds"] =
        json!((0..65).map(|i| format!("{i:08x}-0000-4000-8000-000000000000")).collect::<Vec<_>>());
    assert_eq!(
        from_json::<TaskOperation>(many).validate().unwrap_err().path,
        "operation.projectIds"
    );
}

#[test]
fn result_wire_and_rules() {
    let status = TaskResult::Status {
        task_id: "task-1".into(),
        phase: TaskPhase::Completed,
        exit_code: Some(0),
        execution_stopped: Some(true),
    };
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        json!({"kind": "status", "taskId": "task-1", "phase": "completed", "exitCode": 0, "executionStopped": true})
    );
    let conn = TaskResult::connection(
        "task-1",
        TaskEndpoint::new("wss://runner.example/prp", "g1").with_header("x-token", "hdr-secret"),
    );
    let v = serde_json::to_value(&conn).unwrap();
    assert_eq!(v["endpoint"]["secretHeaders"][0]["value"], "hdr-secret");
    assert_eq!(v["endpoint"]["kind"], "authenticated_websocket");
    assert_eq!(from_json::<TaskResult>(v), conn);
    assert!(!format!("{conn:?}").contains("hdr-secret"));
    assert_eq!(conn.validate(), Ok(()));

    for (url, ok) in [
        ("wss://runner.example/prp", true),
        ("ws://runner.example/prp", false),
        ("wss://u:p@runner.example/prp", false),
        ("wss://runner.example/prp?x=1", false),
        ("wss://runner.example/prp#f", false),
        ("not a url", false),
    ] {
        let r = TaskResult::connection("t", TaskEndpoint::new(url, "g"));
        assert_eq!(r.validate().is_ok(), ok, "{url}");
    }
    let bad_header = TaskResult::connection(
        "t",
        TaskEndpoint::new("wss://h.example/", "g").with_header("x", "a\r\nb"),
    );
    assert_eq!(bad_header.validate().unwrap_err().path, "endpoint.secretHeaders.0.value");
    let mut many = TaskEndpoint::new("wss://h.example/", "g");
    for i in 0..17 {
        many = many.with_header(format!("h{i}"), "v");
    }
    assert!(TaskResult::connection("t", many).validate().is_err());
    assert!(TaskResult::accepted("").validate().is_err());
    assert!(serde_json::from_value::<TaskResult>(
        json!({"kind": "accepted", "taskId": "t", "x": 1})
    )
    .is_err());
    assert!(serde_json::from_value::<TaskResult>(
        json!({"kind": "status", "taskId": "t", "phase": "paused"})
    )
    .is_err());
}

#[test]
fn results_must_answer_their_operation() {
    let submit: TaskOperation = from_json(submit());
    let pairs = [
        (&submit, TaskResult::accepted("task-1"), true),
        (&TaskOperation::Complete {}, TaskResult::accepted("task-1"), true),
        (&TaskOperation::Stop {}, TaskResult::accepted("task-1"), true),
        (&TaskOperation::Status {}, TaskResult::status("task-1", TaskPhase::Running), true),
        (&TaskOperation::Status {}, TaskResult::accepted("task-1"), false),
        (&TaskOperation::Stop {}, TaskResult::status("task-1", TaskPhase::Cancelled), false),
        (&TaskOperation::Connection {}, TaskResult::accepted("task-1"), false),
        (&submit, TaskResult::accepted("task-2"), false),
    ];
    for (op, result, ok) in pairs {
        let answer = result.check_answers(op, "task-1");
        assert_eq!(answer.is_ok(), ok, "{op:?} / {result:?}");
        if let Err(e) = answer {
            assert_eq!(e.rule, TASK_RESPONSE_MISMATCH_MESSAGE);
        }
    }
}

#[test]
fn uuid_shape() {
    assert!(is_uuid(P1));
    assert!(is_uuid("0B6C2F0E-6A43-4D3B-9A57-2F0F1B8C9D10"));
    assert!(!is_uuid("0b6c2f0e6a434d3b9a572f0f1b8c9d10"));
    assert!(!is_uuid("0b6c2f0e-6a43-4d3b-9a57-2f0f1b8c9d1g"));
}
