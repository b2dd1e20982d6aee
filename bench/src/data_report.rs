//! The data-path part of the printed output: one block per path (median of the rounds and
//! the range), then the targets of issue #15 with PASS/MISS (reported, never asserted).
//! Ratios are of the medians; the range in brackets is the ratio within each round.

use std::fmt::Write as _;

use crate::concurrent::Concurrent;
use crate::data::{DataReport, DataRow, DataSamples};
use crate::datapath::Transfer;
use crate::report::{fmt_duration, fmt_mib, fmt_rate};

/// Execute output must reach this fraction of the raw pipe's payload rate.
pub const TARGET_OUTPUT_VS_RAW: f64 = 0.35;
/// … and this multiple of the official SDK worker's.
pub const TARGET_OUTPUT_VS_OFFICIAL: f64 = 2.0;
/// Native sync (in and out) must reach this fraction of `tar c | tar x`.
pub const TARGET_SYNC_VS_TAR: f64 = 0.9;
/// Execute output of bytes JSON escapes (NUL, `\x01`) must reach this fraction of the same
/// worker's printable output rate (issue #23).
pub const TARGET_ESCAPED_VS_PRINTABLE: f64 = 0.5;

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "MISS"
    }
}

type Pick = fn(&DataSamples) -> &Vec<Transfer>;

fn nul_rows(s: &DataSamples) -> &Vec<Transfer> {
    &s.output_nul
}

fn control_rows(s: &DataSamples) -> &Vec<Transfer> {
    &s.output_control
}

/// Escape-heavy output's rate over the same worker's printable output rate (medians, and
/// the per-round range).
fn escaped_vs_printable(s: &DataSamples, pick: Pick) -> Option<(f64, f64, f64)> {
    let (x, y) = (pick(s), &s.output);
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let m = median(x.iter().map(Transfer::mib_s).collect())
        / median(y.iter().map(Transfer::mib_s).collect());
    let per: Vec<f64> = x.iter().zip(y).map(|(p, q)| p.mib_s() / q.mib_s()).collect();
    let (lo, hi) = range(&per);
    Some((m, lo, hi))
}

fn block(out: &mut String, rows: &[DataRow], title: &str, pick: Pick, logs: bool) {
    let _ = writeln!(out, "{title}");
    let name_w = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(8).max(8);
    for row in rows {
        let s = match &row.result {
            Ok(s) => pick(s),
            Err(why) => {
                let _ = writeln!(out, "  {:<name_w$}  {why}", row.name);
                continue;
            }
        };
        if s.is_empty() {
            continue;
        }
        let rates: Vec<f64> = s.iter().map(Transfer::mib_s).collect();
        let (lo, hi) = range(&rates);
        let times: Vec<f64> = s.iter().map(|t| t.elapsed.as_secs_f64()).collect();
        let mut line = format!(
            "  {:<name_w$}  {:>8.1} MiB/s  [{lo:.0}–{hi:.0}]  {:>9} median",
            row.name,
            median(rates),
            fmt_duration(std::time::Duration::from_secs_f64(median(times))),
        );
        if logs && s.iter().any(|t| t.logs > 0) {
            let n = median(s.iter().map(|t| t.logs as f64).collect());
            let per_s = median(s.iter().map(Transfer::logs_s).collect());
            let _ = write!(line, "  {} execute.log ({}/s)", fmt_rate(n), fmt_rate(per_s));
        }
        let _ = writeln!(out, "{line}");
    }
}

fn concurrent_block(out: &mut String, rows: &[DataRow], leases: usize) {
    let _ = writeln!(
        out,
        "{leases} leases executing `cat` (1 KiB stdin) at once; raw: {leases} client threads spawning it"
    );
    let name_w = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(8).max(8);
    for row in rows {
        let Ok(s) = &row.result else { continue };
        if s.concurrent.is_empty() {
            continue;
        }
        let rates: Vec<f64> = s.concurrent.iter().map(Concurrent::rate).collect();
        let (lo, hi) = range(&rates);
        let p99 = median(s.concurrent.iter().map(|c| c.p99.as_secs_f64()).collect());
        let p50 = median(s.concurrent.iter().map(|c| c.p50.as_secs_f64()).collect());
        let _ = writeln!(
            out,
            "  {:<name_w$}  {:>8} cmd/s  [{}–{}]  p50 {}  p99 {}",
            row.name,
            fmt_rate(median(rates)),
            fmt_rate(lo),
            fmt_rate(hi),
            fmt_duration(std::time::Duration::from_secs_f64(p50)),
            fmt_duration(std::time::Duration::from_secs_f64(p99)),
        );
    }
}

