//! The generators' randomness: SplitMix64 (Steele, Lea & Flood 2014) and a
//! Zipf sampler over a small domain. Deterministic from the seed, on every
//! machine.

use sift_filter::mix64;

/// SplitMix64's increment, the odd integer closest to 2^64/φ.
pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 stream.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The stream seeded by `seed` and `salt` (one independent stream per
    /// salt: a shape's keys, its values, its queries...).
    pub fn new(seed: u64, salt: u64) -> Self {
        Self {
            state: mix64(seed ^ mix64(salt.wrapping_add(GAMMA))),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below
    /// `n / 2^64`, far under anything measured here). `n = 0` gives 0.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Shuffles `items` (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// Zipf's law over ids `0..n`: id `k` has weight `1 / (k + 1)^s`.
#[derive(Clone, Debug)]
pub struct Zipf {
    /// Cumulative probabilities; the last is 1.
    cdf: Vec<f64>,
}

impl Zipf {
    /// The law over `n ≥ 1` ids with exponent `s`.
    pub fn new(n: usize, s: f64) -> Self {
        let weights: Vec<f64> = (1..=n.max(1)).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        let mut sum = 0.0;
        let mut cdf: Vec<f64> = weights
            .iter()
            .map(|w| {
                sum += w / total;
                sum
            })
            .collect();
        if let Some(last) = cdf.last_mut() {
            *last = 1.0;
        }
        Self { cdf }
    }

    /// One id drawn from `rng`.
    pub fn sample(&self, rng: &mut SplitMix64) -> u32 {
        let u = rng.unit();
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_salted() {
        let take = |seed, salt| {
            let mut rng = SplitMix64::new(seed, salt);
            (0..4).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(take(1, 2), take(1, 2));
        assert_ne!(take(1, 2), take(1, 3));
        assert_ne!(take(1, 2), take(2, 2));
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = SplitMix64::new(7, 0);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[rng.below(10) as usize] += 1;
        }
        // 1,000 expected per bucket; a binomial sd is 30, allow 5 sd.
        assert!(seen.iter().all(|&n| (850..=1150).contains(&n)), "{seen:?}");
    }

    impl Zipf {
        fn probability(&self, k: usize) -> f64 {
            let below = if k == 0 { 0.0 } else { self.cdf[k - 1] };
            self.cdf[k] - below
        }
    }

    #[test]
    fn zipf_matches_its_probabilities() {
        let zipf = Zipf::new(3, 1.0);
        // 1, 1/2, 1/3 over 11/6.
        assert!((zipf.probability(0) - 6.0 / 11.0).abs() < 1e-12);
        assert!((zipf.probability(2) - 2.0 / 11.0).abs() < 1e-12);
        let mut rng = SplitMix64::new(3, 0);
        let n = 100_000;
        let mut counts = [0u32; 3];
        for _ in 0..n {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        for (k, &c) in counts.iter().enumerate() {
            let p = zipf.probability(k);
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((f64::from(c) - n as f64 * p).abs() < 5.0 * sd, "{counts:?}");
        }
    }
}
