//! The core of [`crate::output::OutputCollector`]: lossy UTF-8 decoding in place and collection bounded by the
//! encoded size the result will have on the wire.

use paperclip_sandbox_protocol::json_text::json_ascii_units;
use paperclip_sandbox_protocol::jsonrpc::json_string_units;

/// The length of `buf` without a trailing, possibly incomplete, multi-byte sequence (at most
/// three bytes are held back).
pub(crate) fn complete_prefix_len(buf: &[u8]) -> usize {
    let n = buf.len();
    for back in 1..=n.min(3) {
        let b = buf[n - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { n - back } else { n };
    }
    n
}

/// The first read of each output stream.
const READ_FIRST: usize = 64 * 1024;

/// One output stream of a command: read straight into the text collected for the result (no
/// copy), at most `limit` UTF-16 code units once JSON-encoded; past that, into a small buffer
/// that only feeds the stream.
///
/// Invariant: `raw[..text_len]` is valid UTF-8 (every piece added was checked, or repaired,
/// and ends on a character boundary).
#[derive(Debug)]
pub(crate) struct Collected {
    /// The collected text, then the bytes of reads not yet taken (a character the last read
    /// split) while collecting.
    raw: Vec<u8>,
    text_len: usize,
    /// Once truncated: the bytes of reads not yet taken.
    spill: Vec<u8>,
    /// The most the next read takes; doubles while reads fill it, up to `read_max`.
    read_size: usize,
    read_max: usize,
    units: usize,
    limit: usize,
    /// True once the text was cut to fit `limit`.
    pub truncated: bool,
}

/// The text of one read, ready to stream ([`Collected::piece`]). Not `Copy`:
/// [`Collected::commit`] consumes it, so a piece cannot be read again after a commit may have
/// cut the text it points into.
#[derive(Debug)]
pub(crate) struct Piece {
    start: usize,
    end: usize,
    units: usize,
}

impl Collected {
    /// Collects up to `limit` units, reading at most `read_max` bytes at once.
    pub fn new(limit: usize, read_max: usize) -> Self {
        Collected {
            raw: Vec::new(),
            text_len: 0,
            spill: Vec::new(),
            read_size: READ_FIRST.min(read_max),
            read_max,
            units: 0,
            limit,
            truncated: false,
        }
    }

    /// Where the next read appends its bytes, and the most it may take.
    pub fn read_target(&mut self) -> (&mut Vec<u8>, usize) {
        let buf = if self.truncated { &mut self.spill } else { &mut self.raw };
        buf.reserve(self.read_size);
        (buf, self.read_size)
    }

    /// Notes that a read appended `n` bytes (growing the next read when it took all it could)
    /// and returns the text to stream: the complete characters not yet taken, U+FFFD for
    /// bytes that are not UTF-8. An incomplete character at the end is held back.
    pub fn piece(&mut self, n: usize) -> Piece {
        if n == self.read_size {
            self.read_size = (self.read_size * 2).min(self.read_max);
        }
        let start = if self.truncated { 0 } else { self.text_len };
        let buf = if self.truncated { &mut self.spill } else { &mut self.raw };
        let mut end = start + complete_prefix_len(&buf[start..]);
        // ASCII (the usual case) is valid UTF-8: one pass counts and checks it.
        let ascii = json_ascii_units(&buf[start..end]);
        if ascii.is_none() && std::str::from_utf8(&buf[start..end]).is_err() {
            let fixed = String::from_utf8_lossy(&buf[start..end]).into_owned();
            let held = buf[end..].to_vec();
            buf.truncate(start);
            buf.extend_from_slice(fixed.as_bytes());
            end = buf.len();
            buf.extend_from_slice(&held);
        }
        let units = match ascii {
            Some(units) => units,
            None if self.truncated => 0,
            None => json_string_units(self.text(&Piece { start, end, units: 0 })),
        };
        Piece { start, end, units }
    }

    /// The text of `piece` (until the next read or [`commit`](Self::commit)).
    pub fn text(&self, piece: &Piece) -> &str {
        let buf = if self.truncated { &self.spill } else { &self.raw };
        let bytes = &buf[piece.start..piece.end];
        // SAFETY: `piece` ends the checked (or repaired) UTF-8 of `Collected::piece`, and nothing
        // changed `buf` since (the caller holds `&self`); a piece starts on a character
        // boundary.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// Takes `piece` (after it was streamed): kept for the result as far as it fits.
    pub fn commit(&mut self, piece: Piece) {
        if self.truncated {
            self.spill.drain(..piece.end);
            return;
        }
        if self.units + piece.units <= self.limit {
            self.units += piece.units;
            self.text_len = piece.end;
            return;
        }
        // Cut on a character boundary, and go on reading into the spill buffer.
        let room = self.limit - self.units;
        let mut used = 0;
        let mut cut = piece.start;
        for c in self.text(&piece).chars() {
            let mut tmp = [0u8; 4];
            let w = json_string_units(c.encode_utf8(&mut tmp));
            if used + w > room {
                break;
            }
            used += w;
            cut += c.len_utf8();
        }
        self.spill.clear();
        self.spill.extend_from_slice(&self.raw[piece.end..]);
        self.raw.truncate(cut);
        self.text_len = cut;
        self.units += used;
        self.truncated = true;
    }

    /// At end of output: true when bytes were held back (never a whole character; the
    /// caller streams U+FFFD for them, which is collected here).
    pub fn finish(&mut self) -> bool {
        let held = if self.truncated {
            std::mem::take(&mut self.spill).len()
        } else {
            let held = self.raw.len() - self.text_len;
            self.raw.truncate(self.text_len);
            held
        };
        if held == 0 {
            return false;
        }
        const FFFD: &str = "\u{FFFD}";
        if !self.truncated && self.units + json_string_units(FFFD) <= self.limit {
            self.units += json_string_units(FFFD);
            self.raw.extend_from_slice(FFFD.as_bytes());
            self.text_len = self.raw.len();
        } else {
            self.truncated = true;
        }
        true
    }

    /// The collected text.
    pub fn into_text(mut self) -> String {
        self.raw.truncate(self.text_len);
        // SAFETY: `raw[..text_len]` is valid UTF-8 (the invariant of the type).
        unsafe { String::from_utf8_unchecked(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_tails_are_held_back() {
        assert_eq!(complete_prefix_len(b"abc"), 3);
        assert_eq!(complete_prefix_len("é".as_bytes()), 2);
        assert_eq!(complete_prefix_len(&"é".as_bytes()[..1]), 0);
        assert_eq!(complete_prefix_len(&"😀".as_bytes()[..3]), 0);
        assert_eq!(complete_prefix_len(b"a\xff"), 2);
    }

    /// Feeds `reads` through `c` as the runner does; returns what was streamed.
    fn feed(c: &mut Collected, reads: &[&[u8]]) -> String {
        let mut streamed = String::new();
        for read in reads {
            let (buf, want) = c.read_target();
            assert!(read.len() <= want);
            buf.extend_from_slice(read);
            let piece = c.piece(read.len());
            streamed += c.text(&piece);
            c.commit(piece);
        }
        streamed
    }

    #[test]
    fn collection_is_bounded_by_encoded_units() {
        let mut c = Collected::new(9, 1024);
        // 6 units, then 5 of which only "ab" fits.
        assert_eq!(feed(&mut c, &[b"\n\n\n", b"ab\"c"]), "\n\n\nab\"c");
        assert!(c.truncated);
        assert_eq!(feed(&mut c, &[b"more"]), "more");
        assert!(!c.finish());
        let text = c.into_text();
        assert_eq!(text, "\n\n\nab");
        let encoded = serde_json::to_string(&text).unwrap();
        assert!(encoded.len() - 2 <= 9);
    }

    #[test]
    fn split_characters_are_kept_whole_and_bad_bytes_replaced() {
        let e = "é".as_bytes();
        let mut c = Collected::new(100, 1024);
        assert_eq!(feed(&mut c, &[&[b'a', e[0]], &[e[1], 0xff, b'b']]), "aé\u{FFFD}b");
        assert_eq!(feed(&mut c, &[&[e[0]]]), "");
        assert!(c.finish());
        assert_eq!(c.into_text(), "aé\u{FFFD}b\u{FFFD}");
        // Held bytes survive the cut into the spill buffer.
        let mut c = Collected::new(2, 1024);
        assert_eq!(feed(&mut c, &[&[b'x', b'y', b'z', e[0]], &[e[1]]]), "xyzé");
        assert!(!c.finish());
        assert_eq!(c.into_text(), "xy");
    }

    #[test]
    fn reads_grow_while_they_fill() {
        let mut c = Collected::new(1 << 30, 4 * READ_FIRST);
        assert_eq!(c.read_target().1, READ_FIRST);
        let (buf, want) = c.read_target();
        buf.resize(buf.len() + want, b'a');
        let piece = c.piece(want);
        c.commit(piece);
        assert_eq!(c.read_target().1, 2 * READ_FIRST);
    }
}