/// `a / b` of the medians of `metric`, and the range of the per-round ratios.
fn ratio(
    a: &DataSamples,
    b: &DataSamples,
    pick: Pick,
    metric: fn(&Transfer) -> f64,
) -> Option<(f64, f64, f64)> {
    let (x, y) = (pick(a), pick(b));
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let m = median(x.iter().map(metric).collect()) / median(y.iter().map(metric).collect());
    let per: Vec<f64> = x.iter().zip(y).map(|(p, q)| metric(p) / metric(q)).collect();
    let (lo, hi) = range(&per);
    Some((m, lo, hi))
}

fn target_line(
    out: &mut String,
    what: &str,
    r: Option<(f64, f64, f64)>,
    target: Option<(&str, f64)>,
) {
    match (r, target) {
        (Some((m, lo, hi)), Some((op, t))) => {
            let _ = writeln!(
                out,
                "{what}: {m:.2}x  [rounds {lo:.2}–{hi:.2}]  (target {op} {t:.2}x)  {}",
                pass(m >= t)
            );
        }
        (Some((m, lo, hi)), None) => {
            let _ = writeln!(out, "{what}: {m:.2}x  [rounds {lo:.2}–{hi:.2}]");
        }
        (None, Some(_)) => {
            let _ = writeln!(out, "{what}: not measured  MISS");
        }
        (None, None) => {
            let _ = writeln!(out, "{what}: not measured");
        }
    }
}

