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

use crate::error::{LocalError, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    AnyChar,
    Star,
    /// `**`: anything, `/` included.
    DoubleStar,
    /// `**/`: nothing, or anything ending in `/`.
    DoubleStarSlash,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// A compiled glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    tokens: Vec<Token>,
}

impl Glob {
    /// Compile a pattern; an unterminated class or a trailing `\` is an error.
    pub fn new(pattern: &str) -> Result<Self> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' if chars.get(i + 1) == Some(&'*') => {
                    i += 2;
                    while chars.get(i) == Some(&'*') {
                        i += 1;
                    }
                    if chars.get(i) == Some(&'/') {
                        i += 1;
                        tokens.push(Token::DoubleStarSlash);
                    } else {
                        tokens.push(Token::DoubleStar);
                    }
                    continue;
                }
                '*' => tokens.push(Token::Star),
                '?' => tokens.push(Token::AnyChar),
                '\\' => {
                    i += 1;
                    let c = *chars.get(i).ok_or_else(|| {
                        LocalError::invalid(format!("exclude pattern {pattern:?} ends with `\\`"))
                    })?;
                    tokens.push(Token::Char(c));
                }
                '[' => {
                    let (token, next) = parse_class(&chars, i).ok_or_else(|| {
                        LocalError::invalid(format!(
                            "exclude pattern {pattern:?} has an unterminated `[`"
                        ))
                    })?;
                    tokens.push(token);
                    i = next;
                    continue;
                }
                c => tokens.push(Token::Char(c)),
            }
            i += 1;
        }
        Ok(Self { tokens })
    }

    /// True when the whole of `text` matches the pattern.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let width = text.len() + 1;
        // failed[t * width + s]: tokens[t..] are known not to match text[s..].
        let mut failed = vec![false; (self.tokens.len() + 1) * width];
        match_from(&self.tokens, &text, 0, 0, &mut failed, width)
    }
}

/// Parse `[...]` starting at `start` (the `[`); returns the token and the index after `]`.
fn parse_class(chars: &[char], start: usize) -> Option<(Token, usize)> {
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
            return Some((Token::Class { negated, ranges }, i + 1));
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

fn match_from(
    tokens: &[Token],
    text: &[char],
    t: usize,
    s: usize,
    failed: &mut [bool],
    width: usize,
) -> bool {
    if failed[t * width + s] {
        return false;
    }
    let ok = match tokens.get(t) {
        None => s == text.len(),
        Some(Token::Char(c)) => {
            text.get(s) == Some(c) && match_from(tokens, text, t + 1, s + 1, failed, width)
        }
        Some(Token::AnyChar) => {
            text.get(s).is_some_and(|&c| c != '/')
                && match_from(tokens, text, t + 1, s + 1, failed, width)
        }
        Some(Token::Class { negated, ranges }) => {
            text.get(s).is_some_and(|&c| {
                c != '/' && ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
            }) && match_from(tokens, text, t + 1, s + 1, failed, width)
        }
        Some(Token::Star) => (s..=text.len())
            .take_while(|&e| e == s || text[e - 1] != '/')
            .any(|e| match_from(tokens, text, t + 1, e, failed, width)),
        Some(Token::DoubleStar) => {
            (s..=text.len()).any(|e| match_from(tokens, text, t + 1, e, failed, width))
        }
        Some(Token::DoubleStarSlash) => {
            match_from(tokens, text, t + 1, s, failed, width)
                || (s..text.len())
                    .filter(|&e| text[e] == '/')
                    .any(|e| match_from(tokens, text, t + 1, e + 1, failed, width))
        }
    };
    if !ok {
        failed[t * width + s] = true;
    }
    ok
}

/// A list of exclude patterns, applied like `tar --exclude` (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Excludes {
    globs: Vec<Glob>,
}

impl Excludes {
    /// Compile every pattern; empty patterns are ignored.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self> {
        let mut globs = Vec::new();
        for p in patterns {
            let mut p = p.as_ref();
            while let Some(rest) = p.strip_prefix("./") {
                p = rest;
            }
            let p = p.trim_end_matches('/');
            if !p.is_empty() {
                globs.push(Glob::new(p)?);
            }
        }
        Ok(Self { globs })
    }

    /// True when the entry at `relative` (slash-separated, relative to the mapping root) is
    /// excluded: a pattern matches the whole relative path or its basename.
    pub fn is_excluded(&self, relative: &str) -> bool {
        let base = relative.rsplit('/').next().unwrap_or(relative);
        self.globs.iter().any(|g| g.matches(relative) || g.matches(base))
    }

    /// True when there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty()
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
    fn pathological_patterns_finish() {
        let text = "a".repeat(200);
        assert!(!m("*a*a*a*a*a*a*a*a*a*b", &text));
        assert!(!m("**a**a**a**a**a**b", &text));
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
