//! Fresh identifiers: UUID-shaped invocation ids and the random part of sentinel secrets.
//!
//! A small xorshift generator seeded from the clock, the pid and a counter: unpredictable enough
//! to keep runs apart, with no dependency.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 fresh pseudo-random bits.
pub fn random_u64() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut x = (nanos as u64)
        ^ (u64::from(std::process::id()) << 32)
        ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for _ in 0..4 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// A random lowercase hex string of `len` characters.
pub fn hex(len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(&format!("{:016x}", random_u64()));
    }
    s.truncate(len);
    s
}

/// A random version-4 UUID string.
pub fn uuid() -> String {
    let h = hex(32);
    format!("{}-{}-4{}-a{}-{}", &h[0..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_well_formed_and_distinct() {
        let a = uuid();
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
        assert_ne!(a, uuid());
        assert_eq!(hex(40).len(), 40);
    }
}
