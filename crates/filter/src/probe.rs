//! Probe sequences derived from one [`KeyHash`].

use crate::hash::KeyHash;

/// Enhanced double hashing (Kirsch & Mitzenmacher 2006; Dillinger &
/// Manolios 2004): `g_i = h1 + i·h2 + (i³ - i)/6 (mod 2^64)` with
/// `h1 = hash.lo`, `h2 = hash.hi`. Two hash values give `k` probes whose FPR
/// matches `k` independent hashes asymptotically. Yields 64-bit values;
/// callers map them into their range with [`crate::fastrange64`], which
/// reads the high bits, so the cubic term only matters when `h2` is tiny.
#[derive(Clone, Debug)]
pub struct DoubleHashing {
    next: u64,
    step: u64,
    i: u64,
}

impl DoubleHashing {
    /// The sequence of `hash`: `g_0 = hash.lo()`, then one value per call.
    #[inline]
    #[must_use]
    pub fn new(hash: KeyHash) -> Self {
        Self {
            next: hash.lo(),
            step: hash.hi(),
            i: 0,
        }
    }
}

impl Iterator for DoubleHashing {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        let out = self.next;
        // g_{i+1} - g_i = h2 + i(i+1)/2: the step grows by i+1 each round.
        self.next = self.next.wrapping_add(self.step);
        self.i += 1;
        self.step = self.step.wrapping_add(self.i);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_closed_form() {
        let h = KeyHash::from_parts(0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321);
        for (i, g) in DoubleHashing::new(h).take(20).enumerate() {
            let i = i as u64;
            let closed = h
                .lo()
                .wrapping_add(i.wrapping_mul(h.hi()))
                .wrapping_add((i * i * i - i) / 6);
            assert_eq!(g, closed, "probe {i}");
        }
    }
}
