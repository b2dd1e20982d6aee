//! Shrinking a failing program within a budget: cut after the failure, drop whole handles,
//! drop chunks (halves, quarters, … single steps), and simplify restarts and pairs. A
//! candidate counts only if it fails the same invariant; every try costs a fresh worker and
//! real leases, so the number of tries and the time are bounded.

use std::time::{Duration, Instant};

use super::model::HANDLES;
use super::program::{Op, Restart};

/// The budget of one shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Replays at most.
    pub runs: usize,
    /// Wall time at most.
    pub time: Duration,
}

/// Shrinks `ops`, which fails `invariant`; `fails(candidate)` replays a candidate and says
/// whether it fails the same invariant. Returns the smallest failing program found and the
/// number of replays spent.
pub fn shrink(
    ops: &[Op],
    budget: Budget,
    mut fails: impl FnMut(&[Op]) -> bool,
) -> (Vec<Op>, usize) {
    let started = Instant::now();
    let mut best = ops.to_vec();
    let mut runs = 0;
    let left = |runs: &mut usize| {
        if *runs >= budget.runs || started.elapsed() >= budget.time {
            return false;
        }
        *runs += 1;
        true
    };
    // Two calls in flight made serial: a deterministic failure beats a racy one.
    let mut i = 0;
    while i < best.len() {
        let serial = match best[i] {
            Op::PairDestroy { h } => Some([Op::Destroy { h }, Op::Destroy { h }]),
            _ => None,
        };
        if let Some(ops) = serial {
            let mut candidate = best.clone();
            candidate.splice(i..=i, ops);
            if !left(&mut runs) {
                break;
            }
            if fails(&candidate) {
                best = candidate;
            }
        }
        i += 1;
    }
    // Whole handles first: a program about one lease is the easiest to read.
    for h in 0..HANDLES {
        if best.iter().all(|op| op.handle() != Some(h)) {
            continue;
        }
        let candidate: Vec<Op> = best.iter().copied().filter(|op| op.handle() != Some(h)).collect();
        if candidate.is_empty() || !left(&mut runs) {
            continue;
        }
        if fails(&candidate) {
            best = candidate;
        }
    }
    // Chunks, from halves down to single steps.
    let mut size = best.len().div_ceil(2).max(1);
    loop {
        let mut start = 0;
        while start < best.len() {
            let end = (start + size).min(best.len());
            let candidate: Vec<Op> = best[..start].iter().chain(&best[end..]).copied().collect();
            if candidate.is_empty() {
                start = end;
                continue;
            }
            if !left(&mut runs) {
                return (best, runs);
            }
            if fails(&candidate) {
                best = candidate;
            } else {
                start = end;
            }
        }
        if size == 1 {
            break;
        }
        size = size.div_ceil(2);
    }
    // Simpler arguments: one file of a sync instead of several.
    for i in 0..best.len() {
        let (set, with) = match best[i] {
            Op::SyncIn { h, files, mode } => (
                files,
                Box::new(move |f| Op::SyncIn { h, files: f, mode }) as Box<dyn Fn(u8) -> Op>,
            ),
            Op::SyncOut { h, files } => {
                (files, Box::new(move |f| Op::SyncOut { h, files: f }) as _)
            }
            _ => continue,
        };
        if set.count_ones() < 2 {
            continue;
        }
        for f in super::program::files_of(set) {
            let mut candidate = best.clone();
            candidate[i] = with(1 << f);
            if !left(&mut runs) {
                return (best, runs);
            }
            if fails(&candidate) {
                best = candidate;
                break;
            }
        }
    }
    // Simpler arguments: a restart by EOF, one write instead of two in flight.
    for i in 0..best.len() {
        let simpler = match best[i] {
            Op::Restart { how } if how != Restart::Eof => Some(Op::Restart { how: Restart::Eof }),
            _ => None,
        };
        if let Some(op) = simpler {
            let mut candidate = best.clone();
            candidate[i] = op;
            if !left(&mut runs) {
                break;
            }
            if fails(&candidate) {
                best = candidate;
            }
        }
    }
    (best, runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrinks_to_the_steps_that_matter() {
        // "Fails" when an acquire of L1 is followed (later) by a destroy of L1 and a resume of L1.
        let fails = |ops: &[Op]| {
            let a = ops.iter().position(|o| *o == Op::Acquire { h: 1 });
            let d = ops.iter().position(|o| *o == Op::Destroy { h: 1 });
            let r = ops.iter().position(|o| *o == Op::Resume { h: 1 });
            matches!((a, d, r), (Some(a), Some(d), Some(r)) if a < d && d < r)
        };
        let ops = vec![
            Op::Acquire { h: 0 },
            Op::Write { h: 0, file: 0, mode: 0o644 },
            Op::Acquire { h: 1 },
            Op::Restart { how: Restart::Sigkill },
            Op::Read { h: 0, file: 0 },
            Op::Destroy { h: 1 },
            Op::Probe,
            Op::Resume { h: 1 },
            Op::Destroy { h: 0 },
        ];
        let budget = Budget { runs: 100, time: Duration::from_secs(60) };
        let (min, runs) = shrink(&ops, budget, fails);
        assert_eq!(min, vec![Op::Acquire { h: 1 }, Op::Destroy { h: 1 }, Op::Resume { h: 1 }]);
        assert!(runs <= 100);
        // A budget of one replay leaves the program almost as it was.
        let (min, runs) = shrink(&ops, Budget { runs: 1, time: Duration::from_secs(60) }, fails);
        assert_eq!(runs, 1);
        assert!(min.len() >= 3);
    }

    #[test]
    fn a_sync_of_several_files_shrinks_to_the_one_that_matters() {
        // "Fails" when f2 goes in and comes back out.
        let fails = |ops: &[Op]| {
            let has = |op: &Op, f: u8| match *op {
                Op::SyncIn { files, .. } => {
                    files & (1 << f) != 0 && matches!(op, Op::SyncIn { .. })
                }
                _ => false,
            };
            let out =
                |op: &Op, f: u8| matches!(*op, Op::SyncOut { files, .. } if files & (1 << f) != 0);
            let i = ops.iter().position(|o| has(o, 2));
            let o = ops.iter().position(|o| out(o, 2));
            matches!((i, o), (Some(i), Some(o)) if i < o)
        };
        let ops = vec![
            Op::Acquire { h: 0 },
            Op::SyncIn { h: 0, files: 0b0111, mode: 0o600 },
            Op::Write { h: 0, file: 3, mode: 0o644 },
            Op::SyncOut { h: 0, files: 0b1110 },
        ];
        let budget = Budget { runs: 100, time: Duration::from_secs(60) };
        let (min, _) = shrink(&ops, budget, fails);
        assert_eq!(
            min,
            vec![
                Op::SyncIn { h: 0, files: 0b100, mode: 0o600 },
                Op::SyncOut { h: 0, files: 0b100 }
            ]
        );
    }
}
