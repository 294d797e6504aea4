//! The scalable Bloom filter: a chain of ever larger, ever tighter stages,
//! for sets whose size is not known in advance.

use std::f64::consts::LN_2;

use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Error, Result};
use crate::filter::Filter;
use crate::hash::KeyHash;
use crate::partitioned::PartitionedBloom;
use crate::standard::{BloomShape, MAX_PROBES};

/// A scalable Bloom filter (Almeida, Baquero, Preguiça & Hutchison 2007):
/// it grows with the set and keeps its FPR under a target for any number of
/// keys.
///
/// Keys go into the newest stage until that stage is half full; then a new
/// stage is added, `s` (growth) times the capacity of the previous one,
/// with an FPR share `r` (tightening) times smaller. Stage `i` gets FPR
/// share `P_i = p₀ rⁱ` with `p₀ = p(1 - r)`, so the shares sum to less than
/// `p₀ / (1 - r) = p` however many stages there are, and the filter's FPR
/// — at most the sum of its stages' — stays below the target `p`. Queries
/// check every stage; no false negatives.
///
/// **Stages** are [`PartitionedBloom`] filters, as in the paper: each key
/// sets exactly one bit in each of the `k` partitions, so a stage's FPR is
/// exactly the product of its partitions' fill ratios, which is at most
/// (total fill)^k (its probes are mixed so that this holds at every size,
/// even for the few-bit first stages of a tiny initial capacity; see
/// [`PartitionedBloom`]). A stage with `k_i = ⌈log2(1/P_i)⌉` partitions
/// that is never more than half full therefore has FPR at most
/// `2^-k_i ≤ P_i`, whatever keys it holds. Stage `i` is sized to reach half full after about
/// `n₀ sⁱ` keys: `m_i = ⌈n₀ sⁱ k_i / ln 2⌉` bits, rounded up to a multiple
/// of `k_i`. The "half full" test is on measured bits: a stage takes a key
/// only if its fill would stay at most 1/2 even if every probe set a new
/// bit, so duplicates and keys that share bits cost no capacity.
///
/// **Limits.** A stage has at most 64 probes (the Bloom kinds' limit); a
/// share below 2^-64 gets 64, so the bound is really `p + 64·2^-64`. A
/// filter makes at most [`MAX_STAGES`](Self::MAX_STAGES) stages of at most
/// 2^62 bits each; one that reaches either limit keeps inserting into its
/// last stage, whose FPR then rises past its share (still no false
/// negatives). With growth 2 that takes over 2^54 keys even from
/// `n₀ = 1` — petabytes of filter, so unreachable; the 64th stage itself
/// (`2^63 n₀` keys) can never be made. With growth 1 (equal stages) it takes
/// only `64 n₀` keys: grow by more than 1 for sets of unknown size.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalableBloom {
    params: Growth,
    /// Stages that stopped taking keys, oldest first.
    full: Vec<PartitionedBloom>,
    /// The stage that takes new keys.
    current: PartitionedBloom,
    /// Set bits of `current`, tracked so that `insert` never recounts.
    current_ones: u64,
}

/// The parameters that determine every stage's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Growth {
    initial_capacity: u64,
    target_fpr: f64,
    growth: f64,
    tightening: f64,
}

/// The largest stage, in bits: 512 PiB, beyond any machine's memory, and
/// low enough that rounding up to a multiple of `k` cannot overflow.
const MAX_STAGE_BITS: u64 = 1 << 62;

/// The largest growth factor. The paper uses 2 (slow growth) and 4 (fast);
/// the bound limits how much one insert may allocate relative to what the
/// filter already holds, also for a decoded filter's next stage.
const MAX_GROWTH: f64 = 16.0;

