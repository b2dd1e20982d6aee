use serde_json::json;

use super::*;

fn base_json() -> Value {
    json!({"driverKey": "rust-sbx", "companyId": "c1", "environmentId": "e1", "config": {"timeoutMs": 300000, "image": "ubuntu"}})
}

fn with(mut base: Value, extra: Value) -> Value {
    let obj = base.as_object_mut().unwrap();
    for (k, v) in extra.as_object().unwrap() {
        obj.insert(k.clone(), v.clone());
    }
    base
}

#[test]
fn base_params_issue_id_absent_null_and_value() {
    let absent: EnvironmentBaseParams = from_json(base_json());
    assert_eq!(absent.issue_id, None);
    assert_eq!(serde_json::to_value(&absent).unwrap(), base_json());

    let null: EnvironmentBaseParams = from_json(with(base_json(), json!({"issueId": null})));
    assert_eq!(null.issue_id, Some(None));
    assert_eq!(null.issue_id(), None);
    assert_eq!(serde_json::to_value(&null).unwrap()["issueId"], Value::Null);

    let set: EnvironmentBaseParams = from_json(with(base_json(), json!({"issueId": "i1"})));
    assert_eq!(set.issue_id(), Some("i1"));
    assert_eq!(set.config["image"], "ubuntu");
}

#[test]
fn unknown_params_fields_are_kept_not_rejected() {
    let v = with(base_json(), json!({"runId": "r1", "executionId": "x9", "futureFlag": {"a": 1}}));
    let p: AcquireLeaseParams = from_json(v.clone());
    assert_eq!(p.run_id, "r1");
    assert_eq!(p.base.extra.len(), 2);
    assert_eq!(p.base.extra["futureFlag"], json!({"a": 1}));
    assert!(!p.base.extra.contains_key("runId"));
    assert_eq!(serde_json::to_value(&p).unwrap(), v);
}

#[test]
fn lease_round_trip_and_expiry_null_vs_absent() {
    let host =
        json!({"providerLeaseId": "sbx1", "metadata": {"remoteCwd": "/w"}, "expiresAt": null});
    let lease: Lease = from_json(host.clone());
    assert_eq!(lease.expires_at, Some(None));
    assert_eq!(lease.expires_at(), None);
    assert_eq!(serde_json::to_value(&lease).unwrap(), host);

    let absent: Lease = from_json(json!({"providerLeaseId": "sbx1"}));
    assert_eq!(absent.expires_at, None);
    assert_eq!(serde_json::to_value(&absent).unwrap(), json!({"providerLeaseId": "sbx1"}));

    let built = Lease::new("sbx2").with_expires_at("2026-11-01T00:00:00Z");
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"providerLeaseId": "sbx2", "expiresAt": "2026-11-01T00:00:00Z"})
    );
}

#[test]
fn not_resumable_lease_serializes_null_id() {
    let mut md = JsonObject::new();
    md.insert("expired".into(), json!(true));
    md.insert("reason".into(), json!("not_found"));
    let v = serde_json::to_value(Lease::not_resumable(md)).unwrap();
    assert_eq!(
        v,
        json!({"providerLeaseId": null, "metadata": {"expired": true, "reason": "not_found"}})
    );
}

#[test]
fn receipts_and_void_results() {
    let r = TerminationReceipt::stopped("sbx1");
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"providerLeaseId": "sbx1", "state": "stopped"})
    );
    let d: Option<TerminationReceipt> =
        from_json(json!({"providerLeaseId": "sbx1", "state": "destroyed"}));
    assert_eq!(d, Some(TerminationReceipt::destroyed("sbx1")));
    let void: Option<TerminationReceipt> = from_json(Value::Null);
    assert_eq!(void, None);
    assert_eq!(serde_json::to_value(None::<TerminationReceipt>).unwrap(), Value::Null);
    assert!(serde_json::from_value::<TerminationReceipt>(
        json!({"providerLeaseId": "sbx1", "state": "paused"})
    )
    .is_err());
}

#[test]
fn validate_config_wire() {
    let p: ValidateConfigParams =
        from_json(json!({"driverKey": "rust-sbx", "config": {"a": 1}, "newKey": 2}));
    assert_eq!(p.driver_key, "rust-sbx");
    assert_eq!(p.extra["newKey"], 2);
    let r = ValidateConfigResult::invalid(["image is required"]).with_warning("slow region");
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"ok": false, "warnings": ["slow region"], "errors": ["image is required"]})
    );
    let ok = ValidateConfigResult::valid().with_normalized_config(p.config.clone());
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({"ok": true, "normalizedConfig": {"a": 1}})
    );
}

