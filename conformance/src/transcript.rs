//! The transcript: every line exchanged with a worker, both ways, with timestamps.
//!
//! A transcript is shared between the reader threads of a worker process and the host side, so
//! the order of entries is the order in which the harness saw the lines. Failure artifacts and
//! `sandbox-conformance replay` read it back (one JSON object per line, see [`Entry::to_json`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Lines longer than this are stored shortened (the oversize-frame check sends tens of MiB).
pub const MAX_STORED_LINE: usize = 64 * 1024;

/// How many leading bytes of an over-long line are kept.
const KEPT_PREFIX: usize = 256;

/// How many bytes of stdin and stdout lines one transcript stores; past that, lines are
/// counted, not stored (a worker that floods frames cannot grow the harness without bound).
pub const MAX_STORED_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// How many bytes of stderr lines one transcript stores from the start of the worker's life;
/// past that only a tail of [`STDERR_TAIL_BYTES`] is kept.
pub const MAX_STORED_STDERR_BYTES: usize = 256 * 1024;

/// How many bytes of the latest stderr lines are kept once [`MAX_STORED_STDERR_BYTES`] is used.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// What one stored entry costs besides its text (the entry and its allocation), in the budgets.
const ENTRY_OVERHEAD: usize = 96;

/// What a transcript counts (besides what it stores).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Volume {
    /// Lines that arrived, per direction (send, recv, stderr).
    pub lines: [u64; 3],
    /// Bytes that arrived, per direction.
    pub bytes: [u64; 3],
    /// Lines not stored because a budget was spent, per direction.
    pub dropped: [u64; 3],
}

fn slot(dir: Direction) -> usize {
    match dir {
        Direction::Send => 0,
        Direction::Recv => 1,
        Direction::Stderr => 2,
    }
}

#[derive(Debug, Default)]
struct Store {
    entries: Vec<Entry>,
    stored: [usize; 3],
    volume: Volume,
    tail: std::collections::VecDeque<Entry>,
    tail_bytes: usize,
}

/// Which way a line travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Host → worker, on the worker's stdin.
    Send,
    /// Worker → host, on the worker's stdout.
    Recv,
    /// A line of the worker's stderr.
    Stderr,
}

/// One recorded line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Which way the line travelled.
    pub dir: Direction,
    /// Milliseconds since the transcript was opened.
    pub t_ms: u64,
    /// The line without its terminating `\n` (lossily decoded when it is not UTF-8).
    pub line: String,
    /// For a shortened line: its full length in bytes (`line` then holds only a prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elided_bytes: Option<usize>,
}

impl Entry {
    /// The entry as one NDJSON artifact line (without the trailing newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an entry always serializes")
    }
}

/// A shared, append-only transcript of one worker process.
#[derive(Debug, Clone)]
pub struct Transcript {
    inner: Arc<Mutex<Store>>,
    started: Instant,
    label: Arc<str>,
}

impl Transcript {
    /// An empty transcript; `label` names the worker process in reports ("main", "shutdown", …).
    pub fn new(label: &str) -> Self {
        Transcript { inner: Arc::default(), started: Instant::now(), label: label.into() }
    }

