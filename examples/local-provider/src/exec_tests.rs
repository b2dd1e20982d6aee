//! Unit tests of [`super`]: real processes in a temporary lease directory.

use super::*;
use paperclip_sandbox_sdk::process::sink_fn;
use paperclip_sandbox_sdk::OutputStream;
use std::time::Instant as StdInstant;

fn lease() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lease");
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    (tmp, dir)
}

fn sh(script: &str) -> ExecRequest {
    ExecRequest {
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        ..Default::default()
    }
}

async fn run_simple(dir: &Path, req: ExecRequest) -> CommandOutput {
    run(dir, req, None, &mut (), std::future::pending()).await.unwrap()
}

#[tokio::test]
async fn captures_exit_code_and_both_streams() {
    let (_t, dir) = lease();
    let out = run_simple(&dir, sh("echo out; echo err >&2; exit 3")).await;
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.signal, None);
    assert!(!out.timed_out);
    assert_eq!(out.stdout, "out\n");
    assert_eq!(out.stderr, "err\n");
}

#[tokio::test]
async fn stdin_is_written_then_closed() {
    let (_t, dir) = lease();
    let mut req = ExecRequest { command: "cat".into(), ..Default::default() };
    req.stdin = Some(b"hello\nworld".to_vec());
    let out = run_simple(&dir, req).await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout, "hello\nworld");
    // Without stdin the command reads /dev/null and ends.
    let out = run_simple(&dir, ExecRequest { command: "cat".into(), ..Default::default() }).await;
    assert_eq!((out.exit_code, out.stdout.as_str()), (Some(0), ""));
}

#[tokio::test]
async fn environment_is_minimal_plus_request_env() {
    let (_t, dir) = lease();
    std::env::set_var("LOCAL_PROVIDER_TEST_LEAK", "leaked");
    let mut req = sh("echo \"$HOME|$TMPDIR|$XDG_CACHE_HOME|$FOO|${LOCAL_PROVIDER_TEST_LEAK:-unset}\"; test -d \"$TMPDIR\"");
    req.env.insert("FOO".into(), "bar baz".into());
    let out = run_simple(&dir, req).await;
    let canon = dir.canonicalize().unwrap();
    let c = canon.display();
    assert_eq!(out.stdout, format!("{c}|{c}/.tmp|{c}/.cache|bar baz|unset\n"));
    assert_eq!(out.exit_code, Some(0), "TMPDIR exists: {}", out.stderr);
    // The request may override the base.
    let mut req = sh("echo $HOME");
    req.env.insert("HOME".into(), "/elsewhere".into());
    assert_eq!(run_simple(&dir, req).await.stdout, "/elsewhere\n");
}

#[tokio::test]
async fn cwd_defaults_to_the_lease_and_is_confined() {
    let (_t, dir) = lease();
    let canon = dir.canonicalize().unwrap();
    assert_eq!(run_simple(&dir, sh("pwd -P")).await.stdout, format!("{}\n", canon.display()));
    let mut req = sh("pwd -P");
    req.cwd = Some(dir.join("ws"));
    assert_eq!(run_simple(&dir, req).await.stdout, format!("{}/ws\n", canon.display()));
    let mut req = sh("pwd -P");
    req.cwd = Some("ws".into());
    assert_eq!(run_simple(&dir, req).await.stdout, format!("{}/ws\n", canon.display()));
    for bad in [PathBuf::from("/"), dir.join("../"), dir.join("ws/../ws")] {
        let mut req = sh("pwd");
        req.cwd = Some(bad.clone());
        let err = run(&dir, req, None, &mut (), std::future::pending()).await.unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Confinement, "{bad:?}");
    }
    let mut req = sh("pwd");
    req.cwd = Some(dir.join("missing"));
    let err = run(&dir, req, None, &mut (), std::future::pending()).await.unwrap_err();
    assert_eq!(err.kind, crate::ErrorKind::InvalidParams);
}

#[tokio::test]
async fn signal_death_reports_the_signal_name() {
    let (_t, dir) = lease();
    let out = run_simple(&dir, sh("kill -TERM $$")).await;
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(libc::SIGTERM));
    assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    assert_eq!(signal_name(200), "SIG200");
}

