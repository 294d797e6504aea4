//! The heavy hitters of one index in one table: its most frequent values
//! with their exact counts, written beside the distinct and total counts.
//!
//! A search estimates what a table will give it before deciding how to
//! read (`db/value/plan.rs`). The mean, values over distinct values, is
//! right for a column of like frequencies and wrong by orders of magnitude
//! for a few common values among many rare ones: the common ones are
//! underestimated and the rare ones over. The table builder sees every
//! value, so it records the [`MAX_HEAVY_HITTERS`] most frequent exactly
//! (by the low 64 bits of their [`KeyHash`](sift_filter::KeyHash)), and the
//! estimate of any other value is the mean of the rest.

use crate::encoding::{Decoder, put_varint};
use crate::error::Corrupt;

/// Values kept per table and index: 8 × (8 + ~3) bytes.
pub(crate) const MAX_HEAVY_HITTERS: usize = 8;

/// The most frequent values of a table, most frequent first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeavyHitters {
    /// `(hash, count)`: a value's hash's low 64 bits and the entries it
    /// was extracted from.
    top: Vec<(u64, u64)>,
}

impl HeavyHitters {
    /// The most frequent of `counts` (`(hash, count)` per distinct value,
    /// any order); a value seen once is no hitter.
    pub(crate) fn of(mut counts: Vec<(u64, u64)>) -> Self {
        let by_count = |a: &(u64, u64), b: &(u64, u64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
        if counts.len() > MAX_HEAVY_HITTERS {
            counts.select_nth_unstable_by(MAX_HEAVY_HITTERS, by_count);
            counts.truncate(MAX_HEAVY_HITTERS);
        }
        counts.retain(|&(_, count)| count >= 2);
        counts.sort_unstable_by(by_count);
        Self { top: counts }
    }

    /// The entries a value hashed to `hash` is expected in, for a table
    /// of `values` extracted values over `distinct` distinct ones: its
    /// count if it is a hitter, else the mean of the others (at most the
    /// least hitter's count when the list is full: anything more frequent
    /// would be in it).
    pub(crate) fn expected(&self, hash: u64, values: u64, distinct: u64) -> f64 {
        if let Some(&(_, count)) = self.top.iter().find(|&&(h, _)| h == hash) {
            return count as f64;
        }
        let hit_values: u64 = self.top.iter().map(|&(_, c)| c).sum();
        let others = distinct.saturating_sub(self.top.len() as u64);
        if others == 0 {
            // Every distinct value is a hitter and this one is not: the
            // leaf's false positive.
            return 0.0;
        }
        let mean = values.saturating_sub(hit_values) as f64 / others as f64;
        match self.top.last() {
            Some(&(_, least)) if self.top.len() == MAX_HEAVY_HITTERS => mean.min(least as f64),
            _ => mean,
        }
    }

    /// Appends `varint n | n × (u64 hash, little-endian | varint count)`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.top.len() as u64);
        for &(hash, count) in &self.top {
            out.extend_from_slice(&hash.to_le_bytes());
            put_varint(out, count);
        }
    }

    /// Reads what [`encode`](Self::encode) wrote.
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, Corrupt> {
        let n = d.varint_len(MAX_HEAVY_HITTERS, "heavy hitter count")?;
        let mut top = Vec::with_capacity(n);
        for _ in 0..n {
            let hash = d.u64("heavy hitter hash")?;
            let count = d.varint("heavy hitter count")?;
            top.push((hash, count));
        }
        Ok(Self { top })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_frequent_are_kept_most_frequent_first() {
        let counts: Vec<(u64, u64)> = (0..100).map(|h| (h, 1 + h % 13)).collect();
        let hitters = HeavyHitters::of(counts);
        let kept: Vec<u64> = hitters.top.iter().map(|&(_, c)| c).collect();
        assert_eq!(kept, [13, 13, 13, 13, 13, 13, 13, 12]);
        assert!(HeavyHitters::of(vec![(1, 1), (2, 1)]).top.is_empty());
    }

    #[test]
    fn a_hitter_is_estimated_exactly_and_the_rest_by_their_mean() {
        // 3 common values of 1,000 entries among 997 of 1 each.
        let mut counts: Vec<(u64, u64)> = (10..1_007).map(|h| (h, 1)).collect();
        counts.extend([(1, 600), (2, 300), (3, 100)]);
        let hitters = HeavyHitters::of(counts);
        let (values, distinct) = (1_997, 1_000);
        assert_eq!(hitters.expected(1, values, distinct), 600.0);
        assert_eq!(hitters.expected(3, values, distinct), 100.0);
        assert_eq!(hitters.expected(500, values, distinct), 1.0);
        // The mean alone would say 2 for both.
        assert!(values as f64 / distinct as f64 <= 2.0);
    }

    #[test]
    fn a_full_list_bounds_the_others_and_a_complete_one_rules_them_out() {
        let counts: Vec<(u64, u64)> = (0..20).map(|h| (h, 100 - h)).collect();
        let values = counts.iter().map(|&(_, c)| c).sum();
        let hitters = HeavyHitters::of(counts);
        assert_eq!(hitters.expected(0, values, 20), 100.0);
        let least = 100.0 - 7.0;
        assert!(hitters.expected(19, values, 20) <= least);
        let few = HeavyHitters::of(vec![(1, 5), (2, 3)]);
        assert_eq!(few.expected(9, 8, 2), 0.0);
        // No hitters (a table of an older format): the plain mean.
        assert_eq!(HeavyHitters::default().expected(9, 30, 10), 3.0);
    }

    #[test]
    fn encoding_round_trips_and_damage_is_an_error() {
        let hitters = HeavyHitters::of(vec![(u64::MAX, 1 << 40), (7, 2), (8, 1)]);
        let mut bytes = Vec::new();
        hitters.encode(&mut bytes);
        let mut d = Decoder::new(&bytes);
        assert_eq!(HeavyHitters::decode(&mut d).unwrap(), hitters);
        assert!(d.is_empty());
        for cut in 0..bytes.len() {
            let mut d = Decoder::new(&bytes[..cut]);
            assert!(HeavyHitters::decode(&mut d).is_err(), "cut at {cut}");
        }
        let mut d = Decoder::new(&[9]);
        assert!(
            HeavyHitters::decode(&mut d).is_err(),
            "more than the maximum"
        );
    }
}
