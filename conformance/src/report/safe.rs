//! Worker text as data: every string a report shows that may come from the worker (error
//! messages, answers, process names, lines) goes through [`text`] first.
//!
//! Control characters (C0, DEL, C1; the line feed and carriage return included), bidirectional
//! overrides and isolates, line and paragraph separators and Unicode noncharacters are written
//! as visible escapes (`\u{1b}`), so no byte a worker wrote can move the cursor, recolour the
//! terminal, reorder what a reader sees or start a line of its own; and every field is bounded
//! ([`MAX_FIELD_CHARS`]).

/// The most characters one report field keeps; longer text is cut and says so.
pub const MAX_FIELD_CHARS: usize = 2000;

/// True for a character that must not reach a report as itself.
pub fn is_unsafe(c: char) -> bool {
    let u = c as u32;
    c.is_control()
        || matches!(u, 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069)
        || matches!(u, 0x2028 | 0x2029 | 0xFEFF)
        || matches!(u, 0xFDD0..=0xFDEF)
        || u & 0xFFFE == 0xFFFE
}

/// `raw` with every unsafe character escaped and its length bounded.
pub fn text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_FIELD_CHARS * 2));
    for (count, c) in raw.chars().enumerate() {
        if count >= MAX_FIELD_CHARS {
            let total = raw.chars().count();
            out.push_str(&format!("… (cut at {MAX_FIELD_CHARS} characters of {total})"));
            return out;
        }
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`text`] for an optional field.
pub fn opt(raw: &Option<String>) -> Option<String> {
    raw.as_deref().map(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_escaped_and_lines_cannot_start() {
        let hostile = "ok\n\rPASS shutdown.no-orphans\x1b[2J\x07\u{202e}evil\u{2066}\u{85}\u{fffe}";
        let safe = text(hostile);
        assert!(!safe.chars().any(is_unsafe), "{safe}");
        assert!(!safe.contains('\n'));
        assert_eq!(safe, "ok\\u{a}\\u{d}PASS shutdown.no-orphans\\u{1b}[2J\\u{7}\\u{202e}evil\\u{2066}\\u{85}\\u{fffe}");
        assert_eq!(text(&safe), safe, "escaping twice changes nothing");
        let long = "x".repeat(MAX_FIELD_CHARS + 10);
        assert!(text(&long).ends_with(&format!(
            "(cut at {MAX_FIELD_CHARS} characters of {})",
            MAX_FIELD_CHARS + 10
        )));
    }
}