impl Growth {
    /// Checks every parameter and returns the shape of stage 0, which must
    /// be buildable.
    fn check(self) -> Result<BloomShape, &'static str> {
        if self.initial_capacity == 0 {
            return Err("initial capacity must be at least 1");
        }
        if !(self.target_fpr > 0.0 && self.target_fpr < 1.0) {
            return Err("target FPR must be in (0, 1)");
        }
        if !(1.0..=MAX_GROWTH).contains(&self.growth) {
            return Err("growth factor must be in [1, 16]");
        }
        if !(self.tightening > 0.0 && self.tightening < 1.0) {
            return Err("tightening ratio must be in (0, 1)");
        }
        self.stage_shape(0)
            .ok_or("initial capacity too large for one stage")
    }

    /// The shape of stage `index`, or `None` if it would exceed
    /// [`MAX_STAGE_BITS`]. Uses only `+ - × ÷` and `ceil`, which IEEE 754
    /// rounds identically everywhere (unlike `ln` or `powf`), so every
    /// platform derives the same shapes; the decoder relies on it.
    fn stage_shape(self, index: usize) -> Option<BloomShape> {
        let mut capacity = self.initial_capacity as f64;
        let mut share = self.target_fpr * (1.0 - self.tightening);
        for _ in 0..index {
            capacity *= self.growth;
            share *= self.tightening;
        }
        // The smallest k with 2^-k ≤ share, by exact halvings.
        let (mut probes, mut bound) = (1, 0.5);
        while bound > share && probes < MAX_PROBES {
            probes += 1;
            bound *= 0.5;
        }
        // A partitioned filter is half full after ≈ m ln 2 / k keys.
        let bits = (capacity * f64::from(probes) / LN_2).ceil();
        // Finite: capacity ≤ 2^64 · 16^63 and probes ≤ 64.
        if bits >= MAX_STAGE_BITS as f64 {
            return None;
        }
        let k = u64::from(probes);
        Some(BloomShape {
            bits: (bits as u64).max(1).div_ceil(k) * k,
            probes,
        })
    }
}

impl ScalableBloom {
    /// Growth factor `s` of [`new`](Self::new): each stage holds twice the
    /// keys of the previous one, the paper's choice for moderate growth.
    pub const DEFAULT_GROWTH: f64 = 2.0;
    /// Tightening ratio `r` of [`new`](Self::new): 0.85, the middle of the
    /// 0.8–0.9 range the paper recommends. A smaller `r` spends more bits on
    /// the first stage (`p₀ = p(1 - r)` is tighter) and fewer on later ones.
    pub const DEFAULT_TIGHTENING: f64 = 0.85;
    /// Most stages a filter makes or decodes. Growth 2 cannot reach it (see
    /// the type's documentation).
    pub const MAX_STAGES: usize = 64;

    /// An empty filter whose first stage holds `initial_capacity` keys, with
    /// FPR below `target_fpr` for any number of keys, growing by
    /// [`DEFAULT_GROWTH`](Self::DEFAULT_GROWTH) and tightening by
    /// [`DEFAULT_TIGHTENING`](Self::DEFAULT_TIGHTENING).
    ///
    /// `InvalidParameter` for a zero capacity, a target outside `(0, 1)`,
    /// or a first stage above 2^62 bits.
    pub fn new(initial_capacity: u64, target_fpr: f64) -> Result<Self> {
        Self::with_growth(
            initial_capacity,
            target_fpr,
            Self::DEFAULT_GROWTH,
            Self::DEFAULT_TIGHTENING,
        )
    }

    /// As [`new`](Self::new) with growth factor `growth` in `[1, 16]` and
    /// tightening ratio `tightening` in `(0, 1)`; `InvalidParameter`
    /// otherwise.
    pub fn with_growth(
        initial_capacity: u64,
        target_fpr: f64,
        growth: f64,
        tightening: f64,
    ) -> Result<Self> {
        let params = Growth {
            initial_capacity,
            target_fpr,
            growth,
            tightening,
        };
        let shape = params
            .check()
            .map_err(|why| Error::InvalidParameter(why.into()))?;
        Ok(Self {
            params,
            full: Vec::new(),
            current: PartitionedBloom::new(shape)?,
            current_ones: 0,
        })
    }

    /// Adds `hash` and returns whether the filter already answered "may
    /// contain" for it: `false` means the key is certainly new.
    ///
    /// A key that already tests positive is not inserted again (its bits
    /// stay set for good, so it stays positive), so keys held by older
    /// stages spend no capacity in the current one. The check costs what a
    /// query costs — a new key's probes stop at the first clear bit of each
    /// older, half-full stage, about two reads per stage — and the current
    /// stage's test is fused with setting its bits. A caller that must know
    /// whether a key may have been seen (a transaction recording the keys
    /// it touches) gets the answer from the insert, with no separate query.
    pub fn insert(&mut self, hash: KeyHash) -> bool {
        if self.full.iter().rev().any(|stage| stage.may_contain(hash)) {
            return true;
        }
        let shape = self.current.shape();
        if self.current_ones + u64::from(shape.probes) > shape.bits / 2 {
            if self.current.may_contain(hash) {
                return true;
            }
            self.add_stage();
        }
        let fresh = self.current.insert_counting(hash);
        self.current_ones += u64::from(fresh);
        fresh == 0
    }