    /// The label given at creation.
    pub fn label(&self) -> &str {
        &self.label
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records one line (without its `\n`; a trailing `\r` is kept).
    pub fn record(&self, dir: Direction, bytes: &[u8]) {
        self.record_long(dir, bytes, bytes.len());
    }

    /// Records one line of which only `bytes` (a prefix) was kept; `total` is its full length.
    /// Stdin and stdout lines are stored until [`MAX_STORED_FRAME_BYTES`] is used; stderr lines
    /// until [`MAX_STORED_STDERR_BYTES`], then as a moving tail ([`Transcript::stderr_tail`]).
    pub fn record_long(&self, dir: Direction, bytes: &[u8], total: usize) {
        let t_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (line, elided_bytes) = if total > MAX_STORED_LINE || bytes.len() < total {
            let kept = &bytes[..bytes.len().min(KEPT_PREFIX)];
            (String::from_utf8_lossy(kept).into_owned(), Some(total))
        } else {
            (String::from_utf8_lossy(bytes).into_owned(), None)
        };
        let cost = line.len() + ENTRY_OVERHEAD;
        let mut store = self.lock();
        let i = slot(dir);
        store.volume.lines[i] += 1;
        store.volume.bytes[i] += total as u64;
        let budget = match dir {
            Direction::Stderr => MAX_STORED_STDERR_BYTES,
            _ => MAX_STORED_FRAME_BYTES,
        };
        let entry = Entry { dir, t_ms, line, elided_bytes };
        if store.volume.dropped[i] == 0 && store.stored[i] + cost <= budget {
            store.stored[i] += cost;
            store.entries.push(entry);
            return;
        }
        store.volume.dropped[i] += 1;
        if dir == Direction::Stderr {
            store.tail_bytes += cost;
            store.tail.push_back(entry);
            while store.tail_bytes > STDERR_TAIL_BYTES {
                match store.tail.pop_front() {
                    Some(old) => store.tail_bytes -= old.line.len() + ENTRY_OVERHEAD,
                    None => break,
                }
            }
        }
    }

    /// What arrived, stored or not.
    pub fn volume(&self) -> Volume {
        self.lock().volume.clone()
    }

    /// The latest stderr lines that came after the stored ones (empty while every stderr line
    /// is stored).
    #[cfg(test)]
    pub fn stderr_tail(&self) -> Vec<Entry> {
        self.lock().tail.iter().cloned().collect()
    }

    /// The number of entries so far (a position to slice from later).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// A copy of the entries in `from..to` (clamped to the current length).
    pub fn slice(&self, from: usize, to: usize) -> Vec<Entry> {
        let store = self.lock();
        let entries = &store.entries;
        let to = to.min(entries.len());
        entries[from.min(to)..to].to_vec()
    }

    /// A copy of every stored entry, then the stderr tail (if any).
    pub fn entries(&self) -> Vec<Entry> {
        let store = self.lock();
        store.entries.iter().chain(store.tail.iter()).cloned().collect()
    }
}

/// Reads an artifact file written from [`Entry::to_json`] lines.
pub fn parse_artifact(text: &str) -> Result<Vec<Entry>, serde_json::Error> {
    text.lines().filter(|l| !l.trim().is_empty()).map(serde_json::from_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_shortened_and_round_trip() {
        let t = Transcript::new("t");
        t.record(Direction::Send, b"{\"a\":1}\r");
        t.record(Direction::Recv, &vec![b'x'; MAX_STORED_LINE + 1]);
        let entries = t.entries();
        assert_eq!(entries[0].line, "{\"a\":1}\r");
        assert_eq!(entries[1].elided_bytes, Some(MAX_STORED_LINE + 1));
        assert_eq!(entries[1].line.len(), KEPT_PREFIX);
        let text: String = entries.iter().map(|e| e.to_json() + "\n").collect();
        assert_eq!(parse_artifact(&text).unwrap(), entries);
        assert_eq!(t.slice(1, 10).len(), 1);
    }

    #[test]
    fn floods_are_counted_not_stored_and_stderr_keeps_a_tail() {
        let t = Transcript::new("t");
        let line = vec![b'y'; 1000];
        let n = 2 * MAX_STORED_STDERR_BYTES / 1000;
        for _ in 0..n {
            t.record(Direction::Stderr, &line);
        }
        t.record(Direction::Stderr, b"the last words");
        let v = t.volume();
        assert_eq!(v.lines[2], n as u64 + 1);
        assert!(v.dropped[2] > 0);
        let tail = t.stderr_tail();
        assert_eq!(tail.last().unwrap().line, "the last words");
        let tail_bytes: usize = tail.iter().map(|e| e.line.len() + ENTRY_OVERHEAD).sum();
        assert!(tail_bytes <= STDERR_TAIL_BYTES);
        let frame = vec![b'f'; 60 * 1024];
        for _ in 0..(MAX_STORED_FRAME_BYTES / frame.len() + 10) {
            t.record(Direction::Recv, &frame);
        }
        let stored: usize =
            t.entries().iter().filter(|e| e.dir == Direction::Recv).map(|e| e.line.len()).sum();
        assert!(stored <= MAX_STORED_FRAME_BYTES);
        assert!(t.volume().dropped[1] >= 10);
    }
}