#[test]
fn probe_wire() {
    let p: ProbeParams = from_json(base_json());
    assert_eq!(p.base.company_id, "c1");
    let r = ProbeResult::new(true).with_summary("reachable").with_diagnostic(
        Diagnostic::new(DiagnosticSeverity::Warning, "quota low").with_code("quota"),
    );
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"ok": true, "summary": "reachable", "diagnostics": [{"severity": "warning", "message": "quota low", "code": "quota"}]})
    );
}

#[test]
fn acquire_params_full_and_open_enums() {
    let v = with(
        base_json(),
        json!({
            "issueId": null, "runId": "r1", "workspaceMode": "isolated", "agentId": "a1",
            "executionWorkspaceId": "w1", "adapterType": "claude_local",
            "requestedExpiresAt": "2026-11-01T00:00:00.000Z", "leasePolicy": "reuse_by_environment",
            "creationOperation": {"version": 1, "id": "2b0c"}
        }),
    );
    let p: AcquireLeaseParams = from_json(v.clone());
    assert_eq!(p.lease_policy, Some(LeasePolicy::ReuseByEnvironment));
    let op = p.creation_operation.clone().unwrap();
    assert_eq!(op.creation_name(), "paperclip-create-2b0c");
    assert_eq!(serde_json::to_value(&p).unwrap(), v);

    let newer: AcquireLeaseParams = from_json(with(
        base_json(),
        json!({"runId": "r1", "leasePolicy": "pooled", "executionWorkspaceSettings": null}),
    ));
    assert_eq!(newer.lease_policy, Some(LeasePolicy::Other("pooled".into())));
    assert_eq!(newer.execution_workspace_settings, None);
    assert_eq!(LeasePolicy::from("ephemeral"), LeasePolicy::Ephemeral);
    assert_eq!(LeasePolicy::from(String::from("pooled")).as_str(), "pooled");
}

#[test]
fn resume_release_destroy_stop_wire() {
    let r: ResumeLeaseParams = from_json(with(
        base_json(),
        json!({"providerLeaseId": "sbx1", "leaseMetadata": {"reusableSandboxLease": true}}),
    ));
    assert_eq!(r.provider_lease_id, "sbx1");

    let rel: ReleaseLeaseParams = from_json(with(base_json(), json!({"providerLeaseId": null})));
    assert_eq!(rel.provider_lease_id, None);
    assert!(!rel.cancel_active_work());
    assert_eq!(serde_json::to_value(&rel).unwrap()["providerLeaseId"], Value::Null);

    let k8s = with(
        base_json(),
        json!({"providerLeaseId": "sbx1", "cancelActiveWork": true, "runStatus": "failed", "resourceDisposition": "stop_and_retain"}),
    );
    let d: DestroyLeaseParams = from_json(k8s.clone());
    assert!(d.cancel_active_work());
    assert_eq!(d.resource_disposition, Some(ResourceDisposition::StopAndRetain));
    assert_eq!(serde_json::to_value(&d).unwrap(), k8s);

    let stop = StopLeaseParams::stop(EnvironmentBaseParams::new("rust-sbx", "c1", "e1"), "sbx1");
    assert_eq!(
        serde_json::to_value(&stop).unwrap(),
        json!({"driverKey": "rust-sbx", "companyId": "c1", "environmentId": "e1", "config": {},
               "providerLeaseId": "sbx1", "cancelActiveWork": true, "resourceDisposition": "stop_and_retain"})
    );
    // As upstream, stop takes the release params: a null lease id (the host's retry-teardown
    // path, with an empty environment id) deserializes instead of failing as invalid params.
    let null_id: StopLeaseParams = from_json(json!({"driverKey": "d", "companyId": "c1",
        "environmentId": "", "providerLeaseId": null, "cancelActiveWork": true,
        "resourceDisposition": "stop_and_retain"}));
    assert_eq!(null_id.lease_id(), None);
    assert!(null_id.cancel_active_work());
}

#[test]
fn stop_error_reasons() {
    assert_eq!(STOP_ERROR_SCHEMA, "paperclip/environment-stop-error/v1");
    let wire: Vec<_> =
        StopErrorReason::ALL.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    assert_eq!(
        wire,
        [
            json!("unrecoverable"),
            json!("recovery_failed"),
            json!("recovery_incomplete"),
            json!("policy_unconfirmed"),
            json!("busy")
        ]
    );
    for r in StopErrorReason::ALL {
        assert_eq!(StopErrorReason::from_wire(r.as_str()), Some(r));
    }
    assert_eq!(StopErrorReason::from_wire("gone"), None);
}

#[test]
fn lenient_counts() {
    #[derive(serde::Deserialize)]
    struct T {
        #[serde(default, deserialize_with = "wire::lenient_count")]
        ms: Option<u64>,
    }
    let read = |v: Value| serde_json::from_value::<T>(v).map(|t| t.ms);
    assert_eq!(read(json!({})).unwrap(), None);
    assert_eq!(read(json!({"ms": null})).unwrap(), None);
    assert_eq!(read(json!({"ms": 1500})).unwrap(), Some(1500));
    assert_eq!(read(json!({"ms": 1500.9})).unwrap(), Some(1500));
    assert_eq!(read(json!({"ms": -1})).unwrap(), None);
    assert!(read(json!({"ms": "1500"})).is_err());
}