    /// Starts the next stage, unless the stage limit or size limit is
    /// reached: then the current stage keeps taking keys.
    fn add_stage(&mut self) {
        let index = self.full.len() + 1;
        if index >= Self::MAX_STAGES {
            return;
        }
        let Some(next) = self
            .params
            .stage_shape(index)
            .and_then(|s| PartitionedBloom::new(s).ok())
        else {
            return;
        };
        self.full.push(std::mem::replace(&mut self.current, next));
        self.current_ones = 0;
    }

    /// The number of stages, at least 1. After `n` distinct inserts it is
    /// about `log_s(n (s - 1) / n₀ + 1)` rounded up (growth `s > 1`).
    #[must_use]
    pub fn num_stages(&self) -> usize {
        self.full.len() + 1
    }

    fn stages(&self) -> impl Iterator<Item = &PartitionedBloom> {
        self.full.iter().chain(std::iter::once(&self.current))
    }

    /// Reads an encoding made by [`Filter::encode`]. Every parameter is
    /// checked as by [`with_growth`](Self::with_growth), the stage count
    /// must be in `1..=MAX_STAGES`, and each stage's shape must be the one
    /// the parameters give it.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::ScalableBloom)?;
        let params = Growth {
            initial_capacity: r.u64()?,
            target_fpr: r.f64()?,
            growth: r.f64()?,
            tightening: r.f64()?,
        };
        params.check().map_err(DecodeError::Invalid)?;
        let count = r.u32()? as usize;
        if !(1..=Self::MAX_STAGES).contains(&count) {
            return Err(DecodeError::Invalid("stage count out of range"));
        }
        // Grown one decoded stage at a time, so memory follows the input.
        let mut full = Vec::new();
        let mut current = None;
        for index in 0..count {
            let stage = PartitionedBloom::read_body(&mut r)?;
            if Some(stage.shape()) != params.stage_shape(index) {
                return Err(DecodeError::Invalid(
                    "stage shape disagrees with the growth parameters",
                ));
            }
            full.extend(current.replace(stage));
        }
        r.finish()?;
        let current = current.ok_or(DecodeError::Invalid("no stages"))?;
        Ok(Self {
            params,
            full,
            current_ones: current.count_ones(),
            current,
        })
    }
}

impl Filter for ScalableBloom {
    /// Checks the newest (largest, so likeliest to hold a member) stage
    /// first; a non-member is tested against every stage.
    fn may_contain(&self, hash: KeyHash) -> bool {
        self.current.may_contain(hash)
            || self.full.iter().rev().any(|stage| stage.may_contain(hash))
    }

    fn size_bytes(&self) -> usize {
        self.stages().map(Filter::size_bytes).sum()
    }

    /// Set bits over all bits of all stages.
    fn fill_ratio(&self) -> f64 {
        let (ones, bits) = self.stages().fold((0, 0), |(ones, bits), s| {
            (ones + s.count_ones(), bits + s.shape().bits)
        });
        ones as f64 / bits as f64
    }

    /// `1 - Π(1 - fpr_i)` over the stages' measured FPRs: the chance that
    /// at least one stage answers "may contain", treating stages as
    /// independent. At most `Σ fpr_i`, which bounds the true rate.
    fn estimated_fpr(&self) -> f64 {
        1.0 - self
            .stages()
            .map(|s| 1.0 - s.estimated_fpr())
            .product::<f64>()
    }

    /// The sum of the stages' estimates (each key lives in one stage).
    fn estimated_count(&self) -> Option<f64> {
        self.stages().map(Filter::estimated_count).sum()
    }

