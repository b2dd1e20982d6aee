//! Reading a command's output: lossy UTF-8 decoding in place and collection bounded by the
//! encoded size the result will have on the wire.

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

/// One stream's text for the result, at most `limit` UTF-16 code units once JSON-encoded.
#[derive(Debug)]
pub(crate) struct Collected {
    pub text: String,
    units: usize,
    limit: usize,
    pub truncated: bool,
}

impl Collected {
    pub fn new(limit: usize) -> Self {
        Collected { text: String::new(), units: 0, limit, truncated: false }
    }

    /// Appends as much of `piece` as fits (whole characters only).
    pub fn push(&mut self, piece: &str) {
        if self.truncated {
            return;
        }
        let units = json_string_units(piece);
        if self.units + units <= self.limit {
            self.units += units;
            self.text.push_str(piece);
            return;
        }
        let room = self.limit - self.units;
        let mut used = 0;
        let mut cut = 0;
        for (i, c) in piece.char_indices() {
            let mut tmp = [0u8; 4];
            let w = json_string_units(c.encode_utf8(&mut tmp));
            if used + w > room {
                break;
            }
            used += w;
            cut = i + c.len_utf8();
        }
        self.text.push_str(&piece[..cut]);
        self.units += used;
        self.truncated = true;
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

    #[test]
    fn collection_is_bounded_by_encoded_units() {
        let mut c = Collected::new(9);
        c.push("\n\n\n"); // 6 units
        c.push("ab\"c"); // 5 units: only "ab" fits
        assert!(c.truncated);
        assert_eq!(c.text, "\n\n\nab");
        let encoded = serde_json::to_string(&c.text).unwrap();
        assert!(encoded.len() - 2 <= 9);
        c.push("more");
        assert_eq!(c.text, "\n\n\nab");
    }
}
