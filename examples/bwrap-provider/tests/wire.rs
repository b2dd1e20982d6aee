//! Wire tests against the real `bwrap-provider` binary and the real `bwrap`.
//!
//! The mode a worker picks depends on the machine (is bwrap installed, can it create
//! namespaces). Each test states the mode it expects from an independent check made here, in
//! the test, and asserts the worker agrees, and that an execute proves where it ran.

mod common;

use common::{bwrap_works_here, own_ns, path_without_bwrap, Wire};
use serde_json::{json, Value};

/// What an execute reports about its own process: `pid ns cwd`.
const WHERE_AM_I: &str =
    "echo $$; readlink /proc/self/ns/pid; readlink /proc/self/ns/mnt; pwd; touch made-here";

fn lines(stdout: &Value) -> Vec<String> {
    stdout.as_str().unwrap().lines().map(String::from).collect()
}

#[tokio::test]
async fn auto_mode_matches_an_independent_bwrap_check_and_execute_proves_it() {
    let expect_bwrap = bwrap_works_here();
    let expected = if expect_bwrap { "bwrap" } else { "plain" };
    let mut w = Wire::start(&[], json!({})).await;
    let probe = w.probe().await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
    assert_eq!(probe["metadata"]["bwrapMode"], json!(expected), "{probe}");
    assert!(!probe["metadata"]["reason"].as_str().unwrap().is_empty(), "{probe}");
    assert!(probe["summary"].as_str().unwrap().contains(&format!("{expected} mode")), "{probe}");
    let code = if expect_bwrap { "bwrap_active" } else { "bwrap_inactive" };
    assert!(probe["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == json!(code)));

    let (id, dir) = w.acquire().await;
    let (logged, result) = w.sh(&id, WHERE_AM_I, json!({})).await;
    assert_eq!(result["exitCode"], json!(0), "{result}");
    assert_eq!(result["metadata"]["bwrapMode"], json!(expected), "{result}");
    assert_eq!(logged, result["stdout"].as_str().unwrap(), "streamed output is the result's");
    let out = lines(&result["stdout"]);
    // The lease is writable at the same path, inside or not.
    assert_eq!(out[3], dir.canonicalize().unwrap().display().to_string());
    assert!(dir.join("made-here").is_file());
    if expect_bwrap {
        // A new PID namespace (the command is pid 2 under bwrap's init) and mount namespace.
        assert!(out[0].parse::<u32>().unwrap() <= 3, "{out:?}");
        assert_ne!(out[1], own_ns("pid"), "{out:?}");
        assert_ne!(out[2], own_ns("mnt"), "{out:?}");
        // The root is read-only and /tmp is private; TMPDIR (in the lease) stays writable.
        let (_, ro) = w
            .sh(&id, "touch /usr/paperclip-bwrap-probe 2>/dev/null && echo wrote; touch \"$TMPDIR/t\" && echo tmpdir-ok", json!({}))
            .await;
        assert_eq!(ro["stdout"], json!("tmpdir-ok\n"), "{ro}");
    } else {
        assert_eq!(out[1], own_ns("pid"), "{out:?}");
    }
    w.release_and_destroy(&id, &dir).await;
    w.shutdown().await;
}

#[tokio::test]
async fn timeout_stdin_env_and_exit_codes_behave_as_the_local_provider() {
    let mut w = Wire::start(&[], json!({})).await;
    let (id, dir) = w.acquire().await;
    let (_, timed) = w.sh(&id, "sleep 30 & sleep 30", json!({"timeoutMs": 300})).await;
    assert_eq!(timed["timedOut"], json!(true), "{timed}");
    assert_eq!(timed["signal"], json!("SIGKILL"), "{timed}");
    let (_, piped) = w
        .sh(
            &id,
            "cat; echo \"$GREETING\"; exit 7",
            json!({"stdin": "in\n", "env": {"GREETING": "hi"}}),
        )
        .await;
    assert_eq!((&piped["exitCode"], &piped["stdout"]), (&json!(7), &json!("in\nhi\n")), "{piped}");
    let p = w.params(json!({"lease": {"providerLeaseId": id}, "command": "no-such-program-xyz"}));
    let missing = w.ok("environmentExecute", p).await;
    assert_eq!(missing["exitCode"], json!(127), "{missing}");
    w.release_and_destroy(&id, &dir).await;
    w.shutdown().await;
}

#[tokio::test]
async fn bwrap_hidden_from_path_is_plain_and_never_fails_the_lease() {
    let bin = path_without_bwrap();
    let path = bin.path().display().to_string();
    let mut w = Wire::start(&[("PATH", &path)], json!({})).await;
    let probe = w.probe().await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
    assert_eq!(probe["metadata"]["bwrapMode"], json!("plain"), "{probe}");
    let reason = probe["metadata"]["reason"].as_str().unwrap();
    assert!(reason.contains("bwrap is not on the PATH"), "{reason}");
    let (id, dir) = w.acquire().await;
    let (_, result) = w.sh(&id, WHERE_AM_I, json!({})).await;
    assert_eq!(result["exitCode"], json!(0), "{result}");
    assert_eq!(result["metadata"]["bwrapMode"], json!("plain"), "{result}");
    assert!(result["metadata"]["bwrapReason"].as_str().unwrap().contains("not on the PATH"));
    assert_eq!(lines(&result["stdout"])[1], own_ns("pid"), "{result}");
    assert!(dir.join("made-here").is_file());
    w.release_and_destroy(&id, &dir).await;
    w.shutdown().await;
}

#[tokio::test]
async fn config_off_is_plain() {
    let mut w = Wire::start(&[], json!({"bwrap": "off"})).await;
    let probe = w.probe().await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
    assert_eq!(probe["metadata"]["bwrapMode"], json!("plain"), "{probe}");
    assert_eq!(probe["metadata"]["bwrapSetting"], json!("off"), "{probe}");
    assert!(probe["metadata"]["reason"].as_str().unwrap().contains("disabled by config"));
    let (id, dir) = w.acquire().await;
    let (_, result) = w.sh(&id, WHERE_AM_I, json!({})).await;
    assert_eq!(result["metadata"]["bwrapMode"], json!("plain"), "{result}");
    assert_eq!(lines(&result["stdout"])[2], own_ns("mnt"), "{result}");
    w.release_and_destroy(&id, &dir).await;
    w.shutdown().await;
}

#[tokio::test]
async fn validate_config_checks_bwrap() {
    let mut w = Wire::start(&[], json!({})).await;
    let bad = w
        .ok("environmentValidateConfig", json!({"driverKey": "bwrap", "config": {"bwrap": "on"}}))
        .await;
    assert_eq!(
        (&bad["ok"], &bad["errors"]),
        (&json!(false), &json!(["config.bwrap: expected `auto` or `off`"]))
    );
    let good = w.ok("environmentValidateConfig", json!({"driverKey": "bwrap", "config": {}})).await;
    assert_eq!(good["normalizedConfig"], json!({"syncTimeoutMs": 300000, "bwrap": "auto"}));
    let (_, err) = w
        .call("environmentProbe", json!({"driverKey": "bwrap", "companyId": "c", "environmentId": "e", "config": {"bwrap": 1}}))
        .await;
    assert_eq!(err["error"]["code"], json!(-32602), "{err}");
    w.shutdown().await;
}

#[test]
fn manifest_flag_prints_the_bwrap_driver_per_profile() {
    let run = |args: &[&str]| -> Value {
        let out = std::process::Command::new(common::BIN).args(args).output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let nov = run(&["--manifest"]);
    let d = &nov["environmentDrivers"][0];
    assert_eq!((&d["driverKey"], &d["kind"]), (&json!("bwrap"), &json!("sandbox_provider")));
    assert_eq!(d["defaultAcquireTimeoutMs"], json!(60000));
    let sep = run(&["--manifest", "--profile", "paperclip-2026-09"]);
    assert!(sep["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_none());
    assert_eq!(sep["entrypoints"]["worker"], json!("./dist/worker.cjs"));
    for args in [&["--bogus"][..], &["--profile", "nope"], &["--manifest", "--profile"]] {
        let bad = std::process::Command::new(common::BIN).args(args).output().unwrap();
        assert_eq!(bad.status.code(), Some(2), "{args:?}");
    }
}

/// 64 MiB of `\x01` and 300,000 `€` in 4,093-byte writes: every line within the host's line
/// limit, the cut output flagged, no U+FFFD where nothing was cut, `health` answered after.
#[tokio::test]
async fn output_floods_fit_the_hosts_line_limit() {
    let mut w = Wire::start(&[], json!({})).await;
    let (id, dir) = w.acquire().await;
    let base = w.params(json!({"lease": {"providerLeaseId": &id}, "command": "sh"}));
    let params = |script: &str| {
        let mut p = base.clone();
        p["args"] = json!(["-c", script]);
        p
    };
    paperclip_sandbox_sdk::testing::flood::assert_output_floods_fit(&mut w.worker, params).await;
    w.release_and_destroy(&id, &dir).await;
    w.shutdown().await;
}