    /// Body: initial capacity (u64), target FPR, growth, tightening (f64
    /// each), stage count (u32), then each stage oldest first as a
    /// partitioned Bloom body (`k` u32, bit array).
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.params.initial_capacity)
            .f64(self.params.target_fpr)
            .f64(self.params.growth)
            .f64(self.params.tightening)
            .u32(self.num_stages() as u32);
        self.stages().for_each(|s| s.write_body(&mut w));
        codec::seal(FilterKind::ScalableBloom, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(range: std::ops::Range<u64>) -> impl Iterator<Item = KeyHash> {
        range.map(|i| KeyHash::of(&i.to_le_bytes()))
    }

    fn params(n0: u64, p: f64, s: f64, r: f64) -> Growth {
        Growth {
            initial_capacity: n0,
            target_fpr: p,
            growth: s,
            tightening: r,
        }
    }

    #[test]
    fn stage_shapes_follow_the_paper() {
        // p = 1%, r = 0.85: p₀ = 0.0015, k₀ = ⌈log2(666.7)⌉ = 10 and
        // m₀ = ⌈1000·10/ln 2⌉ = 14,427 → 14,430. Stage 1: share 0.001275,
        // still k = 10, twice the capacity.
        let g = params(1_000, 0.01, 2.0, 0.85);
        assert_eq!(
            g.stage_shape(0),
            Some(BloomShape {
                bits: 14_430,
                probes: 10
            })
        );
        assert_eq!(
            g.stage_shape(1),
            Some(BloomShape {
                bits: 28_860,
                probes: 10
            })
        );
        // Every share is met by its probe count: 2^-k ≤ p₀ rⁱ < 2^-(k-1).
        for i in 0..40 {
            let k = g.stage_shape(i).unwrap().probes;
            let share = 0.01 * 0.15 * 0.85f64.powi(i as i32);
            assert!(0.5f64.powi(k as i32) <= share * (1.0 + 1e-12), "stage {i}");
            assert!(
                0.5f64.powi(k as i32 - 1) > share * (1.0 - 1e-12),
                "stage {i}"
            );
        }
        // Probes stop at 64, sizes at 2^62 bits.
        let tight = params(1, 1e-15, 2.0, 0.01);
        assert_eq!(tight.stage_shape(10).unwrap().probes, MAX_PROBES);
        assert_eq!(params(1, 0.01, 16.0, 0.85).stage_shape(63), None);
    }

    #[test]
    fn grows_holds_every_key_and_reports_duplicates() {
        let mut f = ScalableBloom::new(100, 0.01).unwrap();
        assert_eq!(f.num_stages(), 1);
        let fresh = keys(0..10_000).filter(|&h| !f.insert(h)).count();
        // A few new keys are false positives of the stages before them.
        assert!(fresh > 9_900, "{fresh}");
        assert!(keys(0..10_000).all(|h| f.may_contain(h)));
        assert!(
            keys(0..10_000).all(|h| f.insert(h)),
            "a re-insert must report the key"
        );
        // 100·(2^7 - 1) = 12,700 ≥ 10,000 > 100·(2^6 - 1).
        assert_eq!(f.num_stages(), 7);
        // Every stage but the newest stopped within k bits of half full.
        for stage in &f.full {
            let shape = stage.shape();
            assert!(stage.count_ones() <= shape.bits / 2);
            assert!(stage.count_ones() + u64::from(shape.probes) > shape.bits / 2);
        }
        assert_eq!(f.current_ones, f.current.count_ones());
        let est = f.estimated_count().unwrap();
        assert!((est - fresh as f64).abs() / 10_000.0 < 0.03, "{est}");
        assert!(f.estimated_fpr() < 0.01, "{}", f.estimated_fpr());
        assert_eq!(ScalableBloom::decode(&f.encode()).unwrap(), f);
    }

    #[test]
    fn equal_stages_stop_at_the_stage_limit_without_losing_keys() {
        let mut f = ScalableBloom::with_growth(1, 0.5, 1.0, 0.5).unwrap();
        keys(0..2_000).for_each(|h| {
            f.insert(h);
        });
        assert_eq!(f.num_stages(), ScalableBloom::MAX_STAGES);
        assert!(keys(0..2_000).all(|h| f.may_contain(h)));
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let bad = [
            (0, 0.01, 2.0, 0.85),
            (100, 0.0, 2.0, 0.85),
            (100, 1.0, 2.0, 0.85),
            (100, f64::NAN, 2.0, 0.85),
            (100, 0.01, 0.99, 0.85),
            (100, 0.01, 16.5, 0.85),
            (100, 0.01, f64::NAN, 0.85),
            (100, 0.01, 2.0, 0.0),
            (100, 0.01, 2.0, 1.0),
            (u64::MAX, 0.01, 2.0, 0.85),
        ];
        for (n0, p, s, r) in bad {
            let result = ScalableBloom::with_growth(n0, p, s, r);
            assert!(
                matches!(result, Err(Error::InvalidParameter(_))),
                "{n0} {p} {s} {r}"
            );
        }
        assert!(ScalableBloom::new(0, 0.01).is_err());
    }
}
