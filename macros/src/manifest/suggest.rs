//! Did-you-mean suggestions for unknown names.

/// The closest of `candidates` to `name`, when one is close enough to be a likely typo: the
/// same letters ignoring case, `_` and `-` (so `reusable_leases` finds `reusableLeases`), or
/// an edit distance of at most a third of the name's length (at least 1).
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let folded = fold(name);
    let limit = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let fc = fold(candidate);
        let distance = if fc == folded { 0 } else { edit_distance(&folded, &fc) };
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

fn fold(s: &str) -> Vec<char> {
    s.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
}

/// Levenshtein distance.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == cb { diagonal } else { 1 + diagonal.min(above).min(row[j]) };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] =
        &["reusableLeases", "nativeSyncIn", "nativeSyncOut", "duplexCommandStream"];

    #[test]
    fn suggests_typos_and_case_variants_only() {
        let pick = |n| did_you_mean(n, KEYS.iter().copied());
        assert_eq!(pick("reusableLease"), Some("reusableLeases"));
        assert_eq!(pick("reusable_leases"), Some("reusableLeases"));
        assert_eq!(pick("nativeSyncOt"), Some("nativeSyncOut"));
        assert_eq!(pick("nativesyncin"), Some("nativeSyncIn"));
        assert_eq!(pick("gpu"), None);
        assert_eq!(pick("teleport"), None);
    }

    #[test]
    fn distance() {
        let d = |a: &str, b: &str| {
            edit_distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>())
        };
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("same", "same"), 0);
    }
}
