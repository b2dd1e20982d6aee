//! The seeded generator of `run --stateful`: ChaCha8 (a named, portable stream; rand's `StdRng`
//! may change between releases) with the harness's own range mapping, so that one seed draws
//! the same program on every platform and with every version of the `rand` crates.

use chacha20::ChaCha8Rng;
use rand_core::{Rng as _, SeedableRng as _};

/// A seeded random source.
#[derive(Debug)]
pub struct Draw(ChaCha8Rng);

impl Draw {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Self {
        Draw(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A number in `0..n` (`n > 0`): the high word of a 64×64-bit product (Lemire's mapping
    /// without rejection; the bias is below 2⁻⁵⁰ for the small ranges used here).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "an empty range");
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// An index drawn by `weights` (at least one positive).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let mut pick = self.below(total.max(1));
        for (i, w) in weights.iter().enumerate() {
            if pick < u64::from(*w) {
                return i;
            }
            pick -= u64::from(*w);
        }
        weights.len() - 1
    }
}

/// The seed of case `index` of a run with `seed` (SplitMix64 of their sum): cases are
/// independent, and case `i` of a run can be re-drawn alone.
pub fn case_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws of seed 0 in `0..2^32`.
    const PINNED: [u64; 4] = [3_045_455_719, 2_001_118_559, 3_002_797_362, 258_433_188];

    #[test]
    fn one_seed_one_stream() {
        let a: Vec<u64> = (0..16).scan(Draw::new(7), |d, _| Some(d.below(1000))).collect();
        let b: Vec<u64> = (0..16).scan(Draw::new(7), |d, _| Some(d.below(1000))).collect();
        let c: Vec<u64> = (0..16).scan(Draw::new(8), |d, _| Some(d.below(1000))).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|x| *x < 1000));
        // The stream is pinned: a change of generator or mapping changes saved programs.
        let first: Vec<u64> = (0..4).scan(Draw::new(0), |d, _| Some(d.below(1 << 32))).collect();
        assert_eq!(first, PINNED, "the ChaCha8 stream or the range mapping changed");
        assert_ne!(case_seed(1, 0), case_seed(1, 1));
        let mut d = Draw::new(3);
        assert!((0..200).all(|_| d.weighted(&[0, 5, 0]) == 1));
    }
}
