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

use super::error::{KitError, Result};

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
                    let c = *chars
                        .get(i)
                        .ok_or_else(|| KitError::invalid("the exclude pattern ends with `\\`"))?;
                    tokens.push(Token::Char(c));
                }
                '[' => {
                    let (token, next) = parse_class(&chars, i).ok_or_else(|| {
                        KitError::invalid("the exclude pattern has an unterminated `[`")
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
    ///
    /// Iterative dynamic programming over (token, position), no recursion: time and memory are
    /// O(tokens × characters) whatever the pattern, and the stack stays flat.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let n = text.len();
        // next[s]: tokens[t + 1..] match text[s..]; cur[s]: tokens[t..] match text[s..].
        let mut next = vec![false; n + 1];
        next[n] = true;
        let mut cur = vec![false; n + 1];
        for token in self.tokens.iter().rev() {
            match token {
                Token::Char(c) => {
                    for s in 0..=n {
                        cur[s] = s < n && text[s] == *c && next[s + 1];
                    }
                }
                Token::AnyChar => {
                    for s in 0..=n {
                        cur[s] = s < n && text[s] != '/' && next[s + 1];
                    }
                }
                Token::Class { negated, ranges } => {
                    for s in 0..=n {
                        cur[s] = s < n
                            && {
                                let c = text[s];
                                c != '/'
                                    && ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
                            }
                            && next[s + 1];
                    }
                }
                Token::Star => {
                    cur[n] = next[n];
                    for s in (0..n).rev() {
                        cur[s] = next[s] || (text[s] != '/' && cur[s + 1]);
                    }
                }
                Token::DoubleStar => {
                    cur[n] = next[n];
                    for s in (0..n).rev() {
                        cur[s] = next[s] || cur[s + 1];
                    }
                }
                Token::DoubleStarSlash => {
                    // Nothing, or anything up to and including a `/`.
                    let mut after_slash = false;
                    cur[n] = next[n];
                    for s in (0..n).rev() {
                        after_slash |= text[s] == '/' && next[s + 1];
                        cur[s] = next[s] || after_slash;
                    }
                }
            }
            std::mem::swap(&mut cur, &mut next);
        }
        next[0]
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

/// A list of exclude patterns, applied like `tar --exclude` (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Excludes {
    globs: Vec<Glob>,
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
        let mut globs = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let mut p = p.as_ref();
            while let Some(rest) = p.strip_prefix("./") {
                p = rest;
            }
            let p = p.trim_end_matches('/');
            if !p.is_empty() {
                globs.push(Glob::new(p).map_err(|e| e.context(format!("exclude[{i}]")))?);
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
