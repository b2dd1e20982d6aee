//! The regular expressions of the published validator, as hand-written matchers (the crate
//! has no regex dependency). JavaScript semantics: no multiline flag, so `$` is the end of the
//! string, and `\d` is `[0-9]`.

/// `^[a-z0-9][a-z0-9._-]*$`: plugin ids and environment driver keys.
pub(crate) fn is_key(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
}

/// `^[A-Za-z_][A-Za-z0-9_-]*$`: template config binding fields.
pub(crate) fn is_config_field(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `^\d+\.\d+\.\d+(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`.
pub(crate) fn is_semver(s: &str) -> bool {
    let (core, build) = match s.split_once('+') {
        Some((c, b)) => (c, Some(b)),
        None => (s, None),
    };
    let (numbers, pre) = match core.split_once('-') {
        Some((n, p)) => (n, Some(p)),
        None => (core, None),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let idents = |x: &str| {
        x.split('.')
            .all(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    parts.len() == 3
        && parts.iter().all(numeric)
        && pre.is_none_or(idents)
        && build.is_none_or(idents)
}

/// One field of `CRON_FIELD_PATTERN`:
/// `^(\*(?:\/[0-9]+)?|[0-9]+(?:-[0-9]+)?(?:\/[0-9]+)?)(?:,(…same…))*$`.
fn is_cron_field(s: &str) -> bool {
    fn digits(s: &str) -> Option<&str> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0).then(|| &s[n..])
    }
    fn step(s: &str) -> Option<&str> {
        match s.strip_prefix('/') {
            Some(rest) => digits(rest),
            None => Some(s),
        }
    }
    fn token(s: &str) -> Option<&str> {
        if let Some(rest) = s.strip_prefix('*') {
            return step(rest);
        }
        let rest = digits(s)?;
        let rest = match rest.strip_prefix('-') {
            Some(r) => digits(r)?,
            None => rest,
        };
        step(rest)
    }
    s.split(',').all(|t| token(t) == Some(""))
}

/// `isValidCronExpression`: five whitespace-separated fields after trimming.
pub(crate) fn is_cron(expr: &str) -> bool {
    let trimmed = expr.trim_matches(super::zod::is_js_space);
    if trimmed.is_empty() {
        return false;
    }
    let fields: Vec<&str> =
        trimmed.split(super::zod::is_js_space).filter(|f| !f.is_empty()).collect();
    fields.len() == 5 && fields.iter().all(|f| is_cron_field(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for ok in ["a", "0", "acme.rust-sandbox", "a_b.c-d", "9z"] {
            assert!(is_key(ok), "{ok}");
        }
        for bad in ["", "Rust", ".a", "-a", "_a", "a b", "a\n", "é", "aB"] {
            assert!(!is_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn config_fields() {
        assert!(is_config_field("_x-1"));
        assert!(is_config_field("Image"));
        assert!(!is_config_field("1x"));
        assert!(!is_config_field("a.b"));
        assert!(!is_config_field(""));
    }

    #[test]
    fn semver() {
        for ok in ["0.1.0", "1.0.0-beta.1", "1.0.0+build.5", "1.0.0-rc-1+b", "01.2.3", "1.0.0--"] {
            assert!(is_semver(ok), "{ok}");
        }
        for bad in
            ["1.0", "v1.0.0", "1.0.0-", "1.0.0+", "1.0.0-a..b", "1.0.0 ", "1.0.0+a+b", "1.a.0", ""]
        {
            assert!(!is_semver(bad), "{bad:?}");
        }
    }

    #[test]
    fn cron() {
        assert!(is_cron("*/15 * * * *"));
        assert!(is_cron(" 0 0-5/2 1,2,3 * * "));
        assert!(!is_cron("* * * *"));
        assert!(!is_cron("a * * * *"));
        assert!(!is_cron("*/ * * * *"));
        assert!(!is_cron(""));
    }
}
