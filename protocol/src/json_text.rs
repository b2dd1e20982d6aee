//! JSON string literals for large text (command output): exactly the bytes `serde_json` writes
//! for a string, found sixty-four bytes at a time instead of one.
//!
//! `serde_json` looks every byte of a string up in a table before copying it; for the
//! megabytes of output an `environmentExecute` answer and its `execute.log` chunks carry, that
//! lookup is most of the worker's work. [`push_json_string`] looks for the next byte that needs
//! an escape (`"`, `\`, a control character below U+0020) sixty-four bytes at a time (vector
//! compares, AVX2 when the CPU has it) and copies the runs between them whole; a run of bytes
//! that need an escape (output of NUL or other control bytes) is written from a table, one
//! word per byte, so such output costs about what printable output does;
//! [`json_string_units`] measures the encoded length the same way. Both are checked against
//! `serde_json` on arbitrary text in the tests.

use std::ops::Range;

/// Bytes examined per step over long plain runs: four SSE2 or two AVX2 vectors.
const BLOCK: usize = 64;

/// Bytes examined per step near escapes and non-ASCII text: one SSE2 vector.
const SHORT: usize = 16;

#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// True when a byte of `block` needs an escape. A reduction without early exit over a
/// fixed-size block, which the compiler turns into vector compares.
#[inline(always)]
fn any_escape<const N: usize>(block: &[u8; N]) -> bool {
    block.iter().fold(false, |acc, &b| acc | (b < 0x20) | (b == b'"') | (b == b'\\'))
}

/// True when a byte of `block` is not plain ASCII (needs an escape or is non-ASCII).
#[inline(always)]
fn any_not_plain<const N: usize>(block: &[u8; N]) -> bool {
    // Plain: 0x20..=0x7f except `"` and `\`; as a signed byte, below 0x20 is control or
    // non-ASCII.
    block.iter().fold(false, |acc, &b| acc | ((b as i8) < 0x20) | (b == b'"') | (b == b'\\'))
}

#[inline(always)]
fn block_at<const N: usize>(bytes: &[u8], i: usize) -> &[u8; N] {
    bytes[i..i + N].try_into().expect("a whole block")
}

/// The index of the first byte at or after `i` that needs an escape, or `bytes.len()`.
#[inline(always)]
fn next_escape(bytes: &[u8], mut i: usize) -> usize {
    while i + BLOCK <= bytes.len() && !any_escape::<BLOCK>(block_at(bytes, i)) {
        i += BLOCK;
    }
    while i + SHORT <= bytes.len() && !any_escape::<SHORT>(block_at(bytes, i)) {
        i += SHORT;
    }
    while i < bytes.len() && !needs_escape(bytes[i]) {
        i += 1;
    }
    i
}

/// Calls `$generic(args)`, compiled for AVX2 and called as such when the CPU has it (x86-64;
/// the generic build uses the baseline SSE2 elsewhere and on older CPUs).
macro_rules! avx2_or_baseline {
    ($generic:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2($($arg: $ty),*) -> $ret {
                $generic($($arg),*)
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked just above), the only requirement of a
                // `target_feature(enable = "avx2")` function.
                return unsafe { avx2($($arg),*) };
            }
        }
        $generic($($arg),*)
    }};
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `text` as a JSON string literal, quotes included: byte for byte what
/// `serde_json::to_writer(out, text)` appends.
pub fn push_json_string(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    push_json_string_contents(out, text);
    out.push(b'"');
}

/// [`push_json_string`] without the quotes.
pub fn push_json_string_contents(out: &mut Vec<u8>, text: &str) {
    escape_into(out, text, usize::MAX, &mut |_, _| {});
}

/// [`push_json_string`] for a writer that can send long stretches of `text` as they are: every
/// run of at least `min_run` bytes that needs no escape is handed to `run` as a range of
/// `text` instead of being copied into `out` (the caller sends `text[range]` right after what
/// `out` holds at that moment, and may take `out`'s bytes first). What `out` receives, with
/// each run put back in its place, is exactly [`push_json_string`]'s output.
///
/// ```
/// use paperclip_sandbox_protocol::json_text::push_json_string_runs;
///
/// let text = format!("{}\n", "a".repeat(100));
/// let mut parts: Vec<Vec<u8>> = Vec::new();
/// let mut out = Vec::new();
/// push_json_string_runs(&mut out, &text, 64, &mut |out, run| {
///     parts.push(std::mem::take(out));
///     parts.push(text.as_bytes()[run].to_vec());
/// });
/// parts.push(out);
/// assert_eq!(parts.len(), 3); // `"`, the run of 100 `a`, `\n"`
/// assert_eq!(parts.concat(), serde_json::to_vec(&text).unwrap());
/// ```
pub fn push_json_string_runs(
    out: &mut Vec<u8>,
    text: &str,
    min_run: usize,
    run: &mut dyn FnMut(&mut Vec<u8>, Range<usize>),
) {
    out.push(b'"');
    escape_into(out, text, min_run, run);
    out.push(b'"');
}

