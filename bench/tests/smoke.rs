//! Correctness smoke test (no timing assertions): the echo worker answers exactly as
//! specified, and the measurement code counts and checks every round trip.

use std::io::{BufRead, Write};
use std::time::Duration;

use paperclip_sandbox_bench::client::{parse_vm_rss, Worker, WorkerSpec};
use paperclip_sandbox_bench::measure::{self, Budget, Call};
use paperclip_sandbox_bench::HEALTH;

fn echo() -> WorkerSpec {
    WorkerSpec::new("echo", env!("CARGO_BIN_EXE_bench-echo-worker"))
}

#[test]
fn echo_worker_answers_exactly() {
    let mut w = Worker::spawn(&echo()).unwrap();
    let first = w.call_raw("initialize", "{}").unwrap();
    assert_eq!(first, r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
    let second = w.call_raw("health", r#"{"x":[1,2,{"y":"z"}]}"#).unwrap();
    assert_eq!(second, r#"{"jsonrpc":"2.0","id":2,"result":null}"#);

    // String ids come back verbatim; notifications and garbage get no answer.
    let stdin = w.stdin.as_mut().unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":{}}\n").unwrap();
    stdin.write_all(b"not json\n").unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"method\":\"health\"}\n").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    w.stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":null}\n");

    let status = w.close(Duration::from_secs(300)).unwrap();
    assert!(status.success(), "echo worker exits 0 at EOF: {status}");
}

#[test]
fn sequential_and_pipelined_count_every_answer() {
    let mut w = Worker::spawn(&echo()).unwrap();
    w.initialize().unwrap();
    let big = Duration::from_secs(600);

    let seq = measure::sequential(&mut w, HEALTH, Budget { max: 500, time: big }).unwrap();
    assert_eq!(seq.count, 500);
    assert!(seq.p50 <= seq.p99);
    assert!(seq.p99 <= seq.elapsed);

    // Window smaller than, equal to and larger than the request count.
    for (max, window) in [(10_000, 16), (64, 64), (100, 1024), (1, 256)] {
        let p = measure::pipelined(&mut w, HEALTH, Budget { max, time: big }, window).unwrap();
        assert_eq!(p.count, max, "window {window}");
    }
    // A zero time budget still sends (and checks) exactly one batch.
    let p =
        measure::pipelined(&mut w, HEALTH, Budget { max: 1000, time: Duration::ZERO }, 8).unwrap();
    assert!((1..=8).contains(&p.count), "{}", p.count);

    // Ids kept increasing across runs and the worker is still in step.
    w.call(HEALTH.method, HEALTH.params_json).unwrap();
    assert!(w.close(Duration::from_secs(300)).unwrap().success());
}

#[test]
fn error_responses_are_failures() {
    // A "worker" that answers every request with an error.
    let mut spec = WorkerSpec::new("err", "sh");
    spec.args = vec![
        "-c".into(),
        r#"while IFS= read -r l; do id=$(printf '%s' "$l" | sed 's/.*"id":\([0-9]*\).*/\1/'); printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}\n' "$id"; done"#.into(),
    ];
    let mut w = Worker::spawn(&spec).unwrap();
    let err = w.call("health", "{}").unwrap_err();
    assert!(err.to_string().contains("error response"), "{err}");
}

#[test]
fn cold_start_and_rss_on_the_echo_worker() {
    let cold = measure::cold_start(&echo(), 3).unwrap();
    assert!(cold > Duration::ZERO);
    let mut w = Worker::spawn(&echo()).unwrap();
    w.initialize().unwrap();
    let rss = measure::idle_rss(&w, Duration::from_millis(1)).unwrap();
    assert!(rss > 0);
    let call = Call { method: "x", params_json: "null" };
    w.call(call.method, call.params_json).unwrap();
}

#[test]
fn vm_rss_parsing() {
    let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t    2048 kB\nThreads:\t1\n";
    assert_eq!(parse_vm_rss(status), Some(2048 * 1024));
    assert_eq!(parse_vm_rss("Name:\tx\n"), None);
}

#[test]
fn sequential_runs_merge() {
    use paperclip_sandbox_bench::measure::Sequential;
    let us = |v: &[u64]| v.iter().map(|&x| Duration::from_micros(x)).collect::<Vec<_>>();
    let a = Sequential::from_samples(us(&[5, 1, 3]), Duration::from_millis(1));
    let b = Sequential::from_samples(us(&[2, 4, 100]), Duration::from_millis(2));
    let m = Sequential::merge([a, b]);
    assert_eq!(m.count, 6);
    assert_eq!(m.elapsed, Duration::from_millis(3));
    assert_eq!(m.p50, Duration::from_micros(3));
    assert_eq!(m.p99, Duration::from_micros(100));
    assert_eq!(m.rate(), 2000.0);
}