#[test]
fn result_builders_say_what_they_build() {
    fn to<T: Serialize>(value: &T) -> Value {
        serde_json::to_value(value).unwrap()
    }
    assert_eq!(to(&Released::done()), Value::Null);
    assert_eq!(
        to(&Released::destroyed("l1")),
        json!({"providerLeaseId": "l1", "state": "destroyed"})
    );
    assert_eq!(to(&Released::stopped("l1")), json!({"providerLeaseId": "l1", "state": "stopped"}));
    let back: Released = serde_json::from_value(Value::Null).unwrap();
    assert_eq!(back.receipt(), None);
    let back: Destroyed =
        serde_json::from_value(json!({"providerLeaseId": "l", "state": "destroyed"})).unwrap();
    assert_eq!(back.into_receipt(), Some(TerminationReceipt::destroyed("l")));
    assert_eq!(to(&ProbeResult::ok()), json!({"ok": true}));
    assert_eq!(
        to(&ProbeResult::failed("no API key")),
        json!({"ok": false, "summary": "no API key"})
    );
}

#[test]
fn config_maps_to_a_typed_config_keeping_every_other_field() {
    let params: AcquireLeaseParams =
        serde_json::from_value(with(base_json(), json!({"runId": "r1", "requestedCwd": "/w"})))
            .unwrap();
    let typed = params
        .map_config(|c| Ok::<_, ()>(c.get("image").and_then(Value::as_str).unwrap().to_owned()))
        .unwrap();
    assert_eq!(typed.base.config, "ubuntu");
    assert_eq!(typed.run_id, "r1");
    assert_eq!(typed.base.company_id, "c1");
    assert_eq!(typed.requested_cwd.as_deref(), Some("/w"));
}

#[test]
fn remote_cwd_is_set_into_metadata_and_read_as_the_host_reads_it() {
    let mut meta = JsonObject::new();
    meta.insert("zone".into(), json!("a"));
    let lease = Lease::new("l1").with_metadata(meta).with_remote_cwd("/work/l1");
    assert_eq!(
        serde_json::to_value(&lease).unwrap(),
        json!({"providerLeaseId": "l1", "metadata": {"zone": "a", "remoteCwd": "/work/l1"}})
    );
    assert_eq!(lease.remote_cwd(), Some("/work/l1"));
    assert_eq!(Lease::new("l2").remote_cwd(), None);
    let cases = [
        (json!("  /w  "), Some("/w")),
        (json!("\u{feff}/w\u{a0}"), Some("/w")),
        (json!("/w\u{85}"), Some("/w\u{85}")),
        (json!("   "), None),
        (json!(3), None),
    ];
    for (value, want) in cases {
        let lease: Lease = serde_json::from_value(
            json!({"providerLeaseId": "x", "metadata": {"remoteCwd": value}}),
        )
        .unwrap();
        assert_eq!(lease.remote_cwd(), want);
    }
}

#[test]
fn required_lease_ids_name_their_path() {
    assert_eq!(Lease::new("l-1").required_id(), Ok("l-1"));
    for lease in [Lease::default(), Lease::new("")] {
        let err = lease.required_id().unwrap_err();
        assert_eq!(err.to_string(), "lease.providerLeaseId is required");
    }
    let base: EnvironmentBaseParams = from_json(base_json());
    assert_eq!(ReleaseLeaseParams::stop(base.clone(), "x").required_lease_id(), Ok("x"));
    let none = ReleaseLeaseParams::new(base, None).required_lease_id().unwrap_err();
    assert_eq!(none.path(), "providerLeaseId");
    assert_eq!(none.to_string(), "providerLeaseId is required");
}

/// `lease_id()` answered `Some("")` for an empty id that `required_lease_id()` refuses as
/// missing: the two accessors read the id by one rule.
#[test]
fn the_lease_id_accessors_agree_on_an_empty_id() {
    let base: EnvironmentBaseParams = from_json(base_json());
    for id in [None, Some(""), Some("l-1")] {
        let params = ReleaseLeaseParams::new(base.clone(), id.map(str::to_owned));
        assert_eq!(params.lease_id(), params.required_lease_id().ok(), "{id:?}");
        let lease = Lease { provider_lease_id: id.map(str::to_owned), ..Lease::default() };
        assert_eq!(lease.required_id().ok(), params.lease_id(), "{id:?}");
    }
    let empty: ReleaseLeaseParams = from_json(json!({"driverKey": "d", "companyId": "c",
        "environmentId": "e", "providerLeaseId": ""}));
    assert_eq!(empty.lease_id(), None);
}