/// A run handed over instead of copied (see [`push_json_string_runs`]).
type RunSink<'a> = &'a mut dyn FnMut(&mut Vec<u8>, Range<usize>);

/// The contents of `text`'s literal, runs of `min_run` plain bytes or more handed to `run`.
fn escape_into(out: &mut Vec<u8>, text: &str, min_run: usize, run: RunSink<'_>) {
    avx2_or_baseline!(push_contents(out: &mut Vec<u8>, text: &str, min_run: usize, run: RunSink<'_>) -> ())
}

#[inline(always)]
fn push_contents(out: &mut Vec<u8>, text: &str, min_run: usize, run: RunSink<'_>) {
    let bytes = text.as_bytes();
    let mut start = 0;
    loop {
        let i = next_escape(bytes, start);
        if i - start >= min_run {
            run(out, start..i);
        } else {
            out.extend_from_slice(&bytes[start..i]);
        }
        if i == bytes.len() {
            return;
        }
        // The whole run of bytes that need an escape, from the table (output heavy in
        // control bytes costs about what printable output does, not a branch chain per byte).
        let mut end = i + 1;
        while end < bytes.len() && needs_escape(bytes[end]) {
            end += 1;
        }
        push_escapes(out, &bytes[i..end]);
        start = end;
    }
}

/// One byte's escape: its text, padded to eight bytes so that it is copied as one word, and
/// its length.
#[derive(Clone, Copy)]
struct Escape {
    text: [u8; 8],
    len: u8,
}

/// The escape of every byte that needs one (`"`, `\`, below U+0020), as `serde_json` writes it:
/// the short forms `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, else `\u00XX` in lower-case hex.
const ESCAPES: [Escape; 256] = {
    let mut t = [Escape { text: [0; 8], len: 0 }; 256];
    let mut b = 0;
    while b < 256 {
        let short = match b as u8 {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'\n' => Some(b'n'),
            b'\r' => Some(b'r'),
            b'\t' => Some(b't'),
            0x08 => Some(b'b'),
            0x0c => Some(b'f'),
            _ => None,
        };
        t[b] = match short {
            Some(c) => Escape { text: [b'\\', c, 0, 0, 0, 0, 0, 0], len: 2 },
            None => {
                Escape { text: [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 0xf], 0, 0], len: 6 }
            }
        };
        b += 1;
    }
    t
};

/// Appends the escapes of `run` (bytes that all need one), a word per byte written straight
/// into `out`'s spare capacity: room for the longest escape of every byte (six bytes) plus
/// the padding of the last word is reserved once, then each escape is stored as one eight-byte
/// word and the length advanced by its real size (no staging buffer, no copy, no growth
/// inside the run).
#[inline(always)]
fn push_escapes(out: &mut Vec<u8>, run: &[u8]) {
    // Checked: on a 32-bit target a run of over ~715 MB would wrap the product, and the
    // writes below rely on this reservation.
    let room = run.len().checked_mul(6).and_then(|n| n.checked_add(8));
    out.reserve(room.expect("capacity overflow"));
    let mut len = out.len();
    let base = out.as_mut_ptr();
    for &b in run {
        let e = &ESCAPES[b as usize];
        // SAFETY: `len + 8 <= out.capacity()`: `len` grows by at most six per byte of `run`,
        // and six per byte plus eight were reserved above. The bytes past the escape's
        // length are overwritten by the next escape or lie past the final length.
        unsafe { std::ptr::write_unaligned(base.add(len).cast::<[u8; 8]>(), e.text) };
        len += e.len as usize;
    }
    // SAFETY: every byte below `len` was written above (or was already initialized).
    unsafe { out.set_len(len) };
}

/// Per UTF-8 byte: the UTF-16 code units it adds inside a JSON string literal as
/// [`push_json_string`] writes it (continuation bytes add 0, a lead byte the UTF-16 length of
/// its character, an escaped byte the length of its escape).
const UNITS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            0x20..=0x7f => 1,
            0x80..=0xbf => 0,
            0xc0..=0xef => 1,
            _ => 2,
        };
        b += 1;
    }
    t
};

/// The UTF-16 code units (the JavaScript `length`) of `text` once written as a JSON string
/// literal by [`push_json_string`], quotes not counted. Plain ASCII counts sixty-four bytes at
/// a time.
pub fn json_string_units(text: &str) -> usize {
    avx2_or_baseline!(str_units(text: &str) -> usize)
}

/// [`json_string_units`] of `bytes` when they are all ASCII (so also valid UTF-8); `None`
/// as soon as a byte is not. One pass for both questions over command output, which is mostly
/// ASCII.
pub fn json_ascii_units(bytes: &[u8]) -> Option<usize> {
    avx2_or_baseline!(ascii_units(bytes: &[u8]) -> Option<usize>)
}

#[inline(always)]
fn str_units(text: &str) -> usize {
    units(text.as_bytes(), false).unwrap_or_default()
}

#[inline(always)]
fn ascii_units(bytes: &[u8]) -> Option<usize> {
    units(bytes, true)
}