#[tokio::test]
async fn timeout_kills_the_whole_group_including_grandchildren() {
    let (_t, dir) = lease();
    let marker = dir.join("grandchild-pid");
    let mut req = sh(&format!("sleep 30 & echo $! > {}; sleep 30", marker.display()));
    req.timeout = Some(Duration::from_millis(300));
    let groups = ProcessGroups::default();
    let started = StdInstant::now();
    let out = run(&dir, req, Some(&groups), &mut (), std::future::pending()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "liveness bound");
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    let pid: i32 = std::fs::read_to_string(&marker).unwrap().trim().parse().unwrap();
    // The grandchild was killed too: within a generous bound it no longer exists (or is a
    // zombie waiting for its new parent to reap it).
    let gone = (0..100).any(|_| {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let dead = state
            .is_none_or(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if !dead {
            std::thread::sleep(Duration::from_millis(50));
        }
        dead
    });
    assert!(gone, "grandchild {pid} survived the group kill");
}

#[tokio::test]
async fn cancellation_kills_the_group() {
    let (_t, dir) = lease();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let cancel = async move {
        let _ = rx.await;
    };
    let task = tokio::spawn({
        let dir = dir.clone();
        async move { run(&dir, sh("sleep 30 & sleep 30"), None, &mut (), cancel).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    tx.send(()).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
    assert!(out.cancelled);
    assert!(!out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
}

#[tokio::test]
async fn process_groups_can_be_killed_from_outside() {
    let (_t, dir) = lease();
    let groups = ProcessGroups::default();
    let task = tokio::spawn({
        let (dir, groups) = (dir.clone(), groups.clone());
        async move { run(&dir, sh("sleep 30"), Some(&groups), &mut (), std::future::pending()).await }
    });
    let canon = dir.canonicalize().unwrap();
    let mut waited = 0;
    while groups.live_count(&canon) == 0 && waited < 200 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        waited += 1;
    }
    assert_eq!(groups.kill_all(&canon), 1);
    let out = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert_eq!(groups.live_count(&canon), 0);
}

#[tokio::test]
async fn output_streams_in_chunks_and_accumulates() {
    let (_t, dir) = lease();
    let mut chunks: Vec<(OutputStream, String)> = Vec::new();
    let req = sh("printf a; sleep 0.2; printf b >&2; sleep 0.2; printf c");
    let mut sink = sink_fn(|s, c: &str| chunks.push((s, c.to_owned())));
    let out = run(&dir, req, None, &mut sink, std::future::pending()).await.unwrap();
    assert_eq!(out.stdout, "ac");
    assert_eq!(out.stderr, "b");
    let joined: String = chunks
        .iter()
        .filter(|(s, _)| *s == OutputStream::Stdout)
        .map(|(_, c)| c.as_str())
        .collect();
    assert_eq!(joined, "ac");
    assert!(chunks.len() >= 2, "output arrived incrementally: {chunks:?}");
    assert!(chunks.iter().any(|(s, c)| *s == OutputStream::Stderr && c == "b"));
}

#[tokio::test]
async fn non_utf8_output_is_lossy_and_split_characters_survive() {
    let (_t, dir) = lease();
    // "é" is C3 A9: write its halves separately, then an invalid byte.
    let mut streamed = String::new();
    let req = sh("printf '\\303'; sleep 0.2; printf '\\251 \\377\\n'");
    let mut sink = sink_fn(|_, c: &str| streamed.push_str(c));
    let out = run(&dir, req, None, &mut sink, std::future::pending()).await.unwrap();
    assert_eq!(out.stdout, "é \u{FFFD}\n");
    assert_eq!(streamed, out.stdout);
}

#[tokio::test]
async fn missing_command_answers_127() {
    let (_t, dir) = lease();
    let out = run_simple(
        &dir,
        ExecRequest { command: "no-such-command-xyz".into(), ..Default::default() },
    )
    .await;
    assert_eq!(out.exit_code, Some(127));
    assert!(out.stderr.contains("no-such-command-xyz"));
}

#[tokio::test]
async fn background_process_holding_the_pipe_does_not_hang_the_call() {
    let (_t, dir) = lease();
    let groups = ProcessGroups::default();
    let started = StdInstant::now();
    let req = sh("sleep 60 & echo started");
    let out = run(&dir, req, Some(&groups), &mut (), std::future::pending()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "liveness bound: {:?}", started.elapsed());
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout, "started\n");
    // The background process goes on until the lease ends it.
    let canon = dir.canonicalize().unwrap();
    assert_eq!(groups.live_count(&canon), 1);
    assert_eq!(groups.kill_all(&canon), 1);
}
