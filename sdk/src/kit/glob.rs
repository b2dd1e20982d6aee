//! A small glob matcher for sync `exclude` patterns.
//!
//! Syntax:
//!
//! | Pattern | Matches |
//! |---|---|
//! | `*` | any run of characters except `/` |
//! | `**` | any run of characters, `/` included; `**/` also matches nothing (`**/x` matches `x`) |
//! | `?` | one character except `/` |
//! | `[abc]`, `[a-z]` | one character of the class; `[!…]` or `[^…]` negates it |
//! | `\c` | the character `c` literally |
//!
//! [`Excludes`] applies a list of patterns the way `tar --exclude` does: an entry is excluded
//! when a pattern matches its path relative to the mapping root **or** its basename, and an
//! excluded directory is skipped with everything below it (so a pattern effectively matches each
//! basename along the path). A leading `./` and trailing `/` of a pattern are ignored.
//!
//! The matching is [`globset`]'s (the glob engine of ripgrep, compiled to one automaton per
//! pattern list): [`Glob::new`] translates this syntax to globset's, where the two differ —
//! `{`, `}` and `,` are literal here (no alternation), a class never matches `/`, a class
//! takes `\` escapes, and `**` inside a path component matches across `/` as above.

use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use super::error::{KitError, Result};

/// A compiled glob pattern.
#[derive(Debug, Clone)]
pub struct Glob {
    matcher: GlobMatcher,
}

impl PartialEq for Glob {
    fn eq(&self, other: &Self) -> bool {
        self.matcher.glob() == other.matcher.glob()
    }
}

impl Eq for Glob {}

impl Glob {
    /// Compile a pattern; an unterminated class or a trailing `\` is an error.
    pub fn new(pattern: &str) -> Result<Self> {
        Ok(Self { matcher: compile(pattern)?.compile_matcher() })
    }

    /// True when the whole of `text` matches the pattern.
    pub fn matches(&self, text: &str) -> bool {
        self.matcher.is_match(text)
    }
}

/// The globset glob of a pattern in this module's syntax.
fn compile(pattern: &str) -> Result<globset::Glob> {
    let translated = translate(pattern)?;
    GlobBuilder::new(&translated)
        .literal_separator(true)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map_err(|_| KitError::invalid("the exclude pattern is not a valid glob"))
}

/// This module's syntax in globset's (see the module docs for where they differ).
fn translate(pattern: &str) -> Result<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                let before = if i == 0 { None } else { Some(chars[i - 1]) };
                i += 2;
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                let after = chars.get(i).copied();
                if before.is_none_or(|c| c == '/') && after.is_none_or(|c| c == '/') {
                    // A whole component: globset's `**` means the same.
                    out.push_str("**");
                } else if after == Some('/') {
                    // `**/`: nothing, or anything that ends with `/`.
                    out.push_str("{,*/**/}");
                    i += 1;
                } else {
                    // `**`: anything, `/` included.
                    out.push_str("{*,*/**/*}");
                }
                continue;
            }
            '*' => out.push('*'),
            '?' => out.push('?'),
            '\\' => {
                i += 1;
                let c = *chars
                    .get(i)
                    .ok_or_else(|| KitError::invalid("the exclude pattern ends with `\\`"))?;
                push_literal(&mut out, c);
            }
            '[' => {
                let (negated, ranges, next) = parse_class(&chars, i).ok_or_else(|| {
                    KitError::invalid("the exclude pattern has an unterminated `[`")
                })?;
                push_class(&mut out, negated, ranges);
                i = next;
                continue;
            }
            c => push_literal(&mut out, c),
        }
        i += 1;
    }
    Ok(out)
}