/// The units of UTF-8 `bytes`; with `ascii_only`, `None` at the first non-ASCII block.
#[inline(always)]
fn units(bytes: &[u8], ascii_only: bool) -> Option<usize> {
    let table = |bytes: &[u8]| {
        if ascii_only && !bytes.is_ascii() {
            return None;
        }
        Some(bytes.iter().map(|&b| UNITS[b as usize] as usize).sum::<usize>())
    };
    let mut units = 0;
    let mut i = 0;
    while i + BLOCK <= bytes.len() {
        let block: &[u8; BLOCK] = block_at(bytes, i);
        if !any_not_plain(block) {
            units += BLOCK;
        } else {
            for c in block.chunks_exact(SHORT) {
                let c: &[u8; SHORT] = c.try_into().expect("a whole block");
                units += if any_not_plain(c) { table(c)? } else { SHORT };
            }
        }
        i += BLOCK;
    }
    Some(units + table(&bytes[i..])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        push_json_string(&mut out, text);
        String::from_utf8(out).expect("UTF-8 in, UTF-8 out")
    }

    fn js_units(encoded: &str) -> usize {
        encoded.encode_utf16().count() - 2
    }

    #[test]
    fn every_ascii_byte_escapes_as_serde_json_does() {
        for b in 0u8..=0x7f {
            let text = format!("ab{}cdefghij{}", b as char, b as char);
            let want = serde_json::to_string(&text).unwrap();
            assert_eq!(ours(&text), want, "byte {b:#04x}");
            assert_eq!(json_string_units(&text), js_units(&want), "byte {b:#04x}");
            assert_eq!(json_ascii_units(text.as_bytes()), Some(js_units(&want)));
        }
        assert_eq!(ours(""), "\"\"");
        assert_eq!(ours("é😀\u{7f}\u{1f}"), serde_json::to_string("é😀\u{7f}\u{1f}").unwrap());
    }

    #[test]
    fn long_runs_of_escaped_bytes_match_serde_json() {
        for text in [
            "\0".repeat(5000),
            "\x01\n\t\"\\\x1f".repeat(1000),
            format!("{}abc{}", "\0".repeat(1023), "\r".repeat(2049)),
        ] {
            let want = serde_json::to_string(&text).unwrap();
            assert_eq!(ours(&text), want);
            assert_eq!(json_string_units(&text), js_units(&want));
        }
    }

    #[test]
    fn every_escaped_byte_in_runs_of_every_length_matches_serde_json() {
        // Runs written word by word into spare capacity: each escape, alone and in runs that
        // end at every offset, between plain and non-ASCII text (U+2028 is not escaped).
        let escaped: Vec<char> = (0u8..0x20).chain([b'"', b'\\']).map(char::from).collect();
        for &c in &escaped {
            for n in [1, 2, 7, 8, 9, 63, 64, 65, 1025] {
                let run: String = std::iter::repeat_n(c, n).collect();
                let mixed: String = escaped.iter().cycle().skip(n).take(n).collect();
                for text in
                    [run.clone(), format!("x{run}\u{2028}é{mixed}y"), format!("{mixed}{run}😀")]
                {
                    let want = serde_json::to_string(&text).unwrap();
                    assert_eq!(ours(&text), want, "{c:?} x {n}");
                    assert_eq!(json_string_units(&text), js_units(&want), "{c:?} x {n}");
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn matches_serde_json(text in "(\\PC|[\\x00-\\x1f\"\\\\]){0,100}", repeat in 1usize..5) {
            let text = text.repeat(repeat);
            let want = serde_json::to_string(&text).unwrap();
            proptest::prop_assert_eq!(ours(&text), want.clone());
            proptest::prop_assert_eq!(json_string_units(&text), js_units(&want));
            let ascii = json_ascii_units(text.as_bytes());
            proptest::prop_assert_eq!(ascii, text.is_ascii().then(|| js_units(&want)));
        }

        #[test]
        fn runs_put_back_are_the_literal(text in "(\\PC|[\\x00-\\x1f\"\\\\]){0,40}", repeat in 1usize..40, min_run in 1usize..70) {
            let text = text.repeat(repeat);
            let (mut parts, mut out) = (Vec::new(), Vec::new());
            let mut runs = 0;
            push_json_string_runs(&mut out, &text, min_run, &mut |out, run| {
                assert!(run.len() >= min_run);
                assert!(!text.as_bytes()[run.clone()].iter().any(|&b| needs_escape(b)));
                runs += 1;
                parts.push(std::mem::take(out));
                parts.push(text.as_bytes()[run].to_vec());
            });
            parts.push(out);
            proptest::prop_assert_eq!(parts.concat(), serde_json::to_vec(&text).unwrap());
            proptest::prop_assert_eq!(parts.len(), 2 * runs + 1);
        }

        #[test]
        fn long_plain_runs_with_rare_escapes(n in 0usize..200, at in 0usize..200, c in 0u8..0x80) {
            let mut text: String = "x".repeat(n);
            text.insert(at.min(n), c as char);
            let want = serde_json::to_string(&text).unwrap();
            proptest::prop_assert_eq!(ours(&text), want.clone());
            proptest::prop_assert_eq!(json_string_units(&text), js_units(&want));
        }
    }
}
