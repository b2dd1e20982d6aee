//! The measurements: sequential round trips (with latency samples), pipelined round trips
//! with a bounded window, cold start to the `initialize` answer, and idle RSS.

use std::io::{self, Write};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64};
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
    /// Every round trip, in order.
    pub samples: Vec<Duration>,
}

impl Sequential {
    /// A summary of `samples` taken over `elapsed`.
    pub fn from_samples(samples: Vec<Duration>, elapsed: Duration) -> Self {
        Sequential {
            count: samples.len() as u64,
            elapsed,
            p50: median(&samples).unwrap_or_default(),
            p99: percentile(&samples, 99.0).unwrap_or_default(),
            samples,
        }
    }

    /// Several runs as one: samples concatenated, elapsed times added.
    pub fn merge(parts: impl IntoIterator<Item = Sequential>) -> Self {
        let mut samples = Vec::new();
        let mut elapsed = Duration::ZERO;
        for p in parts {
            samples.extend(p.samples);
            elapsed += p.elapsed;
        }
        Self::from_samples(samples, elapsed)
    }

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
    Ok(Sequential::from_samples(samples, start.elapsed()))
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
    let sync = Window::default();
    let stdin = w.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
    let stdout = &mut w.stdout;
    let start = Instant::now();
    let deadline = start + budget.time;

    let (sent, received) = thread::scope(|s| -> io::Result<(u64, u64)> {
        let writer = s.spawn(|| -> io::Result<u64> {
            let mut buf = Vec::with_capacity(64 * 1024);
            let mut sent = 0u64;
            loop {
                let done = sync.wait_for_room(sent, window / 2)?;
                let mut batch = (window - (sent - done)).min(budget.max - sent);
                let last = Instant::now() >= deadline || sent + batch >= budget.max;
                if last {
                    batch = batch.max(1);
                    sync.total.store(sent + batch, SeqCst);
                }
                buf.clear();
                for i in 0..batch {
                    encode_request(&mut buf, first_id + sent + i, call.method, call.params_json);
                }
                sent += batch;
                sync.sent.store(sent, SeqCst);
                stdin.write_all(&buf)?;
                stdin.flush()?;
                if last {
                    return Ok(sent);
                }
            }
        });

        let mut seen = vec![false; budget.max as usize];
        let mut line = Vec::with_capacity(1024);
        let mut received = 0u64;
        let read = (|| -> io::Result<()> {
            while received < sync.total.load(SeqCst) {
                let reply = read_reply(stdout, &mut line)?;
                let idx = reply.id.checked_sub(first_id).filter(|&i| i < budget.max);
                let idx =
                    idx.ok_or_else(|| io::Error::other(format!("unexpected id {}", reply.id)))?;
                if std::mem::replace(&mut seen[idx as usize], true) {
                    return Err(io::Error::other(format!("id {} answered twice", reply.id)));
                }
                received += 1;
                sync.completed(received, window / 2);
            }
            Ok(())
        })();
        if read.is_err() {
            // Unblock the writer so the scope can end; the error is reported below.
            sync.abort();
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

/// The writer/reader handshake of [`pipelined`]. The reader publishes progress in atomics and
/// takes the lock (one futex wake) only when the writer is parked and the window has drained
/// to the refill mark, so answers cost no syscall on the client side.
#[derive(Default)]
struct Window {
    sent: AtomicU64,
    done: AtomicU64,
    total: TotalAtomic,
    parked: AtomicBool,
    aborted: AtomicBool,
    lock: Mutex<()>,
    room: Condvar,
}

/// `u64::MAX` until the writer knows its final count.
struct TotalAtomic(AtomicU64);

impl Default for TotalAtomic {
    fn default() -> Self {
        TotalAtomic(AtomicU64::new(u64::MAX))
    }
}

impl std::ops::Deref for TotalAtomic {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

impl Window {
    /// Writer: waits until at most `low` requests are in flight; returns the answered count.
    fn wait_for_room(&self, sent: u64, low: u64) -> io::Result<u64> {
        let ready = || sent - self.done.load(SeqCst).min(sent) <= low;
        if ready() {
            return Ok(self.done.load(SeqCst));
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.parked.store(true, SeqCst);
        while !ready() && !self.aborted.load(SeqCst) {
            guard = self.room.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        self.parked.store(false, SeqCst);
        if self.aborted.load(SeqCst) {
            return Err(io::Error::other("reader failed"));
        }
        Ok(self.done.load(SeqCst))
    }

    /// Reader: `done` answers so far; wakes a parked writer at the refill mark.
    fn completed(&self, done: u64, low: u64) {
        self.done.store(done, SeqCst);
        if self.parked.load(SeqCst) && self.sent.load(SeqCst).saturating_sub(done) <= low {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.room.notify_one();
        }
    }

    /// Reader: gives up; a parked writer returns an error.
    fn abort(&self) {
        self.aborted.store(true, SeqCst);
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.room.notify_one();
    }
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