/// `c` as a globset literal.
fn push_literal(out: &mut String, c: char) {
    if "*?[]{},\\".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// A class as globset's: always written negated (the complement of what it matches), so that
/// `/` can be added to what it refuses and no range has to start with `!` or `^`; `]` goes
/// first and `-` last, where globset reads them literally, and no range starts or ends on
/// either.
fn push_class(out: &mut String, negated: bool, ranges: Vec<(char, char)>) {
    let mut refused = if negated { ranges } else { complement(ranges) };
    refused.push(('/', '/'));
    let refused = merge(refused);
    let (mut close, mut dash) = (false, false);
    let mut middle = String::new();
    for (lo, hi) in refused {
        let mut pieces = vec![(lo, hi)];
        for special in [']', '-'] {
            pieces = pieces
                .into_iter()
                .flat_map(|(lo, hi)| {
                    if lo <= special && special <= hi {
                        if special == ']' {
                            close = true;
                        } else {
                            dash = true;
                        }
                        let below = char::from_u32(special as u32 - 1).filter(|_| lo < special);
                        let above = char::from_u32(special as u32 + 1).filter(|_| special < hi);
                        [below.map(|b| (lo, b)), above.map(|a| (a, hi))]
                    } else {
                        [Some((lo, hi)), None]
                    }
                })
                .flatten()
                .collect();
        }
        for (lo, hi) in pieces {
            middle.push(lo);
            if lo != hi {
                middle.push('-');
                middle.push(hi);
            }
        }
    }
    out.push_str("[!");
    if close {
        out.push(']');
    }
    out.push_str(&middle);
    if dash {
        out.push('-');
    }
    out.push(']');
}

/// Sorted, overlapping or adjacent ranges joined.
fn merge(mut ranges: Vec<(char, char)>) -> Vec<(char, char)> {
    ranges.retain(|(lo, hi)| lo <= hi);
    ranges.sort();
    let mut merged: Vec<(char, char)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if (lo as u32) <= last.1 as u32 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

/// The characters outside `ranges`.
fn complement(ranges: Vec<(char, char)>) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut next = 0u32;
    for (lo, hi) in merge(ranges) {
        if (lo as u32) > next {
            out.extend(span(next, lo as u32 - 1));
        }
        next = hi as u32 + 1;
    }
    if next <= char::MAX as u32 {
        out.extend(span(next, char::MAX as u32));
    }
    out
}

/// The characters from `lo` to `hi` as ranges of valid `char`s (the surrogates are none).
fn span(lo: u32, hi: u32) -> Vec<(char, char)> {
    let (s0, s1) = (0xD800, 0xDFFF);
    [(lo, hi.min(s0 - 1)), (lo.max(s1 + 1), hi)]
        .into_iter()
        .filter(|(a, b)| a <= b)
        .filter_map(|(a, b)| Some((char::from_u32(a)?, char::from_u32(b)?)))
        .collect()
}

/// The inclusive character ranges of a class.
type Ranges = Vec<(char, char)>;

/// Parse `[...]` starting at `start` (the `[`): negated, the ranges, the index after `]`.
fn parse_class(chars: &[char], start: usize) -> Option<(bool, Ranges, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let mut c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((negated, ranges, i + 1));
        }
        first = false;
        if c == '\\' {
            i += 1;
            c = *chars.get(i)?;
        }
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&e| e != ']') {
            let mut end = chars[i + 2];
            let mut skip = 3;
            if end == '\\' {
                end = *chars.get(i + 3)?;
                skip = 4;
            }
            ranges.push((c, end));
            i += skip;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
}

/// A list of exclude patterns, applied like `tar --exclude` (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Excludes {
    set: GlobSet,
}

/// The most exclude patterns one mapping may carry.
pub const MAX_PATTERNS: usize = 1024;

/// The longest exclude pattern, in bytes.
pub const MAX_PATTERN_LEN: usize = 4096;

