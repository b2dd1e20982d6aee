//! The measurements: sequential round trips (with latency samples), pipelined round trips
//! with a bounded window, cold start to the `initialize` answer, and idle RSS.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::client::{encode_request, read_reply, rss_bytes, Worker, WorkerSpec};
use crate::stats::{median, per_second, percentile};

/// The request every worker is measured with.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// Method name (no JSON escaping needed).
    pub method: &'a str,
    /// Params as JSON text.
    pub params_json: &'a str,
}

/// A count-and-time budget: stop after `max` operations or once `time` has passed.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Upper bound on operations.
    pub max: u64,
    /// Upper bound on wall time.
    pub time: Duration,
}

/// Result of a sequential run.
#[derive(Debug, Clone)]
pub struct Sequential {
    /// Round trips completed.
    pub count: u64,
    /// Wall time of the whole run.
    pub elapsed: Duration,
    /// Median round trip.
    pub p50: Duration,
    /// 99th-percentile round trip.
    pub p99: Duration,
}

impl Sequential {
    /// Round trips per second.
    pub fn rate(&self) -> f64 {
        per_second(self.count, self.elapsed)
    }
}

/// Send, wait for the answer, repeat: round trips per second and latency percentiles.
pub fn sequential(w: &mut Worker, call: Call<'_>, budget: Budget) -> io::Result<Sequential> {
    let mut samples = Vec::with_capacity(budget.max.min(1 << 20) as usize);
    let start = Instant::now();
    let deadline = start + budget.time;
    while (samples.len() as u64) < budget.max {
        let t = Instant::now();
        w.call(call.method, call.params_json)?;
        let now = Instant::now();
        samples.push(now - t);
        if now >= deadline {
            break;
        }
    }
    let elapsed = start.elapsed();
    Ok(Sequential {
        count: samples.len() as u64,
        elapsed,
        p50: median(&samples).unwrap_or_default(),
        p99: percentile(&samples, 99.0).unwrap_or_default(),
    })
}

/// Result of a pipelined run.
#[derive(Debug, Clone, Copy)]
pub struct Pipelined {
    /// Round trips completed.
    pub count: u64,
    /// Wall time from the first write to the last answer.
    pub elapsed: Duration,
}

impl Pipelined {
    /// Round trips per second.
    pub fn rate(&self) -> f64 {
        per_second(self.count, self.elapsed)
    }
}

/// Keeps up to `window` requests in flight: a writer thread tops the window up (refilling
/// once it is half empty, one flush per batch) while this thread reads answers. Every id is
/// checked to be answered exactly once.
pub fn pipelined(
    w: &mut Worker,
    call: Call<'_>,
    budget: Budget,
    window: u64,
) -> io::Result<Pipelined> {
    let window = window.max(2);
    let first_id = w.next_id();
    // Reserve the maximum; unused ids are simply never sent.
    w.reserve_ids(budget.max);
    let completed = Mutex::new(0u64);
    let room = Condvar::new();
    let total = AtomicU64::new(u64::MAX);
    let stdin = w.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
    let stdout = &mut w.stdout;
    let start = Instant::now();
    let deadline = start + budget.time;

    let (sent, received) = thread::scope(|s| -> io::Result<(u64, u64)> {
        let writer = s.spawn(|| -> io::Result<u64> {
            let mut buf = Vec::with_capacity(64 * 1024);
            let mut sent = 0u64;
            loop {
                let done = {
                    let mut c = completed.lock().unwrap_or_else(|e| e.into_inner());
                    while sent - *c > window / 2 {
                        c = room.wait(c).unwrap_or_else(|e| e.into_inner());
                    }
                    *c
                };
                let mut batch = (window - (sent - done)).min(budget.max - sent);
                let last = Instant::now() >= deadline || sent + batch >= budget.max;
                if last {
                    batch = batch.max(1);
                    total.store(sent + batch, Ordering::Release);
                }
                buf.clear();
                for i in 0..batch {
                    encode_request(&mut buf, first_id + sent + i, call.method, call.params_json);
                }
                stdin.write_all(&buf)?;
                stdin.flush()?;
                sent += batch;
                if last {
                    return Ok(sent);
                }
            }
        });

        let mut seen = vec![false; budget.max as usize];
        let mut line = Vec::with_capacity(1024);
        let mut received = 0u64;
        let read = (|| -> io::Result<()> {
            while received < total.load(Ordering::Acquire) {
                let reply = read_reply(stdout, &mut line)?;
                let idx = reply.id.checked_sub(first_id).filter(|&i| i < budget.max);
                let idx =
                    idx.ok_or_else(|| io::Error::other(format!("unexpected id {}", reply.id)))?;
                if std::mem::replace(&mut seen[idx as usize], true) {
                    return Err(io::Error::other(format!("id {} answered twice", reply.id)));
                }
                received += 1;
                *completed.lock().unwrap_or_else(|e| e.into_inner()) = received;
                room.notify_one();
            }
            Ok(())
        })();
        if read.is_err() {
            // Unblock the writer so the scope can end; the error is reported below.
            *completed.lock().unwrap_or_else(|e| e.into_inner()) = u64::MAX / 2;
            room.notify_one();
        }
        let sent = writer.join().map_err(|_| io::Error::other("writer thread panicked"))?;
        read?;
        Ok((sent?, received))
    })?;
    let elapsed = start.elapsed();
    if sent != received {
        return Err(io::Error::other(format!("sent {sent}, received {received}")));
    }
    Ok(Pipelined { count: received, elapsed })
}

/// Spawn → `initialize` answered, `spawns` times; returns the median. Each worker is closed
/// (stdin EOF) afterwards.
pub fn cold_start(spec: &WorkerSpec, spawns: usize) -> io::Result<Duration> {
    let mut samples = Vec::with_capacity(spawns);
    for _ in 0..spawns {
        let t = Instant::now();
        let mut w = Worker::spawn(spec)?;
        w.initialize()?;
        samples.push(t.elapsed());
        w.close(Duration::from_secs(5))?;
    }
    median(&samples).ok_or_else(|| io::Error::other("no spawns"))
}

/// VmRSS of an initialized worker after `idle` without traffic.
pub fn idle_rss(w: &Worker, idle: Duration) -> io::Result<u64> {
    thread::sleep(idle);
    rss_bytes(w.pid())
}
