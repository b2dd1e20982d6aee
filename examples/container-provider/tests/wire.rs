//! Wire tests: the real `container-provider` binary against a real Docker-API engine, judged by
//! effects (what the command saw, what the engine holds afterwards).

mod common;

use common::{containers_of, target, Wire};
use serde_json::{json, Value};

fn lines(v: &Value) -> Vec<String> {
    v.as_str().unwrap().lines().map(String::from).collect()
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn a_lease_is_an_isolated_container_meeting_the_runtime_requirements() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-iso").await;
    let probe = w.ok("environmentProbe", w.params(json!({}))).await;
    assert_eq!(probe["ok"], json!(true), "{probe}");
    let lease = w.acquire_with(json!({})).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    assert_eq!(lease["metadata"]["remoteCwd"], json!("/workspace"), "{lease}");
    let script = r#"
        if [ -e /run/.containerenv ] || [ -e /.dockerenv ]; then echo marker; else echo no-marker; fi
        command -v sh >/dev/null && command -v tar >/dev/null && command -v node >/dev/null && echo tools
        id -u
        touch "$HOME/h" "$TMPDIR/t" /workspace/w "$XDG_CACHE_HOME/c" && echo writable
        touch /usr/x 2>/dev/null && echo root-writable || echo root-read-only
        grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -s '\t ' ' '
        readlink /proc/self/ns/pid
        pwd
        node -e 'process.stdout.write("node-ok\n")'
    "#;
    let (_, r) = w.sh(&id, script, json!({})).await;
    assert_eq!(r["exitCode"], json!(0), "{r}");
    let out = lines(&r["stdout"]);
    // The engine's container marker: podman writes /run/.containerenv (visible because /run
    // is a volume, not podman's own tmpfs over a read-only root), Docker /.dockerenv.
    assert_eq!(out[0], "marker", "{out:?}");
    assert_eq!(out[1], "tools", "{out:?}");
    assert_ne!(out[2], "0", "the lease user is not root: {out:?}");
    assert_eq!(out[3], "writable", "{out:?}");
    assert_eq!(out[4], "root-read-only", "{out:?}");
    assert_eq!(out[5], "CapEff: 0000000000000000", "{out:?}");
    assert_eq!(out[6], "NoNewPrivs: 1", "{out:?}");
    let own = std::fs::read_link("/proc/self/ns/pid").unwrap().display().to_string();
    assert_ne!(out[7], own, "the command runs in its own PID namespace");
    assert_eq!(out[8], "/workspace");
    assert_eq!(out[9], "node-ok");
    // No network: only the loopback interface exists.
    let (_, net) = w.sh(&id, "ls /sys/class/net", json!({})).await;
    assert_eq!(net["stdout"], json!("lo\n"), "{net}");
    w.destroy(&id).await;
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn stdin_env_literal_args_and_exit_codes() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-exec").await;
    let id = w.acquire().await;
    let (_, piped) = w
        .sh(
            &id,
            "cat; echo \"$GREETING\"; exit 7",
            json!({"stdin": "in é\n", "env": {"GREETING": "hi"}}),
        )
        .await;
    assert_eq!(
        (&piped["exitCode"], &piped["stdout"]),
        (&json!(7), &json!("in é\nhi\n")),
        "{piped}"
    );
    // A command that does not read its stdin still ends (no deadlock on a large stdin).
    let big = "x".repeat(4 * 1024 * 1024);
    let (_, ignored) = w.sh(&id, "echo done", json!({"stdin": big})).await;
    assert_eq!(ignored["exitCode"], json!(0), "{ignored}");
    // podman 4.3 sometimes resets the exec's attach socket when the command exits with stdin
    // still in flight, and the engine then loses the output (its own error text is all that
    // comes back; README, "Known podman 4.3 quirks"). Only that engine error excuses a missing
    // output.
    let engine_reset = ignored["stderr"].as_str().is_some_and(|e| {
        e.starts_with("Error: read unixpacket") && e.contains("connection reset by peer")
    });
    if !engine_reset {
        assert_eq!(ignored["stdout"], json!("done\n"), "{ignored}");
    }
    let (_, counted) = w.sh(&id, "wc -c", json!({"stdin": "x".repeat(3_000_000)})).await;
    assert_eq!(counted["stdout"].as_str().unwrap().trim(), "3000000", "{counted}");
    // Arguments reach the program literally: no shell in between.
    let p = w.params(json!({
        "lease": {"providerLeaseId": id}, "command": "printf",
        "args": ["%s|%s", "a; echo injected", "$(id -u)"]
    }));
    let literal = w.ok("environmentExecute", p).await;
    assert_eq!(literal["stdout"], json!("a; echo injected|$(id -u)"), "{literal}");
    let p = w.params(json!({"lease": {"providerLeaseId": id}, "command": "no-such-program-xyz"}));
    let missing = w.ok("environmentExecute", p).await;
    assert_eq!(missing["exitCode"], json!(127), "{missing}");
    w.destroy(&id).await;
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn a_timeout_kills_the_whole_process_group_inside_the_container() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-timeout").await;
    let id = w.acquire().await;
    let started = std::time::Instant::now();
    let (_, timed) = w
        .sh(&id, "sleep 313 & sleep 313 & echo started; sleep 313", json!({"timeoutMs": 700}))
        .await;
    assert_eq!(timed["timedOut"], json!(true), "{timed}");
    assert_eq!(timed["stdout"], json!("started\n"), "output before the timeout is kept: {timed}");
    // Answered before the commands' own end (313 s): the timeout ended them.
    assert!(started.elapsed() < std::time::Duration::from_secs(313));
    // The effect: no `sleep 313` is left in the container (judged from inside it).
    let count = "n=0; for c in /proc/[0-9]*/cmdline; do \
                 if tr '\\0' ' ' <\"$c\" 2>/dev/null | grep -q '^sleep 313'; then n=$((n+1)); fi; \
                 done; echo $n";
    let (_, left) = w.sh(&id, count, json!({})).await;
    assert_eq!(
        left["stdout"],
        json!("0\n"),
        "the timed-out command and its children are gone: {left}"
    );
    w.destroy(&id).await;
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn large_output_arrives_intact_and_streamed() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-output").await;
    let id = w.acquire().await;
    // 8 MiB of stdout and 1 MiB of stderr at once, with a multi-byte character at every line.
    let script = "i=0; while [ $i -lt 4096 ]; do printf '%02047dé\\n' $i; i=$((i+1)); done; \
                  head -c 1048576 /dev/zero | tr '\\0' e >&2";
    let (logged, r) = w.sh(&id, script, json!({})).await;
    assert_eq!(r["exitCode"], json!(0));
    let stdout = r["stdout"].as_str().unwrap();
    if stdout.len() != 4096 * 2050 {
        let got: Vec<&str> = stdout.lines().collect();
        let first_bad = got
            .iter()
            .enumerate()
            .find(|(i, l)| **l != format!("{i:02047}é"))
            .map(|(i, l)| (i, l.len(), l.chars().take(30).collect::<String>()));
        panic!(
            "stdout not intact: {} bytes, {} lines, first bad {:?}, logged {}",
            stdout.len(),
            got.len(),
            first_bad,
            logged.len()
        );
    }
    assert!(
        stdout.lines().enumerate().all(|(i, l)| l == format!("{i:02047}é")),
        "every line intact"
    );
    assert_eq!(r["stderr"].as_str().unwrap().len(), 1_048_576);
    assert!(
        r.get("metadata").is_none_or(|m| m.get("stdoutTruncated").is_none()),
        "{}",
        r["metadata"]
    );
    assert!(logged.len() >= stdout.len(), "the output was streamed as execute.log");
    w.destroy(&id).await;
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn native_sync_round_trips_with_modes_excludes_ownership_and_confinement() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-sync").await;
    let id = w.acquire().await;
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("tree/sub")).unwrap();
    std::fs::write(src.path().join("tree/sub/a.txt"), "alpha").unwrap();
    std::fs::write(src.path().join("tree/skip.log"), "no").unwrap();
    std::os::unix::fs::symlink("sub/a.txt", src.path().join("tree/link")).unwrap();
    std::fs::write(src.path().join("one.sh"), "echo hi").unwrap();
    let op = json!({"operationId": "op-1", "files": [
        {"sourcePath": src.path().join("tree"), "targetPath": "/workspace/in/tree", "kind": "directory", "exclude": ["*.log"]},
        {"sourcePath": src.path().join("one.sh"), "targetPath": "/workspace/in/one.sh", "kind": "file", "mode": 0o750}
    ], "postUploadCommands": [{"command": "test -x one.sh && sh one.sh > ran.txt", "cwd": "/workspace/in"}]});
    let p = w.params(json!({"lease": {"providerLeaseId": id}, "operations": [op]}));
    let res = w.ok("environmentSyncIn", p).await;
    assert_eq!(res["operations"][0]["filesTransferred"], json!(3), "{res}");
    let (_, seen) = w
        .sh(&id, "cd /workspace/in && stat -c '%u %a %n' tree/sub/a.txt one.sh && readlink tree/link && cat ran.txt && ls tree", json!({}))
        .await;
    assert_eq!(
        lines(&seen["stdout"]),
        vec!["1000 644 tree/sub/a.txt", "1000 750 one.sh", "sub/a.txt", "hi", "link", "sub"],
        "{seen}"
    );
    let out = tempfile::tempdir().unwrap();
    let back = json!({"operationId": "op-2", "files": [
        {"sourcePath": "/workspace/in/tree", "targetPath": out.path().join("tree"), "kind": "directory"},
        {"sourcePath": "/workspace/in/ran.txt", "targetPath": out.path().join("ran.txt"), "kind": "file"}
    ]});
    let p = w.params(json!({"lease": {"providerLeaseId": id}, "operations": [back]}));
    w.ok("environmentSyncOut", p).await;
    assert_eq!(std::fs::read_to_string(out.path().join("tree/sub/a.txt")).unwrap(), "alpha");
    assert_eq!(std::fs::read_to_string(out.path().join("ran.txt")).unwrap(), "hi\n");
    assert_eq!(
        std::fs::read_link(out.path().join("tree/link")).unwrap().display().to_string(),
        "sub/a.txt"
    );
    // Confinement: a lexical escape and a symlink planted in the workspace are both refused.
    w.sh(&id, "ln -s /home/sandbox /workspace/escape", json!({})).await;
    for target in ["/workspace/../home/sandbox/x", "/workspace/escape/x", "/etc/x"] {
        let op = json!({"operationId": "bad", "files": [
            {"sourcePath": src.path().join("one.sh"), "targetPath": target, "kind": "file"}]});
        let p = w.params(json!({"lease": {"providerLeaseId": id}, "operations": [op]}));
        let (_, resp) = w.call("environmentSyncIn", p).await;
        assert!(resp.get("error").is_some(), "{target}: {resp}");
        // The sync-error envelope travels on environmentSyncOut only (as the upstream SDK
        // attaches it); a refused syncIn is a plain error.
        assert!(resp["error"].get("data").is_none(), "{target}: {resp}");
    }
    let (_, home) = w.sh(&id, "ls -A /home/sandbox", json!({})).await;
    assert!(!lines(&home["stdout"]).contains(&"x".to_owned()), "nothing landed outside: {home}");
    w.destroy(&id).await;
    w.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn a_reusable_lease_stops_and_starts_keeping_its_files_and_destroy_removes_all() {
    let Some(t) = target() else { return };
    let engine = t.engine().await;
    let mut w = Wire::start(&t, "company-reuse").await;
    let lease = w.acquire_with(json!({"leasePolicy": "reuse_by_environment"})).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    w.sh(&id, "echo kept > /workspace/f; echo home > $HOME/g", json!({})).await;
    let p = w.params(json!({"providerLeaseId": id, "leaseMetadata": lease["metadata"]}));
    let released = w.ok("environmentReleaseLease", p).await;
    assert_eq!(released["state"], json!("stopped"), "{released}");
    let c = engine.inspect(&id).await.unwrap().expect("a stopped lease is kept");
    assert!(!container_provider::engine::is_running(&c));
    let p = w.params(json!({"providerLeaseId": id}));
    let resumed = w.ok("environmentResumeLease", p).await;
    assert_eq!(resumed["providerLeaseId"], json!(id), "{resumed}");
    let (_, r) = w.sh(&id, "cat /workspace/f $HOME/g", json!({})).await;
    assert_eq!(r["stdout"], json!("kept\nhome\n"), "{r}");
    let p = w.params(json!({"providerLeaseId": id}));
    let stopped = w.ok("environmentStopLease", p).await;
    assert_eq!(stopped["state"], json!("stopped"), "{stopped}");
    assert!(engine.inspect(&id).await.unwrap().is_some(), "stop never deletes");
    w.destroy(&id).await;
    let p = w.params(json!({"providerLeaseId": id}));
    let again = w.ok("environmentDestroyLease", p).await;
    assert_eq!(again["state"], json!("destroyed"), "destroy is idempotent: {again}");
    assert!(containers_of(&engine, "company-reuse").await.is_empty());
    w.shutdown().await;
}

/// 64 MiB of `\x01` and 300,000 `€` in 4,093-byte writes: every line within the host's line
/// limit, the cut output flagged, no U+FFFD where nothing was cut, `health` answered after.
#[tokio::test]
async fn output_floods_fit_the_hosts_line_limit() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-flood").await;
    let id = w.acquire().await;
    let base = w.params(json!({"lease": {"providerLeaseId": &id}, "command": "sh"}));
    let params = |script: &str| {
        let mut p = base.clone();
        p["args"] = json!(["-c", script]);
        p
    };
    paperclip_sandbox_sdk::testing::flood::assert_output_floods_fit(&mut w.worker, params).await;
    w.destroy(&id).await;
    w.shutdown().await;
}
