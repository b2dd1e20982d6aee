//! Summary statistics over measured durations: nearest-rank percentiles, the median and a
//! rate helper. Pure functions, unit-tested on known data.

use std::time::Duration;

/// The `p`-th percentile (0 < `p` ≤ 100) of `samples` by the nearest-rank method: the
/// smallest sample such that at least `p` % of the samples are ≤ it. `samples` need not be
/// sorted. `None` when `samples` is empty or `p` is out of range.
pub fn percentile(samples: &[Duration], p: f64) -> Option<Duration> {
    if samples.is_empty() || !(p > 0.0 && p <= 100.0) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    Some(percentile_sorted(&sorted, p))
}

/// [`percentile`] over samples already sorted ascending (non-empty, 0 < `p` ≤ 100).
///
/// # Panics
/// If `sorted` is empty.
pub fn percentile_sorted(sorted: &[Duration], p: f64) -> Duration {
    let n = sorted.len();
    // ceil(p/100 * n) as a 1-based rank, clamped to 1..=n. Computed in integer
    // hundredths of a percent to keep e.g. p = 99 on n = 100 exact.
    let hundredths = (p * 100.0).round() as u128;
    let rank = (hundredths * n as u128).div_ceil(10_000).clamp(1, n as u128) as usize;
    sorted[rank - 1]
}

/// The median (nearest-rank 50th percentile) of `samples`.
pub fn median(samples: &[Duration]) -> Option<Duration> {
    percentile(samples, 50.0)
}

/// Events per second: `count` over `elapsed` (0 when nothing elapsed).
pub fn per_second(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&x| Duration::from_micros(x)).collect()
    }

    #[test]
    fn nearest_rank_on_one_to_hundred() {
        // 1..=100 shuffled: the p-th percentile is exactly p.
        let mut v: Vec<u64> = (1..=100).collect();
        v.reverse();
        v.swap(3, 70);
        let s = us(&v);
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_micros(50)));
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_micros(99)));
        assert_eq!(percentile(&s, 100.0), Some(Duration::from_micros(100)));
        assert_eq!(percentile(&s, 1.0), Some(Duration::from_micros(1)));
        assert_eq!(percentile(&s, 0.5), Some(Duration::from_micros(1)));
    }

    #[test]
    fn nearest_rank_on_small_sets() {
        // Classic example: 15, 20, 35, 40, 50.
        let s = us(&[40, 15, 50, 35, 20]);
        assert_eq!(percentile(&s, 5.0), Some(Duration::from_micros(15)));
        assert_eq!(percentile(&s, 30.0), Some(Duration::from_micros(20)));
        assert_eq!(percentile(&s, 40.0), Some(Duration::from_micros(20)));
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_micros(35)));
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_micros(50)));
        assert_eq!(median(&us(&[7])), Some(Duration::from_micros(7)));
        // Even count: the lower middle.
        assert_eq!(median(&us(&[4, 1, 3, 2])), Some(Duration::from_micros(2)));
    }

    #[test]
    fn p99_picks_the_tail() {
        // 990 fast samples and 10 slow ones: p99 is still fast, p99.1 is slow.
        let mut v = vec![10u64; 990];
        v.extend([1000u64; 10]);
        let s = us(&v);
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_micros(10)));
        assert_eq!(percentile(&s, 99.1), Some(Duration::from_micros(1000)));
        assert_eq!(median(&s), Some(Duration::from_micros(10)));
    }

    #[test]
    fn empty_and_out_of_range() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&us(&[1]), 0.0), None);
        assert_eq!(percentile(&us(&[1]), 100.5), None);
        assert_eq!(percentile(&us(&[1]), f64::NAN), None);
    }

    #[test]
    fn rates() {
        assert_eq!(per_second(500, Duration::from_millis(250)), 2000.0);
        assert_eq!(per_second(5, Duration::ZERO), 0.0);
    }
}
