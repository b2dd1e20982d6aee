//! The printed output: one table row per worker, then the ratio lines with PASS/MISS against
//! the targets of issue #3. Targets are reported, never asserted.

use std::fmt::Write as _;
use std::time::Duration;

use crate::measure::{Pipelined, Sequential};

/// Pipelined throughput of the provider must reach this fraction of the echo loop's.
pub const TARGET_PIPELINED_RATIO: f64 = 0.6;
/// The provider's cold start (spawn → `initialize` answered) must stay below this.
pub const TARGET_COLD_START: Duration = Duration::from_millis(5);
/// The provider's idle RSS must stay below this.
pub const TARGET_IDLE_RSS: u64 = 5 * 1024 * 1024;

/// Everything measured for one worker.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Sequential round trips (rate and latency).
    pub sequential: Sequential,
    /// Pipelined round trips.
    pub pipelined: Pipelined,
    /// Median spawn → `initialize` answered.
    pub cold_start: Duration,
    /// VmRSS after `initialize` and an idle pause, in bytes.
    pub idle_rss: u64,
    /// Optional second measurement: sequential `environmentExecute` on a lease.
    pub execute: Option<Sequential>,
}

/// One table row: a worker and its results, or why it was skipped.
#[derive(Debug, Clone)]
pub struct Row {
    /// Display name.
    pub name: String,
    /// The results, or the reason there are none.
    pub result: Result<Measured, String>,
}

/// `1.23 µs`-style text: µs below 1 ms, ms below 10 s.
pub fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else if us < 10_000_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.1} s", us / 1e6)
    }
}

/// Bytes as MiB with one decimal.
pub fn fmt_mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A rate with thousands separators and no decimals (`123,456`).
pub fn fmt_rate(per_sec: f64) -> String {
    let n = per_sec.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "MISS"
    }
}

/// The results table.
pub fn table(rows: &[Row]) -> String {
    let name_w = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(6).max(6);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<name_w$}  {:>12}  {:>14}  {:>10}  {:>10}  {:>11}  {:>10}",
        "worker", "seq rt/s", "pipelined rt/s", "p50", "p99", "cold start", "idle RSS"
    );
    let _ = writeln!(
        out,
        "{}",
        "-".repeat(name_w + 2 + 12 + 2 + 14 + 2 + 10 + 2 + 10 + 2 + 11 + 2 + 10)
    );
    for row in rows {
        match &row.result {
            Ok(m) => {
                let _ = writeln!(
                    out,
                    "{:<name_w$}  {:>12}  {:>14}  {:>10}  {:>10}  {:>11}  {:>10}",
                    row.name,
                    fmt_rate(m.sequential.rate()),
                    fmt_rate(m.pipelined.rate()),
                    fmt_duration(m.sequential.p50),
                    fmt_duration(m.sequential.p99),
                    fmt_duration(m.cold_start),
                    fmt_mib(m.idle_rss),
                );
            }
            Err(why) => {
                let _ = writeln!(out, "{:<name_w$}  skipped: {why}", row.name);
            }
        }
    }
    out
}

/// The optional `environmentExecute` lines (rows that measured it); `command` names what ran.
pub fn execute_lines(rows: &[Row], command: &str) -> String {
    let mut out = String::new();
    for row in rows {
        if let Ok(Measured { execute: Some(e), .. }) = &row.result {
            let _ = writeln!(
                out,
                "environmentExecute `{command}`, {}: {} calls/s sequential, p50 {}, p99 {}",
                row.name,
                fmt_rate(e.rate()),
                fmt_duration(e.p50),
                fmt_duration(e.p99)
            );
        }
    }
    out
}

/// The ratio lines with PASS/MISS: `provider` against `echo` (pipelined throughput) and
/// against `official` (cold start, RSS). Missing comparators are reported as such.
pub fn ratios(provider: &Row, echo: &Row, official: &Row) -> String {
    let mut out = String::new();
    let Ok(p) = &provider.result else {
        let _ = writeln!(out, "no ratios: {} was not measured", provider.name);
        return out;
    };
    let name = &provider.name;
    match &echo.result {
        Ok(e) => {
            let ratio = p.pipelined.rate() / e.pipelined.rate();
            let _ = writeln!(
                out,
                "pipelined throughput  {name} / {}: {ratio:.2}x  (target >= {TARGET_PIPELINED_RATIO:.2}x)  {}",
                echo.name,
                pass(ratio >= TARGET_PIPELINED_RATIO)
            );
        }
        Err(_) => {
            let _ = writeln!(out, "pipelined throughput: no echo-loop baseline  MISS");
        }
    }
    let official_m = official.result.as_ref().ok();
    let vs = |ours: f64, theirs: Option<f64>, what: &str| match theirs {
        Some(t) if ours > 0.0 => {
            format!("; {} {}: {:.0}x {what}", official.name, "ratio", t / ours)
        }
        _ => format!("; {} not measured", official.name),
    };
    let _ = writeln!(
        out,
        "cold start            {name}: {}  (target < {}){}  {}",
        fmt_duration(p.cold_start),
        fmt_duration(TARGET_COLD_START),
        vs(p.cold_start.as_secs_f64(), official_m.map(|o| o.cold_start.as_secs_f64()), "faster"),
        pass(p.cold_start < TARGET_COLD_START)
    );
    let _ = writeln!(
        out,
        "idle RSS              {name}: {}  (target < {}){}  {}",
        fmt_mib(p.idle_rss),
        fmt_mib(TARGET_IDLE_RSS),
        vs(p.idle_rss as f64, official_m.map(|o| o.idle_rss as f64), "smaller"),
        pass(p.idle_rss < TARGET_IDLE_RSS)
    );
    out
}

/// The callgrind line of the control path: instructions per pipelined `health` round trip, or
/// why there is no count.
pub fn callgrind_line(name: &str, calls: u64, counted: &Result<f64, String>) -> String {
    match counted {
        Ok(per) => format!(
            "callgrind, {name}: {} instructions per pipelined `health` round trip ({} calls minus none)\n",
            fmt_rate(*per),
            fmt_rate(calls as f64)
        ),
        Err(why) => format!("callgrind, {name}: {why}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_rate(1234567.4), "1,234,567");
        assert_eq!(fmt_rate(999.0), "999");
        assert_eq!(fmt_rate(1000.0), "1,000");
        assert_eq!(fmt_duration(Duration::from_nanos(12_340)), "12.3 µs");
        assert_eq!(fmt_duration(Duration::from_micros(2_500)), "2.50 ms");
        assert_eq!(fmt_mib(5 * 1024 * 1024 + 512 * 1024), "5.5 MiB");
        assert_eq!(
            callgrind_line("p", 20_000, &Ok(6_712.4)),
            "callgrind, p: 6,712 instructions per pipelined `health` round trip (20,000 calls minus none)\n"
        );
        assert_eq!(callgrind_line("p", 1, &Err("skipped".into())), "callgrind, p: skipped\n");
    }
}
