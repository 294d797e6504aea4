//! Baseline: `sbbf-rs-safe` 0.3, the split-block Bloom filter of Apache
//! Parquet (256-bit buckets of eight 32-bit words, one bit set per word),
//! with a runtime-selected SIMD kernel.

use super::{Built, Contender, Params, Prehashed, count_hits, xxh3_64};
use crate::filters::keys::KeySet;

/// Bits in one split block (Parquet's bucket).
const BUCKET_BITS: f64 = 256.0;
/// Words per bucket; a key sets one bit in each.
const WORDS: i32 = 8;
/// Bits per word.
const WORD_BITS: f64 = 32.0;

/// `Filter::new(round(bpk), n)`, fed `insert_hash`/`contains_hash` with
/// XXH3-64 of the key (the crate takes only hashes).
pub struct Sbbf;

struct Filter {
    inner: sbbf_rs_safe::Filter,
    n: u64,
}

impl Contender for Sbbf {
    fn name(&self) -> &'static str {
        "sbbf"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "sbbf_rs_safe::Filter::new({}, n) (integer bits/key); insert_hash/contains_hash of xxh3-64",
            whole_bits_per_key(p.bits_per_key)
        )
    }

    fn sized_by_bits(&self) -> bool {
        true
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut inner = sbbf_rs_safe::Filter::new(whole_bits_per_key(p.bits_per_key), keys.len());
        for key in keys.iter() {
            inner.insert_hash(xxh3_64(key));
        }
        Ok(Box::new(Filter {
            inner,
            n: keys.len() as u64,
        }))
    }
}

/// The crate takes whole bits per key.
fn whole_bits_per_key(bits_per_key: f64) -> usize {
    bits_per_key.round().max(1.0) as usize
}

impl Built for Filter {
    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        self.inner.contains_hash(xxh3_64(key))
    }

    fn count_prehashed(&self, hashes: &Prehashed) -> Option<u64> {
        Some(count_hits(&hashes.xxh3_64, |h| self.inner.contains_hash(h)))
    }

    fn size_bytes(&self) -> usize {
        self.inner.as_bytes().len()
    }

    fn expected_fpr(&self) -> Option<f64> {
        let buckets = (self.size_bytes() as f64 * 8.0 / BUCKET_BITS).max(1.0);
        Some(split_block_fpr(self.n as f64 / buckets))
    }
}

/// Expected FPR of a split-block Bloom filter with `lambda` keys per bucket
/// on average: a bucket's load is Poisson(λ); after `l` keys a word has a
/// given bit set with probability `1 - (1 - 1/32)^l`, and a query tests one
/// bit in each of the 8 words (Putze, Sanders & Singler 2007, with the
/// Parquet layout). Summed in log space until the tail is negligible.
pub fn split_block_fpr(lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    let upper = (lambda + 12.0 * lambda.sqrt() + 32.0).ceil() as u64;
    let (mut log_pmf, mut total) = (-lambda, 0.0);
    for load in 0..=upper {
        if load > 0 {
            log_pmf += lambda.ln() - (load as f64).ln();
        }
        let word_fill = 1.0 - (1.0 - 1.0 / WORD_BITS).powf(load as f64);
        total += log_pmf.exp() * word_fill.powi(WORDS);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_block_formula_matches_known_points() {
        // Parquet's sizing table: 10 bits/key (λ = 25.6) gives about 1.2%,
        // worse than an unblocked Bloom filter's 0.82%.
        let p = split_block_fpr(25.6);
        assert!((0.010..0.014).contains(&p), "{p}");
        // Emptier buckets, fewer false positives.
        assert!(split_block_fpr(12.8) < p);
        assert_eq!(split_block_fpr(0.0), 0.0);
    }
}
