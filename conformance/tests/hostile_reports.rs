//! Reports a worker cannot forge: a generated corpus of hostile strings (every control
//! character, C1, bidi overrides and isolates, separators, noncharacters, XML specials, lines
//! that read as the harness's own) put in every field a worker can reach; the human report has
//! no control byte from them and no line of theirs, and the JUnit file parses with a strict XML
//! parser (`roxmltree`).

use paperclip_sandbox_conformance::__internals::{is_unsafe, progress_line};
use paperclip_sandbox_conformance::{CheckOutcome, Level, RunReport, Status};

/// Hostile strings: each control and formatting character alone and inside text, forged report
/// lines, XML breakers, and a few long mixtures built from a fixed seed.
fn corpus() -> Vec<String> {
    let mut out = vec![];
    let specials: Vec<char> = (0u32..0x20)
        .chain(0x7f..0xa0)
        .chain([0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff, 0xfdd0, 0xfffe, 0xffff, 0x1fffe])
        .chain(0x202a..0x202f)
        .chain(0x2066..0x206a)
        .filter_map(char::from_u32)
        .collect();
    for c in &specials {
        out.push(format!("before{c}after"));
    }
    out.push("\nPASS  shutdown.no-orphans\n60 passed, 0 failed (0 MUST)\n".into());
    out.push("\r[60/60] PASS  secrets.no-leak (0 ms)".into());
    out.push("\x1b[2K\x1b[1A\x1b]0;title\x07\x1b[32mPASS\x1b[0m".into());
    out.push("]]></failure><testcase name=\"x\"/><!-- & < > \" '".into());
    out.push("\u{202e}LIAF\u{202c} \u{2067}PASS\u{2069}".into());
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..64 {
        let mut s = String::new();
        for _ in 0..200 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let pick = (seed % 4) as usize;
            match pick {
                0 => s.push(specials[(seed >> 8) as usize % specials.len()]),
                1 => s.push_str("\nPASS "),
                _ => s.push(char::from_u32(0x20 + (seed >> 16) as u32 % 0x5f).unwrap()),
            }
        }
        out.push(s);
    }
    out.push("y".repeat(100_000));
    out
}

fn hostile_report() -> RunReport {
    let corpus = corpus();
    let mut checks = vec![];
    for (i, text) in corpus.iter().enumerate() {
        let (level, status) = match i % 3 {
            0 => (Level::Must, Status::Fail),
            1 => (Level::Should, Status::Fail),
            _ => (Level::Must, Status::Skip),
        };
        let mut c = CheckOutcome::new(format!("hostile.case-{i}"), level, status);
        c.expected = Some(format!("expected {text}"));
        c.actual = Some(text.clone());
        c.notes = vec![text.clone()];
        if status == Status::Skip {
            c.skip_reason = Some(text.clone());
        }
        checks.push(c);
    }
    let mut report = RunReport {
        tool: "sandbox-conformance".into(),
        version: "0".into(),
        worker: "worker".into(),
        profile: "paperclip-2026-11".into(),
        driver: "d".into(),
        manifest_source: "m".into(),
        manifest_problem: Some(corpus[27].clone()),
        supported_methods: vec![],
        effective_capabilities: vec![],
        checks,
        summary: Default::default(),
        exit_code: 0,
        wall_ms: 1,
        error: None,
    };
    report.finish();
    report
}

/// The prefixes every line of the human report starts with (the harness's own words).
fn harness_line(line: &str) -> bool {
    line.is_empty()
        || [
            "sandbox-conformance ",
            "manifest",
            "effective capabilities:",
            "CHECK ",
            "hostile.case-",
            "Failures:",
            "FAIL hostile.case-",
            "  expected: ",
            "  actual:   ",
            "  note:     ",
        ]
        .iter()
        .any(|p| line.starts_with(p))
        || line.ends_with(" stale")
}

#[test]
fn the_human_report_quotes_worker_text_as_data() {
    let report = hostile_report();
    let text = report.to_human();
    for (i, line) in text.split('\n').enumerate() {
        assert!(harness_line(line), "line {i} is not the harness's: {line:?}");
        let bad: Vec<char> = line.chars().filter(|c| is_unsafe(*c)).collect();
        assert!(bad.is_empty(), "line {i} has {bad:?}");
    }
    assert!(!text.contains('\r'));
    assert!(text.lines().all(|l| l.chars().count() < 3 * 2000 + 200), "fields are bounded");
    for c in &report.checks {
        let progress = progress_line(1, 1, c);
        assert!(!progress.chars().any(is_unsafe));
    }
}

#[test]
fn the_junit_report_parses_with_a_strict_xml_parser() {
    let report = hostile_report();
    let xml = report.to_junit();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed JUnit");
    let cases = doc.descendants().filter(|n| n.has_tag_name("testcase")).count();
    assert_eq!(cases, report.checks.len());
    let failures = doc.descendants().filter(|n| n.has_tag_name("failure")).count();
    assert_eq!(failures, report.summary.must_failed);
}
