//! The check registry: every check group in running order, the gates and the printed skip
//! reasons. Gating comes from here (and from [`crate::hostmodel`]), never from inside a
//! check. A new group is one module of [`crate::checks`] with a `GROUP` table, plus one line
//! in [`GROUPS`].

use paperclip_sandbox_protocol::methods::Method;

use crate::check::{
    check,
    Scope::{Main, Offline},
};
pub use crate::check::{Check, CheckFn, Need, Scope};
use crate::checks::{
    envelopes, execute, framing, handshake, ledger, lifecycle, lints, manifest, newer, runtime,
    shutdown, sync,
};
use crate::context::{RunEnv, WorkerFacts};
use crate::hostmodel::host_makes;

/// The run-wide checks: judged last, over every worker of the run.
#[rustfmt::skip]
pub const RUN_WIDE: &[Check] = &[
    check("ledger.clean", "LEDGER-1", "every lease the run created is ended", Main, &[], ledger::clean),
    check("framing.stdout-purity", "WIRE-STDOUT-1", "only protocol lines on stdout, whole run", Offline, &[], framing::stdout_purity),
    check("envelopes.allowlisted", "ENV-ALLOW-1", "error.data only allowlisted envelopes, whole run", Offline, &[], envelopes::allowlisted),
    check("secrets.no-leak", "SECRET-1", "planted secrets never echoed, whole run", Offline, &[], envelopes::no_secret_leak),
];

/// Every check group, in running order.
pub const GROUPS: &[&[Check]] = &[
    manifest::GROUP,
    lints::GROUP,
    handshake::GROUP,
    framing::GROUP,
    lifecycle::GROUP,
    execute::GROUP,
    sync::GROUP,
    runtime::GROUP,
    lifecycle::GROUP_END,
    newer::GROUP,
    shutdown::GROUP,
    RUN_WIDE,
];

/// Every check, in running order.
pub fn all() -> impl Iterator<Item = &'static Check> {
    GROUPS.iter().flat_map(|g| g.iter())
}

/// The check with this id.
pub fn find(id: &str) -> Option<&'static Check> {
    all().find(|c| c.id == id)
}

/// Whether the worker offers `method` (the one place a method need is decided).
pub fn method_available(facts: &WorkerFacts, method: Method) -> bool {
    facts.advertises(method.as_str())
}

/// Why `check` cannot run for this worker, or `None` when it can.
pub fn skip_reason(check: &Check, env: &RunEnv, facts: &WorkerFacts) -> Option<String> {
    for need in check.needs {
        let missing = match *need {
            Need::Method(m) if !method_available(facts, m) => {
                format!("the worker does not advertise {m} in supportedMethods")
            }
            Need::Host(call) => match host_makes(call, facts, env.options.profile) {
                Ok(()) => continue,
                Err(reason) => reason,
            },
            Need::RequiredClis if env.options.required_clis.is_empty() => {
                "no --require-cli given (name the CLIs your runs use, e.g. --require-cli node,claude)"
                    .into()
            }
            Need::Capability(c) if !facts.has(c) => {
                let declared =
                    facts.declared.get(c.key()).map_or("absent".into(), |v| v.to_string());
                format!(
                    "capability {c} is not effective (declared: {declared}; opt-in: {})",
                    c.spec().opt_in
                )
            }
            Need::Profile(p) if env.options.profile != p => format!("only under {p}"),
            Need::Manifest if env.manifest.is_none() => env.manifest_problem.clone().unwrap_or_else(
                || "no manifest (pass --manifest FILE, or make `<worker> --manifest` print it)".into(),
            ),
            Need::Oversize if env.options.skip_oversize => "disabled by --skip-oversize".into(),
            _ => continue,
        };
        return Some(missing);
    }
    None
}

/// True when `id` matches `--filter`: a glob when the filter has `*` or `?`, else a substring.
pub fn matches_filter(id: &str, filter: Option<&str>) -> bool {
    match filter {
        None => true,
        Some(f) if f.contains(['*', '?']) => glob(f.as_bytes(), id.as_bytes()),
        Some(f) => id.contains(f),
    }
}

/// A minimal glob: `*` any run, `?` any one byte.
pub fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match (pattern.first(), text.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], text) || (!text.is_empty() && glob(pattern, &text[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &text[1..]),
        (Some(p), Some(t)) if p == t => glob(&pattern[1..], &text[1..]),
        _ => false,
    }
}

/// A human description of what a check needs, for `--list`.
pub fn describe_needs(check: &Check) -> String {
    let parts: Vec<String> = check
        .needs
        .iter()
        .map(|n| match n {
            Need::Method(m) => m.as_str().to_owned(),
            Need::Host(call) => format!("host {call:?}"),
            Need::Lease => "a lease".into(),
            Need::RequiredClis => "--require-cli".into(),
            Need::Capability(c) => format!("capability {c}"),
            Need::Profile(p) => p.to_string(),
            Need::Manifest => "manifest".into(),
            Need::Oversize => "oversize enabled".into(),
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_requirements_exist() {
        let mut ids: Vec<_> = all().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all().count());
        assert!(find("ledger.clean").is_some());
        for c in all() {
            let _ = c.level();
            assert!(c.id.starts_with(c.family()));
        }
    }

    #[test]
    fn filters_take_substrings_and_globs() {
        assert!(matches_filter("framing.id-echo", Some("id-echo")));
        assert!(matches_filter("framing.id-echo", Some("framing.*")));
        assert!(matches_filter("framing.id-echo", Some("*.id-ech?")));
        assert!(!matches_filter("framing.id-echo", Some("lifecycle.*")));
        assert!(matches_filter("x", None));
    }
}
