//! Many leases executing at once: one command in flight per lease, the next sent as soon as
//! the previous one is answered, for a time budget. Throughput (commands per second) and the
//! latency of each command (request written → answer read). The raw limit runs the same
//! command from as many client threads, spawning it directly.
//!
//! The command is `cat` fed [`STDIN_BYTES`] bytes: it reads stdin, writes output (one
//! `execute.log` chunk and the result) and exits.

use std::io::{self, BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::client::{encode_request, Worker};
use crate::lease::{Driver, Lease};
use crate::stats::percentile;

/// Bytes of stdin (echoed to stdout) per command.
pub const STDIN_BYTES: usize = 1024;

/// Result of a concurrent run.
#[derive(Debug, Clone)]
pub struct Concurrent {
    /// Commands completed.
    pub count: u64,
    /// Wall time from the first request to the last answer.
    pub elapsed: Duration,
    /// Median command latency.
    pub p50: Duration,
    /// 99th-percentile command latency.
    pub p99: Duration,
}

impl Concurrent {
    fn from(samples: &[Duration], elapsed: Duration) -> Self {
        Concurrent {
            count: samples.len() as u64,
            elapsed,
            p50: percentile(samples, 50.0).unwrap_or_default(),
            p99: percentile(samples, 99.0).unwrap_or_default(),
        }
    }

    /// Commands per second.
    pub fn rate(&self) -> f64 {
        self.count as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

fn payload() -> String {
    "x".repeat(STDIN_BYTES - 1) + "\n"
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    result: Option<AnswerResult>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerResult {
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    stdout: String,
}

/// Runs `cat` on every lease at once through the worker for `time` (then drains).
pub fn through_worker(
    w: &mut Worker,
    driver: &Driver,
    leases: &[Lease],
    time: Duration,
) -> io::Result<Concurrent> {
    let stdin_text = payload();
    let params: Vec<String> = leases
        .iter()
        .map(|l| {
            driver
                .params(json!({
                    "lease": l.host_lease, "command": "cat", "cwd": l.remote_cwd,
                    "stdin": stdin_text, "timeoutMs": 60_000,
                }))
                .to_string()
        })
        .collect();
    let n = leases.len() as u64;
    let first = w.reserve_ids(1 << 40);
    let stdin = w.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
    let stdout = &mut w.stdout;
    // ids: first + k, lease = k % n.
    let (tx, rx) = mpsc::channel::<Option<u64>>();
    let params = &params;
    thread::scope(|s| -> io::Result<Concurrent> {
        let writer = s.spawn(move || -> io::Result<()> {
            let mut buf = Vec::new();
            while let Ok(Some(k)) = rx.recv() {
                buf.clear();
                encode_request(
                    &mut buf,
                    first + k,
                    "environmentExecute",
                    &params[(k % n) as usize],
                );
                // Batch what is already queued into one write.
                while let Ok(next) = rx.try_recv() {
                    let Some(k) = next else {
                        stdin.write_all(&buf)?;
                        return stdin.flush();
                    };
                    encode_request(
                        &mut buf,
                        first + k,
                        "environmentExecute",
                        &params[(k % n) as usize],
                    );
                }
                stdin.write_all(&buf)?;
                stdin.flush()?;
            }
            Ok(())
        });
        let start = Instant::now();
        let deadline = start + time;
        let mut sent_at: Vec<Instant> = Vec::new();
        for k in 0..n {
            sent_at.push(Instant::now());
            let _ = tx.send(Some(k));
        }
        let mut next = n;
        let mut outstanding = n;
        let mut samples = Vec::new();
        let mut line = Vec::new();
        let read = (|| -> io::Result<()> {
            while outstanding > 0 {
                line.clear();
                if stdout.read_until(b'\n', &mut line)? == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "worker closed stdout",
                    ));
                }
                let a: Answer = serde_json::from_slice(&line)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                if a.method.is_some() {
                    continue;
                }
                if let Some(err) = a.error {
                    return Err(io::Error::other(format!("error response: {err}")));
                }
                let k =
                    a.id.as_ref()
                        .and_then(Value::as_u64)
                        .and_then(|id| id.checked_sub(first))
                        .filter(|&k| k < next)
                        .ok_or_else(|| io::Error::other("answer with an unexpected id"))?;
                samples.push(sent_at[k as usize].elapsed());
                let r = a.result.ok_or_else(|| io::Error::other("answer without result"))?;
                if r.exit_code != Some(0) || r.stdout.len() != STDIN_BYTES {
                    return Err(io::Error::other("`cat` did not echo its stdin"));
                }
                outstanding -= 1;
                if Instant::now() < deadline {
                    sent_at.push(Instant::now());
                    let _ = tx.send(Some(next));
                    next += 1;
                    outstanding += 1;
                }
            }
            Ok(())
        })();
        let elapsed = start.elapsed();
        let _ = tx.send(None);
        drop(tx);
        let wrote = writer.join().map_err(|_| io::Error::other("writer panicked"))?;
        read?;
        wrote?;
        Ok(Concurrent::from(&samples, elapsed))
    })
}

/// The raw limit: `threads` client threads, each spawning `cat` (fed the same stdin) one
/// after another for `time`.
pub fn raw(threads: usize, time: Duration) -> io::Result<Concurrent> {
    let stdin_text = payload();
    let start = Instant::now();
    let deadline = start + time;
    let per_thread: Vec<io::Result<Vec<Duration>>> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let stdin_text = &stdin_text;
                s.spawn(move || -> io::Result<Vec<Duration>> {
                    let mut samples = Vec::new();
                    loop {
                        let t = Instant::now();
                        let mut child = Command::new("cat")
                            .stdin(Stdio::piped())
                            .stdout(Stdio::piped())
                            .stderr(Stdio::null())
                            .spawn()?;
                        let mut pipe = child.stdin.take().expect("piped");
                        pipe.write_all(stdin_text.as_bytes())?;
                        drop(pipe);
                        let out = child.wait_with_output()?;
                        if !out.status.success() || out.stdout.len() != STDIN_BYTES {
                            return Err(io::Error::other("`cat` did not echo its stdin"));
                        }
                        samples.push(t.elapsed());
                        if Instant::now() >= deadline {
                            return Ok(samples);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("thread panicked"))))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut samples = Vec::new();
    for r in per_thread {
        samples.extend(r?);
    }
    Ok(Concurrent::from(&samples, elapsed))
}