/// The data-path blocks and target lines. `rows[0]` is the raw limit, `rows[1]` the Rust
/// provider, `rows[2]` (if any) the official SDK worker.
pub fn render(r: &DataReport, cfg: &crate::data::DataConfig) -> String {
    let mut out = String::new();
    let fs = if r.tmpfs { "tmpfs" } else { "NOT tmpfs" };
    let _ = writeln!(
        out,
        "data paths under {} ({fs}), {} rounds over all subjects; median MiB/s [range over rounds]",
        r.root.display(),
        cfg.rounds
    );
    let rows = &r.rows;
    block(
        &mut out,
        rows,
        &format!(
            "execute output: {} of `head -c … /dev/zero | tr '\\0' a` (payload rate; raw = the pipe read by the client)",
            fmt_mib(cfg.output_bytes)
        ),
        |s| &s.output,
        true,
    );
    for (name, pick) in [
        ("NUL bytes (`head -c … /dev/zero`)", nul_rows as Pick),
        ("\\x01 bytes (`… | tr '\\0' '\\001'`)", control_rows),
    ] {
        block(
            &mut out,
            rows,
            &format!(
                "execute output: {} of {name}, each escaped to six bytes of JSON (payload rate)",
                fmt_mib(cfg.escaped_output_bytes)
            ),
            pick,
            true,
        );
    }
    block(
        &mut out,
        rows,
        &format!(
            "execute small writes: {} flushed lines (awk), notifications per second",
            cfg.small_lines
        ),
        |s| &s.small,
        true,
    );
    block(
        &mut out,
        rows,
        &format!(
            "base64-over-exec download of {} (wc -c, then dd … | base64 per 3 MiB; raw = the same commands run by the client)",
            fmt_mib(cfg.b64_bytes as u64)
        ),
        |s| &s.download,
        true,
    );
    block(
        &mut out,
        rows,
        "`base64 <file>` through a pipe, output discarded",
        |s| &s.b64_file,
        false,
    );
    block(
        &mut out,
        rows,
        &format!(
            "base64-over-exec upload of {} (base64 -d >> temp per 4 MiB of base64 in stdin, mv -f; raw = the same commands run by the client)",
            fmt_mib(cfg.b64_bytes as u64)
        ),
        |s| &s.upload,
        true,
    );
    let tree = format!("{} files, {}", r.tree.files, fmt_mib(r.tree.bytes));
    block(
        &mut out,
        rows,
        &format!("native syncIn of a {tree} tree (raw = tar c | tar x into a fresh directory)"),
        |s| &s.sync_in,
        false,
    );
    block(
        &mut out,
        rows,
        "native syncOut of the same tree (raw = tar c | tar x out of the copy)",
        |s| &s.sync_out,
        false,
    );
    concurrent_block(&mut out, rows, cfg.leases);
    match &r.callgrind {
        Ok(ipm) => {
            let _ = writeln!(
                out,
                "callgrind, {}: {} instructions per MiB of execute output ({} run minus an empty run)",
                rows.get(1).map_or("worker", |x| x.name.as_str()),
                fmt_rate(*ipm),
                fmt_mib(cfg.callgrind_bytes)
            );
        }
        Err(why) => {
            let _ = writeln!(out, "callgrind: {why}");
        }
    }
    out.push('\n');

    let ok = |i: usize| rows.get(i).and_then(|r| r.result.as_ref().ok());
    let (raw, ours, official) = (ok(0), ok(1), ok(2));
    let name = |i: usize| rows.get(i).map_or("?", |r| r.name.as_str());
    let rate = Transfer::mib_s as fn(&Transfer) -> f64;
    let both = |a: Option<&DataSamples>, b: Option<&DataSamples>, pick: Pick| {
        a.zip(b).and_then(|(a, b)| ratio(a, b, pick, rate))
    };
    let (n1, n2) = (name(1), name(2));
    target_line(
        &mut out,
        &format!("execute output   {n1} / raw pipe"),
        both(ours, raw, |s| &s.output),
        Some((">=", TARGET_OUTPUT_VS_RAW)),
    );
    target_line(
        &mut out,
        &format!("execute output   {n1} / {n2}"),
        both(ours, official, |s| &s.output),
        Some((">=", TARGET_OUTPUT_VS_OFFICIAL)),
    );
    for (what, pick) in [("NUL", nul_rows as Pick), ("\\x01", control_rows)] {
        target_line(
            &mut out,
            &format!("{what} output  {n1} / its printable output"),
            ours.and_then(|o| escaped_vs_printable(o, pick)),
            Some((">=", TARGET_ESCAPED_VS_PRINTABLE)),
        );
    }
    target_line(
        &mut out,
        &format!("native syncIn    {n1} / tar c | tar x"),
        both(ours, raw, |s| &s.sync_in),
        Some((">=", TARGET_SYNC_VS_TAR)),
    );
    target_line(
        &mut out,
        &format!("native syncOut   {n1} / tar c | tar x"),
        both(ours, raw, |s| &s.sync_out),
        Some((">=", TARGET_SYNC_VS_TAR)),
    );
    let b64 = ours.zip(raw).and_then(|(o, r)| {
        let t = |v: &Vec<Transfer>| median(v.iter().map(|t| t.elapsed.as_secs_f64()).collect());
        (!o.download.is_empty() && !r.b64_file.is_empty()).then(|| (t(&o.download), t(&r.b64_file)))
    });
    if let Some((ours_s, floor)) = b64 {
        let _ = writeln!(
            out,
            "base64 download  {n1}: {} vs `base64 file` through a pipe {} ({:.1}x the time)",
            fmt_duration(std::time::Duration::from_secs_f64(ours_s)),
            fmt_duration(std::time::Duration::from_secs_f64(floor)),
            ours_s / floor
        );
    }
    target_line(
        &mut out,
        &format!("base64 download  {n1} / {n2}"),
        both(ours, official, |s| &s.download),
        None,
    );
    target_line(
        &mut out,
        &format!("base64 upload    {n1} / {n2}"),
        both(ours, official, |s| &s.upload),
        None,
    );
    target_line(
        &mut out,
        &format!("native syncIn    {n1} / {n2}"),
        both(ours, official, |s| &s.sync_in),
        None,
    );
    out
}
