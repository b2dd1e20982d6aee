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
    inner: Arc<Mutex<Vec<Entry>>>,
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

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records one line (without its `\n`; a trailing `\r` is kept).
    pub fn record(&self, dir: Direction, bytes: &[u8]) {
        let t_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (line, elided_bytes) = if bytes.len() > MAX_STORED_LINE {
            let prefix = String::from_utf8_lossy(&bytes[..KEPT_PREFIX]).into_owned();
            (prefix, Some(bytes.len()))
        } else {
            (String::from_utf8_lossy(bytes).into_owned(), None)
        };
        self.lock().push(Entry { dir, t_ms, line, elided_bytes });
    }

    /// The number of entries so far (a position to slice from later).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the entries in `from..to` (clamped to the current length).
    pub fn slice(&self, from: usize, to: usize) -> Vec<Entry> {
        let entries = self.lock();
        let to = to.min(entries.len());
        entries[from.min(to)..to].to_vec()
    }

    /// A copy of every entry.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().clone()
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
}
