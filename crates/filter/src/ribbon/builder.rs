//! [`RibbonBuilder`]: a Ribbon filter where it is smaller than the blocked
//! Bloom fallback at the same FPR, that fallback otherwise.

use super::StaticFilter;
use super::bloom_cost::{self, BLOCK_BYTES};
use super::build::{Plan, Sizing};
use crate::BlockedBloomBuilder;
use crate::error::{Error, Result};
use crate::filter::FilterBuilder;
use crate::hash::KeyHash;

/// Builds the static key filter of a table: [`Ribbon`](super::Ribbon) when
/// it is smaller than a blocked Bloom filter of the same FPR and banding
/// succeeds, else that [`BlockedBloom`](crate::BlockedBloom).
///
/// Call order: [`new`](Self::new) or [`with_fpr`](Self::with_fpr), then
/// [`add`](FilterBuilder::add) per key (duplicates allowed), then
/// [`finish`](FilterBuilder::finish) once. The builder buffers the hashes
/// (16 bytes each); `finish` needs about 36 more bytes per key while
/// banding (a sorted copy of the hashes, and the banding matrix: 17 bytes
/// per slot at up to 8 result bits, 24 at most), or another 16 if it falls
/// back to Bloom.
///
/// The choice, made before banding from sizes and FPRs alone:
///
/// - with [`new`](Self::new)`(b)`, Ribbon spends about `b` bits per key;
///   the fallback is a blocked Bloom filter of `b` bits/key. Ribbon is kept
///   when it is no larger and no less accurate (and better in one), so a
///   Bloom filter matching its FPR would be larger. Small key sets often
///   fall back: a Ribbon filter has at least 128 slots.
/// - with [`with_fpr`](Self::with_fpr)`(p)`, both are sized for FPR `p`
///   and Ribbon is kept when it is smaller.
#[derive(Clone, Debug)]
pub struct RibbonBuilder {
    hashes: Vec<KeyHash>,
    sizing: Sizing,
    /// Bits/key of the fallback, and the (empty) builder set up for it.
    fallback_bits: f64,
    fallback: BlockedBloomBuilder,
}

impl RibbonBuilder {
    /// Target space; fractional allowed (finite, > 0, else
    /// `Error::InvalidParameter`). The FPR follows: about `2^-(b/1.05)`
    /// for large key sets (the overhead `1.05` grows slowly with the key
    /// count, see `config.rs`).
    pub fn new(bits_per_key: f64) -> Result<Self> {
        if !(bits_per_key.is_finite() && bits_per_key > 0.0) {
            return Err(Error::InvalidParameter(format!(
                "bits per key {bits_per_key} is not finite and positive"
            )));
        }
        Self::with_sizing(Sizing::BitsPerKey(bits_per_key), bits_per_key)
    }

    /// Target FPR in (0, 1), else `Error::InvalidParameter`. Ribbon reaches
    /// FPRs down to `2^-64`; below that the Bloom fallback is used.
    pub fn with_fpr(fpr: f64) -> Result<Self> {
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::InvalidParameter(format!(
                "target FPR {fpr} is not in (0, 1)"
            )));
        }
        Self::with_sizing(Sizing::Fpr(fpr), bloom_cost::bits_per_key_for(fpr))
    }

    fn with_sizing(sizing: Sizing, fallback_bits: f64) -> Result<Self> {
        Ok(Self {
            hashes: Vec::new(),
            sizing,
            fallback_bits,
            fallback: BlockedBloomBuilder::new(fallback_bits)?,
        })
    }

    /// Whether `plan` beats the fallback for `n` keys (see the type's doc).
    fn prefers_ribbon(&self, n: u64, plan: &Plan) -> bool {
        let blocks = bloom_cost::blocks(n, self.fallback_bits);
        let bloom_bytes = blocks.saturating_mul(BLOCK_BYTES);
        let bloom_fpr = bloom_cost::fpr(n, blocks);
        let target = match self.sizing {
            Sizing::BitsPerKey(_) => bloom_fpr,
            Sizing::Fpr(fpr) => fpr,
        };
        let (bytes, fpr) = (plan.size_bytes(), plan.fpr());
        fpr <= target && (bytes < bloom_bytes || (bytes == bloom_bytes && fpr < bloom_fpr))
    }

    /// [`finish`](FilterBuilder::finish) with the Ribbon plan given.
    fn finish_with(self, plan: Option<Plan>) -> StaticFilter {
        if let Some(ribbon) = plan.and_then(|p| p.band(&self.hashes)) {
            return StaticFilter::Ribbon(ribbon);
        }
        let mut bloom = self.fallback;
        for hash in self.hashes {
            bloom.add(hash);
        }
        StaticFilter::Bloom(bloom.finish())
    }
}

impl FilterBuilder for RibbonBuilder {
    type Output = StaticFilter;

    fn add(&mut self, hash: KeyHash) {
        self.hashes.push(hash);
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Ribbon if it is smaller (see the type's doc) and banding succeeds
    /// under one of 16 seeds, else the blocked Bloom fallback (capped at
    /// the largest encodable size).
    fn finish(self) -> StaticFilter {
        let n = self.hashes.len() as u64;
        let plan = Plan::new(n, self.sizing).filter(|plan| self.prefers_ribbon(n, plan));
        self.finish_with(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;

    fn filled(mut builder: RibbonBuilder, n: u64) -> (RibbonBuilder, Vec<KeyHash>) {
        let hashes: Vec<KeyHash> = (0..n).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
        hashes.iter().for_each(|&h| builder.add(h));
        (builder, hashes)
    }

    #[test]
    fn failed_banding_falls_back_to_bloom() {
        let (builder, hashes) = filled(RibbonBuilder::new(8.0).unwrap(), 1_000);
        // 1,000 keys cannot band into 128 slots.
        let plan = Plan::with_slots(128, Sizing::BitsPerKey(8.0), 1_000);
        let f = builder.finish_with(plan);
        assert!(matches!(f, StaticFilter::Bloom(_)));
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
    }

    #[test]
    fn ribbon_is_chosen_only_when_smaller() {
        let (b, _) = filled(RibbonBuilder::with_fpr(0.01).unwrap(), 10_000);
        assert!(matches!(b.finish(), StaticFilter::Ribbon(_)));
        // Five keys: one Ribbon block (112 bytes) against one Bloom block.
        let (b, _) = filled(RibbonBuilder::with_fpr(0.01).unwrap(), 5);
        assert!(matches!(b.finish(), StaticFilter::Bloom(_)));
    }
}
