//! Baseline: `fastbloom` 0.17, an unblocked Bloom filter that derives its
//! probes from one 64-bit hash.

use super::{Built, Contender, Params, Prehashed, count_hits, xxh3_64};
use crate::filters::keys::KeySet;
use sift_filter::math;

/// `BloomFilter::with_num_bits(⌈bpk·n⌉).expected_items(n)`, fed
/// `insert_hash`/`contains_hash` with XXH3-64 of the key (its own default
/// would be SipHash-1-3 with a random key).
pub struct FastBloom;

struct Filter {
    inner: fastbloom::BloomFilter,
    n: u64,
}

impl Contender for FastBloom {
    fn name(&self) -> &'static str {
        "fastbloom"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "fastbloom::BloomFilter::with_num_bits(⌈{}·n⌉).expected_items(n); insert_hash/contains_hash of xxh3-64",
            p.bits_per_key
        )
    }

    fn sized_by_bits(&self) -> bool {
        true
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let bits = (keys.len() as f64 * p.bits_per_key).ceil().max(64.0) as usize;
        let mut inner = fastbloom::BloomFilter::with_num_bits(bits).expected_items(keys.len());
        for key in keys.iter() {
            inner.insert_hash(xxh3_64(key));
        }
        Ok(Box::new(Filter {
            inner,
            n: keys.len() as u64,
        }))
    }
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
        std::mem::size_of_val(self.inner.as_slice())
    }

    fn expected_fpr(&self) -> Option<f64> {
        let (m, k) = (self.inner.num_bits() as u64, self.inner.num_hashes());
        Some(math::bloom_fpr(m, self.n, k))
    }
}
