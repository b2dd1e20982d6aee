use super::*;
use std::time::Duration;

/// Collects what is streamed.
#[derive(Default)]
struct Record(Vec<(OutputStream, String)>);

impl OutputSink for Record {
    async fn chunk<'a>(&'a mut self, stream: OutputStream, text: &'a str) {
        self.0.push((stream, text.to_owned()));
    }
}

fn sh(script: &str) -> LocalCommand {
    let mut c = LocalCommand::new("sh");
    c.args(["-c", script]);
    c
}

async fn run(cmd: &LocalCommand) -> (CommandOutput, Record) {
    let mut rec = Record::default();
    let out = cmd.run(&mut rec, std::future::pending(), |_| ()).await.unwrap();
    (out, rec)
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rfind(')').is_some_and(|i| !s[i + 1..].trim_start().starts_with('Z')))
}

fn wait_gone(pid: i32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    !alive(pid)
}

#[tokio::test]
async fn collects_streams_and_delivers_stdin() {
    let mut cmd = sh("cat; echo err >&2; exit 3");
    cmd.stdin(b"hello\n".to_vec());
    let (out, rec) = run(&cmd).await;
    assert_eq!(out.exit_code, Some(3));
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("hello\n", "err\n"));
    let streamed: String =
        rec.0.iter().filter(|(s, _)| *s == OutputStream::Stdout).map(|(_, t)| t.as_str()).collect();
    assert_eq!(streamed, "hello\n");
    let result = out.into_execute_result();
    assert_eq!(result.exit_code, Some(3));
    assert_eq!(result.metadata, None);
}

#[tokio::test]
async fn commands_start_with_default_signal_dispositions() {
    // The worker ignores SIGUSR2 (as a background job's worker ignores SIGINT and SIGQUIT);
    // its commands must not.
    // SAFETY: setting a disposition of this test process; no handler runs.
    let before = unsafe { libc::signal(libc::SIGUSR2, libc::SIG_IGN) };
    let (out, _) = run(&sh("grep '^SigIgn' /proc/self/status")).await;
    // SAFETY: restores what was there.
    unsafe { libc::signal(libc::SIGUSR2, before) };
    let mask = out.stdout.split_whitespace().nth(1).expect("a SigIgn line");
    let ignored = u64::from_str_radix(mask, 16).unwrap();
    assert_eq!(ignored & (1 << (libc::SIGUSR2 - 1)), 0, "the command ignores SIGUSR2: {mask}");
}

#[tokio::test]
async fn a_missing_program_is_not_found() {
    let cmd = LocalCommand::new("/nonexistent/prog");
    let err = cmd.run(&mut (), std::future::pending(), |_| ()).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[tokio::test]
async fn timeout_ends_the_whole_group() {
    let mut cmd = sh("sleep 30 & echo $!; wait");
    cmd.timeout(Duration::from_millis(300));
    let (out, _) = run(&cmd).await;
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    let grandchild: i32 = out.stdout.trim().parse().unwrap();
    assert!(wait_gone(grandchild), "the background sleep survived the timeout");
    assert_eq!(out.into_execute_result().signal.as_deref(), Some("SIGKILL"));
}

#[tokio::test]
async fn cancellation_and_drop_end_the_group() {
    let cmd = sh("sleep 30 & echo $!; wait");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut rec = Record::default();
    let run = cmd.run(
        &mut rec,
        async move {
            let _ = rx.await;
        },
        |_| (),
    );
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = tx.send(());
    };
    let (out, ()) = tokio::join!(run, cancel);
    let out = out.unwrap();
    assert!(out.cancelled);
    assert_eq!(out.into_execute_result().metadata.unwrap()["cancelled"], true);

    let (pid_tx, pid_rx) = std::sync::mpsc::channel();
    let mut discard = ();
    let fut = cmd.run(&mut discard, std::future::pending(), move |pgid| pid_tx.send(pgid).unwrap());
    let _ = tokio::time::timeout(Duration::from_millis(300), fut).await;
    let pgid = pid_rx.recv().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while process_group_exists(pgid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!process_group_exists(pgid), "dropping the run left the group alive");
}

#[tokio::test]
async fn background_processes_end_with_the_run_unless_kept() {
    let (out, _) = run(sh("sleep 30 & echo $!").drain_after_exit(Duration::from_millis(50))).await;
    let bg: i32 = out.stdout.trim().parse().unwrap();
    assert!(wait_gone(bg));

    let mut kept = sh("sleep 30 >/dev/null 2>&1 & echo $!");
    kept.keep_background(true);
    let (out, _) = run(&kept).await;
    let bg: i32 = out.stdout.trim().parse().unwrap();
    assert!(alive(bg));
    assert!(live_groups().contains(&out.pgid));
    kill_process_group(out.pgid).unwrap();
    assert!(wait_gone(bg));
}

#[tokio::test]
async fn output_is_bounded_by_its_encoded_size() {
    // 100 newlines encode to 200 units; the bound is 51.
    let mut cmd = sh("printf '\\n%.0s' $(seq 100); printf 'x\"y' >&2");
    cmd.max_output_units(51);
    let (out, rec) = run(&cmd).await;
    assert!(out.stdout_truncated && !out.stderr_truncated);
    assert_eq!(out.stdout, "\n".repeat(25));
    assert_eq!(out.stderr, "x\"y");
    let streamed: usize =
        rec.0.iter().filter(|(s, _)| *s == OutputStream::Stdout).map(|(_, t)| t.len()).sum();
    assert_eq!(streamed, 100, "streaming goes on past the bound");
    let meta = out.into_execute_result().metadata.unwrap();
    assert_eq!(meta["stdoutTruncated"], true);
    assert!(!meta.contains_key("stderrTruncated"));
}

#[tokio::test]
async fn split_characters_are_kept_whole_and_bad_bytes_replaced() {
    // "é" split across two writes, then an invalid byte and a truncated character at the end.
    let (out, rec) = run(&sh("printf '\\303'; sleep 0.2; printf '\\251 \\377 \\342\\202'")).await;
    assert_eq!(out.stdout, "é \u{FFFD} \u{FFFD}");
    let streamed: String = rec.0.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(streamed, out.stdout);
}

#[test]
fn signal_names() {
    assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    assert_eq!(signal_name(99), "SIG99");
}

#[test]
fn kills_the_whole_group_and_tolerates_a_gone_group() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new("sh")
        .args(["-c", "sleep 30 & echo $!; wait"])
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let grandchild: i32 = line.trim().parse().unwrap();
    kill_process_group(child.id()).unwrap();
    child.wait().unwrap();
    assert!(wait_gone(grandchild), "the grandchild {grandchild} survived");
    kill_process_group(child.id()).unwrap();
    assert!(kill_process_group(0).is_err());
    assert!(kill_process_group(1).is_err());
}