impl Excludes {
    /// Compile every pattern; empty patterns are ignored. More than [`MAX_PATTERNS`] patterns,
    /// or one longer than [`MAX_PATTERN_LEN`] bytes, is an invalid-params error (the pattern
    /// is named by its index, never quoted).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self> {
        if patterns.len() > MAX_PATTERNS {
            return Err(KitError::invalid(format!(
                "exclude has {} patterns; at most {MAX_PATTERNS} are allowed",
                patterns.len()
            )));
        }
        if let Some(i) = patterns.iter().position(|p| p.as_ref().len() > MAX_PATTERN_LEN) {
            return Err(KitError::invalid(format!(
                "exclude[{i}] is longer than {MAX_PATTERN_LEN} bytes"
            )));
        }
        let mut set = GlobSetBuilder::new();
        for (i, p) in patterns.iter().enumerate() {
            let mut p = p.as_ref();
            while let Some(rest) = p.strip_prefix("./") {
                p = rest;
            }
            let p = p.trim_end_matches('/');
            if !p.is_empty() {
                set.add(compile(p).map_err(|e| e.context(format!("exclude[{i}]")))?);
            }
        }
        let set = set
            .build()
            .map_err(|_| KitError::invalid("the exclude patterns are too large to compile"))?;
        Ok(Self { set })
    }

    /// True when the entry at `relative` (slash-separated, relative to the mapping root) is
    /// excluded: a pattern matches the whole relative path or its basename.
    pub fn is_excluded(&self, relative: &str) -> bool {
        let base = relative.rsplit('/').next().unwrap_or(relative);
        self.set.is_match(relative) || self.set.is_match(base)
    }

    /// True when there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        Glob::new(p).unwrap().matches(t)
    }

    #[test]
    fn star_and_question_mark_stay_within_a_component() {
        assert!(m("*.log", "a.log"));
        assert!(!m("*.log", "dir/a.log"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "a/c"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert!(m("literal", "literal"));
        assert!(!m("literal", "literals"));
    }

    #[test]
    fn double_star_crosses_directories() {
        assert!(m("**/node_modules", "node_modules"));
        assert!(m("**/node_modules", "a/b/node_modules"));
        assert!(!m("**/node_modules", "a/b/node_modules_x"));
        assert!(m("src/**", "src/a/b.rs"));
        assert!(m("src/**/*.rs", "src/x.rs"));
        assert!(m("src/**/*.rs", "src/a/b/x.rs"));
        assert!(!m("src/**/*.rs", "lib/x.rs"));
        assert!(m("a**b", "a/x/b"));
    }

    #[test]
    fn character_classes_and_escapes() {
        assert!(m("[abc].txt", "b.txt"));
        assert!(!m("[abc].txt", "d.txt"));
        assert!(m("[a-c]x", "cx"));
        assert!(m("[!a-c]x", "dx"));
        assert!(!m("[^a-c]x", "ax"));
        assert!(m("[]]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "x"));
        assert!(!m("[/]", "/"));
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("abc\\").is_err());
    }

    #[test]
    fn long_patterns_do_not_recurse_and_limits_are_invalid_params() {
        // 4,000 `**/` tokens recursed once per token in the old matcher and overflowed the
        // stack; the iterative matcher runs them in flat stack.
        let deep = "*/".repeat(2000) + "x";
        let g = Glob::new(&deep).unwrap();
        assert!(!g.matches("a/b/x"));
        let stack = std::thread::Builder::new().stack_size(64 * 1024);
        let matched = stack.spawn(move || g.matches(&"a/".repeat(2000).add_x())).unwrap();
        assert!(matched.join().unwrap());
        let too_long = vec!["**/".repeat(4000)];
        let e = Excludes::new(&too_long).unwrap_err();
        assert_eq!(e.kind, super::super::error::ErrorKind::InvalidParams);
        assert!(!e.message.contains("**/"), "the pattern is not quoted: {}", e.message);
        let too_many = vec!["x"; MAX_PATTERNS + 1];
        assert_eq!(
            Excludes::new(&too_many).unwrap_err().kind,
            super::super::error::ErrorKind::InvalidParams
        );
        let e = Excludes::new(&["ok", "bad[secret"]).unwrap_err();
        assert!(e.message.contains("exclude[1]") && !e.message.contains("secret"), "{}", e.message);
    }

    trait AddX {
        fn add_x(self) -> String;
    }
    impl AddX for String {
        fn add_x(self) -> String {
            self + "x"
        }
    }

    #[test]
    fn pathological_patterns_finish() {
        let text = "a".repeat(200);
        assert!(!m("*a*a*a*a*a*a*a*a*a*b", &text));
        assert!(!m("**a**a**a**a**a**b", &text));
    }

    #[test]
    fn where_globset_differs_the_tar_meaning_holds() {
        // Braces and commas are literal (globset would read an alternation).
        assert!(m("{a,b}", "{a,b}"));
        assert!(!m("{a,b}", "a"));
        // A class never matches `/`, negated or not, and takes `\` escapes.
        assert!(!m("a[!x]b", "a/b"));
        assert!(m("a[!x]b", "a-b"));
        assert!(m("[\\]]", "]"));
        assert!(m("[\\!]", "!") && !m("[\\!]", "x"));
        assert!(m("[]-]", "-") && m("[]-]", "]") && !m("[]-]", "a"));
        assert!(m("[!]-]", "a") && !m("[!]-]", "-") && !m("[!]-]", "]"));
        assert!(m("[+-/]", "+") && m("[+-/]", ".") && !m("[+-/]", "/"));
        assert!(m("[^!]", "a") && !m("[^!]", "!"));
        // `**` inside a component crosses `/`; `**/` there matches nothing or up to a `/`.
        assert!(m("x**/y", "xy") && m("x**/y", "xa/b/y") && !m("x**/y", "xay"));
        assert!(m("a/**b", "a/x/yb") && m("**a", "x/ya"));
        assert!(m("***/x", "a/b/x") && m("**", "a/b"));
        // Globset-special characters elsewhere are literal.
        assert!(m("a]b", "a]b"));
    }

    #[test]
    fn excludes_match_relative_path_or_basename() {
        let ex = Excludes::new(&["./.git/", "*.tmp", "build/out", ""]).unwrap();
        assert!(ex.is_excluded(".git"));
        assert!(ex.is_excluded("sub/.git"));
        assert!(ex.is_excluded("x/y/z.tmp"));
        assert!(ex.is_excluded("build/out"));
        assert!(!ex.is_excluded("other/build/out"));
        assert!(!ex.is_excluded("src/main.rs"));
        assert!(Excludes::new::<&str>(&[]).unwrap().is_empty());
    }
}
